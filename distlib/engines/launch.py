"""Start ``p`` real processes, collect what each rank printed, and clean up.

Notebooks cannot be MPI ranks themselves, so the chapters launch worker
modules (files in :mod:`distlib.examples`, never functions defined in a
cell, never ``fork``) through these functions:

* :func:`run_mpi` -- ``mpiexec -n P python -m mpi4py <script or -m module>``;
* :func:`run_torch` -- ``P`` Python processes joined by ``torch.distributed``
  (gloo or NCCL), started as fresh interpreters;
* :func:`try_mpi` / :func:`try_torch` -- the same, but a deadlock or a
  failure comes back as an :class:`Outcome` to print instead of an exception.

Every run is bounded and leaves nothing behind:

* a wall-clock ``timeout`` (MPICH's ``MPIEXEC_TIMEOUT`` for mpiexec, and a
  watchdog here for both engines);
* ``python -m mpi4py`` turns an uncaught exception on any rank into
  ``MPI_Abort``, so the others stop at once; torch ranks get a collective
  ``timeout`` (``init_process_group(timeout=...)``), and the watchdog stops
  every rank as soon as one exits with an error;
* each run tags its processes with a unique ``DISTLIB_RUN_ID`` in their
  environment and, at the end, kills any process still carrying it (MPICH's
  process manager puts each rank in a session of its own, so killing
  ``mpiexec``'s process group alone would not reach them).

* each rank keeps a heartbeat (:mod:`distlib.engines.progress`), and a rank
  that stops beating for ``stall`` seconds (15 by default, ``$DISTLIB_STALL``)
  ends the run with :class:`RunStalled`, naming the rank, its node and what
  it was doing; long runs stay allowed, since a rank waiting in a collective
  keeps beating.

All three launchers also run across a :class:`distlib.minicluster.MiniCluster`
(``cluster=``): ``mpiexec`` with a host file and a launcher command that
enters each node, one ``torchrun`` agent per node with the static rendezvous,
or one process per rank placed on its node. They share one path for
starting, waiting on and stopping processes (``_Processes``).

Local runs stay on this machine: ``mpiexec -host localhost``, ranks talking
through shared memory only (``UCX_TLS=self,sm``: MPICH's network layer opens
no socket), torch ranks meeting through a ``file://`` rendezvous with gloo
bound to ``lo`` (``GLOO_SOCKET_IFNAME=lo``). MPICH's launcher, Hydra,
listens for its own helper processes on a port bound to all interfaces
and has no option to change that, so where Linux allows unprivileged user
namespaces the whole MPI run starts in a network namespace of its own that
holds only a loopback interface (:mod:`distlib.engines._isolate`;
``RunResult.network`` says which way a run went). Elsewhere that one
port stays open on every interface for the length of the run; nothing the
ranks send goes through it.

Where the kernel allows it, MPI runs also get MPICH's single-copy
transfers between ranks (``MPIR_CVAR_CH4_CMA_ENABLE=1``; see
:mod:`distlib.engines._isolate`). ``DISTLIB_MPI_NETNS=0`` and
``DISTLIB_MPI_CMA=0`` turn either off.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .._check import check_choice, check_int, check_real
from ._isolate import cma_available, network_prefix
from ._processes import (  # noqa: F401 - stray_processes and RUN_ID_VAR are public here
    RUN_ID_VAR,
    STOP_GRACE,
    _Leftovers,
    _Processes,
    _Reaper,
    _Signalled,
    _stop_on_signals,
    stray_processes,
)
from .placement import check_placement
from .progress import DEFAULT_STALL, LAUNCHER_VAR, Stall, Watchdog, launcher_tag

__all__ = [
    "RunResult",
    "RunError",
    "RunTimeout",
    "RunStalled",
    "Outcome",
    "run_mpi",
    "run_torch",
    "try_mpi",
    "try_torch",
    "run_torchrun",
    "PrivateNetworkUnavailable",
    "find_mpiexec",
    "stray_processes",
    "RunInterrupted",
    "EXIT_STATUS",
    "exit_status",
    "failure_report",
]


# Environment both engines get unless the caller sets it: one BLAS/OpenMP
# thread per rank (ranks already fill the cores) and unbuffered output.
_QUIET_THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@dataclass
class RunResult:
    """What every rank printed, in rank order.

    Attributes
    ----------
    stdout, stderr : list of str
        Rank ``r``'s standard output and error.
    launcher : str
        What the launcher itself printed (``mpiexec``'s messages).
    returncodes : list of int or None
        Each rank's exit status where known (``None`` for MPI ranks, whose
        status ``mpiexec`` folds into its own).
    returncode : int
        The launcher's exit status (0 on success).
    seconds : float
        Wall-clock time of the whole run.
    command : list of str
        What was started (for one rank, in the torch case).
    run_id : str
        The ``DISTLIB_RUN_ID`` its processes carried.
    pids : dict
        Rank -> process id (torch runs; MPI ranks are ``mpiexec``'s children).
    network : str
        ``"private"`` (an MPI run in its own loopback-only network
        namespace), ``"host"``, or ``"mini cluster"`` (ranks on the nodes of
        a :class:`distlib.minicluster.MiniCluster`).
    nodes : dict
        Rank -> the node it ran on, where its heartbeat said.
    ended : dict
        Rank -> how it failed, as the rank itself wrote before it aborted
        (MPI runs): its traceback, or ``"exit status N"``; the first to fail
        comes first. Empty if none failed.
    """

    stdout: list
    stderr: list
    launcher: str
    returncodes: list
    returncode: int
    seconds: float
    command: list
    run_id: str
    pids: dict = field(default_factory=dict)
    network: str = "host"
    nodes: dict = field(default_factory=dict)
    """Rank -> hostname of the node it ran on (runs with a heartbeat; see :mod:`~distlib.engines.progress`)."""
    ended: dict = field(default_factory=dict)
    """Rank -> how it failed, in its own words (MPI runs), first failure first: a traceback or ``"exit status N"``."""
    gone: list = field(default_factory=list)
    """Ranks whose processes had already exited when the launcher saw the run fail (MPI runs, by their heartbeats):
    who died first, where no rank left a note (a ``SIGKILL``)."""

    @property
    def p(self) -> int:
        return len(self.stdout)

    def lines(self, rank: int) -> list:
        """Rank ``rank``'s output lines."""
        return self.stdout[rank].splitlines()

    def text(self, *, stderr: bool = False) -> str:
        """Every rank's output, rank 0 first, each line prefixed ``[r]``."""
        streams = self.stderr if stderr else self.stdout
        out = []
        for r, text in enumerate(streams):
            out.extend(f"[{r}] {line}" for line in text.splitlines())
        return "\n".join(out)

    def __str__(self) -> str:
        return self.text()


class RunError(RuntimeError):
    """A rank failed (exited with an error, was killed, or raised).

    ``.result`` holds what every rank printed up to then; ``.rank`` the
    failing rank where known.
    """

    def __init__(self, message: str, result: RunResult, rank: int | None = None):
        super().__init__(message)
        self.result = result
        self.rank = rank


class PrivateNetworkUnavailable(RuntimeError):
    """This machine cannot start a run in a loopback-only network namespace (see :func:`run_torchrun`)."""


class RunTimeout(RunError):
    """The run did not finish in time: a deadlock or a hung rank. Everything was killed."""


class RunStalled(RunTimeout):
    """A rank stopped making progress (the watchdog), or a node was cut off; the run was ended early.

    ``.rank`` and ``.node`` name it where known.
    """

    def __init__(self, message: str, result: RunResult, rank: int | None = None, node: str | None = None,
                 kind: str = "stopped"):  # fmt: skip
        super().__init__(message, result, rank)
        self.node = node
        self.kind = kind
        """``"stopped"`` (a rank's process stopped), ``"behind"`` (its peers waited on it) or ``"node"`` (lost)."""


class RunInterrupted(RunError):
    """The launcher was told to stop (SIGTERM, SIGHUP, SIGQUIT); every process of the run was stopped first.

    ``.signal`` is the signal's number. (Ctrl-C stays ``KeyboardInterrupt``, after the same clean-up.)
    """

    def __init__(self, message: str, result: RunResult | None, signum: int):
        super().__init__(message, result)
        self.signal = signum


EXIT_STATUS = {
    "ok": 0,
    "bad input": 2,
    "rank failed": 3,
    "rank stalled": 4,
    "node lost": 5,
    "timed out": 124,
    "interrupted": 130,
}
"""The exit status of the library's commands (``python -m distlib.bench``, ``python -m distlib.run``) by how a
run ended. ``interrupted`` is 128 + the signal's number: 130 for Ctrl-C (SIGINT), 143 for SIGTERM, 129 for
SIGHUP, 131 for SIGQUIT."""


def exit_status(exc: BaseException) -> int:
    """The command-line exit status for how a run ended (:data:`EXIT_STATUS`)."""
    if isinstance(exc, RunInterrupted):
        return 128 + exc.signal
    if isinstance(exc, KeyboardInterrupt):
        return 128 + signal.SIGINT
    if isinstance(exc, RunStalled):
        return EXIT_STATUS["node lost"] if exc.kind == "node" else EXIT_STATUS["rank stalled"]
    if isinstance(exc, RunTimeout):
        return EXIT_STATUS["timed out"]
    if isinstance(exc, RunError):
        return EXIT_STATUS["rank failed"]
    if isinstance(exc, (ValueError, TypeError)):
        return EXIT_STATUS["bad input"]
    return 1


def failure_report(exc: BaseException, prog: str) -> str:
    """What a command prints on stderr when a run failed: the launcher's diagnosis, and the rank's last words.

    The first line names what happened (which rank, which node, doing what);
    what follows is the failed rank's own last lines where the message does
    not hold them already.
    """
    if isinstance(exc, KeyboardInterrupt):
        return f"{prog}: interrupted (Ctrl-C); every process of the run was stopped"
    text = str(exc).strip()
    result = getattr(exc, "result", None)
    rank = getattr(exc, "rank", None)
    if result is not None and rank is not None and 0 <= rank < result.p:
        last = result.ended.get(rank) or result.stderr[rank]
        if last.strip() and _tail(last) not in text:
            text += f"\nrank {rank}'s last words (stderr):\n{_tail(last)}"
    return f"{prog}: {text}"


@dataclass
class Outcome:
    """How a run ended: ``status`` is ``"completed"``, ``"deadlocked"`` or ``"failed"``."""

    status: str
    seconds: float
    result: RunResult
    error: str = ""
    details: dict = field(default_factory=dict)

    def __str__(self) -> str:
        if self.status == "completed":
            return f"completed in {self.seconds:.2f} s"
        if self.status == "deadlocked":
            limit = self.details.get("timeout", self.seconds)
            return f"deadlocked: the ranks did not finish within the {limit:g} s limit; all processes were killed"
        return f"failed: {self.error}"


# ----------------------------------------------------------------------------
# Finding and cleaning up processes
# ----------------------------------------------------------------------------


def find_mpiexec() -> str:
    """Path of MPICH's ``mpiexec``, the launcher the library's flags are written for.

    First the one the ``mpich`` wheel installed (found through that wheel's own
    file list, wherever pip put its scripts); then an ``mpiexec`` on ``PATH``
    that reports itself as MPICH's Hydra. Never a launcher merely because it
    sits next to this Python or first on ``PATH``: Google Colab, for one, has
    Open MPI's ``/usr/bin/mpiexec`` next to its system Python, and Open MPI
    rejects MPICH's flags.

    With the wheel's launcher it also sets ``MPI4PY_LIBMPI`` (unless already
    set) to the same wheel's ``libmpi``, for this process and the ranks it
    starts: mpi4py looks for libmpi only under the venv's, the user's and the
    system's prefix, so where pip installs elsewhere (Colab: ``/usr/local``)
    it would load another MPI, or none.

    Raises
    ------
    FileNotFoundError
        Naming what was found instead and what to install.
    """
    from importlib import metadata

    try:
        files = metadata.distribution("mpich").files or []
    except metadata.PackageNotFoundError:
        files = []
    located = {entry.name: Path(entry.locate()).resolve() for entry in files
               if entry.name in ("mpiexec", "libmpi.so.12", "libmpi.so")}
    wheel = located.get("mpiexec")
    if wheel is not None and wheel.is_file() and os.access(wheel, os.X_OK):
        libmpi = located.get("libmpi.so.12") or located.get("libmpi.so")
        if libmpi is not None and libmpi.is_file():
            os.environ.setdefault("MPI4PY_LIBMPI", str(libmpi))
        return str(wheel)
    others = []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        path = Path(folder or ".") / "mpiexec"
        if not (path.is_file() and os.access(path, os.X_OK)) or str(path) in others:
            continue
        try:
            version = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                                     timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            version = ""
        if "HYDRA" in version or "MPICH" in version:
            return str(path)
        others.append(str(path))
    found = f" (found only {', '.join(others)}, which is not MPICH's)" if others else ""
    raise FileNotFoundError(f"MPICH's mpiexec not found{found}; pip install mpi4py mpich")



@contextmanager
def _launching(procs, what: str, workdir=None):
    """The frame of every run: signals handled, and on every path all processes stopped and leftovers swept;
    and a reaper outside the run that does the same if this process dies before it can (a ``SIGKILL``)."""
    leftovers = _Leftovers()
    reaper = _Reaper(procs.run_id, workdir, before=leftovers.before)
    try:
        with _stop_on_signals():
            yield
    except _Signalled as exc:
        name = signal.Signals(exc.signum).name
        raise RunInterrupted(f"{what} was interrupted by {name}; every process of the run was stopped.", None,
                             exc.signum) from None  # fmt: skip
    finally:
        procs.stop()
        leftovers.sweep()
        reaper.done()


def _watch(watchdog, cluster):
    """The check run while waiting (a :class:`~distlib.engines.progress.Stall` or ``None``): a stopped rank or
    one its peers wait on first, then a node cut off or gone; ``None`` when there is nothing to watch."""
    checks = [c for c in (watchdog.check if watchdog is not None else None,
                          cluster.health if cluster is not None else None) if c is not None]  # fmt: skip
    if not checks:
        return None

    def check():
        for c in checks:
            found = c()
            if found:
                return found
        return None

    return check


def _stalled(what: str, stall: Stall, result: RunResult) -> RunStalled:
    return RunStalled(f"{what} ended early: {stall}; every process of the run was stopped.", result, stall.rank,
                      stall.node, stall.kind)  # fmt: skip


@dataclass
class _Start:
    """One process a plan starts: its argv and environment; ``merge`` folds stderr into stdout; ``echo``
    copies its output here as it comes."""

    argv: list
    env: dict
    merge: bool = False
    echo: bool = False


@dataclass
class _Ended:
    """How the processes of a run ended, as the one execution loop saw it, for the plan to read its results."""

    procs: _Processes
    failed: int | None
    timed_out: bool
    stalled: Stall | None
    beats: list
    gone: list
    seconds: float


@dataclass
class _Plan:
    """A run, planned: what to start, for how long, what to watch, and how to read and judge what it left.

    The three launchers only build plans (:func:`_mpi_plan`, :func:`_torch_plan`, :func:`_torchrun_plan`);
    :func:`_execute` runs every one of them the same way.
    """

    what: str
    run_id: str
    workdir: Path
    starts: list
    timeout: float
    watchdog: Watchdog | None
    cluster: object | None
    collect: object
    """``collect(ended) -> RunResult``: read the ranks' output, after every process has stopped."""
    judge: object
    """``judge(result, ended) -> RunError | None``: the failure to raise, if the run did not succeed."""


def _execute(plan: _Plan, *, check: bool) -> RunResult:
    """Start a plan's processes, wait, stop them all however the run ends, read and judge the result."""
    procs = _Processes(plan.run_id)
    start = time.monotonic()
    try:
        with _launching(procs, plan.what, plan.workdir):
            for one in plan.starts:
                procs.start(one.argv, one.env, merge=one.merge, echo=one.echo)
            failed, timed_out, stalled = procs.wait(plan.timeout, watch=_watch(plan.watchdog, plan.cluster))
            watchdog = plan.watchdog
            beats = watchdog.beats() if watchdog is not None else []
            # Seen now, before the clean-up stops the rest: the ranks whose processes had already gone.
            gone = [b.rank for b in watchdog.gone()] if watchdog is not None and failed is not None else []
        ended = _Ended(procs, failed, timed_out, stalled, beats, gone, time.monotonic() - start)
        result = plan.collect(ended)
    finally:
        shutil.rmtree(plan.workdir, ignore_errors=True)
    if stalled and stalled.kind == "gone":  # a rank failed; its engine's launcher did not end the run
        result.returncode = result.returncode or 1
        error = RunError(f"{plan.what} failed: {stalled}; every process of the run was stopped.", result,
                         stalled.rank)  # fmt: skip
    elif stalled:
        result.returncode = 124
        error = _stalled(plan.what, stalled, result)
    else:
        error = plan.judge(result, ended)
    if error is not None and check:
        raise error
    return result


def _new_run(kind: str, stall, behind) -> tuple:
    """``(run id, work folder, watchdog or None)`` for a new run; the folder's name carries this process's pid, so
    a later run can sweep it if this launcher dies without cleaning up."""
    workdir = Path(tempfile.mkdtemp(prefix=f"distlib-{kind}-{os.getpid()}-"))
    watchdog = Watchdog(workdir / "progress", stall=stall, behind=behind) if stall is not None else None
    return uuid.uuid4().hex, workdir, watchdog


def _ranks_per_node(n: int, cluster) -> int:
    if n % cluster.n_nodes:
        raise ValueError(f"n must be a multiple of the cluster's {cluster.n_nodes} nodes (ranks are spread evenly), got {n}")
    return n // cluster.n_nodes


def _base_env(run_id: str, env) -> dict:
    out = dict(os.environ)
    for key, value in _QUIET_THREADS.items():
        out.setdefault(key, value)
    out["PYTHONUNBUFFERED"] = "1"
    out[RUN_ID_VAR] = run_id
    out[LAUNCHER_VAR] = launcher_tag()  # each rank ends itself when this process is gone
    # The ranks import distlib from wherever this process does.
    root = str(Path(__file__).resolve().parents[2])
    out["PYTHONPATH"] = root + (os.pathsep + out["PYTHONPATH"] if out.get("PYTHONPATH") else "")
    if env:
        out.update({str(k): str(v) for k, v in env.items()})
    return out


def _target_argv(target: str) -> list:
    """``script.py`` -> [path]; ``package.module`` -> ["-m", module]."""
    if not isinstance(target, (str, os.PathLike)):
        raise TypeError(f"target must be a script path or a module name (str), got {type(target).__name__}")
    target = os.fspath(target)
    if target.endswith(".py") or os.sep in target:
        if not os.path.exists(target):
            raise FileNotFoundError(f"target script {target!r} does not exist")
        return [os.path.abspath(target)]
    return ["-m", target]


def _tail(text: str, n: int = 12) -> str:
    lines = text.strip().splitlines()
    return "\n".join(lines[-n:])


# ----------------------------------------------------------------------------
# MPI
# ----------------------------------------------------------------------------


def run_mpi(target, n: int, *, args=(), timeout: float = 60.0, env=None, check: bool = True, cluster=None,
            stall: float | None = DEFAULT_STALL, behind: float | None = None) -> RunResult:  # fmt: skip
    """Run ``target`` on ``n`` MPI ranks and return what each printed.

    Starts ``mpiexec -n n -host localhost python -m mpi4py target args...``
    in a new session, with ``MPIEXEC_TIMEOUT`` set, and kills every process
    of the run when it ends, however it ends. With ``cluster`` (a
    :class:`distlib.minicluster.MiniCluster`) the ranks are spread over its
    nodes, ``n / nodes`` each, the way one would on real machines:
    ``mpiexec -f hostfile -launcher ssh -launcher-exec <node-ssh> -iface eth0``
    started on the first node, where ``node-ssh`` stands in for ``ssh`` and
    enters the target node's namespace. Ranks on one node then share memory
    (MPICH's shared-memory transport); between nodes UCX is held to TCP
    (``UCX_TLS=tcp,self``), so those bytes cross the throttled link.

    Parameters
    ----------
    target : str
        A script path (``"work.py"``) or a module name
        (``"distlib.examples.mpi_hello"``), run on every rank.
    n : int
        Number of ranks, ``>= 1`` (with ``cluster``: a multiple of its nodes).
    args : sequence of str
        Command-line arguments for the target.
    timeout : float
        Seconds before the whole run is declared hung and killed.
    env : dict, optional
        Extra environment variables for the ranks.
    check : bool
        Raise on failure (default). With ``False``, return the result and
        let the caller read ``returncode``.
    cluster : MiniCluster, optional
        Run across its nodes instead of on this host.
    stall : float or None
        Seconds a *stopped* rank (``SIGSTOP``, a debugger) may go without a
        heartbeat before the run is ended and that rank named
        (:mod:`~distlib.engines.progress`); ``None`` turns the watchdog
        off. Long runs are fine: a rank waiting in a collective keeps
        beating, and a running rank is never called stopped.
    behind : float, optional
        Seconds the other ranks may wait in a communication call while one
        rank is in none (stuck in Python, a long step) before that rank is
        named (default :data:`~distlib.engines.progress.DEFAULT_BEHIND`).

    Returns
    -------
    RunResult
        ``.stdout[r]``/``.stderr[r]`` per rank; ``str(result)`` prefixes each
        line with its rank.

    Raises
    ------
    RunStalled
        A rank stopped making progress, or a node of ``cluster`` was cut off.
    RunTimeout
        If the run did not finish within ``timeout`` (deadlock or hang).
    RunError
        If a rank failed (non-zero exit, killed by a signal, an uncaught
        exception, which ``python -m mpi4py`` turns into ``MPI_Abort``).
    """
    n = check_int("n", n, minimum=1)
    timeout = check_real("timeout", timeout, minimum=0, strict_min=True)
    cluster = check_placement(cluster) if cluster is not None else None
    return _execute(_mpi_plan(target, n, args, timeout, env, cluster, stall, behind), check=check)


def _mpi_plan(target, n, args, timeout, env, cluster, stall, behind) -> _Plan:
    """One ``mpiexec`` (in a loopback-only namespace here, or on the first node of ``cluster``)."""
    mpiexec = find_mpiexec()
    run_id, workdir, watchdog = _new_run("mpi", stall, behind)
    full_env = _base_env(run_id, env)
    full_env["MPIEXEC_TIMEOUT"] = str(max(1, math.ceil(timeout)))
    prefix, where, network = _mpi_placement(n, cluster, full_env)
    command = [
        *prefix, mpiexec, "-n", str(n), *where,
        "-outfile-pattern", str(workdir / "out.%r"), "-errfile-pattern", str(workdir / "err.%r"),
        sys.executable, "-m", "mpi4py", "-m", "distlib.engines._mpi_rank", *_target_argv(target), *map(str, args),
    ]  # fmt: skip
    notes = workdir / "ended"  # each failing rank writes how it ended, before MPI_Abort (see _mpi_rank)
    notes.mkdir()
    full_env["DISTLIB_RANK_NOTES"] = str(notes)
    if watchdog is not None:
        full_env.update(watchdog.env)
        watchdog.notes = notes
    if cma_available():  # one copy per byte between ranks instead of two
        full_env.setdefault("MPIR_CVAR_CH4_CMA_ENABLE", "1")
        # From 16 KiB (MPICH's default is 8 KiB): the single copy starts with a
        # handshake, which cost more than the second copy saved at 8 KiB here
        # (`python benchmarks/bench_engines.py`, the 8 KiB row).
        full_env.setdefault("MPIR_CVAR_CH4_IPC_CMA_P2P_THRESHOLD", "16384")

    def read(path: Path) -> str:
        return path.read_text(errors="replace") if path.exists() else ""

    def collect(ended: _Ended) -> RunResult:
        return RunResult(
            stdout=[read(workdir / f"out.{r}") for r in range(n)],
            stderr=[read(workdir / f"err.{r}") for r in range(n)],
            launcher=ended.procs.text(0),
            returncodes=[None] * n,
            returncode=ended.procs.codes[0],
            seconds=ended.seconds,
            command=command,
            run_id=run_id,
            network=network,
            nodes={b.rank: b.node for b in ended.beats},
            pids={b.rank: b.pid for b in ended.beats},
            ended={int(f.name.split(".")[1]): read(f).rstrip()
                   for f in sorted(notes.glob("ended.*"), key=lambda f: f.stat().st_mtime_ns)},
            gone=ended.gone,
        )  # fmt: skip

    def judge(result: RunResult, ended: _Ended) -> RunError | None:
        if ended.timed_out or "APPLICATION TIMED OUT" in result.launcher:
            result.returncode = result.returncode or 124
            return RunTimeout(
                f"MPI run of {target!r} on {n} ranks did not finish within {timeout:g} s "
                "(a deadlock, a hung rank, or a rank that left early while the others waited for it); "
                "every process of the run was killed.",
                result,
            )
        if result.returncode != 0:
            return RunError(_mpi_failure_message(target, n, result), result, _failed_rank(result))
        return None

    return _Plan(f"MPI run of {target!r} on {n} ranks", run_id, workdir, [_Start(command, full_env, merge=True)],
                 timeout + 10, watchdog, cluster, collect, judge)  # fmt: skip  # (MPIEXEC_TIMEOUT acts first)


def _mpi_placement(n: int, cluster, env: dict) -> tuple:
    """``(argv prefix, mpiexec's placement flags, network)``; sets the transports in ``env``."""
    if cluster is None:
        prefix = list(network_prefix())
        # Ranks talk through shared memory only: UCX (MPICH's network layer) opens
        # no sockets at all, and OFI, should MPICH pick it, stays on loopback.
        env.setdefault("UCX_TLS", "self,sm")
        env.setdefault("FI_TCP_IFACE", "lo")
        env.setdefault("HYDRA_IFACE", "lo")
        return prefix, ["-host", "localhost"], "private" if prefix else "host"
    per_node = _ranks_per_node(n, cluster)
    head = cluster.nodes[0]
    where = ["-f", str(cluster.hostfile(per_node)), "-launcher", "ssh", "-launcher-exec",
             str(cluster.launcher_exec()), "-iface", head.iface]  # fmt: skip
    # Between nodes, TCP over the node's link only; inside a node MPICH's own
    # shared memory (it knows which ranks share a node from the host file).
    env.update({"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": head.iface, "FI_TCP_IFACE": head.iface,
                "DISTLIB_CLUSTER": _cluster_words(cluster)})  # fmt: skip
    env.pop("HYDRA_IFACE", None)
    return cluster.prefix(0), where, "mini cluster"


def link_words(link_gbit) -> str:
    """A mini cluster's links in words, as every starting line says them: throttled or not, and the rate."""
    return "unthrottled links" if link_gbit is None else f"links of {link_gbit:g} Gbit/s per direction"


def _cluster_words(cluster) -> str:
    return f"{cluster.n_nodes} simulated nodes, {link_words(cluster.link_gbit)}"


#: what a rank's MPI library says when a peer vanished under it (a read of a dead process's memory,
#: a closed connection): the rank reports the peer's death, it is not the cause
_PEER_GONE = re.compile(r"process_vm_readv failed|errno 3\b|Connection reset|connection closed|"
                        r"Communication error with rank|Other MPI error", re.I)


def _failed_rank(result: RunResult):
    if result.ended:  # the first rank's own note (or its guard's): there even when mpiexec lost the rest
        first = next(iter(result.ended))
        if _PEER_GONE.search(result.ended[first]):
            # It raised because a peer died first; the peer's guard may have written its note a moment
            # later (the dead process's memory goes before its parent hears of it), or not at all.
            killed = [r for r, note in result.ended.items() if note.startswith("killed by signal")]
            if killed:
                return killed[0]
            others = [r for r in result.gone if r != first]
            if len(others) == 1:
                return others[0]
        return first
    text = result.launcher + "\n" + "\n".join(result.stderr)
    m = re.search(r"rank (\d+) in comm", text)
    if m:
        return int(m.group(1))
    for r, err in enumerate(result.stderr):
        if "Traceback" in err:
            return r
    if result.ended:  # the first rank's own note: there even when mpiexec lost its stderr in the abort
        return next(iter(result.ended))
    if len(result.gone) == 1:  # killed with no word: the one rank whose process was gone when the run failed
        return result.gone[0]
    return None


def _mpi_failure_message(target, n, result: RunResult) -> str:
    rank = _failed_rank(result)
    killed = re.search(r"EXIT STRING: (.*?) \(signal (\d+)\)", result.launcher)
    # Hydra names the host and the process id of the first rank to go (across nodes, the node that failed).
    bad = re.search(r"PID (\d+) RUNNING AT (\S+)\s*\n=\s*(?:EXIT CODE|KILLED BY SIGNAL): (\d+)", result.launcher)
    bad_rank = next((r for r, pid in result.pids.items() if bad and pid == int(bad.group(1))), None)
    on = f" on node {bad.group(2)}" if bad and result.network == "mini cluster" else ""
    note = result.ended.get(rank, "") if rank is not None else ""
    guard = re.match(r"killed by signal (\d+) \((\w+)\)", note)
    if guard:  # the rank's guard saw it die: the one to name, whatever Hydra printed about the others
        node = result.nodes.get(rank)
        on = f" on node {node}" if node and result.network == "mini cluster" else ""
        how = f"rank {rank}{on} was killed by signal {guard.group(1)} ({guard.group(2)})"
        if guard.group(1) == "9":
            how += "; SIGKILL comes from another process or from the kernel's out-of-memory killer"
    elif killed:
        rank = bad_rank if bad_rank is not None else rank  # Hydra's PID of the first to go, through the heartbeats
        who = f"rank {rank}" if rank is not None else "a rank"
        node = result.nodes.get(rank) if rank is not None else None
        on = on or (f" on node {node}" if node and result.network == "mini cluster" else "")
        how = f"{who}{on} was killed by signal {killed.group(2)} ({killed.group(1)})"
        if killed.group(2) == "9":
            how += "; SIGKILL comes from another process or from the kernel's out-of-memory killer"
    elif bad:
        who = f"rank {bad_rank}" if bad_rank is not None else f"process {bad.group(1)}"
        how = f"{who}{on or ' on ' + bad.group(2)} ended with exit code {bad.group(3)}"
        if int(bad.group(3)) in (9, 15):
            how += f" (killed by signal {bad.group(3)})"
    elif rank is not None:
        how = f"rank {rank} failed (exit status {result.returncode})"
    else:
        how = f"mpiexec exited with status {result.returncode}"
    msg = [f"MPI run of {target!r} on {n} ranks failed: {how}; every process of the run was stopped."]
    if rank is not None and result.ended.get(rank, "").startswith("killed by signal"):
        pass  # its guard's note, said above already
    elif rank is not None and result.ended.get(rank):  # whole, where the forwarded stderr may lack its end
        msg.append(f"rank {rank} ended with:\n{_tail(result.ended[rank])}")
    elif rank is not None and result.stderr[rank].strip():
        msg.append(f"rank {rank} stderr:\n{_tail(result.stderr[rank])}")
    elif result.launcher.strip() and not killed:
        msg.append(f"mpiexec said:\n{_tail(result.launcher, 6)}")
    return "\n".join(msg)


def try_mpi(target, n: int, *, args=(), timeout: float = 10.0, env=None) -> Outcome:
    """Run like :func:`run_mpi`, but report a deadlock or failure as an :class:`Outcome`.

    Examples
    --------
    ``try_mpi("distlib.examples.naive_ring_deadlock", 2, timeout=3).status``
    is ``"deadlocked"``.
    """
    start = time.monotonic()
    try:
        result = run_mpi(target, n, args=args, timeout=timeout, env=env)
    except RunTimeout as exc:
        return Outcome("deadlocked", time.monotonic() - start, exc.result, str(exc), {"timeout": timeout})
    except RunError as exc:
        return Outcome("failed", time.monotonic() - start, exc.result, str(exc), {"rank": exc.rank})
    return Outcome("completed", time.monotonic() - start, result)


# ----------------------------------------------------------------------------
# torch.distributed
# ----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torch(
    target,
    n: int,
    *,
    backend: str = "gloo",
    args=(),
    timeout: float = 60.0,
    collective_timeout: float | None = None,
    env=None,
    check: bool = True,
    echo: bool = False,
    cluster=None,
    stall: float | None = DEFAULT_STALL,
    behind: float | None = None,
) -> RunResult:
    """Run ``target`` on ``n`` torch.distributed ranks and return what each printed.

    Each rank is a fresh interpreter (``python -m distlib.engines._torch_worker``;
    no ``fork``), in a session of its own, with ``RANK``, ``WORLD_SIZE``,
    ``LOCAL_RANK``, ``MASTER_ADDR``/``MASTER_PORT`` and a ``file://``
    rendezvous (``DISTLIB_INIT_METHOD``) in its environment;
    :func:`distlib.engines.torch_dist.init` reads them. The launcher stops
    every rank as soon as one fails, and the progress watchdog names a rank
    that stops (``stall``). With ``cluster`` the ranks are spread over its
    nodes (``n / nodes`` each, ``GLOO_SOCKET_IFNAME`` its link), so gloo's
    bytes between nodes cross the throttled links; the rendezvous file sits
    on the file system the nodes share.

    Parameters
    ----------
    target : str
        ``"package.module:function"`` (the function is called with no
        arguments; ``sys.argv[1:]`` holds ``args``, as for a console
        script), ``"package.module"`` (run as ``__main__``) or a script path.
    n : int
        Number of ranks, ``>= 1``.
    backend : {"gloo", "nccl"}
        Passed to the ranks as ``DISTLIB_BACKEND``.
    args : sequence of str
    timeout : float
        Seconds before the whole run is killed.
    collective_timeout : float, optional
        The ranks' ``init_process_group(timeout=...)``; default half of
        ``timeout``, so a rank stuck in a collective fails with an error
        message before the launcher has to kill it.
    env : dict, optional
    check : bool
    echo : bool
        Also copy rank 0's output, line by line as it comes, to this
        process's stdout and stderr (for long runs in a terminal).
    cluster : MiniCluster, optional
    stall : float or None
        As :func:`run_mpi`.

    Returns
    -------
    RunResult

    Raises
    ------
    RunStalled, RunTimeout, RunError
        As :func:`run_mpi`.
    """
    n = check_int("n", n, minimum=1)
    backend = check_choice("backend", backend, ["gloo", "nccl"])
    timeout = check_real("timeout", timeout, minimum=0, strict_min=True)
    if collective_timeout is None:
        collective_timeout = max(1.0, timeout / 2)
    collective_timeout = check_real("collective_timeout", collective_timeout, minimum=0, strict_min=True)
    target = _torch_target(target)
    cluster = check_placement(cluster) if cluster is not None else None
    plan = _torch_plan(target, n, backend, args, timeout, collective_timeout, env, echo, cluster, stall, behind)
    return _execute(plan, check=check)


