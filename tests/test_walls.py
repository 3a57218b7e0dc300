"""The three walls: 6ND, model-state bytes, ZeRO sharding, time and communication."""

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distlib as dl
from distlib import walls as W

params_st = st.floats(min_value=1e6, max_value=1e13, allow_nan=False)
dp_st = st.integers(min_value=1, max_value=4096)
recipe_st = st.sampled_from(sorted(W.RECIPES))


# --- compute -----------------------------------------------------------------

def test_gpt3_training_flops_is_6nd():
    assert dl.training_flops(175e9, 300e9) == pytest.approx(3.15e23, rel=1e-12)


@given(params_st, st.floats(min_value=1e6, max_value=1e14))
def test_training_flops_is_linear_in_both(n, d):
    assert dl.training_flops(n, d) == pytest.approx(6 * n * d, rel=1e-12)
    assert dl.training_flops(2 * n, d) == pytest.approx(2 * dl.training_flops(n, d), rel=1e-12)


def test_training_flops_docstring_keeps_the_optimizer_out_of_the_6():
    doc = W.training_flops.__doc__
    assert "not* in the 6" in doc and "per step" in doc


def test_gpt3_on_one_a100_takes_32_years_at_full_peak():
    seconds = dl.training_time(175e9, 300e9, flops_per_chip=312e12, mfu=1.0)
    assert seconds / (365.25 * 86400) == pytest.approx(32.0, abs=0.05)
    # a name works too and gives the same dense peak
    assert dl.training_time(175e9, 300e9, flops_per_chip="A100", mfu=1.0) == pytest.approx(seconds)


@given(st.floats(min_value=0.05, max_value=1.0), st.integers(min_value=1, max_value=10_000))
def test_training_time_scales_inversely_with_mfu_and_chips(mfu, chips):
    base = dl.training_time(7e9, 1e12, flops_per_chip=1e15, mfu=1.0)
    t = dl.training_time(7e9, 1e12, flops_per_chip=1e15, mfu=mfu, chips=chips)
    assert t == pytest.approx(base / (mfu * chips), rel=1e-12)


# --- memory ------------------------------------------------------------------

@pytest.mark.parametrize("recipe,per_param,parts", [
    ("bf16_adam", 12, (2, 2, 8, 0)),
    ("mixed_precision_adam", 16, (2, 2, 8, 4)),
    ("fp32_adam", 16, (4, 4, 8, 0)),
])
def test_recipe_bytes_per_param(recipe, per_param, parts):
    s = dl.model_state_bytes(1e9, recipe=recipe)
    assert s.total == pytest.approx(per_param * 1e9)
    assert (s.weights, s.grads, s.optimizer, s.master) == tuple(p * 1e9 for p in parts)
    assert float(s) == s.total  # usable as a plain number


def test_7b_with_mixed_precision_adam_needs_112_gb_and_does_not_fit_80_gb():
    s = dl.model_state_bytes(7e9, recipe="mixed_precision_adam")
    assert s.total == pytest.approx(112e9)
    assert s > 80e9
    assert not dl.three_walls(7e9, 1e12, recipe="mixed_precision_adam", accelerator="H100").fits
    assert not dl.three_walls(7e9, 1e12, recipe="mixed_precision_adam", accelerator="A100").fits
    assert dl.three_walls(7e9, 1e12, recipe="mixed_precision_adam", accelerator="H200").fits  # 141 GB


def test_zero_paper_example_7_5b_on_64_gpus():
    # Rajbhandari et al. 2020, Figure 1: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB
    got = [W.zero_state_bytes_per_gpu(7.5e9, recipe="mixed_precision_adam", dp=64, stage=s) / 1e9
           for s in range(4)]
    assert got == pytest.approx([120.0, 31.4, 16.6, 1.875], abs=0.05)


@given(params_st, dp_st)
def test_zero_formulas_match_the_paper_with_k_12(n, dp):
    z = [W.zero_state_bytes_per_gpu(n, recipe="mixed_precision_adam", dp=dp, stage=s).total for s in range(4)]
    k = 12
    assert z[0] == pytest.approx((4 + k) * n, rel=1e-12)
    assert z[1] == pytest.approx((4 + k / dp) * n, rel=1e-12)
    assert z[2] == pytest.approx((2 + (2 + k) / dp) * n, rel=1e-12)
    assert z[3] == pytest.approx((4 + k) * n / dp, rel=1e-12)


