"""Drawing chapter 16's failures: goodput against the checkpoint interval, a simulated run in time, Llama 3's causes.

:func:`plot_goodput_curve` draws a :class:`distlib.goodput.GoodputCurve`: the expected goodput (solid) and its
first-order approximation (dashed) over the interval, on a log axis, the optimum marked with Young's and Daly's
intervals beside it, and an interval of the reader's if given. :func:`plot_failure_timeline` draws a
:class:`distlib.goodput.FailureRun` as bars on one time axis, coloured by what each stretch went to
(:data:`KIND_COLORS`), with a mark at every failure. :func:`plot_interruptions` draws Llama 3's unexpected
interruptions by category (:func:`distlib.goodput.llama3_interruptions`).

Each function draws on the axes it is given and returns what it drew.
"""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Patch

from ..goodput import EVENT_KINDS, FailureRun, GoodputCurve, Llama3Interruptions

__all__ = ["KIND_COLORS", "KIND_LABELS", "FAILURE_COLOR", "time_unit", "plot_goodput_curve",
           "plot_failure_timeline", "kind_legend_handles", "plot_interruptions"]

#: One colour per kind of stretch (Okabe and Ito's colour-blind-safe set): training kept blue, saves orange,
#: training lost vermilion, restarts grey, training not yet saved when the window closes light blue.
KIND_COLORS = {"work": "#0072B2", "save": "#E69F00", "lost": "#D55E00", "restart": "#7f7f7f", "unsaved": "#9cc9e8"}
#: How the legend names each kind.
KIND_LABELS = {"work": "training, saved", "save": "saving a checkpoint", "lost": "training lost to a failure",
               "restart": "restarting", "unsaved": "training, not saved yet"}
#: The failure marks.
FAILURE_COLOR = "black"
_HEIGHT = 0.6
#: Kinds drawn over the others with an edge, so that a stretch far shorter than a pixel still shows.
_THIN = ("save", "lost", "restart")


def time_unit(seconds: float) -> tuple:
    """``(scale, unit)`` that shows ``seconds`` as a number of s, min, h or days (two of the unit at least).

    >>> time_unit(30), time_unit(1200), time_unit(3 * 86400)
    ((1.0, 's'), (60.0, 'min'), (86400.0, 'days'))
    """
    for scale, unit in ((86400.0, "days"), (3600.0, "h"), (60.0, "min")):
        if seconds >= 2 * scale:
            return scale, unit
    return 1.0, "s"


def plot_goodput_curve(ax, curve: GoodputCurve, *, chosen: float | None = None, unit: tuple | None = None) -> dict:
    """Goodput against the checkpoint interval, the optimum marked.

    Parameters
    ----------
    ax : matplotlib Axes
    curve : GoodputCurve
    chosen : float, optional
        An interval (s) to mark on the expected curve, e.g. the one a widget's slider set.
    unit : (scale, name), optional
        The interval's unit on the x axis; by default :func:`time_unit` of the optimum.

    Returns
    -------
    dict
        ``"expected"``, ``"first_order"`` (Line2D), ``"optimum"``, ``"young"``, ``"daly"`` and ``"chosen"``
        (Line2D markers, ``"chosen"`` None without ``chosen``), ``"unit"`` (the ``(scale, name)`` used).
    """
    if not isinstance(curve, GoodputCurve):
        raise TypeError(f"curve must be a GoodputCurve (distlib.goodput.goodput_curve), got {type(curve).__name__}")
    scale, name = unit or time_unit(curve.optimum)
    x = curve.intervals / scale
    (expected,) = ax.plot(x, curve.expected, color="#0072B2", linewidth=2, label="expected (exact model)")
    (first,) = ax.plot(x, curve.first_order, color="#0072B2", linestyle="--", linewidth=1.2,
                       label="first order: 1 - δ/τ - (R + τ/2)/M")
    marks = {}
    for key, tau, style in (("young", curve.young, dict(marker="s", color="#009E73", label="Young")),
                            ("daly", curve.daly, dict(marker="D", color="#CC79A7", label="Daly")),
                            ("optimum", curve.optimum, dict(marker="o", color="black", label="optimum"))):
        (marks[key],) = ax.plot([tau / scale], [curve.at(tau)], linestyle="none", markersize=7, zorder=4,
                                markerfacecolor="none" if key != "optimum" else "black", **style)
    ax.axvline(curve.optimum / scale, color="black", linewidth=0.8, linestyle=":", zorder=1)
    marks["chosen"] = None
    if chosen is not None:
        (marks["chosen"],) = ax.plot([chosen / scale], [curve.at(chosen)], marker="v", markersize=9,
                                     color="#D55E00", linestyle="none", zorder=5, label="chosen")
    ax.set_xscale("log")
    ax.set_xlim(x[0], x[-1])
    top = float(np.nanmax(curve.expected))
    ax.set_ylim(max(0.0, min(float(np.nanmin(curve.expected)), top - 0.3)), min(1.0, top + 0.08))
    ax.set_xlabel(f"training between checkpoints τ ({name})")
    ax.set_ylabel("goodput")
    ax.grid(True, which="major", alpha=0.3)
    return {"expected": expected, "first_order": first, **marks, "unit": (scale, name)}


