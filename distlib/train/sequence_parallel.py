"""Sequence parallelism's collectives: the tensor-parallel group's all-gather and reduce-scatter along the sequence.

:func:`distlib.train.model.forward_unit` and ``backward_unit`` take one of
these as ``sp`` and call its methods; the model itself imports no engine
(it sits on the model floor), so the object that runs the collectives lives
here, beside the launch side that builds it (:mod:`distlib.train.tensor_parallel`, for
the rank program :mod:`distlib.train.rank`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["SequenceParallel"]


class SequenceParallel:
    """The tensor-parallel group's collectives along the sequence, for :func:`forward_unit` with ``sp``.

    Activations are ``(batch, seq, hidden)``; a rank's part is positions
    ``rank * seq / size`` to ``(rank + 1) * seq / size`` of every sequence.
    The book's collectives cut a flat buffer into consecutive chunks, so the
    sequence is moved to the front first (``(seq, batch, hidden)``, the
    layout Megatron keeps its activations in for this reason).

    Parameters
    ----------
    comm : Comm
        The tensor-parallel group (:class:`~distlib.engines.comm.SubComm`).

    Examples
    --------
    >>> from distlib.engines.comm import run_threads
    >>> x = np.arange(2 * 4 * 3, dtype=float).reshape(2, 4, 3)
    >>> def round_trip(comm):
    ...     sp = SequenceParallel(comm)
    ...     part = sp.split(x)
    ...     return part.shape, np.array_equal(sp.gather(part), x), np.array_equal(sp.reduce_scatter(x), 2 * part)
    >>> run_threads(round_trip, 2)
    [((2, 2, 3), True, True), ((2, 2, 3), True, True)]
    """

    def __init__(self, comm, background=None):
        self.comm, self.rank, self.size = comm, comm.rank, comm.size
        self.start_reduce_scatter = None
        """With ``background=(thread, comm)`` (:mod:`distlib.train.overlap`'s ``tp``): ``start_reduce_scatter(x)``
        starts :meth:`reduce_scatter` on the thread, over the same group with tags of its own, and returns a
        callable that waits for it and returns this rank's part."""
        if background is not None:
            thread, bg_comm = background
            behind = SequenceParallel(bg_comm)

            def start(x):
                handle = thread.start(behind.reduce_scatter, x, what="reduce_scatter (tp)")
                return handle.wait

            self.start_reduce_scatter = start

    def positions(self, seq: int) -> slice:
        """This rank's positions of a sequence of ``seq`` tokens (``size`` must divide ``seq``)."""
        if seq % self.size:
            raise ValueError(f"the tensor-parallel ranks ({self.size}) must divide the sequence ({seq}) with sp")
        n = seq // self.size
        return slice(self.rank * n, (self.rank + 1) * n)

    def split(self, x):
        """This rank's positions of the whole ``x`` (no communication)."""
        return x[:, self.positions(x.shape[1])]

    def gather(self, part):
        """All-gather along the sequence: every rank's positions, the whole ``(batch, seq, hidden)``."""
        from ..engines.algorithms import allgather

        b, n, w = part.shape
        whole = allgather(self.comm, np.ascontiguousarray(part.transpose(1, 0, 2)))
        return np.ascontiguousarray(whole.reshape(n * self.size, b, w).transpose(1, 0, 2))

    def reduce_scatter(self, x):
        """Reduce-scatter along the sequence: the sum over the ranks of ``x``, this rank's positions only."""
        from ..engines.algorithms import reduce_scatter

        b, s, w = x.shape
        self.positions(s)
        mine = reduce_scatter(self.comm, np.ascontiguousarray(x.transpose(1, 0, 2)))
        return np.ascontiguousarray(mine.reshape(s // self.size, b, w).transpose(1, 0, 2))

    def allreduce(self, buf):
        """Sum ``buf`` in place over the group (the replicated tensors' gradients)."""
        from ..engines.algorithms import allreduce

        return allreduce(self.comm, buf)
