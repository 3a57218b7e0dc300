"""Drawings of communication hiding: the step as a Gantt chart, and bucket sweeps.

Every function draws on an axes it is given and returns what it drew; the
widget, the animation and the chapter call the same functions.
"""

from __future__ import annotations

import textwrap

import matplotlib
import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.font_manager import FontProperties
from matplotlib.legend_handler import HandlerTuple
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, MaxNLocator

from ..fmt import fmt_bytes
from ..static.legend import legend_below
from ..static.phone import phone_layout, phone_spec
from ..static.pictures import CSS_DPI, NARROW
from ..overlap import BucketSweep, OverlapTimeline
from ..overlap.zero import Zero3Timeline

__all__ = ["TimelinePicture", "plot_timeline", "plot_zero3_timeline", "plot_bucket_sweep", "plot_measured_sweep",
           "animate_timeline", "time_unit", "phone_figure", "COLORS"]

COLORS = {
    "forward": "#9e9e9e",
    "backward": ("#4c72b0", "#7a98cf"),  # alternate shades so adjacent layers stay apart
    "comm": ("#dd8452", "#f2b48a"),
    "exposed": "#D55E00",
    "reduce_scatter": ("#55a868", "#8cc79b"),  # ZeRO's gradient collective, beside the orange all-gathers
}
_ROW_Y = {"compute": 1.0, "comm": 0.0}
_HEIGHT = 0.6


def time_unit(seconds: float) -> tuple:
    """``(scale, unit)`` that shows ``seconds`` as a number between 1 and 1000."""
    if seconds >= 1:
        return 1.0, "s"
    if seconds >= 1e-3:
        return 1e3, "ms"
    return 1e6, "µs"


# ---- phones -------------------------------------------------------------------
#: characters of an 11 pt title line over an axes on a phone (distlib.plots.pictures.NARROW CSS px)
_PHONE_TITLE_CHARS = 34
#: height of the animation on a phone, CSS px
_PHONE_ANIMATION_HEIGHT = 260


def _break_at_commas(text: str, width: int) -> str:
    """``text`` in lines of at most ``width`` characters, broken after its commas and colons where it can."""
    lines = []
    for clause in text.split(": "):  # a colon always ends a line
        parts = clause.split(", ")
        for k, part in enumerate(parts):
            part += "," if k < len(parts) - 1 else ""
            if k and len(lines[-1]) + 1 + len(part) <= width:
                lines[-1] += " " + part
            else:
                lines += textwrap.wrap(part, width) or [part]
        lines[-1] += ":"
    lines[-1] = lines[-1][:-1]
    return "\n".join(lines)


def phone_figure(fig) -> None:
    """Lay out a figure of this module's drawings again for a phone (``phone_layout``'s adjust).

    Titles break at their commas and colons, and matplotlib's constrained layout places
    the panels around them. (The legends are under the axes in one column at
    every width already.)
    """
    for ax in fig.axes:
        if "\n" not in ax.get_title():
            ax.title.set_text(_break_at_commas(ax.get_title(), _PHONE_TITLE_CHARS))
        ax.title.set_wrap(False)
    fig.set_layout_engine("constrained")


def _phone_taller(fig, px: float) -> None:
    """On a phone, ``fig`` is ``px`` CSS px taller than on a desktop (more, if asked before)."""
    spec = phone_spec(fig)
    height = (spec and spec.height) or fig.get_size_inches()[1] * CSS_DPI
    phone_layout(fig, height=height + px, adjust=phone_figure)


def _phone_animation(fig) -> None:
    """The animation's figure on a phone: room for the row labels and a title that ends at the right edge."""
    ax = fig.axes[0]
    fig.subplots_adjust(left=98 / NARROW, right=1 - 14 / NARROW, bottom=62 / _PHONE_ANIMATION_HEIGHT,
                        top=1 - 34 / _PHONE_ANIMATION_HEIGHT)
    ax.title.set_x(1.0)
    ax.title.set_horizontalalignment("right")  # the frame's time grows it to the left, never off the picture
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 5, 10]))


