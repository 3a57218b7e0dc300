"""Context parallelism's model (distlib/context_parallel.py): its laws, on arrays, for any split and rank count."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distlib.context_parallel as cpm
from distlib.context_parallel import (CP_KINDS, causal_pairs, cp_chunks, cp_comm, cp_layer, cp_positions,
                                      merge_partials, online_softmax_attention, ring_attention, ring_overlap_tokens,
                                      ring_timeline, softmax_attention, softmax_attention_backward, work_imbalance)


def _arrays(seed, shape, count):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for _ in range(count)]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 24), d=st.integers(1, 6), seed=st.integers(0, 2**16), causal=st.booleans(), data=st.data())
def test_online_softmax_equals_softmax_for_any_block_split(n, d, seed, causal, data):
    cuts = sorted(data.draw(st.sets(st.integers(1, n - 1), max_size=min(n - 1, 6))) if n > 1 else [])
    blocks = np.diff([0, *cuts, n]).tolist()
    q, k, v = _arrays(seed, (2, n, d), 3)
    out, lse = online_softmax_attention(q, k, v, blocks=blocks, causal=causal)
    assert np.allclose(out, softmax_attention(q, k, v, causal=causal), rtol=1e-12, atol=1e-12)
    assert np.all(np.isfinite(lse))


@settings(max_examples=30, deadline=None)
@given(cp=st.integers(1, 6), chunk=st.integers(1, 4), split=st.sampled_from(cpm.SPLITS), seed=st.integers(0, 2**16))
def test_ring_attention_equals_full_attention_forward_and_backward(cp, chunk, split, seed):
    seq = (2 * cp if split == "zigzag" else cp) * chunk
    q, k, v, do = _arrays(seed, (2, seq, 3), 4)
    r = ring_attention(q, k, v, cp=cp, split=split, grad_output=do)
    assert np.allclose(r.output, softmax_attention(q, k, v), rtol=1e-12, atol=1e-12)
    for mine, want in zip((r.dq, r.dk, r.dv), softmax_attention_backward(q, k, v, do)):
        assert np.allclose(mine, want, rtol=1e-10, atol=1e-12)
    # cp - 1 hops of keys and values forward; backward the blocks again and their gradients, cp - 1 hops each
    kinds = {(h.phase, h.what): max(x.step for x in r.hops if (x.phase, x.what) == (h.phase, h.what)) for h in r.hops}
    assert all(steps == cp - 1 for steps in kinds.values())
    assert r.messages.tolist() == [3 * (cp - 1)] * cp
    assert all(h.dst == (h.src + 1) % cp for h in r.hops)


@settings(max_examples=40, deadline=None)
@given(cp=st.integers(1, 16), m=st.integers(1, 64))
def test_zigzag_balances_the_causal_work_within_10_percent_and_contiguous_does_not(cp, m):
    seq = 2 * cp * m
    zig = causal_pairs(seq, cp)
    assert work_imbalance(zig) <= 1.1
    assert zig.tolist() == [m * m * (2 * cp - 1) + m * (m + 1)] * cp  # the closed form, every rank alike
    cont = causal_pairs(seq, cp, split="contiguous")
    n = seq // cp
    assert cont.tolist() == [n * n * c + n * (n + 1) // 2 for c in range(cp)]
    assert zig.sum() == cont.sum() == seq * (seq + 1) // 2
    if cp >= 2:
        assert work_imbalance(cont) > 1.1
        assert math.isclose(work_imbalance(cont), 1 + 2 * (cp - 1) * n / (n + 1))  # -> 2 cp - 1


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_measured_ring_work_per_rank_balanced_with_zigzag_and_not_contiguous(cp):
    q, k, v, do = _arrays(0, (1, 16 * cp, 4), 4)
    zig = ring_attention(q, k, v, cp=cp, grad_output=do)
    cont = ring_attention(q, k, v, cp=cp, split="contiguous", grad_output=do)
    for flops in (zig.forward_flops, zig.backward_flops):
        assert work_imbalance(flops) <= 1.1
    # whole blocks: rank c computes c + 1 of them (the diagonal one whole), the last cp times the first
    assert math.isclose(work_imbalance(cont.forward_flops), cp)
    assert math.isclose(work_imbalance(cont.backward_flops), cp)


def test_positions_cover_the_sequence_once():
    for split in cpm.SPLITS:
        got = np.concatenate([cp_positions(24, 3, r, split=split) for r in range(3)])
        assert sorted(got.tolist()) == list(range(24))
    assert cp_chunks(8, 2, 0) == ((0, 2), (6, 8))


def test_merge_is_exact_and_handles_rows_that_saw_nothing():
    o, lse = merge_partials(np.zeros((1, 2)), np.array([-np.inf]), np.ones((1, 2)), np.array([0.3]))
    assert o.tolist() == [[1.0, 1.0]] and lse.tolist() == [0.3]
    o, lse = merge_partials(np.zeros((1, 2)), np.array([-np.inf]), np.zeros((1, 2)), np.array([-np.inf]))
    assert o.tolist() == [[0.0, 0.0]] and lse.tolist() == [-np.inf]


@pytest.mark.parametrize("kind", CP_KINDS)
def test_comm_counts_fall_or_hold_as_the_kinds_say(kind):
    shape = dict(seq=4096, heads=32, head_dim=128, kv_heads=8)
    two, eight = (cp_comm(kind, cp=c, **shape) for c in (2, 8))
    piece = lambda c: 2 * (4096 // c) * 8 * 128 * 2  # noqa: E731  one rank's K and V, bf16
    if kind == "ulysses":
        assert eight.bytes < two.bytes  # each rank's share of an all-to-all falls with cp
        assert two.forward_messages == 2 and eight.forward_messages == 14
    else:
        assert two.bytes == 3 * piece(2) and eight.bytes == 3 * 7 * piece(8)
        assert eight.forward_steps == 7 and eight.backward_messages == 14
    assert cp_comm(kind, cp=1, **shape).bytes == 0


def test_ulysses_needs_cp_to_divide_the_heads():
    with pytest.raises(ValueError, match="cp must divide the 4 heads"):
        cp_comm("ulysses", seq=64, heads=8, head_dim=8, cp=8, tp=2)


def test_ring_timeline_closed_forms_and_threshold():
    for c, t, cp in ((2.0, 1.0, 4), (1.0, 3.0, 4), (1.0, 1.0, 8)):
        assert math.isclose(ring_timeline([c] * cp, t).step_time, c + (cp - 1) * max(c, t))
        assert math.isclose(ring_timeline([c] * cp, t, overlap=False).step_time, cp * c + (cp - 1) * t)
    # at the threshold the hop and the block it hides under take the same time
    kw = dict(flops=1e15, bandwidth=25e9, heads=16, head_dim=64, kv_heads=4, alpha=20e-6, work=0.5)
    n = ring_overlap_tokens(**kw)
    compute = 0.5 * 4 * n * n * 16 * 64 / 1e15
    transfer = 20e-6 + 2 * n * 4 * 64 * 2 / 25e9
    assert math.isclose(compute, transfer, rel_tol=1e-9)


def test_layer_memory_falls_as_one_over_cp():
    kw = dict(seq=65536, hidden=8192, heads=64, kv_heads=8, tp=8, flops=4e14, bandwidth=5e10)
    layers = {c: cp_layer("allgather", cp=c, **kw) for c in (1, 2, 4, 8)}
    for c, layer in layers.items():
        assert math.isclose(layer.activation_bytes * c, layers[1].activation_bytes)
        assert math.isclose(layer.attention_flops * c, layers[1].attention_flops, rel_tol=0.01)


@pytest.mark.parametrize("call, match", [
    (lambda: cp_chunks(10, 4, 0), "seq must be a multiple of 2 x cp"),
    (lambda: cp_chunks(16, 4, 4), "rank must be an integer"),
    (lambda: ring_attention(np.ones((6, 2)), np.ones((6, 2)), np.ones((6, 2)), cp=2), "multiple of 2 x cp"),
    (lambda: online_softmax_attention(np.ones((4, 2)), np.ones((4, 2)), np.ones((4, 2)), blocks=[1, 2]),
     "blocks must add up"),
    (lambda: cp_comm("mesh", seq=8, heads=2, head_dim=2, cp=2), "kind must be one of"),
    (lambda: ring_timeline([], 1.0), "compute_times must hold"),
])
def test_bad_input_is_one_line_naming_the_parameter(call, match):
    with pytest.raises((ValueError, TypeError), match=match) as err:
        call()
    assert "\n" not in str(err.value)


@settings(max_examples=40, deadline=None)
@given(cp=st.integers(2, 8), layers=st.integers(1, 4), seconds=st.floats(1e-3, 1.0), hop=st.floats(0.0, 1.0))
def test_ring_step_saving_is_what_the_timelines_hide(cp, layers, seconds, hop):
    saving = cpm.ring_step_saving(layers=layers, cp=cp, attention_seconds=seconds, hop_seconds=hop)
    # never more than the hops themselves, never more than the compute they hide under
    hops = layers * (cp - 1) * (hop + 2 * hop)
    assert -1e-12 <= saving <= hops + 1e-12
    assert saving <= layers * seconds + 1e-12
    if hop <= seconds * cpm.FORWARD_MATMULS / (cpm.FORWARD_MATMULS + cpm.BACKWARD_MATMULS) * 2 / (2 * cp + 1):
        assert math.isclose(saving, hops, rel_tol=1e-9, abs_tol=1e-15)  # every hop fits under its block


@settings(max_examples=30, deadline=None)
@given(cp=st.integers(1, 8), c=st.floats(0.0, 3.0), t=st.floats(0.0, 3.0), overlap=st.booleans())
def test_ring_schedule_of_equal_ranks_is_the_one_rank_timeline(cp, c, t, overlap):
    many = cpm.ring_schedule(np.full((cp, cp), c), t, overlap=overlap)
    one = ring_timeline([c] * cp, t, overlap=overlap)
    assert math.isclose(many.step_time, one.step_time, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_ring_work_rows_are_each_ranks_causal_pairs(cp):
    for split in cpm.SPLITS:
        work = cpm.ring_work(32 * cp, cp, split=split)
        assert work.sum(axis=1).tolist() == causal_pairs(32 * cp, cp, split=split).tolist()
    # with hops hidden, a contiguous ring's step is its busiest rank's work; zig-zag's is within 10% of the mean
    cont = cpm.ring_schedule(cpm.ring_work(32 * cp, cp, split="contiguous"), 0.0)
    zig = cpm.ring_schedule(cpm.ring_work(32 * cp, cp), 0.0)
    assert cont.step_time == cont.busy.max() and zig.step_time <= 1.1 * zig.busy.mean()


@settings(max_examples=40, deadline=None)
@given(cp=st.integers(1, 5), m=st.integers(1, 5), split=st.sampled_from(cpm.SPLITS))
def test_ring_work_counts_every_pair_the_mask_leaves(cp, m, split):
    seq = 2 * cp * m
    pos = [cp_positions(seq, cp, r, split=split) for r in range(cp)]
    brute = [[int(np.sum(pos[r][:, None] >= pos[(r - h) % cp][None, :])) for h in range(cp)] for r in range(cp)]
    assert cpm.ring_work(seq, cp, split=split).tolist() == brute
