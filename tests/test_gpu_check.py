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