def _legend_below(ax, handles=None, labels=None, **kwargs):
    """A legend in one column under the x label (inside, a legend covers data wherever the data lies)."""
    # a fixed distance below the axes, whatever their height: the tick labels and the x label (0.52 in,
    # as these pictures were tuned; the computed drop, for 10 pt tick and x labels, is 0.5 in)
    return legend_below(ax, handles, labels, drop=0.52, frameon=False, **kwargs)


def _timeline(result) -> OverlapTimeline:
    """Accept an :class:`OverlapTimeline` or anything holding one in ``.timeline``."""
    tl = getattr(result, "timeline", result)
    if not isinstance(tl, OverlapTimeline):
        raise TypeError(f"timeline must be an OverlapTimeline or a DDPStep, got {type(result).__name__}")
    return tl


def _rows(tl: OverlapTimeline):
    """Per row: starts, ends and face colours of the bars, in seconds."""
    compute_s, compute_e, compute_c = [], [], []
    comm_s, comm_e, comm_c = [], [], []
    for ev in tl.events:
        if ev.kind == "comm":
            comm_s.append(ev.start)
            comm_e.append(ev.end)
            comm_c.append(COLORS["comm"][ev.index % 2])
        else:
            compute_s.append(ev.start)
            compute_e.append(ev.end)
            compute_c.append(COLORS["forward"] if ev.kind == "forward" else COLORS["backward"][ev.index % 2])
    return {
        "compute": (np.array(compute_s), np.array(compute_e), compute_c),
        "comm": (np.array(comm_s), np.array(comm_e), comm_c),
    }


def _verts(starts, ends, y, scale, until=None):
    if until is not None:
        ends = np.minimum(ends, until)
        starts = np.minimum(starts, until)
    y0, y1 = y - _HEIGHT / 2, y + _HEIGHT / 2
    return [[(s * scale, y0), (s * scale, y1), (e * scale, y1), (e * scale, y0)]
            for s, e in zip(starts.tolist(), ends.tolist())]


