"""Ranks report progress; the launcher names a rank that stopped.

A rank that stops (a ``SIGSTOP``, a debugger, a swapped-out or wedged
process) holds every other rank in the next collective, and from outside the
run looks exactly like a long collective. So each rank started by
:func:`distlib.engines.run_mpi`, :func:`~distlib.engines.run_torch` or
:func:`~distlib.engines.run_torchrun` keeps a *heartbeat*: a daemon thread
that rewrites a small file every :data:`BEAT` seconds with the time, its
rank, node and process id, and what it is doing (the last :func:`note`, e.g.
``"allreduce ring 16.8 MB"``). The thread runs while the rank waits inside
MPI or gloo (both release Python's GIL there), so a long collective keeps
beating and long runs stay allowed; a stopped or wedged process does not.

Each rank also says *where it is*: the communicator layer marks every
blocking call (:func:`in_comm`: a send, a receive, a collective, a wait),
so the heartbeat carries which call the rank is in, its number, and how
long the rank has waited in it.

The launcher's :class:`Watchdog` reads the files while it waits, and ends
the run with a :class:`Stall` (typed: which rank, which node, doing what) in
two cases. A rank whose *process is stopped* (``SIGSTOP``, a debugger) and
has not beaten for ``stall`` seconds. And a rank that *falls behind*: its
peers have waited ``behind`` seconds in a communication call while it is in
none (stuck in Python, or in a long step the others cannot pass without it),
as NCCL's watchdog names the rank that falls out of step. A rank whose
heartbeat is late but whose process runs (one long call that holds Python's
lock, a big allocation) is never called stopped for that alone: a long
compute step is allowed.

Every rank is also tied to its launcher: it ends itself (``SIGKILL``) when
the launcher's process is gone, even after a ``SIGKILL`` of the launcher,
which no clean-up code sees; on Linux it also asks the kernel for
``SIGKILL`` when its parent dies (``PR_SET_PDEATHSIG``), which reaches even
a stopped rank. The files live in a folder the
launcher makes (``$DISTLIB_PROGRESS_DIR``); a rank started any other way
(``mpiexec`` by hand) has no such variable and keeps no heartbeat.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BEAT", "DEFAULT_STALL", "DEFAULT_BEHIND", "note", "in_comm", "start", "Beat", "Stall", "Watchdog",
           "launcher_tag", "tie_to_parent"]

BEAT = 0.5
"""Seconds between heartbeats."""

DEFAULT_STALL = float(os.environ.get("DISTLIB_STALL", "15"))
"""Seconds without a heartbeat before the launcher declares a rank stopped (named within ``stall + 1`` s).

``$DISTLIB_STALL`` changes it for every launcher in a process (the tests use 4 s)."""

DEFAULT_BEHIND = float(os.environ.get("DISTLIB_BEHIND", "20"))
"""Seconds a rank's peers may wait in a communication call while it is in none, before it is named as behind.

