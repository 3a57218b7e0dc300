"""The book's tiny real trainer: one small transformer, trained with each parallel layout on real ranks.

::

    python -m distlib.train --dp D --tp T --pp P --zero Z [--sp] [--schedule gpipe|1f1b|interleaved] [--chunks V]
        [--microbatches M] --steps K --seed S --engine mpi --json

starts ``D * T * P`` ranks itself (MPI; ``--engine gloo``: torch.distributed
ranks over gloo, running the same NumPy program) and prints one JSON object: ``losses``
(one per step), ``param_checksum`` (the float64 sum of every parameter
after the last step), ``state_bytes`` and ``comm_bytes`` (one per rank:
parameter + gradient + optimizer-state bytes held at peak, bytes sent) and
``step_seconds`` (one per step, the slowest rank's). Every layout
reproduces one process (``--dp 1 --tp 1 --zero 0``) to rounding; a
pipeline reproduces one process accumulating the same microbatches in the
same order (:func:`~distlib.train.microbatches.accumulate_run`), and also
reports each stage's idle and busy seconds. ``--sp`` adds sequence
parallelism (Megatron-LM's) to the tensor-parallel ranks, in the plain
layouts and inside pipeline stages (:mod:`~distlib.train.model` says where
its all-gathers and reduce-scatters go).

Parts, one concept each:

* :mod:`~distlib.train.model` -- the model (float64 NumPy, backward pass by
  hand), its units and how tensor parallelism splits them;
* :mod:`~distlib.train.data` -- the synthetic token stream, from a seed;
* :mod:`~distlib.train.adam` -- Adam, element-wise, so shards update alone;
* :mod:`~distlib.train.layout` -- DDP and ZeRO-1/2/3 over the book's
  collectives, and what each rank holds and sends;
* :mod:`~distlib.train.worker` -- one rank's program;
* :mod:`~distlib.train.gloo` -- the same program as a torch.distributed rank (gloo);
* :mod:`~distlib.train.torch_model` -- the model's twin as a ``torch.nn.Module`` (float64), for
  PyTorch's own tools;
* :mod:`~distlib.train.peers` -- the book's ZeRO-3 beside FSDP2, its tensor (and sequence)
  parallelism beside DTensor's, on the same ranks;
* :mod:`~distlib.train.microbatches` -- a batch as microbatches, and one
  process accumulating them (what a pipeline reproduces);
* :mod:`~distlib.train.stages` -- which units each pipeline stage holds,
  and its op order, read off :func:`distlib.pipeline_schedule`;
* :mod:`~distlib.train.pipeline` -- one pipeline rank's program (DP x PP x TP);
* :mod:`~distlib.train.pipeline_results` and
  :mod:`~distlib.train.pipeline_launch` -- a pipeline's typed reports and
  result, and starting its ranks;
* :mod:`~distlib.train.results` -- the ranks' typed reports and the run's result;
* :mod:`~distlib.train.launch` -- the flags' bounds and :func:`train`, which starts the ranks;
* :mod:`~distlib.train.__main__` -- the command line.

Pipelines (``--pp`` above 1) run on MPI only: ``--engine gloo`` with
``--pp`` above 1 says so and starts nothing.
"""

from .launch import train
from .results import RankReport, TrainResult

__all__ = ["train", "TrainResult", "RankReport"]
