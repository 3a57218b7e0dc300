"""The simulated ring all-reduce: results, schedule and bytes (chapter 1)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import distlib as dl
from distlib.ring import ALL_GATHER, REDUCE_SCATTER


@settings(max_examples=60, deadline=None)
@given(p=st.integers(1, 64), n=st.integers(0, 200), seed=st.integers(0, 2**32 - 1))
def test_ring_equals_numpy_sum_exactly_on_integers(p, n, seed):
    rng = np.random.default_rng(seed)
    buffers = rng.integers(-1000, 1000, size=(p, n))
    trace = dl.simulate_ring_allreduce(buffers)
    expected = buffers.sum(axis=0)
    assert trace.result.shape == (p, n)
    assert (trace.result == expected).all()


@settings(max_examples=40, deadline=None)
@given(p=st.integers(1, 64), n=st.integers(0, 300))
def test_ring_equals_numpy_sum_on_floats(p, n):
    buffers = np.random.default_rng(p * 1000 + n).standard_normal((p, n))
    trace = dl.simulate_ring_allreduce(buffers)
    np.testing.assert_allclose(trace.result, np.broadcast_to(buffers.sum(axis=0), (p, n)), rtol=1e-12, atol=1e-12)
    # every rank ends with bit-identical buffers: each chunk is reduced once, then copied
    assert (trace.result == trace.result[0]).all()


@settings(max_examples=60, deadline=None)
@given(p=st.integers(1, 64), n=st.integers(0, 500), itemsize=st.sampled_from([1, 2, 4, 8]))
def test_bytes_sent_match_formula(p, n, itemsize):
    dtype = {1: np.int8, 2: np.float16, 4: np.float32, 8: np.float64}[itemsize]
    trace = dl.simulate_ring_allreduce(np.zeros((p, n), dtype=dtype))
    S = n * itemsize
    # the total is exact; each rank is within one element per step of the formula
    assert trace.bytes_sent.sum() == 2 * (p - 1) * S
    assert np.all(np.abs(trace.bytes_sent - dl.ring_bytes_per_rank(S, p)) <= 2 * (p - 1) * itemsize)
    if n % p == 0:
        assert np.all(trace.bytes_sent == dl.ring_bytes_per_rank(S, p))
    # the trace's transfers add up to the per-rank counters
    per_rank = np.zeros(p, dtype=np.int64)
    for step in trace.steps:
        for t in step:
            per_rank[t.src] += t.n_bytes
    assert (per_rank == trace.bytes_sent).all()


@pytest.mark.parametrize("p", [1, 2, 3, 4, 7, 16])
def test_schedule_shape(p):
    trace = dl.simulate_ring_allreduce(np.ones((p, 3 * p + 1)))
    assert len(trace.steps) == 2 * (p - 1)
    for s, step in enumerate(trace.steps):
        assert len(step) == p
        assert sorted(t.src for t in step) == list(range(p))
        assert all(t.dst == (t.src + 1) % p for t in step)
        assert sorted(t.chunk for t in step) == list(range(p))  # every chunk moves once per step
        assert {t.phase for t in step} == {REDUCE_SCATTER if s < p - 1 else ALL_GATHER}
        assert all(t.step == s for t in step)


def test_after_reduce_scatter_rank_r_owns_chunk_r_plus_1():
    p = 5
    trace = dl.simulate_ring_allreduce(np.eye(p))
    held = trace.holdings(p - 1).sum(axis=2)
    for r in range(p):
        assert held[r, (r + 1) % p] == p
        assert (np.delete(held[r], (r + 1) % p) < p).all()
    assert trace.holdings(2 * (p - 1)).all()
    assert (trace.holdings(0).sum(axis=2) == 1).all()


def test_mean_divides_by_p_and_input_is_untouched():
    x = np.arange(12.0).reshape(3, 4)
    before = x.copy()
    trace = dl.simulate_ring_allreduce(x, op="mean")
    np.testing.assert_allclose(trace.result[1], x.mean(axis=0))
    assert (x == before).all()


def test_chunk_bounds_differ_by_at_most_one():
    for n in range(0, 40):
        for p in range(1, 12):
            sizes = np.diff(dl.chunk_bounds(n, p))
            assert sizes.sum() == n and sizes.max() - sizes.min() <= 1


def test_ring_bytes_per_rank_rises_toward_two_buffers():
    values = [dl.ring_bytes_per_rank(1.0, p) for p in range(1, 200)]
    assert values[0] == 0.0
    assert all(a < b for a, b in zip(values, values[1:]))
    assert values[-1] < 2.0


@pytest.mark.parametrize(
    "bad, exc, words",
    [
        (np.ones((0, 4)), ValueError, "at least one row"),
        (np.ones(4), ValueError, "2-D"),
        (np.ones((2, 2, 2)), ValueError, "2-D"),
        ([["a", "b"]], TypeError, "buffers"),
    ],
)
def test_bad_buffers(bad, exc, words):
    with pytest.raises(exc, match=words):
        dl.simulate_ring_allreduce(bad)


def test_bad_op_and_bytes():
    with pytest.raises(ValueError, match="op"):
        dl.simulate_ring_allreduce(np.ones((2, 2)), op="max")
    with pytest.raises(ValueError, match="p must be an integer >= 1"):
        dl.ring_bytes_per_rank(10, 0)
    with pytest.raises(ValueError, match="n_bytes"):
        dl.ring_bytes_per_rank(-1, 4)
    with pytest.raises(ValueError, match="n_bytes"):
        dl.ring_bytes_per_rank(float("nan"), 4)
    with pytest.raises(ValueError, match="step"):
        dl.simulate_ring_allreduce(np.ones((3, 3))).holdings(5)
