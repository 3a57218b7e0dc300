"""``python -m distlib.bench``: the nccl-tests style table over real engines."""

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

from distlib.bench import BenchResult, Timing, format_table, parse_size, run_bench, sizes


def test_parse_size_uses_powers_of_1024_like_nccl_tests():
    assert parse_size("8") == 8
    assert parse_size("1K") == 1024
    assert parse_size("64M") == 64 * 2**20
    assert parse_size("1G") == 2**30
    assert parse_size("2MB") == 2 * 2**20
    for bad in ("abc", "-1", "1.5"):
        with pytest.raises(ValueError, match="size"):
            parse_size(bad)


def test_sizes_step_like_nccl_tests():
    assert sizes(8, 128, 2) == [8, 16, 32, 64, 128]
    assert sizes(8, 100, 4) == [8, 32]
    assert sizes(1, 3, 1.5) == [1, 2, 3]
    with pytest.raises(ValueError):
        sizes(16, 8, 2)
    with pytest.raises(ValueError):
        sizes(8, 64, 1)


def _fake_result():
    row = lambda n, t_builtin, t_ring, wrong: {  # noqa: E731
        "n_bytes": n, "count": n // 4, "dtype": "float32",
        "results": {
            "builtin": {"seconds": t_builtin, "algbw": n / t_builtin, "busbw": n / t_builtin, "wrong": 0, "batch": 1},
            "ring": {"seconds": t_ring, "algbw": n / t_ring, "busbw": n / t_ring, "wrong": wrong, "batch": 1,
                     "ratio": t_ring / t_builtin},
        },
    }  # fmt: skip
    return {
        "collective": "allreduce", "engine": "mpi", "p": 2, "dtype": "float32", "iters": 5, "warmup": 1,
        "algorithms": ["builtin", "ring"], "memcpy_bandwidth": 5e9, "calibration": None,
        "rows": [row(1024, 1e-5, 2e-5, 0), row(1 << 20, 1e-3, 5e-4, 3)],
    }  # fmt: skip


def test_format_table_shows_every_column():
    text = format_table(_fake_result())
    lines = text.splitlines()
    assert "memory-copy reference" in text and "5 GB/s" in text
    header = next(line for line in lines if line.split()[1:2] == ["size"])
    # nccl-tests' columns, in its order, so its log parsers read the table
    assert header.split()[:10] == ["#", "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong"]
    assert "/builtin" in header
    small = next(line for line in lines if line.split()[:1] == ["1024"])
    assert small.split()[2:5] == ["float", "sum", "-1"] and small.split()[8] == "0" and small.split()[-1] == "2.00"
    big = next(line for line in lines if line.split()[:1] == [str(1 << 20)])
    assert big.split()[-2] == "3" and big.split()[-1] == "0.50"  # 3 wrong elements; ring twice as fast
    assert "# wrong results: 1" in text
    assert "# Out of bounds values : 1 FAILED" in text
    avg = (1024 / 1e-5 + (1 << 20) / 1e-3) / 2 / 1e9  # the built-in's busbw, averaged over sizes
    assert f"# Avg bus bandwidth    : {avg:.4f}" in text
    assert "timing statistic: the median" in text


def test_typed_result_round_trips_through_json():
    result = BenchResult.from_dict(_fake_result())
    assert result.algorithms == ("builtin", "ring") and result.sizes == [1024, 1 << 20]
    assert isinstance(result.rows[0].results["ring"], Timing)
    assert result.column("ring", "seconds") == [2e-5, 5e-4]
    assert result.wrong_total("ring") == 3 and result.wrong_total("builtin") == 0
    again = BenchResult.from_json("# progress line\n" + json.dumps(result.to_dict()))
    assert again == result
    with pytest.raises(ValueError, match="algorithm"):
        result.column("butterfly")


