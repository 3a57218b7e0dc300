"""Closed forms of communication hiding: bounds, exact step times, and a formula to avoid.

The layer-wise schedule of :mod:`distlib.overlap.schedule` is a single-server
first-in-first-out queue; its finish time has an exact closed form
(:func:`layerwise_exact_time`), equal to :func:`layerwise_closed_form` when no
message waits (:func:`no_backup`). :func:`overlap_speedup_bound` is the most
hiding can buy, :func:`naive_layerwise_time` the circulating formula that
drops the one all-reduce that can never hide, and :func:`cg_iteration_time`
the same idea in conjugate gradients. Re-exported by :mod:`distlib.overlap`.
"""

from __future__ import annotations

import math

import numpy as np

from .._check import check_choice, check_real
from .schedule import _same_length, _times

__all__ = ["overlap_speedup_bound", "no_backup", "layerwise_closed_form", "layerwise_exact_time",
           "naive_layerwise_time", "cg_iteration_time"]


def overlap_speedup_bound(compute_time, comm_time) -> float:
    """The most overlap can buy: ``(T_comp + T_comm) / max(T_comp, T_comm)``.

    Sequential time over perfectly overlapped time. It is 2 when the two are
    equal and falls toward 1 when either dominates, so hiding alone never
    more than doubles throughput. A real step does worse: only the backward
    pass can hide communication, and the last gradient's all-reduce always
    shows (see :attr:`OverlapTimeline.lower_bound`).

    Parameters
    ----------
    compute_time, comm_time : float
        Seconds (>= 0). If both are 0 the speedup is 1.

    Examples
    --------
    >>> overlap_speedup_bound(45, 30)     # the laundry: 75 min become 45
    1.6666666666666667
    >>> overlap_speedup_bound(1.0, 1.0)
    2.0
    """
    a = check_real("compute_time", compute_time, minimum=0)
    c = check_real("comm_time", comm_time, minimum=0)
    m = max(a, c)
    return (a + c) / m if m > 0 else 1.0


def no_backup(backward_times, comm_times) -> bool:
    """True when every all-reduce ends before the next layer's gradients are ready.

    The condition is ``comm_times[i] <= backward_times[i + 1]`` for every
    layer but the last: then no message ever waits for the channel, and
    :func:`layerwise_closed_form` gives the step time exactly. (The last
    all-reduce has no later layer to hide under; it is always exposed.)

    Examples
    --------
    >>> no_backup([1, 1, 1], [0.5, 0.5, 9.0])    # the last one may be long
    True
    >>> no_backup([1, 1, 1], [1.5, 0.5, 0.5])
    False
    """
    b = _times("backward_times", backward_times)
    c = _times("comm_times", comm_times)
    _same_length("comm_times", c, "backward_times", b)
    return bool(np.all(c[:-1] <= b[1:]))


def layerwise_closed_form(backward_times, comm_times, *, forward_time=0.0) -> float:
    """Step time when the queue never backs up: ``F + B + comm_times[-1]``.

    The backward pass runs in full, and the all-reduce of the last gradient
    to become ready (the first layer of the network, which the backward pass
    reaches last) starts only after it. Exact when :func:`no_backup` holds;
    otherwise a lower bound, and :func:`layerwise_exact_time` gives the step.

    A tempting formula, ``B + max(0, c_first - (B - b_first))``, treats the
    first layer's all-reduce as if it could run under the later layers'
    backward. It cannot: in the backward pass that layer finishes *last*.
    That formula drops the one all-reduce that can never hide.

    Examples
    --------
    >>> from distlib.overlap import overlap_timeline
    >>> layerwise_closed_form([1, 1, 1], [0.5, 0.5, 0.5], forward_time=1.5)
    5.0
    >>> overlap_timeline([1, 1, 1], [0.5, 0.5, 0.5], forward_time=1.5).iteration_time
    5.0
    """
    b = _times("backward_times", backward_times)
    c = _times("comm_times", comm_times)
    _same_length("comm_times", c, "backward_times", b)
    f = check_real("forward_time", forward_time, minimum=0)
    return f + math.fsum(b) + float(c[-1])


