"""Sharded checkpoints (distlib.train.checkpoint): saved at one layout and resumed at another, the run goes on as if
never stopped; a checkpoint is complete or absent; a bad one is refused in one line naming the file or size; and
a rank killed on purpose ends the run named, after which the run comes back from its newest checkpoint."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from distlib.engines.comm import run_threads
from distlib.layout import Layout
from distlib.train.__main__ import main
from distlib.train.checkpoint import (CheckpointError, list_checkpoints, newest_checkpoint, read_checkpoint,
                                      step_name)  # fmt: skip
from distlib.train.model import Config
from distlib.train.rank import train_rank
from conftest import needs_cluster, needs_mpi

SEED = 3
STEPS = 6
KILLED = 4  # killed during step 4 of 6: the newest checkpoint is step 3's


def _threads(layout, steps, **kwargs):
    return run_threads(lambda c: train_rank(c, layout, steps=steps, seed=SEED, **kwargs), layout.ranks, timeout=60)


@pytest.fixture(scope="module")
def uninterrupted():
    """One process, six steps: what every interrupted and resumed run must reproduce."""
    report = _threads(Layout(), STEPS)[0]
    return report.losses, report.checksum_part


def _rel(a, b) -> float:
    return abs(a - b) / abs(b)


PAIRS = [  # (saved at, resumed at)
    (Layout(dp=2, zero=1), Layout(dp=2, zero=3)),
    (Layout(tp=2), Layout(dp=4, zero=1)),
    (Layout(dp=2, zero=3), Layout(tp=2, pp=2, microbatches=2)),
    (Layout(pp=2, microbatches=2), Layout()),
    (Layout(dp=2, tp=2, zero=2), Layout(dp=2, cp=2, zero=2)),
    (Layout(), Layout(tp=4, sequence_parallel=True)),
    (Layout(dp=2), Layout(dp=2, zero=1)),
]


@pytest.mark.parametrize("saved, resumed", PAIRS, ids=[f"{a.words()} -> {b.words()}" for a, b in PAIRS])
def test_a_checkpoint_resumes_at_any_layout_as_if_never_stopped(saved, resumed, uninterrupted, tmp_path):
    losses, checksum = uninterrupted
    _threads(saved, KILLED - 1, checkpoint_dir=tmp_path)
    assert [step for step, _ in list_checkpoints(tmp_path)] == [1, 2, 3]
    after = _threads(resumed, STEPS, checkpoint_dir=tmp_path, resume=True)
    assert after[0].first_step == KILLED and len(after[0].losses) == STEPS - KILLED + 1
    assert max(_rel(a, b) for a, b in zip(after[0].losses, losses[KILLED - 1 :])) < 1e-9
    assert _rel(sum(r.checksum_part for r in after), checksum) < 1e-9


def test_every_rank_writes_a_shard_and_the_meta_file_names_them(tmp_path):
    _threads(Layout(dp=2, tp=2, zero=3), 1, checkpoint_dir=tmp_path)
    folder = tmp_path / step_name(1)
    meta = json.loads((folder / "meta.json").read_text())
    assert [f["file"] for f in meta["files"]] == [f"rank-{r:05d}.bin" for r in range(4)]
    assert meta["step"] == 1 and meta["config"]["hidden"] == Config().hidden and "--zero" in meta["layout"]["argv"]
    whole = read_checkpoint(folder, Config())
    assert [len(w) for w in whole.weights] == [s for s in map(len, whole.m)]


def test_a_torn_save_is_never_read_and_an_existing_step_never_replaced(tmp_path):
    _threads(Layout(dp=2), 2, checkpoint_dir=tmp_path)
    torn = tmp_path / f".partial-{step_name(3)}-deadbeef0000"  # what a crash halfway through a save leaves
    shutil.copytree(tmp_path / step_name(2), torn)
    (torn / "meta.json").unlink()
    assert newest_checkpoint(tmp_path) == tmp_path / step_name(2)
    before = (tmp_path / step_name(2) / "meta.json").stat().st_mtime_ns
    _threads(Layout(), 2, checkpoint_dir=tmp_path)  # writes steps 1 and 2 again: the first ones stay
    assert (tmp_path / step_name(2) / "meta.json").stat().st_mtime_ns == before
    assert not any(p.name.startswith(".partial") and p != torn for p in tmp_path.iterdir())


def _spoil(folder: Path, how: str) -> str:
    shard = folder / "rank-00001.bin"
    if how == "truncated":
        shard.write_bytes(shard.read_bytes()[:-100])
        return f"{shard}: "
    if how == "altered":
        data = bytearray(shard.read_bytes())
        data[len(data) // 2] ^= 0xFF
        shard.write_bytes(bytes(data))
        return f"{shard}: its SHA-256 is not the one the checkpoint wrote (altered)"
    (folder / "rank-00001.bin").unlink()
    return f"{shard}: missing from the checkpoint"


@pytest.mark.parametrize("how", ["truncated", "altered", "missing"])
def test_a_spoiled_shard_is_refused_naming_the_file_and_nothing_is_written(how, tmp_path, capsys, monkeypatch):
    import distlib.engines.launch as launch

    _threads(Layout(dp=2), 2, checkpoint_dir=tmp_path)
    text = _spoil(tmp_path / step_name(2), how)
    listing = sorted(p.name for p in tmp_path.rglob("*"))
    monkeypatch.setattr(launch, "run_mpi", lambda *a, **k: pytest.fail("a process was started"))
    status = main(["--dp", "2", "--steps", "4", "--checkpoint-dir", str(tmp_path), "--resume"])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and text in err, err
    assert sorted(p.name for p in tmp_path.rglob("*")) == listing
    with pytest.raises(CheckpointError, match="rank-00001.bin"):
        read_checkpoint(tmp_path / step_name(2), Config())


BAD = [
    (["--steps", "4", "--resume"], "--resume needs --checkpoint-dir"),
    (["--steps", "4", "--resume", "--checkpoint-dir", "{empty}"], "--resume: no complete checkpoint in"),
    (["--steps", "4", "--resume", "--checkpoint-dir", "{full}", "--layers", "4"],
     "the checkpoint is of a model with --layers 8, this run's has --layers 4"),
    (["--steps", "2", "--resume", "--checkpoint-dir", "{full}"], "--steps must be above the checkpoint's step 2"),
    (["--steps", "4", "--kill-rank", "0"], "--kill-rank and --kill-at-step go together"),
    (["--steps", "4", "--kill-rank", "2", "--kill-at-step", "2"], "--kill-rank must be an integer from 0 to 0"),
    (["--steps", "4", "--kill-rank", "0", "--kill-at-step", "5"], "--kill-at-step must be an integer from 1 to 4"),
    (["--steps", "4", "--checkpoint-dir", "{full}", "--checkpoint-every", "0"], "--checkpoint-every must be"),
]


@pytest.mark.parametrize("argv, text", BAD)
def test_a_bad_checkpoint_flag_is_one_line_and_starts_nothing(argv, text, tmp_path, capsys, monkeypatch):
    import distlib.engines.launch as launch

    full, empty = tmp_path / "full", tmp_path / "empty"
    empty.mkdir()
    _threads(Layout(), 2, checkpoint_dir=full)
    monkeypatch.setattr(launch, "run_mpi", lambda *a, **k: pytest.fail("a process was started"))
    status = main([a.format(full=full, empty=empty) for a in argv])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and text in err, err


def test_killing_a_thread_rank_is_refused():
    with pytest.raises(ValueError, match="real ranks"):
        _threads(Layout(dp=2), 2, kill_at=(1, 1))


# ---------------------------------------------------------------------------
# Real ranks: killed during step 4 of 6, then resumed at another layout
# ---------------------------------------------------------------------------


def _killed_then_resumed(tmp_path, killed: dict, resumed: dict, uninterrupted):
    from distlib.engines import RunError, stray_processes
    from distlib.train.launch import train

    from distlib.minicluster import leftovers
    from test_faults_cli import SHM, unheld_segments

    losses, checksum = uninterrupted
    shm_before = {p.name for p in SHM.iterdir() if p.name.startswith("mpich")} if SHM.is_dir() else set()
    started = time.monotonic()
    with pytest.raises(RunError) as failure:
        train(**killed, steps=STEPS, seed=SEED, timeout=120, checkpoint_dir=tmp_path, kill_rank=1,
              kill_at_step=KILLED)  # fmt: skip
    assert time.monotonic() - started < 90
    assert failure.value.rank == 1 and "rank 1" in str(failure.value) and "SIGKILL" in str(failure.value)
    # nothing left behind: processes, the mini cluster's namespaces, MPICH's shared memory
    assert stray_processes(failure.value.result.run_id) == []
    assert leftovers(owner=os.getpid()) == [] and unheld_segments(shm_before) == []
    assert newest_checkpoint(tmp_path) == Path(tmp_path) / step_name(KILLED - 1)
    after = train(**resumed, steps=STEPS, seed=SEED, timeout=120, checkpoint_dir=tmp_path, resume=True)
    assert after.first_step == KILLED and after.to_json()["first_step"] == KILLED
    assert max(_rel(a, b) for a, b in zip(after.losses, losses[KILLED - 1 :])) < 1e-9
    assert _rel(after.param_checksum, checksum) < 1e-9


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_killed_on_mpi_and_resumed_under_zero3_on_gloo(tmp_path, uninterrupted):
    _killed_then_resumed(tmp_path, dict(dp=2, zero=1), dict(dp=2, zero=3, engine="gloo"), uninterrupted)


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
@needs_cluster
def test_killed_across_two_nodes_and_resumed_with_tensor_parallelism(tmp_path, uninterrupted):
    _killed_then_resumed(tmp_path, dict(dp=2, tp=2, zero=2, nodes=2), dict(tp=2, pp=2, microbatches=2), uninterrupted)


def test_an_asynchronous_save_writes_what_a_blocking_one_writes(tmp_path):
    """The snapshot is the state after the step: read back, the two checkpoints are the same numbers."""
    lay = Layout(dp=2, zero=1)
    blocking = _threads(lay, 3, checkpoint_dir=tmp_path / "blocking")
    hidden = _threads(lay, 3, checkpoint_dir=tmp_path / "async", checkpoint_async=True)
    assert hidden[0].losses == blocking[0].losses and len(hidden[0].save_seconds) == 3
    for step in (1, 2, 3):
        a, b = (read_checkpoint(tmp_path / mode / step_name(step), Config()) for mode in ("blocking", "async"))
        for name in ("weights", "m", "v"):
            assert all(np.array_equal(x, y) for x, y in zip(getattr(a, name), getattr(b, name))), (step, name)
    assert not [p for p in (tmp_path / "async").iterdir() if not p.name.startswith("step-")]  # no partial left


def _private_network_reason():
    from distlib.engines._isolate import network_prefix

    return None if network_prefix() else "no private network namespace here for torchrun's store"


@pytest.mark.engines
@pytest.mark.slow
@pytest.mark.skipif(_private_network_reason() is not None, reason=str(_private_network_reason()))
def test_torchrun_restarts_the_killed_run_and_it_resumes_from_its_checkpoint(tmp_path, uninterrupted):
    """--max-restarts 1 on gloo: torchrun starts both ranks again after rank 1 kills itself during step 4; they
    resume from step 3's checkpoint and the run ends as if never stopped."""
    from distlib.train.launch import train

    losses, checksum = uninterrupted
    run = train(dp=2, zero=3, steps=STEPS, seed=SEED, engine="gloo", timeout=120, checkpoint_dir=tmp_path,
                kill_rank=1, kill_at_step=KILLED, max_restarts=1)  # fmt: skip
    assert run.first_step == KILLED
    assert max(_rel(a, b) for a, b in zip(run.losses, losses[KILLED - 1 :])) < 1e-9
    assert _rel(run.param_checksum, checksum) < 1e-9


