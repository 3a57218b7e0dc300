"""Drawings of the ring all-reduce and of one cluster step.

Every function draws on an axes it is given and returns what it drew; the
widgets and the chapter call the same functions.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.patches import FancyArrowPatch, Rectangle

from ..static.legend import legend_below, legend_below_again, recorded_below
from ..static.phone import phone_layout
from ..static.pictures import MIN_FONT_PT
from ..ring import REDUCE_SCATTER, RingTrace, ring_bytes_per_rank

__all__ = [
    "RingPicture",
    "plot_ring_state",
    "animate_ring",
    "plot_ring_volume",
    "StepBars",
    "plot_step_bars",
    "plot_step_vs_p",
    "PHASE_COLORS",
]

PHASE_COLORS = {REDUCE_SCATTER: "#D55E00", "all-gather": "#1f77b4"}
_RAD = -0.3  # curvature of the ring's arrows
_DONE = np.array([0.0, 0.62, 0.45, 1.0])  # fully reduced chunk: bluish green (#009E73, Okabe-Ito)
_EMPTY = np.array([1.0, 1.0, 1.0, 1.0])  # only the GPU's own data: white
_LIGHT = np.array([1.0, 0.93, 0.75, 1.0])  # partial sums: amber, deeper as they fill
_DEEP = np.array([0.9, 0.55, 0.05, 1.0])


def _chunk_colors(counts: np.ndarray, p: int) -> np.ndarray:
    """RGBA per chunk from how many ranks' data it includes."""
    t = np.clip((counts - 1) / max(p - 1, 1), 0, 1)[:, None]
    colors = _LIGHT + (_DEEP - _LIGHT) * t
    colors[counts <= 1] = _EMPTY
    colors[counts >= p] = _DONE
    return colors


class RingPicture:
    """The ring drawn once, then moved from step to step cheaply.

    Each GPU is a box of ``p`` cells, one per chunk: white while the chunk
    holds only that GPU's own data, amber (deeper as it fills) while it holds
    a partial sum, green once it holds the sum over all ranks. Arrows show the
    chunks in flight during the step that comes next, coloured by phase.
    """

    def __init__(self, ax, trace: RingTrace, *, annotate: bool | None = None, chunk_shift: int = 0):
        self.ax = ax
        self.trace = trace
        p = trace.p
        self.p = p
        self.n_frames = len(trace.steps) + 1
        #: chunks are named (chunk - chunk_shift) mod p, and drawn in the order of their names:
        #: 0 is the trace's own numbering (chapter 1's: rank r ends the reduce-scatter owning
        #: chunk r + 1), 1 is MPI_Reduce_scatter's (rank r ends owning chunk r)
        self.chunk_shift = int(chunk_shift) % max(p, 1)
        held = trace.holdings_each_step().sum(axis=3)
        self._held = np.roll(held, -self.chunk_shift, axis=2) if self.chunk_shift else held
        self.annotate = p <= 6 if annotate is None else annotate

        self._static = []
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_xlim(-1.45, 1.45)
        ax.set_ylim(-1.45, 1.5)
        angles = np.pi / 2 - 2 * np.pi * np.arange(p) / max(p, 1)
        self.centers = np.stack([np.cos(angles), np.sin(angles)], axis=1) * (1.0 if p > 1 else 0.0)
        cols = math.ceil(math.sqrt(p))
        rows = math.ceil(p / cols)
        box = min(0.55, 0.6 * 2 * np.pi / max(p, 3))
        cell = box / cols
        self.box = box
        patches, self.cell_xy = [], []
        arcs = self._arcs(box)
        for r in range(p):
            cx, cy = self.centers[r]
            x0, y0 = cx - box / 2, cy + rows * cell / 2
            xy, ha, va = _label_place(self.centers[r], box / 2, rows * cell / 2, arcs)
            self._static.append(ax.text(*xy, f"GPU {r}", ha=ha, va=va, fontsize=MIN_FONT_PT))
            for c in range(p):
                i, j = divmod(c, cols)
                xy = (x0 + j * cell, y0 - (i + 1) * cell)
                patches.append(Rectangle(xy, cell, cell))
                self.cell_xy.append((xy[0] + cell / 2, xy[1] + cell / 2))
        self.cells = PatchCollection(patches, edgecolor="0.3", linewidth=0.5)
        ax.add_collection(self.cells, autolim=False)
        self.labels = []
        if self.annotate:
            for x, y in self.cell_xy:
                self.labels.append(ax.text(x, y, "", ha="center", va="center", fontsize=7))
        self.arrows, self._tag_xy = [], []
        for start, end in arcs:
            d = end - start
            # Midpoint of matplotlib's arc3 Bezier: where the chunk's tag sits.
            self._tag_xy.append((start + end) / 2 + 0.5 * _RAD * np.array([d[1], -d[0]]))
            a = FancyArrowPatch(
                start, end, arrowstyle="-|>", mutation_scale=10,
                connectionstyle=f"arc3,rad={_RAD}", shrinkA=0, shrinkB=0, linewidth=1.6,
            )
            ax.add_artist(a)  # limits are fixed: skip add_patch's autoscaling
            self.arrows.append(a)
        self.tags = [ax.text(0, 0, "", ha="center", va="center", fontsize=7,
                             bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="0.5", lw=0.5))
                     for _ in self.arrows]
        self.title = ax.set_title("", fontsize=10)
        # What changes from step to step (widgets redraw only these).
        self.dynamic_artists = [self.cells, *self.labels, *self.arrows, *self.tags, self.title]
        self._static.extend(a for a in self.dynamic_artists if a is not self.title)
        self.step = None
        self.set_step(0)

    def _arcs(self, box: float) -> list:
        """Start and end point of each arrow, GPU r to GPU r + 1."""
        p, out = self.p, []
        for r in range(p if p > 1 else 0):
            a, b = self.centers[r], self.centers[(r + 1) % p]
            u = (b - a) / np.linalg.norm(b - a)
            gap = 0.62 * box if p > 2 else 0.4 * box
            out.append((a + gap * u, b - gap * u))
        return out

    def remove(self) -> None:
        """Take this picture off its axes (cheaper than clearing the axes)."""
        for a in self._static:
            a.remove()
        self._static = []
        self.title.set_text("")

    def set_step(self, step: int):
        """Show the state after ``step`` steps and the transfers of the next one."""
        step = int(step)
        if not 0 <= step < self.n_frames:
            raise ValueError(f"step must be in [0, {self.n_frames - 1}], got {step}")
        self.step = step
        p = self.p
        counts = self._held[step].reshape(-1)
        self.cells.set_facecolor(_chunk_colors(counts, p))
        for lab, k in zip(self.labels, counts):
            lab.set_text(str(int(k)))
        steps = self.trace.steps
        if step < len(steps):
            transfers = steps[step]
            phase = transfers[0].phase
            for a, tag, t in zip(self.arrows, self.tags, transfers):
                a.set_visible(True)
                a.set_color(PHASE_COLORS[t.phase])
                tag.set_position(self._tag_xy[t.src])
                tag.set_text(f"c{(t.chunk - self.chunk_shift) % p}")
                tag.set_visible(p <= 6)  # beyond six GPUs the tags would cover the GPU names
            # the title counts steps done, as the step slider does (0 = start)
            self.title.set_text(f"step {step} of {len(steps)}; next: {phase}")
        else:
            for a, tag in zip(self.arrows, self.tags):
                a.set_visible(False)
                tag.set_visible(False)
            self.title.set_text("done: every GPU holds the full sum" if p > 1 else "one GPU: nothing to send")
        return self


