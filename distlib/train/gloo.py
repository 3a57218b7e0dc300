"""One rank of the trainer on torch.distributed (gloo): ``--engine gloo``.

:func:`distlib.train.launch.train` starts ``D * T`` of these with
:func:`distlib.engines.run_torch` (target ``distlib.train.gloo:main``, the
flags ``--dp D --tp T --zero Z --steps K --seed S --sp 0|1``), or, with
pipeline stages, ``D * P * T`` of :func:`pipeline_main` (the flags of
:data:`PIPELINE_FLAGS` and ``--schedule S``). Each runs the very
program an MPI rank runs (:func:`distlib.train.worker.train_rank`, or a
pipeline stage's :func:`distlib.train.pipeline.train_stage_rank`: the
NumPy model, its layouts, the book's own collectives) over a different
communicator: :class:`~distlib.engines.torch_numpy.NumpyTorchComm`, which
moves the NumPy buffers the book's collectives send through
torch.distributed's point-to-point calls over gloo. A pipeline stage's
activations and gradients go the same way: ``torch.distributed.isend`` and
``irecv`` with the message's tag (:func:`distlib.train.stages.message_tag`),
counted by the same :class:`~distlib.engines.comm.CountingComm`. (gloo's
sends progress on its own thread, so the MPICH setting the MPI stages need,
:data:`distlib.train.pipeline_launch.PIPELINE_MPI_ENV`, has no gloo
counterpart.) So every layout on gloo reproduces one process as on MPI, and
sends the same bytes.

No torch *model* runs here: the model's torch twin
(:mod:`distlib.train.torch_model`) serves only the checks against
PyTorch's own FSDP2 and DTensor tensor parallelism
(:mod:`distlib.train.peers`).
"""

from __future__ import annotations

import argparse
import sys

from .worker import train_rank

__all__ = ["FLAGS", "PIPELINE_FLAGS", "main", "pipeline_main"]

FLAGS = ("dp", "tp", "zero", "steps", "seed", "sp")
"""The rank's flags, each an integer (checked by the launching side; ``sp`` 0 or 1)."""
PIPELINE_FLAGS = ("dp", "tp", "pp", "zero", "steps", "seed", "chunks", "microbatches", "sp")
"""A pipeline rank's integer flags (and ``--schedule``, a word), as :mod:`distlib.train.pipeline` takes them."""


def _flags(argv, names, prog, words=()) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog)
    for name in names:
        parser.add_argument(f"--{name}", type=int, required=True)
    for name in words:
        parser.add_argument(f"--{name}", required=True)
    return parser.parse_args(sys.argv[1:] if argv is None else argv)


def _say(comm):
    return (lambda text: print(text, file=sys.stderr, flush=True)) if comm.rank == 0 else None


def main(argv=None) -> None:
    """Entry point of one gloo rank: train, then hand back a :class:`~distlib.train.results.RankReport`."""
    from ..engines.report import emit
    from ..engines.torch_numpy import numpy_world

    ns = _flags(argv, FLAGS, "distlib.train.gloo")
    comm = numpy_world()
    emit(train_rank(comm, dp=ns.dp, tp=ns.tp, zero=ns.zero, steps=ns.steps, seed=ns.seed, sp=bool(ns.sp),
                    say=_say(comm)))  # fmt: skip


def pipeline_main(argv=None) -> None:
    """Entry point of one gloo pipeline rank: train as a stage, then hand back a
    :class:`~distlib.train.pipeline_results.StageReport`."""
    from ..engines.report import emit
    from ..engines.torch_numpy import numpy_world
    from .pipeline import train_stage_rank

    ns = _flags(argv, PIPELINE_FLAGS, "distlib.train.gloo:pipeline_main", words=("schedule",))
    comm = numpy_world()
    emit(train_stage_rank(comm, dp=ns.dp, tp=ns.tp, pp=ns.pp, zero=ns.zero, steps=ns.steps, seed=ns.seed,
                          schedule=ns.schedule, chunks=ns.chunks, microbatches=ns.microbatches, sp=bool(ns.sp),
                          say=_say(comm)))  # fmt: skip
