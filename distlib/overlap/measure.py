"""Measured DDP steps next to the model's prediction of them.

The chapter "Communication hiding, modelled and measured" runs
:mod:`distlib.examples.ddp_overlap` on this machine. That worker hands back
a :class:`DDPReport` (as a report line, :mod:`distlib.engines.report`): the
forward time and per-layer backward times it measured, all-reduce times for
several buffer sizes (:class:`AllreduceTimes`), and median step times for
each ``bucket_cap_mb`` (:class:`SweepRow`, with DDP's own :class:`Bucket` s)
with overlap on (ordinary DDP), off (``no_sync()`` and one flat all-reduce
after the backward pass) and without communication at all, and the checks
that the ranks trained alike (:class:`DDPChecks`).

This module holds those types and turns a report into a prediction and a
comparison, with no torch and no plotting:

* :func:`compare_ddp` fits ``alpha`` and ``bandwidth`` to the measured
  all-reduce times (:func:`distlib.collectives.fit_alpha_beta`, ring model),
  feeds the measured compute times and DDP's own buckets into
  :func:`distlib.overlap.bucket_timeline` and returns a
  :class:`DDPComparison`: predicted and measured step times side by side.

Units: seconds, bytes, bytes/s.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

from .._check import check_array, check_choice, check_int
from . import bucket_gradients, bucket_timeline

__all__ = ["Bucket", "SweepRow", "AllreduceTimes", "DDPChecks", "DDPReport", "DDPComparison", "compare_ddp",
           "fit_allreduce", "parse_json_line"]


@dataclass(frozen=True)
class Bucket:
    """One of DDP's gradient buckets: its bytes and its layers (backward positions, 0 = the last layer)."""

    n_bytes: int
    layers: list[int]


@dataclass(frozen=True)
class SweepRow:
    """One ``bucket_cap_mb`` of the sweep: median step times (s, slowest rank) of the three kinds of step.

    ``compute``: no communication (``no_sync()``); ``overlap``: ordinary DDP;
    ``no_overlap``: one flat all-reduce after the backward pass. ``*_cpu``
    the CPU seconds a rank used per step (every thread; NaN when not
    measured), ``*_samples`` every timed step. ``buckets``: DDP's own
    buckets (``None`` when this torch does not say).
    """

    bucket_cap_mb: float
    compute: float
    overlap: float
    no_overlap: float
    buckets: list[Bucket] | None = None
    compute_cpu: float = math.nan
    overlap_cpu: float = math.nan
    no_overlap_cpu: float = math.nan
    compute_samples: list[float] = field(default_factory=list)
    overlap_samples: list[float] = field(default_factory=list)
    no_overlap_samples: list[float] = field(default_factory=list)
    setup_seconds: float | None = None
    timed_seconds: float | None = None


@dataclass(frozen=True)
class AllreduceTimes:
    """Median seconds of one all-reduce of each size (bytes), nothing else running."""

    n_bytes: list[int]
    seconds: list[float]


@dataclass(frozen=True)
class DDPChecks:
    """Largest parameter differences after ``steps`` SGD steps (learning rate ``lr``), over every rank.

    Between ranks (overlap on, off), between overlap on and off, and against
    one process on the whole batch; ``max_update`` how far training moved
    the weights (the scale the others are small against).
    """

    steps: int
    lr: float
    max_rank_diff_overlap: float
    max_rank_diff_no_overlap: float
    max_diff_overlap_vs_no_overlap: float
    max_diff_overlap_vs_single_process: float
    max_diff_no_overlap_vs_single_process: float
    max_update: float


@dataclass(frozen=True)
class DDPReport:
    """What :mod:`distlib.examples.ddp_overlap` measured (seconds, bytes).

    ``grad_bytes`` and ``backward_times`` are per layer in backward order.
    The parts the worker was told to skip are ``None``. ``launch_seconds``
    is the whole run, as the launcher saw it.
    """

    p: int
    grad_bytes: list[int]
    forward_time: float | None = None
    backward_times: list[float] | None = None
    allreduce: AllreduceTimes | None = None
    sweep: list[SweepRow] | None = None
    checks: DDPChecks | None = None
    backend: str = ""
    torch: str = ""
    threads: int = 1
    cpu_count: int | None = None
    model: dict[str, int] = field(default_factory=dict)
    phase_seconds: dict[str, float] = field(default_factory=dict)
    seconds: float | None = None
    launch_seconds: float | None = None


