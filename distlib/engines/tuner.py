"""``algorithm="auto"``: fit the alpha-beta model here, then pick by predicted time.

NCCL chooses between its ring and tree algorithms for every call from a
cost model with a latency and a bandwidth per algorithm, tuned for the
hardware it finds. This module does the same, in the open:

1. **Calibrate** (once per engine, ``p`` and machine): time each of the
   book's all-reduce algorithms at a few sizes, and fit ``alpha`` (seconds
   per message) and ``bandwidth`` (bytes/s) to the times with
   :func:`distlib.fit_alpha_beta`, using that algorithm's own formula.
2. **Predict and pick**: for a buffer of ``n_bytes``, compute each
   algorithm's time with :func:`distlib.collective_time` and run the
   fastest.

Fitting each algorithm separately lets the fit absorb what the formulas
leave out (Python's overhead per message, the cost of the additions), so
the choice rests on measured behaviour rather than on one shared guess.

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

__all__ = ["Calibration", "calibrate", "choose_algorithm", "set_calibration", "cache_path", "CALIBRATION_BYTES"]

CALIBRATION_BYTES = (8, 1024, 16 * 1024, 128 * 1024, 1024**2, 4 * 1024**2)
"""Buffer sizes (bytes per rank) timed by :func:`calibrate`: tiny to a few MiB."""

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
        Algorithm -> measured median time at each size.
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
            algorithm=algorithm,
        )

    def choose(self, n_bytes) -> str:
        """The algorithm with the smallest predicted time (ties: the first in :data:`ALLREDUCE_ALGORITHMS`)."""
        n_bytes = check_real("n_bytes", n_bytes, minimum=0)
        times = {a: self.predict(a, n_bytes) for a in ALLREDUCE_ALGORITHMS if a in self.alpha}
        return min(times, key=times.get)

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


def _load(key: str):
    """The cached fit under ``key``, or None (also for a fit that lacks one of today's algorithms)."""
    path = cache_path()
    try:
        data = json.loads(path.read_text())
        cal = Calibration.from_dict(data[key]) if key in data else None
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if cal is not None and set(cal.alpha) != set(ALLREDUCE_ALGORITHMS):
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
    iters: int = 5,
    cache: bool = True,
    refresh: bool = False,
) -> Calibration:
    """Measure and fit every all-reduce algorithm on ``comm``; all ranks call it.

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
    cal = _load(key) if (cache and not refresh and comm.rank == 0) else None
    cal_dict = comm.bcast_object(cal.to_dict() if cal is not None else None)
    if cal_dict is not None:
        return Calibration.from_dict(cal_dict)

    from ..collectives import fit_alpha_beta
    from .timing import compare_allreduce

    itemsize = np.dtype(_DTYPE).itemsize
    counts = [max(1, n // itemsize) for n in sizes]
    real_bytes = [c * itemsize for c in counts]
    timings = [
        compare_allreduce(comm, c, ALLREDUCE_ALGORITHMS, dtype=_DTYPE, iters=iters, warmup=1, check=False, min_sample=1e-3)
        for c in counts
    ]
    seconds, alpha, bandwidth = {}, {}, {}
    for algorithm in ALLREDUCE_ALGORITHMS:
        secs = [t[algorithm].seconds for t in timings]
        seconds[algorithm] = secs
        a, bw = fit_alpha_beta(np.asarray(real_bytes, float), np.asarray(secs), collective="allreduce", p=comm.size, algorithm=algorithm)
        alpha[algorithm], bandwidth[algorithm] = float(a), float(bw)
    cal = Calibration(comm.engine, comm.size, socket.gethostname(), real_bytes, seconds, alpha, bandwidth)
    cal = Calibration.from_dict(comm.bcast_object(cal.to_dict()))  # rank 0's numbers everywhere
    if cache and comm.rank == 0:
        _save(key, cal)
    return cal


class _Choices:
    """One communicator's fit and the choices made from it (size -> algorithm)."""

    __slots__ = ("calibration", "memo")

    def __init__(self, calibration):
        self.calibration = calibration
        self.memo: dict = {}


# Fits per communicator, kept here (the tuner owns them) and dropped with the
# communicator: a Comm is not a scratchpad for other modules.
_STATE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def set_calibration(comm, calibration) -> None:
    """Make ``calibration`` the fit ``algorithm="auto"`` chooses by on ``comm`` (forgets earlier choices)."""
    if not isinstance(calibration, Calibration):
        raise TypeError(f"calibration must be a Calibration, got {type(calibration).__name__}")
    _STATE[comm] = _Choices(calibration)


def choose_algorithm(comm, n_bytes) -> str:
    """The algorithm ``allreduce(..., algorithm="auto")`` runs for ``n_bytes`` on ``comm``.

    Calibrates on first use (all ranks must be calling), then remembers the
    fit for that communicator (see :func:`set_calibration`).
    """
    state = _STATE.get(comm)
    if state is not None:
        choice = state.memo.get(n_bytes)
        if choice is not None:
            return choice  # every call after the first for this size ends here
    if comm.size == 1:
        return "ring"
    if state is None:
        state = _STATE[comm] = _Choices(calibrate(comm))
    choice = state.memo[n_bytes] = state.calibration.choose(n_bytes)
    return choice


set_auto_chooser(choose_algorithm)
