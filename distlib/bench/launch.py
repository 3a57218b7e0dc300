"""Starting the bench's ranks and reading their result back, typed.

* :func:`bench_argv` -- the one place the bench's command line is built for
  ranks that hand back a typed result (``--report``): :func:`run_bench` and
  :func:`race` both use it;
* :func:`run_bench` -- the notebooks' entry: ``python -m distlib.bench`` on
  ``ranks`` processes, its :class:`~distlib.collectives.measured.BenchResult` read
  from the report line (:mod:`distlib.engines.report`);
* :func:`race` -- a mini cluster made, the bench run across it once per
  size, removed again; a :class:`~distlib.collectives.measured.Race`;
* :func:`run_on_mini_cluster` -- ``python -m distlib.bench ... --nodes N``.

The mini cluster and the engines are imported inside the functions that
use them.
"""

from __future__ import annotations

import json
import os
import sys

from ..collectives.measured import BenchResult, Race, RaceRow

__all__ = ["bench_argv", "run_bench", "race", "run_on_mini_cluster"]


def bench_argv(*, engine, ranks, algorithms=None, dtype="float32", min_bytes=8, max_bytes="64M",
               step_factor=2.0, iters=20, warmup=5, recalibrate=False, check=True, timeout=600.0,
               nodes=None, collective="allreduce") -> list:  # fmt: skip
    """The arguments of ``python -m distlib.bench`` whose rank 0 hands back its result as a report line.

    Every option spelled out (``--report --quiet`` at the end), so what
    the ranks run does not depend on the command line's defaults.
    ``algorithms`` left out: the collective's default
    (:data:`~distlib.bench.sweep.DEFAULT_ALGORITHMS`: ``ring`` for
    ``allreduce``, ``pairwise,bruck`` for ``alltoall``).

    Examples
    --------
    >>> bench_argv(engine="mpi", ranks=4, min_bytes=1024, max_bytes=1024, iters=3, warmup=1, nodes=2)[:6]
    ['allreduce', '--engine', 'mpi', '--ranks', '4', '-b']
    >>> bench_argv(engine="mpi", ranks=4, nodes=2)[-4:]
    ['--report', '--quiet', '--nodes', '2']
    >>> argv = bench_argv(engine="mpi", ranks=4, collective="alltoall")
    >>> argv[0], argv[argv.index("--algorithms") + 1]
    ('alltoall', 'pairwise,bruck')
    """
    from .sweep import DEFAULT_ALGORITHMS

    if algorithms is None:
        algorithms = DEFAULT_ALGORITHMS[collective]
    algorithms = algorithms if isinstance(algorithms, str) else ",".join(algorithms)
    argv = [collective, "--engine", engine, "--ranks", str(ranks), "-b", str(min_bytes), "-e", str(max_bytes),
            "-f", str(step_factor), "--algorithms", algorithms, "-d", dtype, "-n", str(iters), "-w", str(warmup),
            "-c", "1" if check else "0", "--timeout", str(timeout), "--report", "--quiet"]
    argv += ["--recalibrate"] if recalibrate else []
    return argv + (["--nodes", str(nodes)] if nodes is not None else [])