@given(params_st, dp_st, recipe_st)
def test_zero_stages_never_use_more_memory_and_one_gpu_changes_nothing(n, dp, recipe):
    z = [W.zero_state_bytes_per_gpu(n, recipe=recipe, dp=dp, stage=s).total for s in range(4)]
    assert all(a >= b * (1 - 1e-12) for a, b in zip(z, z[1:]))
    full = dl.model_state_bytes(n, recipe=recipe).total
    assert z[0] == pytest.approx(full)
    ones = [W.zero_state_bytes_per_gpu(n, recipe=recipe, dp=1, stage=s).total for s in range(4)]
    assert ones == pytest.approx([full] * 4)
    # stage 3 shards everything: dp copies add back up to one model
    assert z[3] * dp == pytest.approx(full, rel=1e-9)


def test_70b_across_an_8_gpu_node_with_zero3():
    w = dl.three_walls(70e9, 1e12, recipe="mixed_precision_adam", accelerator="H100", chips=8, stage=3)
    assert w.state_per_gpu.total == pytest.approx(140e9)
    assert not w.fits and w.min_gpus == 14
    # on a 192 GiB MI300X or 180 GB B200 the same node holds it (model state only)
    assert dl.three_walls(70e9, 1e12, accelerator="MI300X", chips=8, stage=3).fits
    assert dl.three_walls(70e9, 1e12, accelerator="B200", chips=8, stage=3).fits
    # with ZeRO-3 the 14 GPUs suffice; 13 do not
    assert W.zero_state_bytes_per_gpu(70e9, recipe="mixed_precision_adam", dp=14, stage=3) <= 80e9
    assert W.zero_state_bytes_per_gpu(70e9, recipe="mixed_precision_adam", dp=13, stage=3) > 80e9


@given(params_st, recipe_st, st.sampled_from([0, 1, 2, 3]), st.floats(min_value=16e9, max_value=200e9))
def test_min_gpus_to_fit_is_the_smallest_that_fits(n, recipe, stage, hbm):
    k = W.min_gpus_to_fit(n, recipe=recipe, hbm_bytes=hbm, stage=stage)
    if k == math.inf:
        assert W.zero_state_bytes_per_gpu(n, recipe=recipe, dp=10**9, stage=stage).total > hbm
        return
    assert W.zero_state_bytes_per_gpu(n, recipe=recipe, dp=k, stage=stage).total <= hbm
    if k > 1:
        assert W.zero_state_bytes_per_gpu(n, recipe=recipe, dp=k - 1, stage=stage).total > hbm


def test_state_bytes_pickles_and_reprs():
    s = dl.model_state_bytes(2e9, recipe="bf16_adam")
    t = pickle.loads(pickle.dumps(s))
    assert t == s and t.optimizer == s.optimizer and t.recipe == "bf16_adam"
    assert "optimizer=" in repr(s)


# --- communication -----------------------------------------------------------

@given(params_st, st.integers(min_value=1, max_value=1024))
def test_stage0_comm_is_the_ring_allreduce_of_the_gradient(n, p):
    grad = 2 * n  # bf16 gradients
    assert W.gradient_comm_bytes_per_gpu(n, p) == pytest.approx(dl.ring_bytes_per_rank(grad, p), rel=1e-12)
    assert W.gradient_comm_time(n, p, bandwidth=100e9, alpha=1e-5) == pytest.approx(
        dl.ring_allreduce_time(grad, p, bandwidth=100e9, alpha=1e-5), rel=1e-12)


@given(params_st, st.integers(min_value=2, max_value=1024))
def test_zero3_moves_one_and_a_half_times_plain_data_parallelism(n, p):
    base = W.gradient_comm_bytes_per_gpu(n, p, stage=0)
    assert W.gradient_comm_bytes_per_gpu(n, p, stage=1) == pytest.approx(base, rel=1e-12)
    assert W.gradient_comm_bytes_per_gpu(n, p, stage=2) == pytest.approx(base, rel=1e-12)
    assert W.gradient_comm_bytes_per_gpu(n, p, stage=3) == pytest.approx(1.5 * base, rel=1e-12)


def test_fp32_recipe_doubles_the_gradient_traffic():
    assert W.gradient_comm_bytes_per_gpu(1e9, 8, recipe="fp32_adam") == pytest.approx(
        2 * W.gradient_comm_bytes_per_gpu(1e9, 8, recipe="bf16_adam"))