def _torch_plan(target, n, backend, args, timeout, collective_timeout, env, echo, cluster, stall, behind) -> _Plan:
    """One process per rank, here or on its node of ``cluster``, meeting through a ``file://`` rendezvous."""
    per_node = _ranks_per_node(n, cluster) if cluster is not None else n
    run_id, workdir, watchdog = _new_run("torch", stall, behind)
    iface = "lo" if cluster is None else cluster.nodes[0].iface
    base = _base_env(run_id, None)
    base.update(
        {
            "WORLD_SIZE": str(n),
            "LOCAL_WORLD_SIZE": str(per_node),
            "MASTER_ADDR": "127.0.0.1" if cluster is None else cluster.nodes[0].address,
            "MASTER_PORT": str(_free_port()),
            "DISTLIB_INIT_METHOD": (workdir / "rendezvous").as_uri(),
            "DISTLIB_BACKEND": backend,
            "DISTLIB_TIMEOUT": repr(collective_timeout),
            "GLOO_SOCKET_IFNAME": iface,
            "NCCL_SOCKET_IFNAME": iface,
            **(watchdog.env if watchdog is not None else {}),
            **({"DISTLIB_CLUSTER": _cluster_words(cluster)} if cluster is not None else {}),
        }
    )
    if env:
        base.update({str(k): str(v) for k, v in env.items()})
    command = [sys.executable, "-m", "distlib.engines._torch_worker", target, *map(str, args)]
    starts = [_Start([*([] if cluster is None else cluster.prefix(r // per_node)), *command],
                     dict(base, RANK=str(r), LOCAL_RANK=str(r % per_node)), echo=echo and r == 0)
              for r in range(n)]  # fmt: skip
    what = f"torch run of {target!r} on {n} ranks ({backend})"

    def collect(ended: _Ended) -> RunResult:
        codes, failed = ended.procs.codes, ended.failed
        bad = ended.timed_out or ended.stalled
        return RunResult(
            stdout=[ended.procs.text(r) for r in range(n)],
            stderr=[ended.procs.text(r, stderr=True) for r in range(n)],
            launcher="",
            returncodes=codes,
            returncode=124 if bad else (0 if failed is None else (codes[failed] or 1)),
            seconds=ended.seconds,
            command=command,
            run_id=run_id,
            pids={r: p.pid for r, p in enumerate(ended.procs.procs)},
            network="host" if cluster is None else "mini cluster",
            nodes={b.rank: b.node for b in ended.beats},
        )

    def judge(result: RunResult, ended: _Ended) -> RunError | None:
        if ended.timed_out:
            return RunTimeout(f"{what} did not finish within {timeout:g} s (a deadlock or a hung rank); "
                              "every process of the run was killed.", result)  # fmt: skip
        if ended.failed is None:
            return None
        return RunError(_torch_failure_message(what, result, ended.failed, cluster, per_node), result, ended.failed)

    return _Plan(what, run_id, workdir, starts, timeout, watchdog, cluster, collect, judge)


def _torch_failure_message(what: str, result: RunResult, failed: int, cluster, per_node: int) -> str:
    code = result.returncodes[failed]
    how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    if code == -signal.SIGKILL:
        how += " (SIGKILL comes from another process or from the kernel's out-of-memory killer)"
    node = result.nodes.get(failed) or (cluster.nodes[failed // per_node].hostname if cluster is not None else None)
    on = f" on node {node}" if node and cluster is not None else ""
    # Every rank that ended by itself with status 0 (the launcher only killed ranks still running).
    # Not only those seen to end before the failed one: a rank that leaves early closes its
    # connections as it exits, and the peer that fails on that can be seen first (1 run in 5
    # with both cores busy).
    left = [r for r in range(result.p) if r != failed and result.returncodes[r] == 0]
    msg = [f"{what} failed: rank {failed}{on} {how}; every process of the run was stopped."]
    if left:
        msg.append(f"rank(s) {left} exited with status 0 before the run was stopped "
                   "(a rank that leaves early stalls the others).")  # fmt: skip
    if result.stderr[failed].strip():
        msg.append(f"rank {failed} stderr:\n{_tail(result.stderr[failed])}")
    return "\n".join(msg)


def _torch_target(target) -> str:
    if not isinstance(target, (str, os.PathLike)):
        raise TypeError(f"target must be 'module:function', a module name or a script path, got {type(target).__name__}")
    target = os.fspath(target)
    if target.endswith(".py") and not os.path.exists(target):
        raise FileNotFoundError(f"target script {target!r} does not exist")
    return os.path.abspath(target) if target.endswith(".py") else target


def run_torchrun(module: str, n: int, *, args=(), timeout: float = 120.0, env=None, check: bool = True, cluster=None,
                 stall: float | None = DEFAULT_STALL, behind: float | None = None) -> RunResult:  # fmt: skip
    """Run ``python -m module`` on ``n`` ranks started by PyTorch's own launcher, ``torchrun``.

    This is how the module would start on a cluster: one ``torchrun`` agent
    per node (``torchrun --nnodes N --node-rank i --nproc-per-node L
    --master-addr ADDR --master-port PORT -m module``); the agents meet in
    torch's *static* rendezvous on the first node's address, start the
    ranks with ``RANK``, ``WORLD_SIZE`` and ``MASTER_ADDR``/``MASTER_PORT``
    in their environment, restart nothing (``--max-restarts`` is 0), and
    stop them all if one fails. Each rank's output is kept in torchrun's
    per-rank log files (``--redirects 3``) and returned in rank order.

    Without ``cluster`` it is one node (``--standalone``). torchrun's
    rendezvous store listens on every network interface, so this then runs
    only inside a loopback-only network namespace (see
    :mod:`distlib.engines._isolate`); where the machine allows none it
    raises :class:`PrivateNetworkUnavailable` and the book uses
    :func:`run_torch`, whose ranks meet through a file instead. With
    ``cluster`` (a :class:`distlib.minicluster.MiniCluster`) agent ``i``
    runs on node ``i`` with ``GLOO_SOCKET_IFNAME`` its link. (torch's
    default c10d rendezvous would need the node's hostname to resolve to
    the address the store listens on; the static one takes the address.)

    Parameters
    ----------
    module : str
        A module name (run as ``python -m module``), e.g.
        ``"distlib.examples.torch_ddp"``.
    n : int
        Ranks, ``>= 1`` (with ``cluster``: a multiple of its nodes).
    args : sequence of str
    timeout : float
        Seconds before every process of the run is killed.
    env : dict, optional
    check : bool
        Raise :class:`RunError` / :class:`RunTimeout` on failure.
    cluster : MiniCluster, optional
    stall : float or None
        As :func:`run_mpi`.

    Returns
    -------
    RunResult
        ``.launcher`` holds torchrun's own messages (every agent's).
    """
    n = check_int("n", n, minimum=1)
    timeout = check_real("timeout", timeout, minimum=0, strict_min=True)
    if not isinstance(module, str) or module.endswith(".py") or not re.fullmatch(r"[A-Za-z_][\w.]*", module):
        raise ValueError(f"module must be a dotted module name such as 'distlib.examples.torch_ddp', got {module!r}")
    cluster = check_placement(cluster) if cluster is not None else None
    prefix = list(network_prefix()) if cluster is None else []
    if cluster is None and not prefix:
        raise PrivateNetworkUnavailable(
            "torchrun's rendezvous store listens on every network interface, and this machine allows no "
            "private network namespace (unprivileged user namespaces) to keep it in, so the book does not "
            "start it here. run_torch starts the same ranks with a file:// rendezvous instead."
        )
    return _execute(_torchrun_plan(module, n, args, timeout, env, cluster, prefix, stall, behind), check=check)


def _torchrun_plan(module, n, args, timeout, env, cluster, prefix, stall, behind) -> _Plan:
    """One ``torchrun`` agent per node (``--standalone`` in a loopback-only namespace here)."""
    per_node, n_nodes = (n, 1) if cluster is None else (_ranks_per_node(n, cluster), cluster.n_nodes)
    run_id, workdir, watchdog = _new_run("torchrun", stall, behind)
    iface = "lo" if cluster is None else cluster.nodes[0].iface
    full_env = _base_env(run_id, None)
    full_env.update({"GLOO_SOCKET_IFNAME": iface, "NCCL_SOCKET_IFNAME": iface, "DISTLIB_TIMEOUT": repr(max(1.0, timeout / 2)),
                     "TORCH_CPP_LOG_LEVEL": "ERROR"})  # fmt: skip  # (no reverse DNS inside the namespace: c10d warns)
    if watchdog is not None:
        full_env.update(watchdog.env)
    if cluster is not None:
        full_env["DISTLIB_CLUSTER"] = _cluster_words(cluster)
    if env:
        full_env.update({str(k): str(v) for k, v in env.items()})
    port = str(_free_port())
    commands = []
    for i in range(n_nodes):
        if cluster is None:
            where, node_prefix = ["--standalone"], prefix
        else:
            where = [f"--nnodes={n_nodes}", f"--node-rank={i}", "--rdzv-backend=static",
                     f"--master-addr={cluster.nodes[0].address}", f"--master-port={port}"]  # fmt: skip
            node_prefix = cluster.prefix(i)
        commands.append([
            *node_prefix, sys.executable, "-m", "torch.distributed.run", *where, f"--nproc-per-node={per_node}",
            "--max-restarts=0", "--log-dir", str(workdir / f"node{i}"), "--redirects", "3", "-m", module, *map(str, args),
        ])  # fmt: skip
    what = f"torchrun of {module!r} on {n} ranks" + ("" if cluster is None else f" over {n_nodes} nodes")

    def rank_log(r: int, name: str) -> str:
        found = sorted(workdir.glob(f"node{r // per_node}/*/attempt_*/{r % per_node}/{name}.log"))
        return found[-1].read_text(errors="replace") if found else ""

    def collect(ended: _Ended) -> RunResult:
        codes, failed = ended.procs.codes, ended.failed
        return RunResult(
            stdout=[rank_log(r, "stdout") for r in range(n)],
            stderr=[rank_log(r, "stderr") for r in range(n)],
            launcher="".join(ended.procs.text(i) for i in range(len(commands))),
            returncodes=[None] * n,
            returncode=124 if (ended.timed_out or ended.stalled) else (codes[failed] if failed is not None else 0),
            seconds=ended.seconds,
            command=commands[0],
            run_id=run_id,
            network="private" if cluster is None else "mini cluster",
            nodes={b.rank: b.node for b in ended.beats},
        )

    def judge(result: RunResult, ended: _Ended) -> RunError | None:
        if ended.timed_out:
            return RunTimeout(f"{what} did not finish within {timeout:g} s; every process of the run was killed.",
                              result)  # fmt: skip
        if result.returncode == 0:
            return None
        bad = next((r for r in range(n) if "Traceback" in result.stderr[r]), None)
        detail = _tail(result.stderr[bad]) if bad is not None else _tail(result.launcher)
        on = f" (the agent on node {cluster.nodes[ended.failed].hostname} failed first)" if cluster is not None else ""
        return RunError(f"{what} failed (exit status {result.returncode}){on}; torchrun stopped every rank.\n{detail}",
                        result, bad)  # fmt: skip

    return _Plan(what, run_id, workdir, [_Start(c, full_env, merge=True) for c in commands], timeout, watchdog, cluster,
                 collect, judge)  # fmt: skip


def try_torch(target, n: int, *, backend: str = "gloo", args=(), timeout: float = 30.0, env=None) -> Outcome:
    """Run like :func:`run_torch`, but report a deadlock or failure as an :class:`Outcome`."""
    start = time.monotonic()
    try:
        result = run_torch(target, n, backend=backend, args=args, timeout=timeout, env=env)
    except RunTimeout as exc:
        return Outcome("deadlocked", time.monotonic() - start, exc.result, str(exc), {"timeout": timeout})
    except RunError as exc:
        return Outcome("failed", time.monotonic() - start, exc.result, str(exc), {"rank": exc.rank})
    return Outcome("completed", time.monotonic() - start, result)
