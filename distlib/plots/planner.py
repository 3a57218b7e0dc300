"""Drawing the planner's answer (chapter 13): the fastest layouts that fit, each a bar of named seconds.

:class:`LayoutBars` draws one horizontal bar per layout, split into the terms
of :attr:`distlib.planner.LayoutStep.breakdown` (compute, memory-bound work,
TP, CP and PP communication, the bubble, exposed DP communication, the
optimizer), with the layout, its MFU, its step time and its peak memory per
GPU written over it; when no layout fits it says so, and by how much the
model state alone overflows the GPUs. The x axis runs 0 to 1 (a share of the
longest bar drawn) and its ticks are texts the update rewrites, so that the
rest of the picture is drawn once and chapter 13's widget redraws only the
bars and the words (blitting, :mod:`distlib.widgets._base`).
:func:`plot_term_legend` draws the terms' colours on an axes of their own.

The result drawn has the interface of :class:`distlib.widgets.planner.PlannerView`:
``steps`` (:class:`~distlib.planner.LayoutStep`, fastest first), ``fits``,
``model``, ``gpus``, ``accelerator``, ``global_batch``, ``state_floor`` and
``hbm_bytes``.
"""

from __future__ import annotations

from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator

from ..fmt import fmt_bytes, fmt_seconds
from ..planner import BREAKDOWN_TERMS

__all__ = ["TERM_LABELS", "TERM_COLORS", "short_layout", "LayoutBars", "plot_layout_bars", "plot_term_legend"]

TERM_LABELS = {"compute": "compute", "memory_bound": "memory-bound", "tp_comm": "TP comm", "cp_comm": "CP comm",
               "pp_comm": "PP comm", "bubble": "bubble", "dp_comm": "DP comm", "optimizer": "optimizer",
               "ep_comm": "EP all-to-all"}
TERM_COLORS = {"compute": "#0072B2", "memory_bound": "#56B4E9", "tp_comm": "#E69F00", "cp_comm": "#F0E442",
               "pp_comm": "#CC79A7", "bubble": "#BBBBBB", "dp_comm": "#D55E00", "optimizer": "#009E73",
               "ep_comm": "#882255"}
_TICKS = 8  # tick labels the x axis can show


def short_layout(s) -> str:
    """``dp4 tp8 pp16`` and, where used, ``cp``, the schedule's chunks and the microbatch, of a ``LayoutStep``."""
    lay = s.layout
    cp = f" cp{lay.cp}" if lay.cp > 1 else ""
    sched = f"interleaved v{lay.chunks}" if lay.schedule == "interleaved" else "1F1B"
    return f"dp{lay.dp} tp{lay.tp} pp{lay.pp}{cp}, {sched}, b{s.micro_batch}"