def test_walls_summary_for_gpt3_on_1024_h100():
    w = dl.three_walls(175e9, 300e9, recipe="mixed_precision_adam", accelerator="H100", mfu=0.4, chips=1024,
                 stage=3, tokens_per_step=3.2e6)
    assert w.flops == pytest.approx(3.15e23)
    assert w.steps == math.ceil(300e9 / 3.2e6)
    assert w.time_one_chip == pytest.approx(3.15e23 / (0.4 * 989.5e12))
    assert w.compute_time_cluster == pytest.approx(w.time_one_chip / 1024)
    assert w.time_cluster == pytest.approx(w.compute_time_cluster + w.steps * w.comm_time_per_step)
    # 1024 GPUs are 128 nodes: the NCCL cluster model times the gradients, not NVLink alone.
    assert w.cluster is not None and w.cluster.nodes == 128
    assert w.link_bandwidth < 450e9  # the bus bandwidth NCCL reaches across nodes, below NVLink's line rate
    assert w.comm_time_per_step == pytest.approx(
        1.5 * dl.predict_time("allreduce", 175e9 * 2, w.cluster))  # ZeRO-3: all-reduce + one more all-gather
    assert w.fits  # 16 * 175e9 / 1024 = 2.7 GB
    text = w.summary()
    assert "fits" in text and "H100" in text and "128 x 8 H100" in text


def test_walls_on_one_node_and_on_a_flat_link():
    one_node = dl.three_walls(7e9, 1e12, chips=8, accelerator="H100")
    assert one_node.cluster.nodes == 1 and one_node.cluster.nvls
    flat = dl.three_walls(7e9, 1e12, chips=8, accelerator="H100", link_bandwidth=450e9)
    assert flat.cluster is None and flat.link_bandwidth == 450e9
    # NVLS beats a flat ring at NVLink's full line rate: the switch adds the gradients.
    assert one_node.comm_time_per_step < flat.comm_time_per_step
    tpu = dl.three_walls(7e9, 1e12, chips=64, accelerator="TPU v5p")
    assert tpu.cluster is None and tpu.link_bandwidth == dl.accelerator("TPU v5p").link_bandwidth


def test_walls_nodes_have_their_generation_s_nics():
    # a DGX A100 has 8 x 200 Gb/s HDR NICs; DGX H100/H200/B200 8 x 400 Gb/s NDR
    a100 = dl.three_walls(7e9, 1e12, chips=1024, accelerator="A100")
    h100 = dl.three_walls(7e9, 1e12, chips=1024, accelerator="H100")
    assert a100.cluster.nic_bandwidth == pytest.approx(8 * 200e9 / 8)
    assert h100.cluster.nic_bandwidth == pytest.approx(8 * 400e9 / 8)
    for name in ("H200", "B200"):
        assert dl.three_walls(7e9, 1e12, chips=64, accelerator=name).cluster.nic_bandwidth == pytest.approx(400e9)
    # the A100 default is the same as saying so, and an explicit value still wins
    said = dl.three_walls(7e9, 1e12, chips=1024, accelerator="A100", nic_bandwidth=200e9)
    assert a100.comm_time_per_step == pytest.approx(said.comm_time_per_step)
    more = dl.three_walls(7e9, 1e12, chips=1024, accelerator="A100", nic_bandwidth=400e9)
    assert more.cluster.nic_bandwidth == 400e9 and more.comm_time_per_step < a100.comm_time_per_step


def test_walls_reports_communication_bound_on_a_slow_link():
    fast = dl.three_walls(7e9, 1e12, chips=64, tokens_per_step=2**20, accelerator="H100")
    slow = dl.three_walls(7e9, 1e12, chips=64, tokens_per_step=2**20, accelerator="H100", link_bandwidth=1e9)
    assert not fast.communication_bound and slow.communication_bound
    assert slow.time_cluster > fast.time_cluster
    assert slow.time_cluster_overlap <= slow.time_cluster


# --- bad inputs ----------------------------------------------------------------

