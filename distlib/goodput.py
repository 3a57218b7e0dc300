"""When a node dies: failures, checkpoints and the share of wall time that trains (chapter 16).

A synchronous job stops when any one of its GPUs stops. With ``gpus``
independent GPUs, each failing at random (exponential times between
failures, mean ``mtbf_per_gpu``), the job as a whole fails at random too,
``gpus`` times as often: its mean time between failures is
``M = mtbf_per_gpu / gpus`` (:func:`job_mtbf`; the least of ``n``
independent exponential times is exponential with ``n`` times the rate).

The job saves a checkpoint after every ``interval`` seconds of training
(``tau``); a save blocks training for ``write_time`` (``delta``). After a
failure the job restarts, which takes ``restart_time`` (``R``), and goes on
from the last complete checkpoint: the training since then is lost.

**Goodput** is the share of wall time spent on training that is kept. To
first order in ``tau / M``, ``delta / M`` and ``R / M`` (:func:`goodput`)::

    goodput ~ 1 - delta / tau - (R + tau / 2) / M

a save's ``delta`` for every ``tau`` trained, and, once every ``M`` on
average, a restart plus half an interval of lost training. Its best
interval is **Young's** ``sqrt(2 delta M)`` (:func:`young_interval`; J. W.
Young, "A first order approximation to the optimum checkpoint interval",
CACM 17(9), 1974). :func:`expected_goodput` is the same quantity without the
approximation, for the assumptions :func:`simulate_failures` draws; **Daly's**
higher-order estimate (:func:`daly_interval`; J. T. Daly, "A higher order
estimate of the optimum checkpoint interval for restart dumps", Future
Generation Computer Systems 22(3), 2006) comes close to its best interval
(:func:`optimal_interval`) where Young's drifts.

:func:`llama3_interruptions` holds what Llama 3's report counts of the
failures of a real 16K-GPU run (Grattafiori et al. 2024, section 3.3.4 and
Table 5).

Units: seconds everywhere (the widget shows hours and minutes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ._check import check_int, check_real

__all__ = ["EVENT_KINDS", "job_mtbf", "young_interval", "daly_interval", "optimal_interval", "goodput",
           "expected_goodput", "GoodputCurve", "goodput_curve", "FailureRun", "simulate_failures", "Interruption",
           "Llama3Interruptions", "llama3_interruptions"]

#: What a stretch of a simulated run's wall time was spent on (:class:`FailureRun`): training later saved,
#: a complete save, training (or a save) a failure threw away, restarting, and what was neither saved nor lost
#: yet when the run's window closed.
EVENT_KINDS = ("work", "save", "lost", "restart", "unsaved")


# ---- the job's failures and the best interval ---------------------------------------------------------------


def job_mtbf(gpus: int, mtbf_per_gpu: float) -> float:
    """The job's mean time between failures in seconds: ``mtbf_per_gpu / gpus``.

    Each GPU fails at random, independently of the others, its times between failures exponential with mean
    ``mtbf_per_gpu`` (s); the job stops at the first of them, so it fails ``gpus`` times as often.

    Examples
    --------
    A GPU failing once in 50,000 hours, 16,384 of them: the job fails every 3.05 hours.

    >>> round(job_mtbf(16384, 50_000 * 3600) / 3600, 2)
    3.05
    """
    gpus = check_int("gpus", gpus, minimum=1)
    mtbf_per_gpu = check_real("mtbf_per_gpu", mtbf_per_gpu, minimum=0, strict_min=True)
    return mtbf_per_gpu / gpus


def _positive(name: str, value) -> float:
    return check_real(name, value, minimum=0, strict_min=True)


def young_interval(write_time: float, mtbf: float) -> float:
    """Young's checkpoint interval, ``sqrt(2 * write_time * mtbf)`` seconds (Young 1974).

    The training time between saves that maximizes the first-order :func:`goodput` (its derivative
    ``delta / tau**2 - 1 / (2 M)`` is zero there). ``write_time`` is one save's blocking time and ``mtbf`` the
    job's mean time between failures (:func:`job_mtbf`), both in seconds. Good while ``write_time`` is small
    against ``mtbf``; as a save grows it overshoots the best interval (:func:`optimal_interval`), reaching
    ``mtbf`` itself at ``write_time = mtbf / 2``.

    Examples
    --------
    A 60 s save and a failure every 3 hours: save every 19 minutes of training.

    >>> round(young_interval(60, 3 * 3600) / 60, 1)
    19.0
    """
    return math.sqrt(2.0 * _positive("write_time", write_time) * _positive("mtbf", mtbf))


def daly_interval(write_time: float, mtbf: float) -> float:
    """Daly's higher-order estimate of the best checkpoint interval in seconds (Daly 2006, eq. 37).

    With ``delta = write_time`` and ``M = mtbf`` (the job's), the training time between saves is::

        tau = sqrt(2 delta M) * (1 + sqrt(delta / (2 M)) / 3 + (delta / (2 M)) / 9) - delta    for delta < 2 M
        tau = M                                                                                for delta >= 2 M

    Daly derives it as a perturbation series of the best interval of a complete model of the run (the one
    :func:`expected_goodput` computes) in the small parameter ``delta / (2 M)``: close to that optimum
    (:func:`optimal_interval`) while ``delta`` is small against ``M``, and taken as ``M`` itself once a save
    lasts two mean times between failures. For ``delta << M`` it tends to Young's ``sqrt(2 delta M)``.

    Examples
    --------
    Daly's own cases, a 5-minute dump and ``M`` of 24 hours, 6 hours and 15 minutes: he reports 117, 57 and
    9.1 minutes.

    >>> [round(daly_interval(300, m) / 60, 1) for m in (24 * 3600, 6 * 3600, 15 * 60)]
    [116.7, 56.7, 9.1]
    >>> daly_interval(3600, 1200) == 1200.0       # a save longer than 2 M: the interval is M
    True
    """
    delta, m = _positive("write_time", write_time), _positive("mtbf", mtbf)
    if delta >= 2.0 * m:
        return m
    x = delta / (2.0 * m)
    return math.sqrt(2.0 * delta * m) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - delta


def optimal_interval(write_time: float, mtbf: float) -> float:
    """The interval that maximizes :func:`expected_goodput` exactly, in seconds.

    With ``x = tau / M`` and ``d = delta / M``, the expected goodput ``tau / (M e^(R/M) (e^((tau+delta)/M) - 1))``
    is largest where its derivative in ``tau`` vanishes::

        e^(x + d) (1 - x) = 1,    0 < x < 1

    (the restart time ``R`` scales the goodput but does not move its peak). The left side falls from
    ``e^d > 1`` at ``x = 0`` to 0 at ``x = 1``, so there is one root; it is found by bisection to double
    precision. (Equivalently ``x = 1 + W0(-e^(-1-d))``, with ``W0`` Lambert's function.)

    Examples
    --------
    Daly's estimate (:func:`daly_interval`) and the exact optimum agree to a few seconds at ``M = 6 h``:

    >>> round(optimal_interval(300, 6 * 3600) / 60, 1), round(daly_interval(300, 6 * 3600) / 60, 1)
    (56.7, 56.7)
    """
    delta, m = _positive("write_time", write_time), _positive("mtbf", mtbf)
    d, lo, hi = delta / m, 0.0, 1.0
    for _ in range(64):  # the bracket halves 64 times: below a double's resolution of 1
        mid = 0.5 * (lo + hi)
        if math.exp(mid + d) * (1.0 - mid) > 1.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi) * m


# ---- goodput --------------------------------------------------------------------------------------------------


def _inputs(gpus, mtbf_per_gpu, write_time, restart_time, interval):
    m = job_mtbf(gpus, mtbf_per_gpu)
    delta = check_real("write_time", write_time, minimum=0)
    r = check_real("restart_time", restart_time, minimum=0)
    tau = np.asarray(interval, dtype=float)
    if tau.size == 0 or not np.all(np.isfinite(tau)) or np.any(tau <= 0):
        raise ValueError(f"interval must be a finite number of seconds > 0 (or an array of them), got {interval!r}")
    return m, delta, r, tau


def _out(x):
    return float(x) if np.ndim(x) == 0 else x


def goodput(*, gpus: int, mtbf_per_gpu: float, write_time: float, restart_time: float, interval):
    """The share of wall time that trains and is kept, to first order: ``1 - delta/tau - (R + tau/2)/M``.

    Parameters
    ----------
    gpus : int
        GPUs in the job, each failing independently (:func:`job_mtbf`).
    mtbf_per_gpu : float
        One GPU's mean time between failures, seconds.
    write_time : float
        ``delta``: seconds one checkpoint save blocks training.
    restart_time : float
        ``R``: seconds from a failure until training runs again (new node, relaunch, loading the checkpoint).
    interval : float or array
        ``tau``: seconds of training between saves.

    Returns
    -------
    float or ndarray
        The first-order goodput (an array for an array of intervals).

    Notes
    -----
    Assumptions: failures arrive at random at rate ``1 / M`` (``M = mtbf_per_gpu / gpus``), each one costing a
    restart ``R`` plus, on average, half an interval of training lost since the last save; every save blocks
    for ``delta``. The formula counts those losses as shares of the wall time and keeps only first-order
    terms, so it holds while ``tau``, ``delta`` and ``R`` are small against ``M``; it differs from
    :func:`expected_goodput` (exact under the same assumptions) by terms of second order in them (over the
    tests' grid, by less than the square of the first-order loss ``delta/tau + (R + tau/2 + delta)/M`` while
    that loss is under 30%), and goes negative where the job could not progress at all. Its maximum over
    ``tau`` is Young's interval.

    Examples
    --------
    One GPU failing every 24 hours, a 5-minute save every 2 hours, a 10-minute restart:

    >>> round(goodput(gpus=1, mtbf_per_gpu=86400, write_time=300, restart_time=600, interval=7200), 4)
    0.9097
    """
    m, delta, r, tau = _inputs(gpus, mtbf_per_gpu, write_time, restart_time, interval)
    return _out(1.0 - delta / tau - (r + tau / 2.0) / m)


def expected_goodput(*, gpus: int, mtbf_per_gpu: float, write_time: float, restart_time: float, interval):
    """The long-run goodput of the run :func:`simulate_failures` draws, exactly: ``tau / E``.

    ``E = M e^(R/M) (e^((tau + delta)/M) - 1)`` is the expected wall time to get one interval ``tau`` of
    training saved (arguments as :func:`goodput`'s).

    Notes
    -----
    Assumptions: failures form a Poisson process of rate ``1 / M`` in wall time, during training, saves and
    restarts alike; a failure during a save loses that save and the training before it; a failure during a
    restart starts the restart again; a run is a long chain of such intervals.

    Derivation (a renewal argument): let ``T = tau + delta`` be one interval with its save. An attempt at it
    either meets no failure, with probability ``e^(-T/M)``, taking ``T``; or fails after ``t < T`` and then
    pays a restart and tries again. A restart of length ``R`` that starts over at each failure takes
    ``M (e^(R/M) - 1)`` on average (the same argument with nothing to add). Solving
    ``E = e^(-T/M) T + (1 - e^(-T/M)) (E[t | t < T] + M (e^(R/M) - 1) + E)`` gives ``E`` above. Daly 2006
    optimizes the run time of the same model: its best interval (:func:`optimal_interval`) reproduces the
    117, 57 and 9.1 minutes he reports. To first order in ``T / M`` and ``R / M``, ``tau / E`` is
    :func:`goodput`.

    Examples
    --------
    The case of :func:`goodput`'s example: 0.3 points above the first-order formula.

    >>> round(expected_goodput(gpus=1, mtbf_per_gpu=86400, write_time=300, restart_time=600, interval=7200), 4)
    0.9126
    """
    m, delta, r, tau = _inputs(gpus, mtbf_per_gpu, write_time, restart_time, interval)
    return _out(tau / (m * math.exp(r / m) * np.expm1((tau + delta) / m)))


@dataclass(frozen=True)
class GoodputCurve:
    """Goodput over a range of checkpoint intervals, and the intervals that maximize it (seconds).

    ``first_order`` is :func:`goodput`, ``expected`` :func:`expected_goodput`, one of each per ``intervals``.
    ``young``, ``daly`` and ``optimum`` are :func:`young_interval`, :func:`daly_interval` and
    :func:`optimal_interval` for the job's ``mtbf``.
    """

    gpus: int
    mtbf_per_gpu: float
    write_time: float
    restart_time: float
    mtbf: float
    intervals: np.ndarray
    first_order: np.ndarray
    expected: np.ndarray
    young: float
    daly: float
    optimum: float

    def at(self, interval: float) -> float:
        """:func:`expected_goodput` at ``interval`` seconds, for this job."""
        return expected_goodput(gpus=self.gpus, mtbf_per_gpu=self.mtbf_per_gpu, write_time=self.write_time,
                                restart_time=self.restart_time, interval=interval)

    @property
    def best(self) -> float:
        """The largest expected goodput, at :attr:`optimum`."""
        return self.at(self.optimum)


def goodput_curve(*, gpus: int, mtbf_per_gpu: float, write_time: float, restart_time: float,
                  intervals=None) -> GoodputCurve:
    """Goodput against the checkpoint interval for one job (arguments as :func:`goodput`'s).

    ``intervals`` (seconds) defaults to 200 points spaced evenly in the logarithm from a fiftieth of the exact
    optimum to the job's mean time between failures (or ten times the optimum, whichever is further).

    Examples
    --------
    >>> c = goodput_curve(gpus=16384, mtbf_per_gpu=50_000 * 3600, write_time=60, restart_time=600)
    >>> round(c.mtbf / 3600, 2), round(c.young / 60, 1), round(c.daly / 60, 1), round(c.optimum / 60, 1)
    (3.05, 19.1, 18.5, 18.5)
    >>> bool(c.expected.max() <= c.best + 1e-12)
    True
    """
    m = job_mtbf(gpus, mtbf_per_gpu)
    write_time = check_real("write_time", write_time, minimum=0, strict_min=True)
    best = optimal_interval(write_time, m)
    if intervals is None:
        intervals = np.geomspace(best / 50.0, max(m, 10.0 * best), 200)
    kw = dict(gpus=gpus, mtbf_per_gpu=mtbf_per_gpu, write_time=write_time, restart_time=restart_time)
    tau = np.atleast_1d(np.asarray(intervals, dtype=float))
    return GoodputCurve(gpus=int(gpus), mtbf_per_gpu=float(mtbf_per_gpu), write_time=write_time,
                        restart_time=float(restart_time), mtbf=m, intervals=tau,
                        first_order=np.atleast_1d(goodput(**kw, interval=tau)),
                        expected=np.atleast_1d(expected_goodput(**kw, interval=tau)),
                        young=young_interval(write_time, m), daly=daly_interval(write_time, m), optimum=best)


# ---- a simulated run ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FailureRun:
    """A simulated run (:func:`simulate_failures`): what every stretch of its wall time went to.

    ``starts``, ``ends`` and ``kinds`` (indices into :data:`EVENT_KINDS`) list the run's stretches in time
    order, from 0 to ``duration``, with no gap; ``failures`` the times the job failed. ``segment_times`` is
    the wall time each saved interval took, from the save before it (or the start) to its own save, failures
    and restarts included.
    """

    gpus: int
    mtbf_per_gpu: float
    write_time: float
    restart_time: float
    interval: float
    duration: float
    seed: object
    starts: np.ndarray
    ends: np.ndarray
    kinds: np.ndarray
    failures: np.ndarray
    segment_times: np.ndarray = field(repr=False)

    @property
    def mtbf(self) -> float:
        """The job's mean time between failures (:func:`job_mtbf`)."""
        return job_mtbf(self.gpus, self.mtbf_per_gpu)

    @property
    def n_failures(self) -> int:
        return int(self.failures.size)

    @property
    def n_saves(self) -> int:
        return int(self.segment_times.size)

    def time_in(self, kind: str) -> float:
        """Seconds of the run spent on ``kind`` (one of :data:`EVENT_KINDS`)."""
        if kind not in EVENT_KINDS:
            raise ValueError(f"kind must be one of {', '.join(map(repr, EVENT_KINDS))}; got {kind!r}")
        pick = self.kinds == EVENT_KINDS.index(kind)
        return float(np.sum(self.ends[pick] - self.starts[pick]))

    @property
    def goodput(self) -> float:
        """The measured goodput: training saved over the run's wall time."""
        return self.time_in("work") / self.duration

    @property
    def standard_error(self) -> float:
        """The measured goodput's standard error, from the spread of :attr:`segment_times`.

        The saved intervals are independent and alike (a renewal process), so the goodput is ``tau`` over
        their mean wall time ``W``, whose relative standard error is ``std(W) / (mean(W) sqrt(n))`` for ``n``
        saves (to first order, the delta method). ``nan`` with fewer than two saves.
        """
        w = self.segment_times
        if w.size < 2:
            return float("nan")
        return self.goodput * float(np.std(w, ddof=1) / (np.mean(w) * math.sqrt(w.size)))

    @property
    def expected(self) -> float:
        """:func:`expected_goodput` for the run's inputs: what a long run's :attr:`goodput` tends to."""
        return expected_goodput(gpus=self.gpus, mtbf_per_gpu=self.mtbf_per_gpu, write_time=self.write_time,
                                restart_time=self.restart_time, interval=self.interval)


def simulate_failures(*, gpus: int, mtbf_per_gpu: float, write_time: float, restart_time: float,
                      interval: float, duration: float, seed=0) -> FailureRun:
    """Simulate a run of ``duration`` seconds of wall time with random failures and periodic checkpoints.

    The job trains ``interval`` seconds, saves for ``write_time``, and so on. Failures arrive as a Poisson
    process of rate ``gpus / mtbf_per_gpu`` (exponential times between them, drawn from
    ``numpy.random.default_rng(seed)``; ``seed`` may be an int or a ``numpy.random.Generator``). A failure
    throws away the training and any save in progress since the last complete save, and the job restarts for
    ``restart_time``; a failure during a restart starts the restart again. The assumptions are
    :func:`expected_goodput`'s, which is what the measured goodput tends to over long runs.

    Returns
    -------
    FailureRun
        Every stretch of the run (``"work"``, ``"save"``, ``"lost"``, ``"restart"``, and ``"unsaved"`` for the
        training not yet saved when the window closes), the failure times and the measured goodput with its
        standard error.

    Examples
    --------
    >>> run = simulate_failures(gpus=1, mtbf_per_gpu=3600, write_time=60, restart_time=300, interval=900,
    ...                         duration=86400, seed=1)
    >>> sum(run.time_in(k) for k in EVENT_KINDS) == run.duration     # every second accounted for
    True
    >>> abs(run.goodput - run.expected) < 4 * run.standard_error
    True
    """
    m = job_mtbf(gpus, mtbf_per_gpu)
    delta = check_real("write_time", write_time, minimum=0)
    r = check_real("restart_time", restart_time, minimum=0)
    tau = _positive("interval", interval)
    end = _positive("duration", duration)
    rng = np.random.default_rng(seed)
    starts, ends, kinds, failures, segments = _run(m, tau, delta, r, end, rng)
    return FailureRun(gpus=int(gpus), mtbf_per_gpu=float(mtbf_per_gpu), write_time=delta, restart_time=r,
                      interval=tau, duration=end, seed=seed, starts=np.array(starts), ends=np.array(ends),
                      kinds=np.array(kinds, dtype=np.int8), failures=np.array(failures),
                      segment_times=np.array(segments))


def _run(m: float, tau: float, delta: float, r: float, end: float, rng) -> tuple:
    """The event loop of :func:`simulate_failures`: lists of starts, ends, kinds, failure times, segment times."""
    work, save, lost, restart, unsaved = range(len(EVENT_KINDS))
    starts, ends, kinds, failures, segments = [], [], [], [], []

    def add(a, b, kind):
        if b > a:
            starts.append(a)
            ends.append(b)
            kinds.append(kind)

    t, last_save = 0.0, 0.0
    next_failure = rng.exponential(m)
    while t < end:
        trained, saved = t + tau, t + tau + delta
        if next_failure >= saved and saved <= end:  # the interval and its save complete
            add(t, trained, work)
            add(trained, saved, save)
            segments.append(saved - last_save)
            t = last_save = saved
            continue
        if next_failure >= end:  # the window closes first
            add(t, end, unsaved)
            break
        add(t, next_failure, lost)  # a failure: the training (and any save) since the last save is gone
        t = next_failure
        while t < end:  # restart, again after each failure during it
            failures.append(t)
            next_failure = t + rng.exponential(m)
            done = t + r
            if min(done, next_failure) >= end:
                add(t, end, restart)
                t = end
            elif next_failure < done:
                add(t, next_failure, restart)
                t = next_failure
                continue
            else:
                add(t, done, restart)
                t = done
            break
    return starts, ends, kinds, failures, segments


# ---- Llama 3's interruptions ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interruption:
    """One row of Llama 3's Table 5: a root cause, its category, how many interruptions, the share printed."""

    component: str
    category: str
    count: int
    printed_share: float
    """The "% of Interruptions" as the table prints it, as a fraction (0.301 for 30.1%)."""


#: Table 5 of Grattafiori et al. 2024, "The Llama 3 Herd of Models" (arXiv:2407.21783), in its order.
_TABLE_5 = (
    ("Faulty GPU", "GPU", 148, 0.301), ("GPU HBM3 Memory", "GPU", 72, 0.172),
    ("Software Bug", "Dependency", 54, 0.129), ("Network Switch/Cable", "Network", 35, 0.084),
    ("Host Maintenance", "Unplanned Maintenance", 32, 0.076), ("GPU SRAM Memory", "GPU", 19, 0.045),
    ("GPU System Processor", "GPU", 17, 0.041), ("NIC", "Host", 7, 0.017),
    ("NCCL Watchdog Timeouts", "Unknown", 7, 0.017), ("Silent Data Corruption", "GPU", 6, 0.014),
    ("GPU Thermal Interface + Sensor", "GPU", 6, 0.014), ("SSD", "Host", 3, 0.007),
    ("Power Supply", "Host", 3, 0.007), ("Server Chassis", "Host", 2, 0.005),
    ("IO Expansion Board", "Host", 2, 0.005), ("Dependency", "Dependency", 2, 0.005), ("CPU", "Host", 2, 0.005),
    ("System Memory", "Host", 2, 0.005),
)


@dataclass(frozen=True)
class Llama3Interruptions:
    """What Llama 3's report says of the interruptions of its 405B pre-training (:func:`llama3_interruptions`).

    Source: Grattafiori et al. 2024, "The Llama 3 Herd of Models", arXiv:2407.21783, section 3.3.4
    ("Reliability and Operational Challenges") and Table 5; the GPU count from its Table 4.

    ``rows`` are Table 5's, in its order, counting the ``unexpected`` interruptions of a ``days``-day snapshot
    of pre-training: ``total`` interruptions, ``planned`` of them planned (automated maintenance, operators'
    changes), the rest unexpected. ``hardware_share`` (about 78%, "confirmed or suspected hardware issues"),
    ``gpu_share`` (58.7%) and ``effective_training_time`` ("higher than 90%": time on useful training over
    elapsed time, a lower bound) are as the text states them; ``manual_interventions`` is how often people
    had to step in. ``gpus`` is the largest configuration of Table 4 (16,384 H100s; the text speaks of "16K
    GPU training").

    The rows' counts sum to the 419 unexpected interruptions, and every printed share but one is its count over
    419: the first row prints 30.1% where 148/419 is 35.3% (the printed shares sum to 94.9%; the 58.7% of GPU
    issues is the sum of the printed GPU rows). The report does not say which rows make its 78%: the GPU, host
    and unplanned-maintenance rows hold 321 (76.6%), with the network's 356 (85.0%).
    """

    days: int
    total: int
    planned: int
    unexpected: int
    hardware_share: float
    gpu_share: float
    effective_training_time: float
    manual_interventions: int
    gpus: int
    rows: tuple

    @property
    def snapshot_seconds(self) -> float:
        return self.days * 86400.0

    def share(self, row: Interruption) -> float:
        """``row``'s count over the unexpected interruptions (not always the share printed)."""
        return row.count / self.unexpected

    def by_category(self) -> dict:
        """Unexpected interruptions per category, largest first (ties in the table's order)."""
        counts: dict = {}
        for row in self.rows:
            counts[row.category] = counts.get(row.category, 0) + row.count
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))

    @property
    def job_mtbf(self) -> float:
        """Mean time between unexpected interruptions over the snapshot, seconds (54 days / 419: 3.09 hours)."""
        return self.snapshot_seconds / self.unexpected

    @property
    def mtbf_per_gpu(self) -> float:
        """The per-GPU MTBF that would give :attr:`job_mtbf` on :attr:`gpus` GPUs (:func:`job_mtbf` backwards).

        A derived figure, not the report's: it charges every unexpected interruption to one of ``gpus``
        GPUs running the whole snapshot, software bugs and switches included.
        """
        return self.job_mtbf * self.gpus


def llama3_interruptions() -> Llama3Interruptions:
    """Llama 3 405B's interruptions over a 54-day snapshot of pre-training, as published (see the class).

    Examples
    --------
    >>> ll = llama3_interruptions()
    >>> ll.total, ll.planned, ll.unexpected, sum(r.count for r in ll.rows)
    (466, 47, 419, 419)
    >>> ll.rows[0].component, ll.rows[0].count, round(ll.share(ll.rows[0]), 3), ll.rows[0].printed_share
    ('Faulty GPU', 148, 0.353, 0.301)
    >>> round(ll.job_mtbf / 3600, 2), list(ll.by_category())[:2]
    (3.09, ['GPU', 'Dependency'])
    """
    return Llama3Interruptions(days=54, total=466, planned=47, unexpected=419, hardware_share=0.78,
                               gpu_share=0.587, effective_training_time=0.90, manual_interventions=3, gpus=16384,
                               rows=tuple(Interruption(*row) for row in _TABLE_5))
