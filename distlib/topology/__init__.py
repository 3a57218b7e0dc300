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

Parts
-----
This module is the chapter's one import path; each concept lives in a part of
its own, and everything is re-exported here:

* :mod:`distlib.topology.graphs`: the kinds, their size arguments and link
  bandwidths, and one graph builder per kind;
* :mod:`distlib.topology.network`: :class:`Topology` (counts, cost,
  diameter, bisection, metrics) and the :func:`topology` builder;
* :mod:`distlib.topology.paths`: shortest paths (the diameter's BFS, ECMP
  path shares);
* :mod:`distlib.topology.bisection`: :class:`Bisection` and the cuts (exact
  MILP, proven witness, upper bounds, Kernighan-Lin);
* :mod:`distlib.topology.formulas`: :class:`Metrics` and
  :func:`topology_closed_form`;
* :mod:`distlib.topology.ring`: a ring on the network (:func:`ring_order`,
  :func:`crossing_ring_order`, :func:`ring_link_loads`, :class:`RingLoads`);
* :mod:`distlib.topology.alltoall`: the all-to-all's bandwidth-bound time
  from the bisection, beside the ring all-reduce's
  (:func:`alltoall_on_topology`, :class:`AlltoallOnTopology`).
"""

from __future__ import annotations

from .bisection import Bisection, _cut_value  # noqa: F401 (_cut_value: tests/test_topology.py counts cuts with it)
from .formulas import Metrics, topology_closed_form
from .graphs import H100_NVLINK_BANDWIDTH, NDR_NIC_BANDWIDTH, TOPOLOGY_KINDS
from .network import Topology, topology
from .ring import RingLoads, crossing_ring_order, ring_link_loads, ring_order
from .alltoall import AlltoallOnTopology, alltoall_on_topology

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
    "AlltoallOnTopology",
    "alltoall_on_topology",
]