@pytest.mark.parametrize("call,match", [
    (lambda: dl.training_flops(-1, 1e9), "params must be"),
    (lambda: dl.training_flops(1e9, float("nan")), "tokens must be"),
    (lambda: dl.model_state_bytes(-7e9, recipe="bf16_adam"), "params must be"),
    (lambda: dl.model_state_bytes(7e9, recipe="adamw_int4"), "recipe must be one of 'bf16_adam'"),
    (lambda: dl.training_time(7e9, 1e12, flops_per_chip=1e15, mfu=1.5), r"mfu must be a finite number in \(0, 1\]"),
    (lambda: dl.training_time(7e9, 1e12, flops_per_chip=1e15, mfu=0.0), "mfu must be"),
    (lambda: dl.training_time(7e9, 1e12, flops_per_chip=1e15, mfu=0.4, chips=0), "chips must be"),
    (lambda: W.zero_state_bytes_per_gpu(7e9, recipe="bf16_adam", dp=0, stage=1), "dp must be an integer >= 1"),
    (lambda: W.zero_state_bytes_per_gpu(7e9, recipe="bf16_adam", dp=8, stage=4), r"stage must be an integer in \[0, 3\]"),
    (lambda: dl.three_walls(7e9, 1e12, accelerator="V100"), "known: A100, H100"),
    (lambda: dl.three_walls(7e9, 1e12, mfu=-0.1), "mfu must be"),
    (lambda: dl.three_walls(7e9, 1e12, chips=8, stage=4), "stage must be"),
    (lambda: dl.three_walls(7e9, 1e12, recipe="sgd"), "recipe must be one of"),
])
def test_bad_inputs_raise_value_errors_that_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_non_numbers_raise_type_error():
    with pytest.raises(TypeError, match="params must be a number"):
        dl.training_flops("7e9", 1e12)
    with pytest.raises(TypeError, match="dp must be an integer"):
        W.zero_state_bytes_per_gpu(7e9, recipe="bf16_adam", dp=2.5, stage=1)


# --- added for chapter 2: the optimizer's share and the largest model that fits ---

def test_optimizer_update_is_a_millionth_of_a_gpt3_step():
    share = dl.optimizer_flops_share(3.2e6)  # GPT-3's batch: 3.2M tokens
    assert share == pytest.approx(14 / (6 * 3.2e6 + 14), rel=1e-12)
    assert 1e-7 < share < 1e-6


@given(st.floats(min_value=1, max_value=1e8), st.floats(min_value=0, max_value=100))
def test_optimizer_share_is_update_over_step_and_falls_with_the_batch(tokens, u):
    share = W.optimizer_flops_share(tokens, update_flops_per_param=u)
    # the same ratio computed from FLOP of a whole model: N cancels
    n = 7e9
    assert share == pytest.approx(u * n / (dl.training_flops(n, tokens) + u * n), rel=1e-9, abs=1e-300)
    assert 0 <= share < 1
    if u >= 1e-3:  # (subnormal u rounds both shares to zero)
        assert W.optimizer_flops_share(2 * tokens, update_flops_per_param=u) < share


def test_max_params_to_fit_on_one_80_gb_gpu():
    assert dl.max_params_to_fit(80e9, recipe="mixed_precision_adam") == pytest.approx(5e9)
    assert dl.max_params_to_fit(80e9, recipe="bf16_adam") == pytest.approx(80e9 / 12)
    # 7B fits neither; ZeRO-3 over a node of 8 holds 40B with mixed precision
    assert dl.max_params_to_fit(80e9, recipe="bf16_adam") < 7e9
    assert dl.max_params_to_fit(80e9, recipe="mixed_precision_adam", dp=8, stage=3) == pytest.approx(40e9)


@given(recipe_st, st.sampled_from([0, 1, 2, 3]), dp_st, st.floats(min_value=1e9, max_value=1e12))
def test_max_params_fills_the_hbm_exactly(recipe, stage, dp, hbm):
    n = W.max_params_to_fit(hbm, recipe=recipe, dp=dp, stage=stage)
    assert W.zero_state_bytes_per_gpu(n, recipe=recipe, dp=dp, stage=stage).total == pytest.approx(hbm, rel=1e-9)
    # consistent with min_gpus_to_fit: that model fits on dp GPUs at this stage
    k = W.min_gpus_to_fit(n * (1 - 1e-9), recipe=recipe, hbm_bytes=hbm, stage=stage)
    assert k <= dp


