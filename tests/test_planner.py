"""The layout planner: the transformer's counts, one step's terms and memory, the planner, the published runs."""

import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distlib as dl
from distlib.layout import Layout
from distlib.planner import planner_constants, published_cluster, published_model, published_step

FAST = settings(max_examples=40, deadline=None)
ROWS = {r.id: r for r in dl.published_layouts()}

GPT3 = dl.transformer(96, 12288, 96, seq=2048, vocab=51200)
SMALL = dl.transformer(8, 1024, 16, seq=1024, vocab=32000)


def a100(nodes):
    return dl.gpu_cluster(nodes, accelerator="A100", nic_bandwidth=8 * dl.gbit_to_bytes_per_s(200) if nodes > 1 else None)


# ---- the transformer --------------------------------------------------------------------------------------------

def test_gpt3_has_175_billion_parameters_within_one_percent():
    assert abs(GPT3.params / 175e9 - 1) < 0.01


def test_parameters_follow_narayanan_equation_2_plus_the_final_norm():
    for l, h, a in [(24, 2304, 24), (96, 12288, 96), (128, 25600, 160)]:
        m = dl.transformer(l, h, a, seq=2048, vocab=51200)
        assert m.params == round(12 * l * h**2 * (1 + 13 / (12 * h) + (51200 + 2048) / (12 * l * h))) + 2 * h


def test_bloom_and_llama_parameter_counts_are_the_published_ones():
    bloom = published_model(ROWS["bloom_176b"])
    assert abs(bloom.params / 176_247e6 - 1) < 1e-4  # BLOOM paper: 176,247M
    llama = published_model(ROWS["llama3_405b_8k_8192"])
    assert abs(llama.params / 405e9 - 1) < 0.01


def test_grouped_query_attention_shrinks_only_the_key_and_value_projections():
    full, gqa = (dl.transformer(4, 4096, 32, seq=4096, vocab=1000, kv_heads=k) for k in (32, 8))
    kv_full, kv_gqa = 4096, 8 * 128
    assert full.params - gqa.params == 4 * 2 * (4096 + 1) * (kv_full - kv_gqa)  # two matrices and their biases


def test_hardware_flops_with_full_recomputation_are_narayanan_equation_3():
    for l, h, a in [(24, 2304, 24), (96, 12288, 96), (128, 25600, 160)]:
        m = dl.transformer(l, h, a, seq=2048, vocab=51200)
        narayanan = 96 * l * h**2 * (1 + 2048 / (6 * h) + 51200 / (16 * l * h))
        assert abs(m.hardware_flops_per_token("full") / narayanan - 1) < 3e-3  # we also charge 6 (s + 13 l) h


def test_model_flops_are_six_n_plus_palm_attention_and_recomputation_only_adds():
    m = GPT3
    assert m.training_flops_per_token == pytest.approx(dl.training_flops(m.params, 1) + 12 * 96 * 12288 * 2048)
    assert m.hardware_flops_per_token("none") == m.training_flops_per_token
    assert m.training_flops_per_token < m.hardware_flops_per_token("selective") < m.hardware_flops_per_token("full")


@pytest.mark.parametrize("kwargs, message", [
    (dict(layers=0, hidden=64, heads=4), "layers must be an integer >= 1"),
    (dict(layers=2, hidden=65, heads=4), "hidden must be a multiple of heads"),
    (dict(layers=2, hidden=64, heads=4, kv_heads=3), "kv_heads must divide heads"),
    (dict(layers=2, hidden=64, heads=4, kv_heads=8), "kv_heads must be an integer in [1, 4]"),
])
def test_transformer_bad_input_names_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        dl.transformer(**kwargs, seq=128, vocab=100)


# ---- one step ---------------------------------------------------------------------------------------------------

def test_plain_data_parallelism_of_175b_does_not_fit_on_80_gb():
    for acc in ("A100", "H100"):
        c = dl.gpu_cluster(128, accelerator=acc, nic_bandwidth=400e9)
        r = dl.layout_step(GPT3, c, global_batch=1024, dp=1024, tp=1, pp=1, recompute="full")
        assert not r.fits
        assert r.memory["weights"] + r.memory["grads"] + r.memory["optimizer"] + r.memory["master"] == \
            pytest.approx(16 * GPT3.params)


