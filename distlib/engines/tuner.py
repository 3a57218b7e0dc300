"""``algorithm="auto"``: fit the alpha-beta model here, then pick by predicted time.

NCCL chooses between its ring and tree algorithms for every call from a
cost model with a latency and a bandwidth per algorithm, tuned for the
hardware it finds. This module does the same, in the open:

1. **Calibrate** (once per engine, ``p`` and machine): time each of the
   book's all-reduce algorithms at every power of two from 8 B to 32 MiB
   (:data:`CALIBRATION_BYTES`), and fit ``alpha`` (seconds
   per message) and ``bandwidth`` (bytes/s) to the times with
   :func:`distlib.fit_alpha_beta`, using that algorithm's own formula.
2. **Predict and pick**: for a buffer of ``n_bytes``, compute each
   algorithm's time with :func:`distlib.collective_time` and run the
   fastest.

Fitting each algorithm separately lets the fit absorb what the formulas
leave out (Python's overhead per message, the cost of the additions), so
the choice rests on measured behaviour rather than on one shared guess.

The engine's own all-reduce (``"builtin"``: MPICH's ``MPI_Allreduce``,
gloo's or NCCL's ``all_reduce``) is a candidate too, timed and fitted like
the others (with the ring's formula, the shape a good built-in approaches
for large buffers). A built-in is one call into compiled code that switches
algorithms inside by size, which one straight line cannot follow. So the
pick does not rest on the line alone: each candidate's fitted time is
scaled by how far its measurement sat from its line at the calibration
sizes (interpolated in log-log between them, held beyond them,
:meth:`Calibration.expected`), and one of the book's algorithms replaces
the built-in only when it is expected to be faster by more than
:data:`BUILTIN_MARGIN`: a tie is not worth the risk of losing to noise.

The fit is cached in a JSON file (:func:`cache_path`), keyed by engine,
``p`` and host name, so later runs skip the measurement. Rank 0 reads and
writes the cache and broadcasts the fit, so every rank makes the same
choice -- ranks that picked different algorithms would deadlock.
"""

from __future__ import annotations

import json
import math
import os
import socket
import tempfile
import time
import weakref
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .._check import check_int, check_real
from .algorithms import ALLREDUCE_ALGORITHMS, set_auto_chooser
from .comm import Comm

__all__ = ["Calibration", "calibrate", "choose_algorithm", "set_calibration", "cache_path", "CALIBRATION_BYTES",
           "CANDIDATES", "BUILTIN_MARGIN"]

CALIBRATION_BYTES = tuple(2**k for k in range(3, 26))
"""Buffer sizes (bytes per rank) timed by :func:`calibrate`: every power of two from 8 B to 32 MiB. The
engines change protocol at powers of two (MPICH: its short all-reduce up to 2 KiB, single-copy messages
from 16 KiB, scratch mapped afresh on every call from 32 MiB, where its built-in slows to a third on 2
ranks), and a choice interpolated across such a step can be wrong by a third. The small sizes cost little:
the whole calibration took 3-4 s on 2 ranks of a busy 2-core machine."""

CANDIDATES = ALLREDUCE_ALGORITHMS + ("builtin",)
"""What ``algorithm="auto"`` chooses among: the book's all-reduce algorithms and the engine's own."""

BUILTIN_MARGIN = 0.1
"""How much faster (a fraction of the built-in's expected time) one of the book's algorithms must be
expected to be before ``auto`` runs it instead of the engine's built-in all-reduce. Medians of a few
samples on a shared machine differ by about this much from run to run; a pick inside that band could as
well lose to the built-in as beat it."""

_MODEL = {"builtin": "ring"}
"""The cost formula each candidate is fitted with, where it is not its own name."""

_DTYPE = "float32"


def cache_path() -> Path:
    """Where fits are cached: ``$DISTLIB_CACHE_DIR``, else ``~/.cache/distlib``, else the temp dir."""
    env = os.environ.get("DISTLIB_CACHE_DIR")
    candidates = [Path(env)] if env else []
    candidates += [Path.home() / ".cache" / "distlib", Path(tempfile.gettempdir()) / "distlib-cache"]
    for folder in candidates:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if os.access(folder, os.W_OK):
                return folder / "alpha_beta.json"
        except OSError:
            continue
    return candidates[-1] / "alpha_beta.json"  # pragma: no cover


