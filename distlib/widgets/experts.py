"""Chapter 15's experts widget: route a batch of tokens to experts over ``ep`` ranks, and see what is dropped and sent.

Controls: the experts per layer, the experts per token (top-k), the capacity factor (or none: unbounded), the
router's skew (how much it prefers the first experts, :func:`distlib.router_logits`), the expert-parallel
ranks, and the balancing (none, Switch's auxiliary loss, DeepSeek-V3's bias). A batch of :data:`TOKENS`
tokens (``TOKENS / ep`` a rank) of width :data:`HIDDEN` in bf16 is routed after :data:`BALANCE_STEPS` steps of
balancing (:func:`distlib.balance_simulation`, the same seed every time: the same inputs draw the same batch).
Three pictures (:mod:`distlib.plots.experts`):

* the tokens flowing from the ranks to the experts and back (:func:`~distlib.plots.experts.plot_token_flow`);
* the load per expert, kept and dropped, against the capacity (:func:`~distlib.plots.experts.plot_expert_load`);
* the bytes each rank sends and receives in one all-to-all, beside the uniform closed form
  (:func:`~distlib.plots.experts.plot_alltoall_bytes`).

``ExpertsWidget().result`` is the current :class:`ExpertsView`.

On the static page the capacity factor, the skew and the balancing (none or bias) stay live: 4 x 3 x 2 = 24
frames. The experts, top-k and ranks are fixed there at the chapter's values.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as w
import numpy as np

from .._check import check_choice, check_int_choice
from ..experts_model import (BALANCING_RULES, BalanceRun, DispatchStats, MoeAlltoall, Routes, balance_simulation,
                             capacity, dispatch_matrix, dispatch_stats, expert_ranks, moe_alltoall, route,
                             router_logits)
from ..fmt import fmt_bytes
from ..plots.experts import DROPPED_COLOR, KEPT_COLOR, plot_alltoall_bytes, plot_expert_load, plot_token_flow
from ._base import CONTINUOUS_UPDATE, FigureImage, FigureWidget, StaticAxis, control_layout, label_style

__all__ = ["ExpertsView", "ExpertsWidget", "EXPERT_OPTIONS", "TOP_K_OPTIONS", "CAPACITY_FACTORS", "SKEWS",
           "EP_OPTIONS", "TOKENS", "HIDDEN", "BYTES_PER_ELEMENT", "BALANCE_STEPS", "STATIC_CAPACITY_FACTORS",
           "STATIC_SKEWS", "STATIC_BALANCING"]

EXPERT_OPTIONS = [8, 16, 64]
TOP_K_OPTIONS = [1, 2, 4, 8]
#: Capacity factors offered; ``None``: no capacity (nothing dropped), shown as the slider's last place, ∞.
CAPACITY_FACTORS = [0.5, 0.75, 1.0, 1.25, 1.5, 2.0, None]
SKEWS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0]
EP_OPTIONS = [1, 2, 4, 8]
#: Tokens routed in the layer (all ranks), their width and bytes per value (bf16).
TOKENS, HIDDEN, BYTES_PER_ELEMENT = 2048, 4096, 2.0
#: Steps of balancing before the batch shown.
BALANCE_STEPS = 40
#: The static page's grids.
STATIC_CAPACITY_FACTORS = [0.5, 1.0, 1.25, None]
STATIC_SKEWS = [0.0, 1.0, 2.0]
STATIC_BALANCING = ["none", "bias"]
_BALANCING_LABELS = {"none": "none", "aux": "aux loss", "bias": "bias"}
_UNBOUNDED = math.inf  # the slider's value for "no capacity" (a Selection cannot hold None)


@dataclass(frozen=True)
class ExpertsView:
    """What the widget shows: the routing of one batch, its drops, and the all-to-all's rows and bytes.

    ``flow`` (ep, E): rows from each rank to each expert; ``matrix`` (ep, ep): rows between ranks; ``run``:
    the balancing before the batch (None without balancing)."""

    experts: int
    top_k: int
    capacity_factor: float | None
    skew: float
    ep: int
    balancing: str
    routes: Routes
    stats: DispatchStats
    flow: np.ndarray
    matrix: np.ndarray
    a2a: MoeAlltoall
    run: BalanceRun | None

    @property
    def row_bytes(self) -> float:
        return HIDDEN * BYTES_PER_ELEMENT

    @property
    def busiest_sent(self) -> float:
        """Bytes the busiest rank sends or receives in one all-to-all (the one the others wait for)."""
        off = self.matrix - np.diag(np.diag(self.matrix))
        return float(max(off.sum(axis=0).max(), off.sum(axis=1).max()) * self.row_bytes)


@lru_cache(maxsize=64)
def _balanced(experts: int, top_k: int, skew: float, balancing: str) -> BalanceRun:
    """The balancing run before the batch (the same for every capacity factor and ``ep``: computed once)."""
    return balance_simulation(tokens=TOKENS, experts=experts, top_k=top_k, skew=skew, steps=BALANCE_STEPS,
                              balancing=balancing)


def expert_view(*, experts, top_k, capacity_factor, skew, ep, balancing) -> ExpertsView:
    """The widget's model: balance for :data:`BALANCE_STEPS` steps, route the next batch, count and send it."""
    run = None if balancing == "none" else _balanced(experts, top_k, skew, balancing)
    logits = router_logits(TOKENS, experts, skew=skew, seed=BALANCE_STEPS)  # the step after the balancing
    if balancing == "aux":
        routes = route(logits + run.offsets, top_k, gate="softmax")
    else:
        routes = route(logits, top_k, gate="sigmoid", bias=None if run is None else run.offsets)
    stats = dispatch_stats(routes.choices, experts, capacity(TOKENS, experts, top_k, capacity_factor))
    flow = dispatch_matrix(routes.choices, stats.mask, experts=experts, ep=ep, to="expert")
    matrix = flow.reshape(ep, ep, experts // ep).sum(axis=2)
    a2a = moe_alltoall(TOKENS // ep, HIDDEN, top_k=top_k, ep=ep, bytes_per_element=BYTES_PER_ELEMENT)
    return ExpertsView(experts=experts, top_k=top_k, capacity_factor=capacity_factor, skew=skew, ep=ep,
                       balancing=balancing, routes=routes, stats=stats, flow=flow, matrix=matrix, a2a=a2a, run=run)


def _on_grid(name: str, value, options) -> float:
    listed = ", ".join("none" if o is None else f"{o:g}" for o in options)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise TypeError(f"{name} must be one of {listed}; got {value!r}")
    if not any(o is not None and abs(float(value) - o) < 1e-12 for o in options):
        raise ValueError(f"{name} must be one of {listed}; got {value!r}")
    return float(value)


class ExpertsWidget(FigureWidget):
    """Route tokens to experts on ``ep`` ranks: the flow, the load against the capacity, the all-to-all's bytes.

    Parameters
    ----------
    experts : int
        One of :data:`EXPERT_OPTIONS`.
    top_k : int
        One of :data:`TOP_K_OPTIONS`.
    capacity_factor : float or None
        One of :data:`CAPACITY_FACTORS` (``None``: no capacity).
    skew : float
        One of :data:`SKEWS`: the router's preference for the first experts.
    ep : int
        Expert-parallel ranks, one of :data:`EP_OPTIONS`.
    balancing : {"none", "aux", "bias"}

    Attributes
    ----------
    result : ExpertsView
    """

    #: the chapter's widget as the static-frame tests build it
    EXAMPLE = dict(experts=16, top_k=2, capacity_factor=1.0, skew=1.0, ep=4, balancing="none")
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (("experts not offered", dict(experts=10), ValueError, "experts must be one of 8, 16, 64"),
                  ("fractional experts", dict(experts=8.5), TypeError, "experts must be one of 8, 16, 64"),
                  ("top-k not offered", dict(top_k=3), ValueError, "top_k must be one of 1, 2, 4, 8"),
                  ("a capacity factor off the grid", dict(capacity_factor=0.3), ValueError,
                   "capacity_factor must be one of 0.5, 0.75, 1, 1.25, 1.5, 2, none"),
                  ("a capacity factor as text", dict(capacity_factor="1.0"), TypeError,
                   "capacity_factor must be one of"),
                  ("a negative skew", dict(skew=-1.0), ValueError, "skew must be one of 0, 0.5, 1, 1.5, 2, 3"),
                  ("ranks not offered", dict(ep=3), ValueError, "ep must be one of 1, 2, 4, 8"),
                  ("an unknown balancing rule", dict(balancing="sinkhorn"), ValueError,
                   "balancing must be one of 'none', 'aux', 'bias'"))

    def __init__(self, *, experts=16, top_k=2, capacity_factor=1.0, skew=1.0, ep=4, balancing="none"):
        experts = check_int_choice("experts", experts, EXPERT_OPTIONS)
        top_k = check_int_choice("top_k", top_k, TOP_K_OPTIONS)
        cf = _UNBOUNDED if capacity_factor is None else _on_grid("capacity_factor", capacity_factor,
                                                                   CAPACITY_FACTORS)
        skew = _on_grid("skew", skew, SKEWS)
        ep = check_int_choice("ep", ep, EP_OPTIONS)
        balancing = check_choice("balancing", balancing, BALANCING_RULES)
        style, layout, cu = label_style(), control_layout(), CONTINUOUS_UPDATE
        self.experts_slider = w.SelectionSlider(options=EXPERT_OPTIONS, value=experts, description="experts",
                                                continuous_update=cu, style=style, layout=layout)
        self.top_k_slider = w.SelectionSlider(options=TOP_K_OPTIONS, value=top_k, description="experts per token",
                                              continuous_update=cu, style=style, layout=layout)
        self.capacity_slider = w.SelectionSlider(options=[(_cf_label(c), _UNBOUNDED if c is None else c)
                                                          for c in CAPACITY_FACTORS], value=cf,
                                                 description="capacity factor", continuous_update=cu, style=style,
                                                 layout=layout)
        self.skew_slider = w.SelectionSlider(options=[(f"{s:g}", s) for s in SKEWS], value=skew,
                                             description="router skew", continuous_update=cu, style=style,
                                             layout=layout)
        self.ep_slider = w.SelectionSlider(options=EP_OPTIONS, value=ep, description="expert-parallel ranks",
                                           continuous_update=cu, style=style, layout=layout)
        self.balancing_buttons = w.ToggleButtons(options=[(v, k) for k, v in _BALANCING_LABELS.items()],
                                                 value=balancing, description="balancing", style=style)
        self.controls = [self.experts_slider, self.top_k_slider, self.capacity_slider, self.skew_slider,
                         self.ep_slider, self.balancing_buttons]
        self.fig = FigureImage(width=600, height=540, phone_height=780)
        self._axes()
        self.summary = w.HTML()
        self.result: ExpertsView | None = None
        self._finish([w.HTML(_legend_html())])

    def _axes(self) -> None:
        figure = self.fig.figure
        figure.delaxes(self.fig.ax)
        if self.fig.narrow:  # the flow across the whole width, the two charts under it with room for their labels
            top = figure.add_gridspec(1, 1, left=0.02, right=0.98, top=0.93, bottom=0.63)
            grid = figure.add_gridspec(2, 1, left=0.2, right=0.96, top=0.55, bottom=0.07, hspace=0.6)
            self.ax_flow = figure.add_subplot(top[0, 0])
            self.ax_load, self.ax_bytes = figure.add_subplot(grid[0, 0]), figure.add_subplot(grid[1, 0])
        else:
            grid = figure.add_gridspec(2, 2, height_ratios=[1.25, 1], left=0.1, right=0.98, top=0.94, bottom=0.1,
                                       hspace=0.45, wspace=0.32)
            self.ax_flow = figure.add_subplot(grid[0, :])
            self.ax_load, self.ax_bytes = figure.add_subplot(grid[1, 0]), figure.add_subplot(grid[1, 1])
        self.fig.ax = self.ax_flow

    def static_axes(self):
        # 4 capacity factors x 3 skews x 2 balancing rules: 24 frames; experts, top-k and ranks fixed
        return [StaticAxis("capacity_slider", [_UNBOUNDED if c is None else c for c in STATIC_CAPACITY_FACTORS],
                           labels=lambda c: _cf_label(None if c == _UNBOUNDED else c), description="capacity factor"),
                StaticAxis("skew_slider", STATIC_SKEWS, labels=lambda s: f"{s:g}", description="router skew"),
                StaticAxis("balancing_buttons", STATIC_BALANCING, labels=lambda b: _BALANCING_LABELS[b],
                           description="balancing")]

    def compute(self) -> ExpertsView:
        cf = float(self.capacity_slider.value)
        return expert_view(experts=int(self.experts_slider.value), top_k=int(self.top_k_slider.value),
                           capacity_factor=None if cf == _UNBOUNDED else cf, skew=float(self.skew_slider.value),
                           ep=int(self.ep_slider.value), balancing=self.balancing_buttons.value)

    def draw(self, v: ExpertsView) -> None:
        for ax in (self.ax_flow, self.ax_load, self.ax_bytes):
            ax.clear()
        plot_token_flow(self.ax_flow, v.flow)
        s = v.stats
        self.ax_flow.set_title(f"{TOKENS:,} tokens, top-{v.top_k} of {v.experts} experts"
                               f"{chr(10) if self.fig.narrow else ' '}on {v.ep} rank{'s' if v.ep > 1 else ''}",
                               fontsize=11)
        plot_expert_load(self.ax_load, s, owner=expert_ranks(v.experts, v.ep))
        cap = "no capacity" if s.capacity is None else f"capacity {s.capacity}"
        self.ax_load.set_title(f"{cap}: {s.drop_fraction:.0%} dropped", fontsize=11)
        plot_alltoall_bytes(self.ax_bytes, v.matrix, v.a2a, row_bytes=v.row_bytes)
        self.ax_bytes.set_title("one all-to-all" if v.ep > 1 else "one rank: nothing sent", fontsize=11)
        self.fig.render()

    def describe(self, v: ExpertsView) -> None:
        self.result = v
        s, a = v.stats, v.a2a
        cap = ("no capacity: nothing is dropped" if s.capacity is None else
               f"capacity factor {v.capacity_factor:g}: each expert takes at most <b>{s.capacity}</b> of the "
               f"{s.assignments:,} assignments")
        balance = {"none": "no balancing", "aux": f"{BALANCE_STEPS} steps of aux-loss pressure",
                   "bias": f"{BALANCE_STEPS} steps of bias balancing"}[v.balancing]
        sent = (f"Each rank sends <b>{fmt_bytes(a.sent)}</b> per all-to-all under uniform routing "
                f"(T k (ep-1)/ep h bytes, T = {a.tokens:,}); the busiest rank here sends or receives "
                f"<b>{fmt_bytes(v.busiest_sent)}</b>; four all-to-alls per MoE layer (two forward, two backward)."
                if v.ep > 1 else "One rank holds every expert: no all-to-all.")
        self.summary.value = (
            f"<div style='font-size:0.9em'>Router skew {v.skew:g} after {balance}: the busiest expert gets "
            f"<b>{s.imbalance:.2f}x</b> the mean load.<br>{cap}; <b>{s.dropped_total:,}</b> dropped "
            f"({s.drop_fraction:.1%}), {s.tokens_unserved:,} tokens lose every expert (residual only).<br>"
            f"{sent}</div>")


def _legend_html() -> str:
    """The pictures' legend, under them."""
    return (f"<small>load: <span style='background:{KEPT_COLOR};color:#fff'>&nbsp;kept&nbsp;</span> "
            f"<span style='background:{DROPPED_COLOR};color:#fff'>&nbsp;dropped&nbsp;</span> "
            "<b>- -</b> capacity, <b>&middot;&middot;&middot;</b> mean load; the strip under the bars: the rank "
            "holding each expert.<br>all-to-all: solid bars sent, hatched received (to and from the other ranks); "
            "<b>- -</b> what each rank sends under uniform routing.</small>")


def _cf_label(c) -> str:
    return "∞" if c is None else f"{c:g}"
