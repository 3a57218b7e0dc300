"""ZeRO-3's step on two streams: all-gathers prefetched one layer early, or not at all.

The chapter "ZeRO and FSDP" teaches this module; it lays ZeRO-3 out on the
two streams of chapter 8's model (:mod:`distlib.overlap.schedule`): a
compute stream that runs one layer at a time, and one communication channel
that runs collectives one at a time, in the order they are issued, each
starting at ``max(ready, channel free)``. Its intervals are chapter 8's
:class:`~distlib.overlap.schedule.Event`, so the same drawing shows them.

The step uses the layers ``2 L`` times, in program order: the forward pass
runs layers ``0 .. L-1``, the backward pass ``L-1 .. 0``. Every use needs the
layer's full parameters, so an all-gather comes first; every backward use is
followed by a reduce-scatter of that layer's gradient. With prefetch depth
``k``, the hook that runs just before use ``u`` issues the all-gather for use
``u + k`` (use 0's hook issues ``0 .. k``). A gather issued there is ready
when use ``u - 1`` has ended, i.e. once the layer ``k + 1`` uses back has
freed its parameters, so at most ``k + 1`` layers are held whole at once:

* ``k = 0`` (no prefetch): each gather waits for the compute before it, and
  the compute waits for the gather. Nothing overlaps, the step is
  ``L (2 g + f + b + r)``.
* ``k = 1`` (FSDP's forward and backward prefetch): the next layer's gather
  runs under the current layer's compute; one more layer is held.

Units: seconds, as everywhere in ``distlib``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._check import check_int, check_real
from .schedule import BACKWARD, COMM, FORWARD, Event

__all__ = ["Zero3Timeline", "zero3_timeline", "zero3_closed_form"]


@dataclass(frozen=True)
class Zero3Timeline:
    """One ZeRO-3 step on a compute stream and a communication channel.

    Uses are indexed in program order, ``0 .. 2L-1``: forward of layers
    ``0 .. L-1``, then backward of layers ``L-1 .. 0``. Times are seconds
    from the start of the step.

    Attributes
    ----------
    layers, prefetch : int
    forward_time, backward_time, gather_time, reduce_scatter_time : float
        Per layer.
    compute_start, compute_end : ndarray, shape (2L,)
        Each use's compute.
    gather_start, gather_end : ndarray, shape (2L,)
        The all-gather of each use's parameters.
    rs_start, rs_end : ndarray, shape (L,)
        Reduce-scatters, in backward order (layer ``L-1`` first).
    """

    layers: int
    prefetch: int
    forward_time: float
    backward_time: float
    gather_time: float
    reduce_scatter_time: float
    compute_start: np.ndarray
    compute_end: np.ndarray
    gather_start: np.ndarray
    gather_end: np.ndarray
    rs_start: np.ndarray
    rs_end: np.ndarray

    @property
    def step_time(self) -> float:
        """When both streams are done: the last compute and the last reduce-scatter."""
        return float(max(self.compute_end[-1], self.rs_end[-1]))

    @property
    def compute_time(self) -> float:
        """``L (f + b)``: the step if communication were free."""
        return self.layers * (self.forward_time + self.backward_time)

    @property
    def total_comm(self) -> float:
        """``L (2 g + r)``: every all-gather and reduce-scatter, one after another."""
        return self.layers * (2 * self.gather_time + self.reduce_scatter_time)

    @property
    def exposed_comm(self) -> float:
        """Time the compute stream waits for communication: ``step_time - compute_time``."""
        return max(self.step_time - self.compute_time, 0.0)

    @property
    def hidden_comm(self) -> float:
        """Communication that ran under compute."""
        return max(self.total_comm - self.exposed_comm, 0.0)

    @property
    def idle(self) -> list:
        """``(start, end)`` of every interval the compute stream waits, the reduce-scatter at the end included."""
        ends = np.concatenate([[0.0], self.compute_end])
        starts = np.concatenate([self.compute_start, [self.step_time]])
        return [(float(e), float(s)) for e, s in zip(ends, starts) if s - e > 1e-12 * max(self.step_time, 1e-300)]

    @property
    def peak_units(self) -> int:
        """Most layers whose full parameters are held at once (from a gather's start to its use's end).

        Chapter 10's "unit in flight": 1 without prefetch, 2 with depth 1.
        """
        marks = [(float(t), 1) for t in self.gather_start] + [(float(t), -1) for t in self.compute_end]
        held = peak = 0
        for _, step in sorted(marks):  # at a tie a use ends (-1) before the next gather starts (+1)
            held += step
            peak = max(peak, held)
        return peak

    def layer_of(self, use: int) -> int:
        """The layer that use ``use`` (program order) computes."""
        return use if use < self.layers else 2 * self.layers - 1 - use

    @property
    def events(self) -> list:
        """Every compute and communication interval as chapter 8's :class:`Event`, per row in time order."""
        out = []
        for u in range(2 * self.layers):
            kind, layer = (FORWARD, u) if u < self.layers else (BACKWARD, self.layer_of(u))
            out.append(Event(kind, f"{kind} {layer}", float(self.compute_start[u]), float(self.compute_end[u]), u))
        comm = [Event(COMM, f"all-gather {self.layer_of(u)}", float(self.gather_start[u]), float(self.gather_end[u]),
                      u) for u in range(2 * self.layers)]
        comm += [Event(COMM, f"reduce-scatter {self.layers - 1 - j}", float(self.rs_start[j]), float(self.rs_end[j]),
                       2 * self.layers + j) for j in range(self.layers)]
        return out + sorted(comm, key=lambda e: e.start)

    def summary(self) -> dict:
        """The headline numbers as a plain dict (seconds, and held units)."""
        return {"step_time": self.step_time, "compute_time": self.compute_time, "total_comm": self.total_comm,
                "exposed_comm": self.exposed_comm, "peak_units": self.peak_units}


