"""Network topologies as graphs: diameter, bisection, cost, and a ring laid on top.

The chapter on network topologies teaches this module. ``topology(kind, ...)``
builds the network as a :class:`networkx.Graph` whose nodes carry
``kind="host"`` (a GPU or other endpoint) or ``kind="switch"``, and measures
it *on the graph*; :func:`topology_closed_form` gives the textbook formulas, and the
tests check one against the other, exactly, for every small size.

Conventions
-----------
* **Hops are links.** A host-to-host distance counts every link a message
  crosses, including the host's own link to its switch. In a fat-tree two
  hosts in different pods are 6 hops apart (host, edge, aggregation, core,
  aggregation, edge, host), not "4" (switch-to-switch links) or "5" (switches
  visited).
* **Direct networks** (ring, torus, hypercube) have no switch nodes: each host
  routes traffic itself, so its router ports are its graph degree.
* **Bisection** is the fewest links whose removal splits the *hosts* into two
  halves of equal size (sizes ``floor(P/2)`` and ``ceil(P/2)`` when ``P`` is
  odd); switches may go to either side. Multiply by the per-direction link
  bandwidth to get the bisection bandwidth.
* A side of length 2 in a torus (and a 2-rank ring) gives a single link
  between the two nodes, because the graph is simple: such a dimension
  behaves like a hypercube dimension. :func:`topology_closed_form` follows the same
  rule.

Kinds
-----
``"ring"`` (``p``), ``"torus"`` (``dims``), ``"hypercube"`` (``d``),
``"fat_tree"`` (``k``, ``oversubscription``), ``"dragonfly"`` (``a``, ``p``,
``h``) and ``"dgx"`` (``nodes``, ``gpus_per_node``, ``nvlink_bandwidth``,
``nic_bandwidth``). See :func:`topology` for each.

Sources: the fat-tree is the k-ary 3-level fat-tree of Al-Fares, Loukissas and
Vahdat, "A scalable, commodity data center network architecture", SIGCOMM
2008; the dragonfly is the balanced dragonfly of Kim, Dally, Scott and Abts,
"Technology-driven, highly-scalable dragonfly topology", ISCA 2008.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from ._check import check_choice, check_int, check_real
from .units import gbit_to_bytes_per_s

__all__ = [
    "TOPOLOGY_KINDS",
    "H100_NVLINK_BANDWIDTH",
    "NDR_NIC_BANDWIDTH",
    "Topology",
    "Metrics",
    "Bisection",
    "RingLoads",
    "topology",
    "topology_closed_form",
    "ring_order",
    "ring_link_loads",
    "crossing_ring_order",
]

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

# Graphs with at most this many hosts get a BFS from every host by default;
# larger ones use one BFS per symmetry class of hosts (see Topology.diameter).
_BFS_ALL_LIMIT = 2048
# Exact bisection (MILP) is tried by default up to this many graph nodes.
_EXACT_NODE_LIMIT = 40


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


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


# --------------------------------------------------------------------------
# The topology object
# --------------------------------------------------------------------------


@dataclass
class Topology:
    """A network: a graph of hosts and switches plus how it was built.

    Build one with :func:`topology`. Metrics are computed on ``graph`` and
    cached.

    Attributes
    ----------
    kind : str
        One of :data:`TOPOLOGY_KINDS`.
    size : dict
        The size arguments it was built with.
    graph : networkx.Graph
        Nodes have ``kind`` ("host"/"switch") and ``level`` (0 for hosts,
        1, 2, 3 for switch tiers, used for drawing).
    hosts : list
        The host nodes, in a canonical order (pod by pod, group by group, ...).
    """

    kind: str
    size: dict
    graph: nx.Graph
    hosts: list
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.size.items())
        return (f"Topology({self.kind!r}, {args}): {self.n_hosts} hosts, "
                f"{self.n_switches} switches, {self.n_links} links")

    # ---- counts and cost -------------------------------------------------
    @property
    def n_hosts(self) -> int:
        return len(self.hosts)

    @property
    def switches(self) -> list:
        return [n for n, k in self.graph.nodes(data="kind") if k == "switch"]

    @property
    def n_switches(self) -> int:
        return self.graph.number_of_nodes() - self.n_hosts

    @property
    def n_links(self) -> int:
        return self.graph.number_of_edges()

    @property
    def direct(self) -> bool:
        """True for networks without switches (hosts route traffic themselves)."""
        return self.n_switches == 0

    def degree(self) -> int:
        """Router radix: the most ports any switch (or, in a direct network, host) uses."""
        routers = self.hosts if self.direct else self.switches
        return max((self.graph.degree(n) for n in routers), default=0)

    def ports(self) -> int:
        """Router ports in use: switch ports, or every host's ports in a direct network."""
        routers = self.hosts if self.direct else self.switches
        return int(sum(self.graph.degree(n) for n in routers))

    def links_per_host(self) -> float:
        """Links (cables) per host: a first cost measure."""
        return self.n_links / self.n_hosts

    def ports_per_host(self) -> float:
        """Router ports per host: the other cost measure (switch silicon)."""
        return self.ports() / self.n_hosts

    # ---- diameter ----------------------------------------------------------
    def diameter(self, *, method: str = "auto") -> int:
        """Largest host-to-host hop count (links crossed), computed on the graph.

        Parameters
        ----------
        method : {"auto", "bfs", "symmetry"}
            ``"bfs"`` runs a breadth-first search from every host.
            ``"symmetry"`` runs it only from one host of each class that the
            network's automorphisms permute into each other: every host of a
            ring, torus, hypercube, fat-tree or DGX cluster looks the same
            (vertex- or host-transitive graphs), so one BFS is enough; in our
            dragonfly, shifting every group index by one is an automorphism,
            so one host per router of group 0 suffices. The tests check that
            both methods agree on every kind at small sizes. ``"auto"`` uses
            ``"bfs"`` up to 2048 hosts and ``"symmetry"`` above.

        Examples
        --------
        >>> topology("torus", dims=(4, 4)).diameter()     # 2 * floor(4/2)
        4
        >>> topology("fat_tree", k=4).diameter()          # host-edge-agg-core-agg-edge-host
        6
        """
        method = check_choice("method", method, ["auto", "bfs", "symmetry"])
        if method == "auto":
            method = "bfs" if self.n_hosts <= _BFS_ALL_LIMIT else "symmetry"
        key = ("diameter", method)
        if key not in self._cache:
            sources = self.hosts if method == "bfs" else self._representative_hosts()
            self._cache[key] = _host_eccentricity(self.graph, sources, self.hosts)
        return self._cache[key]

    def _representative_hosts(self) -> list:
        if self.kind == "dragonfly":
            a, p = self.size["a"], self.size["p"]
            return [("host", 0, r, 0) for r in range(a)] if p else []
        return self.hosts[:1]

    # ---- bisection ---------------------------------------------------------
    def bisection(self, *, method: str = "auto", weight: str = "links", time_limit: float = 10.0) -> Bisection:
        """The fewest links that split the hosts into two equal halves.

        Parameters
        ----------
        method : {"auto", "exact", "closed_form", "upper_bound", "kl"}
            ``"exact"``: a mixed-integer program (scipy's HiGHS) over which
            side every node is on; optimal, for small graphs.
            ``"closed_form"``: for kinds whose minimum bisection is a proven
            formula (ring; hypercube; a torus with an even side; a fat-tree
            without oversubscription) the cut that attains it is built and
            its links are counted on the graph; the tests check the count
            against exact search on every small size.
            ``"upper_bound"``: a natural cut (half the pods, groups or nodes;
            the switches then placed on the best side by a minimum s-t cut),
            counted on the graph. Never below the true minimum.
            ``"kl"``: Kernighan-Lin local search from that cut (direct
            networks only); an upper bound too.
            ``"auto"``: exact up to 40 graph nodes, else the closed form
            where one is proven, else the upper bound.
        weight : {"links", "bandwidth"}
            What to minimise: the number of links cut, or the sum of their
            ``bandwidth`` attributes (bytes/s, one direction; only the
            ``"dgx"`` kind has them). With ``"bandwidth"`` the closed forms
            do not apply, so ``"auto"`` means exact or upper bound.
        time_limit : float
            Seconds the MILP may run; if it stops early the best cut found is
            returned with ``exact=False``.

        Examples
        --------
        >>> topology("hypercube", d=4).bisection().links   # P/2
        8
        >>> topology("ring", p=8).bisection(method="exact").links
        2
        """
        method = check_choice("method", method, ["auto", "exact", "closed_form", "upper_bound", "kl"])
        weight = check_choice("weight", weight, ["links", "bandwidth"])
        time_limit = check_real("time_limit", time_limit, minimum=0, strict_min=True)
        if weight == "bandwidth" and any(b is None for _, _, b in self.graph.edges(data="bandwidth")):
            raise ValueError(f"weight='bandwidth' needs a bandwidth on every link; {self.kind} links have none "
                             "(only the 'dgx' kind sets them)")
        proven = self.bisection_proven and weight == "links"
        if method == "auto":
            if self.graph.number_of_nodes() <= _EXACT_NODE_LIMIT:
                method = "exact"
            elif proven:
                method = "closed_form"
            else:
                method = "upper_bound"
        key = ("bisection", method, weight)
        if key in self._cache:
            return self._cache[key]
        if method == "exact":
            result = _exact_bisection(self, weight=weight, time_limit=time_limit)
        elif method == "closed_form":
            if not proven:
                raise ValueError(
                    f"method='closed_form' needs a proven bisection formula for weight={weight!r}; "
                    f"{self!r} has none (use 'exact' or 'upper_bound')")
            side = _witness_side(self)
            if self.kind == "fat_tree":  # the witness places every switch too
                links, bw = _cut_value_fixed(self.graph, side)
            else:
                links, bw = _cut_value(self.graph, side, self.hosts, weight=weight)
            result = Bisection(links, bw, "closed form (proven), witness cut counted on the graph", True,
                               frozenset(h for h in self.hosts if h in side))
        elif method == "upper_bound":
            if self.kind == "dragonfly" and weight == "links":
                side = _dragonfly_best_group_cut(self)
                links, bw = _cut_value_fixed(self.graph, side)
                how = "upper bound (best of the half-the-groups cuts)"
            else:
                side = _witness_side(self)
                links, bw = _cut_value(self.graph, side, self.hosts, weight=weight)
                how = "upper bound (natural cut, switches placed by min s-t cut)"
            result = Bisection(links, bw, how, False, frozenset(h for h in self.hosts if h in side))
        else:
            if not self.direct:
                raise ValueError("method='kl' works on direct networks (no switches) only; "
                                 f"{self.kind} has switches")
            result = _kl_bisection(self)
        self._cache[key] = result
        return result

    def bisection_links(self, *, method: str = "auto") -> int:
        """Number of links in :meth:`bisection` (see there for ``method``).

        Examples
        --------
        >>> topology("torus", dims=(4, 4, 4)).bisection_links()   # 2 * P^(2/3)
        32
        """
        return self.bisection(method=method).links

    @property
    def bisection_proven(self) -> bool:
        """True when a proven closed form gives this network's minimum bisection."""
        if self.kind in ("ring", "hypercube"):
            return True
        if self.kind == "torus":
            return any(n % 2 == 0 for n in self.size["dims"])
        if self.kind == "fat_tree":
            return self.size["oversubscription"] == 1
        return False

    # ---- summary -----------------------------------------------------------
    def metrics(self, *, bisection_method: str = "auto") -> Metrics:
        """All the comparison-table numbers at once (see :class:`Metrics`)."""
        return Metrics(
            hosts=self.n_hosts,
            switches=self.n_switches,
            links=self.n_links,
            degree=self.degree(),
            diameter=self.diameter(),
            bisection_links=self.bisection(method=bisection_method).links,
            links_per_host=self.links_per_host(),
            ports_per_host=self.ports_per_host(),
        )


    def compare_closed_form(self, *, bisection_method: str = "auto") -> dict:
        """Every metric measured on the graph next to its formula: ``name -> (graph, formula)``.

        Examples
        --------
        >>> topology("torus", dims=(3, 3)).compare_closed_form()["bisection_links"]  # no formula for odd sides
        (8, None)
        >>> topology("hypercube", d=4).compare_closed_form()["diameter"]
        (4, 4)
        """
        formula = topology_closed_form(self.kind, **self.size)
        graph = self.metrics(bisection_method=bisection_method)
        return {name: (getattr(graph, name), getattr(formula, name)) for name in graph.as_dict()}