def test_every_published_layout_fits_the_memory_model():
    for row in dl.published_layouts():
        assert published_step(row).fits, row.id


layouts = st.sampled_from([(8, 1, 1), (4, 2, 1), (2, 2, 2), (1, 8, 1), (2, 4, 1), (1, 2, 4), (1, 1, 8), (4, 1, 2)])


@FAST
@given(layouts, st.sampled_from([0, 1, 2, 3]), st.sampled_from(dl.RECOMPUTE_MODES), st.booleans(),
       st.sampled_from([1, 2, 4]))
def test_the_breakdown_adds_up_to_the_step_and_utilization_is_flops_over_time(degrees, zero, recompute, sp, b):
    dp, tp, pp = degrees
    r = dl.layout_step(SMALL, a100(1), global_batch=64, dp=dp, tp=tp, pp=pp, zero=zero, recompute=recompute,
                       sequence_parallel=sp, micro_batch=b)
    assert tuple(r.breakdown) == tuple(t for t in dl.BREAKDOWN_TERMS if t != "ep_comm")  # dense: no all-to-all
    assert sum(r.breakdown.values()) == pytest.approx(r.step_time)
    assert all(v >= 0 for v in r.breakdown.values())
    peak = 8 * dl.accelerator("A100").bf16_flops
    tokens = 64 * SMALL.seq
    assert r.mfu == pytest.approx(SMALL.training_flops_per_token * tokens / (r.step_time * peak))
    assert r.hfu == pytest.approx(SMALL.hardware_flops_per_token(recompute) * tokens / (r.step_time * peak))
    assert r.memory_bytes == pytest.approx(sum(r.memory.values()))


def test_the_bubble_is_the_pipeline_schedules_closed_form():
    for schedule, chunks in (("1f1b", 1), ("interleaved", 2)):
        r = dl.layout_step(SMALL, a100(1), global_batch=16, dp=1, tp=2, pp=4, schedule=schedule, chunks=chunks,
                           micro_batch=2)
        per_mb = sum(r.breakdown[k] for k in ("compute", "memory_bound", "tp_comm", "cp_comm", "pp_comm")) / 8
        kind = "interleaved" if chunks > 1 else "1f1b"
        sim = dl.pipeline_schedule(kind, 4, 8, forward_time=per_mb / 3, backward_time=2 * per_mb / 3, chunks=chunks)
        assert r.breakdown["bubble"] == pytest.approx(sim.bubble_time)
        assert r.layout.microbatches == 8


def test_memory_is_zero_state_plus_activations_in_flight():
    r = dl.layout_step(GPT3, a100(8), global_batch=64, dp=1, tp=8, pp=8, zero=0, recompute="selective",
                       micro_batch=1)
    state = dl.zero_state_bytes_per_gpu(GPT3.params / 64, recipe="mixed_precision_adam", dp=1, stage=0)
    assert r.memory["weights"] + r.memory["grads"] + r.memory["optimizer"] + r.memory["master"] == pytest.approx(state)
    per_layer = dl.activation_bytes_per_layer(2048, 1, 12288, 96, tp=8, sequence_parallel=True, recompute="selective")
    assert r.memory["activations"] == pytest.approx(per_layer * 12 * 8)  # 12 layers a stage, p = 8 in flight (1F1B)


def test_zero_shards_state_over_dp_and_recomputation_trades_memory_for_time():
    c = a100(8)
    by_zero = [dl.layout_step(GPT3, c, global_batch=64, dp=8, tp=8, pp=1, zero=z, recompute="full", micro_batch=1)
               for z in range(4)]
    assert [r.memory_bytes for r in by_zero] == sorted((r.memory_bytes for r in by_zero), reverse=True)
    by_mode = [dl.layout_step(GPT3, c, global_batch=64, dp=1, tp=8, pp=8, recompute=m, micro_batch=1)
               for m in ("none", "selective", "full")]
    assert [r.memory_bytes for r in by_mode] == sorted((r.memory_bytes for r in by_mode), reverse=True)
    assert by_mode[0].step_time < by_mode[1].step_time < by_mode[2].step_time


