"""One training step's timeline: compute, then all-reduces queued on one channel as their gradients appear.

Layer ``i``'s gradients are ready when the backward pass finishes it; messages
share one communication channel, first ready first served::

    start[i] = max(ready[i], end[i - 1]),   end[i] = start[i] + comm[i]

:func:`overlap_timeline` schedules one message per layer; the DDP model
(:mod:`distlib.overlap.ddp`) schedules one per bucket through the same
``_schedule``. :class:`OverlapTimeline` holds the result and the numbers a
chapter quotes (iteration time, exposed communication, speedup, ...). The
argument checks shared by :mod:`distlib.overlap`'s parts live here too.
Re-exported by :mod:`distlib.overlap`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .._check import check_array, check_real

__all__ = ["Event", "OverlapTimeline", "overlap_timeline"]

FORWARD, BACKWARD, COMM = "forward", "backward", "comm"


class Event(NamedTuple):
    """One interval of a timeline, for drawing.

    ``kind`` is ``"forward"`` or ``"backward"`` (the compute row) or
    ``"comm"`` (the communication row); ``index`` is the layer (compute) or
    message (comm) number, ``-1`` for the forward pass.
    """

    kind: str
    label: str
    start: float
    end: float
    index: int

    @property
    def row(self) -> str:
        """``"compute"`` or ``"comm"``: which row of a Gantt chart."""
        return COMM if self.kind == COMM else "compute"

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class OverlapTimeline:
    """One training step on one rank: compute and all-reduces on a time axis.

    Times are seconds from the start of the step. Layer arrays are in backward
    order (the order the backward pass runs them); message arrays in the
    order the all-reduces run, which is the order they become ready.

    Attributes
    ----------
    forward_time : float
    backward_times : ndarray, shape (L,)
    comm_times : ndarray, shape (M,)
        Duration of each all-reduce.
    ready_after : ndarray of int, shape (M,)
        Message ``m`` is ready when layer ``ready_after[m]`` finishes its
        backward (``overlap=False``: when the whole backward pass is done).
    ready, comm_start, comm_end : ndarray, shape (M,)
        When each message became ready, started and finished.
    overlap : bool
        False for the "compute, then communicate" schedule.
    layer_labels, message_labels : tuple of str
    """

    forward_time: float
    backward_times: np.ndarray
    comm_times: np.ndarray
    ready_after: np.ndarray
    ready: np.ndarray
    comm_start: np.ndarray
    comm_end: np.ndarray
    overlap: bool
    layer_labels: tuple
    message_labels: tuple

    # --- the quantities a chapter quotes -------------------------------
    @property
    def backward_time(self) -> float:
        """Total backward compute, ``B = sum(backward_times)``."""
        return math.fsum(self.backward_times)

    @property
    def total_comm(self) -> float:
        """Total all-reduce time, ``C = sum(comm_times)``."""
        return math.fsum(self.comm_times)

    @property
    def layer_end(self) -> np.ndarray:
        """When each layer's backward finishes (s from the start of the step)."""
        return self.forward_time + np.cumsum(self.backward_times)

    @property
    def backward_end(self) -> float:
        """When the backward pass finishes: ``forward_time + B``."""
        return float(self.layer_end[-1])

    @property
    def iteration_time(self) -> float:
        """Forward + the later of the end of backward and of the last all-reduce."""
        last = float(self.comm_end[-1]) if len(self.comm_end) else -math.inf
        return max(self.backward_end, last)

    @property
    def exposed_comm(self) -> float:
        """Communication the compute did not hide: ``iteration_time - F - B``.

        The GPU sits idle for this long at the end of the step, waiting for
        all-reduces. Never negative, never more than ``total_comm``.
        """
        return self.iteration_time - self.backward_end

    @property
    def hidden_comm(self) -> float:
        """All-reduce time that ran underneath the backward pass."""
        return max(self.total_comm - self.exposed_comm, 0.0)

    @property
    def hidden_fraction(self) -> float:
        """``hidden_comm / total_comm`` (1.0 when there is no communication)."""
        return self.hidden_comm / self.total_comm if self.total_comm > 0 else 1.0

    @property
    def compute_time(self) -> float:
        """``F + B``: the step if communication were free."""
        return self.forward_time + self.backward_time

    @property
    def no_overlap_time(self) -> float:
        """``F + B + C``: compute, then every all-reduce, one after another."""
        return self.compute_time + self.total_comm

    @property
    def speedup(self) -> float:
        """``no_overlap_time / iteration_time``: what overlapping bought."""
        t = self.iteration_time
        return self.no_overlap_time / t if t > 0 else 1.0

    @property
    def lower_bound(self) -> float:
        """``F + max(B + c[-1], b[0] + C)``: no schedule of these messages beats it.

        The last message cannot start before the backward pass ends; the
        channel cannot start before the first layer is done.
        """
        if len(self.comm_times) == 0:
            return self.compute_time
        first = float(np.sum(self.backward_times[: int(self.ready_after[0]) + 1]))
        return self.forward_time + max(self.backward_time + float(self.comm_times[-1]),
                                       first + self.total_comm)

    @property
    def queue_delay(self) -> np.ndarray:
        """How long each message waited for the channel after it was ready."""
        return self.comm_start - self.ready

    @property
    def backed_up(self) -> bool:
        """True when some message had to wait for the one before it."""
        return bool(np.any(self.queue_delay > 1e-12 * max(self.iteration_time, 1e-300)))

    @property
    def exposed_interval(self) -> tuple:
        """``(start, end)`` of the exposed communication at the end of the step."""
        return (self.backward_end, self.iteration_time)

    @property
    def events(self) -> list:
        """Every compute and communication interval, as :class:`Event`, in time order per row."""
        out = []
        if self.forward_time > 0:
            out.append(Event(FORWARD, "forward", 0.0, self.forward_time, -1))
        ends = self.layer_end
        starts = ends - self.backward_times
        for i, label in enumerate(self.layer_labels):
            out.append(Event(BACKWARD, label, float(starts[i]), float(ends[i]), i))
        for m, label in enumerate(self.message_labels):
            out.append(Event(COMM, label, float(self.comm_start[m]), float(self.comm_end[m]), m))
        return out

    def summary(self) -> dict:
        """The headline numbers as a plain dict (seconds)."""
        return {
            "iteration_time": self.iteration_time,
            "compute_time": self.compute_time,
            "total_comm": self.total_comm,
            "exposed_comm": self.exposed_comm,
            "no_overlap_time": self.no_overlap_time,
            "speedup": self.speedup,
        }


