"""Coming back under Slurm (distlib.minicluster.requeue): a batch job that loses a node is requeued by Slurm and
resumes from its newest checkpoint on the nodes left, and ends as an uninterrupted run ends (to 1e-9).

The experiment needs root, Slurm (a mini cluster with slurmctld and slurmd, as tests/test_slurm.py) and PyTorch
(the job's ranks are gloo ranks under plain srun); it is skipped with the reason elsewhere. The argument checks run everywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from distlib.engines.comm import run_threads
from distlib.layout import Layout
from distlib.minicluster import leftovers
from distlib.minicluster.requeue import batch_script, requeue_after_node_loss, requeue_support
from distlib.minicluster.slurm import CRED_EXPIRE
from distlib.train.rank import train_rank

REASON = requeue_support()
needs_slurm = pytest.mark.skipif(REASON is not None, reason=f"Slurm on a mini cluster unavailable: {REASON}")
STEPS, SEED, EVERY, TAKE_AT = 120, 0, 5, 10
BETWEEN = {"NODE_FAIL", "REQUEUED", "COMPLETING", "PENDING"}  # what a requeued job may pass through


def _rel(a, b) -> float:
    return abs(a - b) / abs(b)


def _ranks_of(cluster: str) -> list:
    """Trainer ranks still alive whose environment names the cluster's folders."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes()
            env = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"distlib.train.rank" in cmd and cluster.encode() in env:
            found.append(entry.name)
    return found


@pytest.mark.slow
@needs_slurm
@pytest.mark.parametrize("how", ["cut"])  # "stop" (the node powered off) runs in chapter 16 at every book build
def test_a_job_that_loses_a_node_is_requeued_and_ends_as_if_never_stopped(how):
    job = requeue_after_node_loss(Layout(dp=2, zero=1), steps=STEPS, seed=SEED, checkpoint_every=EVERY,
                                  take_at=TAKE_AT, how=how, timeout=300)  # fmt: skip
    # Slurm's account: running, then back in the queue, then running again to the end
    states = job.states
    first, last = states.index("RUNNING"), len(states) - 2
    assert states[last:] == ["RUNNING", "COMPLETED"] and first < last, states
    assert "PENDING" in states[first + 1 : last] and set(states[first + 1 : last]) <= BETWEEN, states
    assert any(f"requeue job JobId={job.job_id} due to failure of node {job.taken}" in line
               for line in job.controller), job.controller  # fmt: skip
    # the requeued job waits for its begin time: the credential's lifetime after the requeue, not more
    assert job.begin_delay <= CRED_EXPIRE + 2 and job.seconds_to_notice < job.seconds_to_requeue
    # two runs: the first on the lost node, the second on the nodes left, from the step after a checkpoint
    before, after = job.runs
    assert (before.restart, before.first_step, after.restart) == (0, 1, 1)
    assert job.taken in before.nodes and job.taken not in after.nodes and len(after.nodes) == 2
    assert after.first_step > job.checkpoint_at_loss >= TAKE_AT and (after.first_step - 1) % EVERY == 0
    assert job.final.first_step == after.first_step and len(job.final.losses) == STEPS - after.first_step + 1
    # and the numbers of a run never stopped
    whole = run_threads(lambda c: train_rank(c, Layout(), steps=STEPS, seed=SEED), 1, timeout=120)[0]
    assert max(_rel(a, b) for a, b in zip(job.final.losses, whole.losses[after.first_step - 1 :])) < 1e-9
    assert _rel(job.final.param_checksum, whole.checksum_part) < 1e-9
    # nothing left behind: the lost node's rank was killed with it (stop) or fenced after the job (cut)
    assert any("distlib.train.rank" in p for p in job.fenced), job.fenced
    assert job.strays == []
    assert leftovers(owner=os.getpid()) == [] and _ranks_of(job.cluster) == []


def test_the_batch_script_asks_for_a_requeue_and_names_each_run():
    text = batch_script(Layout(dp=2, zero=1), steps=8, seed=1, checkpoints=Path("/c"), checkpoint_every=2, nodes=2)
    assert "#SBATCH --requeue\n" in text and "#SBATCH --nodes=2\n" in text and "--ntasks-per-node=1\n" in text
    assert "run=${SLURM_RESTART_COUNT:-0}" in text
    # plain srun, no MPI plugin: gloo ranks that find each other at the job's first node
    assert "\nsrun --output=run$run-rank%t.out " in text and "--mpi" not in text and "mpi4py" not in text
    assert 'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)\n' in text
    assert "--dp 2 --zero 1 --steps 8 --seed 1 --engine gloo --checkpoint-dir /c --checkpoint-every 2" in text
    shown = batch_script(Layout(dp=2), steps=8, seed=1, checkpoints=Path("/c"), checkpoint_every=2, nodes=2,
                         python="python")  # fmt: skip
    assert " python -c 'from distlib.train.rank import main; main()' --dp 2 " in shown
    with pytest.raises(ValueError, match="ranks must fill the job's 2 nodes"):
        batch_script(Layout(dp=3), steps=8, seed=1, checkpoints=Path("/c"), checkpoint_every=2, nodes=2)


@pytest.mark.parametrize("kwargs, words", [
    (dict(steps=10, take_at=10), "take_at must be"),
    (dict(checkpoint_every=20, steps=10), "checkpoint_every must be"),
    (dict(how="unplug"), "how must be one of"),
    (dict(job_nodes=2, nodes=2), "nodes must be"),
    (dict(timeout=0), "timeout must be"),
])  # fmt: skip
def test_bad_arguments_are_refused_before_any_cluster_is_made(kwargs, words):
    with pytest.raises(ValueError, match=words):
        requeue_after_node_loss(**kwargs)