def test_left_open_chunks_and_micro_batch_are_the_fastest_that_fit():
    c = a100(8)
    picked = dl.layout_step(GPT3, c, global_batch=64, dp=1, tp=8, pp=8, schedule="interleaved")
    tried = [dl.layout_step(GPT3, c, global_batch=64, dp=1, tp=8, pp=8, schedule="interleaved", chunks=v, micro_batch=b)
             for v in (2, 3, 4, 6, 8) for b in (1, 2, 4, 8, 16)]
    assert picked.fits
    assert picked.step_time == min(r.step_time for r in tried if r.fits)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(dp=2, tp=1, pp=1), ValueError, r"dp\*tp\*pp\*cp must equal the cluster's 8 GPUs"),
    (dict(dp=1, tp=8, pp=1, recompute="some"), ValueError, "recompute must be one of"),
    (dict(dp=8, tp=1, pp=1, zero=4), ValueError, r"stage must be an integer in \[0, 3\]"),
    (dict(dp=1, tp=8, pp=1, schedule="zb"), ValueError, "schedule must be one of"),
    (dict(dp=1, tp=1, pp=8, schedule="interleaved", chunks=1), ValueError, "chunks must be an integer"),
    (dict(dp=8, tp=1, pp=1, micro_batch=3), ValueError, "micro_batch must divide global_batch/dp"),
    (dict(dp=2, tp=4, pp=1, cp=1, attention="paged"), ValueError, "attention must be one of"),
    (dict(dp=1, tp=8, pp=1, sequence_parallel="yes"), TypeError, "sequence_parallel"),
])
def test_layout_step_bad_input_names_the_parameter(kwargs, error, message):
    with pytest.raises(error, match=message):
        dl.layout_step(SMALL, a100(1), global_batch=64, **kwargs)


def test_layout_step_checks_the_model_the_heads_and_the_batch():
    with pytest.raises(TypeError, match="model must be a Transformer"):
        dl.layout_step("gpt3", a100(1), global_batch=8, dp=8, tp=1, pp=1)
    with pytest.raises(TypeError, match="cluster must be a GpuCluster"):
        dl.layout_step(SMALL, "selene", global_batch=8, dp=8, tp=1, pp=1)
    odd = dl.transformer(2, 96, 12, seq=64, vocab=10)
    with pytest.raises(ValueError, match="tp must divide the model's 12 heads"):
        dl.layout_step(odd, a100(1), global_batch=8, dp=1, tp=8, pp=1)
    with pytest.raises(ValueError, match="global_batch must be a multiple of dp"):
        dl.layout_step(SMALL, a100(1), global_batch=12, dp=8, tp=1, pp=1)
    with pytest.raises(ValueError, match="global_batch must be an integer >= 1"):
        dl.layout_step(SMALL, a100(1), global_batch=0, dp=8, tp=1, pp=1)


# ---- the planner ------------------------------------------------------------------------------------------------

def test_plan_layouts_keeps_only_what_fits_fastest_first_and_holds_fixed_keywords():
    c = a100(8)
    plans = dl.plan_layouts(GPT3, c, global_batch=64, tp=8, recompute="full", zero=1)
    assert plans and all(r.fits for r in plans)
    assert [r.step_time for r in plans] == sorted(r.step_time for r in plans)
    assert {(r.layout.tp, r.recompute, r.layout.zero) for r in plans} == {(8, "full", 1)}
    assert {r.layout.dp * r.layout.pp * r.layout.cp for r in plans} == {8}
    assert dl.plan_layouts(GPT3, c, global_batch=64, dp=64, zero=0) == []  # 175B replicated 64 times never fits


def test_plan_layouts_finds_the_best_it_would_time_one_by_one():
    c = a100(1)
    plans = dl.plan_layouts(SMALL, c, global_batch=32, zero=0, recompute="selective", sequence_parallel=True)
    best = plans[0]
    one = dl.layout_step(SMALL, c, global_batch=32, dp=best.layout.dp, tp=best.layout.tp, pp=best.layout.pp, cp=best.layout.cp,
                         schedule=best.layout.schedule, recompute="selective", zero=0)
    assert one.step_time == pytest.approx(plans[0].step_time)


def test_plan_layouts_rejects_an_unknown_keyword_and_a_bad_degree_by_name():
    with pytest.raises(TypeError, match="unexpected keyword.*pipeline"):
        dl.plan_layouts(SMALL, a100(1), global_batch=8, pipeline=2)
    with pytest.raises(ValueError, match="tp must be an integer >= 1, got 0"):
        dl.plan_layouts(SMALL, a100(1), global_batch=8, tp=0)