def plot_failure_timeline(ax, run: FailureRun, *, until: float | None = None, unit: tuple | None = None) -> dict:
    """A simulated run as bars on one time axis, a colour per kind of stretch, a mark at each failure.

    Parameters
    ----------
    ax : matplotlib Axes
    run : FailureRun
    until : float, optional
        Seconds of the run to draw (from its start); the whole run by default.
    unit : (scale, name), optional
        The time axis's unit; by default :func:`time_unit` of what is drawn.

    Returns
    -------
    dict
        ``"bars"``: ``{kind: the PolyCollection of its bars}`` for every kind drawn; ``"failures"``: the Line2D
        of the failure marks; ``"unit"``.
    """
    if not isinstance(run, FailureRun):
        raise TypeError(f"run must be a FailureRun (distlib.goodput.simulate_failures), got {type(run).__name__}")
    stop = run.duration if until is None else min(float(until), run.duration)
    scale, name = unit or time_unit(stop)
    shown = run.starts < stop
    starts, ends = run.starts[shown], np.minimum(run.ends[shown], stop)
    bars = {}
    for k, kind in enumerate(EVENT_KINDS):
        pick = run.kinds[shown] == k
        if np.any(pick):
            spans = list(zip((starts[pick] / scale).tolist(), ((ends[pick] - starts[pick]) / scale).tolist()))
            thin = kind in _THIN  # a save can be a second in a day: an edge keeps it visible at any scale
            bars[kind] = ax.broken_barh(spans, (-_HEIGHT / 2, _HEIGHT), facecolors=KIND_COLORS[kind],
                                        edgecolors=KIND_COLORS[kind] if thin else "none",
                                        linewidths=0.5 if thin else 0.0, zorder=2 if thin else 1,
                                        label=KIND_LABELS[kind])
    times = run.failures[run.failures < stop] / scale
    (failures,) = ax.plot(times, np.full(times.shape, _HEIGHT / 2 + 0.12), marker="v", color=FAILURE_COLOR,
                          markersize=6, linestyle="none", label="failure", zorder=3)
    ax.set_xlim(0, stop / scale)
    ax.set_ylim(-0.6, 0.9)
    ax.set_yticks([])
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel(f"wall time ({name})")
    return {"bars": bars, "failures": failures, "unit": (scale, name)}


def kind_legend_handles(kinds=EVENT_KINDS, *, failures: bool = True) -> list:
    """Legend entries: one patch per kind of stretch, and the failure mark."""
    from matplotlib.lines import Line2D

    handles = [Patch(color=KIND_COLORS[k], label=KIND_LABELS[k]) for k in kinds]
    if failures:
        handles.append(Line2D([], [], marker="v", color=FAILURE_COLOR, linestyle="none", label="failure"))
    return handles


def plot_interruptions(ax, table: Llama3Interruptions, *, by: str = "category") -> dict:
    """Llama 3's unexpected interruptions as horizontal bars, largest on top, each labelled with its count.

    ``by="category"`` sums Table 5's rows per category (GPU, Dependency, ...); ``by="component"`` draws
    every row. Returns ``{"bars": BarContainer, "labels": [names], "counts": [counts]}``.
    """
    if by == "category":
        items = list(table.by_category().items())
    elif by == "component":
        items = [(r.component, r.count) for r in table.rows]
    else:
        raise ValueError(f"by must be one of 'category', 'component'; got {by!r}")
    labels, counts = [k for k, _ in items], [v for _, v in items]
    y = np.arange(len(items))
    bars = ax.barh(y, counts, color="#0072B2")
    for yi, c in zip(y, counts):
        ax.text(c, yi, f" {c}", va="center", ha="left", fontsize=11)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlim(0, max(counts) * 1.15)
    ax.set_xlabel(f"unexpected interruptions in {table.days} days (of {table.unexpected})")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return {"bars": bars, "labels": labels, "counts": counts}