#: A "GPU r" label's size in data units (11 pt on a ring drawn 300 to 420 px across), with a margin.
_LABEL_W, _LABEL_H = 0.36, 0.14


def _arc_points(start, end, n: int = 24) -> np.ndarray:
    """Points along matplotlib's arc3 curve from ``start`` to ``end`` (a quadratic Bezier)."""
    d = end - start
    ctrl = (start + end) / 2 + _RAD * np.array([d[1], -d[0]])
    t = np.linspace(0, 1, n)[:, None]
    return (1 - t) ** 2 * start + 2 * (1 - t) * t * ctrl + t**2 * end


def _label_place(center, half_w: float, half_h: float, arcs) -> tuple:
    """Where a GPU's name goes: above its box unless an arrow passes there, else below or beside it.

    Returns ``((x, y), ha, va)``: the candidate spot whose box keeps farthest
    from every arrow, preferring above, then below, then the side facing the
    ring's centre (arrows bulge outwards).
    """
    cx, cy = center
    inward = -1.0 if cx > 0 else 1.0
    gap = 0.03
    candidates = [  # (anchor, ha, va, label box centre)
        ((cx, cy + half_h + gap), "center", "bottom", (cx, cy + half_h + gap + _LABEL_H / 2)),
        ((cx, cy - half_h - gap), "center", "top", (cx, cy - half_h - gap - _LABEL_H / 2)),
        ((cx + inward * (half_w + gap), cy), "left" if inward > 0 else "right", "center",
         (cx + inward * (half_w + gap + _LABEL_W / 2), cy)),
    ]
    pts = np.concatenate([_arc_points(a, b) for a, b in arcs]) if arcs else np.zeros((0, 2))

    def clearance(box_center):
        if not len(pts):
            return np.inf
        dx = np.maximum(np.abs(pts[:, 0] - box_center[0]) - _LABEL_W / 2, 0)
        dy = np.maximum(np.abs(pts[:, 1] - box_center[1]) - _LABEL_H / 2, 0)
        return float(np.hypot(dx, dy).min())

    clear = [clearance(c[3]) for c in candidates]
    best = next((i for i, c in enumerate(clear) if c >= 0.06), int(np.argmax(clear)))
    anchor, ha, va, _ = candidates[best]
    return anchor, ha, va


