"""The textbook formulas of :mod:`distlib.topology`: a network's metrics without building it.

:class:`Metrics` holds the numbers a topology comparison table shows, and
:func:`topology_closed_form` gives them by formula, one function per kind;
:meth:`Topology.metrics <distlib.topology.Topology.metrics>` measures the same
numbers on the graph, and the tests check one against the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._check import check_choice, check_int
from .graphs import SIZE_ARGUMENTS, TOPOLOGY_KINDS, _check_dims

__all__ = ["Metrics", "topology_closed_form"]


@dataclass(frozen=True)
class Metrics:
    """The numbers a topology comparison table shows.

    Attributes
    ----------
    hosts, switches, links : int
        Counts of endpoints, switch nodes, and links (graph edges).
    degree : int
        Router radix: the most ports any routing element uses (a switch, or a
        host of a direct network).
    diameter : int or None
        Largest host-to-host hop count (links crossed).
    bisection_links : int or None
        Fewest links cut by splitting the hosts in two equal halves
        (``None`` where no closed form is known).
    links_per_host : float
        ``links / hosts``: cables per endpoint, a cost measure.
    ports_per_host : float
        Router ports per host: switch ports in use (indirect networks) or
        router ports of every host (direct networks), divided by ``hosts``.
    """

    hosts: int
    switches: int
    links: int
    degree: int
    diameter: int | None
    bisection_links: int | None
    links_per_host: float
    ports_per_host: float

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def topology_closed_form(kind: str, **size) -> Metrics:
    """The textbook formulas for a topology's metrics, without building it.

    Hop counts are links crossed host to host (see the module notes).
    ``bisection_links`` is ``None`` where no formula is proven (a torus whose
    sides are all odd; a dragonfly; an oversubscribed fat-tree has the
    formula ``k^3/(8r)``, checked by exact search at small sizes).

    ========== =============== ============================ ================== =========
    kind       hosts P         links                        diameter           bisection
    ========== =============== ============================ ================== =========
    ring       p               p                            floor(p/2)         2
    torus      prod n_i        P per side n_i >= 3          sum floor(n_i/2)   2P/n
    hypercube  2^d             d 2^(d-1)                    d                  2^(d-1)
    fat_tree   k^3/4           3k^3/4 (r = 1)               6                  k^3/(8r)
    dragonfly  a p g           P + g a(a-1)/2 + g(g-1)/2    5 (3 if a = 1)     --
    dgx        8 nodes         3P (P if one node)           4 (2 if one node)  --
    ========== =============== ============================ ================== =========

    (``g = a h + 1`` dragonfly groups; ``r`` the fat-tree oversubscription;
    the torus bisection ``n`` is its best even side.)

    Torus: a side of 2 adds ``P/2`` links (one per pair), a side ``n >= 3``
    adds ``P``; the bisection cuts across an even side ``n`` and costs
    ``2P/n`` links (``P/2`` if ``n = 2``), minimised over the even sides.

    Examples
    --------
    >>> m = topology_closed_form("torus", dims=(8, 8))
    >>> m.diameter, m.bisection_links            # 2*floor(8/2), 2*sqrt(P)
    (8, 16)
    >>> topology_closed_form("fat_tree", k=4).ports_per_host   # 5k^2/4 switches of k ports / (k^3/4)
    5.0
    """
    kind = check_choice("kind", kind, TOPOLOGY_KINDS)
    kind = check_choice("kind", kind, TOPOLOGY_KINDS)
    required, optional = SIZE_ARGUMENTS[kind]
    args = {**optional, **size}
    missing = [r for r in required if r not in size]
    if missing:
        raise ValueError(f"topology_closed_form {kind!r} needs {', '.join(missing)}")
    unknown = set(size) - set(required) - set(optional)
    if unknown:
        raise ValueError(f"topology_closed_form {kind!r} got unexpected {', '.join(sorted(unknown))}")
    return _FORMULAS[kind](**args)


def _metrics(hosts, switches, links, degree, diameter, bisection, ports) -> Metrics:
    return Metrics(hosts=hosts, switches=switches, links=links, degree=degree, diameter=diameter,
                   bisection_links=bisection, links_per_host=links / hosts, ports_per_host=ports / hosts)


def _ring(p) -> Metrics:
    p = check_int("p", p, minimum=2)
    links = p if p >= 3 else 1
    return _metrics(p, 0, links, 2 if p >= 3 else 1, p // 2, 2 if p >= 3 else 1, 2 * links)


def _torus(dims) -> Metrics:
    dims = _check_dims(dims)
    P = math.prod(dims)
    per_dim = [P if n >= 3 else P // 2 for n in dims]
    links = sum(per_dim)
    degree = sum(2 if n >= 3 else 1 for n in dims)
    diameter = sum(n // 2 for n in dims)
    even = [(P // n) * (2 if n >= 3 else 1) for n in dims if n % 2 == 0]
    return _metrics(P, 0, links, degree, diameter, min(even) if even else None, 2 * links)


def _hypercube(d) -> Metrics:
    d = check_int("d", d, minimum=1, maximum=24)
    P = 2 ** d
    return _metrics(P, 0, d * P // 2, d, d, P // 2, d * P)


def _fat_tree(k, oversubscription) -> Metrics:
    k = check_int("k", k, minimum=2)
    if k % 2:
        raise ValueError(f"k must be an even integer >= 2, got {k}")
    r = check_int("oversubscription", oversubscription, minimum=1)
    if (k // 2) % r:
        raise ValueError(f"oversubscription must divide k/2 = {k // 2}, got {r}")
    P = k ** 3 // 4
    cores = (k // 2) ** 2 // r
    up_links = k * (k // 2) * (k // 2 // r)
    links = P + P + up_links  # host-edge, edge-agg, agg-core
    switches = k * k + cores  # k pods x (k/2 edge + k/2 agg), plus cores
    ports = P * 2 + P + up_links * 2  # edge: k each; agg: k/2 + k/(2r); core: k each
    return _metrics(P, switches, links, k, 6, P // (2 * r), ports)


def _dragonfly(a, p, h) -> Metrics:
    a = check_int("a", a, minimum=1)
    p = check_int("p", p, minimum=1)
    h = check_int("h", h, minimum=1)
    groups = a * h + 1
    routers = a * groups
    P = routers * p
    links = P + groups * a * (a - 1) // 2 + groups * (groups - 1) // 2
    degree = p + (a - 1) + h
    diameter = 3 if a == 1 else 5
    return _metrics(P, routers, links, degree, diameter, None, routers * degree)


def _dgx(nodes, gpus_per_node, **bandwidths) -> Metrics:
    """(The link bandwidths change no count.)"""
    nodes = check_int("nodes", nodes, minimum=1)
    gpn = check_int("gpus_per_node", gpus_per_node, minimum=1)
    P = nodes * gpn
    if nodes == 1:
        return _metrics(P, 1, P, gpn, 2 if P > 1 else 0, None, P)
    links = P + P + gpn * nodes  # NVLink, NIC, leaf-spine
    switches = nodes + gpn + nodes
    degree = max(gpn, 2 * nodes)
    ports = P + (P + gpn * nodes) + gpn * nodes
    # GPU -> NVSwitch -> GPU is 2 hops; GPU -> leaf -> GPU on the same rail is 2;
    # different rail, different node: GPU-NVSwitch-GPU-leaf-GPU (4) or via spine (4).
    return _metrics(P, switches, links, degree, 4 if gpn > 1 else 2, None, ports)


#: ``kind -> formula``: each takes the size arguments and returns :class:`Metrics`.
_FORMULAS = {"ring": _ring, "torus": _torus, "hypercube": _hypercube, "fat_tree": _fat_tree,
             "dragonfly": _dragonfly, "dgx": _dgx}
