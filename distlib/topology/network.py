"""The network object of :mod:`distlib.topology`: :class:`Topology` and the :func:`topology` builder.

A :class:`Topology` is a graph of hosts and switches plus how it was built;
it counts its links and ports and measures its diameter and bisection *on the
graph* (breadth-first search in :mod:`distlib.topology.paths`, cuts in
:mod:`distlib.topology.bisection`), caching each answer. :func:`topology`
checks the size arguments and builds the graph (:mod:`distlib.topology.graphs`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from .._check import check_choice, check_real
from .bisection import Bisection, _auto_method, _bisect
from .formulas import Metrics, topology_closed_form
from .graphs import GRAPH_BUILDERS, SIZE_ARGUMENTS, TOPOLOGY_KINDS
from .paths import _host_eccentricity

__all__ = ["Topology", "topology"]

# Graphs with at most this many hosts get a BFS from every host by default;
# larger ones use one BFS per symmetry class of hosts (see Topology.diameter).
_BFS_ALL_LIMIT = 2048


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
        if method == "auto":
            method = _auto_method(self, weight)
        key = ("bisection", method, weight)
        if key not in self._cache:
            self._cache[key] = _bisect(self, method, weight=weight, time_limit=time_limit)
        return self._cache[key]

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
    required, optional = SIZE_ARGUMENTS[kind]
    unknown = set(size) - set(required) - set(optional)
    if unknown:
        allowed = ", ".join(list(required) + list(optional))
        raise ValueError(f"topology {kind!r} takes size arguments {allowed}; got unexpected "
                         f"{', '.join(sorted(unknown))}")
    missing = [r for r in required if r not in size]
    if missing:
        raise ValueError(f"topology {kind!r} needs {', '.join(missing)}")
    args = {**optional, **size}
    built_size, graph, hosts = GRAPH_BUILDERS[kind](**args)
    return Topology(kind, built_size, graph, hosts)
