"""The ring all-reduce, simulated step by step on real arrays.

Chapter 1 ("The ring that averages the world") teaches this module. Rank ``r``
holds row ``r`` of a ``(p, n)`` array. The buffer is cut into ``p`` chunks
(uneven when ``p`` does not divide ``n``, empty when ``n < p``). In each of the
``p - 1`` reduce-scatter steps every rank sends one chunk to its right-hand
neighbour, which adds it to its own copy of that chunk. After them, rank ``r``
owns the full sum of chunk ``(r + 1) % p``. In each of the ``p - 1``
all-gather steps every rank forwards a finished chunk, which the neighbour
stores. Every step is recorded, so the animation and the tests read the same
trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ._check import check_array, check_choice, check_int, check_real

__all__ = [
    "Transfer",
    "Step",
    "RingTrace",
    "chunk_bounds",
    "simulate_ring_allreduce",
    "ring_bytes_per_rank",
]

REDUCE_SCATTER = "reduce-scatter"
ALL_GATHER = "all-gather"


class Transfer(NamedTuple):
    """One chunk crossing one ring link during one step."""

    src: int
    dst: int
    chunk: int
    phase: str
    n_bytes: int
    step: int


class Step(Sequence):
    """The ``p`` transfers of one ring step, one per link, built on access.

    Behaves as a read-only list of :class:`Transfer` (indexing, slicing,
    iteration, ``len``). Transfers are made when asked for, so recording the
    2(p-1) steps of a 1024-rank ring costs two small arrays per step, not
    two million objects.
    """

    __slots__ = ("index", "phase", "_chunks", "_chunk_bytes")

    def __init__(self, index: int, phase: str, chunks: np.ndarray, chunk_bytes: np.ndarray):
        self.index = index
        self.phase = phase
        self._chunks = chunks
        self._chunk_bytes = chunk_bytes

    def __len__(self) -> int:
        return len(self._chunks)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        p = len(self._chunks)
        if not -p <= i < p:
            raise IndexError("step has only p transfers")
        src = i % p
        c = int(self._chunks[src])
        return Transfer(src, (src + 1) % p, c, self.phase, int(self._chunk_bytes[c]), self.index)

    def __eq__(self, other):
        return list(self) == list(other) if isinstance(other, (Step, list)) else NotImplemented

    def __repr__(self) -> str:
        return f"Step({self.index}, {self.phase!r}, {list(self)!r})"


def chunk_bounds(n: int, p: int) -> np.ndarray:
    """Start offsets of the ``p`` chunks of an ``n``-element buffer, plus ``n``.

    The first ``n % p`` chunks get one element more than the rest, as
    ``numpy.array_split`` does, so chunk sizes differ by at most one.

    Examples
    --------
    >>> chunk_bounds(10, 4).tolist()
    [0, 3, 6, 8, 10]
    >>> chunk_bounds(2, 4).tolist()   # fewer elements than ranks: empty chunks
    [0, 1, 2, 2, 2]
    """
    n = check_int("n", n, minimum=0)
    p = check_int("p", p, minimum=1)
    sizes = np.full(p, n // p, dtype=np.int64)
    sizes[: n % p] += 1
    return np.concatenate([[0], np.cumsum(sizes)])


@dataclass
class RingTrace:
    """What a simulated ring all-reduce did.

    Attributes
    ----------
    result : ndarray, shape (p, n)
        Each rank's buffer after the all-reduce.
    steps : list of Step
        ``2 * (p - 1)`` steps; step ``s`` lists the ``p`` transfers that
        happen at once (one per ring link), as a read-only list of
        :class:`Transfer`.
    bytes_sent : ndarray, shape (p,)
        Bytes each rank sent in total.
    bounds : ndarray, shape (p + 1,)
        Chunk boundaries (see :func:`chunk_bounds`).
    """

    result: np.ndarray
    steps: list
    bytes_sent: np.ndarray
    bounds: np.ndarray

    @property
    def p(self) -> int:
        return len(self.bytes_sent)

    def holdings(self, step: int) -> np.ndarray:
        """Which ranks' data each rank holds in each chunk after ``step`` steps.

        Returns a boolean array ``h`` of shape ``(p, p, p)``:
        ``h[r, c, q]`` is True when rank ``r``'s copy of chunk ``c`` already
        includes rank ``q``'s contribution. ``step=0`` is the start (each rank
        holds only itself); ``step=2 * (p - 1)`` is the end (all True).
        Meant for drawing small rings (it replays the schedule).

        Examples
        --------
        >>> t = simulate_ring_allreduce(np.ones((3, 3)))
        >>> int(t.holdings(2).sum(axis=2).max())   # after reduce-scatter
        3
        >>> bool(t.holdings(4).all())
        True
        """
        step = check_int("step", step, minimum=0, maximum=len(self.steps))
        return self.holdings_each_step()[step]

    def holdings_each_step(self) -> np.ndarray:
        """:meth:`holdings` after every step at once, shape ``(2 (p - 1) + 1, p, p, p)``.

        One replay of the schedule; the animation reads its frames from it.
        """
        p = self.p
        held = np.zeros((p, p, p), dtype=bool)
        for r in range(p):
            held[r, :, r] = True
        frames = [held.copy()]
        for transfers in self.steps:
            sent = [(t, held[t.src, t.chunk].copy()) for t in transfers]
            for t, data in sent:
                if t.phase == REDUCE_SCATTER:
                    held[t.dst, t.chunk] |= data
                else:
                    held[t.dst, t.chunk] = data
            frames.append(held.copy())
        return np.stack(frames)


def simulate_ring_allreduce(buffers, *, op: str = "sum") -> RingTrace:
    """Run the two-phase ring all-reduce on ``buffers`` and record every step.

    Parameters
    ----------
    buffers : array_like, shape (p, n)
        Row ``r`` is rank ``r``'s buffer. Any ``p >= 1`` and ``n >= 0``.
    op : {"sum", "mean"}
        ``"mean"`` divides the sum by ``p`` at the end, as data-parallel
        training does with gradients.

    Returns
    -------
    RingTrace
        ``result`` (each rank's buffer afterwards), ``steps`` (the
        ``2 * (p - 1)`` steps of transfers) and ``bytes_sent`` per rank.

    Raises
    ------
    ValueError
        If ``buffers`` is not 2-D or has no rows.
    TypeError
        If ``buffers`` is not numeric.

    Examples
    --------
    Four ranks each holding their rank number; the sum is 0+1+2+3 = 6:

    >>> x = np.arange(4.0).repeat(8).reshape(4, 8)
    >>> t = simulate_ring_allreduce(x)
    >>> t.result[:, 0].tolist()
    [6.0, 6.0, 6.0, 6.0]
    >>> len(t.steps)            # 2 * (p - 1)
    6

    Each rank sends ``2 * (p - 1) / p`` of its 64-byte buffer:

    >>> t.bytes_sent.tolist()
    [96, 96, 96, 96]
    >>> ring_bytes_per_rank(64, 4)
    96.0
    """
    arr = check_array("buffers", buffers)
    if arr.ndim != 2:
        raise ValueError(f"buffers must be a 2-D array of shape (p, n), one row per rank; got shape {arr.shape}")
    p, n = arr.shape
    if p < 1:
        raise ValueError("buffers must have at least one row (p >= 1 ranks); got 0 rows")
    check_choice("op", op, ["sum", "mean"])

    bounds = chunk_bounds(n, p)
    state = _to_chunks(arr, bounds)
    steps, bytes_sent = _run_ring(state, np.diff(bounds) * arr.dtype.itemsize)
    result = _from_chunks(state, arr, bounds)
    if op == "mean":
        result = result / p
    return RingTrace(result=result, steps=steps, bytes_sent=bytes_sent, bounds=bounds)


def _to_chunks(arr: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """A padded ``(rank, chunk, element)`` copy of the buffers, so each step moves all ``p`` chunks
    with one fancy-indexed NumPy operation; padding stays zero."""
    p, n = arr.shape
    sizes = np.diff(bounds)
    width = int(sizes.max()) if p else 0
    if n % p == 0:  # the padded layout is the row layout: one copy, no padding
        return arr.reshape(p, p, width).copy()
    state = np.zeros((p, p, width), dtype=arr.dtype)
    for c in range(p):
        state[:, c, : sizes[c]] = arr[:, bounds[c] : bounds[c + 1]]
    return state


def _run_ring(state: np.ndarray, chunk_bytes: np.ndarray) -> tuple:
    """The ``2 (p - 1)`` steps in place on ``state``: ``p - 1`` of reduce-scatter, then ``p - 1`` of all-gather.

    Returns the steps and the bytes each rank sent.
    """
    p = state.shape[0]
    ranks = np.arange(p)
    right = (ranks + 1) % p
    steps: list[Step] = []
    bytes_sent = np.zeros(p, dtype=np.int64)
    for s in range(2 * (p - 1)):
        if s < p - 1:
            phase = REDUCE_SCATTER
            chunks = (ranks - s) % p
            incoming = state[ranks, chunks]  # copies: every rank sends at once
            state[right, chunks] += incoming
        else:
            phase = ALL_GATHER
            chunks = (ranks + 1 - (s - (p - 1))) % p
            state[right, chunks] = state[ranks, chunks]
        steps.append(Step(s, phase, chunks, chunk_bytes))
        bytes_sent += chunk_bytes[chunks]
    return steps, bytes_sent


def _from_chunks(state: np.ndarray, arr: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Each rank's buffer back in row layout, padding dropped (the inverse of :func:`_to_chunks`)."""
    p, n = arr.shape
    if n % p == 0:
        return state.reshape(p, n)
    sizes = np.diff(bounds)
    result = np.empty_like(arr)
    for c in range(p):
        result[:, bounds[c] : bounds[c + 1]] = state[:, c, : sizes[c]]
    return result


def ring_bytes_per_rank(n_bytes, p) -> float:
    """Bytes each rank sends in a ring all-reduce of an ``n_bytes`` buffer.

    ``2 * (p - 1) / p * n_bytes``: ``p - 1`` reduce-scatter steps and
    ``p - 1`` all-gather steps, each moving one ``1/p`` chunk. It grows
    with ``p`` toward ``2 * n_bytes`` and never exceeds it. (When ``p``
    does not divide the buffer, ranks differ by at most a few elements.)

    Examples
    --------
    >>> ring_bytes_per_rank(1000, 8)
    1750.0
    >>> ring_bytes_per_rank(1000, 1)   # one rank: nothing to send
    0.0
    """
    n_bytes = check_real("n_bytes", n_bytes, minimum=0)
    p = check_int("p", p, minimum=1)
    return 2.0 * (p - 1) / p * n_bytes
