"""Timing collectives on real engines, and the memory-copy reference.

Measurements follow nccl-tests' conventions: the time of one all-reduce of
an ``n_bytes`` buffer per rank; ``algbw = n_bytes / time``; ``busbw`` is
``algbw`` times ``2 (p - 1) / p``, the fraction of the buffer each rank
must send in any all-reduce, which makes it comparable with a link's
bandwidth (:func:`distlib.bus_bandwidth`).

Every sample is the slowest rank's time (a collective ends when its last
rank ends), and a sample batches enough back-to-back calls to last at least
``min_sample`` seconds, so that tiny messages are not lost in the timer's
and the barrier's noise. The result is the median over samples.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from .._check import check_choice, check_int, check_real
from .algorithms import allreduce
from .comm import Comm
from .progress import note

__all__ = ["memcpy_bandwidth", "AllreduceTiming", "time_allreduce", "compare_allreduce", "pattern", "expected_sum", "count_wrong", "DTYPES",
           "AlltoallTiming", "expected_alltoall", "compare_alltoall", "paired_ratio"]

DTYPES = ("float32", "float64", "int32")


def memcpy_bandwidth(n_bytes: int = 128 * 2**20, *, repeats: int = 7) -> float:
    """Median rate, in bytes/s, at which NumPy copies one large buffer into another.

    This is the physical reference for every transfer between processes on
    one machine: shared-memory MPI and gloo over loopback both end up
    copying bytes through the same memory system. Each byte copied is read
    once and written once, so the memory itself moves twice this many bytes
    per second.

    Parameters
    ----------
    n_bytes : int
        Buffer size; pick it well above the last-level cache (default
        128 MiB).
    repeats : int
        Number of timed copies (the first, which faults the pages in, is
        not timed).

    Examples
    --------
    >>> memcpy_bandwidth(2**20, repeats=3) > 1e8   # any machine copies > 100 MB/s
    True
    """
    n_bytes = check_int("n_bytes", n_bytes, minimum=8)
    repeats = check_int("repeats", repeats, minimum=1)
    src = np.ones(n_bytes // 8, dtype=np.float64)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t0)
    return src.nbytes / float(np.median(times))


_PERIOD = 97
_BLOCK = 1 << 20


def pattern(count: int, rank: int, dtype: str = "float32") -> np.ndarray:
    """The test data: ``x[i] = i % 97 + rank``. Small integers, so every sum is exact.

    >>> pattern(5, 2, "int32").tolist()
    [2, 3, 4, 5, 6]
    """
    count = check_int("count", count, minimum=0)
    period = np.arange(_PERIOD, dtype=dtype) + np.asarray(rank, dtype=dtype)
    return np.resize(period, count)  # tiles the period without an index array


def expected_sum(count: int, p: int, dtype: str = "float32") -> np.ndarray:
    """What an all-reduce (sum) of :func:`pattern` over ``p`` ranks must give.

    >>> expected_sum(3, 4, "int32").tolist()     # 4 * i + (0 + 1 + 2 + 3)
    [6, 10, 14]
    """
    count = check_int("count", count, minimum=0)
    period = p * np.arange(_PERIOD, dtype=np.int64) + p * (p - 1) // 2
    return np.resize(period.astype(dtype), count)


def count_wrong(got: np.ndarray, p: int, dtype: str = "float32") -> int:
    """Elements of an all-reduce result that differ from :func:`expected_sum` (checked in blocks)."""
    got = np.asarray(got).reshape(-1)
    want = expected_sum(min(len(got), _BLOCK + _PERIOD), p, dtype)
    wrong = 0
    for start in range(0, len(got), _BLOCK):
        block = got[start : start + _BLOCK]
        offset = start % _PERIOD
        wrong += int(np.count_nonzero(block != want[offset : offset + len(block)]))
    return wrong


@dataclass
class AllreduceTiming:
    """One row of the benchmark table.

    Attributes
    ----------
    n_bytes, count, dtype, algorithm, p
        What was timed.
    seconds : float
        Median time of one all-reduce (slowest rank).
    samples : ndarray
        Every sample (seconds per call, slowest rank).
    batch : int
        Calls per sample.
    wrong : int or None
        Elements that differed from the exact result (``None`` if not checked).
    """

    n_bytes: int
    count: int
    dtype: str
    algorithm: str
    p: int
    seconds: float
    samples: np.ndarray
    batch: int
    wrong: int | None

    @property
    def algbw(self) -> float:
        """``n_bytes / seconds`` (bytes/s)."""
        return self.n_bytes / self.seconds if self.seconds > 0 else math.inf

    @property
    def busbw(self) -> float:
        """nccl-tests bus bandwidth, ``algbw * 2 (p - 1) / p`` (bytes/s)."""
        from ..collectives import bus_bandwidth

        return bus_bandwidth("allreduce", self.n_bytes, self.p, self.seconds)


def time_allreduce(
    comm,
    count: int,
    *,
    dtype: str = "float32",
    algorithm: str = "ring",
    iters: int = 20,
    warmup: int = 3,
    check: bool = True,
    min_sample: float = 2e-4,
) -> AllreduceTiming:
    """Time an all-reduce of ``count`` elements per rank; every rank must call it.

    Parameters
    ----------
    comm : Comm
    count : int
        Elements per rank.
    dtype : {"float32", "float64", "int32"}
    algorithm : str
        Any algorithm :func:`distlib.engines.allreduce` accepts.
    iters : int
        Timed samples; the median is reported.
    warmup : int
        Untimed calls first.
    check : bool
        Check the first call's result against the exact sum and count the
        wrong elements. (The timed calls then run on zeros, so that
        thousands of in-place sums cannot overflow.)
    min_sample : float
        Seconds a sample should last at least (calls are batched).

    Returns
    -------
    AllreduceTiming
        The same on every rank.
    """
    return compare_allreduce(
        comm, count, [algorithm], dtype=dtype, iters=iters, warmup=warmup, check=check, min_sample=min_sample
    )[algorithm]


def _checked_comparison(comm, count, dtype, iters, warmup, min_sample, algorithms, choices=None) -> tuple:
    """The arguments every ``compare_*`` shares, checked in order; each algorithm among ``choices`` if given."""
    if not isinstance(comm, Comm):
        raise TypeError(f"comm must be a distlib.engines Comm, got {type(comm).__name__}")
    checked = (check_int("count", count, minimum=0), check_choice("dtype", dtype, DTYPES),
               check_int("iters", iters, minimum=1), check_int("warmup", warmup, minimum=0),
               check_real("min_sample", min_sample, minimum=0))
    algorithms = [a if choices is None else check_choice("algorithms[i]", a, choices) for a in algorithms]
    if not algorithms:
        raise ValueError("algorithms must name at least one algorithm")
    return (*checked, algorithms)


def compare_allreduce(
    comm,
    count: int,
    algorithms,
    *,
    dtype: str = "float32",
    iters: int = 20,
    warmup: int = 3,
    check: bool = True,
    min_sample: float = 2e-4,
) -> dict:
    """Time several all-reduce algorithms on the same buffer, interleaved.

    Sample ``k`` times every algorithm once, one after the other, so a busy
    moment on a shared machine slows all of them alike and their ratios
    stay fair. Arguments as :func:`time_allreduce`.

    Returns
    -------
    dict
        Algorithm name -> :class:`AllreduceTiming`.
    """
    count, dtype, iters, warmup, min_sample, algorithms = _checked_comparison(
        comm, count, dtype, iters, warmup, min_sample, algorithms)
    p = comm.size
    data = pattern(count, comm.rank, dtype)
    buf = comm.from_numpy(data)
    doing = {name: f"allreduce ({name}) of {count * np.dtype(dtype).itemsize} bytes" for name in algorithms}
    wrong = _check_each(comm, buf, data, algorithms, doing, dtype=dtype, check=check)
    # Time on zeros: an in-place sum repeated thousands of times would grow
    # the pattern to overflow; 0 + 0 costs the same as any other addition.
    buf[...] = 0
    batch = _batch_sizes(comm, buf, algorithms, doing, warmup=warmup, min_sample=min_sample)
    samples = _interleaved_samples(comm, buf, algorithms, doing, batch, iters=iters)
    return {
        name: AllreduceTiming(
            n_bytes=count * np.dtype(dtype).itemsize,
            count=count,
            dtype=dtype,
            algorithm=name,
            p=p,
            seconds=float(np.median(samples[j])),
            samples=samples[j],
            batch=batch[name],
            wrong=wrong[name],
        )
        for j, name in enumerate(algorithms)
    }


def _check_each(comm, buf, data, algorithms, doing, *, dtype, check) -> dict:
    """Run each algorithm once on a fresh copy of the pattern: ``name -> wrong elements`` (None unchecked)."""
    wrong = dict.fromkeys(algorithms)
    for j, name in enumerate(algorithms):
        note(doing[name])
        if check:
            if j:
                buf[...] = comm.from_numpy(data)  # a fresh copy of the pattern
            allreduce(comm, buf, algorithm=name)
            wrong[name] = count_wrong(comm.to_numpy(buf), comm.size, dtype)
    return wrong


def _batch_sizes(comm, buf, algorithms, doing, *, warmup, min_sample) -> dict:
    """Warm each algorithm up, time one call, and choose ``name -> calls per sample`` (enough to last
    ``min_sample`` seconds; rank 0 decides for all)."""
    batch = {}
    for name in algorithms:
        note(doing[name])
        for _ in range(warmup):
            allreduce(comm, buf, algorithm=name)
        comm.barrier()
        comm.synchronize()
        t0 = comm.wtime()
        allreduce(comm, buf, algorithm=name)
        comm.synchronize()
        estimate = comm.wtime() - t0
        batch[name] = int(comm.bcast_object(int(min(1000, max(1, math.ceil(min_sample / max(estimate, 1e-7)))))))
    return batch


def paired_ratio(mine, reference) -> float | None:
    """One algorithm's time over another's, sample by sample: the median of the ratios of their samples.

    Sample ``k`` of :func:`compare_allreduce` (or :func:`compare_alltoall`) ran every algorithm back to back,
    so a busy moment on a shared machine slows both alike and cancels in the ratio; a ratio of the two
    medians, taken from different samples, would not cancel it. ``None`` when the samples do not pair (other
    counts, none, or a reference time that is not positive).

    >>> paired_ratio([2.0, 4.0, 3.0], [1.0, 4.0, 2.0])
    1.5
    """
    mine, reference = np.asarray(mine, float), np.asarray(reference, float)
    if len(mine) != len(reference) or not len(mine) or not np.all(reference > 0):
        return None
    return float(np.median(mine / reference))


def _interleaved_samples(comm, buf, algorithms, doing, batch, *, iters) -> np.ndarray:
    """Seconds per call, ``(algorithm, sample)``: sample ``k`` runs every algorithm once, one after the
    other; each sample is the slowest rank's (a collective ends when its last rank does)."""
    samples = np.empty((len(algorithms), iters))
    for k in range(iters):
        for j, name in enumerate(algorithms):
            note(doing[name])
            comm.barrier()
            comm.synchronize()
            t0 = comm.wtime()
            for _ in range(batch[name]):
                allreduce(comm, buf, algorithm=name)
            comm.synchronize()
            samples[j, k] = (comm.wtime() - t0) / batch[name]
    slowest = comm.from_numpy(samples.ravel())
    comm.allreduce(slowest, op="max")
    return comm.to_numpy(slowest).astype(float).reshape(len(algorithms), iters)


