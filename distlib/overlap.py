"""Communication hiding: all-reduces that run while the backward pass goes on.

The chapter "Communication hiding, modelled and measured" teaches this module.
One training step on one rank: a forward pass, then a backward pass that runs
the layers one after another (last layer first, so the order *given* here is
the backward order). As soon as the backward pass finishes a layer, that
layer's gradients are ready and their all-reduce may start. All-reduces share
one communication channel (one NCCL stream, one ring): they run one at a
time, first ready first served. So a message starts at

    start[i] = max(ready[i], end[i - 1]),   end[i] = start[i] + comm[i],

and the step ends when both the backward pass and the last all-reduce have
finished. This is a single-server first-in-first-out queue, and its finish
time has an exact closed form (a max-plus product): with ``b`` the backward
times and ``c`` the all-reduce times in backward order and ``F`` the forward,

    T_iter = F + max over k of ( b[0] + ... + b[k] + c[k] + ... + c[L-1] ),

the ``k`` that attains the maximum being the first message of the busy
period that ends the step (:func:`layerwise_exact_time`). Two terms of it are
lower bounds worth remembering: ``k = L-1`` gives ``F + B + c[L-1]``: the
*last* gradient's all-reduce can never hide (nothing is left to compute),
and ``k = 0`` gives ``F + b[0] + C``: the channel cannot start before the
first gradient exists. When every all-reduce fits inside the next layer's
backward (:func:`no_backup`), the first bound is the answer
(:func:`layerwise_closed_form`).

PyTorch's DistributedDataParallel does not send layer by layer: it packs
gradients into buckets (25 MiB by default) and all-reduces a bucket once all
its gradients are ready (:func:`bucket_gradients`, :func:`ddp_step`). Small
buckets start communicating early but pay the per-message latency ``alpha``
many times; one big bucket pays it once but cannot start until the backward
pass is over. :func:`bucket_sweep` maps the trade-off.

Units: seconds, bytes, bytes/s (one direction per link), as everywhere in
``distlib``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ._check import check_array, check_choice, check_int, check_real
from .collectives import ALLREDUCE_ALGORITHMS

__all__ = [
    "Event",
    "OverlapTimeline",
    "overlap_timeline",
    "overlap_speedup_bound",
    "layerwise_closed_form",
    "layerwise_exact_time",
    "naive_layerwise_time",
    "cg_iteration_time",
    "no_backup",
    "Bucket",
    "bucket_gradients",
    "DDPStep",
    "ddp_step",
    "bucket_timeline",
    "BucketSweep",
    "bucket_sweep",
    "gradient_profile",
    "DDP_BUCKET_BYTES",
    "DDP_FIRST_BUCKET_BYTES",
]

#: PyTorch DDP's default bucket capacity, ``bucket_cap_mb=25`` MiB
#: (``_DEFAULT_BUCKET_CAP_MB * 1024 * 1024`` in ``torch/nn/parallel/distributed.py``).
DDP_BUCKET_BYTES = 25 * 2**20
#: PyTorch DDP's default capacity of the first bucket, 1 MiB
#: (``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES`` = 1048576).
DDP_FIRST_BUCKET_BYTES = 2**20

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


# ---------------------------------------------------------------------------
# closed forms


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


# ---------------------------------------------------------------------------
# DDP-style buckets


class Bucket(NamedTuple):
    """Consecutive layers (in backward order) whose gradients travel in one all-reduce."""

    index: int
    layers: tuple
    n_bytes: float
    capacity: float


def _bucket_args(grad_bytes, bucket_bytes, first_bucket_bytes, rule):
    g = _times("grad_bytes", grad_bytes)
    cap = check_real("bucket_bytes", bucket_bytes, minimum=0, strict_min=True)
    first = cap if first_bucket_bytes is None else check_real(
        "first_bucket_bytes", first_bucket_bytes, minimum=0, strict_min=True)
    check_choice("rule", rule, ["ddp", "fit"])
    return g, cap, first


def bucket_gradients(grad_bytes, *, bucket_bytes, first_bucket_bytes=None, rule="ddp") -> tuple:
    """Pack per-layer gradients, in backward order, into buckets of a given capacity.

    Parameters
    ----------
    grad_bytes : array_like, shape (L,)
        Bytes of each layer's gradients, in the order they become ready.
    bucket_bytes : float
        Capacity of a bucket, bytes (> 0). PyTorch DDP's default is
        ``DDP_BUCKET_BYTES`` (25 MiB).
    first_bucket_bytes : float, optional
        Capacity of the first bucket only (default: ``bucket_bytes``). DDP
        uses 1 MiB (``DDP_FIRST_BUCKET_BYTES``) when ``bucket_cap_mb`` is
        left at its default.
    rule : {"ddp", "fit"}
        ``"ddp"`` is PyTorch's rule (``compute_bucket_assignment_by_size``
        in ``torch/csrc/distributed/c10d/reducer.cpp``): add the gradient to
        the open bucket, *then* close the bucket if it holds ``>= capacity``
        bytes. A bucket may therefore overshoot its capacity by up to one
        gradient. ``"fit"`` closes the open bucket *before* a gradient that
        would push it over capacity, so only a gradient larger than the
        capacity makes a bucket overshoot (it then travels alone).

    Returns
    -------
    tuple of Bucket
        In order; every layer appears exactly once, layers stay in order.

    Examples
    --------
    Five gradients of 40, 40, 40, 100 and 8 bytes with a 100-byte capacity
    (the same grouping ``torch.distributed._compute_bucket_assignment_by_size``
    returns):

    >>> [b.layers for b in bucket_gradients([40, 40, 40, 100, 8], bucket_bytes=100)]
    [(0, 1, 2), (3,), (4,)]
    >>> [b.layers for b in bucket_gradients([40, 40, 40, 100, 8], bucket_bytes=100, rule="fit")]
    [(0, 1), (2,), (3,), (4,)]
    >>> [b.n_bytes for b in bucket_gradients([40, 40, 40, 100, 8], bucket_bytes=1000, first_bucket_bytes=40)]
    [40.0, 188.0]
    """
    g, cap, first = _bucket_args(grad_bytes, bucket_bytes, first_bucket_bytes, rule)
    return _bucket(g, cap, first, rule)


def _bucket(g: np.ndarray, cap: float, first: float, rule: str) -> tuple:
    buckets = []
    layers: list = []
    size = 0.0
    limit = first
    for i, x in enumerate(g.tolist()):
        if rule == "fit" and layers and size + x > limit:
            buckets.append(Bucket(len(buckets), tuple(layers), size, limit))
            layers, size, limit = [], 0.0, cap
        layers.append(i)
        size += x
        if rule == "ddp" and size >= limit:
            buckets.append(Bucket(len(buckets), tuple(layers), size, limit))
            layers, size, limit = [], 0.0, cap
    if layers:
        buckets.append(Bucket(len(buckets), tuple(layers), size, limit))
    return tuple(buckets)


def _allreduce_model(algorithm, cluster=None):
    """``f(n_bytes, p, alpha, bandwidth)``: all-reduce seconds.

    From :func:`distlib.collectives.collective_time` (the alpha-beta model of
    one flat algorithm), or, given a :class:`distlib.GpuCluster`, from
    :func:`distlib.predict_time` (NCCL on that cluster; ``p``, ``alpha`` and
    ``bandwidth`` are then the cluster's).
    """
    if cluster is not None:
        from .gpu_cluster import predict_time

        return lambda n_bytes, p, alpha, bandwidth: predict_time("allreduce", n_bytes, cluster)
    from .collectives import collective_time

    return lambda n_bytes, p, alpha, bandwidth: collective_time(
        "allreduce", n_bytes, p, alpha=alpha, bandwidth=bandwidth, algorithm=algorithm)


@dataclass(frozen=True)
class DDPStep:
    """One DDP step: buckets, their all-reduce times, and the timeline.

    The headline numbers (``iteration_time``, ``exposed_comm``, ``speedup``,
    ...) are those of ``timeline``, an :class:`OverlapTimeline` whose
    compute row has one interval per layer and whose comm row has one per
    bucket.
    """

    buckets: tuple
    timeline: OverlapTimeline
    p: int
    alpha: float
    bandwidth: float
    algorithm: str

    @property
    def n_buckets(self) -> int:
        return len(self.buckets)

    @property
    def bucket_comm_times(self) -> np.ndarray:
        return self.timeline.comm_times

    @property
    def iteration_time(self) -> float:
        return self.timeline.iteration_time

    @property
    def exposed_comm(self) -> float:
        return self.timeline.exposed_comm

    @property
    def total_comm(self) -> float:
        return self.timeline.total_comm

    @property
    def compute_time(self) -> float:
        return self.timeline.compute_time

    @property
    def no_overlap_time(self) -> float:
        return self.timeline.no_overlap_time

    @property
    def speedup(self) -> float:
        return self.timeline.speedup

    @property
    def events(self) -> list:
        return self.timeline.events


def _link_args(alpha, bandwidth, p, algorithm, cluster=None):
    if cluster is not None:
        from .gpu_cluster import GpuCluster

        if not isinstance(cluster, GpuCluster):
            raise TypeError(f"cluster must be a GpuCluster from distlib.gpu_cluster(...), got {type(cluster).__name__}")
        if alpha is not None or bandwidth is not None:
            raise ValueError("give either cluster or alpha and bandwidth, not both")
        if p is not None and check_int("p", p, minimum=1) != cluster.p:
            raise ValueError(f"p must match the cluster's {cluster.p} GPUs, got {p}")
        return 0.0, math.nan, cluster.p
    if alpha is None or bandwidth is None or p is None:
        raise TypeError("give alpha, bandwidth and p (a flat link), or cluster=dl.gpu_cluster(...)")
    alpha = check_real("alpha", alpha, minimum=0)
    bandwidth = check_real("bandwidth", bandwidth, minimum=0, strict_min=True)
    p = check_int("p", p, minimum=1)
    check_choice("algorithm", algorithm, ALLREDUCE_ALGORITHMS)
    return alpha, bandwidth, p


def _ddp(b, g, cap, first, rule, *, alpha, bandwidth, p, forward_time, algorithm, overlap, cluster=None) -> DDPStep:
    buckets = _bucket(g, cap, first, rule)
    allreduce = _allreduce_model(algorithm, cluster)
    comm = np.array([allreduce(bk.n_bytes, p, alpha, bandwidth) for bk in buckets])
    ready_after = np.array([bk.layers[-1] for bk in buckets], dtype=np.int64)
    timeline = _schedule(forward_time, b, comm, ready_after, overlap=overlap,
                         layer_labels=tuple(f"layer {i}" for i in range(len(b))),
                         message_labels=tuple(f"bucket {bk.index}" for bk in buckets))
    return DDPStep(buckets=buckets, timeline=timeline, p=p, alpha=alpha, bandwidth=bandwidth, algorithm=algorithm)


def ddp_step(backward_times, grad_bytes, *, bucket_bytes, alpha=None, bandwidth=None, p=None, forward_time=0.0,
             algorithm="ring", first_bucket_bytes=None, rule="ddp", overlap=True, cluster=None) -> DDPStep:
    """One DistributedDataParallel step: bucketed all-reduces under the backward pass.

    Gradients are packed with :func:`bucket_gradients`; a bucket is ready
    when the backward pass finishes its last layer, and its all-reduce takes
    the alpha-beta time of :func:`distlib.collective_time` (ring:
    ``2 (p - 1) alpha + 2 (p - 1) / p * n_bytes / bandwidth``). Buckets then
    share one channel as in :func:`overlap_timeline`.

    Parameters
    ----------
    backward_times : array_like, shape (L,)
        Backward compute per layer, seconds (>= 0), in backward order.
    grad_bytes : array_like, shape (L,)
        Gradient bytes per layer (>= 0), same order.
    bucket_bytes : float
        Bucket capacity, bytes (> 0).
    alpha : float
        Per-message latency, seconds (>= 0).
    bandwidth : float
        Link bandwidth, bytes/s in one direction (> 0).
    p : int
        Ranks (>= 1).
    forward_time : float
        Seconds (>= 0).
    algorithm : {"ring", "tree", "halving_doubling", "recursive_doubling"}
    first_bucket_bytes : float, optional
        Capacity of the first bucket (see :func:`bucket_gradients`).
    rule : {"ddp", "fit"}
        Bucket closing rule (see :func:`bucket_gradients`).
    overlap : bool
        ``False``: all buckets wait for the end of the backward pass.
    cluster : GpuCluster, optional
        Price each bucket with NCCL on this cluster (:func:`distlib.predict_time`)
        instead of a flat link; then leave ``alpha`` and ``bandwidth`` out.

    Returns
    -------
    DDPStep

    Examples
    --------
    Four layers of 10 ms and 100 MB each, 8 ranks, 100 GB/s links, no
    latency. One 100 MB ring all-reduce takes ``2 * 7/8 * 1e8 / 1e11`` =
    1.75 ms, well under a layer's backward, so only the last bucket shows:

    >>> s = ddp_step([0.01] * 4, [1e8] * 4, bucket_bytes=1e8, alpha=0.0,
    ...              bandwidth=1e11, p=8)
    >>> s.n_buckets, round(s.exposed_comm * 1e3, 6)
    (4, 1.75)

    One bucket for everything cannot start until the backward pass is over:

    >>> s = ddp_step([0.01] * 4, [1e8] * 4, bucket_bytes=4e8, alpha=0.0,
    ...              bandwidth=1e11, p=8)
    >>> s.n_buckets, round(s.exposed_comm * 1e3, 6)
    (1, 7.0)
    """
    b = _times("backward_times", backward_times)
    g, cap, first = _bucket_args(grad_bytes, bucket_bytes, first_bucket_bytes, rule)
    _same_length("grad_bytes", g, "backward_times", b)
    alpha, bandwidth, p = _link_args(alpha, bandwidth, p, algorithm, cluster)
    f = check_real("forward_time", forward_time, minimum=0)
    if not isinstance(overlap, (bool, np.bool_)):
        raise TypeError(f"overlap must be True or False, got {overlap!r}")
    return _ddp(b, g, cap, first, rule, alpha=alpha, bandwidth=bandwidth, p=p, forward_time=f,
                algorithm=algorithm, overlap=bool(overlap), cluster=cluster)


def bucket_timeline(backward_times, buckets, comm_times, *, forward_time=0.0, overlap=True) -> OverlapTimeline:
    """The step for buckets given explicitly, each with its own all-reduce time.

    For comparing the model with a real run: pass the buckets the framework
    actually built (PyTorch DDP reports them) and all-reduce times measured
    or fitted on the machine, instead of letting :func:`ddp_step` pack the
    gradients and price the messages.

    Parameters
    ----------
    backward_times : array_like, shape (L,)
        Backward compute per layer, seconds (>= 0), in backward order.
    buckets : sequence of sequences of int, or of :class:`Bucket`
        The layers (indices into ``backward_times``) of each bucket. Every
        layer appears in exactly one bucket. A bucket is ready when the
        last of its layers finishes; buckets are sent in the order they
        become ready.
    comm_times : array_like, shape (M,)
        All-reduce time of each bucket, seconds (>= 0), in the order of ``buckets``.
    forward_time : float
    overlap : bool

    Examples
    --------
    Layers 0 and 1 in one bucket, layer 2 alone:

    >>> t = bucket_timeline([1, 1, 1], [[0, 1], [2]], [0.5, 0.25])
    >>> t.ready.tolist(), t.iteration_time
    ([2.0, 3.0], 3.25)

    The same buckets as :func:`ddp_step` packs and prices give the same step
    (2 + 2 bytes, then 1 byte; 8 bytes/s, p = 2: ``n / 8`` seconds each):

    >>> s = ddp_step([1, 1, 1], [2, 2, 1], bucket_bytes=4, alpha=0, bandwidth=8, p=2)
    >>> [bk.layers for bk in s.buckets], s.bucket_comm_times.tolist()
    ([(0, 1), (2,)], [0.5, 0.125])
    >>> bucket_timeline([1, 1, 1], s.buckets, [0.5, 0.125]).iteration_time == s.iteration_time
    True
    """
    b = _times("backward_times", backward_times)
    c = _times("comm_times", comm_times, allow_empty=True)
    f = check_real("forward_time", forward_time, minimum=0)
    if not isinstance(overlap, (bool, np.bool_)):
        raise TypeError(f"overlap must be True or False, got {overlap!r}")
    if isinstance(buckets, (str, bytes)) or not hasattr(buckets, "__len__"):
        raise TypeError("buckets must be a sequence of sequences of layer indices")
    groups = []
    for k, bk in enumerate(buckets):
        layers = bk.layers if isinstance(bk, Bucket) else bk
        try:
            layers = [int(i) for i in layers]
        except (TypeError, ValueError):
            raise TypeError(f"buckets[{k}] must be a sequence of layer indices, got {bk!r}") from None
        if not layers:
            raise ValueError(f"buckets[{k}] is empty; every bucket must hold at least one layer")
        groups.append(layers)
    flat = sorted(i for g in groups for i in g)
    if flat != list(range(len(b))):
        raise ValueError(f"buckets must hold every layer 0..{len(b) - 1} exactly once, got {flat}")
    if len(c) != len(groups):
        raise ValueError(f"comm_times must have one entry per bucket ({len(groups)}); got {len(c)}")
    last = np.array([max(g) for g in groups], dtype=np.int64)
    order = np.argsort(last, kind="stable")
    return _schedule(f, b, c[order], last[order], overlap=bool(overlap),
                     layer_labels=tuple(f"layer {i}" for i in range(len(b))),
                     message_labels=tuple(f"bucket {int(k)}" for k in order))


@dataclass(frozen=True)
class BucketSweep:
    """Step time of :func:`ddp_step` over a range of bucket capacities.

    Arrays are indexed like ``bucket_bytes``. ``compute_time`` (``F + B``)
    is the floor no capacity beats; ``one_bucket_time`` is the step with a
    single all-reduce of every gradient after the backward pass.
    """

    bucket_bytes: np.ndarray
    iteration_time: np.ndarray
    exposed_comm: np.ndarray
    total_comm: np.ndarray
    n_buckets: np.ndarray
    compute_time: float
    one_bucket_time: float
    total_bytes: float

    @property
    def best_index(self) -> int:
        return int(np.argmin(self.iteration_time))

    @property
    def best_bucket_bytes(self) -> float:
        """The capacity with the shortest step (the smallest one on ties)."""
        return float(self.bucket_bytes[self.best_index])

    @property
    def best_time(self) -> float:
        return float(self.iteration_time[self.best_index])


def bucket_sweep(backward_times, grad_bytes, *, alpha=None, bandwidth=None, p=None, bucket_bytes=None,
                 forward_time=0.0, algorithm="ring", first_bucket_bytes=None, rule="ddp", cluster=None) -> BucketSweep:
    """Run :func:`ddp_step` for each capacity in ``bucket_bytes``.

    With ``cluster`` (a :class:`distlib.GpuCluster`) every bucket is priced
    by NCCL's model on that cluster instead of ``alpha``/``bandwidth``/``p``.

    ``bucket_bytes`` defaults to 33 capacities spaced evenly on a log scale
    from the smallest non-zero gradient to the whole model.

    Examples
    --------
    With a latency of 1 ms per ring step, tiny buckets pay it on every
    layer and one bucket hides nothing; something in between wins:

    >>> s = bucket_sweep([0.01] * 8, [1e8] * 8, alpha=1e-3, bandwidth=1e11, p=8,
    ...                  bucket_bytes=[1e8, 2e8, 4e8, 8e8])
    >>> s.n_buckets.tolist()
    [8, 4, 2, 1]
    >>> s.best_bucket_bytes
    200000000.0
    >>> bool(s.iteration_time[-1] == s.one_bucket_time)
    True
    """
    b = _times("backward_times", backward_times)
    g = _times("grad_bytes", grad_bytes)
    _same_length("grad_bytes", g, "backward_times", b)
    alpha, bandwidth, p = _link_args(alpha, bandwidth, p, algorithm, cluster)
    f = check_real("forward_time", forward_time, minimum=0)
    check_choice("rule", rule, ["ddp", "fit"])
    first = None if first_bucket_bytes is None else check_real(
        "first_bucket_bytes", first_bucket_bytes, minimum=0, strict_min=True)
    total = math.fsum(g)
    if bucket_bytes is None:
        positive = g[g > 0]
        lo = float(positive.min()) if positive.size else 1.0
        caps = np.geomspace(lo, max(total, lo), 33)
    else:
        caps = check_array("bucket_bytes", bucket_bytes, ndim=1, finite=True).astype(float)
        if caps.size == 0:
            raise ValueError("bucket_bytes must hold at least one capacity; got an empty array")
        if np.any(caps <= 0):
            raise ValueError(f"bucket_bytes must hold capacities > 0 bytes, got min {caps.min()!r}")
    steps = [_ddp(b, g, cap, cap if first is None else first, rule, alpha=alpha, bandwidth=bandwidth, p=p,
                  forward_time=f, algorithm=algorithm, overlap=True, cluster=cluster) for cap in caps.tolist()]
    one = f + math.fsum(b) + _allreduce_model(algorithm, cluster)(total, p, alpha, bandwidth)
    return BucketSweep(
        bucket_bytes=caps,
        iteration_time=np.array([s.iteration_time for s in steps]),
        exposed_comm=np.array([s.exposed_comm for s in steps]),
        total_comm=np.array([s.total_comm for s in steps]),
        n_buckets=np.array([s.n_buckets for s in steps]),
        compute_time=f + math.fsum(b),
        one_bucket_time=one,
        total_bytes=total,
    )


# ---------------------------------------------------------------------------
# gradient-size profiles

#: GPT-2 small: the token embedding (50257 x 768, tied with the output layer)
#: is 38.6 M of 124.4 M parameters, about 31 %.
EMBEDDING_FRACTION = 0.31


def gradient_profile(total_bytes, n_layers, *, profile="uniform") -> np.ndarray:
    """Split a model's gradient bytes over ``n_layers`` layers, in backward order.

    ``"uniform"``: equal shares. ``"embedding"``: the last layer to finish
    its backward (the token embedding, at the input of the network) holds
    ``EMBEDDING_FRACTION`` of the bytes, as in GPT-2 small, and the others
    share the rest equally; its all-reduce is the one that can never hide.

    Examples
    --------
    >>> gradient_profile(1200, 3).tolist()
    [400.0, 400.0, 400.0]
    >>> float(gradient_profile(1000, 4, profile="embedding")[-1])
    310.0
    """
    total = check_real("total_bytes", total_bytes, minimum=0)
    n = check_int("n_layers", n_layers, minimum=1)
    check_choice("profile", profile, ["uniform", "embedding"])
    if profile == "uniform" or n == 1:
        return np.full(n, total / n)
    out = np.full(n, total * (1 - EMBEDDING_FRACTION) / (n - 1))
    out[-1] = total * EMBEDDING_FRACTION
    return out
