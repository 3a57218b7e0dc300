"""The all-to-all on a network (distlib/topology/alltoall.py): bound by the bisection where a ring is not.

The closed forms on tori, fat-trees and rings; the bound against a pairwise all-to-all actually routed over the
graph (no schedule beats it); the dgx kind's own link bandwidths; bad arguments.
"""

import networkx as nx
import pytest

import distlib as dl
from distlib.topology import AlltoallOnTopology, alltoall_on_topology, topology

BW = 50e9


@pytest.mark.parametrize("k", [4, 6, 8, 12])
def test_torus_alltoall_grows_with_the_side_while_the_ring_does_not(k):
    n = 1e9
    r = alltoall_on_topology(topology("torus", dims=(k, k)), n, link_bandwidth=BW)
    P = k * k
    assert r.bisection_links == 2 * k and r.bisection_exact
    assert r.crossing_bytes == pytest.approx(P * n / 4)
    assert r.bisection_time == pytest.approx(k * n / (8 * BW))  # P n / 4 over 2k links
    assert r.injection_time == pytest.approx((P - 1) / P * n / (4 * BW))  # four links a host
    assert r.ring_congestion == 1 and r.ring_allreduce_time == pytest.approx(2 * (P - 1) / P * n / BW)
    assert r.bound == "bisection" and r.time == r.bisection_time
    assert r.over_ring_allreduce == pytest.approx(k / 16 * P / (P - 1))


def test_crossing_bytes_with_an_odd_number_of_hosts():
    r = alltoall_on_topology(topology("ring", p=7), 7e6, link_bandwidth=BW)
    assert r.crossing_bytes == pytest.approx(3 * 4 * 1e6)  # 3 hosts send 1 MB to each of 4, and back
    assert r.bisection_links == 2 and r.bisection_time == pytest.approx(12e6 / (2 * BW))


def test_oversubscription_moves_a_fat_tree_from_injection_to_bisection_bound():
    full = alltoall_on_topology(topology("fat_tree", k=4), 1e9, link_bandwidth=BW, method="closed_form")
    thin = alltoall_on_topology(topology("fat_tree", k=4, oversubscription=2), 1e9, link_bandwidth=BW)
    assert full.bound == "injection" and full.time == pytest.approx(15 / 16 * 1e9 / BW)
    assert thin.bound == "bisection" and thin.bisection_links < full.bisection_links
    assert thin.time > full.time
    # the ring all-reduce does not see the oversubscription: its messages stay below the edge switches or take one path up
    assert thin.ring_allreduce_time == pytest.approx(full.ring_allreduce_time)


def _routed_pairwise_time(topo, n, bw):
    """A pairwise all-to-all routed over the graph: round k, host i sends n/P to host i + k along a shortest path;
    a round lasts as long as its busiest link direction takes."""
    hosts, P = topo.hosts, topo.n_hosts
    total = 0.0
    for k in range(1, P):
        loads = {}
        for i in range(P):
            path = nx.shortest_path(topo.graph, hosts[i], hosts[(i + k) % P])
            for u, v in zip(path, path[1:]):
                loads[(u, v)] = loads.get((u, v), 0) + 1
        total += max(loads.values()) * (n / P) / bw
    return total


@pytest.mark.parametrize("topo", [topology("ring", p=8), topology("torus", dims=(4, 4)), topology("hypercube", d=3),
                                  topology("fat_tree", k=4, oversubscription=2), topology("torus", dims=(3, 5))],
                         ids=lambda t: repr(t))  # fmt: skip
def test_no_routed_schedule_beats_the_bound(topo):
    r = alltoall_on_topology(topo, 1e8, link_bandwidth=BW)
    assert _routed_pairwise_time(topo, 1e8, BW) >= r.time * (1 - 1e-12)


def test_dgx_uses_its_links_own_bandwidths():
    t = topology("dgx", nodes=2)
    r = alltoall_on_topology(t, 1e9)
    cut = t.bisection(weight="bandwidth")
    assert r.bisection_bandwidth == pytest.approx(cut.bandwidth)
    assert r.bound == "bisection"  # the NICs between the nodes, not the NVLinks inside them
    with_links = alltoall_on_topology(t, 1e9, link_bandwidth=BW)  # every link alike: counted in links again
    assert with_links.bisection_bandwidth == pytest.approx(with_links.bisection_links * BW)


def test_exported_at_the_top():
    assert dl.alltoall_on_topology is alltoall_on_topology and dl.AlltoallOnTopology is AlltoallOnTopology


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: alltoall_on_topology(topology("ring", p=4), 1e6), ValueError, "link_bandwidth must be given"),
        (lambda: alltoall_on_topology(topology("ring", p=4), 1e6, link_bandwidth=0), ValueError,
         "link_bandwidth must be a finite number > 0"),
        (lambda: alltoall_on_topology(topology("ring", p=4), -1, link_bandwidth=BW), ValueError,
         "n_bytes must be a finite number >= 0"),
        (lambda: alltoall_on_topology("ring", 1e6, link_bandwidth=BW), TypeError, "topo must be a Topology"),
    ],
)
def test_bad_arguments_name_themselves(call, error, match):
    with pytest.raises(error, match=match):
        call()