def _args(layers, forward_time, backward_time, gather_time, reduce_scatter_time):
    L = check_int("layers", layers, minimum=1)
    times = [check_real(name, value, minimum=0) for name, value in (
        ("forward_time", forward_time), ("backward_time", backward_time), ("gather_time", gather_time),
        ("reduce_scatter_time", reduce_scatter_time))]
    return L, *times


def zero3_timeline(layers, forward_time, backward_time, gather_time, reduce_scatter_time, *,
                   prefetch=1) -> Zero3Timeline:
    """Lay out one ZeRO-3 step: gather, compute, and (in the backward pass) reduce-scatter, layer by layer.

    Parameters
    ----------
    layers : int
        ``L``, the units ZeRO-3 gathers one at a time (>= 1).
    forward_time, backward_time : float
        ``f`` and ``b``: one layer's forward and backward compute, seconds (>= 0).
    gather_time, reduce_scatter_time : float
        ``g`` and ``r``: one layer's all-gather of its parameters and
        reduce-scatter of its gradient, seconds (>= 0).
    prefetch : int
        ``k``, how many uses ahead the all-gathers are issued: 0 (none) to
        ``2 L - 1``. FSDP's default is 1.

    Returns
    -------
    Zero3Timeline
        ``.step_time``, ``.exposed_comm``, ``.peak_units``, ``.events``.

    Raises
    ------
    TypeError, ValueError
        Naming the parameter and its allowed range.

    Examples
    --------
    Four layers, 2 ms forward, 4 ms backward, 1 ms gathers and reduce-scatters.
    Without prefetch everything is in series, ``L (2g + f + b + r)``:

    >>> round(zero3_timeline(4, 2e-3, 4e-3, 1e-3, 1e-3, prefetch=0).step_time * 1e3, 9)
    36.0

    With prefetch only the first gather and the last reduce-scatter show,
    ``g + L (f + b) + r``, and two layers are held at once:

    >>> t = zero3_timeline(4, 2e-3, 4e-3, 1e-3, 1e-3)
    >>> round(t.step_time * 1e3, 9), round(t.exposed_comm * 1e3, 9), t.peak_units
    (26.0, 2.0, 2)
    """
    L, f, b, g, r = _args(layers, forward_time, backward_time, gather_time, reduce_scatter_time)
    k = check_int("prefetch", prefetch, minimum=0, maximum=2 * L - 1)
    n = 2 * L
    compute = [f] * L + [b] * L
    c_start, c_end, g_start, g_end = (np.zeros(n) for _ in range(4))
    rs_start, rs_end = np.zeros(L), np.zeros(L)
    free = 0.0  # when the channel is next free: chapter 8's start = max(ready, free), one message at a time
    issued = 0
    for u in range(n):
        ready = c_end[u - 1] if u else 0.0  # this hook runs once the use before it has ended
        while issued < min(u + k + 1, n):  # issue the gathers up to use u + k
            g_start[issued] = max(ready, free)
            free = g_end[issued] = g_start[issued] + g
            issued += 1
        c_start[u] = max(ready, g_end[u])
        c_end[u] = c_start[u] + compute[u]
        if u >= L:  # a backward use: its gradient's reduce-scatter is ready now
            j = u - L
            rs_start[j] = max(c_end[u], free)
            free = rs_end[j] = rs_start[j] + r
    return Zero3Timeline(layers=L, prefetch=k, forward_time=f, backward_time=b, gather_time=g,
                         reduce_scatter_time=r, compute_start=c_start, compute_end=c_end, gather_start=g_start,
                         gather_end=g_end, rs_start=rs_start, rs_end=rs_end)


