"""Chapter 10's ZeRO explorer: a model size, a number of data-parallel GPUs, a ZeRO stage.

The picture has two parts. Above: the model state each GPU holds against the
number of GPUs, one line per stage (chapter 2's formula,
:func:`distlib.zero_state_bytes_per_gpu`), the chosen stage drawn thick, the
chosen number of GPUs marked, and the chip's memory as a dashed line. Below:
what each GPU sends per step under each stage
(:func:`distlib.gradient_comm_bytes_per_gpu`), in copies of the bf16
gradient, so that DDP's all-reduce reads as 2 (p - 1) / p and ZeRO-3 as
3 (p - 1) / p; each bar is labelled with its bytes and their time through one
NIC per GPU with nothing hidden. Both are drawn by :mod:`distlib.plots.zero`.

``ZeroWidget().result`` is the current :class:`ZeroView`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import ipywidgets as w

from .._check import check_int_choice, check_real_in
from ..fmt import fmt_bytes, fmt_count, fmt_seconds
from ..hardware import accelerator as _accelerator
from ..topology.graphs import NDR_NIC_BANDWIDTH
from ..walls import ZERO_STAGES, gradient_comm_bytes_per_gpu, min_gpus_to_fit, model_state_bytes, \
    zero_state_bytes_per_gpu
from ..plots.zero import ZeroCommBars, ZeroMemoryPicture, stage_name
from ._base import (CONTINUOUS_UPDATE, FigureImage, FigureWidget, StaticAxis, accelerator_name, control_layout,
                    label_style, log_slider)

__all__ = ["ZeroWidget", "ZeroView", "GPU_COUNTS", "RECIPE"]

#: Data-parallel GPUs offered: powers of two from 1 to 1024.
GPU_COUNTS = [2**i for i in range(11)]
#: The recipe of chapter 10's prose: bf16 weights and gradients, fp32 Adam moments and master weights.
RECIPE = "mixed_precision_adam"
PARAMS_LOG10 = (9.0, 12.0)  # one billion to one trillion parameters
_OVER = "#D55E00"


@dataclass(frozen=True)
class ZeroView:
    """What the widget shows for one choice of its controls."""

    params: float
    gpus: int
    stage: int
    accelerator: str
    hbm_bytes: float
    #: model state per GPU under each stage, 0 to 3 (:class:`distlib.walls.StateBytes`)
    held: tuple
    #: bytes each GPU sends per step under each stage
    sent: tuple
    #: the fewest GPUs on which each stage's model state fits (``inf``: none)
    min_gpus: tuple
    nic_bandwidth: float

    @property
    def fits(self) -> bool:
        return self.held[self.stage].total <= self.hbm_bytes

    def seconds(self, stage: int) -> float:
        """The time of stage ``stage``'s bytes through one NIC per GPU, nothing overlapped."""
        return self.sent[stage] / self.nic_bandwidth

    def held_at(self, gpus: int, stage: int) -> float:
        """Model state per GPU, bytes, of these parameters on ``gpus`` GPUs under stage ``stage``."""
        return zero_state_bytes_per_gpu(self.params, recipe=RECIPE, dp=gpus, stage=stage).total

    @property
    def gradient_bytes(self) -> float:
        """One bf16 gradient of the model, bytes: the unit the communication is drawn in."""
        return model_state_bytes(self.params, recipe=RECIPE).grads


def zero_view(params, gpus, stage, accelerator="H100") -> ZeroView:
    """The numbers behind one frame: chapter 2's formulas, the hardware table's memory."""
    spec = _accelerator(accelerator)
    held = tuple(zero_state_bytes_per_gpu(params, recipe=RECIPE, dp=gpus, stage=s) for s in ZERO_STAGES)
    sent = tuple(gradient_comm_bytes_per_gpu(params, gpus, recipe=RECIPE, stage=s) for s in ZERO_STAGES)
    least = tuple(min_gpus_to_fit(params, recipe=RECIPE, hbm_bytes=spec.hbm_bytes, stage=s) for s in ZERO_STAGES)
    return ZeroView(float(params), int(gpus), int(stage), spec.name, float(spec.hbm_bytes), held, sent, least,
                    float(NDR_NIC_BANDWIDTH))


