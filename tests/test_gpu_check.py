"""scripts/gpu_check.sh: on a machine without CUDA it must say so and stop, not pretend."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.skipif(_has_cuda(), reason="a CUDA GPU is present: run scripts/gpu_check.sh itself")
def test_gpu_check_stops_with_a_clear_message_without_cuda(tmp_path):
    env = {**os.environ, "OUT_DIR": str(tmp_path)}
    env.pop("GPU_CHECK_FORCE", None)
    out = subprocess.run(["bash", "scripts/gpu_check.sh"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "SKIPPED" in out.stdout and "no CUDA GPU" in out.stdout
    assert "NCCL bench" in out.stdout  # it names what did not run


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


@pytest.mark.skipif(not _has_torch(), reason="torch is not installed")
def test_the_context_checks_cpu_half_sdpa_equals_the_books_ring():
    from distlib.examples.context_parallel_torch import sdpa_beside_book

    errors = sdpa_beside_book(cp=4, seq=64, heads=2, dim=8)
    assert set(errors) == {"out", "dq", "dk", "dv"} and max(errors.values()) < 1e-12


@pytest.mark.engines
@pytest.mark.skipif(not _has_torch() or _has_cuda(), reason="needs torch without CUDA (the GPU path is the script's)")
def test_the_context_check_says_in_one_line_why_context_parallel_cannot_run_on_the_cpu():
    import sys

    out = subprocess.run([sys.executable, "-m", "distlib.examples.context_parallel_torch", "--device", "cpu",
                          "--timeout", "120"], cwd=ROOT, capture_output=True, text=True, timeout=180)
    lines = out.stdout.strip().splitlines()
    assert out.returncode == 3, out.stdout + out.stderr
    assert lines[0].startswith("sdpa:") and "beside the book's ring" in lines[0]
    assert len(lines) == 2 and "cannot run on cpu" in lines[1] and "sharding strategy" in lines[1]