class TimelinePicture:
    """A Gantt chart of one step, drawn once and then updated in place.

    ``fast_ticks=True`` draws the time axis's ticks and labels as separate
    artists (listed in :attr:`animated`), so that a widget can cache
    everything else and redraw only what changes (Agg blitting) even when
    the time axis rescales.
    """

    def __init__(self, ax, *, fast_ticks=False, title=True, ready_marks=True, max_ticks=6):
        self.ax = ax
        self.fast_ticks = fast_ticks
        self.show_title = title
        self.ready_marks = ready_marks
        self._locator = MaxNLocator(nbins=max_ticks, steps=[1, 2, 2.5, 5, 10])
        self.scale, self.unit = 1.0, "s"
        self.collections = {}
        for row in ("compute", "comm"):
            coll = PolyCollection([], edgecolors="white", linewidths=0.6)
            ax.add_collection(coll)
            self.collections[row] = coll
        self.exposed = Rectangle((0, -0.5), 0, 2.0, facecolor=COLORS["exposed"], alpha=0.15,
                                 edgecolor=COLORS["exposed"], hatch="//", linewidth=0.8, zorder=0)
        ax.add_patch(self.exposed)
        (self.ready,) = ax.plot([], [], "v", color="0.25", markersize=3.5, linestyle="none")
        self.ready.set_visible(ready_marks)
        self.now = ax.axvline(0.0, color="0.2", linewidth=1.0, visible=False)
        self.title = ax.set_title("", fontsize=9)
        ax.set_ylim(-0.5, 1.5)
        ax.set_yticks([_ROW_Y["compute"], _ROW_Y["comm"]], ["compute", "all-reduce"])
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        self.tick_marks = self.tick_labels = None
        if fast_ticks:
            ax.set_xticks([])
            trans = ax.get_xaxis_transform()
            size = matplotlib.rcParams["xtick.labelsize"]
            (self.tick_marks,) = ax.plot([], [], marker=3, color="black", markersize=3.5, linestyle="none",
                                         transform=trans, clip_on=False)
            self.tick_labels = [ax.text(0, -0.06, "", transform=trans, ha="center", va="top", fontsize=size,
                                        visible=False) for _ in range(max_ticks + 3)]
            # keep room for the labels: the x label is placed as if the axis had ticks
            ax.xaxis.labelpad = 4 + 1.4 * FontProperties(size=size).get_size_in_points()

    @property
    def animated(self) -> list:
        """The artists :meth:`set_timeline` changes with the data.

        Not included: the x-axis label, which changes only with the time
        unit (compare :attr:`unit` before and after an update), and the
        title when ``title=False``.
        """
        out = [*self.collections.values(), self.exposed, self.ready, self.now]
        if self.show_title:
            out.append(self.title)
        if self.fast_ticks:
            out += [self.tick_marks, *self.tick_labels]
        return out

    def artists(self) -> dict:
        return {"compute": self.collections["compute"], "comm": self.collections["comm"],
                "exposed": self.exposed, "ready": self.ready, "now": self.now, "title": self.title,
                "scale": self.scale}

    def set_timeline(self, timeline, *, until=None, xmax=None) -> "TimelinePicture":
        """Show ``timeline`` (up to time ``until``, seconds, if given) on a time axis to ``xmax``."""
        tl = _timeline(timeline)
        end = tl.iteration_time if xmax is None else float(xmax)
        self.scale, self.unit = scale, unit = time_unit(max(end, 1e-12))
        for row, (s, e, colors) in _rows(tl).items():
            coll = self.collections[row]
            coll.set_verts(_verts(s, e, _ROW_Y[row], scale, until))
            coll.set_facecolors(colors)
        lo, hi = tl.exposed_interval
        shown_hi = hi if until is None else min(hi, max(until, lo))
        self.exposed.set_x(lo * scale)
        self.exposed.set_width((shown_hi - lo) * scale)
        self.exposed.set_visible(shown_hi > lo)  # a span of zero width would still draw its edge
        ready = tl.ready if until is None else tl.ready[tl.ready <= until]
        self.ready.set_data(ready * scale, np.full(len(ready), _ROW_Y["comm"] + _HEIGHT / 2 + 0.08))
        if until is not None:
            self.now.set_xdata([until * scale, until * scale])
        self.now.set_visible(until is not None)
        right = end * scale * 1.02 if end > 0 else 1.0
        self.ax.set_xlim(0, right)
        label = f"time in the step ({unit})"
        if self.ax.get_xlabel() != label:
            self.ax.set_xlabel(label)
        if self.fast_ticks:
            ticks = [t for t in self._locator.tick_values(0, end * scale) if 0 <= t <= right]
            self.tick_marks.set_data(ticks, np.zeros(len(ticks)))
            for text, t in zip(self.tick_labels, ticks):
                text.set_x(t)
                text.set_text(f"{t:g}")
                text.set_visible(True)
            for text in self.tick_labels[len(ticks):]:
                text.set_visible(False)
        if not self.show_title:
            self.title.set_text("")
        elif until is None:
            self.title.set_text(
                f"step {tl.iteration_time * scale:.3g} {unit}, exposed comm {tl.exposed_comm * scale:.3g} {unit}, "
                f"{tl.speedup:.2f}x vs no overlap")
        else:
            so_far = max(min(hi, until) - lo, 0.0) * scale
            self.title.set_text(f"t = {until * scale:.3g} {unit}"
                                + (f", exposed so far {so_far:.3g} {unit}" if until > lo else ""))
        return self


