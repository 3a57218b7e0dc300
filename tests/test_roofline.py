"""The roofline: ridge points, the min() law, operations' FLOP and bytes, placements."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import distlib as dl
from distlib import roofline as R

peak_st = st.floats(min_value=1e9, max_value=1e16)
bw_st = st.floats(min_value=1e8, max_value=1e13)
inten_st = st.floats(min_value=0.0, max_value=1e6)


def test_ridge_point_from_spec_name_and_numbers():
    assert dl.ridge_point("H100") == pytest.approx(989.5e12 / 3.35e12)
    assert dl.ridge_point(dl.accelerator("TPU v5p")) == pytest.approx(459e12 / 2765e9)
    assert dl.ridge_point(100e12, 1e12) == 100.0
    assert dl.ridge_point(dl.Roof("x", 8.0, 2.0)) == 4.0


@given(inten_st, peak_st, bw_st)
def test_attainable_is_the_min_of_roof_and_slope(i, peak, bw):
    a = dl.attainable_flops(i, peak_flops=peak, bandwidth=bw)
    assert a == pytest.approx(min(peak, i * bw))
    assert a <= peak * (1 + 1e-12)
    ridge = peak / bw
    if i > ridge * (1 + 1e-9):
        assert a == pytest.approx(peak)


@given(peak_st, bw_st)
def test_at_the_ridge_both_limits_meet(peak, bw):
    ridge = dl.ridge_point(peak, bw)
    assert dl.attainable_flops(ridge, peak_flops=peak, bandwidth=bw) == pytest.approx(peak, rel=1e-9)


def test_attainable_is_vectorised_and_monotone():
    x = np.logspace(-2, 5, 50)
    y = dl.attainable_flops(x, peak_flops=989.5e12, bandwidth=3.35e12)
    assert y.shape == x.shape
    assert np.all(np.diff(y) >= 0)
    assert y[0] == pytest.approx(1e-2 * 3.35e12) and y[-1] == pytest.approx(989.5e12)


@given(st.integers(1, 4096), st.integers(1, 4096), st.integers(1, 4096), st.sampled_from([1, 2, 4]))
def test_matmul_counts(m, n, k, e):
    op = R.matmul(m, n, k, bytes_per_element=e)
    assert op.flops == 2 * m * n * k
    assert op.n_bytes == e * (m * k + k * n + m * n)
    assert op.intensity == pytest.approx(op.flops / op.n_bytes)


@given(st.integers(1, 20000))
def test_square_bf16_matmul_intensity_is_n_over_3(n):
    assert R.matmul(n, n, n).intensity == pytest.approx(n / 3)


def test_matmul_becomes_compute_bound_on_h100_above_n_885():
    # n / 3 = 295.4 at n = 886
    assert dl.place(R.matmul(512, 512, 512), "H100").bound == "memory"
    assert dl.place(R.matmul(1024, 1024, 1024), "H100").bound == "compute"
    assert dl.place(R.matmul(1, 16384, 16384), "H100").bound == "memory"  # decoding: matrix-vector


@given(st.integers(1, 10**8))
def test_elementwise_intensity_does_not_depend_on_size(n):
    assert R.add(n).intensity == pytest.approx(1 / 6)
    assert R.gelu(n).intensity == pytest.approx(2.0)


def test_layernorm_counts():
    op = R.layernorm(1000, 512, bytes_per_element=2)
    assert op.flops == 8 * 1000 * 512
    assert op.n_bytes == 2 * (2 * 1000 * 512 + 2 * 512)


@given(st.integers(16, 65536), st.integers(1, 64), st.sampled_from([64, 128]))
def test_attention_tiling_keeps_flops_and_removes_the_s_squared_traffic(s, h, d):
    un = R.attention(s, heads=h, head_dim=d, tiled=False)
    ti = R.attention(s, heads=h, head_dim=d, tiled=True)
    assert un.flops == ti.flops == pytest.approx(h * (4.0 * s * s * d + 5.0 * s * s))
    assert ti.n_bytes == pytest.approx(h * 4.0 * s * d * 2)
    assert un.n_bytes - ti.n_bytes == pytest.approx(h * 4.0 * s * s * 2)  # the score matrix, 4 passes
    assert ti.intensity > un.intensity
    # untiled intensity is capped near d / e however long the sequence
    assert un.intensity < (4 * d + 5) / (4 * 2) + 1e-9


def test_attention_on_h100_memory_bound_untiled_compute_bound_tiled():
    assert dl.place(R.attention(4096, tiled=False), "H100").bound == "memory"
    assert dl.place(R.attention(4096, tiled=True), "H100").bound == "compute"


@given(st.integers(1, 5000), st.sampled_from(["A100", "H100", "B200", "TPU v4", "Gaudi 3"]))
def test_placement_time_is_the_max_of_the_two_limits(n, name):
    op = R.matmul(n, n, n)
    pl = dl.place(op, name)
    spec = dl.accelerator(name)
    assert pl.compute_time == pytest.approx(op.flops / spec.bf16_flops)
    assert pl.memory_time == pytest.approx(op.n_bytes / spec.hbm_bandwidth)
    assert pl.time == pytest.approx(max(pl.compute_time, pl.memory_time))
    assert pl.attainable_flops == pytest.approx(
        dl.attainable_flops(op.intensity, peak_flops=spec.bf16_flops, bandwidth=spec.hbm_bandwidth))
    assert (pl.bound == "compute") == (op.intensity >= spec.ridge_point)


def test_operation_menu_builds_every_kind():
    for kind in R.OPERATION_KINDS:
        op = R.operation(kind, 256)
        assert op.flops > 0 and op.n_bytes > 0
    assert len(dl.example_operations()) >= 8


@pytest.mark.parametrize("call,exc,match", [
    (lambda: R.matmul(0, 4, 4), ValueError, "m must be an integer >= 1"),
    (lambda: R.matmul(4, 4, 4, bytes_per_element=0), ValueError, "bytes_per_element"),
    (lambda: dl.attainable_flops(-1.0, peak_flops=1e12, bandwidth=1e9), ValueError, "intensity"),
    (lambda: dl.attainable_flops([1.0, np.nan], peak_flops=1e12, bandwidth=1e9), ValueError, "intensity"),
    (lambda: dl.attainable_flops(1.0, peak_flops=0, bandwidth=1e9), ValueError, "peak_flops"),
    (lambda: dl.ridge_point(1e12), ValueError, "bandwidth is required"),
    (lambda: dl.ridge_point("Z80"), ValueError, "known: A100"),
    (lambda: R.operation("fft", 64), ValueError, "kind must be one of"),
    (lambda: R.attention(128, tiled="yes"), TypeError, "tiled"),
    (lambda: dl.Operation("x", 1.0, 0.0), ValueError, "n_bytes"),
    (lambda: dl.place("matmul", "H100"), TypeError, "Operation"),
])
def test_bad_inputs(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --- added for chapter 3: attention's intensity limits ---

@pytest.mark.parametrize("d,e", [(64, 2), (128, 2), (128, 4), (256, 1)])
def test_untiled_attention_approaches_its_limit_from_below(d, e):
    limit = R.attention_intensity_limit(head_dim=d, bytes_per_element=e)
    assert limit == pytest.approx((4 * d + 5) / (4 * e))
    values = [R.attention(s, heads=1, head_dim=d, bytes_per_element=e).intensity for s in (256, 4096, 10**6)]
    assert values == sorted(values) and values[-1] < limit
    assert values[-1] == pytest.approx(limit, rel=1e-3)


@given(st.sampled_from(dl.accelerator_names()), st.sampled_from([64, 128, 256]))
def test_tiled_attention_crosses_the_ridge_at_the_returned_length(name, d):
    s = R.tiled_attention_ridge_seq(name, head_dim=d)
    at = R.attention(max(1, round(s)), heads=1, head_dim=d, tiled=True)
    assert at.intensity == pytest.approx(dl.ridge_point(name), rel=1.0 / s + 1e-9)
    assert dl.place(R.attention(int(s) + 1, head_dim=d, tiled=True), name).bound == "compute"
    if int(s) > 1:
        assert dl.place(R.attention(int(s) - 1, head_dim=d, tiled=True), name).bound == "memory"


def test_attention_limits_reject_bad_inputs():
    with pytest.raises(ValueError, match="head_dim must be"):
        R.attention_intensity_limit(head_dim=0)
    with pytest.raises(ValueError, match="bytes_per_element must be"):
        R.tiled_attention_ridge_seq("H100", bytes_per_element=0)
    with pytest.raises(ValueError, match="unknown accelerator"):
        R.tiled_attention_ridge_seq("V100")
