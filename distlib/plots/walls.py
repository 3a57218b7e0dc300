"""Drawings for the three walls: memory per GPU against HBM, and training time.

Each ``plot_*`` function draws on an axes it is given and returns an object
holding its artists. That object's ``update`` moves the same artists to a new
result without touching the axes, so the widget can redraw in a few
milliseconds by blitting (see :mod:`distlib.widgets._base`).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_rgba
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from ..fmt import fmt_bytes, fmt_seconds
from ..static.legend import legend_below, legend_below_again, placed_below
from ..static.phone import phone_layout
from ..static.pictures import MIN_FONT_PT
from ..walls import ZERO_STAGES, StateBytes, Walls, zero_state_bytes_per_gpu

__all__ = [
    "PART_COLORS",
    "PART_LABELS",
    "MemoryBars",
    "TimeBars",
    "plot_memory_breakdown",
    "plot_training_time",
    "TIME_TICKS",
]

PART_LABELS = {"weights": "weights", "grads": "gradients", "optimizer": "Adam m, v", "master": "fp32 master"}
PART_COLORS = {"weights": "#1f77b4", "grads": "#ff7f0e", "optimizer": "#009E73", "master": "#9467bd"}
_OVER = "#D55E00"
BAR_WIDTH = 0.6
TIME_WIDTH = 0.55
TIME_COLORS = ("#1f77b4", "#aec7e8")  # compute, communication

YEAR = 365.25 * 86400.0
#: Named tick positions for time axes (seconds).
TIME_TICKS = [
    (1.0, "1 s"),
    (60.0, "1 min"),
    (3600.0, "1 h"),
    (86400.0, "1 day"),
    (30 * 86400.0, "1 month"),
    (YEAR, "1 year"),
    (100 * YEAR, "100 years"),
    (1e4 * YEAR, "10k years"),
    (1e6 * YEAR, "1M years"),
]


def _states_from(result, labels, hbm_bytes, highlight):
    """Normalise the inputs of :func:`plot_memory_breakdown`."""
    if isinstance(result, Walls):
        states = [zero_state_bytes_per_gpu(result.params, recipe=result.recipe, dp=result.chips, stage=s)
                  for s in ZERO_STAGES]
        labels = labels or [str(s) for s in ZERO_STAGES]  # under the axis label "ZeRO stage"
        hbm_bytes = result.hbm_bytes if hbm_bytes is None else hbm_bytes
        highlight = result.stage if highlight is None else highlight
        return states, labels, hbm_bytes, highlight
    if isinstance(result, StateBytes):
        states = [result]
    else:
        states = list(result)
        if not states or not all(isinstance(s, StateBytes) for s in states):
            raise TypeError("result must be a Walls, a StateBytes or a sequence of StateBytes")
    labels = labels or ([result.recipe] if isinstance(result, StateBytes) else [str(i) for i in range(len(states))])
    return states, labels, hbm_bytes, highlight


#: How this module's legends sit under their axes (distlib.static.legend.legend_below): centred on the
#: figure, not the axes (the axes sit right of the y labels, and a legend as wide as the figure would
#: stick out on the right), in the book's smallest print, with no frame.
_BELOW = {"centre": "figure", "fontsize": MIN_FONT_PT, "frameon": False, "borderaxespad": 0}


class MemoryBars:
    """Stacked bars of model state per GPU (weights, gradients, Adam moments, master copy).

    With ``relative=True`` the y axis is the fraction of one chip's HBM,
    fixed from 0 to ``ymax``: bars taller than the axis are clipped and
    labelled with their size. With ``relative=False`` the axis is in GB.
    ``totals="highlight"`` labels only the highlighted bar (text is the
    costliest thing to redraw). The legend goes under the axes; with
    ``relative=False`` the dashed HBM line has its entry there (with the
    capacity), so no label sits on the bars; with ``relative=True`` the
    capacity is written over the axes, under its title.
    """

    def __init__(self, ax, labels: Sequence[str], *, relative=False, ymax=None, legend=True, totals="all",
                 xlabel=None):
        if totals not in ("all", "highlight"):
            raise ValueError(f"totals must be 'all' or 'highlight', got {totals!r}")
        self.ax = ax
        self.label_all = totals == "all"
        self.relative = relative
        self.ymax = ymax if ymax is not None else (2.0 if relative else None)
        # long names such as "mixed_precision_adam" wrap at underscores
        self.labels = [lab.replace("_", "\n") if len(lab) > 9 else lab for lab in labels]
        n = len(self.labels)
        x = np.arange(n)
        self.x = x
        # All segments in one PolyCollection and the outline in one Rectangle: one draw call each,
        # instead of a patch per segment (what makes a blitted redraw cheap).
        self.segments = PolyCollection([], closed=True, edgecolors="none")
        ax.add_collection(self.segments)
        self.outline = Rectangle((0, 0), BAR_WIDTH, 0, fill=False, edgecolor="black", linewidth=1.5)
        ax.add_patch(self.outline)
        self.totals = [ax.text(xi, 0, "", ha="center", va="bottom", fontsize=MIN_FONT_PT) for xi in x]
        self.hbm_line = ax.axhline(1.0 if relative else 0.0, color="black", linestyle="--", linewidth=1)
        # The capacity changes with the chip. Relative: the line is the "HBM" tick, and the capacity goes
        # over the axes (beside the tick it ran into the axis label). Absolute: it goes in the legend.
        self.hbm_text = ax.text(0.5, 1.02, "", transform=ax.transAxes, ha="center", va="bottom",
                                fontsize=MIN_FONT_PT)
        self.hbm_handle = Line2D([], [], color="black", linestyle="--", linewidth=1, label="HBM")
        ax.set_xticks(x)
        ax.set_xticklabels(self.labels, fontsize=MIN_FONT_PT)
        ax.set_xlim(-0.6, n - 0.4)
        if xlabel:
            ax.set_xlabel(xlabel, fontsize=MIN_FONT_PT)
        if relative:
            ax.set_ylim(0, self.ymax)
            ticks = [t for t in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0) if t <= self.ymax + 1e-9]
            ax.set_yticks(ticks)
            ax.set_yticklabels(["HBM" if t == 1.0 else f"{t:.0%}" for t in ticks], fontsize=MIN_FONT_PT)
            ax.set_ylabel("share of one chip's HBM", fontsize=MIN_FONT_PT)
        else:
            ax.set_ylabel("model state per GPU (GB)", fontsize=MIN_FONT_PT)
            ax.tick_params(axis="y", labelsize=MIN_FONT_PT)
        self.legend = None
        if legend:
            handles = [Patch(color=c, label=PART_LABELS[p]) for p, c in PART_COLORS.items()]
            if not relative:
                handles.append(self.hbm_handle)
            # below the tick labels (a long recipe's name takes lines) and the x label
            self.legend = legend_below(ax, handles, ncols=2, **_BELOW)

    @property
    def dynamic_artists(self) -> list:
        """What :meth:`update` changes (to mark as animated for blitting)."""
        return [self.segments, self.outline, *self.totals, self.hbm_line, self.hbm_text]

    def update(self, states: Sequence[StateBytes], *, hbm_bytes=None, highlight=None):
        """Move the bars to ``states`` (one per bar); HBM line at ``hbm_bytes``."""
        if len(states) != len(self.x):
            raise ValueError(f"expected {len(self.x)} states, got {len(states)}")
        if self.relative and not hbm_bytes:
            raise ValueError("relative bars need hbm_bytes")
        scale = hbm_bytes if self.relative else 1e9
        cap = self.ymax if self.ymax is not None else math.inf
        if not self.relative and self.ymax is None:
            top = max([s.total for s in states] + [hbm_bytes or 0.0]) / 1e9
            self.ax.set_ylim(0, top * 1.18 if top > 0 else 1.0)
            cap = math.inf
        verts, colors = [], []
        self.outline.set_visible(False)
        for i, s in enumerate(states):
            bottom = 0.0
            faded = highlight is not None and i != highlight
            x0, x1 = self.x[i] - BAR_WIDTH / 2, self.x[i] + BAR_WIDTH / 2
            for part, color in PART_COLORS.items():
                h = getattr(s, part) / scale
                lo, hi = min(bottom, cap), min(bottom + h, cap)
                bottom += h
                if hi > lo:
                    verts.append([(x0, lo), (x1, lo), (x1, hi), (x0, hi)])
                    colors.append(to_rgba(color, 0.35 if faded else 1.0))
            total = s.total / scale
            clipped = total > cap
            if highlight == i:
                self.outline.set_xy((x0, 0.0))
                self.outline.set_height(min(total, cap))
                self.outline.set_visible(True)
            text = self.totals[i]
            text.set_visible(self.label_all or highlight == i)
            text.set_text(("\u2191 " if clipped else "") + str(fmt_bytes(s.total)))
            text.set_position((self.x[i], min(total, cap) * (0.9 if clipped else 1.0)))
            text.set_va("top" if clipped else "bottom")
            # a clipped bar's label is written on the bar: on a white ground, to be read on any colour
            text.set_bbox(dict(facecolor="white", edgecolor="none", alpha=0.85, pad=1) if clipped else None)
            text.set_color(_OVER if hbm_bytes and s.total > hbm_bytes else "black")
            text.set_fontweight("bold" if highlight == i else "normal")
        self.segments.set_verts(verts)
        self.segments.set_facecolors(colors)
        if hbm_bytes:
            y = 1.0 if self.relative else hbm_bytes / 1e9
            self.hbm_line.set_ydata([y, y])
            self.hbm_line.set_visible(True)
            if self.relative:
                self.hbm_text.set_text(f"HBM per chip: {fmt_bytes(hbm_bytes)}")
                self.hbm_text.set_visible(True)
            else:
                self._set_hbm_entry(f"HBM {fmt_bytes(hbm_bytes)}")
                self.hbm_text.set_visible(False)
        else:
            self.hbm_line.set_visible(False)
            self.hbm_text.set_visible(False)
            self._set_hbm_entry(None)
        return self

    def _set_hbm_entry(self, text):
        """Write the HBM line's legend entry (None: hide it)."""
        if self.legend is None or self.relative:
            return
        entry = self.legend.texts[-1]
        entry.set_text(text or "")
        entry.set_visible(text is not None)
        self.legend.legend_handles[-1].set_visible(text is not None)


