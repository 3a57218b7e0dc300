"""The all-to-all's alpha-beta model (distlib/collectives/alltoall.py): pairwise exchange and Bruck's algorithm.

The closed forms against brute-force counts for every p up to 69, the crossover between the two, and the messages
of bad arguments. tests/test_engines_alltoall.py checks that the algorithms really send what the model counts.
"""

import math

import numpy as np
import pytest

import distlib as dl
from distlib.collectives import (ALLTOALL_ALGORITHMS, alltoall_coefficients, alltoall_crossover_size, alltoall_time,
                                 bruck_blocks_per_round, fastest_alltoall)


def _set_bits_below(p):
    return sum(bin(j).count("1") for j in range(p))


@pytest.mark.parametrize("p", range(1, 70))
def test_coefficients_are_the_closed_forms(p):
    assert alltoall_coefficients(p, algorithm="pairwise") == (p - 1, (p - 1) / p)
    a, b = alltoall_coefficients(p, algorithm="bruck")
    assert a == (math.ceil(math.log2(p)) if p > 1 else 0)
    assert b * p == pytest.approx(_set_bits_below(p))  # S(p): the one bits of 0 .. p-1
    # each round's count is the brute-force count of places j in [1, p) with that bit set
    assert bruck_blocks_per_round(p) == tuple(sum(1 for j in range(1, p) if j >> k & 1) for k in range(a))
    if p & (p - 1) == 0 and p > 1:  # a power of two: half the data every round (Thakur et al. 2005)
        assert b == pytest.approx(math.log2(p) / 2)
        assert bruck_blocks_per_round(p) == (p // 2,) * a
    else:  # other p: the rounds carry less than half, so (n/2) ceil(lg p) over-counts
        assert b <= a / 2


def test_times_are_alpha_beta_of_the_coefficients():
    n = np.array([0.0, 1e3, 1e6, 1e9])
    for p in (1, 2, 5, 8, 64):
        for algorithm in ALLTOALL_ALGORITHMS:
            a, b = alltoall_coefficients(p, algorithm=algorithm)
            got = alltoall_time(n, p, alpha=3e-6, bandwidth=25e9, algorithm=algorithm)
            assert np.allclose(got, a * 3e-6 + b * n / 25e9, rtol=1e-12, atol=0)
    assert alltoall_time(1e9, 1, alpha=1e-5, bandwidth=1e9) == 0.0


@pytest.mark.parametrize("p", [4, 5, 8, 16, 33, 256])
def test_crossover_splits_bruck_from_pairwise(p):
    alpha, bw = 2e-6, 40e9
    n = alltoall_crossover_size(p, alpha=alpha, bandwidth=bw)
    t = lambda size, a: alltoall_time(size, p, alpha=alpha, bandwidth=bw, algorithm=a)  # noqa: E731
    assert t(n, "bruck") == pytest.approx(t(n, "pairwise"), rel=1e-9)
    assert t(0.5 * n, "bruck") < t(0.5 * n, "pairwise") and fastest_alltoall(0.5 * n, p, alpha=alpha, bandwidth=bw) == "bruck"
    assert t(2 * n, "bruck") > t(2 * n, "pairwise") and fastest_alltoall(2 * n, p, alpha=alpha, bandwidth=bw) == "pairwise"


def test_no_crossover_where_the_costs_are_equal_or_latency_is_free():
    for p in (1, 2, 3):  # ceil(lg p) = p - 1 and S(p) = p - 1: one cost
        assert alltoall_coefficients(p, algorithm="bruck") == pytest.approx(alltoall_coefficients(p))
        assert alltoall_crossover_size(p, alpha=1e-6, bandwidth=1e9) is None
        assert fastest_alltoall(1e3, p, alpha=1e-6, bandwidth=1e9) == "pairwise"
    assert alltoall_crossover_size(8, alpha=0.0, bandwidth=1e9) is None


def test_ulysses_asks_the_collectives_model():
    from distlib.context_parallel import alltoall_time as cp_alltoall_time

    for p in (1, 2, 4, 7):
        assert cp_alltoall_time(3e6, p, alpha=1e-5, bandwidth=2e9) == alltoall_time(3e6, p, alpha=1e-5, bandwidth=2e9)


def test_top_level_exports():
    assert dl.alltoall_time is alltoall_time and dl.fastest_alltoall is fastest_alltoall
    assert dl.ALLTOALL_ALGORITHMS == ("pairwise", "bruck")


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: alltoall_time(1e6, 0, alpha=1e-6, bandwidth=1e9), ValueError, "p must be an integer >= 1"),
        (lambda: alltoall_time(1e6, 2.5, alpha=1e-6, bandwidth=1e9), TypeError, "p must be an integer"),
        (lambda: alltoall_time(-1, 4, alpha=1e-6, bandwidth=1e9), ValueError, "n_bytes must be a finite number >= 0"),
        (lambda: alltoall_time(1e6, 4, alpha=-1, bandwidth=1e9), ValueError, "alpha must be a finite number >= 0"),
        (lambda: alltoall_time(1e6, 4, alpha=1e-6, bandwidth=0), ValueError, "bandwidth must be a finite number > 0"),
        (lambda: alltoall_time(1e6, 4, alpha=1e-6, bandwidth=1e9, algorithm="ring"), ValueError,
         "algorithm must be one of 'pairwise', 'bruck'"),
        (lambda: alltoall_crossover_size(4, alpha=float("nan"), bandwidth=1e9), ValueError, "alpha"),
        (lambda: fastest_alltoall(float("inf"), 4, alpha=1e-6, bandwidth=1e9), ValueError, "n_bytes"),
        (lambda: bruck_blocks_per_round(0), ValueError, "p must be an integer >= 1"),
    ],
)
def test_bad_arguments_name_themselves(call, error, match):
    with pytest.raises(error, match=match):
        call()
