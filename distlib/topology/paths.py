"""Shortest paths on a :mod:`distlib.topology` graph: hop distances and equal-cost path shares.

``_host_eccentricity`` is the breadth-first search behind
:meth:`Topology.diameter <distlib.topology.Topology.diameter>` (scipy's sparse
BFS, many sources at once); ``_ecmp_fractions`` splits one message over every
shortest path, as equal-cost multi-path routing does on average
(:func:`distlib.topology.ring_link_loads` with ``routing="ecmp"``).
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

__all__: list = []  # private helpers of distlib.topology's parts


def _index(graph):
    nodes = list(graph.nodes)
    return nodes, {v: i for i, v in enumerate(nodes)}


def _csr(graph):
    from scipy.sparse import csr_matrix

    nodes, idx = _index(graph)
    edges = np.array([(idx[u], idx[v]) for u, v in graph.edges], dtype=np.int64).reshape(-1, 2)
    rows = np.concatenate([edges[:, 0], edges[:, 1]])
    cols = np.concatenate([edges[:, 1], edges[:, 0]])
    mat = csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(len(nodes), len(nodes)))
    return mat, idx


def _host_eccentricity(graph, sources, hosts) -> int:
    """Max over ``sources`` and ``hosts`` of the hop distance (BFS)."""
    if len(hosts) <= 1:
        return 0
    try:
        from scipy.sparse.csgraph import shortest_path
    except ImportError:  # pragma: no cover - scipy is in requirements.txt
        best = 0
        host_set = set(hosts)
        for s in sources:
            dist = nx.single_source_shortest_path_length(graph, s)
            if len(host_set - dist.keys()):
                raise ValueError("the network is disconnected")
            best = max(best, max(dist[h] for h in hosts))
        return best
    mat, idx = _csr(graph)
    host_idx = np.array([idx[h] for h in hosts])
    src_idx = np.array([idx[s] for s in sources])
    best = 0.0
    for start in range(0, len(src_idx), 256):
        dist = shortest_path(mat, method="D", unweighted=True, directed=False,
                             indices=src_idx[start:start + 256])
        worst = dist[:, host_idx].max()
        if not np.isfinite(worst):
            raise ValueError("the network is disconnected")
        best = max(best, worst)
    return int(best)


def _ecmp_fractions(g, s, t) -> dict:
    ds = nx.single_source_shortest_path_length(g, s)
    dt = nx.single_source_shortest_path_length(g, t)
    total = ds[t]
    # number of shortest paths from s to every node, and from every node to t
    sigma_s = {s: 1}
    for v in sorted(ds, key=ds.get):
        if v == s:
            continue
        sigma_s[v] = sum(sigma_s[u] for u in g[v] if ds.get(u) == ds[v] - 1)
    sigma_t = {t: 1}
    for v in sorted(dt, key=dt.get):
        if v == t:
            continue
        sigma_t[v] = sum(sigma_t[u] for u in g[v] if dt.get(u) == dt[v] - 1)
    paths = sigma_s[t]
    out = {}
    for u in ds:
        if ds[u] >= total:
            continue
        for v in g[u]:
            if ds[u] + 1 + dt.get(v, math.inf) == total:
                out[(u, v)] = sigma_s[u] * sigma_t[v] / paths
    return out