def test_context_parallelism_is_tried_only_for_long_sequences_unless_fixed():
    c = a100(1)
    assert {r.layout.cp for r in dl.plan_layouts(SMALL, c, global_batch=8, zero=1, recompute="selective")} == {1}
    long = dl.transformer(8, 1024, 16, seq=32768, vocab=32000)
    assert {r.layout.cp for r in dl.plan_layouts(long, c, global_batch=8, zero=1, recompute="selective", tp=2)} > {1}
    assert {r.layout.cp for r in dl.plan_layouts(SMALL, c, global_batch=8, zero=1, recompute="selective", cp=2)} == {2}


# ---- the published runs -----------------------------------------------------------------------------------------

def test_every_published_row_names_a_source_and_holds_a_layout_of_its_cluster():
    for r in dl.published_layouts():
        assert len(r.source) > 40, r.id
        assert isinstance(r.layout, Layout) and r.layout.ranks == r.nodes * 8, r.id
        assert r.metric in ("mfu", "hfu") and 0 < r.printed < 1
        assert r.recipe in dl.RECIPES
        if r.micro_batch is not None:
            assert r.layout.microbatches * r.micro_batch * r.layout.dp == r.global_batch, r.id


def test_a_context_parallel_row_names_its_method():
    """Llama 3 gathers the keys and values over its CP ranks (section 3.3.2), the planner's CP method too."""
    cp_rows = [r for r in dl.published_layouts() if r.layout.cp > 1]
    assert [r.id for r in cp_rows] == ["llama3_405b_128k_16384"]
    assert cp_rows[0].layout.cp_kind == "allgather" == published_step(cp_rows[0]).layout.cp_kind


def test_megatron_table2_ptd_rows_run_the_papers_t8():
    """Narayanan et al. 2021 use t = 8 for large enough models (section 4.1): t*p = 96 is T8 x P12, 280 is T8 x P35."""
    for r in dl.published_layouts():
        if r.id.startswith("megatron2021_t2_ptd_"):
            assert (r.layout.tp, r.layout.pp) == ((8, 12) if "174.6b" in r.id else (8, 35)), r.id
            assert published_step(r).name.startswith(f"dp{r.layout.dp} tp8 pp{r.layout.pp} ")


def test_the_constants_reproduce_their_fit_rows_and_the_data_parallel_difference():
    c = planner_constants()
    assert 0 < c.matmul_efficiency < 1 and c.memory_traffic > 0 and c.dp_exposure > 0
    fit = {r.id for r in dl.published_layouts() if r.role == "fit"}
    assert set(c.sources["matmul_efficiency"]) | set(c.sources["dp_exposure"][:1]) == fit
    for i in c.sources["matmul_efficiency"]:
        step, row = published_step(ROWS[i]), ROWS[i]
        assert (step.mfu if row.metric == "mfu" else step.hfu) == pytest.approx(row.printed, rel=1e-9)
    # the exposure: 8-way data parallelism adds to the 530B step what it added in the paper (54.2 % against 56.0 %)
    (dp8, alone), rows = (published_step(ROWS[i]) for i in c.sources["dp_exposure"]), [ROWS[i] for i in c.sources["dp_exposure"]]
    printed = [published_model(r).training_flops_per_token * r.global_batch * r.seq
               / (r.printed * r.nodes * 8 * dl.accelerator("A100").bf16_flops) for r in rows]  # seconds, as printed
    assert printed[0] - printed[1] == pytest.approx(39.15 - 37.83, rel=0.05)  # section 6.3's two steps
    assert dp8.step_time - alone.step_time == pytest.approx(printed[0] - printed[1], rel=1e-9)
    assert dp8.breakdown["dp_comm"] == pytest.approx(dp8.step_time - alone.step_time, rel=1e-9)


def _held_out_errors() -> dict:
    return {r.id: (lambda s: (s.mfu if r.metric == "mfu" else s.hfu) / r.printed - 1)(published_step(r))
            for r in dl.published_layouts() if r.role == "held_out"}