def plot_timeline(ax, timeline, *, until=None, xmax=None, title=True, ready_marks=True) -> dict:
    """Gantt chart of one step: compute row above, all-reduce row below.

    The exposed communication (after the backward pass, while the GPU
    waits) is shaded red. Small triangles on the communication row mark
    when each message became ready, so a queue shows as a gap between a
    triangle and its bar.

    Parameters
    ----------
    ax : matplotlib Axes
    timeline : OverlapTimeline or DDPStep
    until : float, optional
        Draw only what has happened by this time (seconds), with a line at
        that time; used by :func:`animate_timeline`.
    xmax : float, optional
        Right end of the time axis, seconds (default: the end of the step).
        Pass ``no_overlap_time`` to compare schedules on one scale.
    title : bool
        Put the headline numbers in the axes title.
    ready_marks : bool
        Mark ready times on the communication row.

    Returns
    -------
    dict
        The artists: ``"compute"``, ``"comm"`` (PolyCollections, one bar
        per layer or message, in display units), ``"exposed"`` (Rectangle),
        ``"ready"``, ``"now"`` (Line2D), ``"title"``, and ``"scale"``, the
        factor from seconds to the axis unit.
    """
    pic = TimelinePicture(ax, title=title, ready_marks=ready_marks)
    pic.set_timeline(timeline, until=until, xmax=xmax)
    _phone_taller(ax.figure, 24 if title else 0)  # its title takes two lines on a phone
    return pic.artists()


def plot_zero3_timeline(ax, timeline, *, xmax=None, title=True) -> dict:
    """Gantt chart of one ZeRO-3 step (:func:`distlib.overlap.zero.zero3_timeline`), drawn like :func:`plot_timeline`.

    The compute row shows the forward (grey) and backward (blue) of each
    layer; the communication row the all-gathers (orange) and
    reduce-scatters (green). Every interval the compute waits for
    communication is shaded red and hatched, as chapter 8's exposed span.

    Returns the artists: ``"compute"``, ``"comm"`` (PolyCollections),
    ``"exposed"`` (a list of Rectangles), ``"title"`` and ``"scale"``.
    """
    if not isinstance(timeline, Zero3Timeline):
        raise TypeError(f"timeline must be a Zero3Timeline from zero3_timeline(...), got {type(timeline).__name__}")
    end = timeline.step_time if xmax is None else float(xmax)
    scale, unit = time_unit(max(end, 1e-12))
    rows = {"compute": ([], [], []), "comm": ([], [], [])}
    for ev in timeline.events:
        if ev.kind == "comm":
            shades = COLORS["reduce_scatter"] if ev.label.startswith("reduce") else COLORS["comm"]
            color = shades[ev.index % 2]
        else:
            color = COLORS["forward"] if ev.kind == "forward" else COLORS["backward"][ev.index % 2]
        for part, value in zip(rows[ev.row], (ev.start, ev.end, color)):
            part.append(value)
    out = {"scale": scale, "exposed": []}
    for row, (starts, ends, colors) in rows.items():
        coll = PolyCollection(_verts(np.array(starts), np.array(ends), _ROW_Y[row], scale), facecolors=colors,
                              edgecolors="white", linewidths=0.6)
        out[row] = ax.add_collection(coll)
    for lo, hi in timeline.idle:
        out["exposed"].append(ax.add_patch(Rectangle(
            (lo * scale, _ROW_Y["compute"] - _HEIGHT / 2 - 0.1), (hi - lo) * scale, _HEIGHT + 0.2,
            facecolor=COLORS["exposed"], alpha=0.15, edgecolor=COLORS["exposed"], hatch="//", linewidth=0.8,
            zorder=0)))
    ax.set_xlim(0, end * scale * 1.02 if end > 0 else 1.0)
    ax.set_ylim(-0.5, 1.5)
    ax.set_yticks([_ROW_Y["compute"], _ROW_Y["comm"]], ["compute", "gather / scatter"])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel(f"time in the step ({unit})")
    depth = "no prefetch" if timeline.prefetch == 0 else f"prefetch {timeline.prefetch}"
    held = f"{timeline.peak_units} layer" + ("" if timeline.peak_units == 1 else "s")
    out["title"] = ax.set_title(
        f"{depth}: step {timeline.step_time * scale:.3g} {unit}, exposed comm "
        f"{timeline.exposed_comm * scale:.3g} {unit}, {held} held" if title else "", fontsize=9)
    _phone_taller(ax.figure, 24 if title else 0)
    return out


