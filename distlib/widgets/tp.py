"""Chapter 11's tensor-parallel explorer: T, sequence parallelism, recomputation, and where the T ranks sit.

The picture has two panels, both against the tensor-parallel degree T.

Above, the **activations one layer keeps** for its backward pass on one GPU,
:func:`distlib.activation_bytes_per_layer` (Korthikanti et al. 2022, Table 2,
16-bit activations): one colour per recomputation choice, dashed without
sequence parallelism and solid with it; the chosen curve thick, its value at
the chosen T marked and written.

Below, **tensor parallelism's communication per layer per micro batch**
against the layer's **matrix-product compute** on one GPU, both in seconds,
as :mod:`distlib.planner.tensor_parallel` prices them (its docstring derives
both): Megatron's four all-reduces of ``2 s b h`` bytes per layer per micro
batch (six with full recomputation; with sequence parallelism each a
reduce-scatter and an all-gather, the same time) on chapter 5's alpha-beta
ring, inside a node over the accelerator's scale-up link or across nodes
through one NDR NIC per GPU; and the layer's ``3 F`` matrix-product FLOP
(plus what recomputation runs again) over ``T``, at ``matmul_efficiency``
(default 50 %) of the dense BF16 peak.

Compute falls as ``1 / T``; the communication of each GPU grows towards
``2 x 2 s b h`` bytes per all-reduce whatever T. Over NVLink it stays well
under the compute; over one NIC per GPU it overtakes it by T = 8 for
GPT-3's layer: that is why tensor parallelism stays inside a node.

``TensorParallelWidget().result`` is the current :class:`TensorParallelView`.
"""

from __future__ import annotations

import html
import math

import ipywidgets as w
from matplotlib.lines import Line2D

from .._check import check_bool, check_choice, check_int, check_int_choice, check_real
from ..activations import RECOMPUTE_MODES, activation_bytes_per_layer
from ..fmt import fmt_bytes, fmt_flops, fmt_rate, fmt_seconds
from ..hardware import accelerator as _accelerator
from ..planner.tensor_parallel import (  # noqa: F401 - chapter 11 calls the formulas through this module
    ALPHA,
    GPT3_LAYER,
    GPUS_PER_NODE,
    PLACEMENTS,
    TensorParallelView,
    layer_matmul_flops,
    tp_collectives_per_layer,
    tp_comm_seconds,
    tp_view,
)
from ..topology.graphs import NDR_NIC_BANDWIDTH
from ._base import FigureImage, FigureWidget, StaticAxis, accelerator_name, control_layout, label_style

__all__ = ["TensorParallelWidget", "TensorParallelView", "TP_DEGREES", "PLACEMENTS", "ALPHA", "GPT3_LAYER",
           "GPUS_PER_NODE", "layer_matmul_flops", "tp_collectives_per_layer", "tp_comm_seconds", "tp_view"]

#: Tensor-parallel degrees offered.
TP_DEGREES = [1, 2, 4, 8, 16]
PLACEMENT_LABELS = {"nvlink": "inside a node (NVLink)", "nic": "across nodes (NIC)"}
RECOMPUTE_LABELS = {"none": "none", "selective": "selective", "full": "full"}
RECOMPUTE_COLORS = {"none": "#D55E00", "selective": "#0072B2", "full": "#009E73"}
PLACEMENT_COLORS = {"nvlink": "#0072B2", "nic": "#D55E00"}
_COMPUTE = "#222222"


def _log_limits(lo: float, hi: float, *, headroom: float) -> tuple:
    """A log axis from ``lo`` whose top leaves the fraction ``headroom`` of its height above ``hi`` (a legend's room,
    the same on every layer shape).

    >>> _log_limits(1.0, 100.0, headroom=0.5)
    (1.0, 10000.0)
    """
    a, b = math.log10(lo), math.log10(hi)
    return lo, 10 ** ((b - headroom * a) / (1 - headroom))


