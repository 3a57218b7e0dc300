"""The three-walls calculator: memory per GPU, training time, communication per step.

``WallsWidget().result`` is the current :class:`distlib.walls.Walls`; set any
control's ``.value`` and it is recomputed and redrawn at once.
"""

from __future__ import annotations

import html

import ipywidgets as w

from .._check import check_choice, check_int, check_int_choice, check_real, check_real_in
from ..fmt import fmt_bytes, fmt_count, fmt_flop, fmt_rate, fmt_seconds
from ..hardware import accelerator_names
from ..plots.walls import MemoryBars, TimeBars
from ..walls import RECIPES, Walls, three_walls, zero_state_bytes_per_gpu
from ._base import (CONTINUOUS_UPDATE, FigureImage, FigureWidget, StaticAxis, accelerator_name, control_layout,
                    label_style, log_slider)

__all__ = ["WallsWidget", "CHIP_COUNTS"]

#: Cluster sizes offered: powers of two from one chip to 16,384.
CHIP_COUNTS = [2**i for i in range(15)]
TIME_RANGE = (1.0, 1e14)  # seconds: 1 s to about 3 million years


#: The recipes as a reader reads them (the library's names are for code)
RECIPE_LABELS = {"bf16_adam": "bf16, fp32 Adam moments", "mixed_precision_adam": "mixed precision, fp32 master",
                 "fp32_adam": "fp32 throughout"}

class WallsWidget(FigureWidget):
    """Sliders for a training run; bars for the memory and compute walls; text for communication.

    Attributes
    ----------
    result : Walls
        The current model result.
    controls : list
        The input widgets, in display order.
    """

    #: the chapter's widget as the static-frame tests build it (its constructor's keywords)
    EXAMPLE = dict(params=7e9, chips=8, stage=0)
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (
        ("no parameters", dict(params=0), ValueError, "[1e+08, 1.99526e+12]"),
        ("more tokens than the slider", dict(tokens=1e15), ValueError, "[1e+09, 1.99526e+13]"),
        ("unknown recipe", dict(recipe="fp8"), ValueError, "'bf16_adam', 'mixed_precision_adam'"),
        ("accelerator not in the table (walls)", dict(accelerator="V100"), ValueError, "known: A100, H100"),
        ("NaN MFU", dict(mfu=float("nan")), ValueError, "[0.05, 1]"),
        ("negative MFU", dict(mfu=-0.1), ValueError, "[0.05, 1]"),
        ("three chips", dict(chips=3), ValueError, "1, 2, 4, 8"),
        ("no chips", dict(chips=0), ValueError, "1, 2, 4, 8"),
        ("ZeRO stage 4", dict(stage=4), ValueError, "[0, 3]"),
        ("bool for the ZeRO stage", dict(stage=True), TypeError, "[0, 3]"),
    )

    def __init__(self, *, params=7e9, tokens=1e12, recipe="mixed_precision_adam", accelerator="H100",
                 mfu=0.4, chips=8, stage=0):
        # every argument checked against its control's range before anything is built
        params = check_real_in("params", params, 10**8, 10**12.3)
        tokens = check_real_in("tokens", tokens, 10**9, 10**13.3)
        recipe = check_choice("recipe", recipe, list(RECIPES))
        name = accelerator_name(accelerator)
        mfu = check_real("mfu", mfu, minimum=0.05, maximum=1.0)
        chips = check_int_choice("chips", chips, CHIP_COUNTS)
        stage = check_int("stage", stage, minimum=0, maximum=3)
        style = label_style()
        layout = control_layout()
        cu = CONTINUOUS_UPDATE
        self.params_slider = log_slider(value=params, base=10, min=8, max=12.3, step=0.05,
                                              description="parameters", readout_format=".3g",
                                              continuous_update=cu, style=style, layout=layout)
        self.tokens_slider = log_slider(value=tokens, base=10, min=9, max=13.3, step=0.05,
                                              description="training tokens", readout_format=".3g",
                                              continuous_update=cu, style=style, layout=layout)
        self.recipe_dropdown = w.Dropdown(options=[(f"{RECIPE_LABELS.get(k, k)}: {r.bytes_per_param:g} B/param", k)
                                                   for k, r in RECIPES.items()],
                                          value=recipe, description="recipe", style=style, layout=layout)
        self.accelerator_dropdown = w.Dropdown(options=accelerator_names(), value=name,
                                               description="accelerator", style=style, layout=layout)
        self.mfu_slider = w.FloatSlider(value=mfu, min=0.05, max=1.0, step=0.05, description="MFU",
                                        readout_format=".2f", continuous_update=cu, style=style,
                                        layout=layout)
        self.chips_dropdown = w.Dropdown(options=CHIP_COUNTS, value=chips, description="chips (data parallel)",
                                         style=style, layout=layout)
        self.stage_buttons = w.ToggleButtons(options=[(f"ZeRO-{s}", s) for s in range(4)], value=stage,
                                             description="ZeRO stage", style=style)
        self.controls = [self.params_slider, self.tokens_slider, self.recipe_dropdown, self.accelerator_dropdown,
                         self.mfu_slider, self.chips_dropdown, self.stage_buttons]

        # the two walls stacked, so that each keeps readable text on a narrow page
        self.fig = FigureImage(width=440, height=600)
        figure = self.fig.figure
        figure.delaxes(self.fig.ax)
        self.mem_ax, self.time_ax = figure.subplots(2, 1, gridspec_kw={"height_ratios": [1.25, 1]})
        self.fig.ax = self.mem_ax
        self.memory = MemoryBars(self.mem_ax, [str(s) for s in range(4)], relative=True, ymax=2.0,
                                 totals="highlight", xlabel="ZeRO stage")
        # the chip's capacity is written between the title and the axes
        self.mem_ax.set_title("memory wall: state per GPU" if self.fig.narrow else "memory wall: model state per GPU",
                              fontsize=11, pad=24)
        self.times = TimeBars(self.time_ax, ylim=TIME_RANGE, legend_ncols=1 if self.fig.narrow else 2)
        self.time_ax.set_title("compute wall: training time", fontsize=11)
        self.fig.enforce_min_font()  # lay out with the text at the size it is drawn
        figure.tight_layout(pad=0.6, h_pad=1.2)
        self.fig.set_animated(self.memory.dynamic_artists + self.times.dynamic_artists)

        self.summary = w.HTML()
        self.result: Walls | None = None
        self._finish()

    def static_axes(self):
        # model sizes the prose walks through (7B, 70B, 175B, 1T), every ZeRO stage, cluster sizes
        # and the accelerator the prose switches, H100 to MI300X (the start value is added)
        return [StaticAxis("params_slider", [7e9, 70e9, 175e9, 1e12], labels=fmt_count),
                StaticAxis("accelerator_dropdown", ["H100", "MI300X"]),
                StaticAxis("chips_dropdown", [1, 8, 64, 512, 4096, 16384]),
                StaticAxis("stage_buttons", [0, 1, 2, 3])]

    def compute(self) -> Walls:
        """The model result for the current control values."""
        return three_walls(
            self.params_slider.value,
            self.tokens_slider.value,
            recipe=self.recipe_dropdown.value,
            accelerator=self.accelerator_dropdown.value,
            mfu=self.mfu_slider.value,
            chips=self.chips_dropdown.value,
            stage=self.stage_buttons.value,
        )

    def update(self) -> Walls:
        """Recompute, redraw the picture and the text; return the result."""
        self.result = r = self.compute()
        states = [zero_state_bytes_per_gpu(r.params, recipe=r.recipe, dp=r.chips, stage=s) for s in range(4)]
        self.memory.update(states, hbm_bytes=r.hbm_bytes, highlight=r.stage)
        self.times.update(r)
        self.fig.render()
        self.summary.value = _summary_html(r, states)
        return r


