"""The book's tiny trainer (distlib.train): its gradients, and every layout on real MPI ranks against one process.

The layouts run once each (module fixture ``runs``), 3 steps, and every
test below reads them: equal losses and parameters, state bytes by ZeRO
stage, bytes sent against the alpha-beta model. Every launch is bounded by
a timeout and leaves no process behind.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import psutil
import pytest

import distlib as dl
from distlib.engines._processes import max_ranks  # the machine's bound on ranks, as the bench reads it
from distlib.engines.comm import run_threads
from distlib.train.__main__ import main
from distlib.train.data import GLOBAL_BATCH, global_batch
from distlib.train.model import Config, init_units, loss_and_grads, unit_specs
from distlib.layout import Layout
from distlib.train.rank import train_rank
from distlib.walls import zero_stage
from conftest import NO_MPI, have_mpi, needs_mpi, needs_cluster

ROOT = Path(__file__).resolve().parents[1]
STEPS = 3
SEED = 7
CONFIG = Config()
N = CONFIG.params
UNIT_MAX = max(spec.size for spec in unit_specs(CONFIG))






def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


# ---------------------------------------------------------------------------
# The model on its own
# ---------------------------------------------------------------------------


def test_every_kind_of_gradient_matches_central_differences():
    config = Config(layers=2)  # every kind of tensor, two blocks deep: the same code as eight
    units = init_units(config, 1)
    tokens, targets = global_batch(1, 0, batch=3, seq=config.seq, vocab=config.vocab)
    _, grads = loss_and_grads(config, units, tokens, targets)
    h, checked, worst = 1e-5, set(), 0.0
    for k, spec in enumerate(unit_specs(config)):
        for name, (a, b) in spec.offsets().items():
            for i in (a, (a + b) // 2 + 1, b - 1):
                if abs(grads[k][i]) < 1e-8:  # an embedding row no token of the batch uses: exactly 0
                    continue
                plus = [u.copy() for u in units]
                plus[k][i] += h
                minus = [u.copy() for u in units]
                minus[k][i] -= h
                fd = (loss_and_grads(config, plus, tokens, targets)[0]
                      - loss_and_grads(config, minus, tokens, targets)[0]) / (2 * h)  # fmt: skip
                worst = max(worst, abs(fd - grads[k][i]) / max(abs(fd), abs(grads[k][i])))
                checked.add((spec.name.rstrip("0123456789"), name))
    kinds = {(s.name.rstrip("0123456789"), n) for s in unit_specs(config) for n, _, _ in s.tensors}
    assert checked == kinds  # at least one element of every kind of parameter
    assert worst < 1e-6


def test_a_wrong_gradient_would_be_caught():
    # The check above can fail: a gradient off by 1e-4 relative is far outside it.
    config = Config(layers=1)
    units = init_units(config, 0)
    tokens, targets = global_batch(0, 0, batch=2)
    _, grads = loss_and_grads(config, units, tokens, targets)
    i = unit_specs(config)[1].offsets()["w1"][0]
    plus, minus = [u.copy() for u in units], [u.copy() for u in units]
    plus[1][i] += 1e-5
    minus[1][i] -= 1e-5
    fd = (loss_and_grads(config, plus, tokens, targets)[0] - loss_and_grads(config, minus, tokens, targets)[0]) / 2e-5
    assert abs(fd - grads[1][i] * (1 + 1e-4)) / abs(fd) > 1e-6 > abs(fd - grads[1][i]) / abs(fd)


def test_one_process_learns_and_repeats_itself():
    def run():
        return run_threads(lambda c: train_rank(c, Layout(), steps=15, seed=SEED), 1, timeout=60)[0]

    first, again = run(), run()
    assert first.losses == again.losses and first.checksum_part == again.checksum_part  # deterministic
    assert first.losses[-1] < first.losses[0] - 0.5  # the successor rule is being learnt
    assert first.comm_bytes == 0 and first.state_bytes == 4 * 8 * N  # weights, gradient, Adam's m and v


def test_a_rank_refuses_a_world_that_is_not_the_layouts():
    with pytest.raises(ValueError, match=r"the layout's 4 ranks \(dp 2 x tp 2, zero 0\) must be the ranks of comm \(2\)"):
        run_threads(lambda c: train_rank(c, Layout(dp=2, tp=2), steps=1, seed=0), 2, timeout=10)
    with pytest.raises(ValueError, match=r"--tp must divide heads"):
        run_threads(lambda c: train_rank(c, Layout(tp=3), steps=1, seed=0), 3, timeout=10)
    with pytest.raises(TypeError, match=r"layout must be a distlib.layout.Layout"):
        run_threads(lambda c: train_rank(c, dict(dp=1), steps=1, seed=0), 1, timeout=10)


def test_the_global_batch_splits_or_is_refused():
    from distlib.train.data import local_batch

    tokens, targets = global_batch(0, 0)
    parts = [local_batch(tokens, targets, r, 4)[0] for r in range(4)]
    assert np.array_equal(np.concatenate(parts), tokens)
    with pytest.raises(ValueError, match=f"dp must divide the global batch of {GLOBAL_BATCH} sequences, got 5"):
        local_batch(tokens, targets, 0, 5)


# ---------------------------------------------------------------------------
# Every layout on MPI, once
# ---------------------------------------------------------------------------

#: (dp, tp, zero): DDP, ZeRO-1/2/3 at 2 and 4 ranks, tensor parallelism at 2 and 4, both together,
#: and 3 ranks, whose chunks of the flat vector (105280 elements) are uneven.
LAYOUTS = [(2, 1, 0), (2, 1, 1), (2, 1, 2), (2, 1, 3), (4, 1, 0), (4, 1, 1), (4, 1, 2), (4, 1, 3),
           (1, 2, 0), (1, 4, 0), (2, 2, 3), (3, 1, 0), (3, 1, 1), (3, 1, 2), (3, 1, 3),
           (1, 2, 0, "sp"), (1, 4, 0, "sp"), (2, 2, 1, "sp")]
#: ... and "sp": sequence parallelism (--sp) over the TP ranks, at 2 and 4, and beside DP with ZeRO-1.
CLI_LAYOUT = (2, 2, 0)  # run through the command line, --json


@pytest.fixture(scope="module")
def reference():
    """One process, in this process: what every layout must reproduce."""
    report = run_threads(lambda c: train_rank(c, Layout(), steps=STEPS, seed=SEED), 1, timeout=60)[0]
    return report.losses, report.checksum_part


@pytest.fixture(scope="module")
def runs():
    """``{(dp, tp, zero[, "sp"]): TrainResult}`` of every layout, each its own MPI launch (and one through the CLI)."""
    from distlib.engines import stray_processes
    from distlib.train.launch import train
    from distlib.train.results import TrainResult

    if not have_mpi():
        pytest.skip(NO_MPI)
    out = {}
    for layout in LAYOUTS:
        dp, tp, zero = layout[:3]
        result = train(dp=dp, tp=tp, zero=zero, steps=STEPS, seed=SEED, timeout=60, sequence_parallel="sp" in layout)
        assert stray_processes(result.run_id) == []
        out[layout] = result
    dp, tp, zero = CLI_LAYOUT
    cli = subprocess.run([sys.executable, "-m", "distlib.train", "--dp", str(dp), "--tp", str(tp), "--zero", str(zero),
                          "--steps", str(STEPS), "--seed", str(SEED), "--engine", "mpi", "--json"],
                         capture_output=True, text=True, timeout=90, env=_env(), cwd=ROOT)  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    lines = cli.stdout.splitlines()
    assert len(lines) == 1  # one JSON object, nothing else on stdout
    body = json.loads(lines[0])
    # the contract's keys, then what Part V adds to every run: each rank's peak activations kept for backward
    assert list(body) == ["losses", "param_checksum", "state_bytes", "comm_bytes", "step_seconds", "activation_bytes"]
    assert len(body["activation_bytes"]) == dp * tp and all(b > 0 for b in body["activation_bytes"])
    assert f"step {STEPS}/{STEPS}" in cli.stderr  # progress on stderr
    out[CLI_LAYOUT] = TrainResult(layout=Layout(dp=dp, tp=tp, zero=zero), seed=SEED, **body)
    return out


def _rel(a, b) -> float:
    return abs(a - b) / abs(b)


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_every_layout_reproduces_one_process(runs, reference):
    losses, checksum = reference
    assert losses[-1] < losses[0]
    for layout, result in runs.items():
        dp, tp = layout[:2]
        assert len(result.losses) == len(result.step_seconds) == STEPS
        assert len(result.state_bytes) == len(result.comm_bytes) == dp * tp
        assert max(_rel(a, b) for a, b in zip(result.losses, losses)) < 1e-9, layout
        assert _rel(result.param_checksum, checksum) < 1e-9, layout
        assert all(s > 0 for s in result.step_seconds)


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_zero_shards_what_walls_zero_stage_says(runs):
    # Bytes by part at each rank's peak: a part ZeroStage shards is 1/dp of the whole (plus at most one unit
    # or one chunk in flight: ZeRO-3's gathered unit, ZeRO-2's unit gradient before its reduce-scatter, ZeRO-1's
    # reduced chunk); a part it does not shard is whole.
    whole = {"weights": 8 * N, "grads": 8 * N, "optimizer": 16 * N}  # float64 weights and gradient, Adam m and v
    for dp in (2, 3, 4):
        flight = 8 * max(UNIT_MAX, math.ceil(N / dp))
        for zero in range(4):
            sharded = zero_stage(zero).sharded
            for report in runs[dp, 1, zero].ranks:
                for part, full in whole.items():
                    base = full / dp if part in sharded else full
                    assert base - 8 * 16 <= report.state_parts[part] <= base + flight, (dp, zero, part)
        peaks = [max(runs[dp, 1, z].state_bytes) for z in range(4)]
        assert peaks[0] == 4 * 8 * N  # DDP: everything whole
        assert peaks[3] < peaks[2] < peaks[1] < peaks[0]
    four = [max(runs[4, 1, z].state_bytes) for z in range(4)]
    assert four[3] < 0.7 * four[2] and four[2] < 0.5 * four[0]  # well below


def _predicted_bytes(dp: int, zero: int) -> float:
    """Bytes per rank per step of a data-parallel layout: ZeroStage's passes, each priced by distlib.collectives.

    DDP's two gradient passes are one all-reduce; otherwise the gradient passes are reduce-scatters and the
    weight passes all-gathers (walls.ZeroStage), each of the whole float64 vector.
    """
    z = zero_stage(zero)
    factor = {c: dl.cost_coefficients(c, dp)[1] for c in ("allreduce", "reduce_scatter", "allgather")}
    if zero == 0:
        return factor["allreduce"] * 8 * N
    return (z.gradient_passes * factor["reduce_scatter"] + z.weight_passes * factor["allgather"]) * 8 * N


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_bytes_sent_follow_the_alpha_beta_counts(runs):
    for dp in (2, 3, 4):
        sent = {z: np.mean(runs[dp, 1, z].comm_bytes) / STEPS for z in range(4)}
        for zero in range(4):
            assert _rel(sent[zero], _predicted_bytes(dp, zero)) < 0.01, (dp, zero)
            # ZeRO-1 and 2 send what DDP sends; ZeRO-3 half as much again (walls.ZeroStage.traffic_factor)
            assert _rel(sent[zero] / sent[0], zero_stage(zero).traffic_factor) < 0.03, (dp, zero)
    # Tensor parallelism: per block and step, two all-reduces of the activations forward and two backward.
    for tp in (2, 4):
        activations = GLOBAL_BATCH * CONFIG.seq * CONFIG.hidden * 8
        want = 4 * CONFIG.layers * dl.cost_coefficients("allreduce", tp)[1] * activations
        assert _rel(np.mean(runs[1, tp, 0].comm_bytes) / STEPS, want) < 0.01, tp


# ---------------------------------------------------------------------------
# Sequence parallelism: its collectives, counted, and its bytes
# ---------------------------------------------------------------------------


def _block_counts(tp: int, sp: bool) -> tuple:
    """The book's collectives of one block's forward, then of its backward, on rank 0 of ``tp`` thread ranks."""
    from distlib.engines.algorithms import allreduce
    from distlib.engines.comm import CountingComm
    from distlib.train.model import backward_unit, forward_unit, shard_unit
    from distlib.train.sequence_parallel import SequenceParallel

    config = Config(layers=1)
    full, units = unit_specs(config), init_units(config, 0)

    def rank(comm):
        counted = CountingComm(comm)
        spec, flat = unit_specs(config, tp)[1], shard_unit(full[1], units[1], comm.rank, tp)
        kw = dict(sp=SequenceParallel(counted)) if sp else dict(reduce=lambda buf: allreduce(counted, buf))
        x = np.random.default_rng(0).standard_normal((2, config.seq, config.hidden))
        x = kw["sp"].split(x) if sp else x
        y, cache = forward_unit(spec, flat, x, config=config, **kw)
        forward = dict(counted.collectives)
        backward_unit(spec, flat, np.ones_like(y), cache, np.empty_like(flat), config=config, **kw)
        return forward, {k: v - forward.get(k, 0) for k, v in counted.collectives.items() if v - forward.get(k, 0)}

    return run_threads(rank, tp, timeout=30)[0]


@pytest.mark.parametrize("tp", [2, 4])
def test_sequence_parallelism_gathers_and_scatters_where_tp_all_reduces(tp):
    # Plain TP, per block: forward an all-reduce after each row-parallel matmul (wo, w2); backward one of the
    # input gradient of each column-parallel region (q, k, v together; w1).
    assert _block_counts(tp, sp=False) == ({"allreduce": 2}, {"allreduce": 2})
    # SP: forward an all-gather before each column-parallel region and a reduce-scatter after each row-parallel
    # one; backward the same two and two swapped (the gradient of a gather is a reduce-scatter, and back), and
    # one all-reduce of the four norm tensors' gradients (each rank saw only its positions).
    assert _block_counts(tp, sp=True) == ({"allgather": 2, "reduce_scatter": 2},
                                          {"allgather": 2, "reduce_scatter": 2, "allreduce": 1})  # fmt: skip


def test_a_step_of_sequence_parallelism_counts_its_collectives_and_matches_one_process(reference):
    from distlib.engines.comm import CountingComm

    def rank(comm, sp):
        counted, seen = CountingComm(comm), []
        report = train_rank(counted, Layout(tp=2, sequence_parallel=sp), steps=2, seed=SEED,
                            say=lambda _line: seen.append(dict(counted.collectives)))  # fmt: skip
        return report.losses, seen

    L = CONFIG.layers
    (losses, seen), _ = run_threads(lambda c: rank(c, True), 2, timeout=60)
    # Per step: 4 all-gathers and 4 reduce-scatters a block, an all-gather before the head and one of the
    # embeddings' output gradient; an all-reduce of the norms' gradients a block (the loss: dp 1, none).
    assert seen[0] == {"allgather": 4 * L + 2, "reduce_scatter": 4 * L, "allreduce": L}
    assert seen[1] == {k: 2 * v for k, v in seen[0].items()}
    (_, plain), _ = run_threads(lambda c: rank(c, False), 2, timeout=60)
    assert plain[0] == {"allreduce": 4 * L}
    assert max(_rel(a, b) for a, b in zip(losses, reference[0][:2])) < 1e-12


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_sequence_parallelism_sends_what_tp_sends_by_the_ring_identity(runs):
    # A ring all-reduce is a reduce-scatter and then an all-gather (cost coefficients 2(p-1)/p = 2 (p-1)/p),
    # so a block's activations cost SP what they cost TP. SP sends more by exactly: the all-gather before the
    # head and the one of the embeddings' output gradient (the whole activation each), and one all-reduce a
    # block of the norms' gradients (4 * hidden float64 values).
    L, h = CONFIG.layers, CONFIG.hidden
    for tp in (2, 4):
        ar, rs, ag = (dl.cost_coefficients(c, tp)[1] for c in ("allreduce", "reduce_scatter", "allgather"))
        assert math.isclose(ar, rs + ag)
        activations = GLOBAL_BATCH * CONFIG.seq * h * 8
        tp_sent = [b / STEPS for b in runs[1, tp, 0].comm_bytes]
        sp_sent = [b / STEPS for b in runs[1, tp, 0, "sp"].comm_bytes]
        assert tp_sent == [4 * L * ar * activations] * tp
        assert sp_sent == [4 * L * (rs + ag) * activations + 2 * ag * activations + L * ar * 4 * h * 8] * tp


# ---------------------------------------------------------------------------
# The command line: bad flags, a rank killed mid-run
# ---------------------------------------------------------------------------

BAD = [
    (["--zero", "4"], "--zero must be an integer from 0 to 3, got 4"),
    (["--dp", "0"], "--dp must be an integer from 1 to"),
    (["--tp", "3"], "--tp must divide heads (4), hidden (32) and ffn (128): one of 1, 2, 4; got 3"),
    (["--dp", "5"], "--dp must divide the global batch of 12 sequences: one of 1, 2, 3, 4, 6, 12; got 5"),
    (["--dp", str(max_ranks()), "--tp", "2"], f"--dp times --tp must be at most {max_ranks()} ranks on this machine"),
    (["--steps", "0"], "--steps must be an integer from 1 to 100000, got 0"),
    (["--engine", "gloo", "--pp", "3"], "--pp must divide the 8 layers"),  # gloo's stages: the same checks
    (["--engine", "nccl"], "--engine must be one of mpi, gloo; got 'nccl'"),
    (["--timeout", "0"], "--timeout must be more than 0"),
    (["--dp", "two"], "argument --dp: invalid int value: 'two'"),
    (["--tp", "2", "--ranks", "3"], "--ranks must equal --dp times --tp times --pp (2) when given, got 3"),
    (["--tp", "2", "--nodes", "3"], "--dp times --tp times --pp must be a positive multiple of --nodes (3), got 2"),
    (["--tp", "2", "--nodes", "2", "--link-gbit", "500"], "--link-gbit must be between 0.01 and 100"),
    (["--tp", "2", "--nodes", "0"], "--nodes must be"),
    (["--sp"], "--sp needs --tp above 1 (it cuts the sequence over the tensor-parallel ranks): one of 2, 4; got 1"),
    (["--sp", "--tp", "3"], "--tp must divide heads (4), hidden (32) and ffn (128): one of 1, 2, 4; got 3"),
]


def test_sp_needs_tp_to_divide_the_sequence():
    from distlib.train.launch import run_problem

    flags = dict(steps=1, seed=0, engine="mpi", timeout=60.0, sequence_parallel=True, max_ranks=8)
    assert run_problem(tp=4, config=Config(seq=6), **flags) == (
        "--sp needs --tp to divide the sequence of 6 tokens: one of 2; got 4")
    assert run_problem(tp=2, config=Config(seq=6), **flags) is None


@pytest.mark.parametrize("argv, text", BAD)
def test_a_bad_flag_is_one_line_and_starts_nothing(argv, text, capsys, monkeypatch):
    import distlib.engines.launch as launch

    def refuse(*args, **kwargs):
        raise AssertionError("a process was started")

    monkeypatch.setattr(launch, "run_mpi", refuse)
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse's own checks (types), through the one-line error
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("python -m distlib.train: ") and text in err


def test_a_bad_flag_from_the_shell_is_one_line_without_a_traceback():
    proc = subprocess.run([sys.executable, "-m", "distlib.train", "--tp", "3", "--json"], capture_output=True, text=True,
                          timeout=60, env=_env(), cwd=ROOT)  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == ["python -m distlib.train: --tp must divide heads (4), hidden (32) and ffn "
                                        "(128): one of 1, 2, 4; got 3"]  # fmt: skip


def _tagged(tag: str) -> list:
    found = []
    for proc in psutil.process_iter(["pid", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE or proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get("TRAIN_TEST_TAG") == tag:
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def _rank_process(tag: str, rank: int):
    """The rank's own process, as its heartbeat names it (``rank<r>.json`` in the run's progress folder).

    Not a process found by ``PMI_RANK``: under ``run_mpi`` each rank runs
    under a guard with the same command line and environment, and the rank
    may start helpers of its own; the heartbeat is written by the rank.
    """
    for proc in _tagged(tag):
        try:
            folder = proc.environ().get("DISTLIB_PROGRESS_DIR")
            beat = json.loads((Path(folder) / f"rank{rank}.json").read_text()) if folder else None
        except (psutil.Error, OSError, ValueError):
            continue  # gone, or its heartbeat not written yet (or being written)
        if beat and psutil.pid_exists(beat["pid"]):
            return psutil.Process(beat["pid"])
    return None


def kill_rank_mid_run(argv: list, rank: int = 1) -> None:
    """Start ``python -m distlib.train ARGV``, SIGKILL ``rank`` mid-run: the run must end soon, name it, leave nothing."""
    tag = uuid.uuid4().hex
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "distlib.train", *argv, "--timeout", "60", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**_env(), "TRAIN_TEST_TAG": tag}, cwd=ROOT)  # fmt: skip
    try:
        victim = None
        while victim is None and time.monotonic() - start < 30:
            time.sleep(0.2)
            victim = _rank_process(tag, rank)
        assert victim is not None, f"rank {rank} never started"
        time.sleep(1.5)  # well into training: a step takes milliseconds
        victim.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=45)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert time.monotonic() - start < 60  # ended by the failure, long before the 100000 steps or the timeout
    assert proc.returncode == 3 and out == ""
    first = err.splitlines()[1]  # after the "starting" line
    assert f"rank {rank}" in first and "killed by signal 9" in first, err
    assert "Traceback" not in err
    deadline = time.monotonic() + 10
    while _tagged(tag) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _tagged(tag) == []


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_a_rank_killed_mid_run_ends_the_run_named_and_leaves_nothing():
    kill_rank_mid_run(["--dp", "2", "--steps", "100000"])


# ---------------------------------------------------------------------------
# Across the mini cluster's nodes (--nodes, as root)
# ---------------------------------------------------------------------------

@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
@needs_cluster
def test_layouts_across_two_nodes_reproduce_one_process_and_their_bytes_cross_the_links(reference):
    """TP 2 split over two nodes (MPI and gloo), DP 2 x TP 2 with each TP pair inside a node, and a pipeline of
    two stages a node each: the same losses and parameters as one process, and the links carry the bytes."""
    from distlib.engines import stray_processes
    from distlib.minicluster import leftovers
    from distlib.train.launch import train

    losses, checksum = reference
    for flags in (dict(tp=2, nodes=2), dict(tp=2, nodes=2, engine="gloo"), dict(dp=2, tp=2, nodes=2),
                  dict(tp=2, nodes=1)):
        result = train(**flags, steps=STEPS, seed=SEED, timeout=60, link_gbit=2.0)
        assert stray_processes(result.run_id) == []
        assert max(_rel(a, b) for a, b in zip(result.losses, losses)) < 1e-9, flags
        assert _rel(result.param_checksum, checksum) < 1e-9, flags
        assert result.nodes == flags["nodes"] and result.link_gbit == 2.0
        crossed = sum(result.link_bytes.values())
        if flags["nodes"] == 1:  # both ranks share the node's memory: the link stays quiet
            assert crossed < 64 * 1024, result.link_bytes
        elif flags.get("dp", 1) == 1:  # every TP byte crosses, once out of one node and once into the other
            assert crossed >= 2 * sum(result.comm_bytes), (flags, result.link_bytes, result.comm_bytes)
        else:  # TP inside each node; only the DP all-reduce's bytes cross
            assert 0 < crossed < sum(result.comm_bytes), (result.link_bytes, result.comm_bytes)
    pipe = train(pp=2, microbatches=2, nodes=2, steps=STEPS, seed=SEED, timeout=60)
    one = train(pp=1, microbatches=2, steps=STEPS, seed=SEED, timeout=60)  # one process accumulating the same two
    assert max(_rel(a, b) for a, b in zip(pipe.losses, one.losses)) < 1e-12
    assert pipe.nodes == 2 and sum(pipe.link_bytes.values()) >= sum(pipe.comm_bytes)
    assert leftovers(owner=os.getpid()) == []  # this process's clusters (other tests may run theirs beside it)


@pytest.mark.engines
@needs_mpi
def test_nodes_without_root_is_one_line_and_leaves_nothing(monkeypatch, capsys):
    import distlib.minicluster.cluster as mc

    monkeypatch.setattr(mc.os, "geteuid", lambda: 1000)
    assert main(["--tp", "2", "--nodes", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--nodes: cannot make a mini cluster here: a mini cluster needs root" in err