def _run(args, timeout=240):
    return subprocess.run([sys.executable, "-m", "distlib.bench", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.engines
@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None, reason="mpi4py not installed")
def test_bench_mpi_json_is_correct_and_complete(tmp_path, monkeypatch):
    monkeypatch.setenv("DISTLIB_CACHE_DIR", str(tmp_path))  # measure auto's fit afresh; leave ~/.cache alone
    out = _run(["allreduce", "--engine", "mpi", "--ranks", "3", "-b", "8", "-e", "256K", "-f", "32",
                "--algorithms", "ring,tree,hd,rd,auto", "--iters", "3", "--warmup", "1", "--json"])  # fmt: skip
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["engine"] == "mpi" and result["p"] == 3
    assert result["algorithms"] == ["builtin", "ring", "tree", "halving_doubling", "recursive_doubling", "auto"]
    assert [row["n_bytes"] for row in result["rows"]] == [8, 256, 8192, 262144]
    assert result["memcpy_bandwidth"] > 1e8
    assert set(result["calibration"]["alpha"]) == {"ring", "tree", "halving_doubling", "recursive_doubling", "builtin"}
    for row in result["rows"]:
        for name, r in row["results"].items():
            assert r["wrong"] == 0, (row["n_bytes"], name)
            assert r["seconds"] > 0
            if r["busbw"] is not None:  # busbw = algbw * 2(p-1)/p
                assert r["busbw"] == pytest.approx(r["algbw"] * 4 / 3)
        ring, builtin = row["results"]["ring"], row["results"]["builtin"]
        assert len(ring["samples"]) == len(builtin["samples"]) >= 1 and min(ring["samples"]) > 0
        # the ratio is taken sample by sample (each sample ran both back to back), then its median
        assert ring["ratio"] == pytest.approx(float(np.median(np.array(ring["samples"]) / builtin["samples"])))
        assert row["results"]["auto"]["choice"] in ("ring", "tree", "halving_doubling", "recursive_doubling", "builtin")
    assert "# progress: 4/4 sizes" in out.stderr
    assert (tmp_path / "alpha_beta.json").exists()


@pytest.mark.engines
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
def test_bench_gloo_table():
    out = _run(["allreduce", "--engine", "gloo", "--ranks", "2", "-b", "1K", "-e", "1M", "-f", "32",
                "--iters", "3", "--warmup", "1", "--quiet"])  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "engine gloo, p = 2 ranks" in out.stdout
    assert "# wrong results: 0" in out.stdout
    rows = [line.split() for line in out.stdout.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert [int(r[0]) for r in rows] == [1024, 32768, 1048576]
    assert all(r[8] == "0" and r[12] == "0" for r in rows)  # #wrong of the built-in and of the ring


@pytest.mark.engines
def test_bench_nccl_skips_without_gpu():
    out = _run(["allreduce", "--engine", "nccl", "--ranks", "2"])
    if "SKIPPED" in out.stdout:
        assert out.returncode == 0 and "needs CUDA GPUs" in out.stdout
    else:  # pragma: no cover - a GPU machine
        assert out.returncode in (0, 2)


def test_bench_mpi_outside_mpiexec_says_how_to_run():
    out = _run(["allreduce", "--engine", "mpi"])
    assert out.returncode == 2 and "mpiexec" in out.stderr


@pytest.mark.engines
@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None, reason="mpi4py not installed")
def test_bench_speaks_nccl_tests_options():
    out = _run(["all_reduce", "--engine", "mpi", "--ranks", "2", "-b", "1K", "-e", "4K", "-f", "4", "-d", "double",
                "-o", "sum", "-g", "1", "-c", "0", "-n", "2", "--warmup_iters", "1", "--quiet"])  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert [r[:5] for r in rows] == [["1024", "128", "double", "sum", "-1"], ["4096", "512", "double", "sum", "-1"]]
    assert all(r[8] == "N/A" for r in rows)  # -c 0: not checked
    assert "# Avg bus bandwidth" in out.stdout


@pytest.mark.engines
@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None, reason="mpi4py not installed")
def test_typed_library_entry_launches_and_reads_back():
    result = run_bench(engine="mpi", ranks=2, min_bytes="1K", max_bytes="1K", iters=2, warmup=1)
    assert isinstance(result, BenchResult) and result.p == 2 and result.sizes == [1024]
    assert result.wrong_total() == 0 and result.column("ring", "seconds")[0] > 0


