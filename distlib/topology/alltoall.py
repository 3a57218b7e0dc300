"""The all-to-all on a network: why its bandwidth-bound time is set by the bisection, not by a ring.

A ring all-reduce only ever talks to ring neighbours. On a network with a
Hamiltonian cycle (a torus, a hypercube) or a switch per group of hosts, the
topology-aware ring of :func:`~distlib.topology.ring_order` puts at most one
message on each link direction per step, so its time is set by one host's
link, whatever the bisection: ``2 (p - 1)/p n / bandwidth`` (times the ring's
congestion where some link carries more).

An all-to-all sends every rank's data to every other rank. Cut the hosts into
halves ``A`` and ``B`` of ``floor(P/2)`` and ``ceil(P/2)``. Each host of
``A`` sends ``n / P`` to each host of ``B``, so

    floor(P/2) * ceil(P/2) * n / P    (``P n / 4`` for ``P`` even)

bytes must cross from ``A`` to ``B``, and as many back, through links of
``bisection_bandwidth`` bytes/s per direction in all. Whatever the
algorithm or the routing, the all-to-all takes at least

    T_bisection = floor(P/2) ceil(P/2) n / (P * bisection_bandwidth)

and, through each host's own links, at least ``T_injection = (p - 1)/p n /
host_bandwidth``. Of the ``(p - 1)/p n`` each rank sends, the share for the
other half is ``ceil(P/2)/(P - 1)``, a little over half: "half of all
traffic crosses the bisection" under uniform traffic. Any balanced cut gives
a valid bound; the minimum bisection (:meth:`Topology.bisection
<distlib.topology.Topology.bisection>`) the tightest. The argument is the
bisection bound for uniform traffic of Dally and Towles, *Principles and
Practices of Interconnection Networks* (Morgan Kaufmann, 2004), chapter 3
(throughput and channel load).

On a ``k x k`` torus (``P = k**2``, bisection ``2k`` links) that is ``k n /
(8 bandwidth)``, growing with ``k``, while the ring all-reduce stays near
``2 n / bandwidth``: from ``k = 16`` on, the all-to-all of a buffer is
slower than the all-reduce of the same buffer, though each rank sends half
the bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._check import check_real
from ..collectives import alltoall_coefficients, cost_coefficients
from .network import Topology
from .ring import ring_link_loads

__all__ = ["AlltoallOnTopology", "alltoall_on_topology"]


@dataclass(frozen=True)
class AlltoallOnTopology:
    """An all-to-all's bandwidth-bound time on a network, beside the ring all-reduce's on the same network.

    Seconds, bytes and bytes/s (one direction); latency left out.

    Attributes
    ----------
    p : int
        Hosts (ranks, one per host).
    n_bytes : float
        Bytes each rank holds (``p`` blocks of ``n_bytes / p``).
    bisection_links : int
        Links in the cut used.
    bisection_bandwidth : float
        Bytes/s the cut carries per direction (its links' bandwidths added).
    bisection_exact : bool
        True when the cut is the proven minimum; otherwise the bound below is
        still valid (any balanced cut gives one), only perhaps not the tightest.
    crossing_bytes : float
        ``floor(P/2) ceil(P/2) n_bytes / P``: what must cross the cut each way.
    host_bandwidth : float
        Bytes/s one host can send (its links added, one direction; the least over the hosts).
    bisection_time : float
        ``crossing_bytes / bisection_bandwidth``.
    injection_time : float
        ``(p - 1)/p n_bytes / host_bandwidth``.
    ring_congestion : float
        Most ring messages on one link direction per step (:attr:`RingLoads.max_load
        <distlib.topology.RingLoads.max_load>` of the ring of :func:`~distlib.topology.ring_order`).
    ring_allreduce_time : float
        The ring all-reduce of the same buffer: ``2 (p - 1)/p n_bytes`` through the link direction
        that has the most ring messages per byte/s, ``2 (p - 1)/p n_bytes / bandwidth * ring_congestion``
        where every link has one bandwidth.
    """

    p: int
    n_bytes: float
    bisection_links: int
    bisection_bandwidth: float
    bisection_exact: bool
    crossing_bytes: float
    host_bandwidth: float
    bisection_time: float
    injection_time: float
    ring_congestion: float
    ring_allreduce_time: float

    @property
    def time(self) -> float:
        """The all-to-all's bandwidth-bound time: the larger of the two bounds."""
        return max(self.bisection_time, self.injection_time)

    @property
    def bound(self) -> str:
        """``"bisection"`` or ``"injection"``: which bound sets :attr:`time`."""
        return "bisection" if self.bisection_time > self.injection_time else "injection"

    @property
    def over_ring_allreduce(self) -> float:
        """The all-to-all's time over the ring all-reduce's (of the same ``n_bytes``)."""
        return self.time / self.ring_allreduce_time if self.ring_allreduce_time > 0 else float("nan")


def alltoall_on_topology(topo: Topology, n_bytes, *, link_bandwidth=None, method: str = "auto") -> AlltoallOnTopology:
    """The bandwidth-bound time of an all-to-all on ``topo``, from its bisection, beside the ring all-reduce's.

    Parameters
    ----------
    topo : Topology
        From :func:`distlib.topology`; one rank per host.
    n_bytes : float
        Bytes each rank holds (>= 0).
    link_bandwidth : float, optional
        Bytes/s of every link, one direction (> 0). Needed unless every link
        of ``topo`` carries its own ``bandwidth`` (the ``"dgx"`` kind), which
        is then used and the cut minimises bandwidth, not links.
    method : str
        How to find the bisection (:meth:`Topology.bisection`).

    Returns
    -------
    AlltoallOnTopology

    Examples
    --------
    A 16 x 16 torus of 50 GB/s links, 1 GB per rank: 256 hosts, a bisection of
    32 links. ``128 * 128 * 1e9 / 256 = 64e9`` bytes cross each way at
    ``32 * 50e9`` bytes/s: 40 ms, the ``k n / (8 bandwidth)`` of the module
    docstring; the ring all-reduce, ``2 * 255/256 * 1e9 / 50e9``, about the same:

    >>> from distlib.topology import topology
    >>> r = alltoall_on_topology(topology("torus", dims=(16, 16)), 1e9, link_bandwidth=50e9)
    >>> r.bisection_links, round(r.bisection_time, 6), round(r.ring_allreduce_time, 6), r.bound
    (32, 0.04, 0.039844, 'bisection')

    A fat-tree without oversubscription has full bisection: the hosts' own links bind, as for the ring:

    >>> r = alltoall_on_topology(topology("fat_tree", k=4), 1e9, link_bandwidth=50e9)
    >>> r.bound, round(r.injection_time, 6), round(r.bisection_time, 6)
    ('injection', 0.01875, 0.01)
    """
    if not isinstance(topo, Topology):
        raise TypeError(f"topo must be a Topology from distlib.topology(), got {type(topo).__name__}")
    n = check_real("n_bytes", n_bytes, minimum=0)
    g = topo.graph
    attributed = all(b is not None for _, _, b in g.edges(data="bandwidth"))
    if link_bandwidth is None and not attributed:
        raise ValueError(f"link_bandwidth must be given (bytes/s per link, one direction, > 0): {topo.kind} links "
                         "carry no bandwidth of their own")  # fmt: skip
    if link_bandwidth is not None:
        link_bandwidth = check_real("link_bandwidth", link_bandwidth, minimum=0, strict_min=True)
    bw = (lambda u, v: link_bandwidth) if link_bandwidth is not None else (lambda u, v: float(g.edges[u, v]["bandwidth"]))  # noqa: E731
    cut = topo.bisection(method=method, weight="links" if link_bandwidth is not None else "bandwidth")
    cut_bandwidth = cut.links * link_bandwidth if link_bandwidth is not None else float(cut.bandwidth)
    P = topo.n_hosts
    crossing = (P // 2) * (P - P // 2) * n / P
    host = min(sum(bw(h, v) for v in g[h]) for h in topo.hosts)
    _, share = alltoall_coefficients(P, algorithm="pairwise")
    ring = ring_link_loads(topo)
    slowest = max((load / bw(u, v) for (u, v), load in ring.loads.items()), default=0.0)  # s per byte of a step
    _, ring_share = cost_coefficients("allreduce", P)
    return AlltoallOnTopology(
        p=P, n_bytes=n, bisection_links=cut.links, bisection_bandwidth=cut_bandwidth, bisection_exact=cut.exact,
        crossing_bytes=crossing, host_bandwidth=host,
        bisection_time=crossing / cut_bandwidth if crossing else 0.0, injection_time=share * n / host,
        ring_congestion=ring.max_load, ring_allreduce_time=ring_share * n * slowest)  # fmt: skip
