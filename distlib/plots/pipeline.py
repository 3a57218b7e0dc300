"""Drawing a pipeline schedule: one row per stage, a box per forward or backward op, idle time left grey.

:func:`plot_pipeline_schedule` draws a :class:`distlib.pipeline_schedule.PipelineSchedule`'s
``events`` on an axes it is given (chapter 12's figure and its widget call it),
on a time axis in units of one stage's forward pass for one microbatch.
Forwards are blue and backwards orange; an interleaved schedule's odd
chunks are a lighter shade of the same colour. A box wide enough for its
label carries its microbatch's number.

:class:`SchedulePicture` is chapter 12's widget's frame around it: the
margins, a title of the schedule and its two bubbles over it, the legend
under it and the axis labels, drawn once; its ``update`` draws the next
schedule in that frame.
"""

from __future__ import annotations

from matplotlib.collections import PolyCollection
from matplotlib.patches import Patch

from ..static.legend import legend_below, legend_below_again, recorded_below
from ..static.phone import phone_layout

__all__ = ["plot_pipeline_schedule", "FORWARD_COLORS", "BACKWARD_COLORS", "IDLE_COLOR", "schedule_legend_handles",
           "schedule_legend", "phone_figure", "KIND_LABELS", "schedule_title", "SchedulePicture",
           "plot_schedule_picture"]

#: Forward boxes: even chunks dark, odd chunks lighter (an interleaved stage's chunks alternate).
FORWARD_COLORS = ("#2f5f9e", "#6a98d8")
#: Backward boxes: even chunks dark, odd chunks lighter.
BACKWARD_COLORS = ("#b5541c", "#e08a4f")
#: A stage's row where it computes nothing.
IDLE_COLOR = "#e6e6e6"
#: The schedules' names as the book writes them.
KIND_LABELS = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "interleaved 1F1B"}
_HEIGHT = 0.72
#: Points of width a box needs per character of its label (11 pt digits are about 6.2 pt wide), plus padding.
_PT_PER_CHAR, _PT_PAD = 6.6, 3.0


def _color(kind: str, chunk: int) -> str:
    colors = FORWARD_COLORS if kind == "F" else BACKWARD_COLORS
    return colors[chunk % 2]


def schedule_legend_handles(chunks: int = 1) -> list:
    """Legend entries: forward, backward (per chunk when ``chunks`` > 1) and idle."""
    if chunks == 1:
        handles = [Patch(color=FORWARD_COLORS[0], label="forward"), Patch(color=BACKWARD_COLORS[0], label="backward")]
    else:
        handles = [Patch(color=FORWARD_COLORS[0], label="F, even chunk"),
                   Patch(color=FORWARD_COLORS[1], label="F, odd chunk"),
                   Patch(color=BACKWARD_COLORS[0], label="B, even chunk"),
                   Patch(color=BACKWARD_COLORS[1], label="B, odd chunk")]
    return handles + [Patch(facecolor=IDLE_COLOR, edgecolor="#999999", linewidth=0.5, label="idle")]


