"""MPI runs: finding MPICH's ``mpiexec``, planning its run here or across a mini cluster, and naming what failed."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

from ..._check import check_int, check_real
from .._isolate import cma_available, network_prefix
from ..placement import check_placement
from ..progress import DEFAULT_STALL
from .plan import _base_env, _cluster_words, _Ended, _execute, _new_run, _Plan, _ranks_per_node, _Start
from .results import Outcome, RunError, RunResult, RunTimeout, _attempt, _tail

__all__ = ["find_mpiexec", "run_mpi", "try_mpi"]


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
    run_id, workdir, watchdog = _new_run("mpi", stall, behind, n)
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
    if n > len(os.sched_getaffinity(0)):
        # More ranks than cores (4 on a 2-core Colab or laptop): a waiting MPICH rank spins, taking the core from
        # the rank it waits for. With heavy yield it sleeps a moment every 1,000 polls instead: 4 ranks on 2
        # cores ran an all-reduce sweep in 12 s of wall and 6 s of CPU time, against 18-24 s and 12-14 s.
        full_env.setdefault("MPIR_CVAR_ENABLE_HEAVY_YIELD", "1")
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
    return _attempt(lambda: run_mpi(target, n, args=args, timeout=timeout, env=env), timeout)