``$DISTLIB_BEHIND`` changes it (the tests use 4 s)."""

_ENV_DIR = "DISTLIB_PROGRESS_DIR"
_RANK_KEYS = ("RANK", "PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK")  # a rank's number, by launcher
LAUNCHER_VAR = "DISTLIB_LAUNCHER"
_state = {"doing": "starting", "calls": 0, "comm": None, "comm_calls": 0}
_thread: list = []


def in_comm(what: str):
    """Decorator for a communicator's blocking method: the heartbeat says the rank waits in ``what``.

    Two dictionary stores per call (no clock, no formatting): the heartbeat
    thread times the wait itself, from the call number it sees unchanged.
    """

    def wrap(method):
        def inner(*args, **kwargs):
            _state["comm_calls"] += 1
            _state["comm"] = what
            try:
                return method(*args, **kwargs)
            finally:
                _state["comm"] = None

        inner.__name__, inner.__qualname__, inner.__doc__ = method.__name__, method.__qualname__, method.__doc__
        inner.__wrapped__ = method
        return inner

    return wrap


def _start_ticks(pid: int) -> str | None:
    """A process's start time in clock ticks since boot (Linux), to tell it from a later process with its pid."""
    try:
        return (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def launcher_tag(pid: int | None = None) -> str:
    """``"pid:start"`` of the launcher (this process by default), for the ranks' ``$DISTLIB_LAUNCHER``."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{_start_ticks(pid) or ''}"


def _launcher_alive(tag: str) -> bool:
    pid_text, _, ticks = tag.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return True  # a tag this module did not write: claim nothing
    if _PROC.is_dir():
        now = _start_ticks(pid)
        return now is not None and (not ticks or now == ticks) and _process_state(pid) != "gone"
    return _process_state(pid) != "gone"


_libc = []


def _prctl():
    """libc's ``prctl`` (Linux), or ``None``; loaded once. A launcher calls this before it forks, so that the
    child's :func:`tie_to_parent` in ``preexec_fn`` only calls it."""
    if not _libc:
        prctl = None
        if sys.platform.startswith("linux"):
            import ctypes

            try:
                prctl = ctypes.CDLL(None, use_errno=True).prctl
            except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
                prctl = None
        _libc.append(prctl)
    return _libc[0]


def tie_to_parent() -> bool:
    """Ask Linux to ``SIGKILL`` this process when its parent dies (``PR_SET_PDEATHSIG``); ``False`` elsewhere.

    Safe in a ``preexec_fn`` (after ``fork``, before ``exec``) once :func:`_prctl` has been called in the parent.
    """
    prctl = _prctl()
    if prctl is None:
        return False
    PR_SET_PDEATHSIG = 1
    return prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0


def note(doing: str) -> None:
    """Record what this rank is doing now (shown if it stops). Cheap: one dict store."""
    _state["doing"] = doing
    _state["calls"] += 1


def _rank_from_env():
    for key in _RANK_KEYS:
        if key in os.environ:
            return int(os.environ[key])
    return None


def start(rank=None) -> bool:
    """Start this process's heartbeat if its launcher asked for one; returns whether it runs.

    Called by :func:`distlib.engines.mpi.world` and
    :func:`distlib.engines.torch_dist.init`, so every rank of the book's
    programs beats without asking.
    """
    folder = os.environ.get(_ENV_DIR)
    if not folder or _thread:
        return bool(_thread)
    rank = _rank_from_env() if rank is None else int(rank)
    if rank is None:
        return False
    path = Path(folder) / f"rank{rank}.json"
    node = socket.gethostname()  # each node of a mini cluster has its own
    pid = os.getpid()
    launcher = os.environ.get(LAUNCHER_VAR)
    if launcher and "TORCHELASTIC_RUN_ID" not in os.environ:
        # The parent is the launcher, Hydra's proxy or the node's entry: when it dies, so does this rank.
        # (Not under torchrun, whose agent may start ranks from a thread that ends before they do.)
        tie_to_parent()

    main = threading.main_thread()

    def beat():
        tmp = path.with_suffix(".tmp")
        seen, since = None, 0.0  # the communication call last seen, and since when
        while main.is_alive():  # stop with the program: never hold up the interpreter's exit
            if launcher and not _launcher_alive(launcher):
                os.kill(pid, signal.SIGKILL)  # the run is over: nobody is left to read this rank
            now = time.time()
            call, comm = _state["comm_calls"], _state["comm"]
            if comm is None:
                seen = None
            elif seen != call:
                seen, since = call, now
            record = {"rank": rank, "node": node, "pid": pid, "time": now, "doing": _state["doing"],
                      "calls": _state["calls"], "comm": comm, "comm_call": call,
                      "waited": 0.0 if comm is None else now - since}  # fmt: skip
            try:
                tmp.write_text(json.dumps(record))
                os.replace(tmp, path)
            except OSError:
                return  # the launcher removed the folder: the run is over
            time.sleep(BEAT)

    t = threading.Thread(target=beat, name="distlib-heartbeat", daemon=True)
    t.start()
    _thread.append(t)
    return True


_PROC = Path("/proc")  # where Linux keeps each process's state; absent on macOS


def _ranks_with(marker: str) -> list:
    """``(pid, rank)`` of the live processes whose environment holds ``marker`` (``KEY=value``) and a rank."""
    out = []
    if _PROC.is_dir():
        want = marker.encode()
        for entry in _PROC.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                env = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if want in env:
                values = dict(item.split(b"=", 1) for item in env if b"=" in item)
                rank = next((values[k.encode()] for k in _RANK_KEYS if k.encode() in values), None)
                if rank is not None and rank.isdigit():
                    out.append((int(entry.name), int(rank)))
        return out
    try:  # pragma: no cover - not Linux: psutil, a dependency of the library
        import psutil
    except ImportError:  # pragma: no cover
        return []
    key, value = marker.split("=", 1)
    for proc in psutil.process_iter(["pid"]):  # pragma: no cover - non-Linux
        try:
            env = proc.environ()
        except (psutil.Error, OSError):
            continue
        rank = next((env[k] for k in _RANK_KEYS if k in env), None)
        if env.get(key) == value and rank is not None and rank.isdigit():
            out.append((proc.pid, int(rank)))
    return out


def _process_state(pid: int) -> str:
    """``"stopped"`` (SIGSTOP, a debugger), ``"gone"`` (exited, or a zombie) or ``"running"``."""
    if _PROC.is_dir():
        try:
            state = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return "gone"
        return {"T": "stopped", "t": "stopped", "Z": "gone", "X": "gone"}.get(state, "running")
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a dependency; without it, claim nothing
        return "running"
    try:
        status = psutil.Process(pid).status()
    except psutil.NoSuchProcess:  # also psutil.ZombieProcess (macOS asks a zombie nothing)
        return "gone"
    except psutil.Error:  # e.g. AccessDenied: it is there, but says nothing more
        return "running"
    if status in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP):
        return "stopped"
    if status in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
        return "gone"
    return "running"