def parse_json_line(text: str, marker: str) -> dict:
    """The JSON object on the last line of ``text`` that starts with ``marker``.

    For text a person saved. The book's workers hand their results back
    typed instead (:mod:`distlib.engines.report`).

    Examples
    --------
    >>> parse_json_line('hello\\nRESULT {"a": 1}\\n', "RESULT ")
    {'a': 1}
    """
    if not isinstance(text, str) or not isinstance(marker, str) or not marker:
        raise TypeError("text and marker must be strings (marker non-empty)")
    lines = [ln for ln in text.splitlines() if ln.startswith(marker)]
    if not lines:
        tail = "\n".join(text.strip().splitlines()[-5:])
        raise ValueError(f"no line starting with {marker.strip()!r} in the output; it ended with:\n{tail}")
    return json.loads(lines[-1][len(marker):])


def _ring(n_bytes, p, alpha, bandwidth):
    from ..collectives import collective_time

    return collective_time("allreduce", n_bytes, p, alpha=alpha, bandwidth=bandwidth, algorithm="ring")


def fit_allreduce(n_bytes, seconds, *, p) -> tuple:
    """``(alpha, bandwidth)`` of the ring model fitted to measured all-reduce times.

    Uses :func:`distlib.collectives.fit_alpha_beta` (relative least squares,
    both parameters >= 0).

    Examples
    --------
    >>> from distlib.collectives import collective_time
    >>> sizes = np.array([1e4, 1e5, 1e6, 1e7])
    >>> t = collective_time("allreduce", sizes, 2, alpha=2e-4, bandwidth=2e9)
    >>> a, bw = fit_allreduce(sizes, t, p=2)
    >>> round(a * 1e6, 3), round(bw / 1e9, 3)
    (200.0, 2.0)
    """
    from ..collectives import fit_alpha_beta

    p = check_int("p", p, minimum=2)
    n = check_array("n_bytes", n_bytes, ndim=1, finite=True, minimum=0).astype(float)
    t = check_array("seconds", seconds, ndim=1, finite=True, minimum=0).astype(float)
    return fit_alpha_beta(n, t, p=p, collective="allreduce", algorithm="ring")


@dataclass(frozen=True)
class DDPComparison:
    """Measured and predicted DDP step times, one entry per bucket capacity.

    Arrays are indexed like ``bucket_cap_mb``. Predictions use the measured
    forward and per-layer backward times, DDP's own buckets (or the model's
    :func:`distlib.bucket_gradients` when DDP did not report them) and the
    measured all-reduce times; they assume, as the model does, that
    communication and compute never slow each other down. ``cpu_*`` are
    the CPU seconds a rank used per step (all its threads; NaN if the
    report has none): what communication costs the processor.
    """

    p: int
    bucket_cap_mb: np.ndarray
    n_buckets: np.ndarray
    n_buckets_model: np.ndarray
    measured_compute: np.ndarray
    measured_overlap: np.ndarray
    measured_no_overlap: np.ndarray
    cpu_compute: np.ndarray
    cpu_overlap: np.ndarray
    cpu_no_overlap: np.ndarray
    predicted_compute: float
    predicted_overlap: np.ndarray
    predicted_no_overlap: float
    alpha: float
    bandwidth: float
    allreduce_bytes: np.ndarray
    allreduce_seconds: np.ndarray
    timelines: tuple
    total_bytes: float

    @property
    def bucket_bytes(self) -> np.ndarray:
        """Capacities in bytes (``bucket_cap_mb`` is in MiB, as DDP's argument)."""
        return self.bucket_cap_mb * 2**20

    @property
    def overlap_ratio(self) -> np.ndarray:
        """Measured / predicted step time with overlap."""
        return self.measured_overlap / self.predicted_overlap

    @property
    def no_overlap_ratio(self) -> np.ndarray:
        return self.measured_no_overlap / self.predicted_no_overlap

    @property
    def measured_gain(self) -> np.ndarray:
        """What overlap bought, measured: no-overlap step / overlap step (> 1: it helped)."""
        return self.measured_no_overlap / self.measured_overlap

    @property
    def predicted_gain(self) -> np.ndarray:
        return self.predicted_no_overlap / self.predicted_overlap

    @property
    def measured_exposed(self) -> np.ndarray:
        """Measured step with overlap minus the measured step without communication."""
        return self.measured_overlap - self.measured_compute

    @property
    def predicted_exposed(self) -> np.ndarray:
        return self.predicted_overlap - self.predicted_compute

    def rows(self) -> list:
        """One dict per capacity, for a table (seconds)."""
        out = []
        for i, cap in enumerate(self.bucket_cap_mb.tolist()):
            out.append({
                "bucket_cap_mb": cap,
                "buckets": int(self.n_buckets[i]),
                "buckets_model": int(self.n_buckets_model[i]),
                "measured_compute": float(self.measured_compute[i]),
                "measured_overlap": float(self.measured_overlap[i]),
                "predicted_overlap": float(self.predicted_overlap[i]),
                "measured_no_overlap": float(self.measured_no_overlap[i]),
                "predicted_no_overlap": float(self.predicted_no_overlap),
            })
        return out

    def table(self) -> str:
        """The comparison as fixed-width text (milliseconds), under 80 characters wide."""
        head = (f"{'cap':>5} {'bkts':>4} {'comp':>5} | {'overlap':>7} {'model':>5} {'ratio':>5} | "
                f"{'no-ovl':>6} {'model':>5} {'ratio':>5} | {'gain':>4} {'model':>5}")
        lines = [head, "-" * len(head)]
        for i, r in enumerate(self.rows()):
            lines.append(
                f"{r['bucket_cap_mb']:>5g} {r['buckets']:>4d} {r['measured_compute'] * 1e3:>5.1f} | "
                f"{r['measured_overlap'] * 1e3:>7.1f} {r['predicted_overlap'] * 1e3:>5.1f} "
                f"{self.overlap_ratio[i]:>5.2f} | {r['measured_no_overlap'] * 1e3:>6.1f} "
                f"{r['predicted_no_overlap'] * 1e3:>5.1f} {self.no_overlap_ratio[i]:>5.2f} | "
                f"{self.measured_gain[i]:>4.2f} {self.predicted_gain[i]:>5.2f}")
        lines.append("cap = bucket_cap_mb (MiB), bkts = DDP's buckets, comp = no communication;")
        lines.append("ms, slowest rank, median; ratio = measured/model; gain = no-ovl/overlap")
        return "\n".join(lines)

    def cpu_table(self) -> str:
        """CPU milliseconds per step (all threads of a rank) beside the wall-clock time."""
        head = (f"{'cap MiB':>8} | {'compute':>15} | {'overlap':>15} | {'no-overlap':>15}")
        lines = [head, f"{'':>8} | {'wall':>7} {'CPU':>7} | {'wall':>7} {'CPU':>7} | {'wall':>7} {'CPU':>7}",
                 "-" * len(head)]
        for i, cap in enumerate(self.bucket_cap_mb.tolist()):
            lines.append(
                f"{cap:>8g} | {self.measured_compute[i] * 1e3:>7.1f} {self.cpu_compute[i] * 1e3:>7.1f} | "
                f"{self.measured_overlap[i] * 1e3:>7.1f} {self.cpu_overlap[i] * 1e3:>7.1f} | "
                f"{self.measured_no_overlap[i] * 1e3:>7.1f} {self.cpu_no_overlap[i] * 1e3:>7.1f}")
        return "\n".join(lines)


