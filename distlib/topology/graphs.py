"""The networks of :mod:`distlib.topology` as graphs: each kind, its size arguments, its builder.

One builder per kind returns ``(size, graph, hosts)``: the checked size
arguments, a :class:`networkx.Graph` whose nodes carry ``kind`` (``"host"`` or
``"switch"``) and ``level`` (0 for hosts, 1, 2, 3 for switch tiers), and the
hosts in a canonical order. :func:`distlib.topology.topology` wraps them in a
:class:`~distlib.topology.Topology`; the conventions (hops are links, direct
networks have no switches, a side of 2 is one link) are in :mod:`distlib.topology`.
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np

from .._check import check_int, check_real
from ..units import gbit_to_bytes_per_s

__all__ = ["TOPOLOGY_KINDS", "H100_NVLINK_BANDWIDTH", "NDR_NIC_BANDWIDTH", "SIZE_ARGUMENTS", "GRAPH_BUILDERS"]

TOPOLOGY_KINDS = ("ring", "torus", "hypercube", "fat_tree", "dragonfly", "dgx")

#: H100 SXM NVLink 4, per GPU, one direction: 18 links x 25 GB/s = 450 GB/s
#: ("900 GB/s" in NVIDIA's material is both directions added).
#: Source: https://www.nvidia.com/en-us/data-center/nvlink/
H100_NVLINK_BANDWIDTH = 450e9

#: One NDR InfiniBand port (ConnectX-7, 400 Gb/s), one direction: 50 GB/s.
#: A DGX H100 has eight, one per GPU, for the compute fabric. Source: NVIDIA DGX
#: BasePOD reference architecture, "Core Components" (docs.nvidia.com/dgx-basepod/
#: reference-architecture-infrastructure-foundation-enterprise-ai/latest/core-components.html)
NDR_NIC_BANDWIDTH = gbit_to_bytes_per_s(400)


#: The size arguments of each kind: ``kind -> (required names, {optional name: default})``.
SIZE_ARGUMENTS = {
    "ring": (("p",), {}),
    "torus": (("dims",), {}),
    "hypercube": (("d",), {}),
    "fat_tree": (("k",), {"oversubscription": 1}),
    "dragonfly": (("a", "p", "h"), {}),
    "dgx": (("nodes",), {"gpus_per_node": 8, "nvlink_bandwidth": H100_NVLINK_BANDWIDTH,
                         "nic_bandwidth": NDR_NIC_BANDWIDTH}),
}


def _new_graph() -> nx.Graph:
    return nx.Graph()


def _add_host(g, name, **attrs):
    g.add_node(name, kind="host", level=0, **attrs)


def _add_switch(g, name, level, **attrs):
    g.add_node(name, kind="switch", level=level, **attrs)


def _ring(p) -> tuple:
    p = check_int("p", p, minimum=2)
    g = _new_graph()
    for i in range(p):
        _add_host(g, i)
    for i in range(p):
        g.add_edge(i, (i + 1) % p)
    return {"p": p}, g, list(range(p))


def _check_dims(dims) -> tuple:
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        dims = (dims,)
    try:
        dims = tuple(dims)
    except TypeError:
        raise TypeError(f"dims must be a tuple of side lengths such as (4, 4), got {dims!r}") from None
    if not dims:
        raise ValueError("dims must have at least one side length, got ()")
    return tuple(check_int(f"dims[{i}]", n, minimum=2) for i, n in enumerate(dims))


def _torus(dims) -> tuple:
    dims = _check_dims(dims)
    g = _new_graph()
    nodes = list(itertools.product(*[range(n) for n in dims]))
    for v in nodes:
        _add_host(g, v)
    for v in nodes:
        for axis, n in enumerate(dims):
            u = list(v)
            u[axis] = (v[axis] + 1) % n
            g.add_edge(v, tuple(u))
    return {"dims": dims}, g, nodes


def _hypercube(d) -> tuple:
    d = check_int("d", d, minimum=1, maximum=24)
    n = 2 ** d
    g = _new_graph()
    for v in range(n):
        _add_host(g, v)
    for v in range(n):
        for b in range(d):
            u = v ^ (1 << b)
            if u > v:
                g.add_edge(v, u)
    return {"d": d}, g, list(range(n))


def _fat_tree(k, oversubscription=1) -> tuple:
    k = check_int("k", k, minimum=2)
    if k % 2:
        raise ValueError(f"k must be an even integer >= 2 (k-port switches, k/2 down and k/2 up), got {k}")
    r = check_int("oversubscription", oversubscription, minimum=1)
    half = k // 2
    if half % r:
        divisors = [q for q in range(1, half + 1) if half % q == 0]
        raise ValueError(f"oversubscription must divide k/2 = {half} (one of {divisors}), got {r}")
    up = half // r  # uplinks per aggregation switch
    g = _new_graph()
    hosts = []
    for pod in range(k):
        for e in range(half):
            _add_switch(g, ("edge", pod, e), 1)
            for i in range(half):
                h = ("host", pod, e, i)
                _add_host(g, h)
                hosts.append(h)
                g.add_edge(h, ("edge", pod, e))
        for a in range(half):
            _add_switch(g, ("agg", pod, a), 2)
            for e in range(half):
                g.add_edge(("edge", pod, e), ("agg", pod, a))
    for a in range(half):
        for j in range(up):
            core = ("core", a, j)
            _add_switch(g, core, 3)
            for pod in range(k):
                g.add_edge(("agg", pod, a), core)
    return {"k": k, "oversubscription": r}, g, hosts


def _dragonfly(a, p, h) -> tuple:
    a = check_int("a", a, minimum=1)
    p = check_int("p", p, minimum=1)
    h = check_int("h", h, minimum=1)
    groups = a * h + 1
    g = _new_graph()
    hosts = []
    for grp in range(groups):
        for r in range(a):
            router = ("router", grp, r)
            _add_switch(g, router, 1, group=grp)
            for j in range(p):
                host = ("host", grp, r, j)
                _add_host(g, host, group=grp)
                hosts.append(host)
                g.add_edge(host, router, link="terminal")
        for r1, r2 in itertools.combinations(range(a), 2):
            g.add_edge(("router", grp, r1), ("router", grp, r2), link="local")
    for grp in range(groups):
        for port in range(a * h):
            other = (grp + port + 1) % groups
            if other > grp:
                back = (grp - other - 1) % groups  # the port of `other` that points back
                g.add_edge(("router", grp, port // h), ("router", other, back // h), link="global")
    return {"a": a, "p": p, "h": h}, g, hosts


def _dgx(nodes, gpus_per_node=8, nvlink_bandwidth=H100_NVLINK_BANDWIDTH, nic_bandwidth=NDR_NIC_BANDWIDTH) -> tuple:
    nodes = check_int("nodes", nodes, minimum=1)
    gpn = check_int("gpus_per_node", gpus_per_node, minimum=1)
    nvbw = check_real("nvlink_bandwidth", nvlink_bandwidth, minimum=0, strict_min=True)
    nicbw = check_real("nic_bandwidth", nic_bandwidth, minimum=0, strict_min=True)
    g = _new_graph()
    hosts = []
    for n in range(nodes):
        sw = ("nvswitch", n)
        _add_switch(g, sw, 1, node=n)
        for i in range(gpn):
            gpu = ("gpu", n, i)
            _add_host(g, gpu, node=n)
            hosts.append(gpu)
            g.add_edge(gpu, sw, bandwidth=nvbw, link="nvlink")
    if nodes > 1:
        for i in range(gpn):
            _add_switch(g, ("leaf", i), 2)
            for n in range(nodes):
                g.add_edge(("gpu", n, i), ("leaf", i), bandwidth=nicbw, link="infiniband")
        for s in range(nodes):
            _add_switch(g, ("spine", s), 3)
            for i in range(gpn):
                g.add_edge(("leaf", i), ("spine", s), bandwidth=nicbw, link="infiniband")
    size = {"nodes": nodes, "gpus_per_node": gpn, "nvlink_bandwidth": nvbw, "nic_bandwidth": nicbw}
    return size, g, hosts


#: ``kind -> builder``: each takes the size arguments and returns ``(size, graph, hosts)``.
GRAPH_BUILDERS = {"ring": _ring, "torus": _torus, "hypercube": _hypercube, "fat_tree": _fat_tree,
                  "dragonfly": _dragonfly, "dgx": _dgx}
