"""The processes of a run, on one host or many: starting them tied to their launcher, waiting on them,
stopping them, and sweeping what they leave.

The floor under :mod:`distlib.engines.launch`, which plans a run (which
processes, with which environment) and reads its results; this module knows
processes only, not MPI or torch:

* :class:`_Processes` starts each process in a session of its own, tied to
  the launcher by ``PR_SET_PDEATHSIG`` (Linux), pumps its output, records
  which exits first, and stops them all with a grace period;
* every process carries ``DISTLIB_RUN_ID``; :func:`stray_processes` finds the
  ones that escaped their launcher's process group (MPICH's ranks do);
* :class:`_Leftovers` notes ``/dev/shm`` and the temp folder before a run
  and removes what MPICH, Hydra or UCX left after it;
* :func:`_stop_on_signals` turns SIGTERM, SIGHUP and SIGQUIT into an
  exception in the main thread, so that clean-up runs.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from ._reaper import LEFTOVER as _LEFTOVER  # one pattern for the launcher and its reaper
from .progress import _prctl, tie_to_parent

RUN_ID_VAR = "DISTLIB_RUN_ID"


def _tagged(run_id: str) -> dict:
    """``{pid: environ bytes}`` of live processes tagged ``DISTLIB_RUN_ID=run_id`` (Linux /proc)."""
    marker = f"{RUN_ID_VAR}={run_id}".encode()
    me = os.getpid()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            env = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z" and marker in env.split(b"\0"):
            found[int(entry.name)] = env
    return found


def stray_processes(run_id: str) -> list:
    """PIDs of live processes whose environment carries ``DISTLIB_RUN_ID=run_id``."""
    if Path("/proc").is_dir():
        return sorted(_tagged(run_id))
    try:  # not Linux (no /proc): psutil, a dependency of the library
        import psutil
    except ImportError:  # pragma: no cover - a broken install; nothing to find with
        return []
    pids = []
    for proc in psutil.process_iter(["pid"]):  # pragma: no cover - non-Linux
        try:
            if (proc.pid != os.getpid() and proc.environ().get(RUN_ID_VAR) == run_id
                    and proc.status() != psutil.STATUS_ZOMBIE):
                pids.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return sorted(pids)


def _kill_group(pid: int, sig=signal.SIGKILL) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


STOP_GRACE = 2.0
"""Seconds between the ``SIGTERM`` that ends a failed run and the ``SIGKILL``: MPICH's processes remove their
shared-memory segments on the way out, which a ``SIGKILL`` gives them no chance to do."""


def _kill_run(run_id: str, popens, *, grace: float = 0.0) -> None:
    """Stop every process of a run: ``SIGTERM`` and up to ``grace`` seconds to go, then ``SIGKILL`` for the
    launchers' groups and anything tagged ``run_id``."""
    alive = [p for p in popens if p.poll() is None]
    strays = stray_processes(run_id) if grace > 0 else []
    if grace > 0 and (alive or strays):
        for proc in alive:
            _kill_group(proc.pid, signal.SIGTERM)
        for pid in strays:
            try:
                os.kill(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and (any(p.poll() is None for p in popens) or stray_processes(run_id)):
            time.sleep(0.05)
    for proc in popens:
        _kill_group(proc.pid)
    for _ in range(50):
        strays = stray_processes(run_id)
        if not strays:
            break
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)
    for proc in popens:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass


# What a failed MPI run can leave: MPICH's shared-memory segments, Hydra's files.
_SHM = Path("/dev/shm")
_WORKDIR = re.compile(r"^distlib-(mpi|torch|torchrun)-(\d+)-")
ABANDONED_AFTER = 60.0
"""Seconds after which an MPICH segment that no process holds counts as abandoned by an earlier run."""


def _entries(folder: Path) -> set:
    try:
        return set(os.listdir(folder))
    except OSError:
        return set()


def _held(paths) -> set:
    """Those of ``paths`` that a live process has open or mapped (Linux ``/proc``)."""
    wanted = {str(p) for p in paths}
    held = set()
    if not wanted or not Path("/proc").is_dir():
        return wanted if wanted and not Path("/proc").is_dir() else held  # elsewhere: claim every one held
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            maps = (entry / "maps").read_text(errors="replace")
        except OSError:
            maps = ""
        held |= {w for w in wanted if w in maps}
        try:
            for fd in (entry / "fd").iterdir():
                target = os.readlink(fd)
                if target in wanted:
                    held.add(target)
        except OSError:
            pass
        if held == wanted:
            break
    return held


