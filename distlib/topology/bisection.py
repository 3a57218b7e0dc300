"""Bisections of a :mod:`distlib.topology` network: the fewest links that split the hosts in half.

:meth:`Topology.bisection <distlib.topology.Topology.bisection>` checks its
arguments and asks :func:`_bisect` for a cut by one of four methods:

* **exact**: a mixed-integer program over which side every node is on
  (scipy's HiGHS), optimal, for small graphs;
* **closed form**: where the minimum is a proven formula (ring, hypercube, a
  torus with an even side, a fat-tree without oversubscription), the cut that
  attains it (the *witness*), its links counted on the graph;
* **upper bound**: a natural cut (half the pods, groups or nodes; for a
  dragonfly the best of many half-the-groups cuts), switches placed on the
  best side by a minimum s-t cut;
* **Kernighan-Lin** local search from that cut (direct networks only).

The hosts split into halves of ``floor(P/2)`` and ``ceil(P/2)``; switches may
go to either side.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import networkx as nx
import numpy as np

from .paths import _index

__all__ = ["Bisection"]

#: Exact bisection (MILP) is tried by default up to this many graph nodes.
_EXACT_NODE_LIMIT = 40


@dataclass(frozen=True)
class Bisection:
    """A bisection of the hosts and how it was found.

    Attributes
    ----------
    links : int
        Links crossing the cut.
    bandwidth : float or None
        Sum of the cut links' ``bandwidth`` attributes (bytes/s, one
        direction) when every link has one (the ``"dgx"`` kind), else None.
    method : str
        How the value was obtained, e.g. ``"exact (MILP)"``,
        ``"closed form (proven), witness cut counted on the graph"`` or
        ``"upper bound (...)"``.
    exact : bool
        True when ``links`` is the proven minimum (or the value the closed
        form proves minimal), False for an upper bound.
    side : frozenset
        The hosts on one side of the cut.
    """

    links: int
    bandwidth: float | None
    method: str
    exact: bool
    side: frozenset


# --------------------------------------------------------------------------
# Choosing a method
# --------------------------------------------------------------------------


def _auto_method(topo, weight: str) -> str:
    """What ``method="auto"`` means for ``topo``: exact up to 40 graph nodes, else a proven
    closed form (links only), else the upper bound."""
    if topo.graph.number_of_nodes() <= _EXACT_NODE_LIMIT:
        return "exact"
    return "closed_form" if topo.bisection_proven and weight == "links" else "upper_bound"


def _bisect(topo, method: str, *, weight: str, time_limit: float) -> Bisection:
    """The bisection of ``topo`` by one method (arguments checked by ``Topology.bisection``)."""
    if method == "exact":
        return _exact_bisection(topo, weight=weight, time_limit=time_limit)
    if method == "closed_form":
        return _closed_form_bisection(topo, weight=weight)
    if method == "upper_bound":
        return _upper_bound_bisection(topo, weight=weight)
    if not topo.direct:
        raise ValueError("method='kl' works on direct networks (no switches) only; "
                         f"{topo.kind} has switches")
    return _kl_bisection(topo)


def _closed_form_bisection(topo, *, weight: str) -> Bisection:
    """The witness cut of a proven formula, its links counted on the graph."""
    if not (topo.bisection_proven and weight == "links"):
        raise ValueError(
            f"method='closed_form' needs a proven bisection formula for weight={weight!r}; "
            f"{topo!r} has none (use 'exact' or 'upper_bound')")
    side = _witness_side(topo)
    if topo.kind == "fat_tree":  # the witness places every switch too
        links, bw = _cut_value_fixed(topo.graph, side)
    else:
        links, bw = _cut_value(topo.graph, side, topo.hosts, weight=weight)
    return Bisection(links, bw, "closed form (proven), witness cut counted on the graph", True,
                     frozenset(h for h in topo.hosts if h in side))


def _upper_bound_bisection(topo, *, weight: str) -> Bisection:
    """A natural cut (for a dragonfly, the best half-the-groups cut), counted on the graph."""
    if topo.kind == "dragonfly" and weight == "links":
        side = _dragonfly_best_group_cut(topo)
        links, bw = _cut_value_fixed(topo.graph, side)
        how = "upper bound (best of the half-the-groups cuts)"
    else:
        side = _witness_side(topo)
        links, bw = _cut_value(topo.graph, side, topo.hosts, weight=weight)
        how = "upper bound (natural cut, switches placed by min s-t cut)"
    return Bisection(links, bw, how, False, frozenset(h for h in topo.hosts if h in side))


# --------------------------------------------------------------------------
# Cuts
# --------------------------------------------------------------------------


def _cut_value(graph, side, hosts, *, weight="links"):
    """Links and bandwidth crossing the cut ``side`` vs the rest.

    ``side`` fixes the hosts (and any switches it lists); the other switches
    are put on whichever side minimises the cut, by a minimum s-t cut.
    """
    host_set = set(hosts)
    side = set(side)
    free = [v for v in graph if v not in host_set and v not in side]
    if free:
        fixed_a = side
        fixed_b = {v for v in graph if v not in side and v not in free}
        side = _place_switches(graph, fixed_a, fixed_b, weight=weight)
    return _cut_value_fixed(graph, side)


def _place_switches(graph, fixed_a, fixed_b, *, weight="links") -> set:
    """Side A after putting every free node where it minimises the cut (min s-t cut)."""
    flow = nx.Graph()
    big = 0.0
    for u, v, data in graph.edges(data=True):
        cap = 1.0 if weight == "links" else float(data["bandwidth"])
        big += cap
        flow.add_edge(u, v, capacity=cap)
    src, dst = ("__s__",), ("__t__",)
    for v in fixed_a:
        flow.add_edge(src, v, capacity=2 * big + 1)
    for v in fixed_b:
        flow.add_edge(v, dst, capacity=2 * big + 1)
    _, (reach, _) = nx.minimum_cut(flow, src, dst)
    return {v for v in reach if v != src}


def _witness_side(topo) -> set:
    """A natural balanced cut: a torus across its best even side, half the pods, ...

    Returns side A: always its hosts, and for a fat-tree also its switches
    (pods ``< k/2`` and all cores). Other switches are placed by min cut.
    """
    hosts = topo.hosts
    half = len(hosts) // 2
    if topo.kind == "torus":
        dims = topo.size["dims"]
        P = len(hosts)

        def cost(axis):
            n = dims[axis]
            return (P // n) * (2 if n >= 3 else 1) if n % 2 == 0 else math.inf

        axis = min(range(len(dims)), key=lambda i: (cost(i), -dims[i]))
        if cost(axis) == math.inf:  # all sides odd: slab of the largest side plus part of a plane
            axis = max(range(len(dims)), key=lambda i: dims[i])
        ordered = sorted(hosts, key=lambda v: (v[axis],) + tuple(v[:axis]) + tuple(v[axis + 1:]))
        return set(ordered[:half])
    if topo.kind == "hypercube":
        d = topo.size["d"]
        return {v for v in hosts if not (v >> (d - 1)) & 1}
    if topo.kind == "fat_tree":
        k = topo.size["k"]
        return {v for v in topo.graph if (v[0] == "core") or (v[1] < k // 2)}
    return set(hosts[:half])


def _dragonfly_best_group_cut(topo, *, max_candidates: int = 2000) -> set:
    """Best of many "half the groups" cuts of a dragonfly (an upper bound).

    Side A takes ``floor(P/2) // (a p)`` whole groups, cyclically consecutive
    from every starting group, and tops up with the hosts of some routers of
    one more group (every choice of those routers, up to ``max_candidates``
    cuts in all). A router starts on the side of most of its hosts, then
    routers move across while that cuts fewer links. Exact search on small
    dragonflies finds the same value (the tests check it).
    """
    a, p, h = topo.size["a"], topo.size["p"], topo.size["h"]
    groups = a * h + 1
    g = topo.graph
    nodes, idx = _index(g)
    edges = np.array([(idx[u], idx[v]) for u, v in g.edges], dtype=np.int64)
    half = topo.n_hosts // 2
    full, rest = divmod(half, a * p)
    host_idx = {(G, r): [idx[("host", G, r, j)] for j in range(p)] for G in range(groups) for r in range(a)}
    best_cut, best_side = None, None
    count = 0
    for start in range(groups):
        chosen = [(start + i) % groups for i in range(full)]
        extra_groups = [G for G in range(groups) if G not in chosen] if rest else [None]
        for m in extra_groups:
            router_sets = itertools.combinations(range(a), -(-rest // p)) if m is not None else [()]
            for routers in router_sets:
                side = np.zeros(len(nodes), dtype=bool)
                for G in chosen:
                    for r in range(a):
                        side[host_idx[(G, r)]] = True
                        side[idx[("router", G, r)]] = True
                left = rest
                for r in routers:
                    take = min(left, p)
                    side[host_idx[(m, r)][:take]] = True
                    if 2 * take >= p:
                        side[idx[("router", m, r)]] = True
                    left -= take
                cut = int(np.count_nonzero(side[edges[:, 0]] != side[edges[:, 1]]))
                if best_cut is None or cut < best_cut:
                    best_cut, best_side = cut, side
                count += 1
                if count >= max_candidates:
                    break
            if count >= max_candidates:
                break
        if count >= max_candidates:
            break
    # switches are free: move any router whose neighbours mostly sit across the cut
    side = best_side.copy()
    routers = [idx[v] for v in topo.switches]
    improved = True
    while improved:
        improved = False
        for r in routers:
            nbrs = [idx[u] for u in g[nodes[r]]]
            same = int(np.count_nonzero(side[nbrs] == side[r]))
            if len(nbrs) - same > same:
                side[r] = not side[r]
                improved = True
    return {nodes[i] for i in np.flatnonzero(side)}


def _exact_bisection(topo, *, weight: str = "links", time_limit: float) -> Bisection:
    """Minimum bisection by a mixed-integer program (HiGHS via scipy)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    graph = topo.graph
    nodes, idx = _index(graph)
    edges = list(graph.edges)
    n, m = len(nodes), len(edges)
    P = topo.n_hosts
    if P < 2:
        return Bisection(0, None, "exact (trivial)", True, frozenset())
    # variables: x_v (side, binary) for every node, then y_e (edge cut, continuous in [0, 1])
    if weight == "links":
        w = np.ones(m)
    else:
        w = np.array([graph.edges[e]["bandwidth"] for e in edges], dtype=float)
        w = w / w.min()  # keep the objective well scaled
    c = np.concatenate([np.zeros(n), w])
    rows, cols, vals = [], [], []
    for e, (u, v) in enumerate(edges):
        iu, iv = idx[u], idx[v]
        # y_e - x_u + x_v >= 0  and  y_e + x_u - x_v >= 0
        rows += [2 * e] * 3 + [2 * e + 1] * 3
        cols += [n + e, iu, iv, n + e, iu, iv]
        vals += [1, -1, 1, 1, 1, -1]
    host_row = 2 * m
    for h in topo.hosts:
        rows.append(host_row)
        cols.append(idx[h])
        vals.append(1)
    A = coo_matrix((vals, (rows, cols)), shape=(2 * m + 1, n + m)).tocsr()
    lb = np.concatenate([np.zeros(2 * m), [P // 2]])
    ub = np.concatenate([np.full(2 * m, np.inf), [P - P // 2]])
    lo = np.zeros(n + m)
    hi = np.ones(n + m)
    hi[idx[topo.hosts[0]]] = 0  # symmetry: the first host is on side 0
    integrality = np.concatenate([np.ones(n), np.zeros(m)])
    res = milp(c, constraints=LinearConstraint(A, lb, ub), integrality=integrality,
               bounds=Bounds(lo, hi), options={"time_limit": time_limit})
    if res.x is None:
        raise RuntimeError(f"the bisection MILP found no solution within {time_limit} s: {res.message}")
    x = np.round(res.x[:n]).astype(bool)
    side = {nodes[i] for i in range(n) if x[i]}
    links, bw = _cut_value_fixed(graph, side)
    exact = res.status == 0
    method = "exact (MILP)" if exact else f"upper bound (MILP stopped after {time_limit:g} s)"
    if weight == "bandwidth":
        method += ", minimising bandwidth cut"
    return Bisection(links, bw, method, exact, frozenset(h for h in topo.hosts if h in side))


def _cut_value_fixed(graph, side):
    links, bw, has_bw = 0, 0.0, True
    for u, v, data in graph.edges(data=True):
        if (u in side) != (v in side):
            links += 1
            b = data.get("bandwidth")
            if b is None:
                has_bw = False
            else:
                bw += b
    return links, (bw if has_bw else None)


def _kl_bisection(topo) -> Bisection:
    from networkx.algorithms.community import kernighan_lin_bisection

    start = _witness_side(topo)
    rest = set(topo.hosts) - start
    a, b = kernighan_lin_bisection(topo.graph, partition=(start, rest), seed=0)
    links, bw = _cut_value_fixed(topo.graph, set(a))
    return Bisection(links, bw, "upper bound (Kernighan-Lin)", False, frozenset(a))
