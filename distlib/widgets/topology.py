"""The network-topologies chapter's widget: pick a topology and a size, see its numbers.

Set ``kind.value`` and ``size.value`` (the size slider's meaning and range
follow the kind) and read ``topo``, ``metrics``, ``bisection`` and ``loads``.
"""

from __future__ import annotations

import html

import ipywidgets as w

from .._check import check_choice, check_int_grid
from ..topology import Bisection, Metrics, RingLoads, Topology, ring_link_loads, ring_order, topology
from ..plots.topology import clear_drawing, draw_topology
from ..fmt import fmt_rate
from ._base import CONTINUOUS_UPDATE, FigureImage, FigureWidget, StaticAxis, label_style

__all__ = ["TopologyWidget", "KIND_SPECS", "RING_ORDERS"]

# Dropdown key -> (label, slider label, min, max, step, default, builder(size) -> (kind, kwargs)).
# The ranges are capped so that building, measuring and drawing stay well under 50 ms.
KIND_SPECS = {
    "ring": ("ring", "hosts p", 3, 24, 1, 8, lambda s: ("ring", {"p": s})),
    "torus2": ("2D torus", "side n (n x n)", 2, 8, 1, 4, lambda s: ("torus", {"dims": (s, s)})),
    "torus3": ("3D torus", "side n (n x n x n)", 2, 4, 1, 3, lambda s: ("torus", {"dims": (s, s, s)})),
    "hypercube": ("hypercube", "dimension d", 1, 6, 1, 4, lambda s: ("hypercube", {"d": s})),
    "fat_tree": ("fat-tree", "switch ports k (even)", 2, 6, 2, 4, lambda s: ("fat_tree", {"k": s})),
    "dragonfly": ("dragonfly (a = 2h, p = h)", "global links per router h", 1, 2, 1, 1,
                  lambda s: ("dragonfly", {"a": 2 * s, "p": s, "h": s})),
    "dgx": ("DGX H100 cluster", "nodes (8 GPUs each)", 1, 6, 1, 2, lambda s: ("dgx", {"nodes": s})),
}


#: How the ring visits the hosts: ordered by the network, or in the hosts' own order.
RING_ORDERS = ("topology-aware", "host order")

_CACHE: dict = {}  # (kind, size, ring order) -> computed results; all deterministic