@pytest.mark.parametrize("argv, text", [
    (["--dp", "2", "--steps", "4", "--max-restarts", "1"], "--max-restarts needs --engine gloo"),
    (["--dp", "2", "--steps", "4", "--engine", "gloo", "--max-restarts", "1"], "--max-restarts needs --checkpoint-dir"),
    (["--dp", "2", "--steps", "4", "--max-restarts", "11"], "--max-restarts must be an integer from 0 to 10"),
])  # fmt: skip
def test_a_bad_restart_flag_is_one_line(argv, text, capsys):
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and text in err, err


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_a_save_torn_by_a_kill_is_never_loaded_and_the_one_before_is(tmp_path, uninterrupted):
    """Rank 0, which commits, dies after writing its shard of step 3's checkpoint: step 3's folder stays partial,
    the resumed run starts after step 2, and ends as if never stopped."""
    from distlib.engines import RunError
    from distlib.train.launch import train

    losses, checksum = uninterrupted
    with pytest.raises(RunError) as failure:
        train(dp=2, zero=1, steps=STEPS, seed=SEED, timeout=120, checkpoint_dir=tmp_path, kill_rank=0,
              kill_at_step=3, kill_during="save")  # fmt: skip
    assert failure.value.rank == 0
    assert [step for step, _ in list_checkpoints(tmp_path)] == [1, 2]
    torn = [p for p in tmp_path.iterdir() if p.name.startswith(f".partial-{step_name(3)}")]
    assert torn and not (torn[0] / "meta.json").exists() and list(torn[0].glob("rank-*.bin"))
    after = train(tp=2, steps=STEPS, seed=SEED, timeout=120, checkpoint_dir=tmp_path, resume=True)
    assert after.first_step == 3
    assert max(_rel(a, b) for a, b in zip(after.losses, losses[2:])) < 1e-9
    assert _rel(after.param_checksum, checksum) < 1e-9