def layerwise_exact_time(backward_times, comm_times, *, forward_time=0.0) -> float:
    """Exact step time of the layer-wise schedule, in closed form.

    ``F + max over k of (b[0] + ... + b[k] + c[k] + ... + c[L-1])``: the last
    busy period of the channel starts when some message ``k`` is ready and
    then runs messages ``k`` to ``L-1`` back to back. (Standard for a
    first-in-first-out queue with one server; it follows from
    ``end[i] = max(ready[i], end[i-1]) + c[i]`` by unrolling.)

    Examples
    --------
    >>> layerwise_exact_time([1, 1, 1], [2, 2, 2])      # max(1+6, 2+4, 3+2)
    7.0
    >>> layerwise_exact_time([1, 1, 1], [0.5, 0.5, 0.5])  # k = 2: B + c[-1]
    3.5
    """
    b = _times("backward_times", backward_times)
    c = _times("comm_times", comm_times)
    _same_length("comm_times", c, "backward_times", b)
    f = check_real("forward_time", forward_time, minimum=0)
    ready = np.cumsum(b)
    tail = np.cumsum(c[::-1])[::-1]  # c[k] + ... + c[L-1]
    return f + float(np.max(ready + tail))


def naive_layerwise_time(backward_times, comm_times) -> float:
    """The layer-wise formula that circulates, kept here to measure its error: do not use it.

    It reads ``T = B + max(0, T_AR(1) - (T_bwd(2) + ... + T_bwd(L)))`` with
    layers numbered from the input, i.e. here (backward order, the input
    layer last) ``B + max(0, c[-1] - (B - b[-1]))``. It lets the input
    layer's all-reduce run under the backward of layers 2..L, but those run
    *before* layer 1 in the backward pass, so that all-reduce cannot start
    until the backward pass is over. It also ignores every other all-reduce
    and the forward pass. When :func:`no_backup` holds and ``c[-1] <= B -
    b[-1]``, it is short by exactly ``c[-1]``; when the queue backs up, by more.

    Examples
    --------
    >>> from distlib.overlap import overlap_timeline
    >>> b, c = [1, 1, 1], [0.5, 0.5, 0.5]
    >>> naive_layerwise_time(b, c), overlap_timeline(b, c).iteration_time
    (3.0, 3.5)
    >>> naive_layerwise_time([1, 1, 1], [2, 2, 2]), layerwise_exact_time([1, 1, 1], [2, 2, 2])
    (3.0, 7.0)
    """
    b = _times("backward_times", backward_times)
    c = _times("comm_times", comm_times)
    _same_length("comm_times", c, "backward_times", b)
    B = math.fsum(b)
    return B + max(0.0, float(c[-1]) - (B - float(b[-1])))


def cg_iteration_time(spmv_time, allreduce_time, *, method="classic", vector_time=0.0,
                      extra_vector_time=0.0) -> float:
    """Time of one conjugate-gradient iteration on many ranks, classic or pipelined.

    Classic CG (Hestenes-Stiefel) waits for two global sums per iteration,
    one after the matrix-vector product and one after the residual update:
    ``spmv + 2 * allreduce + vector``. Pipelined CG (Ghysels and Vanroose,
    Parallel Computing 40(7), 2014) needs one sum per iteration and starts
    it before the matrix-vector product, which then hides it:
    ``max(spmv, allreduce) + vector + extra_vector`` (it does a few more
    vector updates per iteration: ``extra_vector_time``). This assumes the
    sum makes progress while the product runs (MPI's asynchronous progress).

    Parameters
    ----------
    spmv_time, allreduce_time : float
        Seconds (>= 0): one matrix-vector product (with its halo exchange)
        and one all-reduce of a few numbers.
    method : {"classic", "pipelined"}
    vector_time, extra_vector_time : float
        Seconds (>= 0) of local vector work per iteration, and what
        pipelining adds to it.

    Examples
    --------
    At scale the sum's latency rivals the product: 50 µs each.

    >>> round(cg_iteration_time(50e-6, 50e-6) * 1e6, 6)
    150.0
    >>> round(cg_iteration_time(50e-6, 50e-6, method="pipelined") * 1e6, 6)
    50.0
    """
    spmv = check_real("spmv_time", spmv_time, minimum=0)
    ar = check_real("allreduce_time", allreduce_time, minimum=0)
    check_choice("method", method, ["classic", "pipelined"])
    vec = check_real("vector_time", vector_time, minimum=0)
    extra = check_real("extra_vector_time", extra_vector_time, minimum=0)
    if method == "classic":
        return spmv + 2 * ar + vec
    return max(spmv, ar) + vec + extra

