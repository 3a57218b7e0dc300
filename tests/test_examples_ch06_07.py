"""The chapter 6 and 7 worker modules: the recorded MPI ring and NCCL's double binary tree."""

import importlib.util
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distlib as dl
from distlib.examples import ch06_ring
from distlib.examples.ch07_trees import btree, double_binary_tree, double_binary_tree_time, ring_crossover
from conftest import needs_mpi

# ---------------------------------------------------------------------------
# NCCL's trees (pure Python, fast)
# ---------------------------------------------------------------------------


def test_btree_matches_nccls_picture_for_14_ranks():
    # The illustration in NCCL's src/graph/trees.cc: 0 -> 8; 8 -> 4, 12; 4 -> 2, 6;
    # 12 -> 10, 13 (13 hangs off 12 because 14 is out of bounds); odd ranks are leaves.
    kids = {r: btree(14, r)[1] for r in range(14)}
    assert kids[0] == (8,) and kids[8] == (4, 12) and kids[4] == (2, 6) and kids[12] == (10, 13)
    assert kids[2] == (1, 3) and kids[10] == (9, 11)
    assert all(kids[r] == () for r in range(1, 14, 2))
    assert btree(14, 13)[0] == 12 and btree(14, 8)[0] == 0


def test_second_tree_is_the_mirror_or_the_shift():
    t = double_binary_tree(12)  # even: mirror, root p - 1
    assert t.roots == (0, 11)
    assert t.children[1][3] == (1, 7) and t.parents[1][0] == 1  # rank 3 plays rank 8: children 4, 10
    t = double_binary_tree(13)  # odd: shifted by one, root 1 (NCCL's ncclGetDtreeRoots)
    assert t.roots == (0, 1)
    assert t.children[1][1] == ((8 + 1) % 13,)


@settings(max_examples=120, deadline=None)
@given(st.integers(min_value=1, max_value=300))
def test_both_trees_span_every_rank_with_log_depth(p):
    t = double_binary_tree(p)
    for tree in (0, 1):
        parents, children = t.parents[tree], t.children[tree]
        assert parents.count(-1) == 1
        # parent and child links agree, and every non-root rank is exactly one rank's child
        listed = sorted(c for r in range(p) for c in children[r])
        assert listed == sorted(r for r in range(p) if parents[r] >= 0)
        for r in range(p):
            for c in children[r]:
                assert parents[c] == r
            assert len(children[r]) <= 2
        assert t.depth(tree) == (math.ceil(math.log2(p)) if p > 1 else 0)
    if p % 2 == 0:  # even p: no rank is an inner node of both trees
        assert not set(t.inner(0)) & set(t.inner(1))
    assert max(t.links(r) for r in range(p)) <= 4


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=4, max_value=2000))
def test_cost_coefficients_are_log_latency_and_twice_the_buffer(p):
    assert double_binary_tree(p).cost_coefficients() == (2 * math.ceil(math.log2(p)), 2.0)


def test_time_and_crossover_with_the_ring():
    alpha, bw = 5e-6, 50e9
    for p in (8, 16, 64):
        n = ring_crossover(p, alpha=alpha, bandwidth=bw)
        ring = dl.collective_time("allreduce", n, p, alpha=alpha, bandwidth=bw)
        assert double_binary_tree_time(n, p, alpha=alpha, bandwidth=bw) == pytest.approx(ring, rel=1e-12)
        # below the crossover the trees win, above it the ring does
        assert double_binary_tree_time(n / 2, p, alpha=alpha, bandwidth=bw) < dl.collective_time(
            "allreduce", n / 2, p, alpha=alpha, bandwidth=bw)
        assert double_binary_tree_time(2 * n, p, alpha=alpha, bandwidth=bw) > dl.collective_time(
            "allreduce", 2 * n, p, alpha=alpha, bandwidth=bw)
    assert double_binary_tree_time(1e9, 1, alpha=alpha, bandwidth=bw) == 0.0
    assert ring_crossover(2, alpha=alpha, bandwidth=bw) is None  # two ranks: the same algorithm
    assert ring_crossover(8, alpha=0.0, bandwidth=bw) is None


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(n_bytes=-1, p=4, alpha=1e-6, bandwidth=1e9), "n_bytes"),
        (dict(n_bytes=8, p=0, alpha=1e-6, bandwidth=1e9), "p"),
        (dict(n_bytes=8, p=4, alpha=float("nan"), bandwidth=1e9), "alpha"),
        (dict(n_bytes=8, p=4, alpha=1e-6, bandwidth=0), "bandwidth"),
    ],
)
def test_bad_arguments_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        double_binary_tree_time(kwargs.pop("n_bytes"), kwargs.pop("p"), **kwargs)


