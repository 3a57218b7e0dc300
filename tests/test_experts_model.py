"""Chapter 15's model (distlib/experts_model.py): parameters, routing, capacity, balance, node limits, all-to-all."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from distlib import alltoall_time
from distlib.experts_model import (BALANCING_RULES, MOE_MODELS, aux_loss_gradient, balance_simulation, bias_update,
                                   capacity, dispatch_matrix, dispatch_stats, expert_ranks, keep_mask, moe_alltoall,
                                   moe_model, moe_params, node_limited_route, node_traffic, route, router_logits,
                                   switch_aux_loss)
from distlib.topology import alltoall_on_topology, topology
from distlib.train import experts as trainer

FAST = settings(max_examples=60, deadline=None)


@st.composite
def routed(draw, *, max_tokens=24, max_experts=8):
    """Logits of a small batch (ties likely: few distinct values), a top-k and an optional capacity factor."""
    experts = draw(st.integers(1, max_experts))
    tokens = draw(st.integers(1, max_tokens))
    logits = draw(arrays(float, (tokens, experts), elements=st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0])))
    top_k = draw(st.integers(1, experts))
    factor = draw(st.one_of(st.none(), st.sampled_from([0.1, 0.5, 1.0, 1.1, 1.25, 2.0])))
    return logits, top_k, factor


# ---- parameters ----------------------------------------------------------------------------------------------


def test_deepseek_v3_counts_671b_in_all_and_37b_active():
    # arXiv:2412.19437: 671B total, 37B activated per token; its release's notes: 36.6B active with the output
    # head and without the input embedding. Tolerances: 0.5% in all; 0.5% against the 36.6B, 2% against the 37B.
    v3 = moe_model("deepseek-v3")
    assert v3.total == pytest.approx(671e9, rel=0.005)
    assert v3.active == pytest.approx(36.6e9, rel=0.005)
    assert v3.active == pytest.approx(37e9, rel=0.02) and v3.active_with_embedding == pytest.approx(37e9, rel=0.02)
    assert v3.routed == 58 * 256 * 3 * 7168 * 2048 and v3.shared == 58 * v3.expert  # 3 dense layers of 61
    assert v3.moe_layer_active == 9 * v3.expert + 7168 * 256  # 8 routed + 1 shared, and the router


def test_mixtral_counts_46_7b_in_all_and_12_9b_active():
    # Mistral AI: 46.7B total, 12.9B per token (which counts the input embedding); arXiv:2401.04088: 47B, 13B.
    mx = moe_model("mixtral-8x7b")
    assert mx.total == pytest.approx(46.7e9, rel=0.005)
    assert mx.active_with_embedding == pytest.approx(12.9e9, rel=0.005)
    assert mx.active == pytest.approx(12.9e9, rel=0.015)
    assert mx.head == mx.embedding == 32000 * 4096


@given(hidden=st.integers(1, 64), ffn=st.integers(1, 64), experts=st.integers(1, 16), data=st.data(),
       shared=st.integers(0, 2), layers=st.integers(1, 5), vocab=st.integers(0, 100), tied=st.booleans())
@FAST
def test_active_parameters_grow_with_top_k_and_equal_the_total_at_top_k_e(hidden, ffn, experts, data, shared,
                                                                           layers, vocab, tied):
    top_k = data.draw(st.integers(1, experts))
    kw = dict(shared_experts=shared, layers=layers, vocab=vocab, tied_embeddings=tied)
    p = moe_params(hidden, ffn, experts, top_k, **kw)
    full = moe_params(hidden, ffn, experts, experts, **kw)
    parts = p.attention + p.norms + p.dense_ffn + p.routed + p.shared + p.router + p.embedding + p.head
    assert p.total == parts == full.total
    assert p.active <= p.total and p.active == full.active - layers * (experts - top_k) * p.expert
    # every expert chosen: all but the input embedding (the output projection counts once, tied or not)
    assert full.active == full.total - full.embedding - full.head + vocab * hidden
    assert p.training_flops_per_token == 3 * p.forward_flops_per_token == pytest.approx(6 * p.active)
    assert p.weight_bytes == 2 * p.total and p.active_bytes == 2 * p.active


def test_moe_params_names_a_bad_argument():
    with pytest.raises(ValueError, match="top_k must be an integer in \\[1, 8\\]"):
        moe_params(16, 32, 8, 9)
    with pytest.raises(ValueError, match="dense_layers must be an integer in \\[0, 3\\]"):
        moe_params(16, 32, 8, 2, layers=4, dense_layers=4)
    with pytest.raises(ValueError, match="name must be one of 'deepseek-v3', 'mixtral-8x7b'"):
        moe_model("gpt-4")
    assert set(MOE_MODELS) == {"deepseek-v3", "mixtral-8x7b"}


# ---- routing -------------------------------------------------------------------------------------------------


@given(routed())
@FAST
def test_softmax_routing_is_the_trainers(case):
    logits, top_k, _ = case
    mine, theirs = route(logits, top_k), trainer.route(logits, top_k)
    assert np.array_equal(mine.choices, theirs.choice)
    assert np.allclose(mine.weights, theirs.gates) and np.allclose(mine.scores, theirs.probs)


@given(routed(), st.sampled_from(["softmax", "sigmoid"]), st.data())
@FAST
def test_the_bias_changes_the_choice_never_the_weights(case, gate, data):
    logits, top_k, _ = case
    experts = logits.shape[1]
    bias = np.array(data.draw(st.lists(st.sampled_from([-0.5, 0.0, 0.25, 1.0]), min_size=experts,
                                       max_size=experts)))
    plain, biased = route(logits, top_k, gate=gate), route(logits, top_k, gate=gate, bias=bias)
    assert np.array_equal(plain.scores, biased.scores)  # the scores are the gate's, no bias
    picked = np.take_along_axis(plain.scores, biased.choices, axis=1)
    assert np.allclose(biased.weights, picked / picked.sum(axis=1, keepdims=True))  # weighed without the bias
    assert np.allclose(biased.weights.sum(axis=1), 1.0) and (biased.weights >= 0).all()
    # the chosen are the best by score + bias
    chosen = np.take_along_axis(plain.scores + bias, biased.choices, axis=1)
    assert (np.diff(chosen, axis=1) <= 0).all()
    rest = np.ones(logits.shape, dtype=bool)
    np.put_along_axis(rest, biased.choices, False, axis=1)
    if rest.any(axis=1).all() and top_k < experts:
        assert (chosen.min(axis=1) >= np.where(rest, plain.scores + bias, -np.inf).max(axis=1) - 1e-12).all()
    # a bias equal for every expert changes nothing
    assert np.array_equal(route(logits, top_k, gate=gate, bias=np.full(experts, 0.7)).choices, plain.choices)


def test_route_names_a_bad_argument():
    with pytest.raises(ValueError, match="gate must be one of 'softmax', 'sigmoid'"):
        route([[0.0, 1.0]], 1, gate="relu")
    with pytest.raises(ValueError, match="bias must have one entry per expert \\(2\\)"):
        route([[0.0, 1.0]], 1, bias=[0.0])
    with pytest.raises(ValueError, match="logits must hold only finite numbers"):
        route([[0.0, np.nan]], 1)


# ---- capacity and drops --------------------------------------------------------------------------------------


@given(routed())
@FAST
def test_drops_are_the_trainers_and_each_expert_keeps_min_of_load_and_capacity(case):
    logits, top_k, factor = case
    tokens, experts = logits.shape
    cap = capacity(tokens, experts, top_k, factor)
    r = trainer.route(logits, top_k, factor=factor)
    s = dispatch_stats(r.choice, experts, cap)
    assert np.array_equal(s.mask, r.kept) and s.dropped_total == r.dropped  # the very rule of the trainer
    assert s.kept.sum() + s.dropped.sum() == tokens * top_k == s.load.sum()  # conservation
    expected = s.load if cap is None else np.minimum(s.load, cap)
    assert np.array_equal(s.kept, expected)
    if cap is None or cap >= tokens:
        assert s.dropped_total == 0 and s.drop_fraction == 0.0


@given(tokens=st.integers(0, 10_000), experts=st.integers(1, 256), data=st.data(),
       factor=st.floats(0.01, 8.0, allow_nan=False))
@FAST
def test_capacity_is_the_rounded_up_share(tokens, experts, data, factor):
    top_k = data.draw(st.integers(1, experts))
    cap = capacity(tokens, experts, top_k, factor)
    assert cap == math.ceil(factor * tokens * top_k / experts - 1e-9)
    assert trainer.capacity is capacity  # one rule: the trainer imports the chapter's
    assert cap * experts >= factor * tokens * top_k - 1e-6 * experts  # room for F times the mean load
    assert capacity(tokens, experts, top_k, factor * 2) >= cap and capacity(tokens, experts, top_k, None) is None


def test_capacity_and_keep_name_a_bad_argument():
    with pytest.raises(ValueError, match="capacity_factor must be a finite number > 0"):
        capacity(10, 4, 1, 0.0)
    with pytest.raises(ValueError, match="choices must be expert indices in \\[0, 3\\]"):
        keep_mask([[4]], 4, 1)
    with pytest.raises(TypeError, match="choices must be an array of expert indices"):
        keep_mask([[0.5]], 4, 1)


# ---- balance -------------------------------------------------------------------------------------------------


@given(arrays(float, (6, 4), elements=st.floats(-3, 3)), st.integers(1, 4), st.floats(0.001, 0.1))
@FAST
def test_the_aux_loss_is_alpha_when_uniform_and_its_gradient_is_the_losss(logits, top_k, alpha):
    r = route(logits, top_k)
    uniform = np.full((4, 4), 0.25)
    assert switch_aux_loss(uniform, np.arange(4)[:, None], alpha=alpha) == pytest.approx(alpha)
    g = aux_loss_gradient(r.scores, r.choices, alpha=alpha)
    f = np.bincount(r.choices.ravel(), minlength=4) / r.choices.size  # held fixed: a count has no gradient
    for j in range(4):
        e = np.zeros(4)
        e[j] = 1e-6
        up, down = route(logits + e, top_k).scores, route(logits - e, top_k).scores
        numeric = alpha * 4 * (f @ up.mean(axis=0) - f @ down.mean(axis=0)) / 2e-6
        assert g[j] == pytest.approx(numeric, abs=1e-7)
    assert abs(g.sum()) < 1e-12  # a shift of every offset changes no softmax


@given(arrays(np.int64, st.integers(1, 12), elements=st.integers(0, 50)), st.floats(0.0, 0.1))
@FAST
def test_the_bias_falls_for_overloaded_and_rises_for_underloaded_experts(load, gamma):
    b = bias_update(np.zeros(load.size), load, gamma)
    mean = load.mean()
    assert np.allclose(b[load > mean], -gamma) and np.allclose(b[load < mean], gamma)
    assert np.all(b[load == mean] == 0)


@pytest.mark.parametrize("experts", [8, 64])
def test_balancing_brings_a_skewed_router_near_the_mean(experts):
    kw = dict(tokens=2048, experts=experts, top_k=2, skew=2.0, steps=40, seed=1)
    runs = {b: balance_simulation(**kw, balancing=b) for b in BALANCING_RULES}
    first = runs["none"].imbalance[0]
    assert first > 3 and all(r.imbalance[0] == first for r in runs.values())  # the same first step
    assert runs["none"].imbalance[-10:].mean() > 3  # nothing pulls it back
    for b in ("aux", "bias"):
        late = runs[b].imbalance[-10:].mean()
        assert late < 0.6 * first and late < 1.8, (b, late)
    assert np.all(runs["bias"].offsets[: experts // 4] < 0) and np.all(runs["bias"].offsets[-experts // 4:] > 0)
    assert runs["bias"].loads.sum(axis=1).tolist() == [2048 * 2] * 40  # every token routed, every step


def test_router_logits_skew_the_first_experts_up_and_nothing_without_skew():
    flat = route(router_logits(20000, 4, skew=0.0), 1).load()
    assert flat.max() / flat.mean() < 1.05
    skewed = route(router_logits(20000, 4, skew=1.0), 1).load()
    assert list(skewed) == sorted(skewed, reverse=True)


# ---- node-limited routing ------------------------------------------------------------------------------------


@given(st.integers(1, 4), st.integers(1, 4), st.data())
@FAST
def test_node_limited_routing_never_uses_more_than_max_nodes(nodes, per, data):
    max_nodes = data.draw(st.integers(1, nodes))
    top_k = data.draw(st.integers(1, max_nodes * per))
    logits = data.draw(arrays(float, (8, nodes * per), elements=st.sampled_from([-1.0, 0.0, 0.5, 2.0])))
    r = node_limited_route(logits, top_k, per, max_nodes)
    t = node_traffic(r.choices, per, nodes=nodes)
    assert (t.nodes <= max_nodes).all() and (t.nodes >= 1).all()
    assert (t.remote_nodes <= t.remote_experts).all() and (t.remote_experts <= top_k).all()
    assert np.allclose(r.weights.sum(axis=1), 1.0)
    assert all(len(set(row)) == top_k for row in r.choices.tolist())  # k distinct experts
    if max_nodes == nodes:  # no limit: the plain routing
        assert np.array_equal(r.choices, route(logits, top_k, gate="sigmoid").choices)


def test_deepseek_v3s_limit_cuts_the_cross_node_bytes():
    # 256 experts on 8 nodes, top-8, at most 4 nodes a token; skewed random scores
    logits = router_logits(4000, 256, skew=1.0, seed=3)
    free = node_traffic(route(logits, 8, gate="sigmoid").choices, 32, nodes=8)
    limited = node_traffic(node_limited_route(logits, 8, 32, 4).choices, 32, nodes=8)
    assert limited.nodes.max() == 4 < free.nodes.max()
    assert limited.bytes_per_token(7168) < free.bytes_per_token(7168)
    assert free.bytes_per_token(7168, deduplicate=False) == pytest.approx(free.remote_experts.mean() * 7168 * 2)


# ---- the all-to-all ------------------------------------------------------------------------------------------


@given(tokens=st.integers(0, 5000), hidden=st.integers(1, 8192), top_k=st.integers(1, 8), ep=st.integers(1, 128),
       bpe=st.sampled_from([1.0, 2.0, 4.0]))
@FAST
def test_each_rank_sends_t_k_ep_minus_one_over_ep_rows_per_alltoall(tokens, hidden, top_k, ep, bpe):
    a = moe_alltoall(tokens, hidden, top_k=top_k, ep=ep, bytes_per_element=bpe)
    assert a.sent == pytest.approx(tokens * top_k * (ep - 1) / ep * hidden * bpe)
    assert a.sent_per_layer == pytest.approx(4 * a.sent)
    one = alltoall_time(a.n_bytes, ep, alpha=5e-6, bandwidth=50e9)
    assert a.time(alpha=5e-6, bandwidth=50e9) == pytest.approx(4 * one)


def test_the_alltoall_meets_the_topology_models_injection_bound():
    a = moe_alltoall(4096, 4096, top_k=2, ep=16)
    r = alltoall_on_topology(topology("fat_tree", k=4), a.n_bytes, link_bandwidth=50e9)  # 16 hosts
    assert r.p == 16 and r.injection_time * r.host_bandwidth == pytest.approx(a.sent)


@given(st.sampled_from([1, 2, 4, 8]), st.integers(1, 4), st.integers(1, 6))
@FAST
def test_uniform_routing_sends_the_closed_form(ep, per_rank_experts, top_k):
    experts = ep * per_rank_experts
    top_k = min(top_k, experts)
    tokens = ep * experts  # each rank's tokens choose every expert equally often
    choices = (np.arange(tokens)[:, None] + np.arange(top_k)[None, :]) % experts
    m = dispatch_matrix(choices, np.ones(choices.shape, bool), experts=experts, ep=ep)
    off = m.sum(axis=1) - np.diag(m)
    a = moe_alltoall(tokens // ep, 8, top_k=top_k, ep=ep)
    assert m.sum() == tokens * top_k and np.allclose(off * 8 * 2, a.sent)
    assert expert_ranks(experts, ep).tolist() == sorted(expert_ranks(experts, ep).tolist())


def test_dropped_assignments_are_not_sent():
    choices = np.array([[0], [0], [0], [1]])
    s = dispatch_stats(choices, 2, 1)
    m = dispatch_matrix(choices, s.mask, experts=2, ep=2)
    assert m.sum() == s.kept.sum() == 2
    with pytest.raises(ValueError, match="ep must divide the 3 experts"):
        expert_ranks(3, 2)