def _t_axes(ax, lo: float, hi: float, *, headroom: float, fmt) -> None:
    """Log axes over every T: x the degrees, y from ``lo`` to ``hi`` plus ``headroom``, a tick per decade (``fmt``)."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(0.8, TP_DEGREES[-1] * 1.25)
    ax.set_ylim(*_log_limits(lo, hi, headroom=headroom))
    ax.set_xticks(TP_DEGREES, [str(t) for t in TP_DEGREES])
    ax.minorticks_off()
    y0, y1 = ax.get_ylim()
    decades = [10.0**k for k in range(math.ceil(math.log10(y0)), math.floor(math.log10(y1)) + 1)]
    ax.set_yticks(decades, [fmt(y) for y in decades])
    ax.set_xlabel("tensor-parallel T")


class TensorParallelWidget(FigureWidget):
    """Buttons for T, sequence parallelism, recomputation and placement; activations above, comm vs compute below.

    Parameters
    ----------
    tp : {1, 2, 4, 8, 16}
        The tensor-parallel degree shown first.
    sequence_parallel : bool
        Sequence parallelism on or off at first.
    recompute : {"none", "selective", "full"}
    placement : {"nvlink", "nic"}
        The T ranks inside one node (the accelerator's scale-up link) or
        across nodes (one InfiniBand NDR NIC per GPU).
    hidden, heads, seq, micro_batch : int
        The layer's shape; default GPT-3 175B's (Brown et al. 2020), one
        sequence of 2048 tokens per micro batch.
    accelerator : str
        A name from the hardware table (peak FLOP/s and link bandwidth).
    matmul_efficiency : float
        The fraction of the dense BF16 peak the matrix products reach, in (0, 1].

    Attributes
    ----------
    result : TensorParallelView
        The numbers the picture and the text show now.
    """

    def __init__(self, *, tp=8, sequence_parallel=False, recompute="none", placement="nvlink",
                 hidden=GPT3_LAYER["hidden"], heads=GPT3_LAYER["heads"], seq=GPT3_LAYER["seq"],
                 micro_batch=GPT3_LAYER["micro_batch"], accelerator="H100", matmul_efficiency=0.5):
        tp = check_int_choice("tp", tp, TP_DEGREES)
        sequence_parallel = check_bool("sequence_parallel", sequence_parallel)
        recompute = check_choice("recompute", recompute, RECOMPUTE_MODES)
        placement = check_choice("placement", placement, PLACEMENTS)
        self.hidden = check_int("hidden", hidden, minimum=1, maximum=10**6)
        self.heads = check_int("heads", heads, minimum=1, maximum=self.hidden)
        self.seq = check_int("seq", seq, minimum=1, maximum=10**7)
        self.micro_batch = check_int("micro_batch", micro_batch, minimum=1, maximum=10**4)
        self.accelerator = accelerator_name(accelerator)
        self.matmul_efficiency = check_real("matmul_efficiency", matmul_efficiency, minimum=0, maximum=1,
                                            strict_min=True)
        style = label_style()
        self.tp_dropdown = w.Dropdown(options=TP_DEGREES, value=tp, description="tensor-parallel T", style=style,
                                      layout=control_layout())
        self.sp_toggle = w.ToggleButtons(options=[("off", False), ("on", True)], value=sequence_parallel,
                                         description="sequence parallel", style=style)
        self.recompute_buttons = w.ToggleButtons(options=[(RECOMPUTE_LABELS[m], m) for m in RECOMPUTE_MODES],
                                                 value=recompute, description="recomputation", style=style)
        self.placement_buttons = w.ToggleButtons(options=[(PLACEMENT_LABELS[p], p) for p in PLACEMENTS],
                                                 value=placement, description="T ranks sit", style=style)
        self.controls = [self.tp_dropdown, self.sp_toggle, self.recompute_buttons, self.placement_buttons]

        self.fig = FigureImage(width=460, height=660, phone_height=720)
        figure = self.fig.figure
        figure.delaxes(self.fig.ax)
        self.mem_ax, self.time_ax = figure.subplots(2, 1, gridspec_kw={"height_ratios": [1, 1]})
        self.fig.ax = self.mem_ax
        self._draw_axes(self.fig.narrow)
        figure.tight_layout(pad=0.6, h_pad=1.2)
        self.fig.set_animated([*self.mem_lines.values(), self.mem_marker, self.mem_text,
                               *self.comm_lines.values(), self.compute_line, self.comm_marker, self.compute_marker,
                               self.comm_text, self.compute_text])
        self.summary = w.HTML()
        self.result: TensorParallelView | None = None
        self._finish()

    def _view(self, tp, sp, recompute, placement) -> TensorParallelView:
        return tp_view(tp, sp, recompute, placement, hidden=self.hidden, heads=self.heads, seq=self.seq,
                       micro_batch=self.micro_batch, accelerator=self.accelerator,
                       matmul_efficiency=self.matmul_efficiency)

    # ---- the fixed parts of the picture -------------------------------------
    def _draw_axes(self, narrow: bool) -> None:

        shape = (self.seq, self.micro_batch, self.hidden, self.heads)
        views = {(t, sp, m): self._view(t, sp, m, "nvlink")
                 for t in TP_DEGREES for sp in (False, True) for m in RECOMPUTE_MODES}
        spec = _accelerator(self.accelerator)

        ax = self.mem_ax
        acts = [v.activation_bytes for v in views.values()]
        # room under the lowest curve for its label, and over the highest for the legend
        _t_axes(ax, min(acts) / 3.5, max(acts), headroom=0.33, fmt=fmt_bytes)
        ax.set_ylabel("per layer, per GPU" if narrow else "kept per layer, per GPU")
        ax.set_title("activation memory per layer", fontsize=11)
        self.mem_lines = {}
        for m in RECOMPUTE_MODES:
            for sp in (False, True):
                ys = [activation_bytes_per_layer(*shape, tp=t, sequence_parallel=sp, recompute=m) for t in TP_DEGREES]
                (self.mem_lines[m, sp],) = ax.plot(TP_DEGREES, ys, color=RECOMPUTE_COLORS[m], linewidth=1.2,
                                                   linestyle="-" if sp else "--")
        (self.mem_marker,) = ax.plot([], [], "o", markersize=8, markeredgecolor="black")
        self.mem_text = ax.text(0, 0, "", fontsize=11, ha="left", va="bottom",
                                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1})
        handles = [Line2D([], [], color=RECOMPUTE_COLORS[m], linewidth=2, label=m if narrow else f"recompute {m}")
                   for m in RECOMPUTE_MODES]
        handles += [Line2D([], [], color="#555555", linestyle="--", linewidth=1.2, label="SP off"),
                    Line2D([], [], color="#555555", linestyle="-", linewidth=1.2, label="SP on")]
        ax.legend(handles=handles, fontsize=11, ncol=2, loc="upper right", frameon=False,
                  title="recomputation" if narrow else None, title_fontsize=11,
                  handlelength=1.6, columnspacing=0.8, handletextpad=0.4, borderaxespad=0.2)

        cx = self.time_ax
        times = [v.compute_seconds for v in views.values()]
        times += [v.comm[p] for v in views.values() for p in PLACEMENTS if v.tp > 1]
        _t_axes(cx, min(times) / 2.5, max(times), headroom=0.36, fmt=fmt_seconds)
        cx.set_ylabel("per layer" if narrow else "per layer, per micro batch")
        cx.set_title("TP comm against compute" if narrow else "TP communication against compute", fontsize=11)
        link = spec.link_name.split()[0] if spec.link_name else "scale-up link"
        self.comm_lines = {p: cx.plot([], [], color=PLACEMENT_COLORS[p], linewidth=1.2)[0] for p in PLACEMENTS}
        (self.compute_line,) = cx.plot([], [], color=_COMPUTE, linewidth=2.4)
        (self.comm_marker,) = cx.plot([], [], "o", markersize=8, markeredgecolor="black")
        (self.compute_marker,) = cx.plot([], [], "o", markersize=8, color=_COMPUTE, markeredgecolor="black")
        box = {"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1}
        self.comm_text = cx.text(0, 0, "", fontsize=11, ha="left", va="center", bbox=box)
        self.compute_text = cx.text(0, 0, "", fontsize=11, ha="left", va="center", bbox=box)
        eff = f"{self.matmul_efficiency:.0%}"
        # short, so that the legend stays clear of the labels at T = 1 (the title says it is communication)
        handles = [Line2D([], [], color=_COMPUTE, linewidth=2.4, label=f"compute, {eff} of peak"),
                   Line2D([], [], color=PLACEMENT_COLORS["nvlink"], linewidth=2,
                          label=f"{link}, {fmt_rate(spec.link_bandwidth)}"),
                   Line2D([], [], color=PLACEMENT_COLORS["nic"], linewidth=2,
                          label=f"NIC, {fmt_rate(NDR_NIC_BANDWIDTH)}")]
        cx.legend(handles=handles, fontsize=11, loc="upper right", frameon=False, handlelength=1.6,
                  handletextpad=0.4, borderaxespad=0.2)
        self.fig.enforce_min_font()

    def static_axes(self):
        # every value of every control: 5 x 2 x 3 x 2 = 60 frames
        return [StaticAxis("tp_dropdown", TP_DEGREES),
                StaticAxis("sp_toggle", [False, True]),
                StaticAxis("recompute_buttons", list(RECOMPUTE_MODES)),
                StaticAxis("placement_buttons", list(PLACEMENTS))]

    def compute(self) -> TensorParallelView:
        return self._view(self.tp_dropdown.value, self.sp_toggle.value, self.recompute_buttons.value,
                          self.placement_buttons.value)

    def draw(self, r: TensorParallelView) -> None:
        for (m, sp), line in self.mem_lines.items():
            chosen = m == r.recompute and sp == r.sequence_parallel
            line.set_linewidth(3.4 if chosen else 1.2)
            line.set_alpha(1.0 if chosen else 0.5)
            line.set_zorder(3 if chosen else 2)
        t = r.tp
        self.mem_marker.set_data([t], [r.activation_bytes])
        self.mem_marker.set_color(RECOMPUTE_COLORS[r.recompute])
        self.mem_marker.set_markeredgecolor("black")
        self.mem_text.set_text(fmt_bytes(r.activation_bytes))
        right = t <= 4
        # under the dot (the curves fall to the right: over it is the curve), room left for it at the bottom
        self.mem_text.set_position((t * (1.2 if right else 1 / 1.2), r.activation_bytes / 1.35))
        self.mem_text.set_ha("left" if right else "right")
        self.mem_text.set_va("top")

        views = {d: self._view(d, r.sequence_parallel, r.recompute, r.placement) for d in TP_DEGREES}
        self.compute_line.set_data(TP_DEGREES, [views[d].compute_seconds for d in TP_DEGREES])
        many = TP_DEGREES[1:]
        for p, line in self.comm_lines.items():
            line.set_data(many, [views[d].comm[p] for d in many])
            chosen = p == r.placement
            line.set_linewidth(3.0 if chosen else 1.2)
            line.set_alpha(1.0 if chosen else 0.55)
            line.set_zorder(3 if chosen else 2)
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
        # the labels beside their dots on the side with room (the curves fall or rise away from it):
        # compute above its dot on the right of it, below on the left; comm the other way; never overlapping
        right = t <= 4
        x = t * (1.25 if right else 1 / 1.2)
        ha = "left" if right else "right"
        if self.fig.narrow and t == 4:  # a phone has no room beside the dot in the middle: over or under it
            x, ha = t, "center"
        k = 1.6  # a label's centre this factor from its dot (half a text line on the log axis, and the dot)
        # (at T = 1 beside the dot, just above the falling line: above it is the legend's)
        y_comp = r.compute_seconds * (1.2 if t == 1 else k if right else 1 / k)
        if t == 1:  # the note between the two comm curves, clear of both
            y_comm = (views[4].comm["nvlink"] * views[4].comm["nic"]) ** 0.5
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
        self.fig.render()

    def describe(self, r: TensorParallelView) -> None:
        self.result = r
        sp = "sequence parallel" if r.sequence_parallel else "no sequence parallelism"
        rec = {"none": "no recomputation", "selective": "selective recomputation",
               "full": "full recomputation"}[r.recompute]
        chip = html.escape(r.accelerator)
        where = ("inside a node, over " + html.escape(_accelerator(r.accelerator).link_name or "its scale-up link")
                 if r.placement == "nvlink" else "across nodes, through one NDR NIC per GPU")
        head = (f"<b>T = {r.tp}</b>, {sp}, {rec}: each GPU keeps {fmt_bytes(r.activation_bytes)} of activations "
                f"per layer for its backward pass.")
        compute = (f"{fmt_seconds(r.compute_seconds)} of matrix products per layer per micro batch "
                   f"({r.flops / 1e12:.3g} TFLOP at {fmt_flops(r.flops_rate)}, {self.matmul_efficiency:.0%} of "
                   f"{chip}'s peak)")
        if r.tp == 1:
            comm = f"One GPU holds the whole layer: no tensor-parallel communication, and {compute}."
        else:
            kind = "reduce-scatter + all-gather pairs" if r.sequence_parallel else "all-reduces"
            other = "nic" if r.placement == "nvlink" else "nvlink"
            other_words = "Through a NIC" if other == "nic" else "Over NVLink"
            verdict = ("<b style='color:#D55E00'>more than the compute</b>" if r.ratio > 1
                       else "<b style='color:#009E73'>less than the compute</b>")
            comm = (f"{r.collectives} {kind} of {fmt_bytes(r.message_bytes)} per layer per micro batch "
                    f"take {fmt_seconds(r.comm_seconds)} {where} ({fmt_rate(r.bandwidth[r.placement])} per "
                    f"direction), against {compute}: communication is {r.ratio:.2g}x the compute, {verdict}, "
                    f"if none of it is hidden. {other_words} it would be "
                    f"{fmt_seconds(r.comm[other])}, {r.comm[other] / r.compute_seconds:.2g}x.")
            if r.placement == "nvlink" and r.tp > GPUS_PER_NODE:
                comm += (f" A {GPUS_PER_NODE}-GPU node cannot hold T = {r.tp}: this needs a larger NVLink "
                         f"domain (an NVL72 rack).")
        self.summary.value = f"<div style='font-size:0.9em'>{head}<br>{comm}</div>"
