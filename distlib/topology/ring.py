"""A ring laid on a :mod:`distlib.topology` network: host orders and the link loads they cause.

:func:`ring_order` picks a host order whose ring neighbours are close (a
Hamiltonian cycle of a torus, a Gray code on a hypercube, switch by switch
elsewhere); :func:`crossing_ring_order` picks the worst one, alternating
between the two halves of a bisection; :func:`ring_link_loads` routes every
ring message over the graph and counts how many share each link direction
(:class:`RingLoads`).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from .._check import check_choice
from .network import Topology
from .paths import _ecmp_fractions

__all__ = ["RingLoads", "ring_order", "crossing_ring_order", "ring_link_loads"]


@dataclass
class RingLoads:
    """A ring's neighbour-to-neighbour messages routed over the network.

    Attributes
    ----------
    order : list
        The hosts in ring order; host ``order[i]`` sends to ``order[i+1]``
        (and the last to the first).
    routes : list of list
        The node path each of the ``p`` messages takes.
    loads : dict
        ``(u, v) -> messages`` crossing the link from ``u`` to ``v`` in one
        ring step (directed: links are full duplex).
    """

    order: list
    routes: list
    loads: dict

    @property
    def max_load(self) -> float:
        """Congestion: the most messages sharing one link direction in a step.

        A ring step then takes ``max_load`` times as long as one message on an
        idle link (in the bandwidth-bound regime).
        """
        return max(self.loads.values(), default=0)

    @property
    def hops(self) -> list:
        """Links each message crosses."""
        return [len(r) - 1 for r in self.routes]

    def edge_loads(self) -> dict:
        """Undirected link -> the larger of its two directions' loads (for drawing)."""
        out: dict = {}
        for (u, v), load in self.loads.items():
            key = (u, v) if (v, u) not in out else (v, u)
            out[key] = max(out.get(key, 0), load)
        return out


def ring_order(topo: Topology) -> list:
    """A host order for a ring all-reduce that keeps ring neighbours close.

    * ring: ``0, 1, ..., p-1``;
    * torus: a Hamiltonian cycle (every ring neighbour is one link away),
      built recursively: snake through columns ``1..L-1`` of an
      ``n_0 x L`` grid whose columns follow a Hamiltonian cycle of the
      remaining dimensions, then come back up column ``0``; it exists for
      every side length, odd or even;
    * hypercube: the reflected binary Gray code ``i ^ (i >> 1)`` (neighbours
      differ in one bit);
    * fat-tree, dragonfly: hosts in order (edge switch by edge switch, pod by
      pod; router by router, group by group), so most neighbours share a
      switch;
    * dgx: node by node, each node entered and left on the same rail as its
      neighbour nodes (node ``j`` starts at GPU ``-j mod 8``), so the hop
      between nodes goes GPU - leaf - GPU.

    Examples
    --------
    >>> from distlib.topology import topology
    >>> ring_order(topology("hypercube", d=3))
    [0, 1, 3, 2, 6, 7, 5, 4]
    >>> ring_link_loads(topology("torus", dims=(3, 5))).max_load
    1
    """
    if not isinstance(topo, Topology):
        raise TypeError(f"topo must be a Topology from distlib.topology(), got {type(topo).__name__}")
    if topo.kind == "torus":
        return _torus_cycle(topo.size["dims"])
    if topo.kind == "hypercube":
        return [i ^ (i >> 1) for i in range(2 ** topo.size["d"])]
    if topo.kind == "dgx":
        nodes, gpn = topo.size["nodes"], topo.size["gpus_per_node"]
        order = []
        for n in range(nodes):
            start = (-n) % gpn
            order += [("gpu", n, (start + i) % gpn) for i in range(gpn)]
        return order
    return list(topo.hosts)


def _torus_cycle(dims) -> list:
    if len(dims) == 1:
        return [(i,) for i in range(dims[0])]
    m = dims[0]
    cols = _torus_cycle(dims[1:])
    L = len(cols)
    seq = []
    for i in range(m):
        js = range(1, L) if i % 2 == 0 else range(L - 1, 0, -1)
        seq += [(i,) + cols[j] for j in js]
    seq += [(i,) + cols[0] for i in range(m - 1, -1, -1)]
    start = seq.index((0,) + cols[0])
    return seq[start:] + seq[:start]


