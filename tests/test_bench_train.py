"""``benchmarks/bench_train.py``: its JSON at the smallest setting, and its one-line refusals (no times judged)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs_mpi, needs_cluster

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "bench_train.py"
LAYOUTS = ["DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3", "TP"]


def _run(*args, timeout=180) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=ROOT)  # fmt: skip


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_the_smallest_run_reports_every_layout_with_the_predicted_bytes():
    done = _run("--ranks", "2", "--steps", "2", "--peers-ranks", "none", "--overlap", "none", "--json")
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()  # the JSON object alone on stdout; the tables went to stderr
    data = json.loads(line)
    assert data["engine"] == "mpi" and data["machine"].startswith("CPU: ") and data["peers"] == []
    assert "median" in done.stderr and "ratio" in done.stderr
    assert [(r["layout"], r["ranks"]) for r in data["layouts"]] == [(name, 2) for name in LAYOUTS]
    for r in data["layouts"]:
        assert abs(r["bytes_ratio"] - 1) < 1e-9, r  # measured to the byte what the formulas predict
        assert r["bytes_per_step_measured"] == pytest.approx(r["bytes_per_step_predicted"], rel=1e-9)
        assert r["median_step_s"] > 0 and len(r["step_seconds"]) == 2 and min(r["step_seconds"]) > 0
        assert r["state_bytes"] > 0
    state = {r["layout"]: r["state_bytes"] for r in data["layouts"]}
    assert state["DDP"] > state["ZeRO-1"] > state["ZeRO-2"] > state["ZeRO-3"]  # each stage shards one more part


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
@needs_cluster
def test_the_overlap_table_puts_each_measured_step_beside_its_prediction():
    """DDP's buckets across two nodes on MPI (gloo's overlaps are the trainer's tests' to check): blocking,
    overlapped and predicted steps, the same losses. (The times are the benchmark's to print, not this test's
    to judge.)"""
    done = _run("--ranks", "2", "--steps", "3", "--peers-ranks", "none", "--overlap", "buckets",
                "--overlap-engines", "mpi", "--json",
                timeout=400)  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [r["kind"] for r in data["overlaps"]] == ["buckets"] * len(data["overlaps"]) and data["overlaps"]
    for r in data["overlaps"]:
        assert r["losses_equal"], r
        assert 0 < r["predicted_s"] <= r["blocking_s"] and r["overlapped_s"] > 0 and r["comm_s"] > 0
    assert "Overlap across two nodes" in done.stderr and "predicted" in done.stderr


@pytest.mark.parametrize("args, message", [
    (["--ranks", "3"], "--ranks must be a comma-separated list of distinct ranks from {2, 4}; got '3'"),
    (["--peers-ranks", "2,2"], "--peers-ranks must be a comma-separated list of distinct ranks from {2, 4}, or none"),
    (["--steps", "1"], "--steps must be an integer from 2 to 50; got '1'"),
    (["--steps", "x"], "--steps must be an integer from 2 to 50; got 'x'"),
    (["--engine", "nccl"], "--engine must be one of mpi, gloo; got 'nccl'"),
    (["--overlap", "ddp"], "--overlap must be auto, none, or a comma-separated list of buckets, zero3, tp, pp; got 'ddp'"),
    (["--overlap-engines", "nccl"], "--overlap-engines must be gloo, mpi or gloo,mpi; got 'nccl'"),
    (["--overlap-link", "0"], "--overlap-link must be a rate in Gbit/s from 0.01 to 100"),
    (["--peers-models", "huge"], "--peers-models must be small, large or small,large; got 'huge'"),
])  # fmt: skip
def test_bad_flags_are_one_line_naming_the_flag_and_its_range(args, message, capsys):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_train import parse
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    with pytest.raises(SystemExit) as exit_:
        parse(args)
    (line,) = capsys.readouterr().err.splitlines()
    assert exit_.value.code == 2 and message in line, line