def plot_bucket_sweep(ax, sweep: BucketSweep, *, mark_best=True) -> dict:
    """Step time against bucket capacity, with the compute floor and one bucket.

    Returns the artists: ``"time"`` (the step-time line), ``"floor"``,
    ``"one_bucket"`` and ``"best"`` (None when ``mark_best`` is False).
    """
    if not isinstance(sweep, BucketSweep):
        raise TypeError(f"sweep must be a BucketSweep, got {type(sweep).__name__}")
    scale, unit = time_unit(max(sweep.one_bucket_time, float(np.max(sweep.iteration_time))))
    (line,) = ax.plot(sweep.bucket_bytes, sweep.iteration_time * scale, marker="o", markersize=3,
                      color="#4c72b0", label="step time (DDP buckets)")
    floor = ax.axhline(sweep.compute_time * scale, color="#009E73", linestyle="--", linewidth=1,
                       label="compute only, F + B")
    one = ax.axhline(sweep.one_bucket_time * scale, color="#D55E00", linestyle=":", linewidth=1.2,
                     label="one all-reduce after backward")
    best = None
    if mark_best:
        (best,) = ax.plot([sweep.best_bucket_bytes], [sweep.best_time * scale], "o", color="#D55E00",
                          markersize=7, markerfacecolor="none")
        # above the minimum, where the curve is flat and nothing else is drawn
        ax.annotate(f"best {fmt_bytes(sweep.best_bucket_bytes)}", (sweep.best_bucket_bytes, sweep.best_time * scale),
                    textcoords="offset points", xytext=(0, 40), ha="center", va="bottom", fontsize=8,
                    arrowprops={"arrowstyle": "-", "color": "0.4", "linewidth": 0.8, "shrinkB": 5})
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: str(fmt_bytes(x))))
    ax.set_xlabel("bucket capacity (bytes)")
    ax.set_ylabel(f"step time ({unit})")
    lo = sweep.compute_time * scale
    hi = max(sweep.one_bucket_time, float(np.max(sweep.iteration_time))) * scale
    bottom = min(lo * 0.9, float(np.min(sweep.iteration_time)) * scale * 0.9)
    ax.set_ylim(bottom, hi + 0.06 * (hi - bottom))  # the "one all-reduce" line clear of the frame
    _legend_below(ax, fontsize=8)
    _phone_taller(ax.figure, 24)  # room for a title in two lines
    return {"time": line, "floor": floor, "one_bucket": one, "best": best}