# bytes/s standing in for an infinite fitted bandwidth
UNMEASURABLY_FAST = 1e18


@dataclass
class Calibration:
    """Fitted alpha-beta parameters of each all-reduce algorithm on one engine.

    Attributes
    ----------
    engine : str
    p : int
    host : str
    n_bytes : list of int
        The sizes timed.
    seconds : dict
        Algorithm -> measured time at each size: the median of its ratio to
        the last candidate's time (the built-in's where there is one), sample
        by sample, times that one's median.
    alpha : dict
        Algorithm -> fitted latency per message (s).
    bandwidth : dict
        Algorithm -> fitted bandwidth (bytes/s).
    created : float
        Unix time of the measurement.

    Examples
    --------
    A hand-made fit for ``p = 6`` ranks. Small messages pay for steps: the
    tree takes 6 (``2 ceil(log2 6)``) at a low fitted ``alpha``, the ring 10.
    Large ones pay for bytes: the ring moves ``2 (p - 1) / p = 1.67``
    buffers, halving-doubling 3.5 (its fold costs two full-buffer messages
    when ``p`` is not a power of two), the tree 6. Recursive doubling takes
    4 steps (2 swaps plus the fold in and out) of the whole buffer: at
    ``alpha = 2 us`` it wins small messages.

    >>> cal = Calibration("threads", 6, "here", [], {},
    ...                   alpha={"ring": 5e-6, "tree": 3e-6, "halving_doubling": 5e-6},
    ...                   bandwidth={"ring": 1e10, "tree": 1e10, "halving_doubling": 1e10})
    >>> cal.choose(8), cal.choose(2**28)
    ('tree', 'ring')
    >>> cal.alpha["recursive_doubling"], cal.bandwidth["recursive_doubling"] = 2e-6, 1e10
    >>> cal.choose(8), cal.choose(2**28)
    ('recursive_doubling', 'ring')

    With the engine's built-in in the fit (the ring's formula, here 10
    steps of 0.5 us and half the ring's bandwidth), it runs unless one of
    the book's algorithms is expected to be more than :data:`BUILTIN_MARGIN`
    faster:

    >>> cal.alpha["builtin"], cal.bandwidth["builtin"] = 0.5e-6, 0.5e10
    >>> cal.choose(8), cal.choose(2**28)
    ('builtin', 'ring')
    """

    engine: str
    p: int
    host: str
    n_bytes: list
    seconds: dict
    alpha: dict
    bandwidth: dict
    created: float = field(default_factory=time.time)

    def predict(self, algorithm: str, n_bytes) -> float:
        """Predicted seconds for one all-reduce of ``n_bytes`` with ``algorithm``."""
        from ..collectives import collective_time

        bandwidth = self.bandwidth[algorithm]
        if not (math.isfinite(bandwidth) and bandwidth > 0):
            # The fit found no measurable per-byte cost (its slope came out
            # zero): treat the bytes as free rather than reject the fit.
            bandwidth = UNMEASURABLY_FAST
        return collective_time(
            "allreduce",
            n_bytes,
            self.p,
            alpha=max(self.alpha[algorithm], 0.0),
            bandwidth=bandwidth,
            algorithm=_MODEL.get(algorithm, algorithm),
        )

    def expected(self, algorithm: str, n_bytes) -> float:
        """:meth:`predict` scaled by the measurement's distance from the fit near ``n_bytes``.

        At each calibration size the ratio measured / predicted is taken;
        its logarithm is interpolated linearly in ``log n_bytes`` between
        the sizes and held constant beyond them. At a calibration size this
        is the measured time itself. A fit without measurements (made by
        hand) expects what it predicts.
        """
        predicted = self.predict(algorithm, n_bytes)
        measured = self.seconds.get(algorithm) if self.seconds else None
        if not measured or len(measured) != len(self.n_bytes) or len(self.n_bytes) < 1:
            return predicted
        sizes = np.log(np.asarray(self.n_bytes, float))
        fitted = np.array([self.predict(algorithm, n) for n in self.n_bytes])
        good = (np.asarray(measured, float) > 0) & (fitted > 0)
        if not good.any():
            return predicted
        log_ratio = np.log(np.asarray(measured, float)[good] / fitted[good])
        where = math.log(max(float(n_bytes), 1.0))
        return predicted * math.exp(float(np.interp(where, sizes[good], log_ratio)))

    def choose(self, n_bytes) -> str:
        """The candidate ``auto`` runs for ``n_bytes``.

        The book's algorithm with the smallest :meth:`expected` time (ties:
        the first in :data:`ALLREDUCE_ALGORITHMS`); if the fit includes the
        engine's ``"builtin"``, that one unless the book's pick is expected
        to take less than ``1 - BUILTIN_MARGIN`` of its time.
        """
        n_bytes = check_real("n_bytes", n_bytes, minimum=0)
        times = {a: self.expected(a, n_bytes) for a in ALLREDUCE_ALGORITHMS if a in self.alpha}
        best = min(times, key=times.get) if times else None
        if "builtin" in self.alpha:
            builtin = self.expected("builtin", n_bytes)
            if best is None or not times[best] < (1.0 - BUILTIN_MARGIN) * builtin:
                return "builtin"
        return best

    def table(self, sizes=None) -> list:
        """Rows ``(n_bytes, {algorithm: predicted seconds}, choice)`` for the given sizes."""
        sizes = [2**k for k in range(3, 29, 2)] if sizes is None else sizes
        return [(n, {a: self.predict(a, n) for a in self.alpha}, self.choose(n)) for n in sizes]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Calibration":
        return cls(**d)