def test_btree_rejects_a_rank_outside_the_tree():
    with pytest.raises(ValueError, match="rank"):
        btree(4, 4)


# ---------------------------------------------------------------------------
# The recorded ring over MPI
# ---------------------------------------------------------------------------


def test_step_table_reads_a_two_rank_ring():
    events = [
        [("sendrecv", 1, 1, None, 1), ("combine", 0), ("sendrecv", 0, 1, 1, 1)],
        [("sendrecv", 0, 0, None, 0), ("combine", 1), ("sendrecv", 1, 0, 0, 0)],
    ]
    lines = ch06_ring.step_table(events, [0, 1, 2])
    assert lines[1].split() == ["1", "reduce-scatter", "1", "/", "+0", "0", "/", "+1"]
    assert lines[2].split() == ["2", "all-gather", "0", "/", "=1", "1", "/", "=0"]
    with pytest.raises(ValueError, match="sendrecv"):
        ch06_ring.step_table([[("combine", 0)]], [0, 1])




@pytest.mark.engines
@needs_mpi
def test_recorded_ring_over_mpi_matches_the_schedule_and_mpi_allreduce():
    from distlib.engines import run_mpi, stray_processes

    p, n = 3, 10
    result = run_mpi("distlib.examples.ch06_ring", p, args=["--n", str(n)], timeout=90)
    out = result.lines(0)
    table = out[out.index(next(line for line in out if line.lstrip().startswith("step"))) + 1:][: 2 * (p - 1)]
    # Step s (1-based) on rank r: send chunk (r - s) mod p; in the reduce-scatter
    # add chunk (r - s - 1) mod p, in the all-gather store chunk (r - s) mod p shifted by one.
    for s, line in enumerate(table, start=1):
        fields = line.split()
        assert int(fields[0]) == s
        for r in range(p):
            sent, got = fields[2 + 3 * r], fields[4 + 3 * r]
            if s <= p - 1:
                assert fields[1] == "reduce-scatter"
                assert int(sent) == (r - s) % p and got == f"+{(r - s - 1) % p}"
            else:
                k = s - (p - 1)
                assert fields[1] == "all-gather"
                assert int(sent) == (r - k + 1) % p and got == f"={(r - k) % p}"
    total = p * np.arange(n) + 100 * sum(range(p))
    assert f"rank 0 holds after the ring: {total.tolist()}" in out
    for name in ("ring", "tree", "halving_doubling"):
        line = next(line for line in out if line.split()[0] == name and len(line.split()) == 4)
        assert line.split()[1:] == ["True"] * 3, line
    assert out[-1].endswith(", 0 failures")
    assert stray_processes(result.run_id) == []


# ---------------------------------------------------------------------------
# The workers hand their figures back typed (distlib.engines.report)
# ---------------------------------------------------------------------------


