"""The book's collectives and the DDP example on torch.distributed (gloo), and the NCCL path.

Each launch starts fresh interpreters that import torch (seconds each on 2
cores), so the whole matrix runs inside a few launches.
"""

import importlib.util
import json
import subprocess
import sys

import pytest

from distlib.engines import report, run_torch, stray_processes
from distlib.examples.torch_ddp import DDPTraining

pytestmark = [
    pytest.mark.engines,
    pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed (pip install torch)"),
]


@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_book_collectives_match_gloo_builtins(p):
    # Up to 8 MiB of float64: past every eager limit, and chunks that are not
    # a whole number of elements per rank.
    sizes = "0,1,2,{},{},13,1000,65537,{}".format(p + 1, 2 * p + 3, 2**20 + 3)
    args = ["--engine", "gloo", "--sizes", sizes, "--dtypes", "float64,int32" if p == 2 else "float64"]
    result = run_torch("distlib.engines.selftest:main", p, args=args, timeout=120)
    summary = json.loads(result.lines(0)[-1])
    assert summary == {"engine": "gloo", "p": p, "checks": summary["checks"], "failures": []}
    assert summary["checks"] > 50 * p
    assert result.returncodes == [0] * p
    assert stray_processes(result.run_id) == []


def test_book_collectives_over_numpy_buffers_on_gloo_match_its_builtins():
    # NumpyTorchComm (the trainer's --engine gloo): NumPy arrays sent as tensors sharing their memory.
    sizes = "0,1,2,4,9,13,1000,65537"
    args = ["--engine", "gloo-numpy", "--sizes", sizes]
    result = run_torch("distlib.engines.selftest:main", 3, args=args, timeout=120)
    summary = json.loads(result.lines(0)[-1])
    assert summary == {"engine": "gloo", "p": 3, "checks": summary["checks"], "failures": []}
    assert summary["checks"] > 50 * 3
    assert stray_processes(result.run_id) == []


def test_ddp_on_gloo_trains_identical_replicas():
    result = run_torch("distlib.examples.torch_ddp:main", 2, args=["--steps", "40"], timeout=120)
    out = report.strip(result.stdout[0])  # what a reader sees: the report line is for the launcher
    before = out.split("hashes before DDP: ")[1].splitlines()[0]
    after = out.split("rank 0's broadcast): ")[1].splitlines()[0]
    assert len(set(json.loads(before.replace("'", '"')))) == 2  # different seeds...
    assert len(set(json.loads(after.replace("'", '"')))) == 1  # ...synchronised by DDP
    assert "parameters identical on all ranks: True" in out
    assert "loss decreased" in out and out.rstrip().endswith("True")
    typed = report.read(result, DDPTraining)  # the same run, as rank 0 reported it
    assert len(set(typed.hashes_before)) == 2 and len(set(typed.hashes_after)) == 1
    assert typed.last_loss < typed.first_loss


def test_nccl_path_skips_cleanly_without_a_gpu_or_runs_with_one():
    # One interpreter for both checks: importing torch costs seconds on 2 cores.
    code = (
        "import torch\n"
        "from distlib.examples import nccl_allreduce\n"
        "nccl_allreduce.main(['--mib', '8'])\n"
        "from distlib.engines.torch_dist import init\n"
        "if not torch.cuda.is_available():\n"
        "    try:\n"
        "        init('nccl')\n"
        "    except RuntimeError as e:\n"
        "        print('init:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True).stdout
    if "no CUDA GPU is visible" in out:
        assert "skipped" in out
        assert "init: backend='nccl' needs a CUDA GPU" in out and "gloo" in out
    else:  # pragma: no cover - needs a GPU
        assert "correct: True" in out and "correct: False" not in out


def test_run_torch_checks_arguments():
    with pytest.raises(ValueError, match="backend"):
        run_torch("distlib.engines.selftest:main", 2, backend="mpi")
    with pytest.raises(ValueError, match="n must be"):
        run_torch("distlib.engines.selftest:main", 0)
    with pytest.raises(FileNotFoundError):
        run_torch("no_such_script.py", 2)