# --------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------


def topology(kind: str, **size) -> Topology:
    """Build a network of the given ``kind`` and size.

    Parameters
    ----------
    kind : {"ring", "torus", "hypercube", "fat_tree", "dragonfly", "dgx"}
    **size
        * ``ring``: ``p`` (hosts, >= 2).
        * ``torus``: ``dims``, a tuple of side lengths (each >= 2), e.g.
          ``(4, 4)`` or ``(4, 4, 4)``; nodes are coordinate tuples.
        * ``hypercube``: ``d`` (>= 1); ``2**d`` hosts, numbered so that
          neighbours differ in one bit.
        * ``fat_tree``: ``k`` (even, >= 2) and ``oversubscription`` (an
          integer ``r >= 1`` dividing ``k/2``, default 1). The k-ary 3-level
          fat-tree of Al-Fares et al. (2008): ``k`` pods, each with ``k/2``
          edge and ``k/2`` aggregation switches; ``(k/2)**2`` core switches;
          ``k**3/4`` hosts, ``k/2`` per edge switch. Oversubscription ``r``
          is modelled by **fewer core switches**: ``(k/2)**2 / r``, each
          aggregation switch keeping ``k/(2r)`` uplinks for its ``k/2``
          downlinks, so traffic leaving a pod gets ``1/r`` of the bandwidth
          it would in a full fat-tree (inside a pod nothing changes).
        * ``dragonfly``: ``a`` routers per group, ``p`` hosts per router,
          ``h`` global links per router. Kim et al.'s balanced maximum size:
          ``g = a*h + 1`` groups, routers of a group fully connected, exactly
          one global link between every pair of groups (global port ``j`` of
          group ``i``, on router ``j // h``, goes to group ``(i + j + 1) mod
          g``). Balanced when ``a = 2p = 2h``.
        * ``dgx``: ``nodes`` (>= 1), ``gpus_per_node`` (default 8),
          ``nvlink_bandwidth`` (default 450e9 bytes/s per GPU per direction,
          H100 NVLink 4) and ``nic_bandwidth`` (default 50e9 bytes/s per
          direction, one 400 Gb/s NDR InfiniBand NIC per GPU). Each node's
          GPUs hang off one NVSwitch node (standing for the node's four
          NVSwitch chips, together non-blocking); the NICs form a
          rail-optimised, non-blocking two-level fat-tree: GPU ``i`` of every
          node plugs into leaf switch ``i`` ("rail" ``i``), and every leaf
          has one link to each of ``nodes`` spine switches. Cable counts and
          bandwidths match a full-bisection fabric; the spine *count* does
          not (real spines are larger switches), so do not read switch cost
          off it. Every edge carries ``bandwidth`` (bytes/s, one direction).

    Returns
    -------
    Topology

    Raises
    ------
    ValueError
        For an unknown ``kind``, a missing or unexpected size argument, or a
        size out of range (e.g. odd ``k``), naming the argument.

    Examples
    --------
    >>> t = topology("fat_tree", k=4)
    >>> t.n_hosts, t.n_switches, t.n_links        # k^3/4, 5k^2/4, 3k^3/4
    (16, 20, 48)
    >>> topology("dragonfly", a=4, p=2, h=2).n_hosts   # g = a*h + 1 = 9 groups
    72
    >>> topology("ring", p=0)
    Traceback (most recent call last):
    ...
    ValueError: p must be an integer >= 2, got 0
    """
    kind = check_choice("kind", kind, TOPOLOGY_KINDS)
    builder, required, optional = _BUILDERS[kind]
    unknown = set(size) - set(required) - set(optional)
    if unknown:
        allowed = ", ".join(list(required) + list(optional))
        raise ValueError(f"topology {kind!r} takes size arguments {allowed}; got unexpected "
                         f"{', '.join(sorted(unknown))}")
    missing = [r for r in required if r not in size]
    if missing:
        raise ValueError(f"topology {kind!r} needs {', '.join(missing)}")
    args = {**optional, **size}
    return builder(**args)


