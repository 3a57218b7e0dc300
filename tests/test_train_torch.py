"""The trainer on torch.distributed (gloo), its torch twin, and the book's layouts beside FSDP2 and DTensor.

Every torch launch imports torch in each rank (seconds on 2 cores), so the
launches are few and shared by module fixtures: four layouts through
``train(engine="gloo")`` (one of them through the command line, one with
``sp``), one launch per peer check, whose first half is the book's ZeRO-3 on
2 gloo ranks (or its tensor parallelism on 2, with or without sequence
parallelism) run by the very ``train_rank`` the gloo engine runs, and the
same six layouts on MPI for their bytes. Each is
bounded by a timeout and leaves no process behind.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from distlib.engines import stray_processes  # noqa: E402
from distlib.engines.comm import run_threads  # noqa: E402
from distlib.train.model import Config  # noqa: E402
from distlib.train.results import TrainResult  # noqa: E402
from distlib.layout import Layout  # noqa: E402
from distlib.train.rank import train_rank  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
STEPS = 3
SEED = 7
L = Config().layers

#: (dp, tp, zero[, "sp"]): DDP on 2, ZeRO-3 on 2 and on 3 (uneven chunks), tensor parallelism on 2, both on 4,
#: and sequence parallelism (--sp) on 2.
LAYOUTS = [(2, 1, 0), (2, 1, 3), (3, 1, 3), (1, 2, 0), (2, 2, 0), (1, 2, 0, "sp")]
CLI_LAYOUT = (2, 2, 0)  # on gloo through python -m distlib.train --json
IN_PEERS = {(2, 1, 3): "fsdp", (1, 2, 0): "tp"}  # on gloo as the first half of a peer check's launch


def _have_mpi() -> bool:
    from distlib.engines import find_mpiexec

    try:
        return importlib.util.find_spec("mpi4py") is not None and bool(find_mpiexec())
    except FileNotFoundError:
        return False


def _rel(a, b) -> float:
    return abs(a - b) / abs(b)


@pytest.fixture(scope="module")
def reference():
    """One process, in this process (NumPy): what every run must reproduce."""
    report = run_threads(lambda c: train_rank(c, Layout(), steps=STEPS, seed=SEED), 1, timeout=60)[0]
    return report.losses, report.checksum_part


def _cli(dp: int, tp: int, zero: int) -> TrainResult:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    argv = ["--dp", dp, "--tp", tp, "--zero", zero, "--steps", STEPS, "--seed", SEED, "--engine", "gloo", "--json"]
    cli = subprocess.run([sys.executable, "-m", "distlib.train", *map(str, argv)], capture_output=True, text=True,
                         timeout=120, env=env, cwd=ROOT)  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert "torch.distributed (gloo) ranks" in cli.stderr and f"step {STEPS}/{STEPS}" in cli.stderr
    (line,) = cli.stdout.splitlines()  # one JSON object, nothing else on stdout
    return TrainResult(layout=Layout(dp=dp, tp=tp, zero=zero), seed=SEED, **json.loads(line))


@pytest.fixture(scope="module")
def runs():
    """``{(engine, dp, tp, zero[, "sp"]): TrainResult}``: every layout on gloo, and on MPI where MPI is installed."""
    from distlib.train.launch import train

    out = {}
    for layout in LAYOUTS:
        engines = ["gloo", "mpi"] if _have_mpi() else ["gloo"]
        for engine in engines:
            if engine == "gloo" and layout in IN_PEERS:
                continue
            if (engine, *layout) == ("gloo", *CLI_LAYOUT):
                out[engine, *layout] = _cli(*layout)
                continue
            dp, tp, zero = layout[:3]
            result = train(dp=dp, tp=tp, zero=zero, steps=STEPS, seed=SEED, engine=engine, timeout=120,
                           sequence_parallel="sp" in layout)  # fmt: skip
            assert stray_processes(result.run_id) == []
            out[engine, *layout] = result
    return out


@pytest.mark.engines
@pytest.mark.slow
def test_every_layout_on_gloo_reproduces_one_process_and_sends_what_mpi_sends(runs, peers, reference):
    losses, checksum = reference
    for layout, check in IN_PEERS.items():  # the book's half of a peer check: losses and bytes, no checksum
        book, mpi = peers[check], runs.get(("mpi", *layout))
        assert max(_rel(a, b) for a, b in zip(book.book_losses, losses)) < 1e-9, layout
        assert mpi is None or (book.book_comm_bytes == mpi.comm_bytes and book.book_losses == mpi.losses), layout
        assert len(book.book_comm_bytes) == 2 and min(book.book_comm_bytes) > 0
    for layout in (layout for layout in LAYOUTS if layout not in IN_PEERS):
        gloo = runs["gloo", *layout]
        assert len(gloo.losses) == STEPS and len(gloo.comm_bytes) == layout[0] * layout[1]
        assert max(_rel(a, b) for a, b in zip(gloo.losses, losses)) < 1e-9, layout
        assert _rel(gloo.param_checksum, checksum) < 1e-9, layout
        assert min(gloo.comm_bytes) > 0
        if ("mpi", *layout) in runs:  # the same program and the same collectives: the same bytes, to the byte
            mpi = runs["mpi", *layout]
            assert gloo.comm_bytes == mpi.comm_bytes and gloo.state_bytes == mpi.state_bytes, layout
            assert gloo.losses == mpi.losses, layout  # the same arithmetic in the same order, bit for bit


@pytest.mark.slow
def test_the_torch_twin_reproduces_the_numpy_model(reference):
    from distlib.train.torch_model import train_twin

    losses, units = train_twin(steps=STEPS, seed=SEED)
    want, checksum = reference
    assert max(_rel(a, b) for a, b in zip(losses, want)) < 1e-9
    assert _rel(sum(float(u.sum()) for u in units), checksum) < 1e-9
    other, _ = train_twin(steps=1, seed=SEED + 1)  # another seed is another model: the check can fail
    assert _rel(other[0], want[0]) > 1e-6


@pytest.fixture(scope="module")
def peers():
    from distlib.train.peers import fsdp_beside_zero3, tp_beside_megatron

    out = {"fsdp": fsdp_beside_zero3(ranks=2, steps=STEPS, seed=SEED, timeout=150),
           "tp": tp_beside_megatron(ranks=2, steps=STEPS, seed=SEED, timeout=150),
           "sp": tp_beside_megatron(ranks=2, steps=STEPS, seed=SEED, timeout=150, sequence_parallel=True)}  # fmt: skip
    for comparison in out.values():
        assert stray_processes(comparison.run_id) == []
    return out


def _timed_per_step(c) -> None:
    """Both runs' step times: one positive value per step (how long is the benchmark's business, not a test's)."""
    for seconds in (c.book_step_seconds, c.peer_step_seconds):
        assert len(seconds) == STEPS and min(seconds) > 0, seconds


