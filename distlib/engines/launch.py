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
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .._check import check_choice, check_int, check_real
from ._isolate import cma_available, network_prefix

__all__ = [
    "RunResult",
    "RunError",
    "RunTimeout",
    "Outcome",
    "run_mpi",
    "run_torch",
    "try_mpi",
    "try_torch",
    "run_torchrun",
    "PrivateNetworkUnavailable",
    "find_mpiexec",
    "stray_processes",
]

RUN_ID_VAR = "DISTLIB_RUN_ID"

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
        namespace) or ``"host"``.
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
    try:  # not Linux: psutil, if present
        import psutil
    except ImportError:  # pragma: no cover
        return []
    pids = []
    for proc in psutil.process_iter(["pid"]):  # pragma: no cover - non-Linux
        try:
            if proc.pid != os.getpid() and proc.environ().get(RUN_ID_VAR) == run_id and proc.status() != "zombie":
                pids.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return sorted(pids)


def _kill_group(pid: int, sig=signal.SIGKILL) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_run(run_id: str, popens, *, grace: float = 0.0) -> None:
    """Stop every process of a run: the launchers' groups, then anything tagged ``run_id``."""
    if grace > 0:
        for proc in popens:
            if proc.poll() is None:
                _kill_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(p.poll() is None for p in popens):
            time.sleep(0.02)
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


def _run_launcher(command, env, run_id: str, wait: float):
    """Start one launcher (mpiexec, torchrun) in a session of its own, wait up to ``wait`` s, then stop the whole run.

    Returns ``(what the launcher printed, whether it timed out, the Popen)``.
    """
    proc = subprocess.Popen(
        command, env=env, start_new_session=True, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
    )  # fmt: skip
    pieces: list = []
    reader = threading.Thread(target=lambda: pieces.append(proc.stdout.read()), daemon=True)
    reader.start()
    timed_out = False
    try:
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            timed_out = True
    finally:
        _kill_run(run_id, [proc])
        reader.join(timeout=5)
    return "".join(p for p in pieces if p), timed_out, proc


def _base_env(run_id: str, env) -> dict:
    out = dict(os.environ)
    for key, value in _QUIET_THREADS.items():
        out.setdefault(key, value)
    out["PYTHONUNBUFFERED"] = "1"
    out[RUN_ID_VAR] = run_id
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


