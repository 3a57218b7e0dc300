"""The trainer's overlap (--overlap prefetch, buckets, tp, pp): the same numbers as the blocking run, on threads
and on real MPI and gloo ranks; what it holds more; and its flags refused in one line when they cannot apply."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from distlib.engines.comm import run_threads
from distlib.engines.tagged import Background, TaggedComm
from distlib.layout import Layout
from distlib.train.__main__ import main
from distlib.train.model import Config, unit_specs
from distlib.train.overlap import Overlap, fitting_overlaps, plan_buckets
from distlib.train.rank import train_rank
from conftest import needs_mpi

ROOT = Path(__file__).resolve().parents[1]
STEPS = 3
SEED = 5
TINY_BUCKETS = 1e-3  # MiB: every unit a bucket of its own, so reductions start all through the backward pass

CASES = [
    (Layout(dp=2), Overlap(("buckets",), bucket_mb=TINY_BUCKETS)),
    (Layout(dp=2), Overlap(("buckets",))),  # one 25 MiB bucket: reduced once the backward is done
    (Layout(dp=4, zero=1), Overlap(("buckets",), bucket_mb=TINY_BUCKETS)),
    (Layout(dp=2, zero=2), Overlap(("buckets",))),
    (Layout(dp=2, zero=3), Overlap(("prefetch",))),
    (Layout(dp=2, zero=3), Overlap(("prefetch", "buckets"), prefetch_depth=2)),
    (Layout(tp=2), Overlap(("tp",))),
    (Layout(tp=2, sequence_parallel=True), Overlap(("tp",))),
    (Layout(pp=2, microbatches=4), Overlap(("pp",))),
    (Layout(pp=2, microbatches=4, schedule="interleaved", chunks=2), Overlap(("pp",))),
    (Layout(dp=2, pp=2, microbatches=2, zero=1), Overlap(("buckets", "pp"), bucket_mb=TINY_BUCKETS)),
    (Layout(dp=2, tp=2, zero=3), Overlap(("prefetch", "buckets", "tp"))),
    (Layout(dp=2, cp=2, zero=3), Overlap(("prefetch", "buckets"))),
]


def _threads(layout, overlap=Overlap(), config=Config()):
    return run_threads(lambda c: train_rank(c, layout, steps=STEPS, seed=SEED, overlap=overlap, config=config),
                       layout.ranks, timeout=60)  # fmt: skip


def _rel(a, b) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


@pytest.mark.parametrize("layout, overlap", CASES, ids=[f"{lay.words()}|{ov.words()}" for lay, ov in CASES])
def test_each_overlap_equals_its_blocking_run(layout, overlap):
    blocking, hidden = _threads(layout), _threads(layout, overlap)
    assert max(_rel(a, b) for a, b in zip(hidden[0].losses, blocking[0].losses)) < 1e-9
    assert _rel(sum(r.checksum_part for r in hidden), sum(r.checksum_part for r in blocking)) < 1e-9
    # the same messages move, now partly on the background channel (ZeRO-1's buckets cut its reduce-scatter
    # into one per bucket: the same bytes to within the rounding of each cut)
    for a, b in zip(hidden, blocking):
        assert abs(a.comm_bytes - b.comm_bytes) <= 8 * 2 * len(unit_specs(Config())), (a.comm_bytes, b.comm_bytes)
    assert hidden[0].overlap == list(overlap.kinds) and len(hidden[0].overlap_wait_seconds) == STEPS


def test_prefetch_holds_a_unit_more_for_each_step_of_depth():
    """FSDP's trade: each all-gather in flight holds a whole unit; ZeRO-3's peak grows by about one unit a depth."""
    lay = Layout(dp=2, zero=3)
    unit = max(spec.size for spec in unit_specs(Config())) * 8
    peaks = [_threads(lay, Overlap(("prefetch",), prefetch_depth=d) if d else Overlap())[0].state_bytes
             for d in (0, 1, 2)]  # fmt: skip
    assert peaks[0] < peaks[1] < peaks[2], peaks
    assert peaks[2] - peaks[0] <= 2 * unit, (peaks, unit)


def test_zero2_buckets_hold_whole_unit_gradients_until_their_reduce_scatters_end():
    lay = Layout(dp=2, zero=2)
    plain, hidden = _threads(lay)[0], _threads(lay, Overlap(("buckets",)))[0]
    assert hidden.state_parts["grads"] >= plain.state_parts["grads"]
    assert hidden.state_bytes >= plain.state_bytes


def test_buckets_are_whole_units_last_first_and_cover_the_vector():
    sizes = [spec.size for spec in unit_specs(Config())]
    for mb in (1e-3, 0.1, 1.0, 25.0):
        buckets = plan_buckets(sizes, int(mb * 2**20))
        covered = sorted(k for lo, hi in buckets for k in range(lo, hi))
        assert covered == list(range(len(sizes)))
        assert [hi for _, hi in buckets][0] == len(sizes)  # the first bucket holds the last unit
        assert all(b[0] == a[1] for a, b in zip(buckets[1:], buckets))  # contiguous, going down
    assert len(plan_buckets(sizes, 1)) == len(sizes) and len(plan_buckets(sizes, 2**40)) == 1


def test_all_turns_on_what_the_layout_has():
    assert fitting_overlaps(Layout(dp=2, tp=2, pp=2, zero=1, microbatches=2)) == ("buckets", "tp", "pp")
    assert fitting_overlaps(Layout(dp=2, zero=3)) == ("prefetch", "buckets")
    assert fitting_overlaps(Layout(cp=2)) == ("buckets",)  # the context-parallel ranks hold the same parameters


def test_a_failed_background_collective_raises_where_it_is_waited_for():
    def work(comm):
        bg = Background()
        handle = bg.start(lambda: 1 / 0)
        try:
            handle.wait()
        except ZeroDivisionError:
            return "raised"
        finally:
            bg.close()
        return "silent"

    assert run_threads(work, 1) == ["raised"]


def test_the_tagged_channel_never_meets_the_main_one():
    """A collective on the background channel and one on the main channel, between the same ranks, at once."""
    from distlib.engines.algorithms import allreduce

    def work(comm):
        bg = Background()
        side = bg.start(allreduce, TaggedComm(comm), np.full(1000, comm.rank + 10.0))
        main_sum = allreduce(comm, np.full(1000, comm.rank + 1.0))
        out = float(main_sum[0]), float(side.wait()[0])
        bg.close()
        return out

    assert run_threads(work, 3) == [(6.0, 33.0)] * 3


BAD = [
    (["--dp", "2", "--overlap", "bucket"], "--overlap must be none, all, or a comma-separated list of prefetch, "
                                           "buckets, tp, pp; got 'bucket'"),
    (["--dp", "2", "--overlap", "prefetch"], "--overlap prefetch needs --zero 3"),
    (["--overlap", "buckets"], "--overlap buckets needs more than one data-parallel rank"),
    (["--dp", "2", "--overlap", "tp"], "--overlap tp needs --tp above 1"),
    (["--tp", "2", "--overlap", "pp"], "--overlap pp needs --pp above 1"),
    (["--dp", "2", "--overlap", "buckets", "--bucket-mb", "0"], "--bucket-mb must be a number of MiB above 0, got 0.0"),
    (["--dp", "2", "--zero", "3", "--overlap", "prefetch", "--prefetch-depth", "9"],
     "--prefetch-depth must be an integer from 1 to 4, got 9"),
]


@pytest.mark.parametrize("argv, text", BAD)
def test_a_bad_overlap_flag_is_one_line_and_starts_nothing(argv, text, capsys, monkeypatch):
    import distlib.engines.launch as launch

    def refuse(*args, **kwargs):
        raise AssertionError("a process was started")

    monkeypatch.setattr(launch, "run_mpi", refuse)
    status = main(argv + ["--steps", "1"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("python -m distlib.train: ") and text in err, err


# ---------------------------------------------------------------------------
# Real ranks: MPI (MPI_THREAD_MULTIPLE) and gloo
# ---------------------------------------------------------------------------

REAL = [  # (flags, engine)
    (dict(dp=2, zero=3), "mpi"),
    (dict(dp=2, tp=2, zero=1), "mpi"),
    (dict(tp=2, sequence_parallel=True), "gloo"),
    (dict(dp=2, pp=2, microbatches=2), "gloo"),
]


@pytest.fixture(scope="module")
def real_runs():
    from distlib.engines import stray_processes
    from distlib.train.launch import train

    out = {}
    for flags, engine in REAL:
        pair = []
        for overlap in ("none", "all"):
            result = train(**flags, steps=STEPS, seed=SEED, engine=engine, timeout=120, overlap=overlap,
                           bucket_mb=TINY_BUCKETS)  # fmt: skip
            assert stray_processes(result.run_id) == []
            pair.append(result)
        out[(tuple(sorted(flags.items())), engine)] = pair
    return out


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_every_overlap_on_real_ranks_equals_the_blocking_run(real_runs):
    for key, (blocking, hidden) in real_runs.items():
        assert max(_rel(a, b) for a, b in zip(hidden.losses, blocking.losses)) < 1e-9, key
        assert _rel(hidden.param_checksum, blocking.param_checksum) < 1e-9, key
        assert hidden.overlap and not blocking.overlap, key
        body = hidden.to_json()
        assert body["overlap"] == list(hidden.overlap) and len(body["overlap_wait_seconds"]) == STEPS
        assert "overlap" not in blocking.to_json()


@pytest.mark.engines
@needs_mpi
def test_the_command_line_says_what_it_overlaps():
    proc = subprocess.run([sys.executable, "-m", "distlib.train", "--dp", "2", "--zero", "3", "--overlap", "all",
                           "--prefetch-depth", "2", "--steps", "2", "--json"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "overlap prefetch+buckets (buckets of 25 MiB, prefetch depth 2)" in proc.stderr.splitlines()[0]
    body = json.loads(proc.stdout)
    assert body["overlap"] == ["prefetch", "buckets"] and len(body["overlap_wait_seconds"]) == 2
