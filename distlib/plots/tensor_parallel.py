"""Drawing tensor parallelism's costs against T (chapter 11): activations above, communication against compute below.

Two pictures, each on an axes it is given, over every tensor-parallel degree
T on a log axis; their ``update`` moves the same artists to a new result
without touching the axes, so chapter 11's widget redraws by blitting (see
:mod:`distlib.widgets._base`). Both read
:class:`distlib.planner.tensor_parallel.TensorParallelView` results; the
fixed parts (the axes' ranges) are set from the whole grid of them.

* :class:`ActivationPicture`: the activations one layer keeps on one GPU, one
  colour per recomputation choice, dashed without sequence parallelism and
  solid with it; the chosen curve thick, its value at the chosen T marked
  and written.
* :class:`CommComputePicture`: the layer's matrix-product compute on one GPU
  (black) and its tensor-parallel communication inside a node and across
  nodes, both in seconds per micro batch; the chosen placement thick, both
  values at the chosen T marked and written beside their dots.
"""

from __future__ import annotations

import math

from matplotlib.lines import Line2D

from ..activations import RECOMPUTE_MODES
from ..fmt import fmt_bytes, fmt_rate, fmt_seconds
from ..planner.tensor_parallel import PLACEMENTS

__all__ = ["RECOMPUTE_COLORS", "PLACEMENT_COLORS", "ActivationPicture", "CommComputePicture", "plot_tp_activations",
           "plot_tp_comm_compute"]