BAD_CLI = [
    (["-d", "bfloat16"], "bfloat16"),
    (["-d", "quad"], "unknown type"),
    (["-o", "max"], "only sum"),
    (["-g", "2"], "one GPU per process"),
    (["broadcast"], "only allreduce"),
    (["--ranks", "2", "-b", "3"], "-b/--minbytes must be at least one element of float32 (4 bytes), got 3"),
    (["--ranks", "2", "-b", "1M", "-e", "1K"], "-e/--maxbytes must be at least -b (1048576 bytes), got 1024"),
    (["--ranks", "2", "-f", "1"], "-f/--stepfactor must be a finite number above 1, got 1"),
    (["--ranks", "2", "-f", "inf"], "-f/--stepfactor must be a finite number above 1, got inf"),
    (["--ranks", "2", "-f", "nan"], "-f/--stepfactor must be a finite number above 1, got nan"),
    (["--ranks", "2", "-f", "1.0000001"], "makes more than 200 sizes"),
    (["--ranks", "2", "--timeout", "0"], "--timeout must be more than 0"),
    (["--ranks", "2", "--timeout", "-5"], "--timeout must be more than 0"),
    (["--ranks", "2", "--timeout", "inf"], "--timeout must be more than 0"),
    (["--ranks", "0"], "--ranks must be between 1 and"),
    (["--ranks", "100000"], "--ranks must be between 1 and"),
    (["--engine", "gloo", "--ranks", "0"], "--ranks must be between 1 and"),
    (["--ranks", "2", "-b", "64G", "-e", "64G"], "GiB available; use a smaller -e or fewer ranks"),
    (["--ranks", "2", "-n", "0"], "-n/--iters must be between 1 and 100000, got 0"),
    (["--ranks", "2", "-w", "-1"], "-w/--warmup_iters must be between 0 and 100000, got -1"),
    (["--ranks", "2", "--algorithms", "ring,butterfly"], "unknown algorithm 'butterfly'"),
    (["--nodes", "0"], "--nodes must be between 1 and 64"),
    (["--nodes", "2", "--ranks", "3"], "--ranks must be a positive multiple of --nodes (2), got 3"),
    (["--nodes", "2", "--link-gbit", "1000"], "--link-gbit must be between 0.01 and 100"),
]


def cli_message(argv) -> tuple:
    """``(exit status, stderr)`` of ``python -m distlib.bench argv``, in this process: every check here runs
    before any rank or cluster starts (argparse raises SystemExit 2; the rest return 2)."""
    import contextlib
    import io

    from distlib.bench import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    return code, err.getvalue()


@pytest.mark.parametrize("args, message", BAD_CLI)
def test_bench_refuses_what_it_cannot_run_and_says_why(args, message):
    base = ["allreduce", "--engine", "mpi"]
    if args[0] == "broadcast":
        base, args = ["broadcast", "--engine", "mpi"], []
    if "--engine" in args:
        base = ["allreduce"]
    code, err = cli_message(base + args)
    assert code == 2, err
    assert message in err, err
    lines = [line for line in err.strip().splitlines() if "usage:" not in line and not line.startswith(" ")]
    assert len(lines) == 1, err  # one line (argparse adds its usage above it)


def test_bench_rejects_unknown_algorithm():
    out = _run(["allreduce", "--engine", "mpi", "--algorithms", "ring,butterfly"])
    assert out.returncode != 0 and "butterfly" in out.stderr
