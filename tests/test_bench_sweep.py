"""``python -m distlib.bench alltoall``: the book's pairwise and Bruck all-to-alls beside the engine's own.

The sweep itself (distlib/bench/sweep.py) on threads, and the command at its smallest on MPI ranks; the
all-reduce command's own tests are in tests/test_bench.py.
"""

import contextlib
import importlib.util
import io
import json
import subprocess
import sys

import numpy as np
import pytest

from distlib.bench import BadInput, format_table, run_sweep
from distlib.bench.sweep import DEFAULT_ALGORITHMS, _algorithms
from distlib.engines import run_threads


def test_alltoall_sweep_on_threads_is_typed_and_checked():
    out = run_threads(lambda c: run_sweep(c, collective="all_to_all", min_bytes=16, max_bytes=4096, step_factor=16,
                                          iters=2, warmup=1, dtype="int32"), 3, timeout=60)  # fmt: skip
    result = out[0]
    assert result.collective == "alltoall" and result.redop == "none" and result.p == 3
    assert result.algorithms == ("builtin", "pairwise", "bruck")
    assert result.sizes == [16, 256, 4096]
    assert result.calibration is None and result.wrong_total() == 0
    for row in result.rows:
        base = np.array(row.results["builtin"].samples)
        for name in ("pairwise", "bruck"):
            r = row.results[name]
            assert r.wrong == 0 and len(r.samples) == len(base) == 2
            assert r.ratio == pytest.approx(float(np.median(np.array(r.samples) / base)))  # sample by sample
            assert r.busbw == pytest.approx(r.algbw * 2 / 3)  # all-to-all: algbw * (p - 1)/p
    table = format_table(result)
    assert "# distlib.bench alltoall: engine threads, p = 3 ranks, dtype int32, redop none" in table
    assert "busbw = algbw * (p-1)/p" in table and "/builtin" in table
    assert [line.split()[3] for line in table.splitlines() if line.split()[0].isdigit()] == ["none"] * 3


def test_algorithm_names_follow_the_collective():
    assert _algorithms(None, "allreduce") == ["ring"] == list(DEFAULT_ALGORITHMS["allreduce"])
    assert _algorithms(None, "alltoall") == ["pairwise", "bruck"]
    assert _algorithms("bruck,pairwise,bruck", "alltoall") == ["bruck", "pairwise"]
    with pytest.raises(BadInput, match="unknown algorithm 'ring' for alltoall; choose from pairwise, bruck"):
        _algorithms("ring", "alltoall")
    with pytest.raises(BadInput, match="unknown algorithm 'bruck' for allreduce"):
        _algorithms("bruck", "allreduce")


def test_command_refuses_an_allreduce_algorithm_for_alltoall():
    from distlib.bench import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["alltoall", "--engine", "mpi", "--ranks", "2", "--algorithms", "ring"])
    assert code == 2 and "unknown algorithm 'ring' for alltoall" in err.getvalue()


@pytest.mark.engines
@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None, reason="mpi4py not installed")
def test_alltoall_command_on_mpi_ranks_prints_ratios():
    args = ["alltoall", "--engine", "mpi", "--ranks", "2", "-b", "64", "-e", "64K", "-f", "1024", "-n", "2", "-w", "1"]
    table = subprocess.run([sys.executable, "-m", "distlib.bench", *args, "--quiet"], capture_output=True, text=True,
                           timeout=240)  # fmt: skip
    assert table.returncode == 0, table.stderr
    assert "distlib.bench alltoall: engine mpi, p = 2 ranks" in table.stdout and "# wrong results: 0" in table.stdout
    rows = [line.split() for line in table.stdout.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert [int(r[0]) for r in rows] == [64, 65536]
    # builtin: time algbw busbw #wrong; pairwise and bruck add /builtin
    assert all(r[8] == r[12] == r[17] == "0" for r in rows)
    assert all(float(r[13]) > 0 and float(r[18]) > 0 for r in rows)
    out = subprocess.run([sys.executable, "-m", "distlib.bench", *args, "--json"], capture_output=True, text=True,
                         timeout=240)  # fmt: skip
    result = json.loads(out.stdout)
    assert result["collective"] == "alltoall" and result["algorithms"] == ["builtin", "pairwise", "bruck"]
    assert all(r["wrong"] == 0 for row in result["rows"] for r in row["results"].values())
