"""Starting a pipeline's ranks and reading their reports back typed.

:func:`train_pipeline` is what :func:`distlib.train.launch.train` calls when
the layout has pipeline stages (its flags already checked there): it
launches ``dp * pp * tp`` ranks of :mod:`distlib.train.pipeline` with
:func:`distlib.engines.run_mpi`, or of :func:`distlib.train.gloo.pipeline_main`
with :func:`distlib.engines.run_torch` (``engine="gloo"``: the very stage
program over torch.distributed's point-to-point calls), the launch paths the
trainer's other ranks take (their timeout, their watchdog, their clean-up),
and folds their
:class:`~distlib.train.pipeline_results.StageReport` s into a
:class:`~distlib.train.pipeline_results.PipelineResult`.
"""

from __future__ import annotations

from .._check import check_choice, check_int, check_real
from ..pipeline_schedule import PIPELINE_SCHEDULES
from .pipeline_results import PipelineResult, StageReport

__all__ = ["PIPELINE_MPI_ENV", "train_pipeline"]

PIPELINE_MPI_ENV = {"MPIR_CVAR_CH4_IPC_CMA_P2P_THRESHOLD": "4096"}
"""MPICH settings for the pipeline's ranks: messages of 4 KiB and more are copied by their receiver (CMA).

A stage sends its output with a non-blocking send and goes on computing.
On one machine MPICH moves a message of more than one shared-memory cell
(8 KiB) and less than its single-copy threshold only while the sender is
inside an MPI call, so the next stage would wait out the sender's compute:
with an 8 or 12 KiB message and a sender computing for 50 ms, the receiver
waited about 47 ms here (16 KiB and more: 0.1 ms, single copy already).
With single copy (``process_vm_readv``) from 4 KiB on, the receiver takes
the message itself and waited 0.1 ms. The microbatches'
activations are 4 to 48 KiB, so without this the measured idle time would
be MPICH's progress rule, not the schedule's bubble.
"""


def train_pipeline(*, dp: int, tp: int, pp: int, zero: int, steps: int, seed: int, timeout: float, schedule: str,
                   chunks: int, microbatches: int, cluster=None, sp: bool = False,
                   engine: str = "mpi") -> PipelineResult:  # fmt: skip
    """Train with ``pp`` pipeline stages (times ``dp`` replicas and ``tp`` tensor-parallel ranks) on ``engine``.

    Parameters
    ----------
    dp, tp, pp, zero, steps, seed, timeout, schedule, chunks, microbatches, sp
        As for :func:`distlib.train.launch.train`, which checks them all
        (:func:`~distlib.train.launch.layout_problem`) before calling this.
    cluster : distlib.minicluster.MiniCluster, optional
        Run the stages across its nodes (the launcher's ``cluster``).
    engine : {"mpi", "gloo"}
        MPI ranks, or torch.distributed ranks over gloo; the same stages, the same messages, the same bytes.

    Returns
    -------
    PipelineResult

    Raises
    ------
    distlib.engines.RunError
        A rank failed, stalled or the run timed out (the message names the rank).
    """
    for name, value in (("dp", dp), ("tp", tp), ("pp", pp), ("steps", steps), ("chunks", chunks),
                        ("microbatches", microbatches)):  # fmt: skip
        check_int(name, value, minimum=1)
    check_real("timeout", timeout, minimum=0, strict_min=True)
    schedule = check_choice("schedule", schedule, PIPELINE_SCHEDULES)
    engine = check_choice("engine", engine, ("mpi", "gloo"))
    from ..engines.launch import run_mpi, run_torch
    from ..engines.report import read_all

    args = ["--dp", dp, "--tp", tp, "--pp", pp, "--zero", zero, "--steps", steps, "--seed", seed, "--schedule",
            schedule, "--chunks", chunks, "--microbatches", microbatches, "--sp", int(sp)]  # fmt: skip
    args, n = [str(a) for a in args], dp * pp * tp
    if engine == "gloo":
        result = run_torch("distlib.train.gloo:pipeline_main", n, args=args, timeout=timeout, cluster=cluster)
    else:
        result = run_mpi("distlib.train.pipeline", n, args=args, timeout=timeout, env=PIPELINE_MPI_ENV,
                         cluster=cluster)  # fmt: skip
    reports = read_all(result, StageReport)
    return PipelineResult.from_stages(reports, dp=dp, tp=tp, pp=pp, zero=zero, seed=seed, schedule=schedule,
                                      chunks=chunks, microbatches=microbatches, log=result.stderr[0],
                                      run_id=result.run_id)  # fmt: skip