def _buckets_from_report(row, grad_bytes, cap_bytes):
    """``(layer groups, bytes)`` of DDP's reported buckets, else the model's own."""
    reported = row.buckets
    if reported:
        groups = [tuple(int(i) for i in b.layers) for b in reported]
        flat = [i for g in groups for i in g]
        if sorted(flat) == list(range(len(grad_bytes))):
            order = sorted(range(len(groups)), key=lambda k: max(groups[k]))
            return [groups[k] for k in order], [float(reported[k].n_bytes) for k in order], len(groups)
    bks = bucket_gradients(grad_bytes, bucket_bytes=cap_bytes)
    return [b.layers for b in bks], [b.n_bytes for b in bks], None


def compare_ddp(report: DDPReport, *, comm: str = "measured") -> DDPComparison:
    """Predict every step of a :mod:`distlib.examples.ddp_overlap` report and line it up.

    Parameters
    ----------
    report : DDPReport
        What the worker measured; it needs ``forward_time``,
        ``backward_times``, ``allreduce`` and ``sweep`` (a worker run with
        ``--skip`` lacks some).
    comm : {"measured", "fit"}
        Where each bucket's all-reduce time comes from: ``"measured"``
        takes the time the worker measured for exactly that size (it times
        every bucket size that occurs); ``"fit"`` takes the ring model with
        the fitted ``alpha`` and ``bandwidth`` (which are reported either way).

    Returns
    -------
    DDPComparison

    Examples
    --------
    A made-up report in which the model holds exactly: two layers of 1 ms,
    all-reduces of ``1e-4 + n / 1e9`` s (ring, p = 2: alpha = 50 µs per
    step, 1 GB/s):

    >>> ar = lambda n: 1e-4 + n / 1e9
    >>> rep = DDPReport(p=2, forward_time=1e-3, backward_times=[1e-3, 1e-3], grad_bytes=[400_000, 400_000],
    ...                 allreduce=AllreduceTimes([400_000, 800_000], [ar(4e5), ar(8e5)]),
    ...                 sweep=[SweepRow(0.25, compute=3e-3, overlap=3.5e-3, no_overlap=3e-3 + ar(8e5))])
    >>> c = compare_ddp(rep)
    >>> c.n_buckets_model.tolist(), round(float(c.predicted_overlap[0]) * 1e3, 6)
    ([2], 3.5)
    >>> round(float(c.no_overlap_ratio[0]), 6)
    1.0
    """
    p, b, g, f, n_ar, t_ar = _checked_report(report, comm)
    alpha, bandwidth = fit_allreduce(n_ar, t_ar, p=p)
    allreduce_time = _allreduce_time(n_ar, t_ar, p=p, alpha=alpha, bandwidth=bandwidth, comm=comm)
    total = math.fsum(g)
    compute = f + math.fsum(b)
    no_overlap = compute + float(allreduce_time(total)[0])
    per_cap = _sweep_columns(report.sweep, b, g, f, allreduce_time)
    return DDPComparison(p=p, predicted_compute=compute, predicted_no_overlap=no_overlap, alpha=alpha,
                         bandwidth=bandwidth, allreduce_bytes=n_ar, allreduce_seconds=t_ar, total_bytes=total,
                         **per_cap)