@pytest.mark.parametrize("call,match", [
    (lambda: dl.optimizer_flops_share(0), "tokens_per_step must be"),
    (lambda: dl.optimizer_flops_share(1e6, update_flops_per_param=-1), "update_flops_per_param must be"),
    (lambda: dl.max_params_to_fit(0, recipe="bf16_adam"), "hbm_bytes must be"),
    (lambda: dl.max_params_to_fit(80e9, recipe="bf16_adam", dp=0), "dp must be"),
    (lambda: dl.max_params_to_fit(80e9, recipe="bf16_adam", stage=5), "stage must be"),
])
def test_new_functions_reject_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- bfloat16 rounding: why the fp32 master copy exists ---

def test_small_updates_vanish_in_bf16():
    assert dl.round_to_bf16(1.0 + 1e-3) == 1.0          # below half the spacing 2**-7
    assert dl.round_to_bf16(1.0 + 5e-3) == 1.0 + 2**-7  # above it
    assert dl.round_to_bf16(1.0 + 2**-8) == 1.0         # a tie goes to the even neighbour
    assert dl.round_to_bf16(1.0 + 3 * 2**-8) == 1.0 + 2**-6


@given(st.floats(min_value=-(2.0**127), max_value=2.0**127, allow_nan=False, allow_subnormal=False, width=32))
def test_bf16_rounding_is_the_nearest_representable_value(x):
    r = np.float32(dl.round_to_bf16(x))
    assert np.array([r], dtype=np.float32).view(np.uint32)[0] & 0xFFFF == 0  # only the 16 high bits are used
    assert dl.round_to_bf16(r) == r                                         # idempotent
    if abs(x) >= 2.0**-126:  # normal numbers: bf16 has float32's exponent range
        # within half a bf16 spacing (8 significant bits): relative error <= 2**-8
        assert abs(float(r) - x) <= 2.0**-8 * abs(x) * (1 + 1e-12)


def test_bf16_rounding_keeps_specials_and_shapes():
    out = dl.round_to_bf16([np.nan, np.inf, -np.inf, -0.0, 3.4e38])
    assert np.isnan(out[0]) and out[1] == np.inf and out[2] == -np.inf
    assert out[3] == 0 and np.signbit(out[3])
    assert out[4] == np.inf  # above the largest bf16 value, rounds to infinity
    assert dl.round_to_bf16(np.ones((2, 3))).shape == (2, 3)
    with pytest.raises(TypeError, match="x must be an array of numbers"):
        dl.round_to_bf16("1.0")


def test_each_zero_stage_shards_more_than_the_last_and_only_stage_3_sends_more():
    sharded = [set(W.zero_stage(s).sharded) for s in W.ZERO_STAGES]
    assert all(a < b for a, b in zip(sharded, sharded[1:]))
    assert sharded[-1] == set(dl.model_state_bytes(1.0, recipe="mixed_precision_adam").parts())
    assert [W.zero_stage(s).traffic_factor for s in W.ZERO_STAGES] == [1.0, 1.0, 1.0, 1.5]


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_gradient_bytes_follow_the_stage_traffic_factor_when_weights_and_gradients_have_one_width(stage):
    plain = dl.gradient_comm_bytes_per_gpu(7e9, 16, stage=0)
    assert dl.gradient_comm_bytes_per_gpu(7e9, 16, stage=stage) == pytest.approx(
        W.zero_stage(stage).traffic_factor * plain, rel=1e-12)


def test_the_cluster_step_counts_the_training_flops_of_walls():
    s = dl.cluster_step(p=8, params=7e9, link_bandwidth=100e9, flops_per_gpu=1e15, mfu=0.5, tokens_per_gpu=4096)
    assert s.flops_per_step == dl.training_flops(7e9, 4096) == W.FLOPS_PER_PARAM_TOKEN * 7e9 * 4096


# ---- Part IV: where the walls meet ------------------------------------------------------------------------------

