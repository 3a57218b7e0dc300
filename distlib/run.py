"""``python -m distlib.run``: start any of the book's rank programs on P ranks, and say how the run ended.

The command line for what the chapters start from Python (:func:`distlib.engines.run_mpi`,
:func:`~distlib.engines.run_torch`, :func:`~distlib.engines.run_torchrun`), here or across a
mini cluster of simulated nodes (``--nodes``; root only)::

    python -m distlib.run --engine mpi -n 3 distlib.examples.mpi_hello
    python -m distlib.run --engine gloo -n 3 distlib.examples.faulty_rank --engine gloo --mode spin
    sudo "$(command -v python)" -m distlib.run --engine mpi -n 4 --nodes 2 --link-gbit 1 distlib.examples.mpi_hello

Every flag before the module is this command's; everything after it goes to the module. Each rank's
output is printed in rank order, each line prefixed ``[r]`` (stdout here, stderr on stderr). When a run
fails, stalls, loses a node or is interrupted, stderr says which rank, on which node, doing what, with
its last words, and the exit status says which kind (:data:`distlib.engines.launch.EXIT_STATUS`: 2 bad
input, 3 a rank failed, 4 a rank stalled, 5 a node or link lost, 124 timed out, 128 + N a signal).
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from distlib.limits import cluster_problem, launch_problem

PROG = "python -m distlib.run"
ENGINES = ("mpi", "gloo", "nccl", "torchrun")


class BadInput(Exception):
    """A flag out of range, in one line naming it and the range."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0],
                                     epilog="Exit status: 0 ok, 2 bad input, 3 a rank failed, 4 a rank stalled, "
                                            "5 a node or link lost, 124 timed out, 128+N stopped by signal N.")  # fmt: skip
    parser.add_argument("--engine", choices=ENGINES, default="mpi",
                        help="mpi (mpiexec), gloo or nccl (one process per rank), torchrun (PyTorch's launcher)")
    parser.add_argument("-n", "--ranks", type=int, default=2, help="ranks to start (default 2)")
    parser.add_argument("--nodes", type=int, default=None, help="spread the ranks over a mini cluster of this many "
                        "simulated nodes (root only; -n a multiple of it)")  # fmt: skip
    parser.add_argument("--link-gbit", type=float, default=None,
                        help="with --nodes: each node's link in Gbit/s per direction (default unthrottled)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before the whole run is stopped")
    parser.add_argument("--stall", type=float, default=None,
                        help="seconds a stopped rank may stay silent before it is named (default 15)")
    parser.add_argument("--behind", type=float, default=None,
                        help="seconds the others may wait on a rank that is in no collective (default 20)")
    parser.add_argument("module", help="the rank program, a module name such as distlib.examples.mpi_hello")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return parser


def check(ns) -> None:
    """Every flag before any process starts; :class:`BadInput` names the one out of range."""
    from distlib.engines._processes import max_ranks

    if ns.module.endswith(".py") or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", ns.module):
        raise BadInput(f"module must be a dotted module name such as distlib.examples.mpi_hello, got {ns.module!r}")
    most = max_ranks()
    if not 1 <= ns.ranks <= most:
        raise BadInput(f"-n/--ranks must be between 1 and {most} on this machine ({os.cpu_count()} cores), "
                       f"got {ns.ranks}")  # fmt: skip
    problem = launch_problem(timeout=ns.timeout, stall=ns.stall, behind=ns.behind)
    if problem:
        raise BadInput(problem)
    if ns.nodes is None and ns.link_gbit is not None:
        raise BadInput("--link-gbit needs --nodes (the links are the mini cluster's)")
    if ns.nodes is not None:
        problem = cluster_problem(ranks=ns.ranks, nodes=ns.nodes, link_gbit=ns.link_gbit, engine=ns.engine,
                                  ranks_flag="-n/--ranks")  # fmt: skip
        if problem:
            raise BadInput(problem)


def launch(ns, cluster=None):
    """The run ``ns`` asks for, with ``check=True``: a :class:`~distlib.engines.launch.RunResult`, or the
    launcher's :class:`~distlib.engines.launch.RunError`."""
    from distlib.engines.launch import DEFAULT_STALL, run_mpi, run_torch, run_torchrun

    common = dict(args=ns.args, timeout=ns.timeout, cluster=cluster, behind=ns.behind,
                  stall=DEFAULT_STALL if ns.stall is None else ns.stall)  # fmt: skip
    if ns.engine == "mpi":
        return run_mpi(ns.module, ns.ranks, **common)
    if ns.engine == "torchrun":
        return run_torchrun(ns.module, ns.ranks, **common)
    return run_torch(ns.module, ns.ranks, backend=ns.engine, **common)


def _show(result) -> None:
    """The ranks' output as a reader reads it: the ``@@distlib-report`` lines are for launching code, not people."""
    from distlib.engines import report

    shown = report.strip(result.text())
    if shown.strip():
        print(shown, flush=True)
    if result.text(stderr=True).strip():
        print(result.text(stderr=True), file=sys.stderr, flush=True)


def main(argv=None) -> int:
    """Command line entry point; returns the exit status."""
    from distlib.engines.launch import RunError, exit_status, failure_report

    ns = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        check(ns)
    except BadInput as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    try:
        if ns.nodes is None:
            result = launch(ns)
        else:
            from distlib.minicluster import MiniClusterUnavailable, mini_cluster

            try:
                with mini_cluster(ns.nodes, link_gbit=ns.link_gbit) as cluster:
                    result = launch(ns, cluster)
            except MiniClusterUnavailable as exc:
                print(f"{PROG}: --nodes: cannot make a mini cluster here: {exc}", file=sys.stderr)
                return 2
    except (RunError, KeyboardInterrupt) as exc:
        if getattr(exc, "result", None) is not None:
            _show(exc.result)
        print(failure_report(exc, PROG), file=sys.stderr, flush=True)
        return exit_status(exc)
    _show(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