@pytest.mark.engines
@pytest.mark.slow
def test_fsdp2_trains_as_the_books_zero3_with_fewer_gathers(peers, reference):
    c = peers["fsdp"]
    assert max(_rel(a, b) for a, b in zip(c.book_losses, reference[0])) < 1e-9
    assert c.max_loss_difference < 1e-9 and len(c.peer_losses) == STEPS
    _timed_per_step(c)
    for book, peer, forward in zip(c.book_counts, c.peer_counts, c.peer_forward_counts):
        # The book's ZeRO-3 gathers each of its L + 2 units (embeddings, L blocks, head) before its forward and
        # again before its backward, and reduce-scatters each unit's gradient once; one all-reduce is the loss.
        assert book == {"allgather": 2 * (L + 2), "reduce_scatter": L + 2, "allreduce": 1}
        # FSDP2 with fully_shard per block and then the root has L + 1 groups (the root holds the embeddings,
        # the final norm and the output projection): each is gathered for the forward, each block again for
        # the backward (reshard_after_forward), the root not (it stays gathered); one reduce-scatter a group.
        assert peer == {"all_gather_into_tensor": 2 * L + 1, "reduce_scatter_tensor": L + 1}
        assert forward == {"all_gather_into_tensor": L + 1}


@pytest.mark.engines
@pytest.mark.slow
def test_dtensor_tensor_parallelism_trains_as_the_books_with_more_all_reduces(peers, reference):
    c = peers["tp"]
    assert max(_rel(a, b) for a, b in zip(c.book_losses, reference[0])) < 1e-9
    assert c.max_loss_difference < 1e-9 and len(c.peer_losses) == STEPS
    _timed_per_step(c)
    for book, peer, forward in zip(c.book_counts, c.peer_counts, c.peer_forward_counts):
        # Both sum the activations once after each row-parallel layer (o, mlp_out): 2 per block forward.
        assert forward == {"all_reduce": 2 * L}
        # Backward, the book sums the input gradient of q, k and v once (they share their input) and of
        # mlp_in once: 2 per block. DTensor sums each column-parallel layer's own: 4 per block.
        assert book == {"allreduce": 4 * L}
        assert peer == {"all_reduce": 2 * L + 4 * L}