def test_held_out_predictions_worst_under_a_quarter_and_median_under_eight_percent():
    """Issue 35's bounds. Before the data-parallel exposure was fitted on a difference, selective recomputation
    paid for its second pass over the attention core, ZeRO-3 paid per module and Llama 3's rows had their memory
    measures, the worst was 35 % (Megatron-LM's 7.5B) and the median 10 %."""
    errors = _held_out_errors()
    assert len(errors) >= 28
    assert max(abs(e) for e in errors.values()) < 0.25, max(errors, key=lambda k: abs(errors[k]))
    assert statistics.median(abs(e) for e in errors.values()) < 0.08


def test_the_small_models_of_table_1_are_no_longer_a_third_low():
    errors = _held_out_errors()
    small = [errors[f"megatron2021_t1_{n}"] for n in ("1.7b", "3.6b", "7.5b", "18.4b")]
    assert all(-0.25 < e < 0 for e in small)  # still low: the residual the chapter names


def test_korthikanti_iteration_times_follow_from_their_mfu_in_our_flop_count():
    printed = {"22b": 1.10, "175b": 13.75, "530b": 37.83, "1t": 71.49}  # Table 5, seconds
    for name, seconds in printed.items():
        r = ROWS[f"korthikanti2022_{name}"]
        m = published_model(r)
        peak = r.nodes * 8 * dl.accelerator("A100").bf16_flops if r.nodes > 1 else 8 * dl.accelerator("A100").bf16_flops
        implied = m.training_flops_per_token * r.global_batch * r.seq / (r.printed * peak)
        assert implied == pytest.approx(seconds, rel=0.01)


def test_zero3_alone_loses_to_tensor_and_pipeline_parallelism_at_scale():
    """Megatron-LM 2021 Table 2: at fixed batch, ZeRO-3's traffic per GPU stays while its compute per GPU halves."""
    for size in ("174.6b", "529.6b"):
        zero3 = sorted((r for r in dl.published_layouts() if r.id.startswith(f"megatron2021_t2_zero3_{size}")),
                       key=lambda r: r.nodes)
        ptd = sorted((r for r in dl.published_layouts() if r.id.startswith(f"megatron2021_t2_ptd_{size}")),
                     key=lambda r: r.nodes)
        z, p = [published_step(r) for r in zero3], [published_step(r) for r in ptd]
        assert z[-1].hfu < p[-1].hfu  # at the most GPUs, ZeRO-3 loses
        shares = [s.breakdown["dp_comm"] / s.step_time for s in z]
        assert shares == sorted(shares) and shares[-1] > 0.5  # its exposed traffic grows to most of the step
        assert z[-1].hfu / z[0].hfu < 0.5 < p[-1].hfu / p[0].hfu  # it falls twice as fast, or more


def test_the_published_cluster_is_the_rows_hardware():
    c = published_cluster(ROWS["llama3_405b_8k_16384"])
    assert (c.p, c.accelerator.name, c.network) == (16384, "H100", "roce")
    assert c.nic_bandwidth_per_gpu == pytest.approx(dl.gbit_to_bytes_per_s(400))


def test_llama3_8k_fits_without_recomputation_only_with_its_lighter_end_stages():
    """Llama 3 trained 8K sequences without activation checkpointing (section 3.3.2), after taking one layer off
    the first and the last stage. Counted with every chunk of the first stage full, it does not fit; with its first
    chunk a layer lighter (that chunk holds the most microbatches, 2p - 1 of them), it does."""
    row = ROWS["llama3_405b_8k_8192"]
    assert row.recompute == "none" and row.lighter_ends
    kw = dict(global_batch=row.global_batch, dp=row.layout.dp, tp=8, pp=16, zero=2, recompute="none",
              schedule="interleaved", attention="flash", recipe=row.recipe, chunks=4)
    full, light = (dl.layout_step(published_model(row), published_cluster(row), lighter_ends=e, **kw)
                   for e in (False, True))
    assert not full.fits and light.fits
    assert light.memory["activations"] == pytest.approx(full.memory["activations"] * (31 * 1 + 48 * 2) / (79 * 2))
    assert light.step_time == full.step_time  # the middle stages set the pace
    assert published_step(row).fits and published_step(row).recompute == "none"


