"""Tensor parallelism in the trainer: the sums over the tensor-parallel group that the model asks for.

The model (:mod:`distlib.train.model`) holds each rank's part of every unit
(Megatron's column-then-row cut) and calls back where it needs the group:

* plain tensor parallelism: a ``reduce`` callable, an all-reduce in place,
  twice per block forward (after ``wo`` and ``w2``) and twice backward (the
  gradient of ``q, k, v`` together, and of ``w1``);
* with sequence parallelism (``sequence_parallel``): a
  :class:`~distlib.train.sequence_parallel.SequenceParallel` instead, whose
  all-gathers and reduce-scatters along the sequence replace those
  all-reduces.

:func:`tensor_parallel` builds whichever the layout asks for, over the
group :meth:`distlib.layout.Layout.groups` names; the model itself imports
no engine.
"""

from __future__ import annotations

from ..engines.algorithms import allreduce
from .sequence_parallel import SequenceParallel

__all__ = ["TPSum", "tensor_parallel"]


class TPSum:
    """The tensor-parallel sum: ``reduce(buf)`` sums ``buf`` in place over the group; with a background channel
    (:mod:`distlib.train.overlap`'s ``tp``) also ``reduce.start(buf)``, the same sum on the background thread,
    whose handle the backward pass waits for after the weight gradient's matmul."""

    def __init__(self, comm, background=None):
        self.comm = comm
        self.start = None
        if background is not None:
            thread, bg_comm = background
            self.start = lambda buf: thread.start(allreduce, bg_comm, buf, what="allreduce (tp)")

    def __call__(self, buf):
        return allreduce(self.comm, buf)


def tensor_parallel(tp_comm, *, sequence_parallel: bool, background=None) -> tuple:
    """``(reduce, sp)`` for :func:`~distlib.train.model.forward_unit` over the tensor-parallel group ``tp_comm``.

    One rank: ``(None, None)``, the model runs whole. Otherwise ``reduce`` sums a buffer in place over the
    group (a :class:`TPSum`; ``None`` with sequence parallelism) and ``sp`` is a
    :class:`~distlib.train.sequence_parallel.SequenceParallel` (``None`` without). With
    ``background=(thread, comm)`` (``comm`` the same group over a
    :class:`~distlib.engines.tagged.TaggedComm`) the backward pass's sums can run under its weight gradients.

    >>> from distlib.engines.comm import run_threads
    >>> import numpy as np
    >>> def summed(comm):
    ...     reduce, sp = tensor_parallel(comm, sequence_parallel=False)
    ...     buf = np.ones(3) * (comm.rank + 1)
    ...     reduce(buf)
    ...     return buf.tolist(), sp
    >>> run_threads(summed, 2)
    [([3.0, 3.0, 3.0], None), ([3.0, 3.0, 3.0], None)]
    """
    if tp_comm.size == 1:
        return None, None
    if sequence_parallel:
        return None, SequenceParallel(tp_comm, background)
    return TPSum(tp_comm, background), None