class _Leftovers:
    """What a run may leave behind, noted before it starts and removed after it ends, on every path.

    New entries of ``/dev/shm`` and the temp folder that MPICH, Hydra or UCX
    made and no live process holds; and, from earlier runs whose launcher was
    ``SIGKILL``-ed (no clean-up of its own ran), their work folders and any
    MPICH segment no process has held for :data:`ABANDONED_AFTER` seconds.
    """

    def __init__(self):
        self.tmp = Path(tempfile.gettempdir())
        self.before = {_SHM: _entries(_SHM), self.tmp: _entries(self.tmp)}
        self._sweep_abandoned()

    def _remove(self, paths) -> list:
        gone = []
        held = _held(paths)
        for path in paths:
            if str(path) in held:
                continue
            try:
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
                gone.append(path)
            except OSError:
                continue
        return gone

    def _sweep_abandoned(self) -> None:
        now = time.time()
        dead = []
        for name in self.before[self.tmp]:
            m = _WORKDIR.match(name)
            if m and not _pid_alive(int(m.group(2))):
                dead.append(self.tmp / name)
        for name in self.before[_SHM]:
            path = _SHM / name
            try:
                old = now - path.stat().st_mtime > ABANDONED_AFTER
            except OSError:
                continue
            if _LEFTOVER.match(name) and old:
                dead.append(path)
        if dead:
            self._remove([p for p in dead])

    def sweep(self) -> list:
        """Remove what this run left; returns the paths removed."""
        new = [folder / name for folder, before in self.before.items()
               for name in _entries(folder) - before if _LEFTOVER.match(name)]  # fmt: skip
        return self._remove(new) if new else []


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Signalled(BaseException):
    """A signal that ends the run, raised in the launcher's main thread by :func:`_stop_on_signals`."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name))


@contextmanager
def _stop_on_signals():
    """While a run is up: SIGTERM, SIGHUP (a closed terminal, a dropped ssh) and SIGQUIT end it cleanly.

    Only from the main thread (Python runs signal handlers there); the
    previous handlers come back afterwards.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise _Signalled(signum)

    previous = {}
    for sig in _STOP_SIGNALS:
        try:
            previous[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):  # pragma: no cover - not settable here
            continue
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class _Processes:
    """The processes of one run (ranks, or launchers such as mpiexec and torchrun), on one host or many.

    Each starts in a session of its own; threads pump its output and record
    the order in which processes exit, so the first to fail is the one
    blamed, not its victims. :meth:`wait` returns when all have exited, one
    has failed, the time is up, or ``watch()`` (the progress watchdog, the
    mini cluster's health) has something to say; :meth:`stop` ends every
    process of the run, however it went. The one path every launcher here
    takes: :func:`run_mpi` (one ``mpiexec``), :func:`run_torch` (one
    process per rank, on one node or spread over a mini cluster's nodes) and
    :func:`run_torchrun` (one ``torchrun`` agent per node).
    """

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.procs: list = []
        self.outs: list = []
        self.errs: list = []
        self.readers: list = []
        self.exits: list = []
        self.cond = threading.Condition()

    def start(self, command, env, *, merge: bool = False, echo: bool = False) -> int:
        # Tied to this process: if the launcher dies (even by SIGKILL), Linux kills what it started.
        tie = tie_to_parent if _prctl() is not None else None
        proc = subprocess.Popen(
            command, env=env, start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge else subprocess.PIPE, text=True, errors="replace", preexec_fn=tie,
        )  # fmt: skip
        i = len(self.procs)
        self.procs.append(proc)
        out, err = [], []
        self.outs.append(out)
        self.errs.append(err)
        mirrors = (sys.stdout, sys.stderr) if echo else (None, None)
        streams = [(proc.stdout, out, mirrors[0])] + ([] if merge else [(proc.stderr, err, mirrors[1])])
        for stream, sink, mirror in streams:
            t = threading.Thread(target=_pump, args=(stream, sink, mirror), daemon=True)
            t.start()
            self.readers.append(t)
        threading.Thread(target=self._waiter, args=(i, proc), daemon=True).start()
        return i

    def _waiter(self, i, proc) -> None:
        proc.wait()
        with self.cond:
            self.exits.append(i)
            self.cond.notify_all()

    def wait(self, timeout: float, *, watch=None) -> tuple:
        """``(first failed index or None, timed out?, the watch's message or None)``."""
        deadline = time.monotonic() + timeout
        while True:
            with self.cond:
                bad = [i for i in self.exits if self.procs[i].returncode != 0]
                if bad:
                    return self._root_cause(bad), False, None
                if len(self.exits) == len(self.procs):
                    return None, False, None
                left = deadline - time.monotonic()
                if left <= 0:
                    return None, True, None
                self.cond.wait(min(left, 0.5))
            if watch is not None:
                message = watch()
                if message:
                    return None, False, message

    #: After the first failure, how long to wait for the others that fail with it (their exits are seen in any order).
    SETTLE = 0.3

    def _root_cause(self, bad: list) -> int:
        """Of the processes that failed together, the one to name: killed by a signal, else the first seen.

        A rank killed by a signal (``kill -9``, the out-of-memory killer) makes
        its peers fail a moment later with an exit status of their own (a
        connection reset); on a busy machine their exits can be seen first.
        Called with ``self.cond`` held.
        """
        deadline = time.monotonic() + self.SETTLE
        while len(self.exits) < len(self.procs) and time.monotonic() < deadline:
            self.cond.wait(max(0.0, deadline - time.monotonic()))
        bad = [i for i in self.exits if self.procs[i].returncode != 0]
        return next((i for i in bad if self.procs[i].returncode < 0), bad[0])

    def stop(self) -> None:
        _kill_run(self.run_id, self.procs, grace=STOP_GRACE)
        for t in self.readers:
            t.join(timeout=5)

    def text(self, i: int, *, stderr: bool = False) -> str:
        return "".join((self.errs if stderr else self.outs)[i])

    @property
    def codes(self) -> list:
        return [p.returncode for p in self.procs]