def test_fp32_gradients_cost_two_bytes_a_parameter_and_double_the_gradient_traffic():
    c = a100(8)
    kw = dict(global_batch=64, dp=8, tp=8, pp=1, zero=0, recompute="full", micro_batch=1)
    b16, f32 = (dl.layout_step(GPT3, c, recipe=r, **kw) for r in ("mixed_precision_adam", "fp32_grads_adam"))
    assert f32.memory["grads"] == pytest.approx(2 * b16.memory["grads"])
    state = sum(f32.memory[k] for k in ("weights", "grads", "optimizer", "master"))
    assert state == pytest.approx(18 * GPT3.params / 8)
    assert f32.breakdown["dp_comm"] > 1.9 * b16.breakdown["dp_comm"]  # an all-reduce of twice the bytes
    assert f32.recipe == "fp32_grads_adam"
    with pytest.raises(ValueError, match="recipe must be one of"):
        dl.layout_step(GPT3, c, recipe="fp8", **kw)


def test_zero3_pays_a_collectives_latency_per_module_so_its_traffic_grows_with_the_ranks():
    """At a fixed microbatch, ZeRO-3's bytes per GPU stay while each module's collective spans more ranks."""
    shares = []
    for nodes in (16, 64, 256):
        c = a100(nodes)
        r = dl.layout_step(GPT3, c, global_batch=c.p, dp=c.p, tp=1, pp=1, zero=3, recompute="full",
                           sequence_parallel=False, micro_batch=1)
        shares.append(r.breakdown["dp_comm"])
    assert shares[0] < shares[1] < shares[2]


def test_selective_recomputation_moves_the_attention_cores_bytes_again():
    c = a100(1)
    kw = dict(global_batch=8, dp=1, tp=8, pp=1, micro_batch=1, sequence_parallel=True)
    none, sel = (dl.layout_step(GPT3, c, recompute=m, **kw) for m in ("none", "selective"))
    core = (dl.activation_bytes_per_layer(2048, 1, 12288, 96, tp=8, sequence_parallel=True)
            - dl.activation_bytes_per_layer(2048, 1, 12288, 96, tp=8, sequence_parallel=True, recompute="selective"))
    kept = dl.activation_bytes_per_layer(2048, 1, 12288, 96, tp=8, sequence_parallel=True)
    assert sel.breakdown["memory_bound"] / none.breakdown["memory_bound"] == pytest.approx((kept + core / 3) / kept)
    flash = dict(kw, attention="flash")
    assert (dl.layout_step(GPT3, c, recompute="selective", **flash).breakdown["memory_bound"]
            == pytest.approx(dl.layout_step(GPT3, c, recompute="none", **flash).breakdown["memory_bound"]))


def test_hfu_counts_recomputation_apart_from_mfu_and_stays_near_korthikantis_printed_hfu():
    for r in (x for x in dl.published_layouts() if x.printed_hfu is not None):
        s = published_step(r)
        assert s.hfu > s.mfu
        assert s.hfu / s.mfu < r.printed_hfu / r.printed  # they charge selective recomputation 12 s h, we 4 s h
        assert abs(s.hfu / r.printed_hfu - 1) < 0.05


def test_every_published_row_has_a_residual_and_a_cause_smallest_model_first():
    res = dl.planner.step.published_residuals()
    assert {r.row.id for r in res} == set(ROWS)
    sizes = [published_model(r.row).params for r in res]
    assert sizes == sorted(sizes)
    assert all(r.cause and r.term != "compute" and 0 < r.share < 1 for r in res)
    assert {r.row.id for r in res if r.cause == "fitted"} == {"korthikanti2022_22b", "korthikanti2022_1t"}
    with pytest.raises(ValueError, match="row_id must start with one of"):
        dl.planner.published.residual_cause("gpt4")


def test_a_steps_name_and_layout_say_what_it_ran():
    gpt3 = dl.transformer(96, 12288, 96, seq=2048, vocab=51200)
    selene = dl.gpu_cluster(128, accelerator="A100", nic_bandwidth=8 * 25e9)
    s = dl.layout_step(gpt3, selene, global_batch=1024, dp=16, tp=8, pp=8, schedule="interleaved", zero=1)
    assert (s.layout.dp, s.layout.tp, s.layout.pp, s.layout.zero, s.layout.schedule) == (16, 8, 8, 1, "interleaved")
    assert s.layout.microbatches == 1024 // (16 * s.micro_batch) and s.chunks == s.layout.chunks >= 2
    assert s.name == (f"dp16 tp8 pp8 cp1 zero1 selective sp interleaved v{s.chunks} b{s.micro_batch}")
