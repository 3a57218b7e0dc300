"""The book's tiny real trainer: one small transformer, trained with each parallel layout on real ranks.

::

    python -m distlib.train --dp D --tp T --pp P --zero Z [--sp] [--schedule gpipe|1f1b|interleaved] [--chunks V]
        [--microbatches M] --steps K --seed S --engine mpi --json

starts the layout's ranks itself (MPI; ``--engine gloo``: torch.distributed
ranks over gloo, running the same NumPy program) and prints one JSON object:
``losses`` (one per step), ``param_checksum`` (the float64 sum of every
parameter after the last step), ``state_bytes`` and ``comm_bytes`` (one per
rank: parameter + gradient + optimizer-state bytes held at peak, bytes
sent) and ``step_seconds`` (one per step, the slowest rank's). Every layout
reproduces one process (``--dp 1 --tp 1 --zero 0``) to rounding; a
pipeline reproduces one process accumulating the same microbatches in the
same order (:func:`~distlib.train.microbatches.accumulate_run`), and also
reports each stage's idle and busy seconds.

The layout is one value, :class:`distlib.layout.Layout`: the command line
parses it once, every rank parses the same flags, and each rank reads its
place and groups off its grid. One rank program runs every layout on both
engines; each parallelism is one module of it. Parts, one concept each:

* :mod:`~distlib.train.model` -- the model (float64 NumPy, backward pass by
  hand), its units and how tensor parallelism splits them;
* :mod:`~distlib.train.data` -- the synthetic token stream, from a seed;
* :mod:`~distlib.train.adam` -- Adam, element-wise, so shards update alone;
* :mod:`~distlib.train.data_parallel` -- DDP and ZeRO-1/2/3 over the book's
  collectives, and what each rank holds and sends;
* :mod:`~distlib.train.tensor_parallel` and
  :mod:`~distlib.train.sequence_parallel` -- the model's sums over the
  tensor-parallel group, or sequence parallelism's all-gathers and
  reduce-scatters;
* :mod:`~distlib.train.pipeline_parallel` -- which units each stage holds,
  its op order (read off :func:`distlib.pipeline_schedule`) and the stage
  itself; with one stage and one microbatch, the plain step;
* :mod:`~distlib.train.microbatches` -- a batch as microbatches, and one
  process accumulating them (what a pipeline reproduces);
* :mod:`~distlib.train.context_parallel` -- each rank's zig-zag positions and
  the attention over the context-parallel group (ring, all-gather, Ulysses);
  :mod:`~distlib.train.ring_overlap` measures the ring's overlap across the
  mini cluster;
* :mod:`~distlib.train.experts` -- the mixture-of-experts MLP (``--experts E --top-k K
  [--capacity-factor F]``): the router, Mixtral's gates, GShard's capacity order;
  :mod:`~distlib.train.expert_parallel` -- the experts split over ``--ep`` ranks, two
  all-to-alls a block each way, their gradients over the ranks holding the same experts;
* :mod:`~distlib.train.rank` -- the one rank program, MPI's and gloo's;
* :mod:`~distlib.train.results` -- the ranks' typed reports and the run's result;
* :mod:`~distlib.train.launch` -- the flags' bounds and :func:`train`, which starts the ranks;
* :mod:`~distlib.train.__main__` -- the command line;
* :mod:`~distlib.train.torch_model` -- the model's twin as a ``torch.nn.Module`` (float64), for
  PyTorch's own tools;
* :mod:`~distlib.train.peers` -- the book's ZeRO-3 beside FSDP2, its tensor (and sequence)
  parallelism beside DTensor's, its pipelines beside ``torch.distributed.pipelining``, on the same ranks.

A new parallelism arrives as one module beside these and one field of
:class:`~distlib.layout.Layout` (CONTRIBUTING.md, "A new parallelism of the trainer").
"""

from .launch import train
from .results import RankReport, TrainResult

__all__ = ["train", "TrainResult", "RankReport"]