def plot_memory_breakdown(ax, result, *, labels=None, hbm_bytes=None, highlight=None, relative=False,
                          ymax=None, legend=True) -> MemoryBars:
    """Stacked bars of model state per GPU, with a line at the chip's HBM.

    Parameters
    ----------
    ax : matplotlib Axes
    result : Walls, StateBytes or sequence of StateBytes
        A :class:`distlib.walls.Walls` draws ZeRO stages 0-3 for its run
        (its own stage outlined); otherwise one bar per state.
    labels : list of str, optional
        Bar labels.
    hbm_bytes : float, optional
        Draw the HBM capacity as a dashed line (taken from a Walls result).
    highlight : int, optional
        Index of the bar to outline; the others are faded.
    relative : bool
        Plot as a share of ``hbm_bytes`` on a fixed axis (the widget's view).
    ymax : float, optional
        Upper y limit (GB, or share of HBM when ``relative``).

    Returns
    -------
    MemoryBars
    """
    states, labels, hbm_bytes, highlight = _states_from(result, labels, hbm_bytes, highlight)
    xlabel = "ZeRO stage" if isinstance(result, Walls) else None
    bars = MemoryBars(ax, labels, relative=relative, ymax=ymax, legend=legend, xlabel=xlabel)
    bars.update(states, hbm_bytes=hbm_bytes, highlight=highlight)
    ax.set_title("memory wall: model state per GPU", fontsize=MIN_FONT_PT)
    return bars


