"""Chapter 13's layout planner: a model, a number of GPUs, a global batch; the fastest layouts that fit.

The picture is one horizontal bar per layout, the fastest few that fit (the
best of each ``dp x tp x pp x cp``), each split into the named seconds of
:attr:`distlib.planner.LayoutStep.breakdown` (compute, memory-bound work,
tensor-, context- and pipeline-parallel communication, the pipeline bubble,
exposed data-parallel communication, the optimizer), with the layout, its MFU
and its peak memory per GPU written over it. When no layout fits, the picture
says so and by how much the model state alone overflows the GPUs.

Each model is a published shape on its published hardware
(:mod:`distlib.planner.published`): GPT-3 175B and Megatron's 1T model on
Selene's A100s (eight 200 Gb/s HDR NICs a node), Llama 3 405B on H100s (400
Gb/s RoCE a GPU, FlashAttention). The search is :func:`distlib.plan_layouts`
with sequence parallelism on and ZeRO-1 held (ZeRO-1 and 2 cost the same
time in the planner and ZeRO-1 keeps every layout ZeRO-0 keeps); only when
nothing fits that way does it try ZeRO-3. That keeps one search near a tenth
of a second, and each (model, GPUs, batch) is searched once
(:func:`planner_view` is cached). The picture is drawn by :mod:`distlib.plots.planner`.

``PlannerWidget().result`` is the current :class:`PlannerView`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as w

from .._check import check_choice, check_int_choice
from ..fmt import fmt_bytes, fmt_seconds
from ..gpu_cluster import gpu_cluster
from ..planner import plan_layouts, published_model
from ..planner.published import published_layouts
from ..plots.planner import TERM_LABELS, LayoutBars, plot_term_legend, short_layout
from ..units import gbit_to_bytes_per_s
from ._base import FigureImage, FigureWidget, StaticAxis, control_layout, label_style

__all__ = ["PlannerWidget", "PlannerView", "PLANNER_MODELS", "GPU_COUNTS", "GLOBAL_BATCHES", "TOP", "planner_view",
           "planner_cluster"]

#: Model name -> the published row whose shape and hardware it uses.
PLANNER_MODELS = {"GPT-3 175B": "korthikanti2022_175b", "Llama 3 405B": "llama3_405b_8k_8192",
                  "Megatron 1T": "korthikanti2022_1t"}
#: GPUs offered (eight a node): powers of two from 64 to 16384.
GPU_COUNTS = [2**i for i in range(6, 15)]
#: Global batches offered, in sequences of the model's length.
GLOBAL_BATCHES = [256, 512, 1024, 2048, 4096]
#: Layouts drawn.
TOP = 4
_BYTES_PER_PARAM = 16  # bf16 weights and gradients, fp32 master weights and Adam moments (chapter 2)


def _row(model: str):
    rows = {r.id: r for r in published_layouts()}
    return rows[PLANNER_MODELS[check_choice("model", model, list(PLANNER_MODELS))]]


def planner_cluster(model: str, gpus: int):
    """The cluster of ``gpus`` GPUs, eight a node, with the hardware of ``model``'s published run."""
    row, gpus = _row(model), check_int_choice("gpus", gpus, GPU_COUNTS)
    return gpu_cluster(gpus // 8, accelerator=row.accelerator, nic_bandwidth=gbit_to_bytes_per_s(row.nic_gbit_per_node),
                       nics=row.nics, network=row.network)


@dataclass(frozen=True)
class PlannerView:
    """What the widget shows for one choice of its controls."""

    model: str
    gpus: int
    global_batch: int
    accelerator: str
    params: float
    hbm_bytes: float
    #: the fastest layouts that fit, one per (dp, tp, pp, cp), fastest first (:class:`distlib.planner.LayoutStep`)
    steps: tuple
    #: layouts that fit in the whole search (ZeRO-1, or ZeRO-3 when ZeRO-1 has none)
    fitting: int
    #: the ZeRO stage searched
    zero: int

    @property
    def fits(self) -> bool:
        return bool(self.steps)

    @property
    def state_floor(self) -> float:
        """Model state per GPU with every byte sharded over every GPU: no layout holds less."""
        return _BYTES_PER_PARAM * self.params / self.gpus


@lru_cache(maxsize=256)
def planner_view(model: str, gpus: int, global_batch: int) -> PlannerView:
    """The planner's answer for one (model, GPUs, batch): cached, so each is searched once.

    Examples
    --------
    Megatron's 1T model on 64 GPUs: 16 bytes a parameter over 64 GPUs are
    already more than an A100 holds, so nothing is searched and nothing fits.

    >>> v = planner_view("Megatron 1T", 64, 512)
    >>> v.fits, round(v.state_floor / 1e9), v.state_floor > v.hbm_bytes
    (False, 252, True)
    """
    row = _row(model)
    cluster = planner_cluster(model, gpus)
    global_batch = check_int_choice("global_batch", global_batch, GLOBAL_BATCHES)
    m = published_model(row)
    plans, zero = [], 3
    for zero in (1, 3) if _BYTES_PER_PARAM * m.params / gpus <= cluster.accelerator.hbm_bytes else ():
        plans = plan_layouts(m, cluster, global_batch=global_batch, zero=zero, sequence_parallel=True,
                             attention=row.attention)
        if plans:
            break
    best, seen = [], set()
    for s in plans:
        if (s.layout.dp, s.layout.tp, s.layout.pp, s.layout.cp) not in seen:
            seen.add((s.layout.dp, s.layout.tp, s.layout.pp, s.layout.cp))
            best.append(s)
    return PlannerView(model, int(gpus), int(global_batch), cluster.accelerator.name, float(m.params),
                       float(cluster.accelerator.hbm_bytes), tuple(best[:TOP]), len(plans), zero)


