"""Topology drawings: every link is visible, none runs through a node it does not join."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

import distlib as dl
from distlib.plots import topology as topo_plots
from distlib.plots.pictures import phone_copy, phone_spec
from distlib.plots.topology import _wraps, draw_topology, layout
from distlib.topology import ring_link_loads, topology


def _links_through_other_nodes(topo, tol=1e-3):
    """(u, v, w): node w lies on the drawn straight link u-v (wrap-around stubs excluded)."""
    pos = {v: np.asarray(p, dtype=float) for v, p in layout(topo).items()}
    scale = float(np.ptp(np.array(list(pos.values())), axis=0).max())
    bad = []
    for u, v in topo.graph.edges:
        if _wraps(topo, u, v):
            continue
        a, b = pos[u], pos[v]
        d = b - a
        for w, c in pos.items():
            if w in (u, v):
                continue
            t = np.clip((c - a) @ d / (d @ d), 0.0, 1.0)
            if np.hypot(*(a + t * d - c)) < tol * scale:
                bad.append((u, v, w))
    return bad


CASES = [("hypercube", dict(d=d)) for d in range(1, 7)] + [
    ("torus", dict(dims=(3, 3, 3))), ("torus", dict(dims=(4, 4, 4))), ("torus", dict(dims=(2, 3, 4))),
    ("torus", dict(dims=(5, 5))), ("ring", dict(p=9)), ("fat_tree", dict(k=4)), ("dgx", dict(nodes=3)),
]


@pytest.mark.parametrize("kind,size", CASES, ids=[f"{k}-{s}" for k, s in CASES])
def test_no_link_is_drawn_through_another_node(kind, size):
    assert _links_through_other_nodes(dl.topology(kind, **size)) == []


def test_nodes_get_distinct_positions():
    for kind, size in CASES:
        pos = layout(dl.topology(kind, **size))
        xy = np.round(np.array(list(pos.values())), 6)
        assert len({tuple(p) for p in xy}) == len(xy), (kind, size)


def test_wrap_links_are_the_torus_ends_only():
    t = dl.topology("torus", dims=(2, 3, 4))
    wraps = [(u, v) for u, v in t.graph.edges if _wraps(t, u, v)]
    # side 2: no wrap link; side 3: one per line of 3 (8 lines); side 4: one per line of 4 (6 lines)
    assert len(wraps) == 8 + 6
    assert not any(_wraps(dl.topology("ring", p=5), u, v) for u, v in dl.topology("ring", p=5).graph.edges)


def test_ring_over_a_3d_torus_marks_its_wrap_hops():
    t = dl.topology("torus", dims=(3, 3, 3))
    fig = Figure()
    ax = fig.add_subplot()
    art = draw_topology(ax, t, ring=True)
    loads = art["loads"]
    wrap_hops = sum(1 for r in loads.routes if _wraps(t, r[0], r[-1]))
    assert wrap_hops > 0
    # the ring's artists: one line collection for the arrows and one marker set for the wrap hops
    markers = [a for a in art["ring"] if hasattr(a, "get_xdata")]
    assert len(markers) == 1 and len(markers[0].get_xdata()) == 2 * wrap_hops


# ---- phone layout ------------------------------------------------------------

def _label_boxes(fig, ax):
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    return [t.get_window_extent(r) for t in ax.texts if t.get_visible()]


@pytest.mark.parametrize("nodes", [2, 3, 6])
@pytest.mark.parametrize("width_in", [3.42, 7.0])
def test_dgx_ring_numbers_never_overlap(nodes, width_in):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width_in, 3.8))
    topo_plots.draw_topology(ax, topology("dgx", nodes=nodes), ring=True)
    boxes = _label_boxes(fig, ax)
    plt.close(fig)
    assert boxes and boxes[0] is not None
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_two_dgx_nodes_show_every_ring_number_on_a_phone():
    import matplotlib.pyplot as plt
    from distlib.plots.pictures import render_pair

    fig, ax = plt.subplots(figsize=(7, 3.8))
    topo_plots.draw_topology(ax, topology("dgx", nodes=2), ring=True)
    phone = phone_copy(fig)  # as render_pair lays it out
    phone.set_size_inches(328 / 96, 3.8)
    labels = [t for t in phone.axes[0].texts if t.get_visible()]
    assert len(labels) == 16
    assert not any(a.overlaps(b) for i, a in enumerate(_label_boxes(phone, phone.axes[0]))
                   for b in _label_boxes(phone, phone.axes[0])[i + 1:])
    render_pair(fig)  # fits both widths
    plt.close("all")


def _gallery(kinds):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(7, 6.4))
    for ax, (kind, size) in zip(axes.flat, kinds):
        topo_plots.draw_topology(ax, topology(kind, **size))
    return fig


def _phone_columns(fig):
    phone = phone_copy(fig)
    return {round(ax.get_subplotspec().colspan.start) for ax in phone.axes}, phone


def test_small_drawings_stay_a_grid_on_a_phone():
    import matplotlib.pyplot as plt

    fig = _gallery([("ring", dict(p=8)), ("torus", dict(dims=(4, 4))), ("torus", dict(dims=(3, 3, 3))),
                    ("hypercube", dict(d=4))])
    cols, phone = _phone_columns(fig)
    assert cols == {0, 1}
    assert type(phone.get_layout_engine()).__name__ == "ConstrainedLayoutEngine"
    plt.close("all")


def test_wide_networks_and_histograms_stack_on_a_phone():
    import matplotlib.pyplot as plt

    fig = _gallery([("fat_tree", dict(k=4)), ("ring", dict(p=8)), ("dragonfly", dict(a=4, p=2, h=2)),
                    ("dgx", dict(nodes=2))])
    cols, phone = _phone_columns(fig)
    assert cols == {0}
    # reading order kept: the top-left drawing first, the bottom-right last
    order = [ax.get_subplotspec().rowspan.start for ax in phone.axes]
    assert order == [0, 1, 2, 3]
    assert phone_spec(fig).height > 2 * fig.get_size_inches()[1] * 96 / 2
    plt.close("all")

    t = topology("torus", dims=(4, 8))
    fig, (ax, hx) = plt.subplots(1, 2, figsize=(7, 3))
    loads = ring_link_loads(t)
    topo_plots.draw_topology(ax, t, ring=loads)
    topo_plots.plot_link_loads(hx, loads)
    cols, phone = _phone_columns(fig)
    assert cols == {0}
    plt.close("all")