def crossing_ring_order(topo: Topology, *, method: str = "auto") -> list:
    """A worst-case ring: hosts alternate between the two halves of a bisection.

    Take the cut that :meth:`Topology.bisection` finds (sides ``A`` and
    ``B``) and order the hosts ``A[0], B[0], A[1], B[1], ...`` (any hosts
    left over when ``P`` is odd go last). Nearly every ring message then
    crosses the cut: with ``P`` even, ``P/2`` messages go from ``A`` to ``B``
    in every step, over at most ``b`` link directions for ``b`` links in the
    cut. Whatever the routing, some link direction carries at least

        P / (2 b)

    messages per step, so a bandwidth-bound ring step runs at least that many
    times slower than on idle links. A full-bisection network (``b = P/2``)
    can keep this at 1; a torus or an oversubscribed fat-tree cannot. When
    the bisection is only an upper bound, ``P / (2 b)`` is still a valid
    lower bound on the congestion.

    Parameters
    ----------
    topo : Topology
    method : str
        Passed to :meth:`Topology.bisection`.

    Examples
    --------
    On a 4 x 8 torus the bisection is 8 links, so 32 hosts need >= 32/16 = 2:

    >>> from distlib.topology import topology
    >>> t = topology("torus", dims=(4, 8))
    >>> ring_link_loads(t, crossing_ring_order(t), routing="ecmp").max_load >= 32 / (2 * t.bisection_links())
    True
    >>> ring_link_loads(t).max_load        # the topology-aware ring of ring_order()
    1
    """
    if not isinstance(topo, Topology):
        raise TypeError(f"topo must be a Topology from distlib.topology(), got {type(topo).__name__}")
    side = topo.bisection(method=method).side
    a = [h for h in topo.hosts if h in side]
    b = [h for h in topo.hosts if h not in side]
    order = [h for pair in zip(a, b) for h in pair]
    return order + a[len(b):] + b[len(a):]


def ring_link_loads(topo: Topology, order=None, *, routing: str = "shortest") -> RingLoads:
    """Route every ring message over the network and count link loads.

    In each step of a ring all-reduce, host ``order[i]`` sends one chunk to
    ``order[i + 1]`` (cyclically). Each message follows a shortest path;
    ``loads[(u, v)]`` counts messages crossing link ``u -> v`` in one step.
    The maximum is the congestion: the step runs that many times slower than
    on dedicated links.

    Parameters
    ----------
    topo : Topology
    order : list, optional
        Hosts in ring order; default :func:`ring_order`.
    routing : {"shortest", "ecmp"}
        ``"shortest"``: one shortest path per message (networkx's, which
        is deterministic). ``"ecmp"``: each message split evenly over *all*
        shortest paths, as equal-cost multi-path routing does on average;
        loads become fractions. ECMP costs a BFS per message: use it on
        small networks.

    Examples
    --------
    A row-major order on a 4x4 torus sends the four row ends two hops; the
    cycle from :func:`ring_order` uses one hop per message:

    >>> from distlib.topology import topology
    >>> t = topology("torus", dims=(4, 4))
    >>> ring_link_loads(t, t.hosts).hops.count(2)
    4
    >>> set(ring_link_loads(t).hops)
    {1}
    """
    if not isinstance(topo, Topology):
        raise TypeError(f"topo must be a Topology from distlib.topology(), got {type(topo).__name__}")
    routing = check_choice("routing", routing, ["shortest", "ecmp"])
    order = ring_order(topo) if order is None else list(order)
    host_set = set(topo.hosts)
    if len(order) != len(host_set) or set(order) != host_set:
        raise ValueError(f"order must list every host exactly once ({len(host_set)} hosts), "
                         f"got {len(order)} entries")
    g = topo.graph
    loads: dict = {}
    routes = []
    p = len(order)
    if p < 2:
        return RingLoads(order, [], {})
    for i in range(p):
        s, t = order[i], order[(i + 1) % p]
        if routing == "shortest":
            path = nx.shortest_path(g, s, t)
            routes.append(path)
            for u, v in zip(path, path[1:]):
                loads[(u, v)] = loads.get((u, v), 0) + 1
        else:
            path = nx.shortest_path(g, s, t)
            routes.append(path)
            for (u, v), frac in _ecmp_fractions(g, s, t).items():
                loads[(u, v)] = loads.get((u, v), 0.0) + frac
    return RingLoads(order, routes, loads)