class PlannerWidget(FigureWidget):
    """Menus for the model, the GPUs and the global batch; the fastest layouts that fit, as bars of named seconds.

    Parameters
    ----------
    model : {"GPT-3 175B", "Llama 3 405B", "Megatron 1T"}
    gpus : int
        A power of two from 64 to 16384.
    global_batch : {256, 512, 1024, 2048, 4096}
        Sequences per step.

    Attributes
    ----------
    result : PlannerView
        The numbers the picture and the text show now.
    """

    #: the chapter's widget as the static-frame tests build it (its constructor's keywords)
    EXAMPLE = dict(model="GPT-3 175B", gpus=1024, global_batch=512)
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (
        ("a model not on the menu (planner)", dict(model="GPT-4"), ValueError,
         "'GPT-3 175B', 'Llama 3 405B', 'Megatron 1T'"),
        ("GPUs not a power of two (planner)", dict(gpus=1000), ValueError, "64, 128, 256"),
        ("bool for GPUs (planner)", dict(gpus=True), TypeError, "64, 128, 256"),
        ("global batch not on the menu (planner)", dict(global_batch=1536), ValueError, "256, 512, 1024, 2048, 4096"),
    )

    def __init__(self, *, model="GPT-3 175B", gpus=1024, global_batch=512):
        model = check_choice("model", model, list(PLANNER_MODELS))
        gpus = check_int_choice("gpus", gpus, GPU_COUNTS)
        global_batch = check_int_choice("global_batch", global_batch, GLOBAL_BATCHES)
        style, layout = label_style(), control_layout()
        self.model_dropdown = w.Dropdown(options=list(PLANNER_MODELS), value=model, description="model",
                                         style=style, layout=layout)
        self.gpus_dropdown = w.Dropdown(options=GPU_COUNTS, value=gpus, description="GPUs", style=style,
                                        layout=layout)
        self.batch_dropdown = w.Dropdown(options=GLOBAL_BATCHES, value=global_batch, description="global batch",
                                         style=style, layout=layout)
        self.controls = [self.model_dropdown, self.gpus_dropdown, self.batch_dropdown]

        self.fig = FigureImage(width=460, height=600, phone_height=660)
        figure = self.fig.figure
        figure.delaxes(self.fig.ax)
        self.ax, self.legend_ax = figure.subplots(2, 1, gridspec_kw={"height_ratios": [4.2, 1]})
        self.fig.ax = self.ax
        self.picture = LayoutBars(self.ax, rows=TOP, narrow=self.fig.narrow)
        plot_term_legend(self.legend_ax, narrow=self.fig.narrow)
        self.fig.enforce_min_font()
        # placed by hand: the labels sit inside the axes, which tight_layout would measure while they are empty
        figure.subplots_adjust(left=0.03, right=0.97, top=0.94, bottom=0.01, hspace=0.28)
        # the x axis runs 0 to 1 (a share of the longest bar drawn); its ticks are texts redrawn each time, so
        # the rest of the picture is drawn once (blitting): one redraw is the bars and the words
        self.fig.set_animated(self.picture.dynamic_artists)
        self.summary = w.HTML()
        self.result: PlannerView | None = None
        self._finish()

    def static_axes(self):
        # every model; GPUs a factor of four apart (64: nothing fits for 1T), batches too: 3 x 4 x 2 = 24 frames
        return [StaticAxis("model_dropdown", list(PLANNER_MODELS)),
                StaticAxis("gpus_dropdown", [64, 256, 1024, 4096]),
                StaticAxis("batch_dropdown", [512, 2048])]

    def compute(self) -> PlannerView:
        return planner_view(self.model_dropdown.value, self.gpus_dropdown.value, self.batch_dropdown.value)

    def draw(self, r: PlannerView) -> None:
        self.picture.update(r)
        self.fig.render()

    def describe(self, r: PlannerView) -> None:
        self.result = r
        chip = html.escape(r.accelerator)
        head = f"<b>{html.escape(r.model)}</b> on {r.gpus} {chip} GPUs, global batch {r.global_batch}: "
        if not r.fits:
            self.summary.value = (f"<div style='font-size:0.9em'>{head}<b style='color:#D55E00'>no layout fits"
                                  f"</b> in {fmt_bytes(r.hbm_bytes)} a GPU, even with ZeRO-3. The model state "
                                  f"alone is {fmt_bytes(r.state_floor)} a GPU when every byte is sharded over "
                                  f"every GPU. Raise the GPUs.</div>")
            return
        s = r.steps[0]
        terms = ", ".join(f"{TERM_LABELS[t]} {fmt_seconds(v)}" for t, v in s.breakdown.items() if v > 0)
        zero = "ZeRO-1" if r.zero == 1 else "ZeRO-3 (nothing fits with ZeRO-1)"
        self.summary.value = (
            f"<div style='font-size:0.9em'>{head}{r.fitting} layouts fit ({zero}, sequence parallelism on). "
            f"Fastest: <b>{html.escape(short_layout(s))}</b>, recomputation {s.recompute}, "
            f"{fmt_seconds(s.step_time)} a step, MFU {s.mfu:.0%} (HFU {s.hfu:.0%}), "
            f"{fmt_bytes(s.memory_bytes)} of {fmt_bytes(r.hbm_bytes)} a GPU.<br>Its step: {terms}.</div>")