@pytest.mark.engines
@needs_mpi
def test_ping_pong_figures_come_back_typed_and_agree_with_what_rank_0_printed():
    from distlib.engines import report, run_mpi, stray_processes
    from distlib.examples.mpi_p2p import PAIRS, RECEIVER_WAIT, P2PTiming

    result = run_mpi("distlib.examples.mpi_p2p", 2, args=["--mbytes", "1", "--repeats", "2"], timeout=120)
    t = report.read(result, P2PTiming)
    assert t.n_bytes == 2**20 and t.bandwidth == pytest.approx(t.n_bytes / t.one_way) and t.buffers_match
    assert 0 < t.latency < t.one_way
    # Ssend waits for the receive, posted RECEIVER_WAIT late; a small Send returns at once (eager)
    assert t.ssend_small >= 0.9 * RECEIVER_WAIT > t.send_small
    assert set(t.times) == {"transfer", "compute", *[name for pair in PAIRS for name in pair]}
    shorter = min(t.times["transfer"], t.times["compute"])
    assert t.hidden_exchange == pytest.approx((t.times[PAIRS[1][0]] - t.times[PAIRS[1][1]]) / shorter)
    # the prose says the same, rounded: the typed figure is the printed one's source
    assert f"8 B one way {t.latency * 1e6:.1f} us" in result.stdout[0]
    assert f"hidden: {100 * t.hidden_one_way:.0f}% of the shorter part" in result.stdout[0]
    assert report.strip(result.stdout[0]).rstrip().endswith("received buffers match what was sent: True")
    with pytest.raises(report.ReportError, match="rank 1 printed no P2PTiming report"):
        report.read(result, P2PTiming, rank=1)
    assert stray_processes(result.run_id) == []


@pytest.mark.engines
@needs_mpi
def test_mpi_training_comes_back_typed():
    from distlib.engines import report, run_mpi, stray_processes
    from distlib.examples import mpi_train

    result = run_mpi("distlib.examples.mpi_train", 3, args=["--steps", "12", "--algorithm", "tree"], timeout=90)
    t = report.read(result, mpi_train.TrainReport)
    assert (t.p, t.params, t.global_batch, t.algorithm) == (3, mpi_train.MLP(10, 32).size, 96, "tree")
    assert t.steps[0] == 0 and t.steps[-1] == 12 and len(t.losses) == len(t.steps) == len(t.accuracies)
    assert len(t.hashes) == 3 and t.identical and t.loss_decreased
    assert result.lines(0)[0] == t.headline()
    assert stray_processes(result.run_id) == []


def test_mpi_train_offers_the_registry_s_algorithms():
    from distlib.examples import mpi_train

    assert mpi_train.ALGORITHM_CHOICES == dl.ALLREDUCE_ALGORITHMS + ("builtin", "auto")


@pytest.mark.engines
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
def test_ddp_training_comes_back_typed():
    from distlib.engines import report, run_torch, stray_processes
    from distlib.examples import torch_ddp

    result = run_torch("distlib.examples.torch_ddp:main", 2, args=["--steps", "10"], timeout=150)
    t = report.read(result, torch_ddp.DDPTraining)
    assert t.p == 2 and t.engine == "gloo" and t.steps == 10
    assert len(set(t.hashes_before)) == 2  # different seeds on the two ranks...
    assert len(set(t.hashes_wrapped)) == 1 and t.hashes_wrapped[0] == t.hashes_before[0]  # ...then rank 0's
    assert t.identical and t.loss_decreased
    assert f"parameter hashes by rank after training: {t.hashes_after}" in result.stdout[0]
    assert stray_processes(result.run_id) == []


def test_nccl_example_returns_nothing_where_no_gpu_can_run_it(capsys):
    torch = pytest.importorskip("torch")
    from distlib.examples import nccl_allreduce

    if torch.cuda.is_available():  # pragma: no cover - a GPU machine runs it for real
        ran = nccl_allreduce.main(["--mib", "1"])
        assert isinstance(ran, nccl_allreduce.NcclRun) and ran.error is None
        assert ran.small_sum == ran.expected and all(t.correct for t in ran.timings)
        assert "@@distlib-report" not in capsys.readouterr().out
    else:
        assert nccl_allreduce.main(["--mib", "1"]) is None
        assert capsys.readouterr().out.strip() == nccl_allreduce.SKIP