def test_an_fp8_peak_is_twice_the_bf16_peak_where_there_is_one():
    for name in ("H100", "H200", "B200"):
        assert dl.dense_peak(name, precision="fp8") == 2 * dl.accelerator(name).bf16_flops
    assert dl.dense_peak("A100") == dl.accelerator("A100").bf16_flops
    with pytest.raises(ValueError, match="A100 has no FP8"):
        dl.dense_peak("A100", precision="fp8")
    with pytest.raises(ValueError, match="precision must be one of"):
        dl.dense_peak("H100", precision="fp4")


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([8, 16, 64, 256]), st.sampled_from([1, 2, 4, 8]), st.floats(1e9, 1e12))
def test_hsdp_is_zero3_in_the_group_and_an_allreduce_of_its_shard_across(dp, shard, params):
    if shard > dp:
        return
    state = dl.hsdp_state_bytes_per_gpu(params, recipe="mixed_precision_adam", dp=dp, shard=shard)
    assert state == pytest.approx(16 * params / shard)
    b = dl.hsdp_comm_bytes_per_gpu(params, dp=dp, shard=shard)
    assert b["shard"] == pytest.approx(dl.gradient_comm_bytes_per_gpu(params, shard, stage=3) if shard > 1 else 0)
    assert b["replicas"] == pytest.approx(dl.ring_bytes_per_rank(2 * params / shard, dp // shard))
    # the ends: shard = dp is ZeRO-3, shard = 1 is DDP
    full = dl.hsdp_comm_bytes_per_gpu(params, dp=dp, shard=dp)
    assert full["replicas"] == 0 and full["shard"] == pytest.approx(dl.gradient_comm_bytes_per_gpu(params, dp, stage=3))
    assert dl.hsdp_comm_bytes_per_gpu(params, dp=dp, shard=1)["replicas"] == pytest.approx(
        dl.gradient_comm_bytes_per_gpu(params, dp, stage=0))


def test_hsdp_rejects_a_shard_that_does_not_divide_the_replicas():
    with pytest.raises(ValueError, match="shard must divide dp"):
        dl.hsdp_state_bytes_per_gpu(7e9, recipe="mixed_precision_adam", dp=12, shard=8)
    with pytest.raises(ValueError, match=r"shard must be an integer in \[1, 8\]"):
        dl.hsdp_comm_bytes_per_gpu(7e9, dp=8, shard=16)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([0, 1, 2, 3]), st.integers(1, 16), st.sampled_from([2, 8, 64]))
def test_accumulation_costs_what_each_stage_must_send_per_microbatch(stage, k, p):
    one = dl.accumulation_comm_bytes_per_gpu(7e9, p, stage=stage, accumulation=1)
    assert one == pytest.approx(dl.gradient_comm_bytes_per_gpu(7e9, p, recipe="mixed_precision_adam", stage=stage))
    many = dl.accumulation_comm_bytes_per_gpu(7e9, p, stage=stage, accumulation=k)
    if stage <= 1:
        assert many == pytest.approx(one)  # no_sync: sum locally, reduce once
        every = dl.accumulation_comm_bytes_per_gpu(7e9, p, stage=stage, accumulation=k, sync_every_microbatch=True)
        assert every >= many
    else:
        assert many >= one and (k == 1 or many > one)  # ZeRO-2 reduce-scatters, ZeRO-3 also gathers, each microbatch
    held = [dl.accumulation_grad_bytes_per_gpu(7e9, dp=p, stage=stage, reduce_every_microbatch=e) for e in (True, False)]
    assert held[1] == 2 * 7e9 and held[0] == (2 * 7e9 / p if stage >= 2 else 2 * 7e9)


@settings(max_examples=40, deadline=None)
@given(st.floats(1e12, 1e16), st.floats(1e9, 1e12), st.integers(2, 4096), st.floats(0.05, 1.0))
def test_at_the_fsdp_threshold_a_steps_compute_equals_its_zero3_traffic(c, w, p, mfu):
    tokens = dl.fsdp_compute_bound_tokens(c, w, p=p, mfu=mfu)
    params = 7e9
    compute = dl.training_flops(params, tokens) / (mfu * c)
    traffic = dl.gradient_comm_bytes_per_gpu(params, p, recipe="mixed_precision_adam", stage=3) / w
    assert compute == pytest.approx(traffic, rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.floats(1e12, 1e16), st.floats(1e9, 1e12), st.integers(2, 64))
def test_at_the_tp_threshold_a_layers_products_equal_its_allreduces(c, w, t):
    h = dl.tp_compute_bound_hidden(c, w, tp=t)
    flops = 72 * h * h / t  # per token and layer, forward and backward, one GPU
    sent = 4 * dl.cost_coefficients("allreduce", t)[1] * 2 * h  # four ring all-reduces of 2h bytes
    assert flops / c == pytest.approx(sent / w, rel=1e-9)
