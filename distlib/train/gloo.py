"""One rank of the trainer on torch.distributed (gloo): ``--engine gloo``.

:func:`distlib.train.launch.train` starts ``D * T`` of these with
:func:`distlib.engines.run_torch` (target ``distlib.train.gloo:main``, the
flags ``--dp D --tp T --zero Z --steps K --seed S --sp 0|1``). Each runs the very
program an MPI rank runs (:func:`distlib.train.worker.train_rank`: the
NumPy model, its layouts, the book's own collectives) over a different
communicator: :class:`~distlib.engines.torch_numpy.NumpyTorchComm`, which
moves the NumPy buffers the book's collectives send through
torch.distributed's point-to-point calls over gloo. So every layout on
gloo reproduces one process as on MPI, and sends the same bytes.

No torch *model* runs here: the model's torch twin
(:mod:`distlib.train.torch_model`) serves only the checks against
PyTorch's own FSDP2 and DTensor tensor parallelism
(:mod:`distlib.train.peers`).
"""

from __future__ import annotations

import argparse
import sys

from .worker import train_rank

__all__ = ["FLAGS", "main"]

FLAGS = ("dp", "tp", "zero", "steps", "seed", "sp")
"""The rank's flags, each an integer (checked by the launching side; ``sp`` 0 or 1)."""


def main(argv=None) -> None:
    """Entry point of one gloo rank: train, then hand back a :class:`~distlib.train.results.RankReport`."""
    from ..engines.report import emit
    from ..engines.torch_numpy import numpy_world

    parser = argparse.ArgumentParser(prog="distlib.train.gloo")
    for name in FLAGS:
        parser.add_argument(f"--{name}", type=int, required=True)
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)
    comm = numpy_world()
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if comm.rank == 0 else None
    emit(train_rank(comm, dp=ns.dp, tp=ns.tp, zero=ns.zero, steps=ns.steps, seed=ns.seed, sp=bool(ns.sp), say=say))
