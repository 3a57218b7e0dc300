"""A DistributedDataParallel step: bucketed all-reduces priced and queued under the backward pass.

:func:`ddp_step` packs the gradients (:mod:`distlib.overlap.buckets`), prices
each bucket's all-reduce (the alpha-beta model of one flat algorithm, or NCCL
on a :class:`distlib.GpuCluster`) and schedules the buckets on one channel
(:mod:`distlib.overlap.schedule`); :func:`bucket_timeline` does the same for
buckets and times given explicitly (a real run's), and :func:`bucket_sweep`
maps the step time over bucket capacities. Re-exported by :mod:`distlib.overlap`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._check import check_array, check_choice, check_int, check_real
from ..collectives.names import ALLREDUCE_ALGORITHMS
from .buckets import Bucket, _bucket, _bucket_args
from .schedule import OverlapTimeline, _same_length, _schedule, _times

__all__ = ["DDPStep", "ddp_step", "bucket_timeline", "BucketSweep", "bucket_sweep"]


def _allreduce_model(algorithm, cluster=None):
    """``f(n_bytes, p, alpha, bandwidth)``: all-reduce seconds.

    From :func:`distlib.collectives.collective_time` (the alpha-beta model of
    one flat algorithm), or, given a :class:`distlib.GpuCluster`, from
    :func:`distlib.predict_time` (NCCL on that cluster; ``p``, ``alpha`` and
    ``bandwidth`` are then the cluster's).
    """
    if cluster is not None:
        from ..gpu_cluster import predict_time

        return lambda n_bytes, p, alpha, bandwidth: predict_time("allreduce", n_bytes, cluster)
    from ..collectives import collective_time

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
        from ..gpu_cluster import GpuCluster

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