def _summary_html(r: Walls, states) -> str:
    chip = html.escape(r.accelerator.name)
    if r.fits:
        mem = (f"<b style='color:#009E73'>fits</b>: {fmt_bytes(r.state_per_gpu.total)} of model state per GPU, "
               f"{r.memory_fraction:.0%} of {chip}'s {fmt_bytes(r.hbm_bytes)} (activations not counted)")
    else:
        need = r.min_gpus
        hint = (f"ZeRO-{r.stage} would need at least {need:,} chips" if need != float("inf")
                else f"no number of chips is enough at ZeRO-{r.stage}")
        mem = (f"<b style='color:#D55E00'>does not fit</b>: {fmt_bytes(r.state_per_gpu.total)} per GPU is "
               f"{r.memory_fraction:.1f}x {chip}'s {fmt_bytes(r.hbm_bytes)}; {hint}")
    comm_verdict = ("<b style='color:#D55E00'>longer than</b>" if r.communication_bound
                    else "<b style='color:#009E73'>shorter than</b>")
    per_stage = " &middot; ".join(f"ZeRO-{s}: {fmt_bytes(st.total)}" for s, st in enumerate(states))
    return (
        f"<div style='font-size:0.9em'>"
        f"<b>memory</b>: {mem}<br>"
        f"&nbsp;&nbsp;per GPU over {r.chips:,} chips: {per_stage}<br>"
        f"<b>compute</b>: {fmt_flop(r.flops)}; one {chip} at MFU {r.mfu:.0%}: {fmt_seconds(r.time_one_chip)}; "
        f"{r.chips:,} chips: {fmt_seconds(r.time_cluster)} ({r.steps:,} steps of {r.tokens_per_step:,.0f} tokens)<br>"
        f"<b>communication</b>: each GPU sends {fmt_bytes(r.comm_bytes_per_step)} per step over "
        + (f"{html.escape(r.cluster.describe())}, NCCL reaching {fmt_rate(r.link_bandwidth)} busbw: "
           if r.cluster is not None else
           f"{fmt_rate(r.link_bandwidth)} {html.escape(r.accelerator.link_name)} (one direction): ")
        + f"{fmt_seconds(r.comm_time_per_step)}, {comm_verdict} the {fmt_seconds(r.compute_time_per_step)} "
        f"of compute per step</div>"
    )
