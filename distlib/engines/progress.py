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

The launcher's :class:`Watchdog` reads the files while it waits. When one
rank's heartbeat is older than ``stall`` seconds it ends the run and says
which rank, on which node, doing what. The files live in a folder the
launcher makes (``$DISTLIB_PROGRESS_DIR``); a rank started any other way
(``mpiexec`` by hand) has no such variable and keeps no heartbeat.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BEAT", "DEFAULT_STALL", "note", "start", "Beat", "Watchdog"]

BEAT = 0.5
"""Seconds between heartbeats."""

DEFAULT_STALL = float(os.environ.get("DISTLIB_STALL", "15"))
"""Seconds without a heartbeat before the launcher declares a rank stopped (named within ``stall + 1`` s).

``$DISTLIB_STALL`` changes it for every launcher in a process (the tests use 4 s)."""

_ENV_DIR = "DISTLIB_PROGRESS_DIR"
_state = {"doing": "starting", "calls": 0}
_thread: list = []


def note(doing: str) -> None:
    """Record what this rank is doing now (shown if it stops). Cheap: one dict store."""
    _state["doing"] = doing
    _state["calls"] += 1


def _rank_from_env():
    for key in ("RANK", "PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK"):
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

    main = threading.main_thread()

    def beat():
        tmp = path.with_suffix(".tmp")
        while main.is_alive():  # stop with the program: never hold up the interpreter's exit
            record = {"rank": rank, "node": node, "pid": pid, "time": time.time(), "doing": _state["doing"],
                      "calls": _state["calls"]}  # fmt: skip
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

    @property
    def age(self) -> float:
        return time.time() - self.time

    def process_state(self) -> str:
        """``"stopped"``, ``"gone"`` or ``"running"``: from ``/proc`` on Linux, from psutil elsewhere (macOS)."""
        return _process_state(self.pid)

    def describe(self) -> str:
        how = {"stopped": " (its process is stopped, e.g. by SIGSTOP)", "gone": " (its process has exited)"}
        return (f"rank {self.rank} on node {self.node} stopped making progress: no heartbeat for {self.age:.1f} s"
                f"{how.get(self.process_state(), '')}; it was in {self.doing} (progress note {self.calls})")  # fmt: skip


class Watchdog:
    """The launcher's side: a folder for the ranks' heartbeats, and the check.

    Parameters
    ----------
    folder : path
        Where the ranks write (``$DISTLIB_PROGRESS_DIR`` in their environment).
    stall : float
        Seconds without a heartbeat before a rank counts as stopped (> 2 beats).
    """

    def __init__(self, folder, *, stall: float = DEFAULT_STALL):
        from .._check import check_real

        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.stall = check_real("stall", stall, minimum=4 * BEAT)

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

    def check(self) -> str | None:
        """A sentence naming the first stopped rank, or ``None`` while every rank beats."""
        # A rank whose process has exited is the launcher's business (an exit
        # status, Hydra's report); here only ranks that are there but silent.
        late = [b for b in self.beats() if b.age > self.stall and b.process_state() != "gone"]
        return late[0].describe() if late else None

    def gone(self) -> list:
        """Heartbeats of ranks whose process no longer exists (to name who died, and where)."""
        return [b for b in self.beats() if b.process_state() == "gone"]