class TimeBars:
    """Training time on one chip and on the cluster, on a log time axis.

    The cluster bar stacks compute (dark) and communication without overlap
    (light). With ``ylim`` given the axis is fixed, so updates can blit.
    """

    def __init__(self, ax, *, ylim=None, legend_ncols: int = 2):
        self.ax = ax
        self.fixed = ylim is not None
        ax.set_yscale("log")
        lo, hi = ylim if ylim is not None else (1.0, 1e14)
        ax.set_ylim(lo, hi)
        self.floor = lo
        x = np.array([0.0, 1.0])
        self.x = x
        self.bars = PolyCollection([], closed=True, edgecolors="none")
        ax.add_collection(self.bars)
        self.values = [ax.text(xi, lo, "", ha="center", va="bottom", fontsize=MIN_FONT_PT) for xi in x]
        ax.set_xticks(x)
        ax.set_xticklabels(["one chip", "cluster"], fontsize=MIN_FONT_PT)
        ax.set_xlim(-0.6, 1.6)
        self._set_ticks(lo, hi)
        ax.set_ylabel("training time", fontsize=MIN_FONT_PT)
        handles = [Patch(color=TIME_COLORS[0], label="compute"),
                   Patch(color=TIME_COLORS[1], label="communication (no overlap)")]
        legend_below(ax, handles, ncols=legend_ncols, **_BELOW)

    def _set_ticks(self, lo, hi):
        ticks = _spaced_ticks(self.ax, lo, hi)
        self.ax.set_yticks([t for t, _ in ticks])
        self.ax.set_yticklabels([s for _, s in ticks], fontsize=MIN_FONT_PT)
        self.ax.minorticks_off()

    @property
    def dynamic_artists(self) -> list:
        return [self.bars, *self.values]

    def update(self, result: Walls):
        """Show ``result``'s one-chip and cluster times.

        The cluster's size goes in its tick label, which is redrawn only when
        the axes are (so a widget passes it in its text instead).
        """
        lo, hi = self.ax.get_ylim()
        if not self.fixed:
            top = max(result.time_one_chip, result.time_cluster)
            bottom = min(result.time_one_chip, result.compute_time_cluster)
            lo, hi = 10 ** math.floor(math.log10(bottom) - 0.5), 10 ** math.ceil(math.log10(top) + 1.0)
            self.ax.set_ylim(lo, hi)
            self._set_ticks(lo, hi)
            self.floor = lo
        floor = self.floor

        def clip(v):
            return min(max(v, floor), hi)

        rows = [(result.time_one_chip, 0.0), (result.compute_time_cluster, result.comm_time_total)]
        verts, colors = [], []
        for i, (compute, comm) in enumerate(rows):
            x0, x1 = self.x[i] - TIME_WIDTH / 2, self.x[i] + TIME_WIDTH / 2
            c_top = clip(compute)
            t_top = clip(compute + comm)
            for lo_, hi_, color in ((floor, c_top, TIME_COLORS[0]), (c_top, t_top, TIME_COLORS[1])):
                if hi_ > lo_:
                    verts.append([(x0, lo_), (x1, lo_), (x1, hi_), (x0, hi_)])
                    colors.append(color)
            self.values[i].set_text(str(fmt_seconds(compute + comm)))
            self.values[i].set_position((self.x[i], t_top * (0.5 if t_top >= hi else 1.15)))
            self.values[i].set_va("top" if t_top >= hi else "bottom")
        self.bars.set_verts(verts)
        self.bars.set_facecolors(colors)
        return self