def _checked_report(report, comm: str) -> tuple:
    """``(p, backward times, grad bytes, forward time, all-reduce bytes, seconds)`` of a complete report."""
    if not isinstance(report, DDPReport):
        raise TypeError(f"report must be a DDPReport (what ddp_overlap.launch returns), got {type(report).__name__}")
    needed = ("forward_time", "backward_times", "allreduce", "sweep")
    missing = [k for k in needed if getattr(report, k) is None]
    if missing:
        raise ValueError(f"report lacks {missing}; run the worker without --skip")
    p = check_int("p", report.p, minimum=2)
    b = check_array("backward_times", report.backward_times, ndim=1, finite=True).astype(float)
    b = np.maximum(b, 0.0)  # hook order jitter can make a gap slightly negative
    g = check_array("grad_bytes", report.grad_bytes, ndim=1, finite=True, minimum=0).astype(float)
    if g.shape != b.shape:
        raise ValueError(f"grad_bytes ({g.size}) and backward_times ({b.size}) must have one entry per layer")
    f = float(report.forward_time)
    n_ar = np.asarray(report.allreduce.n_bytes, dtype=float)
    t_ar = np.asarray(report.allreduce.seconds, dtype=float)
    check_choice("comm", comm, ["measured", "fit"])
    return p, b, g, f, n_ar, t_ar


def _allreduce_time(n_ar, t_ar, *, p, alpha, bandwidth, comm):
    """``sizes -> seconds``: the time measured for exactly those sizes if ``comm`` says so, else the ring model's."""
    measured = dict(zip(n_ar.tolist(), t_ar.tolist()))

    def allreduce_time(sizes):
        sizes = np.atleast_1d(np.asarray(sizes, dtype=float))
        if comm == "measured" and all(x in measured for x in sizes.tolist()):
            return np.array([measured[x] for x in sizes.tolist()])
        return np.atleast_1d(_ring(sizes, p, alpha, bandwidth))

    return allreduce_time


def _sweep_columns(sweep, b, g, f, allreduce_time) -> dict:
    """The :class:`DDPComparison` fields indexed by capacity: buckets, measured times, CPU times, predictions."""
    caps, nb, nbm, mc, mo, mn, po, tls = [], [], [], [], [], [], [], []
    cpu = {"compute": [], "overlap": [], "no_overlap": []}
    for row in sweep:
        cap = float(row.bucket_cap_mb)
        groups, sizes, n_reported = _buckets_from_report(row, g, cap * 2**20)
        tl = bucket_timeline(b, groups, allreduce_time(sizes), forward_time=f)
        caps.append(cap)
        nbm.append(len(bucket_gradients(g, bucket_bytes=cap * 2**20)))
        nb.append(n_reported if n_reported is not None else nbm[-1])
        mc.append(float(row.compute))
        mo.append(float(row.overlap))
        mn.append(float(row.no_overlap))
        for mode, acc in cpu.items():
            acc.append(float(getattr(row, f"{mode}_cpu")))
        po.append(tl.iteration_time)
        tls.append(tl)
    return dict(
        bucket_cap_mb=np.array(caps),
        n_buckets=np.array(nb),
        n_buckets_model=np.array(nbm),
        measured_compute=np.array(mc),
        measured_overlap=np.array(mo),
        measured_no_overlap=np.array(mn),
        cpu_compute=np.array(cpu["compute"]),
        cpu_overlap=np.array(cpu["overlap"]),
        cpu_no_overlap=np.array(cpu["no_overlap"]),
        predicted_overlap=np.array(po),
        timelines=tuple(tls),
    )