@pytest.mark.engines
@pytest.mark.slow
def test_dtensor_sequence_parallelism_trains_as_the_books_with_the_same_gathers_and_scatters(peers, runs, reference):
    c = peers["sp"]
    assert c.book == "Megatron TP + SP"
    assert max(_rel(a, b) for a, b in zip(c.book_losses, reference[0])) < 1e-9
    assert c.max_loss_difference < 1e-12 and len(c.peer_losses) == STEPS  # 2.2e-16 measured (torch 2.13)
    _timed_per_step(c)
    mpi = runs.get(("mpi", 1, 2, 0, "sp"))
    assert mpi is None or (c.book_comm_bytes == mpi.comm_bytes and c.book_losses == mpi.losses)
    for book, peer, forward in zip(c.book_counts, c.peer_counts, c.peer_forward_counts):
        # Forward, both: an all-gather before each column-parallel region (q, k, v share one; mlp_in) and a
        # reduce-scatter after each row-parallel layer (o, mlp_out), 2 + 2 a block, and one all-gather before
        # the final norm; no all-reduce.
        assert forward == {"all_gather_into_tensor": 2 * L + 1, "reduce_scatter_tensor": 2 * L}
        # Backward, both: the same, swapped, and the all-gather of the embeddings' output gradient. The book
        # then sums the four norm tensors' gradients (each rank saw its positions) in one all-reduce a block.
        assert book == {"allgather": 4 * L + 2, "reduce_scatter": 4 * L, "allreduce": L}
        # DTensor leaves those gradients Partial after the backward, and Adam's step reduces each again at
        # every use of it (three: the first moment, the square of the second): 4 tensors x 3 all-reduces.
        assert peer == {"all_gather_into_tensor": 4 * L + 2, "reduce_scatter_tensor": 4 * L, "all_reduce": 12 * L}


@pytest.mark.engines
@pytest.mark.slow
def test_a_peer_check_without_counting_still_trains_alike_and_times_every_step():
    from distlib.train.peers import tp_beside_megatron

    c = tp_beside_megatron(ranks=2, steps=2, seed=SEED, timeout=150, count=False)  # as bench_train.py runs it
    assert stray_processes(c.run_id) == []
    assert c.peer_counts == [] and c.peer_forward_counts == [] and len(c.book_counts) == 2
    assert c.max_loss_difference < 1e-9 and len(c.peer_losses) == 2
    for seconds in (c.book_step_seconds, c.peer_step_seconds):
        assert len(seconds) == 2 and min(seconds) > 0, seconds


def test_the_peer_checks_refuse_bad_arguments_before_starting():
    from distlib.train.peers import fsdp_beside_zero3, tp_beside_megatron

    with pytest.raises(ValueError, match="ranks must divide the global batch of 12 sequences: .* got 5"):
        fsdp_beside_zero3(ranks=5)
    with pytest.raises(ValueError, match="ranks must be an integer"):
        tp_beside_megatron(ranks=1)
    with pytest.raises(ValueError, match="steps must be an integer"):
        fsdp_beside_zero3(steps=0)
    with pytest.raises(ValueError, match="timeout must be"):
        tp_beside_megatron(timeout=0)
    with pytest.raises(ValueError, match="sequence_parallel must be True or False"):
        tp_beside_megatron(sequence_parallel="yes")
    with pytest.raises(ValueError, match="count must be True or False"):
        fsdp_beside_zero3(count=1)


def test_gloo_without_torch_is_one_line_naming_the_flag_and_starts_nothing(monkeypatch, capsys):
    import distlib.engines.launch as engines_launch
    import distlib.train.launch as train_launch
    from distlib.train.__main__ import main

    def refuse(*args, **kwargs):
        raise AssertionError("a process was started")

    monkeypatch.setattr(train_launch, "_torch_installed", lambda: False)
    monkeypatch.setattr(engines_launch, "run_torch", refuse)
    assert main(["--engine", "gloo", "--dp", "2"]) == 2
    err = capsys.readouterr().err
    assert err == "python -m distlib.train: --engine gloo needs PyTorch (torch.distributed): pip install torch\n"
