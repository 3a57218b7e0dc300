"""nccl-tests' figures of merit: algorithm bandwidth and bus bandwidth.

``algbw = n_bytes / seconds``; ``busbw`` multiplies it by a factor per
collective (``2 (p-1)/p`` for all-reduce) so that it reads as the rate each
rank's link must sustain, comparable across ``p`` (nccl-tests
``doc/PERFORMANCE.md``). Re-exported by :mod:`distlib.collectives`.
"""

from __future__ import annotations

import numpy as np

from .._check import check_array, check_choice, check_int, check_real
from .costs import _n_bytes
from .names import BUS_FACTOR_COLLECTIVES, _canon

__all__ = ["bus_factor", "algorithm_bandwidth", "bus_bandwidth"]


def bus_factor(collective, p) -> float:
    """nccl-tests' correction from algorithm bandwidth to bus bandwidth.

    From nccl-tests ``doc/PERFORMANCE.md``: all-reduce ``2 (p-1)/p``;
    reduce-scatter, all-gather and all-to-all ``(p-1)/p``; broadcast, reduce
    and send/receive ``1``.

    Examples
    --------
    >>> bus_factor("allreduce", 8)
    1.75
    >>> bus_factor("broadcast", 8)
    1.0
    """
    collective = check_choice("collective", _canon(collective), BUS_FACTOR_COLLECTIVES)
    p = check_int("p", p, minimum=1)
    if collective == "allreduce":
        return 2 * (p - 1) / p
    if collective in ("reduce_scatter", "allgather", "alltoall"):
        return (p - 1) / p
    return 1.0


def algorithm_bandwidth(n_bytes, seconds):
    """nccl-tests' algorithm bandwidth ``algbw = n_bytes / seconds`` (bytes/s).

    Examples
    --------
    >>> algorithm_bandwidth(1e9, 0.01)
    100000000000.0
    """
    n = _n_bytes(n_bytes)
    t = _seconds(seconds)
    return n / t


def _seconds(seconds):
    if np.ndim(seconds) == 0:
        return check_real("seconds", seconds, minimum=0, strict_min=True)
    arr = check_array("seconds", seconds, finite=True).astype(float)
    if arr.size and np.any(arr <= 0):
        raise ValueError("seconds must hold only positive times")
    return arr


def bus_bandwidth(collective, n_bytes, p, seconds):
    """nccl-tests' bus bandwidth (bytes/s): ``n_bytes / seconds * bus_factor``.

    The factor scales the algorithm bandwidth to the rate each rank's link
    must sustain in a bandwidth-optimal algorithm built from point-to-point
    sends, so busbw can be compared with the link's one-direction bandwidth
    whatever ``p`` is. With the ring model and ``alpha = 0`` it *equals* the
    link bandwidth.

    **Can busbw exceed the link bandwidth?** Not for an algorithm that only
    sends and receives: every rank must move ``2 (p-1)/p`` of the buffer
    through its link (see :func:`bandwidth_lower_bound`), so busbw <= the
    per-direction link rate (measured against the *whole* per-GPU bandwidth,
    e.g. all 18 NVLinks of an H100 together, 450 GB/s each way). It can with
    in-network reduction: NVLink SHARP (NCCL's NVLS algorithm, NVSwitch
    gen 3) or InfiniBand SHARP add the data inside the switch, so each GPU
    sends its buffer once and receives the sum once: about ``n`` bytes each
    way instead of ``2 (p-1)/p * n``. The time approaches ``n / bandwidth``,
    and busbw, which still applies ``2 (p-1)/p``, approaches ``2 (p-1)/p``
    times the link rate (1.75x for 8 GPUs). The factor then no longer
    describes the traffic, but nccl-tests prints it all the same: its
    ``src/all_reduce.cu`` (v2.19.6) always applies ``2 (p-1)/p``, since it
    cannot know which algorithm NCCL ran (NVIDIA/nccl-tests issue 366); a
    correction for a pinned ``NCCL_ALGO`` exists only as an open pull request
    (NVIDIA/nccl-tests#239).

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall", "sendrecv"}
    n_bytes : float or array_like
        nccl-tests' "size" column: each rank's full buffer.
    p : int
        Ranks.
    seconds : float or array_like
        Measured time of one operation.

    Examples
    --------
    The last row of the seed's 8x H100 table, 1 GiB in 7210 us (it prints
    260.61 GB/s: its busbw column was rounded from rounded numbers):

    >>> round(bus_bandwidth("allreduce", 2**30, 8, 7210e-6) / 1e9, 2)
    260.62
    """
    factor = bus_factor(collective, p)
    return algorithm_bandwidth(n_bytes, seconds) * factor