def plot_pipeline_schedule(ax, schedule, *, xmax: float | None = None, labels: bool = True,
                           stage_labels=None) -> dict:
    """Draw ``schedule`` (a :class:`~distlib.pipeline_schedule.PipelineSchedule`) on ``ax``: stage 0 on top.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    schedule : PipelineSchedule
    xmax : float, optional
        The right end of the time axis, in forward times (default: the step's end).
    labels : bool
        Write each microbatch's number in its box where the box is wide enough.
    stage_labels : list of str, optional
        The y tick labels, one per stage (default ``"stage s"``).

    Returns
    -------
    dict
        ``"boxes"`` (the ops' PolyCollection), ``"idle"`` (the rows' backgrounds), ``"texts"`` (the labels).
    """
    unit = schedule.forward_time
    p = schedule.stages
    end = schedule.iteration_time / unit
    xmax = end if xmax is None else float(xmax)
    rows = [[(0, s - _HEIGHT / 2), (end, s - _HEIGHT / 2), (end, s + _HEIGHT / 2), (0, s + _HEIGHT / 2)]
            for s in range(p)]
    idle = PolyCollection(rows, facecolors=IDLE_COLOR, edgecolors="none", zorder=1)
    ax.add_collection(idle)
    verts, colors = [], []
    for e in schedule.events:
        x0, x1 = e.start / unit, e.end / unit
        y0, y1 = e.stage - _HEIGHT / 2, e.stage + _HEIGHT / 2
        verts.append([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
        colors.append(_color(e.kind, e.chunk))
    # a thin white edge between neighbouring boxes, where the boxes are wide enough to keep their colour
    thinnest = min(e.duration for e in schedule.events) / unit * _pt_per_unit(ax, xmax)
    boxes = PolyCollection(verts, facecolors=colors, edgecolors="white", linewidths=0.6 if thinnest >= 5 else 0,
                           zorder=2)
    ax.add_collection(boxes)
    ax.set_xlim(0, xmax)
    ax.set_ylim(p - 0.5, -0.5)
    ax.set_yticks(range(p), stage_labels if stage_labels is not None else [f"stage {s}" for s in range(p)])
    ax.tick_params(axis="y", length=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    texts = _box_labels(ax, schedule, unit, xmax) if labels else []
    return {"boxes": boxes, "idle": idle, "texts": texts}


def _pt_per_unit(ax, xmax: float) -> float:
    """Points of the axes' width per forward time."""
    return ax.get_position().width * ax.figure.get_figwidth() * 72 / xmax


def _box_labels(ax, schedule, unit: float, xmax: float) -> list:
    """The microbatch number in every box at least as wide as the number (11 pt), centred."""
    pt_per_unit = _pt_per_unit(ax, xmax)
    texts = []
    for e in schedule.events:
        label = str(e.microbatch)
        if e.duration / unit * pt_per_unit < len(label) * _PT_PER_CHAR + _PT_PAD:
            continue
        texts.append(ax.text((e.start + e.end) / 2 / unit, e.stage, label, ha="center", va="center", fontsize=11,
                             color="white", zorder=3, clip_on=True))
    return texts


def schedule_legend(ax, *, chunks: int = 1):
    """The legend of :func:`schedule_legend_handles` under ``ax`` (below its x label), in one row."""
    return legend_below(ax, handles=schedule_legend_handles(chunks), ncols=3, fontsize=11, frameon=False)


def _phone(fig) -> None:
    """A phone's copy: no numbers in the boxes (they are a third as wide there), the legend placed again."""
    for ax in fig.axes:
        for text in list(ax.texts):
            text.remove()
        if recorded_below(ax) is not None and ax.get_legend() is not None:
            entries = len(ax.get_legend().get_texts())
            legend_below_again(ax, handles=schedule_legend_handles(1 if entries == 3 else 2), handlelength=1.2,
                               columnspacing=0.8, handletextpad=0.4)


def phone_figure(fig, *, height: float | None = None):
    """Say how a figure of schedules is drawn for a phone (:func:`distlib.static.phone.phone_layout`):
    ``height`` CSS px tall, the boxes' numbers left out. Returns ``fig``."""
    return phone_layout(fig, height=height, adjust=_phone)


def _pct(x: float) -> str:
    """A share as the title writes it: whole per cent from 10 % up, one decimal under.

    >>> _pct(0.2727), _pct(0.0625)
    ('27%', '6.2%')
    """
    return f"{x:.0%}" if x >= 0.095 else f"{x:.1%}"


def schedule_title(schedule, *, narrow: bool = False) -> str:
    """Two lines: the schedule, ``v``, ``p`` and ``m``; then its bubble as a share of the step and of the ideal."""
    r = schedule
    name = KIND_LABELS[r.kind] + (f", v = {r.chunks}" if r.kind == "interleaved" else ", v = 1")
    first = f"{name}, p = {r.stages}, m = {r.microbatches}"
    the = "" if narrow else "the "
    second = f"bubble {_pct(r.bubble_fraction)} of {the}step, {_pct(r.bubble_ratio)} of {the}ideal"
    return f"{first}\n{second}"


class SchedulePicture:
    """A schedule in a fixed frame: margins, its title over the axes, the legend under them, the axis labels.

    The frame is drawn once for the figure of ``ax``; :meth:`update` takes the previous schedule's boxes and
    numbers off and draws the next (:func:`plot_pipeline_schedule`), each stage labelled with its peak
    microbatches in flight, under its :func:`schedule_title`.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The figure's one axes.
    narrow : bool
        Drawn for a phone: other margins, two legend columns, shorter words.
    """

    def __init__(self, ax, *, narrow: bool = False):
        figure = ax.figure
        self.ax, self.narrow = ax, narrow
        left = 0.24 if narrow else 0.17
        figure.subplots_adjust(left=left, right=0.97, top=0.83 if narrow else 0.84, bottom=0.34 if narrow else 0.30)
        self.title = figure.text(0.5, 0.985, "", ha="center", va="top", fontsize=11)
        handles = schedule_legend_handles(chunks=2)
        self.legend = figure.legend(handles=handles, loc="lower center", ncol=2 if narrow else 3, fontsize=11,
                                    frameon=False, handlelength=1.2, columnspacing=0.8, handletextpad=0.4,
                                    borderaxespad=0.2)
        ax.set_xlabel("time, in forward passes of one microbatch" if not narrow else "time, in forwards")
        ax.set_ylabel("stage (peak held)")
        self.drawn: dict = {}

    def update(self, schedule) -> "SchedulePicture":
        """Draw ``schedule`` in place of the one before; ``.drawn`` is what :func:`plot_pipeline_schedule` returned."""
        ax = self.ax
        for artist in [*ax.collections, *ax.texts]:
            artist.remove()
        self.drawn = plot_pipeline_schedule(ax, schedule, stage_labels=[f"{s} ({k:g})" for s, k in
                                                                        enumerate(schedule.peak_in_flight)])
        ax.tick_params(axis="y", labelsize=11)
        self.title.set_text(schedule_title(schedule, narrow=self.narrow))
        return self


def plot_schedule_picture(ax, schedule, *, narrow: bool = False) -> SchedulePicture:
    """Draw ``schedule`` in its frame on ``ax`` (see :class:`SchedulePicture`)."""
    return SchedulePicture(ax, narrow=narrow).update(schedule)