def plot_measured_sweep(ax, comparison, *, cpu=False) -> dict:
    """Measured step times beside the model's, against DDP's bucket capacity.

    ``comparison`` is a :class:`distlib.overlap.measure.DDPComparison`.
    Filled markers are measurements (medians), lines of the same colour the
    model: blue for overlap (ordinary DDP), red for one all-reduce after the
    backward pass, green for the step without communication. With
    ``cpu=True``, the CPU time per step with overlap is drawn too (grey):
    the part of the communication that took processor time.

    Returns the artists: ``"measured_overlap"``, ``"model_overlap"``,
    ``"measured_no_overlap"``, ``"model_no_overlap"``,
    ``"measured_compute"``, ``"model_compute"`` and ``"cpu"`` (None unless
    asked for).
    """
    for name in ("bucket_bytes", "measured_overlap", "predicted_overlap", "measured_no_overlap",
                 "predicted_no_overlap", "measured_compute", "predicted_compute"):
        if not hasattr(comparison, name):
            raise TypeError(f"comparison must be a DDPComparison (no attribute {name!r}), "
                            f"got {type(comparison).__name__}")
    x = np.asarray(comparison.bucket_bytes, dtype=float)
    top = max(float(np.max(comparison.measured_overlap)), float(np.max(comparison.measured_no_overlap)),
              float(np.max(comparison.predicted_overlap)), float(comparison.predicted_no_overlap))
    scale, unit = time_unit(top)
    blue, red, green = "#4c72b0", "#D55E00", "#009E73"
    out = {}
    (out["model_overlap"],) = ax.plot(x, comparison.predicted_overlap * scale, "--", color=blue, linewidth=1.2,
                                      label="model: overlap (DDP)")
    (out["measured_overlap"],) = ax.plot(x, comparison.measured_overlap * scale, "o-", color=blue, markersize=6,
                                         label="measured: overlap (DDP)")
    out["model_no_overlap"] = ax.axhline(comparison.predicted_no_overlap * scale, color=red, linestyle="--",
                                         linewidth=1.2, label="model: one all-reduce after backward")
    (out["measured_no_overlap"],) = ax.plot(x, comparison.measured_no_overlap * scale, "s", color=red,
                                            markersize=6, label="measured: one all-reduce after backward")
    out["model_compute"] = ax.axhline(comparison.predicted_compute * scale, color=green, linestyle=":",
                                      linewidth=1.2, label="model: no communication")
    (out["measured_compute"],) = ax.plot(x, comparison.measured_compute * scale, "^", color=green, markersize=6,
                                         label="measured: no communication")
    out["cpu"] = None
    if cpu and hasattr(comparison, "cpu_overlap") and np.all(np.isfinite(comparison.cpu_overlap)):
        (out["cpu"],) = ax.plot(x, comparison.cpu_overlap * scale, "x:", color="0.4", markersize=6,
                                label="measured: CPU time per step, overlap")
    ax.set_xscale("log")
    ax.set_xticks(x)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 2**20:g} MiB"))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlabel("bucket_cap_mb")
    ax.set_ylabel(f"step time ({unit})")
    ax.set_ylim(bottom=0)
    # one entry per colour, its marker (measured) beside its line (model): half the entries, same story
    entries = [((out["measured_overlap"], out["model_overlap"]), "overlap (ordinary DDP)"),
               ((out["measured_no_overlap"], out["model_no_overlap"]), "one all-reduce after backward"),
               ((out["measured_compute"], out["model_compute"]), "no communication")]
    if out["cpu"] is not None:
        entries.append(((out["cpu"],), "CPU time per step, overlap"))
    _legend_below(ax, [h for h, _ in entries], [t for _, t in entries], handler_map={tuple: HandlerTuple(ndivide=None)},
                  handlelength=3.5, fontsize=8)
    _phone_taller(ax.figure, 24)  # room for a title in two lines
    return out


def animate_timeline(timeline, *, frames=20, figsize=(6.0, 2.7), dpi=72, interval=150):
    """An animation of the step filling in over time, for ``HTML(anim.to_jshtml())``.

    A vertical line sweeps from the start to the end of the step; bars grow
    behind it. ``frames`` is at most 30, so the embedded HTML stays small
    (about 10 kB per frame at the default size).
    """
    from matplotlib.animation import FuncAnimation
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .._check import check_int

    frames = check_int("frames", frames, minimum=2, maximum=30)
    tl = _timeline(timeline)
    fig = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    pic = TimelinePicture(ax)
    fig.subplots_adjust(left=0.17, right=0.97, bottom=0.24, top=0.86)
    phone_layout(fig, height=_PHONE_ANIMATION_HEIGHT, adjust=_phone_animation)
    # the first frame already shows the step begun (never empty axes), the last the whole step
    times = np.linspace(0.0, tl.iteration_time, frames + 1)[1:]

    def frame(k):
        pic.set_timeline(tl, until=float(times[k]))
        return []

    frame(0)
    return FuncAnimation(fig, frame, frames=frames, interval=interval, blit=False)