def run_mpi(target, n: int, *, args=(), timeout: float = 60.0, env=None, check: bool = True) -> RunResult:
    """Run ``target`` on ``n`` MPI ranks and return what each printed.

    Starts ``mpiexec -n n -host localhost python -m mpi4py target args...``
    in a new session, with ``MPIEXEC_TIMEOUT`` set, and kills every process
    of the run when it ends, however it ends.

    Parameters
    ----------
    target : str
        A script path (``"work.py"``) or a module name
        (``"distlib.examples.mpi_hello"``), run on every rank.
    n : int
        Number of ranks, ``>= 1``.
    args : sequence of str
        Command-line arguments for the target.
    timeout : float
        Seconds before the whole run is declared hung and killed.
    env : dict, optional
        Extra environment variables for the ranks.
    check : bool
        Raise on failure (default). With ``False``, return the result and
        let the caller read ``returncode``.

    Returns
    -------
    RunResult
        ``.stdout[r]``/``.stderr[r]`` per rank; ``str(result)`` prefixes each
        line with its rank.

    Raises
    ------
    RunTimeout
        If the run did not finish within ``timeout`` (deadlock or hang).
    RunError
        If a rank failed (non-zero exit, killed by a signal, an uncaught
        exception, which ``python -m mpi4py`` turns into ``MPI_Abort``).
    """
    n = check_int("n", n, minimum=1)
    timeout = check_real("timeout", timeout, minimum=0, strict_min=True)
    mpiexec = find_mpiexec()
    run_id = uuid.uuid4().hex
    workdir = Path(tempfile.mkdtemp(prefix="distlib-mpi-"))
    prefix = list(network_prefix())
    command = [
        *prefix, mpiexec, "-n", str(n), "-host", "localhost",
        "-outfile-pattern", str(workdir / "out.%r"), "-errfile-pattern", str(workdir / "err.%r"),
        sys.executable, "-m", "mpi4py", *_target_argv(target), *map(str, args),
    ]  # fmt: skip
    full_env = _base_env(run_id, env)
    full_env["MPIEXEC_TIMEOUT"] = str(max(1, math.ceil(timeout)))
    # Ranks talk through shared memory only: UCX (MPICH's network layer) opens
    # no sockets at all, and OFI, should MPICH pick it, stays on loopback.
    full_env.setdefault("UCX_TLS", "self,sm")
    full_env.setdefault("FI_TCP_IFACE", "lo")
    full_env.setdefault("HYDRA_IFACE", "lo")
    if cma_available():  # one copy per byte between ranks instead of two
        full_env.setdefault("MPIR_CVAR_CH4_CMA_ENABLE", "1")
        # From 16 KiB (MPICH's default is 8 KiB): the single copy starts with a
        # handshake, which cost more than the second copy saved at 8 KiB here
        # (`python benchmarks/bench_engines.py`, the 8 KiB row).
        full_env.setdefault("MPIR_CVAR_CH4_IPC_CMA_P2P_THRESHOLD", "16384")
    start = time.monotonic()
    launcher, timed_out, proc = _run_launcher(command, full_env, run_id, timeout + 10)  # MPIEXEC_TIMEOUT acts first
    seconds = time.monotonic() - start
    read = lambda path: path.read_text(errors="replace") if path.exists() else ""  # noqa: E731
    result = RunResult(
        stdout=[read(workdir / f"out.{r}") for r in range(n)],
        stderr=[read(workdir / f"err.{r}") for r in range(n)],
        launcher=launcher or "",
        returncodes=[None] * n,
        returncode=proc.returncode,
        seconds=seconds,
        command=command,
        run_id=run_id,
        network="private" if prefix else "host",
    )
    shutil.rmtree(workdir, ignore_errors=True)
    if timed_out or "APPLICATION TIMED OUT" in result.launcher:
        result.returncode = result.returncode or 124
        if check:
            raise RunTimeout(
                f"MPI run of {target!r} on {n} ranks did not finish within {timeout:g} s "
                "(a deadlock, a hung rank, or a rank that left early while the others waited for it); "
                "every process of the run was killed.",
                result,
            )
        return result
    if result.returncode != 0 and check:
        raise RunError(_mpi_failure_message(target, n, result), result, _failed_rank(result))
    return result


def _failed_rank(result: RunResult):
    text = result.launcher + "\n" + "\n".join(result.stderr)
    m = re.search(r"rank (\d+) in comm", text)
    if m:
        return int(m.group(1))
    for r, err in enumerate(result.stderr):
        if "Traceback" in err:
            return r
    return None


