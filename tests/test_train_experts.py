"""The mixture-of-experts MLP (distlib.train.experts) in one process: its gradients against central differences,
Mixtral's top-k gates, GShard's capacity order, dropped tokens through the residual only, the routing counts,
and a dense model left as it was."""

from __future__ import annotations

import math

import numpy as np
import pytest

from distlib.engines.comm import run_threads
from distlib.layout import Layout
from distlib.train.data import global_batch
from distlib.train.experts import LocalExperts, Routed, capacity, moe_forward, route
from distlib.train.model import Config, _expert_mlp, init_units, loss_and_grads, unit_specs
from distlib.train.rank import train_rank

MOE = Config(experts=4, top_k=2)


def _worst_relative_error(config, seed=1, batch=3) -> tuple:
    """Central differences at three elements of every tensor of every unit: the worst relative error, and the
    kinds of tensor checked (``("block", "w1.2")``, ...)."""
    units = init_units(config, seed)
    tokens, targets = global_batch(seed, 0, batch=batch, seq=config.seq, vocab=config.vocab)
    _, grads = loss_and_grads(config, units, tokens, targets)
    h, checked, worst = 1e-5, set(), 0.0
    for k, spec in enumerate(unit_specs(config)):
        for name, (a, b) in spec.offsets().items():
            for i in (a, (a + b) // 2 + 1, b - 1):
                if abs(grads[k][i]) < 1e-8:  # an embedding row no token uses, an expert no token reached: 0
                    continue
                plus, minus = [u.copy() for u in units], [u.copy() for u in units]
                plus[k][i] += h
                minus[k][i] -= h
                fd = (loss_and_grads(config, plus, tokens, targets)[0]
                      - loss_and_grads(config, minus, tokens, targets)[0]) / (2 * h)  # fmt: skip
                # relative, less 1e-10: a few roundings of the loss (about 5, so 1e-15) over 2h are the difference's
                worst = max(worst, (abs(fd - grads[k][i]) - 1e-10) / max(abs(fd), abs(grads[k][i])))
                checked.add((spec.name.rstrip("0123456789"), name))
    return worst, checked


@pytest.mark.parametrize("factor", [None, 1.0], ids=["unbounded", "capacity 1.0"])
def test_every_gradient_of_the_mixture_matches_central_differences(factor):
    config = Config(layers=2, experts=4, top_k=2, capacity_factor=factor)
    worst, checked = _worst_relative_error(config)
    kinds = {(s.name.rstrip("0123456789"), n) for s in unit_specs(config) for n, _, _ in s.tensors}
    assert checked == kinds  # the router and every tensor of every expert, at least one element each
    assert worst < 1e-6


def test_a_router_gradient_off_by_a_little_would_be_caught():
    config = Config(layers=1, experts=4, top_k=2)
    units = init_units(config, 0)
    tokens, targets = global_batch(0, 0, batch=2)
    _, grads = loss_and_grads(config, units, tokens, targets)
    i = unit_specs(config)[1].offsets()["wr"][0] + 5
    plus, minus = [u.copy() for u in units], [u.copy() for u in units]
    plus[1][i] += 1e-5
    minus[1][i] -= 1e-5
    fd = (loss_and_grads(config, plus, tokens, targets)[0] - loss_and_grads(config, minus, tokens, targets)[0]) / 2e-5
    assert abs(fd - grads[1][i] * (1 + 1e-4)) / abs(fd) > 1e-6 > abs(fd - grads[1][i]) / abs(fd)


def test_gates_are_the_softmax_of_the_top_k_logits_as_mixtral_writes_them():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((50, 8))
    r = route(logits, 3)
    top = np.sort(logits, axis=1)[:, ::-1][:, :3]  # the three largest, best first
    want = np.exp(top - top.max(axis=1, keepdims=True))
    assert np.allclose(r.gates, want / want.sum(axis=1, keepdims=True), atol=1e-15)
    assert np.array_equal(np.take_along_axis(logits, r.choice, axis=1), top)
    assert route(np.zeros((1, 4)), 2).choice.tolist() == [[0, 1]]  # ties: the lower expert first
    assert np.all(route(logits, 1).gates == 1.0)  # top-1: the gate is always one


def test_capacity_gives_places_choice_by_choice_then_by_position():
    # Three tokens, two experts, top-2, factor 0.5: capacity ceil(0.5 * 3 * 2 / 2) = 2 per expert.
    # First choices: tokens 0 and 1 pick expert 0, token 2 picks expert 1. Second choices then: token 0 -> 1
    # (expert 1's second place), token 1 -> 1 (full: dropped), token 2 -> 0 (full: dropped).
    logits = np.array([[2.0, 1.0], [2.0, 1.0], [1.0, 2.0]])
    r = route(logits, 2, factor=0.5)
    assert r.capacity == 2
    assert r.kept.tolist() == [[True, True], [True, False], [True, False]]
    assert r.per_expert().tolist() == [2, 2] and r.dropped == 2
    # By position alone (token 0's two choices, then token 1's, ...) token 1 would have kept both: not this rule.
    assert capacity(3, 2, 2, 0.5) == 2 and capacity(192, 4, 2, 1.25) == math.ceil(1.25 * 192 * 2 / 4)
    assert route(logits, 2).kept.all() and route(logits, 2).capacity is None


def test_a_token_whose_every_choice_is_dropped_passes_through_the_residual_only():
    config = Config(layers=1, experts=4, top_k=2, capacity_factor=0.25)
    units = init_units(config, 2)
    p = unit_specs(config)[1].views(units[1])
    h = np.random.default_rng(3).standard_normal((40, config.hidden))
    routed = Routed(config.experts)
    y, (routing, *_rest) = moe_forward(p, h, top_k=2, factor=0.25, mlp=_expert_mlp,
                                       exchange=LocalExperts(4, routed=routed))  # fmt: skip
    none_kept = ~routing.kept.any(axis=1)
    assert none_kept.sum() > 0 and np.all(y[none_kept] == 0.0)  # nothing added to their residual
    assert np.all(np.abs(y[~none_kept]).sum(axis=1) > 0)
    routed.end_step()
    assert routed.dropped_tokens == [routing.dropped] and sum(routed.tokens_per_expert[0]) == 80 - routing.dropped
    assert max(routed.tokens_per_expert[0]) <= capacity(40, 4, 2, 0.25) == 5


def test_one_process_counts_every_assignment_each_step_and_learns():
    c = Config(experts=4, top_k=2, capacity_factor=1.0)
    one = run_threads(lambda comm: train_rank(comm, Layout(), steps=4, seed=5, config=c), 1, timeout=60)[0]
    assignments = c.batch * c.seq * c.top_k * c.layers
    assert [sum(t) + d for t, d in zip(one.tokens_per_expert, one.dropped_tokens)] == [assignments] * 4
    assert all(d > 0 for d in one.dropped_tokens)  # a factor of 1 drops some: the routing is never even
    cap = capacity(c.batch * c.seq, 4, 2, 1.0) * c.layers
    assert all(max(t) <= cap for t in one.tokens_per_expert)
    assert one.losses[-1] < one.losses[0]
    unbounded = run_threads(lambda comm: train_rank(comm, Layout(), steps=1, seed=5, config=MOE), 1, timeout=60)[0]
    assert unbounded.dropped_tokens == [0] and sum(unbounded.tokens_per_expert[0]) == assignments


def test_a_dense_config_is_the_book_model_and_experts_replace_its_mlps():
    assert Config(experts=0) == Config() and Config().params == 105280 and not Config().moe
    mlp = 2 * 32 * 128 + 128 + 32  # one dense MLP: w1, b1, w2, b2
    assert MOE.params == 105280 + 8 * (3 * mlp + 32 * 4)  # four experts and a router in place of one MLP


@pytest.mark.parametrize("kwargs, message", [
    (dict(experts=4, top_k=5), r"top_k must be an integer .*4"),
    (dict(experts=4, top_k=0), r"top_k must be"),
    (dict(top_k=2), r"top_k needs experts"),
    (dict(experts=4, top_k=2, capacity_factor=0.0), r"capacity_factor must be a finite number > 0, got 0.0"),
    (dict(capacity_factor=1.0), r"capacity_factor needs experts"),
])
def test_a_config_that_cannot_route_is_refused_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Config(**kwargs)


def test_experts_whole_on_every_rank_checkpoint_and_resume_at_another_layout(tmp_path):
    def run(lay, steps, **kwargs):
        return run_threads(lambda comm: train_rank(comm, lay, steps=steps, seed=3, config=MOE, **kwargs), lay.ranks,
                           timeout=120)  # fmt: skip

    whole = run(Layout(), 4)[0]
    run(Layout(dp=2, zero=1), 2, checkpoint_dir=tmp_path)
    after = run(Layout(dp=2, zero=3), 4, checkpoint_dir=tmp_path, resume=True)
    assert after[0].first_step == 3
    assert max(abs(a - b) / b for a, b in zip(after[0].losses, whole.losses[2:])) < 1e-9
    assert abs(sum(r.checksum_part for r in after) - whole.checksum_part) / whole.checksum_part < 1e-9
