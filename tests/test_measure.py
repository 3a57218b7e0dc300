"""Measuring this machine: results are positive, sane in units, and name their device.

Absolute speeds are never asserted: CI shares two cores with other jobs.
"""

import time

import pytest

import distlib as dl
from distlib import measure as M


@pytest.fixture(scope="module")
def flops():
    return dl.measure_matmul_flops(n=256, repeats=3, device="cpu")


@pytest.fixture(scope="module")
def bandwidth():
    return dl.measure_memory_bandwidth(n_bytes=8 * 2**20, repeats=3, device="cpu")


def test_matmul_measurement_is_positive_and_sane(flops):
    assert flops.unit == "FLOP/s"
    assert 1e6 < flops.value < 1e14  # a CPU does far less than an H100's 1e15
    assert flops.work == 2 * 256**3
    assert len(flops.seconds) == 3 and all(t > 0 for t in flops.seconds)
    assert flops.value == pytest.approx(flops.work / flops.median_seconds)
    assert flops.best >= flops.value
    assert flops.device.startswith("CPU:")
    assert "numpy.matmul" in flops.method and "median of 3" in flops.method
    assert flops.intensity == pytest.approx(2 * 256**3 / (3 * 256**2 * 4))


def test_bandwidth_measurement_is_positive_and_sane(bandwidth):
    assert bandwidth.unit == "B/s"
    assert 1e6 < bandwidth.value < 1e13
    assert bandwidth.work == 2 * 8 * 2**20  # read once, written once
    assert bandwidth.device.startswith("CPU:")
    assert bandwidth.intensity == 0.0


def test_machine_roof_combines_the_two(flops, bandwidth):
    r = dl.machine_roof(flops, bandwidth, name="ci")
    assert r.peak_flops == flops.value and r.bandwidth == bandwidth.value
    assert r.ridge_point == pytest.approx(flops.value / bandwidth.value)
    with pytest.raises(ValueError, match="FLOP/s measurement and a B/s"):
        dl.machine_roof(bandwidth, flops)


def test_defaults_are_quick():
    t0 = time.perf_counter()
    dl.measure_matmul_flops(device="cpu")
    dl.measure_memory_bandwidth(device="cpu")
    assert time.perf_counter() - t0 < 10  # ~0.2 s on an idle 2-core machine


def test_str_names_device_and_unit(flops):
    text = str(flops)
    assert "FLOP/s" in text and "CPU:" in text


def test_describe_cpu_mentions_cores():
    assert "logical core" in M.describe_cpu()


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"n": 8}, ValueError, "n must be an integer >= 16"),
    ({"repeats": 0}, ValueError, "repeats must be"),
    ({"device": "tpu"}, ValueError, "device must be one of"),
    ({"dtype": "int8"}, ValueError, "dtype must be one of"),
])
def test_bad_matmul_arguments(kwargs, exc, match):
    args = {"device": "cpu", **kwargs}
    with pytest.raises(exc, match=match):
        dl.measure_matmul_flops(**args)


def test_bad_bandwidth_arguments():
    with pytest.raises(ValueError, match="n_bytes must be"):
        dl.measure_memory_bandwidth(n_bytes=1000, device="cpu")


def test_cuda_without_a_gpu_says_what_is_missing(monkeypatch):
    monkeypatch.setattr(M, "gpu_available", lambda: False)
    with pytest.raises(RuntimeError, match="CUDA"):
        dl.measure_matmul_flops(device="cuda")
    # device=None falls back to the CPU
    assert dl.measure_matmul_flops(n=64, repeats=1).device.startswith("CPU:")


@pytest.mark.skipif(not M.gpu_available(), reason="needs PyTorch with a CUDA GPU")
def test_gpu_measurements_name_the_gpu():
    f = dl.measure_matmul_flops(n=2048, repeats=3)
    b = dl.measure_memory_bandwidth(n_bytes=2**28, repeats=3)
    for m in (f, b):
        assert m.device.startswith("GPU:") and "CUDA" in m.method
        assert m.value > 0
    assert f.value < 1e16 and b.value < 1e14  # below any chip in the table's peak


def test_gpu_code_path_with_a_stand_in_torch(monkeypatch):
    """The CUDA branch, run against a tiny NumPy stand-in for torch (no GPU here)."""
    import sys
    import types

    import numpy as np

    calls = {"sync": 0}
    cuda = types.SimpleNamespace(is_available=lambda: True, get_device_name=lambda: "Stand-in GPU 9000",
                                 synchronize=lambda: calls.__setitem__("sync", calls["sync"] + 1))
    fake = types.SimpleNamespace(
        __version__="0.0-fake", cuda=cuda, bfloat16=np.float32, float16=np.float16, float32=np.float32,
        randn=lambda n, m, device, dtype: np.ones((n, m), dtype=dtype),
        empty=lambda n, m, device, dtype: np.empty((n, m), dtype=dtype),
        matmul=lambda a, b, out: np.matmul(a, b, out=out),
        ones=lambda n, device, dtype: np.ones(n, dtype=dtype),
        empty_like=lambda x: types.SimpleNamespace(copy_=lambda src: np.copy(src)),
    )
    monkeypatch.setitem(sys.modules, "torch", fake)
    f = M.measure_matmul_flops(n=64, repeats=2)  # device=None picks the "GPU"
    assert f.device == "GPU: Stand-in GPU 9000"
    assert "torch.matmul 64x64 bfloat16 on CUDA" in f.method and f.details["torch"] == "0.0-fake"
    assert calls["sync"] == 3  # after the warm-up and after each timed run
    b = M.measure_memory_bandwidth(n_bytes=2**20, repeats=2, device="cuda")
    assert b.device == "GPU: Stand-in GPU 9000" and b.work == 2 * 2**20
