"""Drawings of benchmark results: ``python -m distlib.bench`` sweeps and nccl-tests tables.

One function per kind of result, used by every chapter that shows one:
:func:`plot_bench` draws a :class:`distlib.collectives.measured.BenchResult` (chapters 6
and 7), :func:`plot_predicted_table` the cluster model's predicted nccl-tests
curve beside published figures (chapter 7).
"""

from __future__ import annotations

import numpy as np

from ..collectives.measured import BenchResult
from ..static.phone import mark_legend_below_on_phone
from .collectives import ALGORITHM_COLORS, ALGORITHM_LABELS, _for_phone, format_bytes_axis

__all__ = ["BENCH_COLORS", "plot_bench", "plot_predicted_table"]

BENCH_COLORS = {"builtin": "k", **ALGORITHM_COLORS, "auto": "#9467bd"}

_YLABEL = {"busbw": "busbw (GB/s)", "algbw": "algbw (GB/s)", "seconds": "time per all-reduce (s)"}


def plot_bench(ax, result: BenchResult, *, quantity="busbw", algorithms=None, builtin_label=None) -> dict:
    """Draw one quantity of a benchmark sweep against buffer size, one line per algorithm.

    Parameters
    ----------
    ax : matplotlib Axes
    result : BenchResult
        From :func:`distlib.bench.run_bench` (or ``BenchResult.from_dict`` of a saved ``--json``).
    quantity : {"busbw", "algbw", "seconds"}
        busbw and algbw are drawn in GB/s on a linear axis (log for algbw),
        seconds on log-log axes.
    algorithms : sequence of str, optional
        Which of ``result.algorithms`` to draw (default: all).
    builtin_label : str, optional
        Legend label of the engine's built-in all-reduce (default
        ``"<engine> built-in"``).

    Returns
    -------
    dict
        Algorithm name -> the ``Line2D`` drawn.
    """
    if not isinstance(result, BenchResult):
        raise TypeError(f"result must be a BenchResult, got {type(result).__name__}")
    if quantity not in _YLABEL:
        raise ValueError(f"quantity must be one of {', '.join(_YLABEL)}; got {quantity!r}")
    names = result.algorithms if algorithms is None else tuple(algorithms)
    sizes = np.array(result.sizes, dtype=float)
    lines = {}
    for name in names:
        values = np.array([np.nan if v is None else v for v in result.column(name, quantity)], dtype=float)
        if quantity != "seconds":
            values = values / 1e9
        label = (builtin_label or f"{result.engine} built-in") if name == "builtin" else ALGORITHM_LABELS.get(name, name)
        style = "s-" if name == "builtin" else "o-"
        (lines[name],) = ax.plot(sizes, values, style, color=BENCH_COLORS.get(name), ms=4, lw=1.2, label=label)
    ax.set_xscale("log")
    if quantity in ("seconds", "algbw"):
        ax.set_yscale("log")
    format_bytes_axis(ax.xaxis)
    ax.set_xlabel("buffer per rank")
    ax.set_ylabel(_YLABEL[quantity])
    ax.grid(True, which="major", alpha=0.3)
    _for_phone(ax, taller=1.2)  # constrained layout there; a figure legend takes one entry a row
    return lines


def plot_predicted_table(ax, predictions, published=(), *, label="cluster model", color="#1f77b4") -> dict:
    """Predicted busbw over sizes (a list of :class:`distlib.Prediction`) and published points.

    ``published`` holds :class:`distlib.PublishedResult` busbw rows; each is
    drawn as a marker in ``color`` and labelled with the model's error for
    *its own* cluster and forced algorithm (which may differ from the curve's,
    e.g. NVLS off), so call this once per curve with the rows that match it.
    Figures at one size within 2 % of each other share one label.
    """
    from ..gpu_cluster import predict

    sizes = np.array([p.n_bytes for p in predictions], dtype=float)
    busbw = np.array([p.busbw for p in predictions]) / 1e9
    (line,) = ax.plot(sizes, busbw, "-", color=color, lw=1.5, label=label)
    marks = []
    groups: list = []  # [(n_bytes, busbw, [errors])]: figures that land on one spot share one label
    for r in published:
        if r.time is not None or r.busbw <= 0:
            continue
        pred = predict(r.collective, r.n_bytes, r.cluster(), algorithm=r.algorithm).busbw
        marks.append(ax.plot([r.n_bytes], [r.busbw / 1e9], "D", color=color, mec="k", ms=5, zorder=4)[0])
        err = f"{pred / r.busbw - 1:+.0%}".replace("-0%", "+0%")
        for n, b, errs in groups:
            if n == r.n_bytes and abs(b - r.busbw) <= 0.02 * b:
                if err not in errs:
                    errs.append(err)
                break
        else:
            groups.append((r.n_bytes, r.busbw, [err]))
    for n, b, errs in groups:
        # left of its diamond, on a white ground: the published figures sit on or near the curves
        ax.annotate(", ".join(errs), (n, b / 1e9), xytext=(-7, 0), textcoords="offset points", ha="right",
                    va="center", fontsize=11, zorder=5,
                    bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.85))
    ax.set_xscale("log")
    format_bytes_axis(ax.xaxis)
    ax.set_xlabel("buffer per rank")
    ax.set_ylabel("busbw (GB/s)")
    ax.grid(True, which="major", alpha=0.3)
    mark_legend_below_on_phone(ax)  # on a phone a legend inside would cover the curves
    _for_phone(ax, taller=1.1)
    return {"line": line, "published": marks}