# ---------------------------------------------------------------------------
# argument checks


def _times(name: str, value, *, allow_empty: bool = False) -> np.ndarray:
    arr = check_array(name, value, ndim=1, finite=True, minimum=0).astype(float)
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} must hold at least one value (one per layer); got an empty array")
    return arr


def _same_length(name: str, arr: np.ndarray, ref_name: str, ref: np.ndarray) -> None:
    if arr.shape != ref.shape:
        raise ValueError(
            f"{name} must have one entry per layer, the same length as {ref_name} ({len(ref)}); got {len(arr)}"
        )


def _labels(name: str, labels, n: int, default: str) -> tuple:
    if labels is None:
        return tuple(f"{default} {i}" for i in range(n))
    labels = tuple(str(x) for x in labels)
    if len(labels) != n:
        raise ValueError(f"{name} must hold {n} labels, one per entry; got {len(labels)}")
    return labels


# ---------------------------------------------------------------------------
# the simulation


def _schedule(forward_time, backward_times, comm_times, ready_after, *, overlap, layer_labels,
              message_labels) -> OverlapTimeline:
    """FIFO one-channel schedule; inputs already checked."""
    layer_end = forward_time + np.cumsum(backward_times)
    if overlap:
        ready = layer_end[ready_after]
    else:
        ready = np.full(len(comm_times), layer_end[-1])
    start = np.empty(len(comm_times))
    end = np.empty(len(comm_times))
    free = -math.inf
    for m, (r, c) in enumerate(zip(ready.tolist(), comm_times.tolist())):
        s = r if r > free else free
        start[m] = s
        free = end[m] = s + c
    return OverlapTimeline(
        forward_time=float(forward_time),
        backward_times=backward_times,
        comm_times=comm_times,
        ready_after=np.asarray(ready_after, dtype=np.int64),
        ready=ready,
        comm_start=start,
        comm_end=end,
        overlap=bool(overlap),
        layer_labels=layer_labels,
        message_labels=message_labels,
    )


def overlap_timeline(backward_times, comm_times, *, forward_time=0.0, overlap=True, labels=None) -> OverlapTimeline:
    """Schedule one step: layer-by-layer backward, each layer's all-reduce as soon as it can.

    Layer ``i``'s gradients are ready when the backward pass (which runs the
    layers in the order given) finishes layer ``i``; their all-reduce then
    takes ``comm_times[i]``. All-reduces run one at a time on one channel, in
    the order they become ready.

    Parameters
    ----------
    backward_times : array_like, shape (L,)
        Backward compute of each layer, seconds (>= 0), in backward order.
    comm_times : array_like, shape (L,)
        All-reduce time of each layer's gradients, seconds (>= 0).
    forward_time : float
        Forward pass, seconds (>= 0). Nothing overlaps it.
    overlap : bool
        ``False`` models the blocking schedule: every all-reduce waits until
        the whole backward pass is done, so the step takes ``F + B + C``.
    labels : sequence of str, optional
        Names of the layers (default ``"layer 0"``, ...).

    Returns
    -------
    OverlapTimeline
        ``.iteration_time``, ``.exposed_comm``, ``.events`` and more.

    Raises
    ------
    ValueError
        If an array is empty, not 1-D, holds a negative number, NaN or inf,
        or the lengths differ.

    Examples
    --------
    Three layers of 1 s each, 0.5 s all-reduces: every all-reduce fits under
    the next layer, so only the last one (0.5 s) is exposed:

    >>> t = overlap_timeline([1, 1, 1], [0.5, 0.5, 0.5])
    >>> t.iteration_time, t.exposed_comm
    (3.5, 0.5)
    >>> t.no_overlap_time, round(t.speedup, 4)     # F + B + C, and 4.5 / 3.5
    (4.5, 1.2857)

    All-reduces of 2 s back up behind each other; the channel is busy from
    1 s on, so the step is ``b[0] + C = 1 + 6``:

    >>> t = overlap_timeline([1, 1, 1], [2, 2, 2])
    >>> t.iteration_time, t.queue_delay.tolist()
    (7.0, [0.0, 1.0, 2.0])
    >>> overlap_timeline([1, 1, 1], [2, 2, 2], overlap=False).iteration_time
    9.0
    """
    b = _times("backward_times", backward_times)
    c = _times("comm_times", comm_times, allow_empty=True)
    _same_length("comm_times", c, "backward_times", b)
    f = check_real("forward_time", forward_time, minimum=0)
    if not isinstance(overlap, (bool, np.bool_)):
        raise TypeError(f"overlap must be True or False, got {overlap!r}")
    layer_labels = _labels("labels", labels, len(b), "layer")
    return _schedule(f, b, c, np.arange(len(b)), overlap=bool(overlap), layer_labels=layer_labels,
                     message_labels=tuple(f"all-reduce {x}" for x in layer_labels))

