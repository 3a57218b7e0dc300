"""Topologies: the graph measurements agree with the closed forms, and the seed's claims are checked."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distlib as dl
from distlib.topology import (H100_NVLINK_BANDWIDTH, NDR_NIC_BANDWIDTH, ring_link_loads, ring_order, topology,
                              topology_closed_form)

SMALL = [
    ("ring", dict(p=2)), ("ring", dict(p=3)), ("ring", dict(p=8)), ("ring", dict(p=9)),
    ("torus", dict(dims=(3,))), ("torus", dict(dims=(2, 2))), ("torus", dict(dims=(3, 3))),
    ("torus", dict(dims=(4, 4))), ("torus", dict(dims=(3, 4))), ("torus", dict(dims=(2, 5))),
    ("torus", dict(dims=(4, 2))), ("torus", dict(dims=(2, 2, 2))), ("torus", dict(dims=(3, 3, 3))),
    ("torus", dict(dims=(4, 4, 2))), ("torus", dict(dims=(6, 4))),
    ("hypercube", dict(d=1)), ("hypercube", dict(d=3)), ("hypercube", dict(d=4)), ("hypercube", dict(d=5)),
    ("fat_tree", dict(k=2)), ("fat_tree", dict(k=4)), ("fat_tree", dict(k=4, oversubscription=2)),
    ("dragonfly", dict(a=1, p=1, h=1)), ("dragonfly", dict(a=2, p=1, h=1)), ("dragonfly", dict(a=2, p=2, h=1)),
    ("dragonfly", dict(a=3, p=1, h=1)), ("dragonfly", dict(a=2, p=1, h=2)), ("dragonfly", dict(a=1, p=2, h=3)),
    ("dgx", dict(nodes=1)), ("dgx", dict(nodes=2)), ("dgx", dict(nodes=3)),
]

# A few more sizes that are cheap to build but too big for exact bisection in a fast test.
MEDIUM = [("torus", dict(dims=(8, 8))), ("torus", dict(dims=(5, 7, 3))), ("hypercube", dict(d=8)),
          ("fat_tree", dict(k=8)), ("fat_tree", dict(k=8, oversubscription=4)), ("dragonfly", dict(a=4, p=2, h=2)),
          ("dgx", dict(nodes=8)), ("ring", dict(p=101))]


def _id(case):
    kind, size = case
    return kind + "-" + "-".join(f"{k}{v}" for k, v in size.items())


# ---------------------------------------------------------------------------
# graph == closed form
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", SMALL + MEDIUM, ids=_id)
def test_counts_and_diameter_match_closed_form(case):
    kind, size = case
    t = topology(kind, **size)
    cf = topology_closed_form(kind, **size)
    assert (t.n_hosts, t.n_switches, t.n_links, t.degree()) == (cf.hosts, cf.switches, cf.links, cf.degree)
    assert t.diameter(method="bfs") == cf.diameter
    assert t.diameter(method="symmetry") == cf.diameter
    assert t.links_per_host() == pytest.approx(cf.links_per_host)
    assert t.ports_per_host() == pytest.approx(cf.ports_per_host)
    kinds = nx.get_node_attributes(t.graph, "kind")
    assert sorted(h for h in t.hosts) == sorted(n for n, k in kinds.items() if k == "host")
    assert set(kinds.values()) <= {"host", "switch"}
    assert nx.is_connected(t.graph)


# (3,3,3) and (4,4,2) are checked by the seed tests below; d=5 costs seconds of MILP.
SMALL_EXACT = [c for c in SMALL if c[1] not in (dict(dims=(3, 3, 3)), dict(dims=(4, 4, 2)), dict(d=5))]


@pytest.mark.parametrize("case", SMALL_EXACT, ids=_id)
def test_exact_bisection_matches_closed_form_where_one_exists(case):
    kind, size = case
    t = topology(kind, **size)
    exact = t.bisection(method="exact")
    assert exact.exact
    cf = topology_closed_form(kind, **size).bisection_links
    if cf is not None:
        assert exact.links == cf
    if t.bisection_proven:
        assert t.bisection(method="closed_form").links == exact.links
    assert t.bisection(method="upper_bound").links >= exact.links
    # the cut really splits the hosts in halves
    assert len(exact.side) in (t.n_hosts // 2, t.n_hosts - t.n_hosts // 2)


@pytest.mark.parametrize("case", [("dragonfly", dict(a=2, p=1, h=1)), ("dragonfly", dict(a=2, p=2, h=1)),
                                  ("dragonfly", dict(a=3, p=1, h=1)), ("dragonfly", dict(a=2, p=1, h=2)),
                                  ("dragonfly", dict(a=3, p=2, h=1)), ("dragonfly", dict(a=1, p=1, h=2)),
                                  ("torus", dict(dims=(3, 3))), ("torus", dict(dims=(5, 5))),
                                  ("torus", dict(dims=(3, 5)))], ids=_id)
def test_upper_bound_is_tight_on_small_sizes(case):
    kind, size = case
    t = topology(kind, **size)
    ub = t.bisection(method="upper_bound")
    assert not ub.exact and "upper bound" in ub.method
    assert ub.links == t.bisection(method="exact").links


def _brute_force_bisection(t):
    """Every balanced host split; switches placed by min cut (exponential: tiny graphs only)."""
    from distlib.topology import _cut_value

    hosts = t.hosts
    P = len(hosts)
    best = math.inf
    for side in itertools.combinations(hosts[1:], P // 2):
        best = min(best, _cut_value(t.graph, set(side), hosts)[0])
        if P % 2:
            best = min(best, _cut_value(t.graph, set(side) | {hosts[0]}, hosts)[0])
    return best


@pytest.mark.parametrize("case", [("ring", dict(p=7)), ("torus", dict(dims=(3, 3))), ("torus", dict(dims=(2, 5))),
                                  ("hypercube", dict(d=3)), ("dragonfly", dict(a=2, p=1, h=1)),
                                  ("dragonfly", dict(a=2, p=2, h=1)), ("fat_tree", dict(k=2)),
                                  ("dgx", dict(nodes=1))], ids=_id)
def test_milp_bisection_equals_brute_force(case):
    kind, size = case
    t = topology(kind, **size)
    assert t.bisection(method="exact").links == _brute_force_bisection(t)


def test_kernighan_lin_is_an_upper_bound():
    t = topology("torus", dims=(4, 6))
    kl = t.bisection(method="kl")
    assert not kl.exact and kl.links >= t.bisection(method="exact").links
    with pytest.raises(ValueError, match="direct networks"):
        topology("fat_tree", k=4).bisection(method="kl")


def test_large_bisection_uses_a_proven_formula_or_says_upper_bound():
    assert topology("torus", dims=(16, 16, 16)).bisection().method.startswith("closed form")
    assert topology("torus", dims=(16, 16, 16)).bisection_links() == 2 * 16 ** 2
    assert topology("hypercube", d=10).bisection_links() == 2 ** 9
    assert topology("fat_tree", k=12).bisection_links() == 12 ** 3 // 8
    b = topology("dragonfly", a=4, p=2, h=2).bisection()
    assert not b.exact and b.method.startswith("upper bound")
    b = topology("torus", dims=(7, 7)).bisection()  # all sides odd: no formula used
    assert not b.exact


# ---------------------------------------------------------------------------
# the seed's claims (seed 002, "Network Topologies for Distributed Training")
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8])
def test_seed_2d_torus_diameter_is_right(n):
    P = n * n
    assert topology("torus", dims=(n, n)).diameter() == 2 * math.floor(math.sqrt(P) / 2)


@pytest.mark.parametrize("n", [4, 6])
def test_seed_2d_torus_bisection_holds_for_even_sides(n):
    assert topology("torus", dims=(n, n)).bisection(method="exact").links == 2 * n


@pytest.mark.parametrize("n", [3, 5])
def test_seed_2d_torus_bisection_is_wrong_for_odd_sides(n):
    exact = topology("torus", dims=(n, n)).bisection(method="exact").links
    assert exact != 2 * n
    assert exact == 2 * n + 2  # an odd side needs a staircase cut: two more links


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_seed_3d_torus_diameter_is_right(n):
    assert topology("torus", dims=(n, n, n)).diameter() == 3 * math.floor(n / 2)


def test_seed_3d_torus_bisection_holds_for_even_sides_only():
    # n = 4: 2 * P^(2/3) = 32. The (4,4,2) torus checks the same cut by exact search, and the
    # closed form is counted on the graph.
    assert topology("torus", dims=(4, 4, 4)).bisection(method="closed_form").links == 2 * 4 ** 2
    assert topology("torus", dims=(4, 4, 2)).bisection(method="exact").links == 2 * 4 * 2
    # n = 3: 2 * P^(2/3) = 18, but the minimum is 26
    assert topology("torus", dims=(3, 3, 3)).bisection(method="exact").links == 26


@pytest.mark.parametrize("k", [4, 6, 8, 12])
def test_seed_fat_tree_diameter_formula_is_wrong(k):
    P = k ** 3 / 4
    seed = 2 * math.log(P, k / 2) + 2
    t = topology("fat_tree", k=k)
    assert t.diameter() == 6  # host-edge-agg-core-agg-edge-host, for every k
    assert seed > 6.5


@pytest.mark.parametrize("k", [4, 6, 8])
def test_seed_fat_tree_switch_counts(k):
    g = topology("fat_tree", k=k).graph
    count = {lvl: sum(1 for v in g if v[0] == lvl) for lvl in ("edge", "agg", "core", "host")}
    assert count["host"] == k ** 3 // 4  # the seed is right here
    assert count["core"] == k ** 2 // 4  # and here
    assert count["edge"] == count["agg"] == k ** 2 // 2  # the seed says k^2/4: wrong by a factor of 2


@pytest.mark.parametrize("k,r", [(4, 1), (4, 2), (8, 2), (8, 4)])
def test_seed_oversubscribed_fat_tree_bisection(k, r):
    P = k ** 3 // 4
    t = topology("fat_tree", k=k, oversubscription=r)
    method = "exact" if t.graph.number_of_nodes() <= 40 else "upper_bound"
    assert t.bisection(method=method).links == P // (2 * r)  # seed: P b / (2 r)


def test_seed_dragonfly_diameter_counts_router_hops():
    t = topology("dragonfly", a=4, p=2, h=2)
    assert t.diameter() == 5  # host links: host-router, local, global, local, router-host
    routers = t.graph.subgraph(t.switches)
    assert nx.diameter(routers) == 3  # the seed's "3" is router-to-router hops


def test_seed_hypercube_diameter_is_not_minimal_for_its_degree():
    # the seed: "the shortest diameter possible for any topology connecting P nodes with
    # the same node degree". The Wagner graph has 8 nodes of degree 3 and diameter 2 < 3.
    wagner = nx.circulant_graph(8, [1, 4])
    assert {d for _, d in wagner.degree()} == {3}
    assert nx.diameter(wagner) == 2 < topology("hypercube", d=3).diameter()


def test_seed_ring_and_16_gpu_examples():
    assert topology("ring", p=16).diameter() == 8 and topology("ring", p=16).bisection_links() == 2
    line = nx.path_graph(16)
    assert nx.diameter(line) == 15
    assert topology("torus", dims=(4, 4)).diameter() == 4


# ---------------------------------------------------------------------------
# the DGX cluster
# ---------------------------------------------------------------------------


def test_dgx_bandwidths_per_direction():
    t = topology("dgx", nodes=2)
    bw = {(d["link"], d["bandwidth"]) for _, _, d in t.graph.edges(data=True)}
    assert bw == {("nvlink", 450e9), ("infiniband", 50e9)}
    assert H100_NVLINK_BANDWIDTH == 18 * 25e9 == 900e9 / 2
    assert NDR_NIC_BANDWIDTH == 400e9 / 8


@pytest.mark.parametrize("nodes", [2, 4])
def test_dgx_bisection_bandwidth_is_full(nodes):
    t = topology("dgx", nodes=nodes)
    method = "exact" if nodes == 2 else "upper_bound"
    b = t.bisection(method=method, weight="bandwidth")
    assert b.bandwidth == pytest.approx(t.n_hosts / 2 * NDR_NIC_BANDWIDTH)  # half the GPUs' NICs
    if nodes == 2:
        assert b.exact


def test_bandwidth_weight_needs_bandwidths():
    with pytest.raises(ValueError, match="weight='bandwidth'"):
        topology("torus", dims=(4, 4)).bisection(weight="bandwidth")


# ---------------------------------------------------------------------------
# rings laid on topologies
# ---------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(2, 7), min_size=1, max_size=3))
def test_ring_order_on_a_torus_is_a_hamiltonian_cycle(dims):
    t = topology("torus", dims=tuple(dims))
    order = ring_order(t)
    assert sorted(order) == sorted(t.hosts)
    if len(order) > 1:
        for u, v in zip(order, order[1:] + order[:1]):
            assert t.graph.has_edge(u, v) or (u == v)
    loads = ring_link_loads(t)
    assert set(loads.hops) == {1}
    assert loads.max_load == 1


@pytest.mark.parametrize("d", [1, 2, 3, 5, 7])
def test_hypercube_ring_is_a_gray_code(d):
    t = topology("hypercube", d=d)
    order = ring_order(t)
    assert sorted(order) == list(range(2 ** d))
    for u, v in zip(order, order[1:] + order[:1]):
        assert bin(u ^ v).count("1") == 1


def test_naive_order_on_a_torus_costs_extra_hops():
    t = topology("torus", dims=(4, 4))
    naive = ring_link_loads(t, t.hosts)
    assert sorted(naive.hops) == [1] * 12 + [2] * 4
    assert sum(naive.loads.values()) == sum(naive.hops)


@pytest.mark.parametrize("case", [("fat_tree", dict(k=4)), ("dragonfly", dict(a=2, p=2, h=1)),
                                  ("dgx", dict(nodes=3))], ids=_id)
def test_ring_loads_on_indirect_networks(case):
    kind, size = case
    t = topology(kind, **size)
    loads = ring_link_loads(t)
    assert sum(loads.loads.values()) == sum(loads.hops)
    assert loads.max_load >= 1
    ecmp = ring_link_loads(t, routing="ecmp")
    assert sum(ecmp.loads.values()) == pytest.approx(sum(ecmp.hops))
    assert ecmp.max_load <= loads.max_load + 1e-9


def test_fat_tree_host_order_ring_uncongested():
    assert ring_link_loads(topology("fat_tree", k=6)).max_load == 1


def test_dgx_ring_crosses_nodes_on_one_rail():
    t = topology("dgx", nodes=4)
    loads = ring_link_loads(t)
    inter = [r for r in loads.routes if r[0][1] != r[-1][1]]
    assert len(inter) == 4
    # node j -> node j+1 goes GPU - leaf - GPU on the same rail (the last one wraps around 8 rails)
    assert sum(1 for r in inter if len(r) == 3 and r[1][0] == "leaf") == 3


# ---------------------------------------------------------------------------
# arguments
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind,size,match", [
    ("fat_tree", dict(k=5), "k must be an even integer"),
    ("fat_tree", dict(k=0), "k must be an integer >= 2"),
    ("fat_tree", dict(k=8, oversubscription=3), "oversubscription must divide k/2 = 4"),
    ("fat_tree", dict(k=8, oversubscription=0), "oversubscription must be an integer >= 1"),
    ("ring", dict(p=0), "p must be an integer >= 2"),
    ("ring", dict(p=1), "p must be an integer >= 2"),
    ("torus", dict(dims=(4, 1)), r"dims\[1\] must be an integer >= 2"),
    ("torus", dict(dims=()), "dims must have at least one"),
    ("hypercube", dict(d=0), "d must be an integer"),
    ("dragonfly", dict(a=0, p=1, h=1), "a must be an integer >= 1"),
    ("dragonfly", dict(a=2, p=1), "needs h"),
    ("ring", dict(p=4, q=3), "unexpected q"),
    ("dgx", dict(nodes=2, nic_bandwidth=-1), "nic_bandwidth must be a finite number > 0"),
])
def test_bad_sizes_name_the_argument(kind, size, match):
    with pytest.raises((ValueError, TypeError), match=match):
        topology(kind, **size)


def test_bad_kind_and_methods():
    with pytest.raises(ValueError, match="kind must be one of"):
        topology("mesh", p=4)
    t = topology("ring", p=4)
    with pytest.raises(ValueError, match="method must be one of"):
        t.diameter(method="guess")
    with pytest.raises(ValueError, match="method must be one of"):
        t.bisection(method="guess")
    with pytest.raises(ValueError, match="order must list every host"):
        ring_link_loads(t, [0, 1, 2])
    with pytest.raises(TypeError, match="topo must be a Topology"):
        ring_order("ring")
    with pytest.raises(ValueError, match="needs a proven bisection formula"):
        topology("dragonfly", a=2, p=1, h=1).bisection(method="closed_form")


def test_exported_from_top_level():
    assert dl.topology is topology and dl.topology_closed_form is topology_closed_form
    assert dl.topology("torus", dims=(4, 4)).diameter() == 4


# ---------------------------------------------------------------------------
# a ring that crosses the bisection in every message: congestion >= P / (2 b)
# ---------------------------------------------------------------------------

CROSSING = [("torus", dict(dims=(4, 4))), ("torus", dict(dims=(3, 5))), ("torus", dict(dims=(4, 8))),
            ("hypercube", dict(d=4)), ("fat_tree", dict(k=4)), ("fat_tree", dict(k=4, oversubscription=2)),
            ("ring", dict(p=9)), ("dragonfly", dict(a=2, p=2, h=1)), ("dgx", dict(nodes=2))]


@pytest.mark.parametrize("case", CROSSING, ids=_id)
def test_crossing_ring_congestion_is_at_least_p_over_twice_the_bisection(case):
    from distlib.topology import crossing_ring_order

    kind, size = case
    t = topology(kind, **size)
    order = crossing_ring_order(t)
    assert sorted(order, key=repr) == sorted(t.hosts, key=repr)
    side = t.bisection().side
    P = t.n_hosts
    crossings = sum((order[i] in side) != (order[(i + 1) % P] in side) for i in range(P))
    assert crossings >= P - 1 - (P % 2)  # every message but the odd host's crosses
    bound = (P // 2) / t.bisection().links
    for routing in ("shortest", "ecmp"):
        assert ring_link_loads(t, order, routing=routing).max_load >= bound - 1e-9


def test_crossing_ring_separates_full_bisection_from_thin_networks():
    from distlib.topology import crossing_ring_order

    fat = topology("fat_tree", k=4)
    assert ring_link_loads(fat, crossing_ring_order(fat), routing="ecmp").max_load == pytest.approx(1.0)
    thin = topology("fat_tree", k=4, oversubscription=2)
    assert ring_link_loads(thin, crossing_ring_order(thin), routing="ecmp").max_load == pytest.approx(2.0)
    assert ring_link_loads(thin, routing="ecmp").max_load == pytest.approx(1.0)  # pod by pod: no congestion
    with pytest.raises(TypeError, match="topo must be a Topology"):
        crossing_ring_order("torus")
    assert dl.crossing_ring_order is crossing_ring_order