# ----------------------------------------------------------------------------
# The all-to-all (chapter 15), timed the same way
# ----------------------------------------------------------------------------


@dataclass
class AlltoallTiming:
    """One all-to-all algorithm at one size: the median ``seconds`` (slowest rank), every sample,
    the calls per sample, and the elements off the NumPy answer (``None`` if not checked)."""

    n_bytes: int
    count: int
    dtype: str
    algorithm: str
    p: int
    seconds: float
    samples: np.ndarray
    batch: int
    wrong: int | None


def expected_alltoall(count: int, rank: int, p: int, dtype: str = "float32") -> np.ndarray:
    """What rank ``rank`` must receive when each rank ``s`` sends its :func:`pattern` of ``count`` elements
    through an all-to-all (blocks cut as :func:`distlib.chunk_bounds` cuts them).

    >>> expected_alltoall(5, 1, 2, "int32").tolist()     # elements 3, 4 of ranks 0 and 1
    [3, 4, 4, 5]
    """
    count = check_int("count", count, minimum=0)
    q, extra = divmod(count, p)
    start = rank * q + min(rank, extra)
    stop = start + q + (1 if rank < extra else 0)
    base = np.arange(start, stop, dtype=np.int64) % _PERIOD
    return np.concatenate([(base + s).astype(dtype) for s in range(p)]) if p else np.zeros(0, dtype)


