"""The cluster step model (chapter 1)."""

import math

import pytest
from hypothesis import given, strategies as st

import distlib as dl

BASE = dict(params=7e9, link_bandwidth=50e9, flops_per_gpu=1e15, mfu=0.4, tokens_per_gpu=4096, bytes_per_value=2)


def test_compute_and_comm_follow_the_formulas():
    s = dl.cluster_step(p=16, **BASE)
    assert math.isclose(s.compute_time, 6 * 7e9 * 4096 / (1e15 * 0.4))
    assert math.isclose(s.comm_time, 2 * 15 / 16 * 14e9 / 50e9)
    assert math.isclose(s.step_time_no_overlap, s.compute_time + s.comm_time)
    assert math.isclose(s.step_time_overlap, max(s.compute_time, s.comm_time))
    assert s.communication_bound == (s.comm_time > s.compute_time)


@given(p=st.integers(1, 100_000))
def test_utilisation_bounds(p):
    s = dl.cluster_step(p=p, **BASE)
    assert 0 < s.utilization_no_overlap <= s.utilization_overlap <= 1


def test_one_gpu_needs_no_communication():
    s = dl.cluster_step(p=1, **BASE)
    assert s.comm_time == 0 and s.utilization_no_overlap == 1 and not s.communication_bound


def test_comm_time_rises_with_p_toward_limit():
    times = [dl.cluster_step(p=p, **BASE).comm_time for p in (2, 4, 64, 4096)]
    assert times == sorted(times)
    assert times[-1] < 2 * 14e9 / 50e9


def test_balance_tokens_is_where_the_verdict_flips():
    kw = {k: BASE[k] for k in ("link_bandwidth", "flops_per_gpu", "mfu", "bytes_per_value")}
    T = dl.balance_tokens(p=64, **kw)
    assert dl.cluster_step(p=64, **{**BASE, "tokens_per_gpu": T * 0.99}).communication_bound
    assert not dl.cluster_step(p=64, **{**BASE, "tokens_per_gpu": T * 1.01}).communication_bound
    # the model size cancels
    s_small = dl.cluster_step(p=64, **{**BASE, "params": 1e8, "tokens_per_gpu": T})
    assert math.isclose(s_small.compute_time, s_small.comm_time)


def test_latency_adds_two_p_minus_one_alphas():
    a = dl.ring_allreduce_time(1e6, 8, bandwidth=1e9)
    b = dl.ring_allreduce_time(1e6, 8, bandwidth=1e9, alpha=1e-5)
    assert math.isclose(b - a, 14 * 1e-5)


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("p", 0, "p must be an integer >= 1"),
        ("params", -1, "params"),
        ("link_bandwidth", 0, "link_bandwidth"),
        ("link_bandwidth", -5e9, "link_bandwidth"),
        ("flops_per_gpu", float("nan"), "flops_per_gpu"),
        ("mfu", 1.5, r"mfu must be a finite number in \(0, 1\]"),
        ("mfu", 0, "mfu"),
        ("tokens_per_gpu", float("inf"), "tokens_per_gpu"),
        ("bytes_per_value", 0, "bytes_per_value"),
    ],
)
def test_bad_input_names_the_argument(field, value, words):
    kw = {"p": 8, **BASE, field: value}
    with pytest.raises(ValueError, match=words):
        dl.cluster_step(**kw)


def test_non_integer_p_is_a_type_error():
    with pytest.raises(TypeError, match="p must be an integer"):
        dl.cluster_step(p=2.5, **BASE)
    with pytest.raises(TypeError, match="params"):
        dl.cluster_step(p=2, **{**BASE, "params": "7B"})
