"""Topology drawings: every link is visible, none runs through a node it does not join."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

import distlib as dl
from distlib.plots.topology import _wraps, draw_topology, layout


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
