"""Pipeline parallelism in the book's trainer: real stages on MPI ranks against one process accumulating microbatches.

The reference is :func:`distlib.train.microbatches.accumulate_run`, not the
whole-batch run: a pipeline runs each microbatch through the same units and
adds the microbatches' gradients, so it can only match the run that does the
same; the whole-batch run sums over tokens in other groupings and differs in
the last bits (``test_the_reference_is_the_whole_batch_to_rounding`` bounds
by how much). Every layout runs once (module fixture ``runs``), 3 steps, and
the tests below read those runs; four of them run again on gloo (``--engine
gloo``, fixture ``gloo_runs``, one through the command line), whose bytes must
be MPI's to the byte; DP 2 x TP 2 x PP 2 runs across two nodes of the mini
cluster (as root) on both engines. Times are printed, never asserted.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import distlib as dl
from distlib.engines._processes import max_ranks
from distlib.engines.comm import run_threads
from distlib.train.__main__ import main
from distlib.train.data import GLOBAL_BATCH
from distlib.train.microbatches import accumulate_run
from distlib.train.model import Config
from distlib.layout import Layout
from distlib.train.pipeline_parallel import stage_ops
from distlib.train.rank import train_rank
from conftest import NO_MPI, have_mpi, needs_mpi, needs_cluster
from test_train import kill_rank_mid_run  # the trainer's kill-mid-run check

ROOT = Path(__file__).resolve().parents[1]
STEPS = 3
SEED = 7
CONFIG = Config()
TOL = 1e-12
NO_TORCH = "torch not installed (pip install torch): --engine gloo needs torch.distributed"
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason=NO_TORCH)




def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _rel(a, b) -> float:
    return abs(a - b) / abs(b)


# ---------------------------------------------------------------------------
# The reference, in this process
# ---------------------------------------------------------------------------


def test_the_reference_is_the_whole_batch_to_rounding():
    one = run_threads(lambda c: train_rank(c, Layout(), steps=STEPS, seed=SEED), 1, timeout=60)[0]
    whole = accumulate_run(microbatches=1, steps=STEPS, seed=SEED)
    assert whole[0] == one.losses  # one microbatch is the one-process run, bit for bit
    for m in (2, 4, 12):
        losses, checksum = accumulate_run(microbatches=m, steps=STEPS, seed=SEED)
        worst = max(_rel(a, b) for a, b in zip(losses, one.losses))
        print(f"accumulating {m} microbatches vs the whole batch: losses {worst:.1e}, "
              f"checksum {_rel(checksum, one.checksum_part):.1e} relative")  # fmt: skip
        assert worst < 1e-13 and _rel(checksum, one.checksum_part) < 1e-13


def test_stages_on_threads_match_the_reference_and_refuse_what_they_cannot_run():
    def run(comm):
        return train_rank(comm, Layout(pp=4, schedule="interleaved", chunks=2, microbatches=4), steps=2, seed=SEED)

    reports = run_threads(run, 4, timeout=60)
    losses, checksum = accumulate_run(microbatches=4, steps=2, seed=SEED)
    assert max(_rel(a, b) for a, b in zip(reports[0].losses, losses)) < TOL
    assert _rel(math.fsum(r.checksum_part for r in reports), checksum) < TOL
    with pytest.raises(ValueError, match=r"--zero 2 with pipeline stages: ZeRO-2 and 3 shard the gradient"):
        run_threads(lambda c: train_rank(c, Layout(pp=2, zero=2), steps=1, seed=0), 2, timeout=10)
    with pytest.raises(ValueError, match=r"the layout's 4 ranks \(.*\) must be the ranks of comm \(2\)"):
        run_threads(lambda c: train_rank(c, Layout(pp=4), steps=1, seed=0), 2, timeout=10)


# ---------------------------------------------------------------------------
# Every pipeline layout on MPI, once
# ---------------------------------------------------------------------------

#: (dp, tp, pp, schedule, chunks, microbatches per replica, zero)
LAYOUTS = [(1, 1, 2, "gpipe", 1, 4, 0), (1, 1, 2, "1f1b", 1, 4, 0), (1, 1, 2, "interleaved", 2, 4, 0),
           (1, 1, 4, "gpipe", 1, 4, 0), (1, 1, 4, "1f1b", 1, 4, 0), (1, 1, 4, "interleaved", 2, 4, 0),
           (2, 1, 2, "1f1b", 1, 2, 1), (1, 2, 2, "1f1b", 1, 4, 0)]  # fmt: skip
SP_LAYOUT = (1, 2, 2, "1f1b", 1, 4, 0, "sp")  # the TP 2 x PP 2 layout again, with sequence parallelism (--sp)
CLI_LAYOUT = (2, 1, 2, "interleaved", 2, 2, 0)  # DP2 x PP2 through the command line, --json


@pytest.fixture(scope="module")
def runs():
    """``{layout: PipelineResult}`` of every layout in :data:`LAYOUTS` and :data:`SP_LAYOUT`; the CLI's JSON body
    for :data:`CLI_LAYOUT`."""
    from distlib.engines import stray_processes
    from distlib.train.launch import train

    if not have_mpi():
        pytest.skip(NO_MPI)
    out = {}
    for layout in [*LAYOUTS, SP_LAYOUT]:
        dp, tp, pp, schedule, chunks, m, zero = layout[:7]
        result = train(dp=dp, tp=tp, pp=pp, zero=zero, steps=STEPS, seed=SEED, timeout=60, schedule=schedule,
                       chunks=chunks, microbatches=m, sequence_parallel="sp" in layout)  # fmt: skip
        assert stray_processes(result.run_id) == []
        out[layout] = result
    dp, tp, pp, schedule, chunks, m, zero = CLI_LAYOUT
    argv = ["--dp", dp, "--tp", tp, "--pp", pp, "--schedule", schedule, "--chunks", chunks, "--microbatches", m,
            "--zero", zero, "--steps", STEPS, "--seed", SEED, "--engine", "mpi", "--json"]  # fmt: skip
    cli = subprocess.run([sys.executable, "-m", "distlib.train", *map(str, argv)], capture_output=True, text=True,
                         timeout=90, env=_env(), cwd=ROOT)  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    lines = cli.stdout.splitlines()
    assert len(lines) == 1  # one JSON object, nothing else on stdout
    out[CLI_LAYOUT] = json.loads(lines[0])
    assert f"step {STEPS}/{STEPS}" in cli.stderr
    return out


def _losses_and_checksum(result):
    if isinstance(result, dict):
        return result["losses"], result["param_checksum"]
    return result.losses, result.param_checksum


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_every_pipeline_reproduces_one_process_accumulating_the_same_microbatches(runs):
    for layout, result in runs.items():
        dp, tp, pp, schedule, chunks, m, zero = layout[:7]
        ref_losses, ref_checksum = accumulate_run(microbatches=dp * m, steps=STEPS, seed=SEED)
        losses, checksum = _losses_and_checksum(result)
        worst = max(_rel(a, b) for a, b in zip(losses, ref_losses))
        print(f"dp {dp} x pp {pp} x tp {tp} {schedule} v={chunks} m={m} zero {zero}: losses {worst:.1e}, "
              f"checksum {_rel(checksum, ref_checksum):.1e} relative to the accumulating run")  # fmt: skip
        assert len(losses) == STEPS and losses[-1] < losses[0]
        assert worst < TOL and _rel(checksum, ref_checksum) < TOL, layout
        if dp == tp == 1 and schedule != "gpipe":
            # The same units on the same microbatches, their gradients added in microbatch order: bit for bit.
            # (GPipe runs its backward passes last microbatch first, so its sums may differ in the last bit;
            # data and tensor parallelism add over ranks in the ring's order.)
            assert losses == ref_losses, layout


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_the_cli_prints_the_contract_keys_then_each_stages_times(runs):
    body = runs[CLI_LAYOUT]
    dp, tp, pp = CLI_LAYOUT[:3]
    assert list(body)[:5] == ["losses", "param_checksum", "state_bytes", "comm_bytes", "step_seconds"]
    assert len(body["state_bytes"]) == len(body["comm_bytes"]) == dp * tp * pp
    assert len(body["idle_seconds"]) == len(body["busy_seconds"]) == len(body["predicted_idle_seconds"]) == pp
    assert all(s >= 0 for s in body["idle_seconds"]) and all(s > 0 for s in body["busy_seconds"])


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_each_stage_ran_the_ops_of_its_schedule(runs):
    for layout in LAYOUTS:
        dp, tp, pp, schedule, chunks, m, _ = layout
        sim = dl.pipeline_schedule(schedule, pp, m, forward_time=1.0, backward_time=2.0, chunks=chunks)
        for report in runs[layout].ranks:
            want = [f"{e.kind}{e.microbatch}.{e.chunk}" for e in sim.stage_events(report.pp_rank)]
            assert report.ops == want, (layout, report.rank)
    gpipe, one_f = (runs[1, 1, 4, k, 1, 4, 0].ranks[0].ops for k in ("gpipe", "1f1b"))
    assert gpipe != one_f and sorted(gpipe) == sorted(one_f)  # the same ops, in another order


def _activation_bytes(layout, stage: int) -> int:
    """Bytes a stage sends point-to-point per step: one activation per microbatch into each later chunk, one
    gradient into each earlier one."""
    dp, tp, pp, _, chunks, m, _ = layout
    one = (GLOBAL_BATCH // dp // m) * CONFIG.seq * CONFIG.hidden * 8
    virtual = [c * pp + stage for c in range(chunks)]
    return m * one * (sum(u < pp * chunks - 1 for u in virtual) + sum(u > 0 for u in virtual))


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_the_bytes_sent_are_the_activations_and_their_gradients(runs):
    for layout in LAYOUTS[:6]:  # pipelines alone: nothing but the microbatches' messages and the 8-byte loss
        for report in runs[layout].ranks:
            want = STEPS * _activation_bytes(layout, report.pp_rank)
            assert want <= report.comm_bytes <= want + STEPS * 2 * 8, (layout, report.rank)


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_sequence_parallel_stages_send_their_positions_only(runs):
    # With --sp a stage sends its TP rank's seq / tp positions of each microbatch to the next stage (1 / tp of
    # the activation), its blocks' activations cost what TP's cost (ring: all-reduce = reduce-scatter +
    # all-gather), and it adds, per microbatch, one all-reduce of the norms' gradients a block and one
    # all-gather of the whole activation: before the head on the last stage, of the embeddings' output
    # gradient on the first. So each rank sends exactly this much more than without --sp:
    dp, tp, pp, _, _, m, _ = SP_LAYOUT[:7]
    one = (GLOBAL_BATCH // dp // m) * CONFIG.seq * CONFIG.hidden * 8
    ar, ag = (dl.cost_coefficients(c, tp)[1] for c in ("allreduce", "allgather"))
    more = m * (CONFIG.layers // pp * ar * 4 * CONFIG.hidden * 8 + ag * one - one + one / tp)
    plain, sp = runs[SP_LAYOUT[:7]], runs[SP_LAYOUT]
    for a, b in zip(plain.ranks, sp.ranks):
        assert b.comm_bytes - a.comm_bytes == STEPS * more, a.rank


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_measured_idle_time_beside_the_predicted_bubble(runs):
    # Printed side by side; asserted only where no clock is involved: the model's prediction from the
    # measured times orders the schedules as its closed forms do, and every measured figure is a time.
    for layout in LAYOUTS:
        result = runs[layout]
        idle, want = (", ".join(f"{s * 1e3:.2f}" for s in x) for x in (result.idle_seconds,
                                                                         result.predicted_idle_seconds))
        print(f"{layout}: idle ms per stage [{idle}] (predicted [{want}]), bubble measured "
              f"{result.measured_bubble:.3f}, predicted {result.predicted_bubble:.3f}")  # fmt: skip
        assert all(s >= 0 for s in result.idle_seconds) and all(s > 0 for s in result.busy_seconds)
        assert 0 < result.predicted_bubble < 1 and result.measured_bubble < 1
    for pp in (2, 4):
        one_f, inter = (runs[1, 1, pp, k, v, 4, 0].predicted_bubble for k, v in (("1f1b", 1), ("interleaved", 2)))
        assert inter < one_f


# ---------------------------------------------------------------------------
# The command line: bad pipeline flags, a stage killed mid-run
# ---------------------------------------------------------------------------

BAD = [
    (["--pp", "3"], "--pp must divide the 8 layers (Megatron-LM's rule): one of 1, 2, 4, 8; got 3"),
    (["--pp", "2", "--schedule", "gpipe", "--chunks", "2"],
     "--chunks must be 1 with --schedule gpipe (model chunks are for --schedule interleaved), got 2"),
    (["--pp", "2", "--microbatches", "5"],
     "--microbatches must divide the 12 sequences of each data-parallel rank: one of 1, 2, 3, 4, 6, 12; got 5"),
    (["--pp", "2", "--dp", "2", "--microbatches", "4"],
     "--microbatches must divide the 6 sequences of each data-parallel rank: one of 1, 2, 3, 6; got 4"),
    (["--pp", "4", "--schedule", "interleaved", "--chunks", "2", "--microbatches", "6"],
     "--microbatches must be a multiple of --pp (4) with --schedule interleaved (Megatron-LM's rule), got 6"),
    (["--pp", "4", "--schedule", "interleaved", "--chunks", "4"],
     "--chunks must divide the 2 layers of each of the --pp 4 stages (Megatron-LM's rule), got 4"),
    (["--pp", "2", "--schedule", "interleaved"], "--chunks must be at least 2 with --schedule interleaved, got 1"),
    (["--schedule", "interleaved", "--chunks", "2"],
     "--pp must be at least 2 with --schedule interleaved (its chunks go round the stages), got 1"),
    (["--pp", "2", "--schedule", "zigzag"], "--schedule must be one of gpipe, 1f1b, interleaved; got 'zigzag'"),
    (["--pp", "2", "--zero", "3"], "--zero 3 with pipeline stages: ZeRO-2 and 3 shard the gradient"),
    (["--pp", "8", "--dp", str(max_ranks())],
     f"--dp times --tp times --pp must be at most {max_ranks()} ranks on this machine"),
]  # fmt: skip


# ---------------------------------------------------------------------------
# The same stages on torch.distributed (gloo)
# ---------------------------------------------------------------------------

#: Every schedule, with data parallelism (ZeRO-1) and tensor parallelism beside the stages; all in LAYOUTS.
GLOO_LAYOUTS = [(1, 1, 2, "gpipe", 1, 4, 0), (1, 1, 2, "interleaved", 2, 4, 0), (2, 1, 2, "1f1b", 1, 2, 1),
                (1, 2, 2, "1f1b", 1, 4, 0)]  # fmt: skip
GLOO_CLI = GLOO_LAYOUTS[0]  # through python -m distlib.train --engine gloo --json


def _cli_json(layout, engine: str) -> dict:
    dp, tp, pp, schedule, chunks, m, zero = layout
    argv = ["--dp", dp, "--tp", tp, "--pp", pp, "--schedule", schedule, "--chunks", chunks, "--microbatches", m,
            "--zero", zero, "--steps", STEPS, "--seed", SEED, "--engine", engine, "--json"]  # fmt: skip
    cli = subprocess.run([sys.executable, "-m", "distlib.train", *map(str, argv)], capture_output=True, text=True,
                         timeout=120, env=_env(), cwd=ROOT)  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert "torch.distributed (gloo) ranks" in cli.stderr and f"step {STEPS}/{STEPS}" in cli.stderr
    (line,) = cli.stdout.splitlines()  # one JSON object, nothing else on stdout
    return json.loads(line)


@pytest.fixture(scope="module")
def gloo_runs():
    """``{layout: {"losses", "param_checksum", "comm_bytes", "state_bytes", ...}}`` of :data:`GLOO_LAYOUTS` on gloo."""
    from distlib.engines import stray_processes
    from distlib.train.launch import train

    out = {GLOO_CLI: _cli_json(GLOO_CLI, "gloo")}
    for layout in GLOO_LAYOUTS[1:]:
        dp, tp, pp, schedule, chunks, m, zero = layout
        result = train(dp=dp, tp=tp, pp=pp, zero=zero, steps=STEPS, seed=SEED, timeout=90, schedule=schedule,
                       chunks=chunks, microbatches=m, engine="gloo")  # fmt: skip
        assert stray_processes(result.run_id) == []
        for report in result.ranks:  # each stage ran its schedule's ops, in order
            want = stage_ops(schedule, pp, m, report.pp_rank, chunks=chunks)
            assert report.ops == [f"{k}{mb}.{c}" for k, mb, c in want], (layout, report.rank)
        out[layout] = result.to_json()
    return out


@pytest.mark.engines
@pytest.mark.slow
@needs_torch
def test_pipelines_on_gloo_reproduce_one_process_accumulating_and_send_what_mpi_sends(gloo_runs, request):
    mpi = request.getfixturevalue("runs") if have_mpi() else {}
    for layout, body in gloo_runs.items():
        dp, tp, pp, schedule, chunks, m, zero = layout
        ref_losses, ref_checksum = accumulate_run(microbatches=dp * m, steps=STEPS, seed=SEED)
        worst = max(_rel(a, b) for a, b in zip(body["losses"], ref_losses))
        print(f"gloo dp {dp} x pp {pp} x tp {tp} {schedule} m={m}: losses {worst:.1e} relative to the accumulating run")
        assert len(body["losses"]) == STEPS and worst < 1e-9, layout
        assert _rel(body["param_checksum"], ref_checksum) < 1e-9, layout
        assert len(body["comm_bytes"]) == dp * tp * pp and len(body["idle_seconds"]) == pp
        for stage in range(pp):  # at least the microbatches' activations and gradients, on either engine
            ranks = [(d * pp + stage) * tp + t for d in range(dp) for t in range(tp)]
            assert min(body["comm_bytes"][r] for r in ranks) >= STEPS * _activation_bytes(layout, stage), layout
        if layout in mpi:  # the same stages, the same messages and collectives: MPI's bytes, to the byte
            assert body["comm_bytes"] == mpi[layout].comm_bytes and body["state_bytes"] == mpi[layout].state_bytes
            assert body["losses"] == mpi[layout].losses, layout  # the same arithmetic in the same order


# ---------------------------------------------------------------------------
# DP 2 x TP 2 x PP 2 across two nodes of the mini cluster (--nodes, as root)
# ---------------------------------------------------------------------------


@pytest.mark.engines
@pytest.mark.slow
@needs_cluster
@pytest.mark.parametrize("engine", [pytest.param("mpi", marks=needs_mpi), pytest.param("gloo", marks=needs_torch)])
def test_dp2_tp2_pp2_across_two_nodes_keeps_tp_and_stages_inside_a_node(engine):
    """Ranks (d * pp + s) * tp + t, four a node: replica d on node d, its two stages and their TP pairs inside
    it, so only the data-parallel all-reduce crosses the link."""
    from distlib.engines import stray_processes
    from distlib.minicluster import leftovers
    from distlib.train.launch import train

    result = train(dp=2, tp=2, pp=2, zero=0, steps=STEPS, seed=SEED, timeout=120, schedule="1f1b", microbatches=2,
                   nodes=2, link_gbit=2.0, engine=engine)  # fmt: skip
    assert stray_processes(result.run_id) == [] and leftovers(owner=os.getpid()) == []
    ref_losses, ref_checksum = accumulate_run(microbatches=4, steps=STEPS, seed=SEED)
    assert max(_rel(a, b) for a, b in zip(result.losses, ref_losses)) < TOL
    assert _rel(result.param_checksum, ref_checksum) < TOL
    assert result.nodes == 2 and len(result.comm_bytes) == 8 and sorted(result.link_bytes) == ["node0", "node1"]
    # DDP's ring all-reduce over two replicas sends each rank's whole gradient once a step: out of one node
    # and into the other, so both links together carry it twice. TP's or the stages' bytes crossing would
    # add twice theirs (more than the DP bytes themselves); headers add a few per cent.
    dp_sent = STEPS * 8 * sum(r.local_params for r in result.ranks)
    crossed = sum(result.link_bytes.values())
    print(f"{engine}: links carried {crossed:,} bytes, the DP all-reduce twice is {2 * dp_sent:,}, the ranks sent "
          f"{sum(result.comm_bytes):,}")  # fmt: skip
    assert sum(result.comm_bytes) - dp_sent > dp_sent  # the check can tell: TP and PP send more than DP
    assert 2 * dp_sent <= crossed < 1.25 * 2 * dp_sent, (result.link_bytes, dp_sent)


@pytest.mark.parametrize("argv, text", BAD)
def test_a_bad_pipeline_flag_is_one_line_and_starts_nothing(argv, text, capsys, monkeypatch):
    import distlib.engines.launch as launch

    def refuse(*args, **kwargs):
        raise AssertionError("a process was started")

    monkeypatch.setattr(launch, "run_mpi", refuse)
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("python -m distlib.train: ") and text in err


@pytest.mark.engines
@pytest.mark.slow
@needs_mpi
def test_a_stage_killed_mid_run_ends_the_run_named_and_leaves_nothing():
    kill_rank_mid_run(["--pp", "2", "--microbatches", "4", "--steps", "100000"])


@pytest.mark.engines
@pytest.mark.slow
@needs_torch
def test_a_gloo_stage_killed_mid_run_ends_the_run_named_and_leaves_nothing():
    kill_rank_mid_run(["--pp", "2", "--microbatches", "4", "--steps", "100000", "--engine", "gloo"])
