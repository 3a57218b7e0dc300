"""The planner with experts: the shape's counts, expert parallelism in the step, the DeepSeek-V3 row and its reasons."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distlib as dl
from distlib.collectives.alltoall import alltoall_time
from distlib.planner.experts import explain_layout
from distlib.planner.published import published_layouts, published_moe_layouts
from distlib.planner.step import ep_alltoall_link, layout_step, published_cluster, published_model


def _moe(experts=8, top_k=2, **kw):
    args = dict(seq=256, vocab=1000, gated_ffn=True, biases=False, tied_embeddings=False, learned_positions=False)
    args.update(kw)
    return dl.transformer(4, 256, 8, experts=experts, top_k=top_k, expert_ffn_hidden=128, **args)


V3 = {r.id: r for r in published_moe_layouts()}["deepseek_v3_671b"]


# ---- the shape ------------------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(experts=st.integers(1, 64), data=st.data(), shared=st.integers(0, 2), moe_layers=st.integers(1, 4))
def test_active_params_count_top_k_and_shared_experts_and_params_count_them_all(experts, data, shared, moe_layers):
    top_k = data.draw(st.integers(1, experts))
    m = _moe(experts, top_k, shared_experts=shared, moe_layers=moe_layers)
    e = m.expert_params
    assert m.params - m.active_params == moe_layers * (experts - top_k) * e
    assert m.routed_expert_params == moe_layers * experts * e
    assert m.training_flops_per_token == pytest.approx(6 * m.active_params + 12 * m.seq * m.hidden * m.layers)
    dense = dl.transformer(4, 256, 8, seq=256, vocab=1000, ffn_hidden=m.ffn_hidden, gated_ffn=True, biases=False,
                           tied_embeddings=False, learned_positions=False)
    # each MoE layer swaps the dense MLP for (experts + shared) experts and an h x experts router
    per_layer = (experts + shared) * e + m.hidden * experts - 3 * m.hidden * m.ffn_hidden
    assert m.params == dense.params + moe_layers * per_layer


def test_a_dense_model_is_unchanged_by_the_expert_fields():
    gpt3 = dl.transformer(96, 12288, 96, seq=2048, vocab=51200)
    assert not gpt3.is_moe and gpt3.active_params == gpt3.params and gpt3.routed_expert_params == 0
    assert gpt3.active_ffn_hidden == gpt3.ffn_hidden and gpt3.active_params_per_layer == gpt3.params_per_layer


def test_deepseek_v3s_shape_gives_its_printed_totals():
    m = published_model(V3)
    assert m.params == pytest.approx(671e9, rel=0.005)  # MLA counted as 4 h^2: 0.2 % high
    assert m.active_params == pytest.approx(37e9, rel=0.05)  # section 4.2: 37B activated
    assert m.routed_expert_params / m.params > 0.95


@pytest.mark.parametrize("kw, message", [
    (dict(experts=8, top_k=9), "top_k must be"),
    (dict(experts=8, top_k=0), "top_k must be"),
    (dict(experts=8), "top_k must be given"),
    (dict(experts=0, top_k=2), "top_k needs experts"),
    (dict(experts=8, top_k=2, moe_layers=5), "moe_layers must be"),
    (dict(experts=-1), "experts must be"),
])
def test_bad_expert_shapes_name_the_parameter(kw, message):
    with pytest.raises(ValueError, match=message):
        dl.transformer(4, 256, 8, seq=256, vocab=1000, **kw)


# ---- expert parallelism in the step ---------------------------------------------------------------------------

CLUSTER = dl.gpu_cluster(4, accelerator="H100", nic_bandwidth=8 * 50e9)


def _step(model, ep, **kw):
    args = dict(global_batch=64, dp=32, tp=1, pp=1, zero=1, recompute="selective", micro_batch=1)
    args.update(kw)
    return layout_step(model, CLUSTER, ep=ep, **args)


@pytest.mark.parametrize("ep1, ep2", [(1, 2), (2, 8), (4, 16), (8, 32)])
def test_the_experts_state_per_gpu_falls_as_one_over_ep(ep1, ep2):
    m = _moe(32, 4)
    a, b = _step(m, ep1).memory, _step(m, ep2).memory
    # bf16 weights: the routed experts' 2 bytes a parameter, split ep ways; the rest unchanged
    assert a["weights"] - b["weights"] == pytest.approx(2 * m.routed_expert_params * (1 / ep1 - 1 / ep2))


@pytest.mark.parametrize("ep, where", [(2, "nvlink"), (8, "nvlink"), (16, "network"), (32, "network")])
def test_the_all_to_all_is_four_a_moe_layer_at_the_rate_of_where_the_group_sits(ep, where):
    m = _moe(32, 4)
    s = _step(m, ep)
    alpha, bandwidth, found = ep_alltoall_link(CLUSTER, ep=ep)
    assert found == where
    one = alltoall_time(m.seq * m.top_k * m.hidden * 2, ep, alpha=alpha, bandwidth=bandwidth)
    microbatches = 64 // 32
    assert s.breakdown["ep_comm"] == pytest.approx(microbatches * m.layers * 4 * one)
    assert math.isclose(sum(s.breakdown.values()), s.step_time)


def test_full_recomputation_runs_the_forward_all_to_alls_again():
    m = _moe(32, 4)
    assert _step(m, 8, recompute="full").breakdown["ep_comm"] == pytest.approx(
        1.5 * _step(m, 8).breakdown["ep_comm"])


def test_no_expert_parallelism_no_all_to_all_and_a_dense_step_has_no_such_term():
    assert _step(_moe(32, 4), 1).breakdown["ep_comm"] == 0.0
    assert "ep_comm" not in _step(dl.transformer(4, 256, 8, seq=256, vocab=1000), 1).breakdown


def test_active_flops_set_the_compute_term():
    few, many = _step(_moe(32, 1), 8), _step(_moe(32, 8), 8)
    extra = (_moe(32, 8).active_params - _moe(32, 1).active_params)  # 7 more experts a layer, a token
    tokens = 64 // 32 * 256  # a GPU's tokens a step
    peak = CLUSTER.accelerator.bf16_flops * dl.planner_constants().matmul_efficiency
    assert many.breakdown["compute"] - few.breakdown["compute"] == pytest.approx(6 * extra * tokens / peak)


@pytest.mark.parametrize("ep, kw, message", [
    (3, {}, "ep must divide dp\\*cp"),
    (64, dict(dp=128 // 4, global_batch=64), "ep must divide dp\\*cp"),
    (16, dict(), "ep must divide the model's 8 routed experts"),
    (0, {}, "ep must be"),
])
def test_bad_ep_names_the_parameter_and_its_range(ep, kw, message):
    with pytest.raises(ValueError, match=message):
        _step(_moe(8, 2), ep, **kw)


def test_a_dense_model_takes_no_ep():
    with pytest.raises(ValueError, match="ep must be 1 for a dense model"):
        _step(dl.transformer(4, 256, 8, seq=256, vocab=1000), 2)


def test_the_planner_tries_expert_parallel_degrees_and_holds_a_fixed_one():
    m = _moe(8, 2)
    plans = dl.plan_layouts(m, CLUSTER, global_batch=64, pp=1, tp=1, zero=1, recompute="selective",
                            schedule="1f1b")
    assert {p.layout.ep for p in plans} == {1, 2, 4, 8}
    fixed = dl.plan_layouts(m, CLUSTER, global_batch=64, pp=1, tp=1, ep=4, zero=1)
    assert fixed and {p.layout.ep for p in fixed} == {4}


# ---- the published row and its reasons ------------------------------------------------------------------------

def test_the_moe_rows_stay_out_of_chapter_13s_table():
    assert all(r.role != "moe" for r in published_layouts())
    assert V3.layout.ep == 64 and V3.layout.tp == 1 and V3.layout.pp == 16 and V3.layout.zero == 1
    assert V3.nodes * 8 == 2048 and V3.layout.ranks == 2048 and V3.global_batch == 15360
    c = published_cluster(V3)
    assert c.link_bandwidth == 160e9 and c.nic_bandwidth_per_gpu == 50e9  # section 3.2.2
    for section in ("section 3.1", "section 3.2", "section 3.2.2", "section 4.2"):
        assert section in V3.source


def test_deepseek_v3s_reasons_quote_the_step():
    e = explain_layout()
    n = e.numbers
    assert e.step.fits and e.step.memory_bytes == n["memory"] <= n["hbm"]
    assert n["alltoall_where"] == "network" and n["nodes_per_ep_group"] == 8 and n["experts_per_gpu"] == 4
    assert n["ep_comm"] == e.step.breakdown["ep_comm"] > 0
    assert n["tp_comm"] > 0 and n["tp_step_time"] > n["step_time"]
    assert n["alltoall_bytes"] == pytest.approx(4096 * e.step.micro_batch * 8 * 7168 * 2 * 63 / 64)
    text = e.text()
    assert text.startswith("No tensor parallelism") and "64 ways" in text and "8 nodes" in text
    assert len(e.reasons) == 3


def test_explain_layout_names_the_rows_it_knows():
    with pytest.raises(ValueError, match="row must be one of deepseek_v3_671b"):
        explain_layout("mixtral")