def run_bench(*, engine="mpi", ranks=2, algorithms=None, dtype="float32", min_bytes=8, max_bytes="64M",
              step_factor=2.0, iters=20, warmup=5, recalibrate=False, check=True, timeout=600.0,
              env=None, collective="allreduce") -> BenchResult:  # fmt: skip
    """Launch ``python -m distlib.bench`` on ``ranks`` processes and return its :class:`BenchResult`.

    The notebooks' entry: the ranks run in their own processes (started with
    ``mpiexec`` for ``engine="mpi"``, by torch's launcher for ``gloo``/``nccl``)
    and rank 0 hands its result back as a report line, read here typed.
    Sizes accept nccl-tests' suffixes (``"2M"``). ``engine="nccl"`` without
    enough GPUs raises ``RuntimeError`` saying so. ``env`` adds environment
    variables for the ranks (e.g. ``DISTLIB_CACHE_DIR`` for a fresh ``auto`` fit).
    ``collective="alltoall"`` times the all-to-all (``algorithms`` default
    ``("pairwise", "bruck")``).
    """
    import subprocess

    from distlib.engines.report import ReportError, parse

    for name, value in (("ranks", ranks), ("iters", iters)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if engine not in ("mpi", "gloo", "nccl"):
        raise ValueError(f"engine must be one of mpi, gloo, nccl; got {engine!r}")
    argv = bench_argv(engine=engine, ranks=ranks, algorithms=algorithms, dtype=dtype, min_bytes=min_bytes,
                      max_bytes=max_bytes, step_factor=step_factor, iters=iters, warmup=warmup,
                      recalibrate=recalibrate, check=check, timeout=timeout, collective=collective)
    proc = subprocess.run([sys.executable, "-m", "distlib.bench", *argv], capture_output=True, text=True,
                          timeout=timeout + 60, env={**os.environ, **(env or {})})
    command = f"python -m distlib.bench {' '.join(argv)}"
    if proc.returncode != 0:
        raise RuntimeError(f"{command} failed (status {proc.returncode}):\n{(proc.stdout + proc.stderr)[-2000:]}")
    try:
        return parse(proc.stdout, BenchResult, source="rank 0")
    except ReportError as exc:  # e.g. "SKIPPED: --engine nccl needs CUDA GPUs"
        raise RuntimeError(f"{command} handed back no result: {exc}\n{proc.stderr[-1000:]}") from None


def race(*, nodes: int = 2, ranks: int = 4, link_gbit: float | None = 2.0, sizes=(1 << 20, 16 << 20),
         algorithms=("ring", "hierarchical"), engine: str = "mpi", iters: int = 5, timeout: float = 300.0) -> Race:  # fmt: skip
    """Make a mini cluster, run ``python -m distlib.bench allreduce`` across it, remove it; the results typed.

    The same run as ``python -m distlib.bench allreduce --engine mpi --nodes
    2 --ranks 4 --link-gbit 2 --algorithms ring,hierarchical``, for the
    sizes given (bytes per rank), one run per size, one warm-up call each.

    Raises
    ------
    MiniClusterUnavailable
        Where the machine cannot host one (the message says why).
    """
    from distlib._check import check_choice, check_int
    from distlib.collectives import OWN_ALLREDUCE_ALGORITHMS
    from distlib.engines.launch import run_mpi, run_torch
    from distlib.engines.report import read
    from distlib.minicluster import mini_cluster

    engine = check_choice("engine", engine, ["mpi", "gloo"])
    ranks = check_int("ranks", ranks, minimum=1)
    iters = check_int("iters", iters, minimum=1)
    sizes = [check_int("sizes[i]", s, minimum=4) for s in sizes]
    if not sizes:
        raise ValueError("sizes must name at least one buffer size in bytes")
    algorithms = [check_choice("algorithms[i]", a, OWN_ALLREDUCE_ALGORITHMS) for a in algorithms]
    rows = []
    with mini_cluster(nodes, link_gbit=link_gbit) as cluster:
        for n_bytes in sizes:  # one run per size: -b = -e
            args = bench_argv(engine=engine, ranks=ranks, algorithms=algorithms, min_bytes=n_bytes, max_bytes=n_bytes,
                              iters=iters, warmup=1, timeout=timeout, nodes=nodes)  # fmt: skip
            if engine == "mpi":
                result = run_mpi("distlib.bench", ranks, args=args, timeout=timeout, cluster=cluster)
            else:
                result = run_torch("distlib.bench:_torch_rank_main", ranks, args=args, timeout=timeout, cluster=cluster)
            bench = read(result, BenchResult)
            rows += [RaceRow(row.n_bytes, {k: v.seconds for k, v in row.results.items()},
                             {k: v.busbw for k, v in row.results.items()},
                             {k: v.wrong for k, v in row.results.items()}) for row in bench.rows]  # fmt: skip
        links = {node.hostname: cluster.link_bytes(node) for node in cluster.nodes}
    return Race(nodes, ranks, link_gbit, engine, bench.algorithms, rows, links, bench.memcpy_bandwidth,
                bench.transport)  # fmt: skip


def run_on_mini_cluster(argv, *, engine: str, nodes: int, ranks: int, link_gbit, timeout: float,
                        output: str = "table") -> int:
    """``python -m distlib.bench ... --nodes N``: make a mini cluster, run the ranks across it, print, remove it.

    The ranks get the command line ``argv`` with ``--report``; rank 0's
    result comes back typed and is printed here as ``output`` says (the
    table or ``--json``, each with what the nodes' links carried; or the
    report line itself). Returns the exit status.
    """
    from distlib.engines.launch import RunError, run_mpi, run_torch
    from distlib.engines.report import emit, read, strip
    from distlib.minicluster import MiniClusterUnavailable, mini_cluster

    from .sweep import format_table

    rank_argv = list(argv) + ([] if "--report" in argv else ["--report"])
    try:
        cluster_cm = mini_cluster(nodes, link_gbit=link_gbit)
        cluster = cluster_cm.__enter__()
    except MiniClusterUnavailable as exc:
        print(f"--nodes: cannot make a mini cluster here: {exc}", file=sys.stderr)
        return 2
    try:
        if engine == "mpi":
            launch = lambda: run_mpi("distlib.bench", ranks, args=rank_argv, timeout=timeout, cluster=cluster)  # noqa: E731
        else:
            launch = lambda: run_torch("distlib.bench:_torch_rank_main", ranks, backend=engine,  # noqa: E731
                                       args=rank_argv, timeout=timeout, cluster=cluster)  # fmt: skip
        try:
            result = launch()
        except RunError as exc:
            if exc.result is not None:  # what rank 0 said up to the failure, less a report line
                sys.stderr.write(exc.result.stderr[0])
                sys.stdout.write(strip(exc.result.stdout[0]))
                sys.stdout.flush()
            raise
        links = {node.hostname: cluster.link_bytes(node) for node in cluster.nodes}
    finally:
        cluster_cm.__exit__(None, None, None)
    sys.stderr.write(result.stderr[0])
    bench = read(result, BenchResult)
    if output == "report":
        emit(bench)
    elif output == "json":
        data = bench.to_dict()
        data["link_gbit"] = link_gbit
        data["nodes"] = nodes
        data["link_bytes"] = {h: {"sent": b.sent, "received": b.received} for h, b in links.items()}
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
    else:
        print(format_table(bench))
        for host, b in links.items():
            print(f"# link of {host}: {b.sent} bytes sent, {b.received} bytes received (tc counters)")
    sys.stdout.flush()
    return 0


def launched(launch):
    """Run ``launch()`` (a launcher with ``check=True``) and print rank 0's output, also from a run that failed (its
    table up to the failure) before the failure goes on to the command line's report."""
    from distlib.engines.launch import RunError

    try:
        result = launch()
    except RunError as exc:
        if exc.result is not None:
            show_rank0(exc.result)
        raise
    show_rank0(result)
    return result


def show_rank0(result) -> None:
    """Rank 0's stderr and stdout, as it printed them."""
    sys.stderr.write(result.stderr[0])
    sys.stdout.write(result.stdout[0])
    sys.stdout.flush()