def _mpi_failure_message(target, n, result: RunResult) -> str:
    rank = _failed_rank(result)
    killed = re.search(r"EXIT STRING: (.*?) \(signal (\d+)\)", result.launcher)
    if killed:
        how = f"a rank was killed by signal {killed.group(2)} ({killed.group(1)})"
    elif rank is not None:
        how = f"rank {rank} failed (exit status {result.returncode})"
    else:
        how = f"mpiexec exited with status {result.returncode}"
    msg = [f"MPI run of {target!r} on {n} ranks failed: {how}; every process of the run was stopped."]
    if rank is not None and result.stderr[rank].strip():
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
) -> RunResult:
    """Run ``target`` on ``n`` torch.distributed ranks and return what each printed.

    Each rank is a fresh interpreter (``python -m distlib.engines._torch_worker``;
    no ``fork``), in a session of its own, with ``RANK``, ``WORLD_SIZE``,
    ``LOCAL_RANK``, ``MASTER_ADDR=127.0.0.1``/``MASTER_PORT`` and a
    ``file://`` rendezvous (``DISTLIB_INIT_METHOD``) in its environment;
    :func:`distlib.engines.torch_dist.init` reads them. The watchdog stops
    every rank as soon as one fails.

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
        message before the watchdog has to kill it.
    env : dict, optional
    check : bool
    echo : bool
        Also copy rank 0's output, line by line as it comes, to this
        process's stdout and stderr (for long runs in a terminal).

    Returns
    -------
    RunResult

    Raises
    ------
    RunTimeout, RunError
        As :func:`run_mpi`.
    """
    n = check_int("n", n, minimum=1)
    backend = check_choice("backend", backend, ["gloo", "nccl"])
    timeout = check_real("timeout", timeout, minimum=0, strict_min=True)
    if collective_timeout is None:
        collective_timeout = max(1.0, timeout / 2)
    collective_timeout = check_real("collective_timeout", collective_timeout, minimum=0, strict_min=True)
    if not isinstance(target, (str, os.PathLike)):
        raise TypeError(f"target must be 'module:function', a module name or a script path, got {type(target).__name__}")
    target = os.fspath(target)
    if target.endswith(".py") and not os.path.exists(target):
        raise FileNotFoundError(f"target script {target!r} does not exist")
    if target.endswith(".py"):
        target = os.path.abspath(target)
    run_id = uuid.uuid4().hex
    workdir = Path(tempfile.mkdtemp(prefix="distlib-torch-"))
    base = _base_env(run_id, None)
    base.update(
        {
            "WORLD_SIZE": str(n),
            "LOCAL_WORLD_SIZE": str(n),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(_free_port()),
            "DISTLIB_INIT_METHOD": (workdir / "rendezvous").as_uri(),
            "DISTLIB_BACKEND": backend,
            "DISTLIB_TIMEOUT": repr(collective_timeout),
            "GLOO_SOCKET_IFNAME": "lo",
            "NCCL_SOCKET_IFNAME": "lo",
        }
    )
    if env:
        base.update({str(k): str(v) for k, v in env.items()})
    command = [sys.executable, "-m", "distlib.engines._torch_worker", target, *map(str, args)]
    outs = [[] for _ in range(n)]
    errs = [[] for _ in range(n)]
    procs, readers = [], []
    start = time.monotonic()

    def pump(stream, sink, mirror):
        for line in iter(stream.readline, ""):
            sink.append(line)
            if mirror is not None:
                mirror.write(line)
                mirror.flush()
        stream.close()

    try:
        for r in range(n):
            rank_env = dict(base, RANK=str(r), LOCAL_RANK=str(r))
            proc = subprocess.Popen(
                command, env=rank_env, start_new_session=True, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
            )  # fmt: skip
            procs.append(proc)
            mirrors = (sys.stdout, sys.stderr) if (echo and r == 0) else (None, None)
            for stream, sink, mirror in ((proc.stdout, outs[r], mirrors[0]), (proc.stderr, errs[r], mirrors[1])):
                t = threading.Thread(target=pump, args=(stream, sink, mirror), daemon=True)
                t.start()
                readers.append(t)
        # One waiter thread per rank records the order in which ranks exit,
        # so the first rank to fail is the one blamed, not its victims.
        exits: list = []
        cond = threading.Condition()

        def waiter(r, proc):
            proc.wait()
            with cond:
                exits.append(r)
                cond.notify_all()

        for r, proc in enumerate(procs):
            threading.Thread(target=waiter, args=(r, proc), daemon=True).start()
        failed, timed_out = None, False
        with cond:
            while True:
                bad = [r for r in exits if procs[r].returncode != 0]
                if bad:
                    failed = bad[0]
                    break
                if len(exits) == n:
                    break
                left = start + timeout - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                cond.wait(min(left, 1.0))
    finally:
        _kill_run(run_id, procs)
        for t in readers:
            t.join(timeout=5)
        shutil.rmtree(workdir, ignore_errors=True)
    codes = [p.returncode for p in procs]
    result = RunResult(
        stdout=["".join(o) for o in outs],
        stderr=["".join(e) for e in errs],
        launcher="",
        returncodes=codes,
        returncode=0 if failed is None and not timed_out else (124 if timed_out else (codes[failed] or 1)),
        seconds=time.monotonic() - start,
        command=command,
        run_id=run_id,
        pids={r: p.pid for r, p in enumerate(procs)},
    )
    if timed_out:
        if check:
            raise RunTimeout(
                f"torch run of {target!r} on {n} ranks ({backend}) did not finish within {timeout:g} s "
                "(a deadlock or a hung rank); every process of the run was killed.",
                result,
            )
        return result
    if failed is not None and check:
        code = codes[failed]
        how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
        earlier = [r for r in exits[: exits.index(failed)] if codes[r] == 0]
        msg = [f"torch run of {target!r} on {n} ranks ({backend}) failed: rank {failed} {how}; every process of the run was stopped."]
        if earlier:
            msg.append(f"rank(s) {earlier} had already exited with status 0 (leaving early also stalls the others).")
        if result.stderr[failed].strip():
            msg.append(f"rank {failed} stderr:\n{_tail(result.stderr[failed])}")
        raise RunError("\n".join(msg), result, failed)
    return result