class ZeroWidget(FigureWidget):
    """Sliders for model size and GPUs, buttons for the stage; memory per GPU above, bytes sent below.

    Attributes
    ----------
    result : ZeroView
        The numbers the picture and the text show now.
    """

    #: the chapter's widget as the static-frame tests build it (its constructor's keywords)
    EXAMPLE = dict(params=70e9, gpus=8, stage=0)
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (
        ("model too small for the slider (zero)", dict(params=1e6), ValueError, "[1e+09, 1e+12]"),
        ("NaN parameters (zero)", dict(params=float("nan")), ValueError, "[1e+09, 1e+12]"),
        ("three GPUs (zero)", dict(gpus=3), ValueError, "1, 2, 4, 8"),
        ("ZeRO stage 5 (zero)", dict(stage=5), ValueError, "0, 1, 2, 3"),
        ("accelerator not in the table (zero)", dict(accelerator="V100"), ValueError, "known: A100, H100"),
    )

    def __init__(self, *, params=70e9, gpus=64, stage=3, accelerator="H100"):
        lo, hi = PARAMS_LOG10
        params = check_real_in("params", params, 10**lo, 10**hi)
        gpus = check_int_choice("gpus", gpus, GPU_COUNTS)
        stage = check_int_choice("stage", stage, list(ZERO_STAGES))
        self.accelerator = accelerator_name(accelerator)
        style = label_style()
        layout = control_layout()
        self.params_slider = log_slider(value=params, base=10, min=lo, max=hi, step=0.05, description="parameters",
                                        readout_format=".3g", continuous_update=CONTINUOUS_UPDATE, style=style,
                                        layout=layout)
        self.gpus_dropdown = w.Dropdown(options=GPU_COUNTS, value=gpus, description="GPUs p (data parallel)",
                                        style=style, layout=layout)
        self.stage_buttons = w.ToggleButtons(options=[(stage_name(s), s) for s in ZERO_STAGES], value=stage,
                                             description="ZeRO stage", style=style)
        self.controls = [self.params_slider, self.gpus_dropdown, self.stage_buttons]

        self.fig = FigureImage(width=460, height=600, phone_height=640)
        figure = self.fig.figure
        figure.delaxes(self.fig.ax)
        self.mem_ax, self.comm_ax = figure.subplots(2, 1, gridspec_kw={"height_ratios": [1.5, 1]})
        self.fig.ax = self.mem_ax
        spec = _accelerator(self.accelerator)
        self.memory = ZeroMemoryPicture(self.mem_ax, GPU_COUNTS, accelerator=spec.name, hbm_bytes=spec.hbm_bytes,
                                        narrow=self.fig.narrow)
        self.sending = ZeroCommBars(self.comm_ax)
        self.fig.enforce_min_font()
        figure.tight_layout(pad=0.6, h_pad=1.4)
        self.fig.set_animated(self.memory.dynamic_artists + self.sending.dynamic_artists)
        self.summary = w.HTML()
        self.result: ZeroView | None = None
        self._finish()

    def static_axes(self):
        # the sizes the prose names (7B, 70B, 175B, 1T), GPU counts a factor of 8 apart, every stage
        return [StaticAxis("params_slider", [7e9, 70e9, 175e9, 1e12], labels=fmt_count),
                StaticAxis("gpus_dropdown", [1, 8, 64, 512]),
                StaticAxis("stage_buttons", list(ZERO_STAGES))]

    def compute(self) -> ZeroView:
        return zero_view(self.params_slider.value, self.gpus_dropdown.value, self.stage_buttons.value,
                         self.accelerator)

    def draw(self, r: ZeroView) -> None:
        self.memory.update(r)
        self.sending.update(r)
        self.fig.render()

    def describe(self, r: ZeroView) -> None:
        self.result = r
        name = stage_name(r.stage)
        chip = html.escape(r.accelerator)
        held = r.held[r.stage]
        if r.fits:
            verdict = (f"<b style='color:#009E73'>fits</b>: {held.total / r.hbm_bytes:.0%} of {chip}'s "
                       f"{fmt_bytes(r.hbm_bytes)}, activations not counted")
        else:
            need = r.min_gpus[r.stage]
            hint = ("no number of GPUs is enough at this stage" if need == float("inf")
                    else f"{name} needs at least {need:,} GPUs")
            verdict = (f"<b style='color:{_OVER}'>does not fit</b>: {held.total / r.hbm_bytes:.1f}x {chip}'s "
                       f"{fmt_bytes(r.hbm_bytes)}; {hint}")
        least = " &middot; ".join(
            f"{stage_name(s)}: {'never' if k == float('inf') else f'{k:,}'}" for s, k in enumerate(r.min_gpus))
        ddp = r.sent[0]
        ratio = f", {r.sent[r.stage] / ddp:.2g}x DDP" if ddp > 0 else ""
        self.summary.value = (
            f"<div style='font-size:0.9em'><b>{name}</b>, {fmt_count(r.params)} parameters on {r.gpus:,} GPUs: "
            f"{fmt_bytes(held.total)} of model state per GPU (weights {fmt_bytes(held.weights)}, gradients "
            f"{fmt_bytes(held.grads)}, optimizer {fmt_bytes(held.optimizer + held.master)}), {verdict}.<br>"
            f"Fewest GPUs whose memory holds the state: {least}.<br>"
            f"Each GPU sends {fmt_bytes(r.sent[r.stage])} per step{ratio}: {fmt_seconds(r.seconds(r.stage))} "
            f"through one NIC of {fmt_bytes(r.nic_bandwidth)}/s per direction, if none of it is hidden "
            f"under compute.</div>"
        )