@dataclass
class Beat:
    """One rank's last heartbeat, as the launcher read it."""

    rank: int
    node: str
    pid: int
    time: float
    doing: str
    calls: int
    comm: str | None = None
    """The communication call the rank waits in (``"allreduce"``, ``"sendrecv"``...), or ``None``."""
    comm_call: int = 0
    """How many communication calls the rank has entered (the current one included)."""
    waited: float = 0.0
    """Seconds it has waited in the current one, when it beat."""

    @property
    def age(self) -> float:
        return time.time() - self.time

    def process_state(self) -> str:
        """``"stopped"``, ``"gone"`` or ``"running"``: from ``/proc`` on Linux, from psutil elsewhere (macOS)."""
        return _process_state(self.pid)

    def where(self) -> str:
        """Where the rank is, in words: its communication call, or what it last noted."""
        if self.comm is not None:
            return (f"waiting in {self.comm} (communication call {self.comm_call}) for {self.waited + self.age:.1f} s, "
                    f"during: {self.doing}")
        return f"in no communication call (after call {self.comm_call}); it last noted: {self.doing}"


GONE_GRACE = 5.0
"""Seconds a run may go on with a rank's process gone before the launcher ends it and names that rank."""


@dataclass
class Stall:
    """Why the watchdog (or a mini cluster's health check) ended a run: typed, and in words.

    ``kind`` is ``"stopped"`` (a rank's process is stopped), ``"behind"``
    (its peers waited on it in a communication call), ``"gone"`` (its process
    exited and the others ran on, unstopped by the engine's launcher) or
    ``"node"`` (a node or its link was lost). ``rank`` and ``node`` name it where known.
    """

    kind: str
    message: str
    rank: int | None = None
    node: str | None = None
    doing: str | None = None

    def __str__(self) -> str:
        return self.message


