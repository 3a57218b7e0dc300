"""The trainer's context parallelism (distlib/train/context_parallel.py): every CP layout is one process.

Fast checks run the one rank program on threads (run_threads); the engines' checks start real MPI and gloo
ranks, on this machine and across two nodes of the mini cluster (as root).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from distlib.context_parallel import cp_comm, work_imbalance
from distlib.engines.comm import run_threads
from distlib.layout import Layout
from distlib.train.microbatches import accumulate_run
from distlib.train.model import Config
from distlib.train.rank import train_rank
from distlib.train.results import TrainResult

STEPS, SEED = 2, 0
CONFIG = Config()


def _rel(a, b):
    return abs(a - b) / abs(b)


def _threads(layout: Layout, **options) -> TrainResult:
    reports = run_threads(lambda c: train_rank(c, layout, steps=STEPS, seed=SEED, **options), layout.ranks)
    return TrainResult.from_ranks(reports, layout=layout, seed=SEED)


@pytest.fixture(scope="module")
def reference():
    """One process accumulating each layout's microbatches: losses and checksum, by microbatches per step."""
    cache = {}

    def get(m):
        if m not in cache:
            cache[m] = accumulate_run(microbatches=m, steps=STEPS, seed=SEED)
        return cache[m]

    return get


def _same(result: TrainResult, reference) -> float:
    losses, checksum = reference(result.layout.dp * result.layout.microbatches)
    return max([_rel(a, b) for a, b in zip(result.losses, losses)] + [_rel(result.param_checksum, checksum)])


THREAD_LAYOUTS = [Layout(cp=c, cp_kind=k) for c in (2, 4) for k in ("ring", "allgather", "ulysses")] + [
    Layout(dp=2, cp=2, zero=1), Layout(dp=2, cp=2, zero=3, cp_kind="allgather"), Layout(tp=2, cp=2),
    Layout(tp=2, cp=2, sequence_parallel=True, cp_kind="ulysses"), Layout(tp=2, cp=4, cp_kind="allgather"),
    Layout(pp=2, cp=2, microbatches=2), Layout(pp=2, cp=2, microbatches=4, schedule="interleaved", chunks=2,
                                               cp_kind="ulysses"),
    Layout(dp=2, tp=2, pp=2, cp=2, microbatches=2, sequence_parallel=True)]


@pytest.mark.parametrize("layout", THREAD_LAYOUTS, ids=lambda lay: lay.words())
def test_every_cp_layout_equals_one_process_in_losses_and_parameters(layout, reference):
    assert _same(_threads(layout), reference) < 1e-9


@pytest.mark.parametrize("options", [dict(cp_overlap=False), dict(cp_split="contiguous")], ids=str)
def test_the_blocking_ring_and_the_contiguous_split_give_the_same_numbers(options, reference):
    assert _same(_threads(Layout(cp=4), **options), reference) < 1e-9


def test_activations_per_rank_fall_as_one_over_cp_and_every_layout_reports_them():
    peaks = {c: _threads(Layout(cp=c)).activation_bytes for c in (1, 2, 4)}
    assert len(set(peaks[2])) == len(set(peaks[4])) == 1  # every rank of a group keeps the same
    assert peaks[2][0] == 2 * peaks[4][0]
    # one process also keeps its whole s x s attention probabilities, which blockwise attention never holds
    assert peaks[1][0] > 2 * peaks[2][0]
    for layout in (Layout(dp=2), Layout(tp=2), Layout(pp=2, microbatches=2)):
        assert all(b > 0 for b in _threads(layout).activation_bytes)


@pytest.mark.parametrize("kind", ["ring", "allgather", "ulysses"])
@pytest.mark.parametrize("cp", [2, 4])
def test_bytes_sent_per_rank_are_the_models_count(kind, cp):
    """A CP group and a DP group of the same size reduce the same gradients: the difference is attention's."""
    with_cp = _threads(Layout(cp=cp, cp_kind=kind))
    with_dp = _threads(Layout(dp=cp))
    per_layer = cp_comm(kind, seq=CONFIG.seq, heads=CONFIG.heads, head_dim=CONFIG.head_dim, cp=cp, batch=CONFIG.batch,
                        bytes_per_value=8)
    want = per_layer.bytes * CONFIG.layers * STEPS
    for rank, (a, b) in enumerate(zip(with_cp.comm_bytes, with_dp.comm_bytes)):
        assert a - b == want, (rank, a - b, want)
    messages = [a.messages - b.messages for a, b in zip(with_cp.ranks, with_dp.ranks)]
    assert messages == [per_layer.messages * CONFIG.layers * STEPS] * cp