def plot_training_time(ax, result: Walls, *, ylim=None) -> TimeBars:
    """Bars of training time: one chip versus the whole cluster (log scale).

    Parameters
    ----------
    ax : matplotlib Axes
    result : Walls
        From :func:`distlib.walls.three_walls`.
    ylim : (float, float), optional
        Fixed time range in seconds; by default it fits the result.

    Returns
    -------
    TimeBars
    """
    if not isinstance(result, Walls):
        raise TypeError(f"result must be a Walls from distlib.three_walls(), got {type(result).__name__}")
    bars = TimeBars(ax, ylim=ylim)
    bars.update(result)
    ax.set_xticklabels(["1 chip", f"{result.chips:,} chips"], fontsize=MIN_FONT_PT)
    ax.set_title(f"compute wall: {result.flops:.2g} FLOP at MFU {result.mfu:.0%}", fontsize=MIN_FONT_PT)
    phone_layout(ax.figure, adjust=legends_one_column)
    return bars


_TICK_RANK = ["1 s", "1 day", "1 year", "100 years", "10k years", "1M years", "1 min", "1 h", "1 month"]


def _spaced_ticks(ax, lo, hi) -> list:
    """The named times between ``lo`` and ``hi`` that keep their labels apart on ``ax``.

    Ticks are taken in order of importance (:data:`_TICK_RANK`: days and
    years before minutes, hours and months), each only if it stays a label's
    height and a half from those already taken.
    """
    fig = ax.figure
    height_pt = ax.get_position().height * fig.get_figheight() * 72
    decades = max(math.log10(hi / lo), 1e-9)
    min_gap = 1.5 * MIN_FONT_PT / max(height_pt / decades, 1e-9)  # in decades
    candidates = [(t, s) for t, s in TIME_TICKS if lo <= t <= hi]
    ranked = sorted(candidates, key=lambda ts: _TICK_RANK.index(ts[1]))
    chosen: list = []
    for t, s in ranked:
        if all(abs(math.log10(t / c)) >= min_gap for c, _ in chosen):
            chosen.append((t, s))
    return sorted(chosen)


def legends_one_column(fig):
    """Phone layout: legends under the axes in one column (two columns are wider than 328 px)."""
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is not None and placed_below(ax) is not None:
            handles = leg.legend_handles
            for h, t in zip(handles, leg.texts):
                h.set_label(t.get_text())
            legend_below_again(ax, [h for h, t in zip(handles, leg.texts) if t.get_visible()], ncols=1)