class Watchdog:
    """The launcher's side: a folder for the ranks' heartbeats, and the check.

    Parameters
    ----------
    folder : path
        Where the ranks write (``$DISTLIB_PROGRESS_DIR`` in their environment).
    stall : float
        Seconds without a heartbeat before a *stopped* rank is named (> 2 beats).
    behind : float
        Seconds a rank's peers may wait in a communication call while it is in
        none, before it is named as behind (:data:`DEFAULT_BEHIND`).
    ranks : int, optional
        How many ranks the run has: while fewer have beaten, the run's processes are looked at for one stopped
        before its first heartbeat (without it, never).
    gone_grace : float
        Seconds a run may go on with a rank's process gone before it is named (:data:`GONE_GRACE`);
        ``math.inf`` when the engine's launcher restarts failed ranks itself (``torchrun --max-restarts``).
    """

    def __init__(self, folder, *, stall: float = DEFAULT_STALL, behind: float | None = None, ranks: int | None = None,
                 gone_grace: float = None):  # fmt: skip
        from .._check import check_real

        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.stall = check_real("stall", stall, minimum=4 * BEAT)
        self.behind = check_real("behind", DEFAULT_BEHIND if behind is None else behind, minimum=4 * BEAT)
        self._gone_since: dict = {}  # rank -> when its process was first seen gone while others ran
        self._stopped_since: dict = {}  # pid -> when a rank's process without a heartbeat was first seen stopped
        self._scanned = -math.inf  # when the processes were last scanned for those
        self.ranks = ranks
        self.gone_grace = GONE_GRACE if gone_grace is None else float(gone_grace)
        self.notes: Path | None = None
        """A folder of ``ended.<rank>`` notes (MPI runs): among ranks gone, the first to leave a note is named."""

    @property
    def env(self) -> dict:
        return {_ENV_DIR: str(self.folder)}

    def beats(self) -> list:
        """Every rank's last heartbeat, in rank order."""
        out = []
        for path in self.folder.glob("rank*.json"):
            try:
                out.append(Beat(**json.loads(path.read_text())))
            except (OSError, ValueError, TypeError):
                continue  # being replaced right now
        return sorted(out, key=lambda b: b.rank)

    def check(self) -> Stall | None:
        """The first stopped rank, or the rank its peers wait on; ``None`` while the run makes progress."""
        # A rank whose process has exited is the launcher's business (an exit
        # status, Hydra's report); here only ranks that are there but do not move.
        everyone = self.beats()
        states = {b.rank: b.process_state() for b in everyone}
        beats = [b for b in everyone if states[b.rank] != "gone"]
        gone = [b for b in everyone if states[b.rank] == "gone"]
        if gone and beats:
            # A rank's process is gone and the others run on: the engine's launcher (Hydra, torchrun) normally
            # ends the run within a moment; if it has not after gone_grace seconds, the launcher names the rank.
            now = time.monotonic()
            for b in gone:
                self._gone_since.setdefault(b.rank, now)
            first = min(gone, key=lambda b: (self._noted(b.rank), self._gone_since[b.rank], b.rank))
            if now - self._gone_since[first.rank] > self.gone_grace:
                peers = ", ".join(str(b.rank) for b in beats)
                how = self._note(first.rank)
                how = f"it was {how}" if how.startswith("killed by signal") else "its process exited"
                return Stall("gone", f"rank {first.rank} on node {first.node} is gone ({how}) while "
                             f"rank(s) {peers} ran on without it for {now - self._gone_since[first.rank]:.1f} s; it "
                             f"was {first.where()}", first.rank, first.node, first.doing)  # fmt: skip
        for b in beats:
            if b.age > self.stall and b.process_state() == "stopped":
                return Stall("stopped", f"rank {b.rank} on node {b.node} stopped making progress: its process is "
                             f"stopped (e.g. by SIGSTOP) and has sent no heartbeat for {b.age:.1f} s; it was "
                             f"{b.where()}", b.rank, b.node, b.doing)  # fmt: skip
        if self.ranks is not None and len(everyone) < self.ranks:
            early = self._stopped_before_beating({b.rank for b in everyone})
            if early is not None:
                return early
        waiting = [b for b in beats if b.comm is not None and b.waited + b.age > self.behind]
        if not waiting:
            return None
        idle = [b for b in beats if b.comm is None]
        if not idle:
            return None  # every rank is in a call: a slow collective or a lost link (the cluster's check)
        lag = min(idle, key=lambda b: (b.comm_call, b.rank))
        late = f"; its heartbeat is {lag.age:.1f} s old (a long call that holds Python's lock?)" if lag.age > 2 else ""
        peers = ", ".join(str(b.rank) for b in waiting)
        longest = max(waiting, key=lambda b: b.waited + b.age)
        return Stall("behind", f"rank {lag.rank} on node {lag.node} fell behind: rank(s) {peers} waited "
                     f"{longest.waited + longest.age:.1f} s in {longest.comm} (call {longest.comm_call}) while it "
                     f"was {lag.where()}{late}", lag.rank, lag.node, lag.doing)  # fmt: skip

    def _stopped_before_beating(self, beating: set) -> Stall | None:
        """A rank whose process was stopped before it wrote its first heartbeat (a ``SIGSTOP`` while it started).

        No heartbeat names it, so the run's processes are looked at directly, at most once a second: those
        whose environment points at this watchdog's folder, have a rank (``RANK``, ``PMI_RANK``, ...) that has
        not beaten, and are stopped. One stopped for ``stall`` seconds is named.
        """
        now = time.monotonic()
        if now - self._scanned < 1.0:
            return None
        self._scanned = now
        stopped = {pid: rank for pid, rank in _ranks_with(f"{_ENV_DIR}={self.folder}")
                   if rank not in beating and _process_state(pid) == "stopped"}  # fmt: skip
        self._stopped_since = {pid: self._stopped_since.get(pid, now) for pid in stopped}
        for pid, rank in sorted(stopped.items(), key=lambda item: item[1]):
            waited = now - self._stopped_since[pid]
            if waited > self.stall:
                return Stall("stopped", f"rank {rank} stopped before its first heartbeat: its process (pid {pid}) "
                             f"has been stopped (e.g. by SIGSTOP) for {waited:.1f} s while it started", rank, None,
                             "starting")  # fmt: skip
        return None

    def _note(self, rank: int) -> str:
        """The last line of rank ``rank``'s note of how it ended, or ``""``."""
        try:
            return (self.notes / f"ended.{rank}").read_text().strip().splitlines()[-1] if self.notes else ""
        except (OSError, IndexError):
            return ""

    def _noted(self, rank: int) -> float:
        """When rank ``rank`` left its note of how it ended (its own, or its guard's), or infinity."""
        if self.notes is None:
            return float("inf")
        try:
            return (self.notes / f"ended.{rank}").stat().st_mtime
        except OSError:
            return float("inf")

    def gone(self) -> list:
        """Heartbeats of ranks whose process no longer exists (to name who died, and where)."""
        return [b for b in self.beats() if b.process_state() == "gone"]