def _key(engine: str, p: int) -> str:
    return f"{engine}|p={p}|host={socket.gethostname()}"


def _load(key: str, candidates=CANDIDATES):
    """The cached fit under ``key``, or None (also for a fit that lacks one of today's ``candidates``)."""
    path = cache_path()
    try:
        data = json.loads(path.read_text())
        cal = Calibration.from_dict(data[key]) if key in data else None
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if cal is not None and set(cal.alpha) != set(candidates):
        return None  # written by an older distlib: measure again rather than never pick the new one
    return cal


def _save(key: str, cal: Calibration) -> None:
    path = cache_path()
    try:
        data = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError):
        data = {}
    data[key] = cal.to_dict()
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, path)  # atomic: concurrent runs never see half a file
    except OSError:  # pragma: no cover - a read-only cache only costs a re-measurement
        pass


def calibrate(
    comm,
    *,
    n_bytes=CALIBRATION_BYTES,
    iters: int = 7,
    cache: bool = True,
    refresh: bool = False,
) -> Calibration:
    """Measure and fit every all-reduce algorithm on ``comm``, the engine's built-in too; all ranks call it.

    Parameters
    ----------
    comm : Comm
    n_bytes : sequence of int
        Sizes (bytes per rank, float32 data) to time.
    iters : int
        Samples per size (median taken).
    cache : bool
        Read a cached fit if there is one, and store a new one.
    refresh : bool
        Measure even if a cached fit exists.

    Returns
    -------
    Calibration
        Identical on every rank (rank 0's, broadcast).
    """
    if not isinstance(comm, Comm):
        raise TypeError(f"comm must be a distlib.engines Comm, got {type(comm).__name__}")
    iters = check_int("iters", iters, minimum=1)
    sizes = [check_int("n_bytes[i]", n, minimum=4) for n in n_bytes]
    if len(sizes) < 2:
        raise ValueError(f"n_bytes must list at least 2 sizes to fit two parameters, got {len(sizes)}")
    key = _key(comm.engine, comm.size)
    candidates = CANDIDATES if _has_builtin(comm) else ALLREDUCE_ALGORITHMS
    cal = _load(key, candidates) if (cache and not refresh and comm.rank == 0) else None
    cal_dict = comm.bcast_object(cal.to_dict() if cal is not None else None)
    if cal_dict is not None:
        return Calibration.from_dict(cal_dict)

    from ..collectives import fit_alpha_beta
    from .timing import compare_allreduce

    itemsize = np.dtype(_DTYPE).itemsize
    counts = [max(1, n // itemsize) for n in sizes]
    real_bytes = [c * itemsize for c in counts]
    timings = [
        compare_allreduce(comm, c, candidates, dtype=_DTYPE, iters=iters, warmup=1, check=False, min_sample=1e-3)
        for c in counts
    ]
    seconds, alpha, bandwidth = {}, {}, {}
    for algorithm in candidates:
        secs = [_paired_seconds(t, algorithm, candidates[-1]) for t in timings]
        seconds[algorithm] = secs
        a, bw = fit_alpha_beta(np.asarray(real_bytes, float), np.asarray(secs), collective="allreduce", p=comm.size,
                               algorithm=_MODEL.get(algorithm, algorithm))  # fmt: skip
        alpha[algorithm], bandwidth[algorithm] = float(a), float(bw)
    cal = Calibration(comm.engine, comm.size, socket.gethostname(), real_bytes, seconds, alpha, bandwidth)
    cal = Calibration.from_dict(comm.bcast_object(cal.to_dict()))  # rank 0's numbers everywhere
    if cache and comm.rank == 0:
        _save(key, cal)
    return cal


def _paired_seconds(timings: dict, algorithm: str, reference: str) -> float:
    """``algorithm``'s time at one size, as its :func:`~distlib.engines.timing.paired_ratio` to ``reference``
    (sample by sample, so a busy moment shared by a sample cancels) scaled by the reference's median, so it
    still reads as seconds."""
    from .timing import paired_ratio

    ratio = None if algorithm == reference else paired_ratio(timings[algorithm].samples, timings[reference].samples)
    if ratio is None:
        return float(timings[algorithm].seconds)
    return ratio * timings[reference].seconds


def _has_builtin(comm) -> bool:
    """Whether ``comm`` offers an all-reduce of its own (a :class:`~distlib.engines.comm.SubComm` does not)."""
    while type(comm).allreduce is not Comm.allreduce:
        inner = getattr(comm, "inner", None)  # a CountingComm forwards to the communicator it wraps
        if not isinstance(inner, Comm):
            return True
        comm = inner
    return False


class _Choices:
    """One communicator's fit and the choices made from it (size -> algorithm)."""

    __slots__ = ("calibration", "memo")

    def __init__(self, calibration):
        self.calibration = calibration
        self.memo: dict = {}


# Fits per communicator, kept here (the tuner owns them) and dropped with the
# communicator: a Comm is not a scratchpad for other modules. Keyed by id(),
# which a dictionary looks up faster than a WeakKeyDictionary (that makes a
# weak reference on every lookup); the entry goes when the communicator does,
# so a later one with the same id() starts afresh. ``_MEMOS`` holds the same
# choices, read by ``allreduce`` itself before it calls choose_algorithm: with
# the built-in a candidate for 8-byte buffers, a call's half microsecond of
# choosing was a tenth of the all-reduce.
_STATE: dict = {}
_MEMOS: dict = {}


def _forget(key: int) -> None:
    _STATE.pop(key, None)
    _MEMOS.pop(key, None)


def _remember(comm, choices) -> "_Choices":
    key = id(comm)
    if key not in _STATE:
        weakref.finalize(comm, _forget, key)
    _STATE[key] = choices
    _MEMOS[key] = choices.memo
    return choices


def set_calibration(comm, calibration) -> None:
    """Make ``calibration`` the fit ``algorithm="auto"`` chooses by on ``comm`` (forgets earlier choices)."""
    if not isinstance(calibration, Calibration):
        raise TypeError(f"calibration must be a Calibration, got {type(calibration).__name__}")
    _remember(comm, _Choices(calibration))


def choose_algorithm(comm, n_bytes) -> str:
    """The algorithm ``allreduce(..., algorithm="auto")`` runs for ``n_bytes`` on ``comm``.

    Calibrates on first use (all ranks must be calling), then remembers the
    fit for that communicator (see :func:`set_calibration`). One of
    :data:`CANDIDATES`: ``"builtin"`` is the engine's own all-reduce.
    """
    state = _STATE.get(id(comm))
    if state is not None:
        choice = state.memo.get(n_bytes)
        if choice is not None:
            return choice  # every call after the first for this size ends here
    if comm.size == 1:
        return "ring"
    if state is None:
        state = _remember(comm, _Choices(calibrate(comm)))
    choice = state.memo[n_bytes] = state.calibration.choose(n_bytes)
    return choice


set_auto_chooser(choose_algorithm, _MEMOS)