RECOMPUTE_COLORS = {"none": "#D55E00", "selective": "#0072B2", "full": "#009E73"}
PLACEMENT_COLORS = {"nvlink": "#0072B2", "nic": "#D55E00"}
_COMPUTE = "#222222"
_BOX = {"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1}


def _log_limits(lo: float, hi: float, *, headroom: float) -> tuple:
    """A log axis from ``lo`` whose top leaves the fraction ``headroom`` of its height above ``hi`` (a legend's room,
    the same on every layer shape).

    >>> _log_limits(1.0, 100.0, headroom=0.5)
    (1.0, 10000.0)
    """
    a, b = math.log10(lo), math.log10(hi)
    return lo, 10 ** ((b - headroom * a) / (1 - headroom))


def _t_axes(ax, degrees, lo: float, hi: float, *, headroom: float, fmt) -> None:
    """Log axes over every T: x the degrees, y from ``lo`` to ``hi`` plus ``headroom``, a tick per decade (``fmt``)."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(0.8, degrees[-1] * 1.25)
    ax.set_ylim(*_log_limits(lo, hi, headroom=headroom))
    ax.set_xticks(degrees, [str(t) for t in degrees])
    ax.minorticks_off()
    y0, y1 = ax.get_ylim()
    decades = [10.0**k for k in range(math.ceil(math.log10(y0)), math.floor(math.log10(y1)) + 1)]
    ax.set_yticks(decades, [fmt(y) for y in decades])
    ax.set_xlabel("tensor-parallel T")


class ActivationPicture:
    """Activations one layer keeps per GPU against T: a curve per recomputation choice and sequence parallelism.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    grid : dict
        ``(T, sequence_parallel, recompute) -> TensorParallelView`` for every T of ``degrees``, both
        sequence-parallel settings and every recomputation choice: the curves, and the axis's range.
    degrees : list of int
        The T axis.
    narrow : bool
        Drawn for a phone: shorter labels, a titled legend.
    """

    def __init__(self, ax, grid: dict, degrees, *, narrow: bool = False):
        self.ax = ax
        self.degrees = list(degrees)
        acts = [v.activation_bytes for v in grid.values()]
        # room under the lowest curve for its label, and over the highest for the legend
        _t_axes(ax, self.degrees, min(acts) / 3.5, max(acts), headroom=0.33, fmt=fmt_bytes)
        ax.set_ylabel("per layer, per GPU" if narrow else "kept per layer, per GPU")
        ax.set_title("activation memory per layer", fontsize=11)
        self.lines = {}
        for m in RECOMPUTE_MODES:
            for sp in (False, True):
                ys = [grid[t, sp, m].activation_bytes for t in self.degrees]
                (self.lines[m, sp],) = ax.plot(self.degrees, ys, color=RECOMPUTE_COLORS[m], linewidth=1.2,
                                               linestyle="-" if sp else "--")
        (self.marker,) = ax.plot([], [], "o", markersize=8, markeredgecolor="black")
        self.text = ax.text(0, 0, "", fontsize=11, ha="left", va="bottom", bbox=_BOX)
        handles = [Line2D([], [], color=RECOMPUTE_COLORS[m], linewidth=2, label=m if narrow else f"recompute {m}")
                   for m in RECOMPUTE_MODES]
        handles += [Line2D([], [], color="#555555", linestyle="--", linewidth=1.2, label="SP off"),
                    Line2D([], [], color="#555555", linestyle="-", linewidth=1.2, label="SP on")]
        self.legend = ax.legend(handles=handles, fontsize=11, ncol=2, loc="upper right", frameon=False,
                                title="recomputation" if narrow else None, title_fontsize=11,
                                handlelength=1.6, columnspacing=0.8, handletextpad=0.4, borderaxespad=0.2)

    @property
    def dynamic_artists(self) -> list:
        """What :meth:`update` changes (to mark as animated for blitting)."""
        return [*self.lines.values(), self.marker, self.text]

    def update(self, r) -> "ActivationPicture":
        """Thicken ``r``'s curve and mark its activations at its T."""
        for (m, sp), line in self.lines.items():
            chosen = m == r.recompute and sp == r.sequence_parallel
            line.set_linewidth(3.4 if chosen else 1.2)
            line.set_alpha(1.0 if chosen else 0.5)
            line.set_zorder(3 if chosen else 2)
        t = r.tp
        self.marker.set_data([t], [r.activation_bytes])
        self.marker.set_color(RECOMPUTE_COLORS[r.recompute])
        self.marker.set_markeredgecolor("black")
        self.text.set_text(fmt_bytes(r.activation_bytes))
        right = t <= 4
        # under the dot (the curves fall to the right: over it is the curve), room left for it at the bottom
        self.text.set_position((t * (1.2 if right else 1 / 1.2), r.activation_bytes / 1.35))
        self.text.set_ha("left" if right else "right")
        self.text.set_va("top")
        return self


class CommComputePicture:
    """A layer's compute and its tensor-parallel communication per micro batch against T, in seconds.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    grid : dict
        As :class:`ActivationPicture`'s: every view, for the axis's range.
    degrees : list of int
        The T axis.
    link : str
        The scale-up link's short name for the legend ("NVLink").
    link_bandwidth, nic_bandwidth : float
        Bytes/s per direction of the scale-up link and of one NIC, for the legend.
    efficiency : float
        The share of the dense peak the compute runs at, for the legend.
    narrow : bool
        Drawn for a phone: shorter titles, labels over or under the middle dot.
    """

    def __init__(self, ax, grid: dict, degrees, *, link: str, link_bandwidth: float, nic_bandwidth: float,
                 efficiency: float, narrow: bool = False):
        self.ax = ax
        self.degrees = list(degrees)
        self.narrow = narrow
        times = [v.compute_seconds for v in grid.values()]
        times += [v.comm[p] for v in grid.values() for p in PLACEMENTS if v.tp > 1]
        _t_axes(ax, self.degrees, min(times) / 2.5, max(times), headroom=0.36, fmt=fmt_seconds)
        ax.set_ylabel("per layer" if narrow else "per layer, per micro batch")
        ax.set_title("TP comm against compute" if narrow else "TP communication against compute", fontsize=11)
        self.comm_lines = {p: ax.plot([], [], color=PLACEMENT_COLORS[p], linewidth=1.2)[0] for p in PLACEMENTS}
        (self.compute_line,) = ax.plot([], [], color=_COMPUTE, linewidth=2.4)
        (self.comm_marker,) = ax.plot([], [], "o", markersize=8, markeredgecolor="black")
        (self.compute_marker,) = ax.plot([], [], "o", markersize=8, color=_COMPUTE, markeredgecolor="black")
        self.comm_text = ax.text(0, 0, "", fontsize=11, ha="left", va="center", bbox=_BOX)
        self.compute_text = ax.text(0, 0, "", fontsize=11, ha="left", va="center", bbox=_BOX)
        # short, so that the legend stays clear of the labels at T = 1 (the title says it is communication)
        handles = [Line2D([], [], color=_COMPUTE, linewidth=2.4, label=f"compute, {efficiency:.0%} of peak"),
                   Line2D([], [], color=PLACEMENT_COLORS["nvlink"], linewidth=2,
                          label=f"{link}, {fmt_rate(link_bandwidth)}"),
                   Line2D([], [], color=PLACEMENT_COLORS["nic"], linewidth=2,
                          label=f"NIC, {fmt_rate(nic_bandwidth)}")]
        self.legend = ax.legend(handles=handles, fontsize=11, loc="upper right", frameon=False, handlelength=1.6,
                                handletextpad=0.4, borderaxespad=0.2)

    @property
    def dynamic_artists(self) -> list:
        """What :meth:`update` changes (to mark as animated for blitting)."""
        return [*self.comm_lines.values(), self.compute_line, self.comm_marker, self.compute_marker,
                self.comm_text, self.compute_text]

    def update(self, r, row: dict) -> "CommComputePicture":
        """Draw ``row`` (T -> the view of ``r``'s choices at that T) and mark ``r``'s compute and communication."""
        self.compute_line.set_data(self.degrees, [row[d].compute_seconds for d in self.degrees])
        many = self.degrees[1:]
        for p, line in self.comm_lines.items():
            line.set_data(many, [row[d].comm[p] for d in many])
            chosen = p == r.placement
            line.set_linewidth(3.0 if chosen else 1.2)
            line.set_alpha(1.0 if chosen else 0.55)
            line.set_zorder(3 if chosen else 2)
        t = r.tp
        self.compute_marker.set_data([t], [r.compute_seconds])
        self.compute_text.set_text(f"compute {fmt_seconds(r.compute_seconds)}")
        comm = r.comm_seconds
        if t == 1:
            self.comm_marker.set_data([], [])
            self.comm_text.set_text("T = 1: no TP traffic")
        else:
            self.comm_marker.set_data([t], [comm])
            self.comm_marker.set_color(PLACEMENT_COLORS[r.placement])
            self.comm_marker.set_markeredgecolor("black")
            self.comm_text.set_text(f"comm {fmt_seconds(comm)}")
        self.comm_text.set_color(PLACEMENT_COLORS[r.placement])
        self._place_labels(r, row)
        return self

    def _place_labels(self, r, row: dict) -> None:
        """The labels beside their dots on the side with room (the curves fall or rise away from it): compute
        above its dot on the right of it, below on the left; comm the other way; never overlapping."""
        t, comm = r.tp, r.comm_seconds
        right = t <= 4
        x = t * (1.25 if right else 1 / 1.2)
        ha = "left" if right else "right"
        if self.narrow and t == 4:  # a phone has no room beside the dot in the middle: over or under it
            x, ha = t, "center"
        k = 1.6  # a label's centre this factor from its dot (half a text line on the log axis, and the dot)
        # (at T = 1 beside the dot, just above the falling line: above it is the legend's)
        y_comp = r.compute_seconds * (1.2 if t == 1 else k if right else 1 / k)
        if t == 1:  # the note between the two comm curves, clear of both
            y_comm = (row[4].comm["nvlink"] * row[4].comm["nic"]) ** 0.5
        else:
            y_comm = comm * (1 / k if right else k)
        gap = 1.9  # the two labels' centres at least this factor apart
        crossed = (y_comp >= y_comm) != (r.compute_seconds >= comm)  # the higher dot's label must stay above
        if t > 1 and (crossed or max(y_comp, y_comm) / min(y_comp, y_comm) < gap):
            mid = (r.compute_seconds * comm) ** 0.5
            hi, lo = mid * gap**0.5, mid / gap**0.5
            y_comp, y_comm = (hi, lo) if r.compute_seconds >= comm else (lo, hi)
        for text, y in ((self.compute_text, y_comp), (self.comm_text, y_comm)):
            text.set_position((x, y))
            text.set_ha(ha)


def plot_tp_activations(ax, result, grid: dict, degrees, *, narrow: bool = False) -> ActivationPicture:
    """Draw the activations per layer against T on ``ax``, ``result``'s curve thick and its value marked.

    Returns
    -------
    ActivationPicture
        Its ``lines`` ((recompute, sequence_parallel) -> Line2D), ``marker``, ``text`` and ``legend``.
    """
    return ActivationPicture(ax, grid, degrees, narrow=narrow).update(result)


def plot_tp_comm_compute(ax, result, row: dict, grid: dict, degrees, *, link: str, link_bandwidth: float,
                         nic_bandwidth: float, efficiency: float, narrow: bool = False) -> CommComputePicture:
    """Draw compute and communication against T on ``ax`` (``row``: T -> the view of ``result``'s choices).

    Returns
    -------
    CommComputePicture
        Its ``compute_line``, ``comm_lines`` (placement -> Line2D), the markers, their texts and ``legend``.
    """
    picture = CommComputePicture(ax, grid, degrees, link=link, link_bandwidth=link_bandwidth,
                                 nic_bandwidth=nic_bandwidth, efficiency=efficiency, narrow=narrow)
    return picture.update(result, row)