def compare_alltoall(comm, count: int, algorithms, *, dtype: str = "float32", iters: int = 20, warmup: int = 3,
                     check: bool = True, min_sample: float = 2e-4) -> dict:  # fmt: skip
    """Time several all-to-all algorithms (:func:`distlib.engines.alltoall.alltoall`) on the same buffer, interleaved.

    ``count`` elements per rank in all (``p`` blocks). As :func:`compare_allreduce`:
    each sample runs every algorithm once, one after the other, batched to
    last ``min_sample`` seconds; the median of the slowest rank's samples.

    Returns
    -------
    dict
        Algorithm name -> :class:`AlltoallTiming`.
    """
    from .alltoall import ENGINE_ALLTOALL_ALGORITHMS, alltoall

    count, dtype, iters, warmup, min_sample, algorithms = _checked_comparison(
        comm, count, dtype, iters, warmup, min_sample, algorithms, ENGINE_ALLTOALL_ALGORITHMS)
    p, n_bytes = comm.size, count * np.dtype(dtype).itemsize
    buf = comm.from_numpy(pattern(count, comm.rank, dtype))
    doing = {name: f"alltoall ({name}) of {n_bytes} bytes" for name in algorithms}
    wrong = dict.fromkeys(algorithms)
    if check:
        want = expected_alltoall(count, comm.rank, p, dtype)
        for name in algorithms:
            note(doing[name])
            got = np.asarray(comm.to_numpy(alltoall(comm, buf, algorithm=name)))
            wrong[name] = int(np.count_nonzero(got != want)) if got.shape == want.shape else len(want)
    batch = {}
    for name in algorithms:
        note(doing[name])
        for _ in range(warmup):
            alltoall(comm, buf, algorithm=name)
        comm.barrier()
        comm.synchronize()
        t0 = comm.wtime()
        alltoall(comm, buf, algorithm=name)
        comm.synchronize()
        estimate = comm.wtime() - t0
        batch[name] = int(comm.bcast_object(int(min(1000, max(1, math.ceil(min_sample / max(estimate, 1e-7)))))))
    samples = np.empty((len(algorithms), iters))
    for k in range(iters):
        for j, name in enumerate(algorithms):
            note(doing[name])
            comm.barrier()
            comm.synchronize()
            t0 = comm.wtime()
            for _ in range(batch[name]):
                alltoall(comm, buf, algorithm=name)
            comm.synchronize()
            samples[j, k] = (comm.wtime() - t0) / batch[name]
    slowest = comm.from_numpy(samples.ravel())
    comm.allreduce(slowest, op="max")
    samples = comm.to_numpy(slowest).astype(float).reshape(len(algorithms), iters)
    return {name: AlltoallTiming(n_bytes, count, dtype, name, p, float(np.median(samples[j])), samples[j], batch[name],
                                 wrong[name]) for j, name in enumerate(algorithms)}  # fmt: skip
