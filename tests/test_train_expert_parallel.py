"""Expert parallelism (distlib.train.expert_parallel) on threads: every layout with experts split over ``ep`` ranks
(and each expert cut over ``tp`` ranks) equals one process to 1e-9; with a capacity factor it drops what the
one-process rule drops on each rank's batch; a rank holds 1 / ep of the experts' state (and of that 1 / tp, but
the b2); the exchange is two all-to-alls a block forward and two backward; a checkpoint written with the
experts split resumes at any other layout as if never stopped."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import needs_cluster

from distlib.engines.comm import run_threads
from distlib.layout import Layout
from distlib.train.data import global_batch, local_batch
from distlib.train.experts import LocalExperts, Routed
from distlib.train.model import Config, forward_unit, init_units, unit_specs
from distlib.train.rank import train_rank

SEED, STEPS = 7, 3
MOE = Config(experts=4, top_k=2)
CAPPED = Config(experts=4, top_k=2, capacity_factor=1.0)


def _run(layout, config=MOE, steps=STEPS, **kwargs):
    return run_threads(lambda c: train_rank(c, layout, steps=steps, seed=SEED, config=config, **kwargs), layout.ranks,
                       timeout=120)  # fmt: skip


def _rel(a, b) -> float:
    return abs(a - b) / abs(b)


@pytest.fixture(scope="module")
def one():
    """One process with the same experts: what every layout reproduces (unbounded capacity)."""
    return _run(Layout(), MOE)[0]


LAYOUTS = [Layout(dp=2, ep=2), Layout(dp=4, ep=2, zero=1), Layout(dp=4, ep=4, zero=2), Layout(dp=4, ep=2, zero=3),
           Layout(dp=2, cp=2, ep=4), Layout(dp=2, pp=2, ep=2),
           # tensor parallelism cuts each expert as the dense MLP (alone, with ep, with stages, with ZeRO)
           Layout(tp=2), Layout(dp=2, tp=2, ep=2), Layout(tp=2, pp=2, microbatches=2), Layout(dp=2, tp=2, ep=2, zero=1),
           Layout(dp=4, tp=2, ep=2, zero=3)]


@pytest.mark.parametrize("layout", LAYOUTS, ids=[lay.words() for lay in LAYOUTS])
def test_every_layout_with_experts_split_equals_one_process(layout, one):
    ranks = _run(layout, MOE)
    assert max(_rel(a, b) for a, b in zip(ranks[0].losses, one.losses)) < 1e-9
    assert _rel(sum(r.checksum_part for r in ranks), one.checksum_part) < 1e-9
    # the routing is the same tokens' on every layout: per expert, summed over the ranks (of one tensor-parallel
    # index: the others route the same tokens alike), and nothing dropped
    routers = [r for r in ranks if r.tp_rank == 0]
    assert all(r.tokens_per_expert == routers[i // layout.tp].tokens_per_expert for i, r in enumerate(ranks))
    assert [[sum(c) for c in zip(*(r.tokens_per_expert[i] for r in routers))] for i in range(STEPS)] \
        == one.tokens_per_expert and all(d == 0 for r in ranks for d in r.dropped_tokens)


def _dropped_by_the_one_process_rule(config, dp) -> list:
    """Step 1's assignments dropped on each of ``dp`` ranks: the one-process model on that rank's batch alone."""
    tokens, _ = global_batch(SEED, 0, batch=config.batch, seq=config.seq, vocab=config.vocab)
    units, specs, out = init_units(config, SEED), unit_specs(config), []
    for r in range(dp):
        routed = Routed(config.experts)
        x = local_batch(tokens, tokens, r, dp)[0]
        for spec, flat in zip(specs[:-1], units[:-1]):
            x, _ = forward_unit(spec, flat, x, config=config, moe=LocalExperts(config.experts, routed=routed))
        routed.end_step()
        out.append(routed.dropped_tokens[0])
    return out


def test_a_capacity_factor_drops_what_the_one_process_rule_drops_on_each_ranks_batch():
    split = _run(Layout(dp=4, ep=4), CAPPED)
    want = _dropped_by_the_one_process_rule(CAPPED, 4)
    assert [r.dropped_tokens[0] for r in split] == want and sum(want) > 0
    alone = _run(Layout(dp=4), CAPPED)  # each rank every expert: the same rule, the same batches
    assert [r.dropped_tokens for r in alone] == [r.dropped_tokens for r in split]
    assert max(_rel(a, b) for a, b in zip(split[0].losses, alone[0].losses)) < 1e-9
    assert _rel(sum(r.checksum_part for r in split), sum(r.checksum_part for r in alone)) < 1e-9


@pytest.mark.parametrize("tp", [1, 2])
def test_a_rank_holds_one_ep_th_of_the_experts_state_and_of_that_one_tp_th(tp):
    experts = dense = 0
    for spec in unit_specs(MOE, tp):  # this tensor-parallel rank's cut: w1, b1 by columns, w2 by rows
        for name, shape, _ in spec.tensors:
            experts, dense = (experts + np.prod(shape), dense) if "." in name else (experts, dense + np.prod(shape))
    whole = sum(np.prod(shape) for s in unit_specs(MOE) for n, shape, _ in s.tensors if "." in n)
    assert experts == whole // tp + (tp - 1) * MOE.experts * MOE.layers * MOE.hidden // tp  # b2 whole on each
    for ep in (1, 2, 4):
        ranks = _run(Layout(dp=4, ep=ep, tp=tp), MOE, steps=1)
        # DDP: weights, gradient and Adam's two moments of the dense part whole, of the experts 1 / ep
        assert {r.state_bytes for r in ranks} == {4 * 8 * (dense + experts // ep)}


def test_the_exchange_is_two_all_to_alls_a_block_each_way_over_the_ep_group():
    ranks = _run(Layout(dp=2, ep=2), MOE, steps=1)
    alone = _run(Layout(dp=2), MOE, steps=1)
    # beyond DDP's all-reduce (the dense part's, smaller by the experts it no longer holds whole) every rank
    # sends, per block, a count all-to-all, the dispatch and the combine forward, and two more backward
    assert all(r.messages - a.messages == MOE.layers * 5 for r, a in zip(ranks, alone))


@pytest.mark.parametrize("layout, config, message", [
    (Layout(dp=3, ep=2), MOE, r"--ep must divide the --dp times --cp ranks \(3\) .*one of 1, 3; got 2"),
    (Layout(dp=4, ep=4), Config(experts=6, top_k=2), r"--ep must divide the 6 experts: one of 1, 2, 3, 6; got 4"),
    (Layout(dp=2, ep=2, pp=2, microbatches=2), MOE, r"--microbatches must be 1 with --ep 2"),
    (Layout(tp=2, sequence_parallel=True), MOE, r"--sp with --experts: .*drop --sp"),
    (Layout(dp=2, ep=2), Config(), r"--ep 2 needs experts"),
])
def test_a_layout_that_cannot_split_the_experts_is_refused_in_one_line(layout, config, message):
    with pytest.raises(ValueError, match=message):
        run_threads(lambda c: train_rank(c, layout, steps=1, seed=0, config=config), layout.ranks, timeout=30)


def test_what_expert_parallelism_does_not_do_yet_is_refused_in_one_line():
    from distlib.train.overlap import Overlap

    lay = Layout(dp=2, ep=2)
    with pytest.raises(ValueError, match=r"--overlap with --ep 2: .*--overlap none"):
        run_threads(lambda c: train_rank(c, lay, steps=1, seed=0, config=MOE, overlap=Overlap(("buckets",))), 2,
                    timeout=30)  # fmt: skip


RESHARDED = [  # (saved at, resumed at): the experts cut over ep (and tp) ranks, read back whole, cut again
    (Layout(dp=2, ep=2), Layout()), (Layout(dp=2, ep=2, zero=1), Layout(dp=4, ep=4, zero=3)),
    (Layout(dp=4, ep=2, zero=2), Layout(dp=2)), (Layout(dp=2, tp=2, ep=2, zero=3), Layout(dp=4, ep=2, zero=1)),
    (Layout(tp=2, pp=2, microbatches=2), Layout(dp=2, tp=2, ep=2)), (Layout(dp=2), Layout(dp=2, ep=2, zero=2)),
]


@pytest.mark.parametrize("saved, resumed", RESHARDED, ids=[f"{a.words()} -> {b.words()}" for a, b in RESHARDED])
def test_a_checkpoint_with_experts_split_resumes_at_any_layout_as_if_never_stopped(saved, resumed, one, tmp_path):
    _run(saved, steps=STEPS - 1, checkpoint_dir=tmp_path)
    after = _run(resumed, steps=STEPS, checkpoint_dir=tmp_path, resume=True)
    assert after[0].first_step == STEPS and len(after[0].losses) == 1
    assert _rel(after[0].losses[0], one.losses[-1]) < 1e-9
    assert _rel(sum(r.checksum_part for r in after), one.checksum_part) < 1e-9


# ---------------------------------------------------------------------------
# Real ranks and the command line
# ---------------------------------------------------------------------------


@pytest.mark.engines
@pytest.mark.slow
@pytest.mark.parametrize("engine, layout", [("mpi", Layout(dp=2, ep=2)), ("mpi", Layout(dp=4, ep=2, zero=1)),
                                            ("gloo", Layout(dp=2, ep=2)), ("gloo", Layout(dp=4, ep=4, zero=3)),
                                            ("mpi", Layout(dp=2, tp=2, ep=2)), ("gloo", Layout(dp=2, tp=2, ep=2))],
                         ids=lambda v: v if isinstance(v, str) else v.words())  # fmt: skip
def test_expert_parallelism_on_real_ranks_equals_one_process(engine, layout, one):
    from distlib.engines import stray_processes
    from distlib.train.launch import train

    if engine == "gloo":
        pytest.importorskip("torch")
    elif not _have_mpi():
        pytest.skip("mpi4py / mpiexec not installed")
    result = train(layout, steps=STEPS, seed=SEED, engine=engine, timeout=120, config=MOE)
    assert stray_processes(result.run_id) == []
    assert max(_rel(a, b) for a, b in zip(result.losses, one.losses)) < 1e-9
    assert _rel(result.param_checksum, one.checksum_part) < 1e-9
    assert result.tokens_per_expert == one.tokens_per_expert and result.dropped_tokens == [0] * STEPS
    threads = _run(layout, MOE)
    assert result.comm_bytes == [r.comm_bytes for r in threads]  # the same bytes on every engine


ACROSS_NODES = [("gloo", Layout(dp=4, ep=4, zero=1)), ("gloo", Layout(dp=2, tp=2, ep=2)),
                ("mpi", Layout(dp=2, pp=2, ep=2))]


@pytest.mark.engines
@pytest.mark.slow
@needs_cluster
@pytest.mark.parametrize("engine, layout", ACROSS_NODES, ids=[f"{e}-{lay.words()}" for e, lay in ACROSS_NODES])
def test_expert_parallelism_across_two_nodes_equals_one_process_and_its_tokens_cross_the_link(engine, layout, one):
    """Two mini-cluster nodes, the ranks placed in rank order: EP 4 over both nodes with ZeRO-1, TP inside a
    node with EP across, and a pipeline stage a node; each equal to one process, and the link carries bytes."""
    from distlib.engines import stray_processes
    from distlib.minicluster import leftovers
    from distlib.train.launch import train

    if engine == "gloo":
        pytest.importorskip("torch")
    elif not _have_mpi():
        pytest.skip("mpi4py / mpiexec not installed")
    result = train(layout, steps=STEPS, seed=SEED, engine=engine, timeout=120, config=MOE, nodes=2, link_gbit=2.0)
    assert stray_processes(result.run_id) == [] and leftovers(owner=os.getpid()) == []
    assert max(_rel(a, b) for a, b in zip(result.losses, one.losses)) < 1e-9
    assert _rel(result.param_checksum, one.checksum_part) < 1e-9
    assert result.nodes == 2 and sum(result.link_bytes.values()) > 0, result.link_bytes


@pytest.mark.engines
@pytest.mark.slow
def test_saved_with_experts_split_on_mpi_and_resumed_otherwise_split_on_gloo(one, tmp_path):
    from distlib.train.launch import train

    if not _have_mpi():
        pytest.skip("mpi4py / mpiexec not installed")
    pytest.importorskip("torch")
    train(Layout(dp=2, ep=2, zero=1), steps=STEPS - 1, seed=SEED, engine="mpi", timeout=120, config=MOE,
          checkpoint_dir=tmp_path)  # fmt: skip
    after = train(Layout(dp=2, tp=2, ep=2, zero=3), steps=STEPS, seed=SEED, engine="gloo", timeout=120, config=MOE,
                  checkpoint_dir=tmp_path, resume=True)  # fmt: skip
    assert _rel(after.losses[-1], one.losses[-1]) < 1e-9 and _rel(after.param_checksum, one.checksum_part) < 1e-9


def _have_mpi() -> bool:
    from conftest import have_mpi

    return have_mpi()


@pytest.mark.engines
def test_the_command_line_prints_the_routing_in_its_json():
    import json
    import subprocess
    import sys

    if not _have_mpi():
        pytest.skip("mpi4py / mpiexec not installed")
    proc = subprocess.run([sys.executable, "-m", "distlib.train", "--dp", "2", "--experts", "4", "--top-k", "2",
                           "--capacity-factor", "1.0", "--ep", "2", "--steps", "2", "--seed", str(SEED), "--engine",
                           "mpi", "--json"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert list(body)[-2:] == ["tokens_per_expert", "dropped_tokens"]
    threads = _run(Layout(dp=2, ep=2), CAPPED, steps=2)
    assert body["dropped_tokens"] == [sum(r.dropped_tokens[i] for r in threads) for i in range(2)]
    assert body["losses"] == pytest.approx(threads[0].losses, rel=1e-9) and min(body["dropped_tokens"]) > 0


@pytest.mark.parametrize("argv, flag", [
    (["--experts", "4", "--top-k", "5"], "--top-k must be an integer in [1, 4], got 5"),
    (["--experts", "4", "--top-k", "2", "--capacity-factor", "0"], "--capacity-factor must be a finite number > 0"),
    (["--dp", "2", "--experts", "3", "--top-k", "2", "--ep", "2"], "--ep must divide the 3 experts: one of 1, 3"),
    (["--dp", "3", "--experts", "4", "--top-k", "2", "--ep", "2"], "--ep must divide the --dp times --cp ranks (3)"),
    (["--dp", "2", "--experts", "4", "--top-k", "2", "--ep", "2", "--overlap", "all"], "--overlap with --ep 2"),
    (["--tp", "2", "--sp", "--experts", "4", "--top-k", "2"], "--sp with --experts"),
])
def test_a_bad_expert_flag_is_one_line_naming_it_and_starts_nothing(argv, flag):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "distlib.train", *argv, "--json"], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], proc.stderr