@pytest.mark.parametrize("cp", [2, 4])
def test_attention_work_per_rank_balanced_with_zigzag_and_not_without(cp):
    zig = [r.attention_flops for r in _threads(Layout(cp=cp)).ranks]
    cont = [r.attention_flops for r in _threads(Layout(cp=cp), cp_split="contiguous").ranks]
    assert work_imbalance(zig) <= 1.1
    assert work_imbalance(cont) > 1.1
    assert math.isclose(work_imbalance(cont), cp)  # whole blocks: the last rank runs cp times the first's
    assert sum(zig) < sum(cont)  # zig-zag's chunks also skip more of the masked half


# ---- real ranks ---------------------------------------------------------------------------------------------


ENGINE_LAYOUTS = [Layout(cp=2), Layout(cp=2, cp_kind="allgather"), Layout(cp=2, cp_kind="ulysses"), Layout(cp=4),
                  Layout(cp=4, cp_kind="allgather"), Layout(cp=4, cp_kind="ulysses"), Layout(dp=2, cp=2, zero=1),
                  Layout(tp=2, cp=2, sequence_parallel=True), Layout(pp=2, cp=2, microbatches=2, cp_kind="allgather")]


@pytest.mark.engines
@pytest.mark.slow
@pytest.mark.parametrize("engine", ["mpi", "gloo"])
def test_cp_layouts_on_real_ranks_equal_one_process(engine, reference):
    from distlib.engines import stray_processes
    from distlib.train.launch import train

    if engine == "gloo":
        pytest.importorskip("torch")
    layouts = ENGINE_LAYOUTS if engine == "mpi" else ENGINE_LAYOUTS[::2]
    for layout in layouts:
        result = train(layout, steps=STEPS, seed=SEED, engine=engine, timeout=120)
        assert stray_processes(result.run_id) == []
        assert _same(result, reference) < 1e-9, layout.words()
        threads = _threads(layout)
        assert result.comm_bytes == threads.comm_bytes, layout.words()  # the same bytes on every engine
        assert result.activation_bytes == threads.activation_bytes


def _root_with_cluster() -> str | None:
    if os.geteuid() != 0:
        return "the mini cluster needs root"
    from distlib.minicluster import minicluster_support

    return minicluster_support()


@pytest.mark.engines
@pytest.mark.slow
@pytest.mark.skipif(_root_with_cluster() is not None, reason=str(_root_with_cluster()))
@pytest.mark.parametrize("engine, layout", [("mpi", Layout(cp=4)), ("gloo", Layout(dp=2, cp=2, cp_kind="allgather")),
                                            ("mpi", Layout(tp=2, cp=2, cp_kind="ulysses"))], ids=str)
def test_cp_across_two_nodes_equals_one_process(engine, layout, reference):
    from distlib.engines import stray_processes
    from distlib.train.launch import train

    if engine == "gloo":
        pytest.importorskip("torch")
    result = train(layout, steps=STEPS, seed=SEED, engine=engine, timeout=180, nodes=2)
    assert stray_processes(result.run_id) == []
    assert _same(result, reference) < 1e-9
    assert result.nodes == 2 and all(n > 0 for n in result.link_bytes.values())


@pytest.mark.parametrize("argv, flag", [(["--cp", "3"], "--cp must split the sequence of 16 tokens"),
                                        (["--cp", "2", "--cp-kind", "mesh"], "--cp-kind must be one of"),
                                        (["--cp", "8", "--cp-kind", "ulysses"], "--cp with --cp-kind ulysses"),
                                        (["--cp", "2", "--dp", "2", "--ranks", "2"], "--ranks must equal")])
def test_a_bad_cp_flag_is_one_line_naming_it(argv, flag):
    proc = subprocess.run([sys.executable, "-m", "distlib.train", *argv, "--json"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], proc.stderr


@pytest.mark.engines
@pytest.mark.slow
@pytest.mark.skipif(_root_with_cluster() is not None, reason=str(_root_with_cluster()))
def test_ring_overlap_measured_across_two_nodes_gives_the_blocking_rings_numbers():
    from distlib.train.ring_overlap import RING_BENCH_CONFIG, measure_ring_overlap

    run = measure_ring_overlap(cp=2, link_gbit=1.0, steps=2, repeats=1)
    assert run.losses_equal
    c = RING_BENCH_CONFIG
    assert run.block_bytes == 2 * c["batch"] * c["heads"] * (c["seq"] // 2) * (c["hidden"] // c["heads"]) * 8
    assert run.blocking_wait_seconds > 0 and run.overlapped_wait_seconds >= 0
    assert 0 < run.predicted_overlapped_seconds <= run.blocking_seconds