def _new_graph() -> nx.Graph:
    return nx.Graph()


def _add_host(g, name, **attrs):
    g.add_node(name, kind="host", level=0, **attrs)


def _add_switch(g, name, level, **attrs):
    g.add_node(name, kind="switch", level=level, **attrs)


def _ring(p) -> Topology:
    p = check_int("p", p, minimum=2)
    g = _new_graph()
    for i in range(p):
        _add_host(g, i)
    for i in range(p):
        g.add_edge(i, (i + 1) % p)
    return Topology("ring", {"p": p}, g, list(range(p)))


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


def _torus(dims) -> Topology:
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
    return Topology("torus", {"dims": dims}, g, nodes)


def _hypercube(d) -> Topology:
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
    return Topology("hypercube", {"d": d}, g, list(range(n)))


def _fat_tree(k, oversubscription=1) -> Topology:
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
    return Topology("fat_tree", {"k": k, "oversubscription": r}, g, hosts)


def _dragonfly(a, p, h) -> Topology:
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
    return Topology("dragonfly", {"a": a, "p": p, "h": h}, g, hosts)


def _dgx(nodes, gpus_per_node=8, nvlink_bandwidth=H100_NVLINK_BANDWIDTH, nic_bandwidth=NDR_NIC_BANDWIDTH):
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
    return Topology("dgx", size, g, hosts)