def zero3_closed_form(layers, forward_time, backward_time, gather_time, reduce_scatter_time, *,
                      prefetch=1) -> float:
    """The step time of :func:`zero3_timeline` in closed form, where one exists.

    * ``prefetch=0``: ``L (2 g + f + b + r)``, everything in series.
    * ``prefetch=1``, compute-bound (``f >= g`` and ``b >= g + r``): every
      gather but the first runs under the layer before it, and every
      reduce-scatter but the last under the next backward:
      ``g + L (f + b) + r``.
    * ``prefetch=1``, communication-bound (``g >= f`` and ``g >= b``): the
      channel never rests until the last gather, ``2 L g`` of gathers and
      ``L - 2`` reduce-scatters; then the last layer's backward runs beside
      the second-to-last reduce-scatter, and the last reduce-scatter follows:
      ``2 L g + (L - 1) r + max(r, b)`` (``2 g + b + r`` when ``L = 1``).

    Raises
    ------
    ValueError
        For ``prefetch > 1``, or ``prefetch=1`` between the two regimes
        (then the timeline is the answer).

    Examples
    --------
    >>> round(zero3_closed_form(4, 2e-3, 4e-3, 1e-3, 1e-3) * 1e3, 9)    # 1 + 4 * 6 + 1
    26.0
    >>> round(zero3_closed_form(4, 1e-3, 2e-3, 3e-3, 1e-3) * 1e3, 9)    # 24 + 3 + 2
    29.0
    """
    L, f, b, g, r = _args(layers, forward_time, backward_time, gather_time, reduce_scatter_time)
    k = check_int("prefetch", prefetch, minimum=0, maximum=1)
    if k == 0:
        return L * (2 * g + f + b + r)
    if f >= g and b >= g + r:
        return g + L * (f + b) + r
    if g >= f and g >= b:
        return 2 * g + b + r if L == 1 else 2 * L * g + (L - 1) * r + max(r, b)
    raise ValueError("no closed form with prefetch=1 unless forward_time >= gather_time and backward_time >= "
                     "gather_time + reduce_scatter_time (compute-bound), or gather_time >= forward_time and "
                     f"gather_time >= backward_time (communication-bound); got f={f!r}, b={b!r}, g={g!r}, r={r!r}: "
                     "use zero3_timeline")
