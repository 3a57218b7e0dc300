"""The book's all-to-alls (distlib/engines/alltoall.py) on threads and on real ranks.

Threads: every algorithm against a NumPy reference for p = 1..8 and any length, divisible by p or not, and for
any matrix of uneven counts; the bytes and messages each rank sends against the cost model's coefficients.
Real ranks: one launch per rank count runs distlib.engines.alltoall_selftest, which checks every result element by
element against NumPy and against mpi4py's Alltoall/Alltoallv (MPICH) or torch's all_to_all_single (gloo).
"""

import importlib.util
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distlib.collectives import alltoall_coefficients, bruck_blocks_per_round
from distlib.engines import alltoall, alltoallv, exchange_counts, run_mpi, run_threads, run_torch, stray_processes
from distlib.engines.alltoall import ENGINE_ALLTOALL_ALGORITHMS
from distlib.engines.alltoall_selftest import expected, uneven_counts
from distlib.engines.comm import CountingComm, SubComm
from conftest import NO_MPI, have_mpi

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _reference(data, counts):
    """NumPy's all-to-all: ``data[s]`` cut into blocks ``counts[s, :]``; rank ``d`` gets block ``d`` of each, in order."""
    p = len(data)
    cuts = [np.split(data[s], np.cumsum(counts[s])[:-1]) for s in range(p)]
    return [np.concatenate([cuts[s][d] for s in range(p)]) for d in range(p)]


def _even(p, n):
    q, extra = divmod(n, p)
    return np.tile([q + (j < extra) for j in range(p)], (p, 1))


# ---- threads: results -----------------------------------------------------------------------------------------------


@FAST
@given(p=st.integers(1, 8), n=st.integers(0, 40), seed=st.integers(0, 2**16),
       algorithm=st.sampled_from(ENGINE_ALLTOALL_ALGORITHMS), dtype=st.sampled_from(["float64", "int32"]))
def test_alltoall_equals_numpy_for_any_p_and_length(p, n, seed, algorithm, dtype):
    data = np.random.default_rng(seed).integers(-1000, 1000, size=(p, n)).astype(dtype)
    out = run_threads(lambda c: alltoall(c, data[c.rank].copy(), algorithm=algorithm), p)
    for got, want in zip(out, _reference(data, _even(p, n))):
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)


@FAST
@given(p=st.integers(1, 8), seed=st.integers(0, 2**16), most=st.integers(0, 9),
       algorithm=st.sampled_from(ENGINE_ALLTOALL_ALGORITHMS), given_counts=st.booleans())
def test_alltoallv_equals_numpy_for_any_counts(p, seed, most, algorithm, given_counts):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, most + 1, size=(p, p))
    data = [rng.standard_normal(int(counts[s].sum())) for s in range(p)]

    def work(c):
        recv = counts[:, c.rank].tolist() if given_counts else None
        return alltoallv(c, data[c.rank], counts[c.rank].tolist(), recv_counts=recv, algorithm=algorithm)

    for got, want in zip(run_threads(work, p), _reference(data, counts)):
        assert np.array_equal(got, want)


def test_the_selftest_reference_is_numpys():
    # expected() (what real ranks check against) agrees with the reference above.
    for p in (1, 3, 6):
        counts = uneven_counts(p, seed=2)
        data = [(1000 * s + np.arange(counts[s].sum())).astype("float64") for s in range(p)]
        for r, want in enumerate(_reference(data, counts)):
            assert np.array_equal(expected(r, counts, "float64"), want)


def test_buffer_is_left_alone_and_results_are_new():
    def work(c):
        x = np.arange(10.0) + 100 * c.rank
        before = x.copy()
        outs = [alltoall(c, x, algorithm=a) for a in ENGINE_ALLTOALL_ALGORITHMS]
        return np.array_equal(x, before), [np.shares_memory(o, x) for o in outs]

    for same, shared in run_threads(work, 4):
        assert same and not any(shared)


def test_exchange_counts_is_the_transpose():
    counts = np.arange(25).reshape(5, 5)
    out = run_threads(lambda c: exchange_counts(c, counts[c.rank].tolist()), 5)
    assert out == counts.T.tolist()


# ---- threads: what each rank sends, against the model ---------------------------------------------------------------


