"""``python -m distlib.minicluster run|shell``: a command, or a shell, on the login node of a fresh mini cluster.

::

    python -m distlib.minicluster run --nodes 2 --link-gbit 1 --slurm -- srun -N2 -n4 hostname
    python -m distlib.minicluster shell --nodes 2 --slurm        # type sinfo, srun, sbatch...; exit to leave

It makes the cluster (root only: network namespaces), with a head node, the
login node, that holds no rank itself; with ``--slurm`` a Slurm controller on
the head and a node daemon on every node (:mod:`distlib.minicluster.slurm`).
The command runs on the head, its output straight to this terminal, and the
exit status is the command's. Then everything is removed: also after Ctrl-C,
SIGTERM or SIGHUP (the command is stopped first), after ``--timeout``, or when
a Slurm daemon dies (the command is stopped, and the daemon named).

Exit status: the command's; 2 bad flags or no mini cluster possible here; 5 a
Slurm daemon died; 124 ``--timeout`` passed; 128+N stopped by signal N.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from distlib.engines._processes import STOP_GRACE, _kill_group, _Signalled, _stop_on_signals
from distlib.limits import launch_problem

PROG = "python -m distlib.minicluster"  # the name readers type (it execs this module)
EXIT_NODE_LOST, EXIT_TIMED_OUT = 5, 124  # as distlib.engines.launch.EXIT_STATUS


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0],
                                     epilog="Exit status: the command's; 2 bad flags; 5 a Slurm daemon died; "
                                            "124 timed out; 128+N stopped by signal N.")  # fmt: skip
    parser.add_argument("mode", choices=["run", "shell"], help="run a command, or open a shell, on the head node")
    parser.add_argument("--nodes", type=int, default=2, help="compute nodes (default 2)")
    parser.add_argument("--link-gbit", type=float, default=None,
                        help="each node's link in Gbit/s per direction (default unthrottled)")
    parser.add_argument("--slurm", action="store_true", help="run Slurm on the cluster (srun, sbatch, squeue, ...)")
    parser.add_argument("--cpus-per-node", type=int, default=2,
                        help="with --slurm: CPUs each node declares, so tasks Slurm places per node (default 2)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds before the command is stopped (default: none for shell, 3600 for run)")
    return parser


def _split(argv: list) -> tuple[list, list]:
    """(the flags, the command after ``--``): the command's own flags are never read as ours."""
    if "--" in argv:
        k = argv.index("--")
        return argv[:k], argv[k + 1:]
    return argv, []


def _check(ns, command: list) -> str | None:
    if ns.mode == "run" and not command:
        return "run needs a command after --, e.g. -- srun -N2 -n4 hostname"
    if ns.mode == "shell" and command:
        return f"shell takes no command (it opens one), got {' '.join(command)!r}; use run for a command"
    if not 1 <= ns.cpus_per_node <= 64:
        return f"--cpus-per-node must be between 1 and 64, got {ns.cpus_per_node}"
    timeout = ns.timeout if ns.timeout is not None else 3600.0
    return launch_problem(timeout=timeout, nodes=ns.nodes, link_gbit=ns.link_gbit)


def _mpiexec_dir() -> list:
    """The folder of the mpiexec the library launches with (the mpich wheel's), if there is one."""
    try:
        from distlib.engines import find_mpiexec

        return [str(Path(find_mpiexec()).parent)]
    except (ImportError, FileNotFoundError):
        return []


def _describe(cluster) -> str:
    links = "unthrottled" if cluster.link_gbit is None else f"{cluster.link_gbit:g} Gbit/s per direction"
    nodes = ", ".join(f"{n.hostname} {n.address}" for n in cluster.nodes)
    text = f"{PROG}: {len(cluster.nodes)} nodes ({nodes}), links {links}; you are on head {cluster.head.address}"
    if cluster.slurm is not None:
        text += (f"; Slurm up in {cluster.slurm.seconds_to_start:.1f} s (partition mini, "
                 f"{cluster.slurm.cpus_per_node} CPUs per node)")
    return text + f"; `python` there is {sys.executable}"