class LayoutBars:
    """Up to ``rows`` layouts as bars of named seconds, their words over them; a note when none fits.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    rows : int
        Layouts drawn at most.
    narrow : bool
        Drawn for a phone: fewer ticks.
    """

    def __init__(self, ax, *, rows: int, narrow: bool = False):
        self.ax = ax
        self.rows = rows
        self.narrow = narrow
        ax.set_ylim(rows - 0.45, -0.95)
        ax.set_xlim(0, 1)
        ax.set_yticks([])
        ax.set_xticks([])
        ax.set_xlabel("seconds per step", labelpad=19)
        axis = ax.get_xaxis_transform()  # x in data (0 to 1), y in axes
        self.tick_texts = [ax.text(0, -0.025, "", transform=axis, fontsize=11, ha="center", va="top")
                           for _ in range(_TICKS)]
        self.tick_marks = [ax.plot([], [], color="black", linewidth=0.8, transform=axis, clip_on=False)[0]
                           for _ in range(_TICKS)]
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
        self.bars = {(i, t): ax.add_patch(Rectangle((0, i), 0, 0.3, color=TERM_COLORS[t], linewidth=0))
                     for i in range(rows) for t in BREAKDOWN_TERMS}
        self.labels = [ax.text(0, i - 0.06, "", fontsize=11, ha="left", va="bottom", linespacing=1.15)
                       for i in range(rows)]
        self.note = ax.text(0.5, 0.45, "", transform=ax.transAxes, fontsize=11, ha="center", va="center",
                            color="#D55E00", wrap=True)
        self.title = ax.set_title("", fontsize=11)

    @property
    def dynamic_artists(self) -> list:
        """What :meth:`update` changes (to mark as animated for blitting)."""
        return [*self.bars.values(), *self.labels, self.note, self.title, *self.tick_texts, *self.tick_marks]

    def update(self, r) -> "LayoutBars":
        """Draw ``r``'s layouts, its title and ticks, or the note that nothing fits."""
        self.title.set_text(f"{r.model} on {r.gpus} {r.accelerator}s, batch {r.global_batch}")
        xmax = max((s.step_time for s in r.steps), default=1.0) * 1.04
        self._ticks(xmax if r.fits else None)
        for i in range(self.rows):
            s = r.steps[i] if i < len(r.steps) else None
            left = 0.0
            for t in BREAKDOWN_TERMS:
                bar = self.bars[i, t]
                width = s.breakdown.get(t, 0.0) if s else 0.0
                bar.set_x(left / xmax)
                bar.set_width(width / xmax)
                left += width
            if s is None:
                self.labels[i].set_text("")
                continue
            # three short lines, broken where a reader would break them: no number parted from its unit
            self.labels[i].set_text(f"{i + 1}. {short_layout(s)}\nrecompute {s.recompute}, MFU {s.mfu:.0%}\n"
                                    f"{fmt_seconds(s.step_time)} a step, {fmt_bytes(s.memory_bytes)} a GPU")
        if r.fits:
            self.note.set_text("")
        else:
            self.note.set_text(f"Nothing fits on {r.gpus} GPUs.\nModel state alone, spread over all of them,\n"
                               f"is {fmt_bytes(r.state_floor)} a GPU"
                               + (f", over the {fmt_bytes(r.hbm_bytes)}." if r.state_floor > r.hbm_bytes
                                  else f";\nwith activations no layout\nstays within {fmt_bytes(r.hbm_bytes)}."))
        return self

    def _ticks(self, xmax: float | None) -> None:
        """Seconds ticks over 0 to ``xmax`` (none when ``xmax`` is ``None``), at their share of the axis."""
        ticks = [] if xmax is None else [v for v in MaxNLocator(nbins=4 if self.narrow else 6).tick_values(0, xmax)
                                         if 0 <= v <= xmax][:_TICKS]  # fmt: skip
        for k, (text, mark) in enumerate(zip(self.tick_texts, self.tick_marks)):
            if k < len(ticks):
                text.set_text(f"{ticks[k]:g}")
                text.set_x(ticks[k] / xmax)
                mark.set_data([ticks[k] / xmax] * 2, [0, -0.015])
            else:
                text.set_text("")
                mark.set_data([], [])


def plot_term_legend(ax, *, narrow: bool = False, experts: bool = False):
    """The terms' colours as a legend filling ``ax`` (its frame off); returns the legend. The experts'
    all-to-all is listed only with ``experts`` (a dense model has no such term)."""
    ax.axis("off")
    handles = [Patch(color=TERM_COLORS[t], label=TERM_LABELS[t]) for t in BREAKDOWN_TERMS
               if experts or t != "ep_comm"]
    return ax.legend(handles=handles, loc="center", ncol=2 if narrow else 3, fontsize=11, frameon=False,
                     handlelength=1.2, columnspacing=0.9, handletextpad=0.4)


def plot_layout_bars(ax, result, *, rows: int = 4, narrow: bool = False) -> LayoutBars:
    """Draw ``result``'s fastest layouts on ``ax`` (see :class:`LayoutBars`).

    Returns
    -------
    LayoutBars
        Its ``bars`` ((row, term) -> Rectangle), ``labels``, ``note``, ``title`` and ticks.
    """
    return LayoutBars(ax, rows=rows, narrow=narrow).update(result)