@pytest.mark.parametrize("p", [2, 3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("algorithm", ["pairwise", "bruck"])
def test_bytes_and_messages_are_the_models(p, algorithm):
    # n divisible by p: each rank sends B * n bytes in A messages, the coefficients of the cost model.
    n = 24 * 8 * 7 * 5  # elements; divisible by every p here

    def work(c):
        counted = CountingComm(c)
        alltoall(counted, np.ones(n), algorithm=algorithm)
        return counted.bytes_sent, counted.messages, counted.collectives

    rounds, share = alltoall_coefficients(p, algorithm=algorithm)
    for sent, messages, kinds in run_threads(work, p):
        assert sent == pytest.approx(share * n * 8, rel=1e-12)
        assert messages == rounds
        assert kinds == {"alltoall": 1}
    if algorithm == "bruck":  # and round by round: place counts times the block size
        assert sum(bruck_blocks_per_round(p)) * (n // p) * 8 == pytest.approx(share * n * 8)


def test_empty_blocks_send_no_message():
    # Rank s sends only to s + 1: pairwise posts one message per rank, the rest are skipped at both ends.
    def work(c):
        counts = [0] * c.size
        counts[(c.rank + 1) % c.size] = 3
        counted = CountingComm(c)
        out = alltoallv(counted, np.full(3, float(c.rank)), counts, recv_counts=[3 if s == (c.rank - 1) % c.size else 0
                                                                                    for s in range(c.size)])  # fmt: skip
        return counted.messages, out.tolist()

    out = run_threads(work, 5)
    assert [m for m, _ in out] == [1] * 5
    assert [o for _, o in out] == [[float((r - 1) % 5)] * 3 for r in range(5)]


def test_runs_on_a_sub_communicator():
    def work(c):
        half = [0, 2, 4] if c.rank % 2 == 0 else [1, 3, 5]
        return alltoall(SubComm(c, half), np.full(3, float(c.rank)), algorithm="bruck").tolist()

    out = run_threads(work, 6)
    assert out[2] == [0.0, 2.0, 4.0] and out[3] == [1.0, 3.0, 5.0]


# ---- bad arguments --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "work, error, match",
    [
        (lambda c: alltoall(c, np.ones(4), algorithm="ring"), ValueError, "algorithm must be one of 'pairwise', 'bruck', 'builtin'"),
        (lambda c: alltoallv(c, np.ones(4), [2, 2, 0]), ValueError, r"counts must have one entry per rank \(2\), got 3"),
        (lambda c: alltoallv(c, np.ones(4), [2, 1]), ValueError, r"counts must add up to the buffer's length \(4"),
        (lambda c: alltoallv(c, np.ones(4), [5, -1]), ValueError, r"counts\[1\] must be an integer >= 0"),
        (lambda c: alltoallv(c, np.ones(4), "22"), TypeError, "counts must be a sequence"),
        (lambda c: alltoallv(c, np.ones(4), [2, 2], recv_counts=[1, 1], algorithm="bruck"), ValueError,
         r"recv_counts must be what the ranks send rank \d, \[2, 2\]"),
    ],
)
def test_bad_arguments_name_themselves(work, error, match):
    with pytest.raises(error, match=match):
        run_threads(work, 2, timeout=5)
    with pytest.raises(TypeError, match="comm"):
        alltoall(object(), np.ones(2))


# ---- real ranks ---------------------------------------------------------------------------------------------------------

needs_mpi = pytest.mark.skipif(not have_mpi(), reason=NO_MPI)
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed (pip install torch)")


@pytest.mark.engines
@needs_mpi
@pytest.mark.parametrize("p", [2, 3, 4, 5, 8])
def test_matches_mpich_alltoall_and_alltoallv(p):
    # Sizes 0, 1, p-1, p, p+1, 2p+3, 13, 1000, 65537 (512 KiB of float64: past MPICH's eager limit); float64 and int32.
    sizes = "0,1,{},{},{},{},13,1000,65537".format(p - 1, p, p + 1, 2 * p + 3)
    dtypes = "float64,int32" if p <= 4 else "float64"  # 2 cores: keep the 8-rank run short
    result = run_mpi("distlib.engines.alltoall_selftest", p, args=["--engine", "mpi", "--sizes", sizes,
                                                                   "--dtypes", dtypes], timeout=120)  # fmt: skip
    summary = json.loads(result.lines(0)[-1])
    assert summary == {"engine": "mpi", "p": p, "checks": summary["checks"], "failures": []}
    # per rank and dtype: 6 checks a size (3 algorithms against NumPy, 2 against the built-in, buf untouched), 8 uneven
    assert summary["checks"] == p * (9 * 6 + 8) * len(dtypes.split(","))
    assert stray_processes(result.run_id) == []


@pytest.mark.engines
@needs_torch
@pytest.mark.parametrize("p, engine", [(2, "gloo"), (3, "gloo"), (5, "gloo"), (3, "gloo-numpy")])
def test_matches_gloo_all_to_all_single(p, engine):
    sizes = "0,1,{},{},13,1000,65537".format(p + 1, 2 * p + 3)
    result = run_torch("distlib.engines.alltoall_selftest:main", p, args=["--engine", engine, "--sizes", sizes,
                                                                          "--dtypes", "float64,int32"], timeout=180)  # fmt: skip
    summary = json.loads(result.lines(0)[-1])
    assert summary == {"engine": "gloo", "p": p, "checks": summary["checks"], "failures": []}
    assert summary["checks"] == p * 2 * (7 * 6 + 8)  # as on MPI: every size, algorithm and uneven check, both dtypes
    assert result.returncodes == [0] * p
    assert stray_processes(result.run_id) == []