def _watch(cluster, proc: subprocess.Popen, timeout: float | None, group: bool) -> int:
    """Wait for the command; stop it (and say why) on a dead daemon or the timeout. Its exit status, or ours."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            return proc.wait(timeout=0.2) if proc.returncode is None else proc.returncode
        except subprocess.TimeoutExpired:
            pass
        dead = cluster.slurm.dead() if cluster.slurm is not None else None
        if dead:
            _stop(proc, group)
            print(f"{PROG}: {dead} stopped, so the command was stopped:\n{cluster.slurm.last_words(dead)}",
                  file=sys.stderr, flush=True)  # fmt: skip
            return EXIT_NODE_LOST
        if deadline is not None and time.monotonic() > deadline:
            _stop(proc, group)
            print(f"{PROG}: the command ran past --timeout {timeout:g} s and was stopped", file=sys.stderr, flush=True)
            return EXIT_TIMED_OUT


def _stop(proc: subprocess.Popen, group: bool) -> None:
    """SIGTERM to the command (its process group when it has one), SIGKILL 2 s later if it is still there."""
    if proc.poll() is not None:
        return
    _kill_group(proc.pid, signal.SIGTERM) if group else proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid, signal.SIGKILL) if group else proc.kill()
        proc.wait(timeout=5)


def _interrupted(exc: BaseException, proc, group: bool, *, removed: str) -> int:
    """Ctrl-C or a stop signal: the command stopped first, one line, and 128 + the signal's number."""
    signum = exc.signum if isinstance(exc, _Signalled) else signal.SIGINT
    if proc is not None:
        _stop(proc, group)
    print(f"{PROG}: stopped by {signal.Signals(signum).name}: {removed}", file=sys.stderr, flush=True)
    return 128 + signum


def main(argv=None) -> int:
    """Command line entry point; returns the exit status."""
    flags, command = _split(list(sys.argv[1:] if argv is None else argv))
    parser = _parser()
    ns, extra = parser.parse_known_args(flags)
    if extra:  # a command given without -- before it
        print(f"{PROG}: put -- before the command: {PROG} run --nodes 2 -- {' '.join(extra)}", file=sys.stderr)
        return 2
    problem = _check(ns, command)
    if problem:
        print(f"{PROG}: {problem}", file=sys.stderr)
        return 2
    from distlib.minicluster import MiniClusterUnavailable, mini_cluster

    interactive = ns.mode == "shell"
    if interactive:
        command = [os.environ.get("SHELL") or "/bin/bash", "-i"]
    timeout = ns.timeout if ns.timeout is not None or interactive else 3600.0
    proc = None
    try:
        with _stop_on_signals(), mini_cluster(ns.nodes, link_gbit=ns.link_gbit, head=True, slurm=ns.slurm,
                                              cpus_per_node=ns.cpus_per_node) as cluster:  # fmt: skip
            print(_describe(cluster), file=sys.stderr, flush=True)
            if interactive:
                print(f"{PROG}: type exit (or Ctrl-D) to leave; the cluster is removed then", file=sys.stderr,
                      flush=True)  # fmt: skip
            # `python` and `mpiexec` at the login node are this Python's and the mpich wheel's: sudo hides the
            # first, and a machine may have another MPI's mpiexec first on PATH
            path = os.pathsep.join([*_mpiexec_dir(), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
            argv, env = cluster.login_command(command, {"PS1": r"\u@\h:\w\$ ", "PATH": path})
            # ours again, not mini_cluster's SystemExit for SIGTERM: the command is stopped before the cluster goes
            with _stop_on_signals():
                # the shell keeps the terminal (no session of its own); a command gets its own process group
                proc = subprocess.Popen(argv, env=env, start_new_session=not interactive)
                try:
                    return _watch(cluster, proc, timeout, group=not interactive)
                except (KeyboardInterrupt, _Signalled) as exc:
                    return _interrupted(exc, proc, not interactive,
                                        removed="the command was stopped and the cluster removed")
    except MiniClusterUnavailable as exc:
        print(f"{PROG}: cannot make a mini cluster here: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, _Signalled) as exc:  # while the cluster was being made or removed
        return _interrupted(exc, proc, not interactive, removed="the cluster was removed")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
