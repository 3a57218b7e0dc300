"""The alpha-beta model: laws every algorithm obeys, bus bandwidth, fits, the seed's table."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distlib as dl
from distlib.collectives import (ALGORITHMS, ALLREDUCE_ALGORITHMS, COLLECTIVES, algorithm_bandwidth, bandwidth_lower_bound,
                                 bus_bandwidth, bus_factor, check_nccl_table, collective_time, cost_coefficients,
                                 crossover_size, fastest_algorithm, fit_alpha_beta, fit_report, load_nccl_table,
                                 p2p_time, regime)

ranks = st.integers(1, 4096)
sizes = st.floats(0, 1e11, allow_nan=False)
alphas = st.floats(0, 1e-3, allow_nan=False)
bandwidths = st.floats(1e6, 1e13, allow_nan=False)


# ---------------------------------------------------------------------------
# laws
# ---------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(n=sizes, p=ranks, alpha=alphas, bw=bandwidths)
def test_ring_allreduce_never_beats_the_bandwidth_bound(n, p, alpha, bw):
    t = collective_time("allreduce", n, p, alpha=alpha, bandwidth=bw)
    assert t >= 2 * (p - 1) / p * n / bw * (1 - 1e-12)


@settings(max_examples=300, deadline=None)
@given(coll=st.sampled_from(COLLECTIVES), alg=st.sampled_from(ALGORITHMS), n=sizes, p=ranks, alpha=alphas,
       bw=bandwidths)
def test_every_algorithm_respects_both_lower_bounds(coll, alg, n, p, alpha, bw):
    t = collective_time(coll, n, p, alpha=alpha, bandwidth=bw, algorithm=alg)
    a, b = cost_coefficients(coll, p, algorithm=alg)
    assert t == pytest.approx(a * alpha + b * n / bw, rel=1e-12, abs=1e-300)
    assert b * n / bw >= bandwidth_lower_bound(coll, n, p, bandwidth=bw) * (1 - 1e-12)
    # information can at most double per step: at least ceil(log2 p) message steps
    assert a >= (math.ceil(math.log2(p)) if p > 1 else 0)


@settings(max_examples=100, deadline=None)
@given(coll=st.sampled_from(["allreduce", "reduce_scatter", "allgather"]), k=st.integers(0, 12))
def test_halving_doubling_and_ring_share_the_bandwidth_term(coll, k):
    p = 2 ** k
    a_r, b_r = cost_coefficients(coll, p, algorithm="ring")
    a_h, b_h = cost_coefficients(coll, p, algorithm="halving_doubling")
    assert b_h == pytest.approx(b_r)
    assert a_h <= a_r  # so halving-doubling is never slower in this model ...
    assert crossover_size(coll, p, alpha=1e-6, bandwidth=1e10, algorithms=("halving_doubling", "ring")) is None


@settings(max_examples=200, deadline=None)
@given(coll=st.sampled_from(["allreduce", "reduce_scatter", "allgather", "broadcast", "reduce"]),
       n=st.floats(1, 1e11), p=st.integers(2, 4096), bw=bandwidths)
def test_busbw_of_a_perfect_ring_is_the_link_bandwidth(coll, n, p, bw):
    t = collective_time(coll, n, p, alpha=0.0, bandwidth=bw, algorithm="ring")
    assert bus_bandwidth(coll, n, p, t) == pytest.approx(bw, rel=1e-9)


@settings(max_examples=100, deadline=None)
@given(coll=st.sampled_from(COLLECTIVES), alg=st.sampled_from(ALGORITHMS), n=sizes, alpha=alphas, bw=bandwidths)
def test_one_rank_is_free(coll, alg, n, alpha, bw):
    assert collective_time(coll, n, 1, alpha=alpha, bandwidth=bw, algorithm=alg) == 0.0


def test_vectorised_sizes_match_scalars():
    n = np.logspace(0, 10, 11)
    for coll in COLLECTIVES:
        for alg in ALGORITHMS:
            arr = collective_time(coll, n, 12, alpha=3e-6, bandwidth=2e10, algorithm=alg)
            assert arr.shape == n.shape
            assert arr[5] == collective_time(coll, float(n[5]), 12, alpha=3e-6, bandwidth=2e10, algorithm=alg)


# ---------------------------------------------------------------------------
# formulas against their sources
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("p", [2, 3, 8, 100, 1000])
def test_tree_formulas(p):
    L = math.ceil(math.log2(p))
    n, alpha, bw = 1e6, 2e-6, 1e10
    bcast = L * (alpha + n / bw)  # the seed's binomial broadcast
    assert collective_time("broadcast", n, p, alpha=alpha, bandwidth=bw, algorithm="tree") == pytest.approx(bcast)
    assert collective_time("allreduce", n, p, alpha=alpha, bandwidth=bw, algorithm="tree") == pytest.approx(2 * bcast)


@pytest.mark.parametrize("p", [8, 64, 1024])
def test_recursive_doubling_swaps_the_whole_buffer_lg_p_times(p):
    lg = int(math.log2(p))
    assert cost_coefficients("allreduce", p, algorithm="recursive_doubling") == (lg, lg)
    # One more rank than a power of two: fold in and out around the same swaps.
    assert cost_coefficients("allreduce", p + 1, algorithm="recursive_doubling") == (lg + 2, lg + 2)
    # Fewest steps of all, so it wins the tiniest messages; most bytes, so the ring wins big ones.
    assert fastest_algorithm("allreduce", 8, p, alpha=5e-6, bandwidth=1e10, algorithms=ALLREDUCE_ALGORITHMS) == "recursive_doubling"
    assert fastest_algorithm("allreduce", 1e9, p, alpha=5e-6, bandwidth=1e10, algorithms=ALLREDUCE_ALGORITHMS) in ("ring", "halving_doubling")


@pytest.mark.parametrize("coll", ["reduce_scatter", "allgather", "broadcast", "reduce"])
def test_recursive_doubling_is_an_allreduce_only(coll):
    with pytest.raises(ValueError, match="recursive_doubling.*allreduce only.*" + coll):
        cost_coefficients(coll, 8, algorithm="recursive_doubling")


@pytest.mark.parametrize("p", [8, 64, 1024])
def test_halving_doubling_power_of_two_is_thakur_rabenseifner_gropp(p):
    # allreduce 2 lg p alpha + 2 (p-1)/p n beta
    assert cost_coefficients("allreduce", p, algorithm="halving_doubling") == (2 * int(math.log2(p)),
                                                                               pytest.approx(2 * (p - 1) / p))


@pytest.mark.parametrize("p", [3, 5, 6, 7, 12, 100, 1000])
def test_halving_doubling_non_power_of_two_follows_mpich(p):
    lg = math.floor(math.log2(p))
    pp = 2 ** lg
    # MPICH allreduce.c: (2 floor(lg p) + 2) alpha + (2 (p-1)/p + 2) n beta, with p' in place of p
    a, b = cost_coefficients("allreduce", p, algorithm="halving_doubling")
    assert a == 2 * lg + 2
    assert b == pytest.approx(2 * (pp - 1) / pp + 2)
    assert abs(b - (2 * (p - 1) / p + 2)) < 2 / pp
    # MPICH reduce.c: (2 floor(lg p) + 1) alpha + (2 (p-1)/p + 1) n beta
    a, b = cost_coefficients("reduce", p, algorithm="halving_doubling")
    assert a == 2 * lg + 1 and abs(b - (2 * (p - 1) / p + 1)) < 2 / pp
    # allgather (Bruck): ceil(lg p) alpha + (p-1)/p n beta
    assert cost_coefficients("allgather", p, algorithm="halving_doubling") == (math.ceil(math.log2(p)),
                                                                               pytest.approx((p - 1) / p))


def test_ring_broadcast_is_a_pipelined_chain():
    n, p, alpha, bw = 1e9, 16, 5e-6, 1e10
    assert collective_time("broadcast", n, p, alpha=alpha, bandwidth=bw) == pytest.approx((p - 1) * alpha + n / bw)
    # the limit of S pieces: (p - 2 + S)(alpha + n beta / S) approaches it from above
    s_best = min((p - 2 + s) * (alpha + n / bw / s) for s in range(1, 5000))
    assert s_best >= collective_time("broadcast", n, p, alpha=alpha, bandwidth=bw)


def test_p2p():
    assert p2p_time(0, alpha=3e-6, bandwidth=1e9) == 3e-6
    assert p2p_time(1e9, alpha=0, bandwidth=1e9) == 1.0


# ---------------------------------------------------------------------------
# crossover and regime
# ---------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(p=st.integers(3, 2048), alpha=st.floats(1e-8, 1e-3), bw=st.floats(1e8, 1e12),
       coll=st.sampled_from(COLLECTIVES))
def test_crossover_is_where_times_are_equal(p, alpha, bw, coll):
    x = crossover_size(coll, p, alpha=alpha, bandwidth=bw, algorithms=("tree", "ring"))
    if x is None:
        return
    t_tree = collective_time(coll, x, p, alpha=alpha, bandwidth=bw, algorithm="tree")
    t_ring = collective_time(coll, x, p, alpha=alpha, bandwidth=bw, algorithm="ring")
    assert t_tree == pytest.approx(t_ring, rel=1e-9)
    # the winner changes across it
    small, big = x / 10, x * 10
    assert (collective_time(coll, small, p, alpha=alpha, bandwidth=bw, algorithm="tree")
            < collective_time(coll, small, p, alpha=alpha, bandwidth=bw, algorithm="ring"))
    assert (collective_time(coll, big, p, alpha=alpha, bandwidth=bw, algorithm="tree")
            > collective_time(coll, big, p, alpha=alpha, bandwidth=bw, algorithm="ring"))


def test_seed_tree_ring_crossover_is_not_200_kb():
    # The seed: D* = alpha B log2 p = 1e-6 * 25e9 * 8 = 200 KB for p = 256. With the binomial-tree
    # all-reduce (reduce + broadcast) and the ring, the times cross at about 882 KB.
    x = crossover_size("allreduce", 256, alpha=1e-6, bandwidth=25e9, algorithms=("tree", "ring"))
    assert x == pytest.approx((510 - 16) / (16 - 2 * 255 / 256) * 1e-6 * 25e9)
    assert not 150e3 < x < 250e3
    t = lambda alg, n: collective_time("allreduce", n, 256, alpha=1e-6, bandwidth=25e9, algorithm=alg)  # noqa: E731
    assert t("tree", 200e3) < t("ring", 200e3)  # at the seed's 200 KB the tree still wins


def test_seed_latency_numbers_for_p_1000():
    # "At p = 1000 with alpha = 1 us, [ring latency] is ~2 ms"; tree "~20 us"
    assert cost_coefficients("allreduce", 1000)[0] * 1e-6 == pytest.approx(2e-3, rel=0.01)
    assert cost_coefficients("allreduce", 1000, algorithm="tree")[0] * 1e-6 == pytest.approx(20e-6)


def test_regime_n_half():
    p, alpha, bw = 8, 5e-6, 50e9
    r = regime("allreduce", 1.0, p, alpha=alpha, bandwidth=bw)
    assert r.n_half == pytest.approx(p * alpha * bw)  # ring: A/B = p
    at = regime("allreduce", r.n_half, p, alpha=alpha, bandwidth=bw)
    assert at.latency_time == pytest.approx(at.bandwidth_time)
    assert regime("allreduce", r.n_half / 2, p, alpha=alpha, bandwidth=bw).label == "latency-bound"
    assert regime("allreduce", r.n_half * 2, p, alpha=alpha, bandwidth=bw).label == "bandwidth-bound"
    # point to point: n* = alpha / beta, where the achieved rate is half the link's
    n_star = alpha * bw
    assert n_star / p2p_time(n_star, alpha=alpha, bandwidth=bw) == pytest.approx(bw / 2)


def test_fastest_algorithm():
    assert fastest_algorithm("allreduce", 1e9, 63, alpha=5e-6, bandwidth=50e9) == "ring"  # fold costs 2 n beta
    assert fastest_algorithm("allreduce", 1e2, 63, alpha=5e-6, bandwidth=50e9) in ("tree", "halving_doubling")
    with pytest.raises(ValueError, match="algorithms must be one of"):
        fastest_algorithm("allreduce", 1e2, 8, alpha=1e-6, bandwidth=1e9, algorithms=("ring", "magic"))


# ---------------------------------------------------------------------------
# bus bandwidth (nccl-tests PERFORMANCE.md)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("coll,factor", [("allreduce", 2 * 7 / 8), ("reduce_scatter", 7 / 8), ("allgather", 7 / 8),
                                         ("alltoall", 7 / 8), ("broadcast", 1.0), ("reduce", 1.0),
                                         ("sendrecv", 1.0)])
def test_bus_factors(coll, factor):
    assert bus_factor(coll, 8) == pytest.approx(factor)
    assert bus_bandwidth(coll, 1e9, 8, 0.01) == pytest.approx(1e11 * factor)


def test_algorithm_bandwidth_arrays():
    np.testing.assert_allclose(algorithm_bandwidth([1e3, 1e6], [1e-6, 1e-3]), [1e9, 1e9])
    with pytest.raises(ValueError, match="seconds must hold only positive"):
        algorithm_bandwidth([1e3], [0.0])


# ---------------------------------------------------------------------------
# fitting
# ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(alpha=st.floats(1e-7, 1e-4), bw=st.floats(1e8, 1e12), p=st.integers(2, 512),
       coll=st.sampled_from(COLLECTIVES), alg=st.sampled_from(ALGORITHMS))
def test_fit_recovers_noiseless_parameters(alpha, bw, p, coll, alg):
    a, b = cost_coefficients(coll, p, algorithm=alg)
    n_star = a / b * alpha * bw
    n = np.geomspace(n_star / 1e3, n_star * 1e3, 15)  # both regimes
    t = collective_time(coll, n, p, alpha=alpha, bandwidth=bw, algorithm=alg)
    fa, fbw = fit_alpha_beta(n, t, collective=coll, p=p, algorithm=alg)
    assert fa == pytest.approx(alpha, rel=1e-6)
    assert fbw == pytest.approx(bw, rel=1e-6)


def test_fit_with_multiplicative_noise_and_why_relative_weighting():
    rng = np.random.default_rng(0)
    alpha, bw, p = 4e-6, 200e9, 8
    n = np.geomspace(8, 8e9, 30)
    errs = {"relative": [], "absolute": []}
    for _ in range(20):
        t = collective_time("allreduce", n, p, alpha=alpha, bandwidth=bw) * rng.lognormal(0, 0.05, n.size)
        for w in errs:
            fa, fbw = fit_alpha_beta(n, t, p=p, weighting=w)
            errs[w].append((abs(fa / alpha - 1), abs(fbw / bw - 1)))
    rel = np.array(errs["relative"])
    ab = np.array(errs["absolute"])
    assert rel[:, 0].max() < 0.1 and rel[:, 1].max() < 0.1  # 5 % noise -> both within 10 %
    # absolute least squares fits the big times and lets alpha wander
    assert np.median(ab[:, 0]) > 3 * np.median(rel[:, 0])


def test_fit_report_held_out():
    n = np.geomspace(8, 8e9, 16)
    t = collective_time("allgather", n, 16, alpha=2e-6, bandwidth=25e9)
    r = fit_report(n, t, collective="allgather", p=16)
    assert r.train.sum() == 8 and r.heldout_residuals.size == 8
    assert r.max_relative_error < 1e-9 and r.heldout_max < 1e-9
    assert r.n_half == pytest.approx(16 * 2e-6 * 25e9)
    # a model with the wrong latency shows up in the residuals
    bad = t.copy()
    bad[:4] *= 2
    assert fit_report(n, bad, collective="allgather", p=16).max_relative_error > 0.2
    with pytest.raises(ValueError, match="train must select at least two"):
        fit_report(n, t, collective="allgather", p=16, train=[0])


def test_fit_on_the_seed_table():
    tab = load_nccl_table("nccl_tests_h100_seed")
    r = fit_report(tab.n_bytes, tab.seconds, p=tab.p)
    assert 0.5e-6 < r.alpha < 3e-6 and 150e9 < r.bandwidth < 300e9
    assert r.max_relative_error > 0.1  # one straight line does not describe NCCL's protocol switch


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(n_bytes=[1, 2, 3], seconds=[1, 2]), ValueError, "same length"),
    (dict(n_bytes=[5, 5, 5], seconds=[1, 2, 3]), ValueError, "at least two different sizes"),
    (dict(n_bytes=[1, 2], seconds=[1, -2]), ValueError, "seconds must hold only positive"),
    (dict(n_bytes=[1, 2], seconds=[1, 2], p=1), ValueError, "p must be an integer >= 2"),
    (dict(n_bytes=[1, 2], seconds=[1, 2], collective="gather"), ValueError, "collective must be one of"),
    (dict(n_bytes=[1, 2], seconds=[1, 2], weighting="log"), ValueError, "weighting must be one of"),
    (dict(n_bytes=[[1, 2]], seconds=[[1, 2]]), ValueError, "n_bytes must be a 1-D array"),
])
def test_fit_bad_inputs(kwargs, exc, match):
    args = dict(p=8)
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        fit_alpha_beta(args.pop("n_bytes"), args.pop("seconds"), **args)


@pytest.mark.parametrize("kwargs,match", [
    (dict(p=0), "p must be an integer >= 1"),
    (dict(alpha=-1e-6), "alpha must be a finite number >= 0"),
    (dict(alpha=float("nan")), "alpha must be a finite number"),
    (dict(bandwidth=0), "bandwidth must be a finite number > 0"),
    (dict(collective="scan"), "collective must be one of"),
    (dict(algorithm="butterfly"), "algorithm must be one of"),
    (dict(n_bytes=-1), "n_bytes must be a finite number >= 0"),
])
def test_bad_arguments_name_themselves(kwargs, match):
    args = dict(collective="allreduce", n_bytes=1e6, p=8, alpha=1e-6, bandwidth=1e9, algorithm="ring")
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        collective_time(args.pop("collective"), args.pop("n_bytes"), args.pop("p"), **args)


# ---------------------------------------------------------------------------
# the seed's nccl-tests table
# ---------------------------------------------------------------------------


def test_seed_table_loads_in_si_and_is_marked_unverified():
    tab = load_nccl_table("nccl_tests_h100_seed")
    assert not tab.verified and "UNVERIFIED" in tab.meta["status"]
    assert tab.p == 8 and tab.collective == "allreduce"
    assert tab.n_bytes.tolist() == [8, 1024, 65536, 2 ** 20, 2 ** 24, 2 ** 27, 2 ** 30]
    assert tab.seconds[0] == pytest.approx(14e-6)
    assert tab.busbw[-1] == pytest.approx(260.61e9)
    np.testing.assert_array_equal(tab.count * 4, tab.n_bytes)
    # algbw = size / time to the printed 0.01 GB/s
    np.testing.assert_allclose(tab.algbw, tab.n_bytes / tab.seconds, atol=0.005e9 + 1e-9)
    # busbw / algbw = 2 * 7 / 8 wherever both are large enough to compare
    big = tab.algbw > 1e9
    np.testing.assert_allclose(tab.busbw[big] / tab.algbw[big], 1.75, rtol=2e-3)


def test_seed_table_consistency_report():
    tab = load_nccl_table()
    strict = check_nccl_table(tab, allow_rounding=False)
    assert [(e["row"], e["column"]) for e in strict] == [(3, "busbw"), (4, "busbw"), (5, "busbw"), (6, "busbw")]
    loose = check_nccl_table(tab)
    assert [(e["row"], e["printed"], e["expected"]) for e in loose] == [(4, 186.99, 187.01), (6, 260.61, 260.62)]
    # a corrupted count is caught
    tab.count[2] += 1
    assert any(e["column"] == "count" for e in check_nccl_table(tab))


def test_load_unknown_table():
    with pytest.raises(ValueError, match="name must be one of"):
        load_nccl_table("nccl_tests_b200")
    with pytest.raises(ValueError, match="name must be the name of a shipped table"):
        load_nccl_table("../etc/passwd")


def test_exported_from_top_level():
    assert dl.collective_time is collective_time and dl.fit_alpha_beta is fit_alpha_beta
    assert dl.bus_bandwidth is bus_bandwidth


# ---------------------------------------------------------------------------
# in-network reduction (SHARP / NVLS), idealised
# ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(n=st.floats(1.0, 1e10), p=st.integers(3, 4096), bw=st.floats(1e8, 1e12))
def test_in_network_reduction_beats_the_point_to_point_bound(n, p, bw):
    from distlib.collectives import in_network_allreduce_time

    t = in_network_allreduce_time(n, p, alpha=0.0, bandwidth=bw)
    assert t == pytest.approx(n / bw)
    assert t < bandwidth_lower_bound("allreduce", n, p, bandwidth=bw)
    # so nccl-tests' busbw (factor 2(p-1)/p) exceeds the link rate, by exactly that factor
    busbw = bus_bandwidth("allreduce", n, p, t)
    assert busbw > bw
    assert busbw == pytest.approx(2 * (p - 1) / p * bw)


def test_in_network_reduction_latency_and_edge_cases():
    from distlib.collectives import in_network_allreduce_time

    assert in_network_allreduce_time(0.0, 8, alpha=3e-6, bandwidth=1e9) == pytest.approx(6e-6)  # up and down
    assert in_network_allreduce_time(1e6, 1, alpha=3e-6, bandwidth=1e9) == 0.0
    np.testing.assert_allclose(in_network_allreduce_time([0.0, 1e9], 2, alpha=1e-6, bandwidth=1e9), [2e-6, 1 + 2e-6])
    assert dl.in_network_allreduce_time is in_network_allreduce_time
    with pytest.raises(ValueError, match="p must be an integer >= 1"):
        in_network_allreduce_time(1e6, 0, alpha=1e-6, bandwidth=1e9)
    with pytest.raises(ValueError, match="bandwidth must be a finite number > 0"):
        in_network_allreduce_time(1e6, 8, alpha=1e-6, bandwidth=0)
    with pytest.raises(ValueError, match="alpha must be a finite number >= 0"):
        in_network_allreduce_time(1e6, 8, alpha=-1.0, bandwidth=1e9)