_BUILDERS = {
    "ring": (_ring, ("p",), {}),
    "torus": (_torus, ("dims",), {}),
    "hypercube": (_hypercube, ("d",), {}),
    "fat_tree": (_fat_tree, ("k",), {"oversubscription": 1}),
    "dragonfly": (_dragonfly, ("a", "p", "h"), {}),
    "dgx": (_dgx, ("nodes",), {"gpus_per_node": 8, "nvlink_bandwidth": H100_NVLINK_BANDWIDTH,
                               "nic_bandwidth": NDR_NIC_BANDWIDTH}),
}


# --------------------------------------------------------------------------
# Closed forms
# --------------------------------------------------------------------------


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
    _, required, optional = _BUILDERS[kind]
    args = {**optional, **size}
    missing = [r for r in required if r not in size]
    if missing:
        raise ValueError(f"topology_closed_form {kind!r} needs {', '.join(missing)}")
    unknown = set(size) - set(required) - set(optional)
    if unknown:
        raise ValueError(f"topology_closed_form {kind!r} got unexpected {', '.join(sorted(unknown))}")

    if kind == "ring":
        p = check_int("p", args["p"], minimum=2)
        links = p if p >= 3 else 1
        return _metrics(p, 0, links, 2 if p >= 3 else 1, p // 2, 2 if p >= 3 else 1, 2 * links)
    if kind == "torus":
        dims = _check_dims(args["dims"])
        P = math.prod(dims)
        per_dim = [P if n >= 3 else P // 2 for n in dims]
        links = sum(per_dim)
        degree = sum(2 if n >= 3 else 1 for n in dims)
        diameter = sum(n // 2 for n in dims)
        even = [(P // n) * (2 if n >= 3 else 1) for n in dims if n % 2 == 0]
        return _metrics(P, 0, links, degree, diameter, min(even) if even else None, 2 * links)
    if kind == "hypercube":
        d = check_int("d", args["d"], minimum=1, maximum=24)
        P = 2 ** d
        return _metrics(P, 0, d * P // 2, d, d, P // 2, d * P)
    if kind == "fat_tree":
        k = check_int("k", args["k"], minimum=2)
        if k % 2:
            raise ValueError(f"k must be an even integer >= 2, got {k}")
        r = check_int("oversubscription", args["oversubscription"], minimum=1)
        if (k // 2) % r:
            raise ValueError(f"oversubscription must divide k/2 = {k // 2}, got {r}")
        P = k ** 3 // 4
        cores = (k // 2) ** 2 // r
        up_links = k * (k // 2) * (k // 2 // r)
        links = P + P + up_links  # host-edge, edge-agg, agg-core
        switches = k * k + cores  # k pods x (k/2 edge + k/2 agg), plus cores
        ports = P * 2 + P + up_links * 2  # edge: k each; agg: k/2 + k/(2r); core: k each
        return _metrics(P, switches, links, k, 6, P // (2 * r), ports)
    if kind == "dragonfly":
        a = check_int("a", args["a"], minimum=1)
        p = check_int("p", args["p"], minimum=1)
        h = check_int("h", args["h"], minimum=1)
        groups = a * h + 1
        routers = a * groups
        P = routers * p
        links = P + groups * a * (a - 1) // 2 + groups * (groups - 1) // 2
        degree = p + (a - 1) + h
        diameter = 3 if a == 1 else 5
        return _metrics(P, routers, links, degree, diameter, None, routers * degree)
    # dgx
    nodes = check_int("nodes", args["nodes"], minimum=1)
    gpn = check_int("gpus_per_node", args["gpus_per_node"], minimum=1)
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


def _metrics(hosts, switches, links, degree, diameter, bisection, ports) -> Metrics:
    return Metrics(hosts=hosts, switches=switches, links=links, degree=degree, diameter=diameter,
                   bisection_links=bisection, links_per_host=links / hosts, ports_per_host=ports / hosts)


# --------------------------------------------------------------------------
# Graph algorithms
# --------------------------------------------------------------------------


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


def _witness_side(topo: Topology) -> set:
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


def _dragonfly_best_group_cut(topo: Topology, *, max_candidates: int = 2000) -> set:
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


def _exact_bisection(topo: Topology, *, weight: str = "links", time_limit: float) -> Bisection:
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


def _kl_bisection(topo: Topology) -> Bisection:
    from networkx.algorithms.community import kernighan_lin_bisection

    start = _witness_side(topo)
    rest = set(topo.hosts) - start
    a, b = kernighan_lin_bisection(topo.graph, partition=(start, rest), seed=0)
    links, bw = _cut_value_fixed(topo.graph, set(a))
    return Bisection(links, bw, "upper bound (Kernighan-Lin)", False, frozenset(a))


# --------------------------------------------------------------------------
# A ring laid on the network
# --------------------------------------------------------------------------


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