def _pump(stream, sink, mirror) -> None:
    for line in iter(stream.readline, ""):
        sink.append(line)
        if mirror is not None:
            mirror.write(line)
            mirror.flush()
    stream.close()




def max_ranks() -> int:
    """The most ranks one run may start here: eight per core (at least 16), and within the process limit."""
    limit = max(16, 8 * (os.cpu_count() or 1))
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
        if soft != resource.RLIM_INFINITY:
            limit = min(limit, max(1, soft // 4))  # each rank may start a few threads' worth of tasks
    except (ImportError, ValueError, OSError):  # pragma: no cover - not Unix
        pass
    return limit


_REAPER = Path(__file__).with_name("_reaper.py")


class _Reaper:
    """A process outside the run that cleans up after it if this launcher dies first (see :mod:`._reaper`).

    ``done()`` when the launcher has cleaned up itself; otherwise the pipe
    closes with the launcher, and the reaper kills the run's processes and
    removes its files (and ``netns``, a mini cluster's namespaces). Linux only
    (``/proc``); elsewhere it starts nothing.
    """

    def __init__(self, run_id: str, workdir=None, *, before: dict | None = None, netns=(), etc_netns="/etc/netns"):
        self.proc = None
        if not Path("/proc").is_dir():
            return
        import json

        job = {"run_id": run_id, "workdir": str(workdir) if workdir else None, "netns": list(netns),
               "etc_netns": str(etc_netns), "before": {str(k): sorted(v) for k, v in (before or {}).items()}}  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k != RUN_ID_VAR}  # never one of the run's own processes
        try:
            self.proc = subprocess.Popen([sys.executable, "-S", "-E", str(_REAPER), json.dumps(job)], env=env,
                                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True, close_fds=True)  # fmt: skip
        except OSError:  # pragma: no cover - cannot start a process: the launcher's own clean-up still runs
            self.proc = None

    def done(self) -> None:
        """The launcher cleaned up: the reaper leaves without doing anything."""
        if self.proc is None:
            return
        try:
            self.proc.stdin.write(b"done")
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self.proc.kill()
        self.proc = None