def plot_ring_state(ax, trace: RingTrace, step: int = 0) -> RingPicture:
    """Draw the ring of ``trace`` after ``step`` steps (see :class:`RingPicture`)."""
    return RingPicture(ax, trace).set_step(step)


def animate_ring(trace: RingTrace, *, figsize=(4.2, 4.2), dpi=80, interval=700):
    """A matplotlib animation of every step of ``trace``, for ``to_jshtml``."""
    from matplotlib.animation import FuncAnimation
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=dpi)
    ax = fig.add_subplot()
    pic = RingPicture(ax, trace)
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.93)  # the ring fills the frame, as in the widget
    phone_layout(fig, height=360)  # the ring is square: as tall as a phone's column is wide, and a title

    def frame(i):
        pic.set_step(i)
        return []

    return FuncAnimation(fig, frame, frames=pic.n_frames, interval=interval, blit=False)


def plot_ring_volume(ax, *, p_max: int = 64, n_bytes: float = 1.0, mark=(2, 8, 64)):
    """Per-rank bytes sent, ``2 (p - 1) / p`` of the buffer, against ``p``."""
    ps = np.arange(1, p_max + 1)
    vol = np.array([ring_bytes_per_rank(n_bytes, p) for p in ps])
    (line,) = ax.plot(ps, vol / n_bytes, marker="o", markersize=3, label="ring: 2(p-1)/p")
    ax.axhline(2.0, color="0.4", linestyle="--", linewidth=1, label="limit: 2 (never reached)")
    for p in mark:
        if p <= p_max:
            v = ring_bytes_per_rank(1.0, p)
            ax.annotate(f"p={p}: {v:.3f}", (p, v), textcoords="offset points", xytext=(6, -14), fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs in the ring, p")
    ax.set_ylabel("bytes sent per GPU / buffer size")
    ax.set_ylim(0, 2.2)
    ax.legend(loc="lower right", fontsize=8)
    return line


class StepBars:
    """One step's compute and all-reduce, without and with perfect overlap.

    The x axis is the share of the step *without* overlap, so it never
    rescales: widgets redraw only the bars and labels (fast blitting), and
    the overlap bar's length is directly the step time saved. A time is
    written inside its bar where it fits, else just after the bar's lane in
    the overlap row. The legend sits at the bottom of the figure, under the
    axis label; ``narrow`` (a phone's picture) breaks the title into three
    lines instead of two.
    """

    def __init__(self, ax, *, narrow: bool = False):
        self.ax = ax
        self.narrow = narrow
        ax.set_xlim(0, 1.0)
        ax.set_ylim(-0.5, 1.5)
        ax.set_yticks([1, 0], ["no\noverlap", "perfect\noverlap"])
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.set_xlabel("share of the step without overlap")
        ax.xaxis.set_major_formatter(lambda x, pos: f"{x:.0%}")
        green, red = "#009E73", "#D55E00"
        self.comp0 = ax.barh(1, 0.5, height=0.7, color=green, label="compute")[0]
        self.comm0 = ax.barh(1, 0.5, height=0.7, left=0.5, color=red, label="all-reduce")[0]
        # with overlap the two run side by side: two lanes in one row
        self.comp1 = ax.barh(0.18, 0.5, height=0.34, color=green)[0]
        self.comm1 = ax.barh(-0.18, 0.5, height=0.34, color=red)[0]
        kw = dict(va="center", ha="center", fontsize=MIN_FONT_PT, color="white", fontweight="bold")
        self.labels = [ax.text(0, 1, "", **kw), ax.text(0, 1, "", **kw),
                       ax.text(0, 0, "", ha="left", va="center", fontsize=MIN_FONT_PT)]
        self.title = ax.set_title("", fontsize=MIN_FONT_PT)
        # on the figure's bottom edge: the widget's margins leave it room there, under the x label
        legend_below(ax, drop="figure", ncols=2, frameon=False, fontsize=MIN_FONT_PT, borderaxespad=0.2)
        self.dynamic_artists = [self.comp0, self.comm0, self.comp1, self.comm1, *self.labels, self.title]

    def _fits(self, text: str, share: float, *, bold: bool = True) -> bool:
        """Whether ``text`` fits in a bar ``share`` of the axes wide (estimated, no layout pass)."""
        fig = self.ax.figure
        axes_pt = self.ax.get_position().width * fig.get_figwidth() * 72
        text_pt = len(text) * MIN_FONT_PT * (0.68 if bold else 0.6) + 6
        return share * axes_pt >= text_pt

    def _place(self, label, text, *, inside_x, share, lane_y, color):
        """Write ``text`` inside its no-overlap bar, or after its lane in the overlap row."""
        if self._fits(text, share):
            label.set_position((inside_x, 1))
            label.set_ha("center")
            label.set_color("white")
            label.set_fontweight("bold")
        else:
            label.set_position((share + 0.01, lane_y))
            label.set_ha("left")
            label.set_color(color)
            label.set_fontweight("normal")
        label.set_text(text)

    def update(self, step):
        from ..fmt import fmt_seconds

        comp, comm = step.compute_time, step.comm_time
        total = comp + comm
        fc, fm = (comp / total, comm / total) if total > 0 else (1.0, 0.0)
        self.comp0.set_width(fc)
        self.comm0.set_x(fc)
        self.comm0.set_width(fm)
        self.comp1.set_width(fc)
        self.comm1.set_width(fm)
        self._place(self.labels[0], str(fmt_seconds(comp)), inside_x=fc / 2, share=fc, lane_y=0.18,
                    color="#1b7a1b")
        self._place(self.labels[1], str(fmt_seconds(comm)), inside_x=fc + fm / 2, share=fm, lane_y=-0.18,
                    color="#D55E00")
        longer = max(fc, fm)
        step_text = f"step {fmt_seconds(max(comp, comm))}"
        self.labels[2].set_position((longer + 0.02, 0))
        # only where the row has room for it, and no lane's time is written there already
        no_room = not self._fits(step_text, 1 - longer - 0.02, bold=False)
        moved = any(lab.get_ha() == "left" for lab in self.labels[:2])
        self.labels[2].set_text("" if no_room or moved else step_text)
        verdict = "communication-bound" if step.communication_bound else "compute-bound"
        no, yes = f"{step.utilization_no_overlap:.0%}", f"{step.utilization_overlap:.0%}"
        sep = ",\n" if self.narrow else ", "
        # the GPU count leads: past a few hundred GPUs the ring's 2(p-1)/p barely moves the bars (chapter 1's
        # point), and a reader who moves p must still see which p the picture is for
        self.title.set_text(f"{step.p:,} GPUs: {verdict}\nGPU busy {no} without overlap{sep}{yes} with")
        self.title.set_color("#D55E00" if step.communication_bound else "#009E73")
        return self


def plot_step_bars(ax, step) -> StepBars:
    """Draw one :class:`distlib.cluster.StepTime` as compute / all-reduce bars."""
    return StepBars(ax).update(step)


def plot_step_vs_p(ax, steps) -> list:
    """Compute and all-reduce time per step against the number of GPUs.

    ``steps`` is a sequence of :class:`distlib.cluster.StepTime` with the same
    model and tokens per GPU and growing ``p`` (weak scaling).
    """
    ps = [s.p for s in steps]
    comp = np.array([s.compute_time for s in steps])
    comm = np.array([s.comm_time for s in steps])
    lines = ax.plot(ps, comp, "o-", color="#009E73", label="compute")
    lines += ax.plot(ps, comm, "s-", color="#D55E00", label="ring all-reduce")
    ax.fill_between(ps, 0, max(comp.max(), comm.max()) * 1.1, where=comm > comp, color="#D55E00",
                    alpha=0.08, label="communication-bound")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs, p (same tokens per GPU)")
    ax.set_ylabel("seconds per step")
    ax.set_ylim(0, max(comp.max(), comm.max()) * 1.1)
    # under the axes: inside, it would cover one of the curves, wherever they cross
    _legend_below(ax, ncols=3)
    phone_layout(ax.figure, height=400, adjust=_legend_one_column)
    return lines


def _legend_below(ax, *, ncols: int):
    """The legend under the axes, below the axis label: inside, it would cover a curve."""
    return legend_below(ax, ncols=ncols, frameon=False)  # the drop computed: ticks and label, 0.5 in at 10 pt


def _legend_one_column(fig):
    """On a phone, a legend under the axes takes one column (two do not fit 328 px), where it was.

    (Where it was: the phone's copy has its text raised to 11 pt already, and a drop computed
    again would move the legend 2.5 pt lower than the one drawn for the desktop.)
    """
    for ax in fig.axes:
        if ax.get_legend() is None:
            continue
        if recorded_below(ax) is not None:
            legend_below_again(ax, ncols=1)
        else:
            _legend_below(ax, ncols=1)