def run_torchrun(module: str, n: int, *, args=(), timeout: float = 120.0, env=None, check: bool = True) -> RunResult:
    """Run ``python -m module`` on ``n`` ranks started by PyTorch's own launcher, ``torchrun``.

    This is how the module would start on one node of a cluster
    (``torchrun --nproc-per-node=N -m module``): torchrun's agent runs a
    rendezvous, starts the ranks with ``RANK``, ``WORLD_SIZE`` and
    ``MASTER_ADDR``/``MASTER_PORT`` in their environment, restarts nothing
    (``--max-restarts`` is 0), and stops them all if one fails. Each rank's output is kept in torchrun's per-rank log files
    (``--redirects 3``) and returned in rank order.

    torchrun's rendezvous store listens on every network interface, so this
    runs only inside a loopback-only network namespace (see
    :mod:`distlib.engines._isolate`); where the machine allows none it
    raises :class:`PrivateNetworkUnavailable` and the book uses
    :func:`run_torch`, whose ranks meet through a file instead.

    Parameters
    ----------
    module : str
        A module name (run as ``python -m module``), e.g.
        ``"distlib.examples.torch_ddp"``.
    n : int
        Ranks, ``>= 1``.
    args : sequence of str
    timeout : float
        Seconds before every process of the run is killed.
    env : dict, optional
    check : bool
        Raise :class:`RunError` / :class:`RunTimeout` on failure.

    Returns
    -------
    RunResult
        ``.launcher`` holds torchrun's own messages.
    """
    n = check_int("n", n, minimum=1)
    timeout = check_real("timeout", timeout, minimum=0, strict_min=True)
    if not isinstance(module, str) or module.endswith(".py") or not re.fullmatch(r"[A-Za-z_][\w.]*", module):
        raise ValueError(f"module must be a dotted module name such as 'distlib.examples.torch_ddp', got {module!r}")
    prefix = list(network_prefix())
    if not prefix:
        raise PrivateNetworkUnavailable(
            "torchrun's rendezvous store listens on every network interface, and this machine allows no "
            "private network namespace (unprivileged user namespaces) to keep it in, so the book does not "
            "start it here. run_torch starts the same ranks with a file:// rendezvous instead."
        )
    run_id = uuid.uuid4().hex
    workdir = Path(tempfile.mkdtemp(prefix="distlib-torchrun-"))
    full_env = _base_env(run_id, None)
    full_env.update({"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo", "DISTLIB_TIMEOUT": repr(max(1.0, timeout / 2)),
                     "TORCH_CPP_LOG_LEVEL": "ERROR"})  # fmt: skip  # (no reverse DNS inside the namespace: c10d warns)
    if env:
        full_env.update({str(k): str(v) for k, v in env.items()})
    command = [
        *prefix, sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={n}",
        "--log-dir", str(workdir), "--redirects", "3", "-m", module, *map(str, args),
    ]  # fmt: skip
    start = time.monotonic()
    launcher, timed_out, proc = _run_launcher(command, full_env, run_id, timeout)

    def rank_log(r: int, name: str) -> str:
        found = sorted(workdir.glob(f"*/attempt_*/{r}/{name}.log"))
        return found[-1].read_text(errors="replace") if found else ""

    result = RunResult(
        stdout=[rank_log(r, "stdout") for r in range(n)],
        stderr=[rank_log(r, "stderr") for r in range(n)],
        launcher=launcher or "",
        returncodes=[None] * n,
        returncode=124 if timed_out else proc.returncode,
        seconds=time.monotonic() - start,
        command=command,
        run_id=run_id,
        network="private",
    )
    shutil.rmtree(workdir, ignore_errors=True)
    if check and timed_out:
        raise RunTimeout(f"torchrun of {module!r} on {n} ranks did not finish within {timeout:g} s; "
                         "every process of the run was killed.", result)  # fmt: skip
    if check and result.returncode != 0:
        failed = next((r for r in range(n) if "Traceback" in result.stderr[r]), None)
        detail = _tail(result.stderr[failed]) if failed is not None else _tail(result.launcher)
        raise RunError(f"torchrun of {module!r} on {n} ranks failed (exit status {result.returncode}); "
                       f"torchrun stopped every rank.\n{detail}", result, failed)  # fmt: skip
    return result


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