class TopologyWidget(FigureWidget):
    """Kind dropdown, size slider, ring-order toggle; the numbers and the drawing.

    Attributes
    ----------
    topo : Topology
    metrics : Metrics
    bisection : Bisection
        How it was found is in ``bisection.method`` (closed form where a
        proven formula exists, otherwise a labelled upper bound; the DGX
        cluster reports the bisection *bandwidth* cut).
    loads : RingLoads
        The ring's messages routed over the network.
    """

    #: the chapter's widget as the static-frame tests build it (its constructor's keywords)
    EXAMPLE = dict(kind="torus2", size=4)
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (
        ("unknown topology", dict(kind="mesh"), ValueError, "'ring', 'torus2'"),
        ("odd fat-tree radix", dict(kind="fat_tree", size=5), ValueError, "[2, 6] in steps of 2 for 'fat_tree'"),
        ("ring of one host", dict(kind="ring", size=1), ValueError, "[3, 24] for 'ring'"),
        ("negative torus side", dict(size=-4), ValueError, "[2, 8] for 'torus2'"),
        ("size as a string", dict(size="4"), TypeError, "[2, 8] for 'torus2'"),
        ("unknown ring order", dict(ring="random"), ValueError, "'topology-aware', 'host order'"),
    )

    def __init__(self, kind: str = "torus2", size: int | None = None, *, ring: str = "topology-aware"):
        # every argument checked before anything is built; the size's range follows the kind
        kind = check_choice("kind", kind, list(KIND_SPECS))
        _, slabel, lo, hi, step, default, _ = KIND_SPECS[kind]
        value = default if size is None else check_int_grid("size", size, minimum=lo, maximum=hi, step=step,
                                                            where=f" for {kind!r}")
        ring = check_choice("ring", ring, RING_ORDERS)
        style = label_style()
        self.kind = w.Dropdown(options=[(spec[0], key) for key, spec in KIND_SPECS.items()], value=kind,
                               description="topology", style=style)
        self.size = w.IntSlider(value=value, min=lo, max=hi, step=step, description=slabel, style=style,
                                continuous_update=CONTINUOUS_UPDATE)
        self.ring = w.ToggleButtons(options=list(RING_ORDERS), value=ring,
                                    description="ring order", style=style)
        self.fig = FigureImage(width=400, height=320)
        self.summary = self.table = w.HTML()
        self.topo: Topology | None = None
        self.metrics: Metrics | None = None
        self.bisection: Bisection | None = None
        self.loads: RingLoads | None = None
        self._busy = False
        self.controls = [self.kind, self.size, self.ring]
        self.kind.observe(self._on_kind, names="value")
        self._finish()

    def _layout(self, controls, picture, summary):
        return [controls, _side_by_side(picture, summary)]

    def _leaf_layout(self, image, summary):
        return _side_by_side(image, summary)

    def _static_layout(self, controls, tree):
        return [controls, tree]

    def static_axes(self):
        # every kind at every size the slider offers (the prose's torus 4 x 4 and 2-node DGX included)
        def sizes(chosen):
            _, _, lo, hi, step, _, _ = KIND_SPECS[chosen["kind"]]
            return range(lo, hi + 1, step)

        return [StaticAxis("kind", list(KIND_SPECS)),
                StaticAxis("size", sizes, local=True, description=lambda chosen: KIND_SPECS[chosen["kind"]][1]),
                StaticAxis("ring", list(RING_ORDERS))]

    def _on_kind(self, change):
        # runs before the base's observer (registered first), which then redraws once
        _, slabel, lo, hi, step, default, _ = KIND_SPECS[change["new"]]
        self._fit_size(slabel, lo, hi, step, default)

    def _fit_size(self, slabel, lo, hi, step, default):
        self._busy = True
        try:
            # widen first so that no intermediate (min, max, value) is invalid
            self.size.min = min(self.size.min, lo)
            self.size.max = max(self.size.max, hi)
            self.size.step = step
            self.size.value = default
            self.size.min, self.size.max = lo, hi
            self.size.description = slabel
        finally:
            self._busy = False

    def compute(self):
        """Build the current topology and measure it (no drawing); results are cached."""
        key = (self.kind.value, self.size.value, self.ring.value)
        if key not in _CACHE:
            _CACHE[key] = self._compute()
        return _CACHE[key]

    def _compute(self):
        kind, kwargs = KIND_SPECS[self.kind.value][6](self.size.value)
        topo = topology(kind, **kwargs)
        if kind == "dgx":
            bis = topo.bisection(method="upper_bound", weight="bandwidth")
        else:
            bis = topo.bisection(method="closed_form" if topo.bisection_proven else "upper_bound")
        metrics = Metrics(hosts=topo.n_hosts, switches=topo.n_switches, links=topo.n_links,
                          degree=topo.degree(), diameter=topo.diameter(), bisection_links=bis.links,
                          links_per_host=topo.links_per_host(), ports_per_host=topo.ports_per_host())
        order = ring_order(topo) if self.ring.value == "topology-aware" else list(topo.hosts)
        loads = ring_link_loads(topo, order)
        return topo, metrics, bis, loads

    def update(self):
        """Recompute and redraw for the current control values."""
        if self._busy:
            return
        self.topo, self.metrics, self.bisection, self.loads = self.compute()
        ax = self.fig.ax
        clear_drawing(ax)
        draw_topology(ax, self.topo, ring=self.loads, show_hosts=True)
        self.fig.render()
        self.table.value = self._table()

    def _table(self) -> str:
        m, b, L = self.metrics, self.bisection, self.loads
        if self.topo.kind == "dgx":
            bis = f"{fmt_rate(b.bandwidth)} one way ({b.links} links; upper bound: half the nodes)"
        else:
            bis = f"{b.links} links" + ("" if b.exact else " (upper bound)")
        rows = [
            ("hosts", m.hosts), ("switches", m.switches), ("links", m.links),
            ("router radix", m.degree), ("diameter (hops)", m.diameter), ("bisection", bis),
            ("links per host", f"{m.links_per_host:.2f}"), ("router ports per host", f"{m.ports_per_host:.2f}"),
            ("ring: longest hop", f"{max(L.hops)} links"), ("ring: congestion", f"{L.max_load:g} messages/link"),
        ]
        body = "".join(f"<tr><td style='padding-right:8px'>{html.escape(k)}</td>"
                       f"<td><b>{html.escape(str(v))}</b></td></tr>" for k, v in rows)
        return f"<table class='distlib-table' style='font-size:90%'>{body}</table>"


def _side_by_side(picture, table):
    """Drawing and numbers side by side where there is room, stacked on a phone."""
    return w.HBox([picture, table], layout=w.Layout(flex_flow="row wrap", align_items="flex-start",
                                                   max_width="100%"))
