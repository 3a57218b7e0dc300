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

Both panels are drawn by :mod:`distlib.plots.tensor_parallel`.

``TensorParallelWidget().result`` is the current :class:`TensorParallelView`.
"""

from __future__ import annotations

import html

import ipywidgets as w

from .._check import check_bool, check_choice, check_int, check_int_choice, check_real
from ..activations import RECOMPUTE_MODES
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
from ..plots.tensor_parallel import ActivationPicture, CommComputePicture
from ..topology.graphs import NDR_NIC_BANDWIDTH
from ._base import FigureImage, FigureWidget, StaticAxis, accelerator_name, control_layout, label_style

__all__ = ["TensorParallelWidget", "TensorParallelView", "TP_DEGREES", "PLACEMENTS", "ALPHA", "GPT3_LAYER",
           "GPUS_PER_NODE", "layer_matmul_flops", "tp_collectives_per_layer", "tp_comm_seconds", "tp_view"]

#: Tensor-parallel degrees offered.
TP_DEGREES = [1, 2, 4, 8, 16]
PLACEMENT_LABELS = {"nvlink": "inside a node (NVLink)", "nic": "across nodes (NIC)"}
RECOMPUTE_LABELS = {"none": "none", "selective": "selective", "full": "full"}


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

    #: the chapter's widget as the static-frame tests build it (its constructor's keywords)
    EXAMPLE = dict(tp=8)
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (
        ("three tensor-parallel ranks", dict(tp=3), ValueError, "1, 2, 4, 8, 16"),
        ("unknown recomputation", dict(recompute="some"), ValueError, "'none', 'selective', 'full'"),
        ("unknown placement", dict(placement="pcie"), ValueError, "'nvlink', 'nic'"),
    )

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
        self.fig.set_animated(self.memory.dynamic_artists + self.times.dynamic_artists)
        self.summary = w.HTML()
        self.result: TensorParallelView | None = None
        self._finish()

    def _view(self, tp, sp, recompute, placement) -> TensorParallelView:
        return tp_view(tp, sp, recompute, placement, hidden=self.hidden, heads=self.heads, seq=self.seq,
                       micro_batch=self.micro_batch, accelerator=self.accelerator,
                       matmul_efficiency=self.matmul_efficiency)

    # ---- the fixed parts of the picture -------------------------------------
    def _draw_axes(self, narrow: bool) -> None:
        grid = {(t, sp, m): self._view(t, sp, m, "nvlink")
                for t in TP_DEGREES for sp in (False, True) for m in RECOMPUTE_MODES}
        spec = _accelerator(self.accelerator)
        self.memory = ActivationPicture(self.mem_ax, grid, TP_DEGREES, narrow=narrow)
        link = spec.link_name.split()[0] if spec.link_name else "scale-up link"
        self.times = CommComputePicture(self.time_ax, grid, TP_DEGREES, link=link, link_bandwidth=spec.link_bandwidth,
                                        nic_bandwidth=NDR_NIC_BANDWIDTH, efficiency=self.matmul_efficiency,
                                        narrow=narrow)
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
        self.memory.update(r)
        row = {d: self._view(d, r.sequence_parallel, r.recompute, r.placement) for d in TP_DEGREES}
        self.times.update(r, row)
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
