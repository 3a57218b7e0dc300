"""``python -m distlib.bench``: the command line (its options, their bounds, and ``main``).

Everything it runs lives beside it: the sweep on every rank in
:mod:`distlib.bench.sweep`, the launchers in :mod:`distlib.bench.launch`.
See :mod:`distlib.bench` for what the table says.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from distlib.bench.sweep import BadInput, _algorithms, _collective, _dtype, parse_size, rank_main
from distlib.engines._processes import max_ranks  # also distlib.bench.max_ranks
from distlib.limits import MAX_TIMEOUT, cluster_problem, launch_problem  # one table of bounds

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m distlib.bench",
        description="nccl-tests style all-reduce and all-to-all benchmark: the engine's built-in against the book's "
                    "algorithms.",
    )
    parser.add_argument("collective", type=_collective,
                        help="the collective to time: allreduce (or all_reduce), alltoall (or all_to_all)")
    parser.add_argument("--engine", choices=["mpi", "gloo", "nccl"], required=True)
    parser.add_argument("--ranks", type=int, default=None, help="ranks to start (gloo/nccl: default 2; mpi: start mpiexec)")
    parser.add_argument("-b", "--minbytes", type=parse_size, default=parse_size("8"), help="smallest size (default 8)")
    parser.add_argument("-e", "--maxbytes", type=parse_size, default=parse_size("64M"), help="largest size (default 64M)")
    parser.add_argument("-f", "--stepfactor", type=float, default=2.0, help="size multiplier (default 2)")
    parser.add_argument("--algorithms", default=None,
                        help="book algorithms, comma-separated: allreduce ring,tree,hd,rd,auto (default ring); "
                             "alltoall pairwise,bruck (default both)")  # fmt: skip
    parser.add_argument("-d", "--datatype", "--dtype", dest="dtype", type=_dtype, default="float32",
                        help="float, double or int32 (float32/float64 also accepted; default float)")
    parser.add_argument("-o", "--op", default="sum", help="reduction: sum (the only one the engines run)")
    parser.add_argument("-g", "--ngpus", type=int, default=1, help="GPUs per process: 1 (one rank per GPU)")
    parser.add_argument("-c", "--check", type=int, choices=[0, 1], default=1,
                        help="1: count wrong elements (default); 0: skip the check (#wrong shows N/A)")
    parser.add_argument("-n", "--iters", type=int, default=20, help="timed samples per size (default 20)")
    parser.add_argument("-w", "--warmup_iters", "--warmup", dest="warmup", type=int, default=5,
                        help="untimed calls per size (default 5)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    parser.add_argument("--report", action="store_true",
                        help="print the results as one typed report line (distlib.engines.report), for a program "
                             "that launched this one to read back")  # fmt: skip
    parser.add_argument("--recalibrate", action="store_true", help="measure auto's alpha-beta fit afresh (ignore the cache)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a launched run is killed")
    # A cluster on one machine (distlib.minicluster; chapter "A cluster on one machine").
    parser.add_argument("--nodes", type=int, default=None,
                        help="run on a simulated cluster of this many nodes (root only; --ranks spread evenly)")
    parser.add_argument("--link-gbit", type=float, default=None,
                        help="with --nodes: each node's link rate in Gbit/s per direction (default: unthrottled)")
    return parser


MAX_SIZES = 200
"""At most this many sizes in one sweep (``-b``, ``-e``, ``-f``): nccl-tests' doubling from 8 B to 64 GiB is 34."""
MAX_ITERS = 100_000
RANK_MEMORY = {"mpi": 80 * 2**20, "gloo": 400 * 2**20, "nccl": 400 * 2**20}
"""What one rank needs before its buffers (an interpreter with NumPy; with torch), measured here with ``ps``."""
BUFFERS_PER_RANK = 4
"""Buffers of the largest size each rank holds at once: the input, the built-in's copy, a book algorithm's, the check's."""


def available_memory() -> int | None:
    """Bytes of memory available for new processes (``MemAvailable``), or ``None`` where unknown."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # pragma: no cover - psutil is a dependency; without it, claim nothing
        return None


def _count_sizes(begin: int, end: int, factor: float, cap: int) -> int:
    count, n = 0, begin
    while n <= end and count <= cap:
        count += 1
        n = int(n * factor) if int(n * factor) > n else n + 1
    return count


def _check_cli(ns) -> None:
    """Every option checked before any process starts; a bad one raises :class:`BadInput` naming it and its range."""
    if ns.op != "sum":
        raise BadInput(f"-o/--op: only sum is run, got {ns.op!r}")
    if ns.ngpus != 1:
        raise BadInput(f"-g/--ngpus: one GPU per process only (start more ranks with --ranks), got {ns.ngpus}")
    if not 1 <= ns.iters <= MAX_ITERS:
        raise BadInput(f"-n/--iters must be between 1 and {MAX_ITERS}, got {ns.iters}")
    if not 0 <= ns.warmup <= MAX_ITERS:
        raise BadInput(f"-w/--warmup_iters must be between 0 and {MAX_ITERS}, got {ns.warmup}")
    problem = launch_problem(timeout=ns.timeout)
    if problem:
        raise BadInput(problem)
    itemsize = {"float32": 4, "float64": 8, "int32": 4}[ns.dtype]
    if ns.minbytes < itemsize:
        raise BadInput(f"-b/--minbytes must be at least one element of {ns.dtype} ({itemsize} bytes), got {ns.minbytes}")
    if ns.maxbytes < ns.minbytes:
        raise BadInput(f"-e/--maxbytes must be at least -b ({ns.minbytes} bytes), got {ns.maxbytes}")
    if not (math.isfinite(ns.stepfactor) and ns.stepfactor > 1):
        raise BadInput(f"-f/--stepfactor must be a finite number above 1, got {ns.stepfactor:g}")
    if _count_sizes(ns.minbytes, ns.maxbytes, ns.stepfactor, MAX_SIZES) > MAX_SIZES:
        raise BadInput(f"-f/--stepfactor {ns.stepfactor:.10g} from -b {ns.minbytes} to -e {ns.maxbytes} makes more than "
                       f"{MAX_SIZES} sizes; use a larger factor or a narrower range")  # fmt: skip
    ranks = _ranks_of(ns)
    if ranks is not None and (ns.nodes is not None or ns.link_gbit is not None):
        nodes = 2 if ns.nodes is None else ns.nodes
        problem = cluster_problem(ranks=ranks, nodes=nodes, link_gbit=ns.link_gbit, engine=ns.engine)
        if problem:
            raise BadInput(problem)
    if ranks is not None:
        most = max_ranks()
        if not 1 <= ranks <= most:
            raise BadInput(f"--ranks must be between 1 and {most} on this machine ({os.cpu_count()} cores), got {ranks}")
        need = ranks * (RANK_MEMORY[ns.engine] + BUFFERS_PER_RANK * ns.maxbytes)
        have = available_memory()
        if have is not None and need > have:
            raise BadInput(f"-e/--maxbytes {ns.maxbytes} on {ranks} ranks needs about {need / 2**30:.1f} GiB "
                           f"({BUFFERS_PER_RANK} buffers of -e per rank, plus the rank itself) and this machine has "
                           f"{have / 2**30:.1f} GiB available; use a smaller -e or fewer ranks")  # fmt: skip


def _ranks_of(ns) -> int | None:
    """How many ranks this command will start (``None``: it is a rank itself, or mpiexec starts them)."""
    if _under_mpiexec() or "RANK" in os.environ:
        return None
    if ns.nodes is not None or ns.link_gbit is not None:
        nodes = 2 if ns.nodes is None else ns.nodes
        return 2 * nodes if ns.ranks is None else ns.ranks
    if ns.engine == "mpi":
        return ns.ranks
    return 2 if ns.ranks is None else ns.ranks


def _sweep_kwargs(ns) -> dict:
    """The keyword arguments of :func:`~distlib.bench.sweep.rank_main` from parsed command-line options."""
    return dict(collective=ns.collective, algorithms=_algorithms(ns.algorithms, ns.collective), dtype=ns.dtype, min_bytes=ns.minbytes, max_bytes=ns.maxbytes,
                step_factor=ns.stepfactor, iters=ns.iters, warmup=ns.warmup, recalibrate=ns.recalibrate,
                check=bool(ns.check), quiet=ns.quiet, output=_output(ns))


def _output(ns) -> str:
    return "report" if ns.report else "json" if ns.json else "table"


def _under_mpiexec() -> bool:
    return any(k in os.environ for k in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE"))


def _torch_rank_main() -> None:
    """Entry point of one gloo/nccl rank started by :func:`main` (``distlib.bench:_torch_rank_main``)."""
    import torch

    from distlib.engines.torch_dist import init

    ns = _parser().parse_args(sys.argv[1:])
    if ns.engine == "gloo":
        torch.set_num_threads(1)
    comm = init(ns.engine, timeout=max(60.0, ns.timeout / 2))
    code = rank_main(comm, **_sweep_kwargs(ns))
    if code:
        sys.exit(code)


def main(argv=None) -> int:
    """Command line entry point; returns the exit status (:data:`distlib.engines.launch.EXIT_STATUS`).

    A run that fails, stalls, loses a node or is interrupted prints the
    launcher's diagnosis on stderr (which rank, which node, doing what, its
    last words) and exits with the status of its kind.
    """
    from distlib.engines.launch import RunError, exit_status, failure_report
    from distlib.engines.report import ReportError

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except BadInput as exc:
        print(f"python -m distlib.bench: {exc}", file=sys.stderr)
        return 2
    except ReportError as exc:  # the ranks ran, but rank 0 handed back no result (--nodes)
        print(f"python -m distlib.bench: {exc}", file=sys.stderr)
        return 1
    except (RunError, KeyboardInterrupt) as exc:
        if _under_mpiexec() or "RANK" in os.environ:
            raise  # a rank: its launcher reports
        print(failure_report(exc, "python -m distlib.bench"), file=sys.stderr, flush=True)
        return exit_status(exc)


def _main(argv: list) -> int:
    ns = _parser().parse_args(argv)
    _check_cli(ns)
    _algorithms(ns.algorithms, ns.collective)  # fail early on a bad name
    if (ns.nodes is not None or ns.link_gbit is not None) and not _under_mpiexec() and "RANK" not in os.environ:
        from distlib.bench.launch import run_on_mini_cluster

        nodes = 2 if ns.nodes is None else ns.nodes  # checked with the rest in _check_cli
        return run_on_mini_cluster(argv, engine=ns.engine, nodes=nodes, ranks=2 * nodes if ns.ranks is None else ns.ranks,
                                   link_gbit=ns.link_gbit, timeout=ns.timeout, output=_output(ns))  # fmt: skip
    if ns.engine == "mpi":
        if _under_mpiexec():
            from distlib.engines.mpi import world

            return rank_main(world(), **_sweep_kwargs(ns))
        if ns.ranks is None:
            print("--engine mpi: run under mpiexec (mpiexec -n P python -m mpi4py -m distlib.bench ...) "
                  "or pass --ranks P to have it started for you", file=sys.stderr)  # fmt: skip
            return 2
        from distlib.bench.launch import launched
        from distlib.engines.launch import run_mpi

        launched(lambda: run_mpi("distlib.bench", ns.ranks, args=argv, timeout=ns.timeout))
        return 0
    # gloo / nccl: this process launches the ranks.
    if "RANK" in os.environ:
        _torch_rank_main()
        return 0
    ranks = ns.ranks if ns.ranks is not None else 2
    if ns.engine == "nccl":
        from distlib.engines.torch_dist import cuda_available, import_torch

        torch, _ = import_torch()
        gpus = torch.cuda.device_count() if cuda_available() else 0
        if gpus == 0:
            print("SKIPPED: --engine nccl needs CUDA GPUs and PyTorch sees none on this machine "
                  "(use --engine gloo or --engine mpi for CPU collectives)", flush=True)  # fmt: skip
            return 0
        if ranks > gpus:
            print(f"--engine nccl needs one GPU per rank: {ranks} ranks but {gpus} GPU(s) visible. NCCL refuses two "
                  "ranks of one communicator on one GPU by default ('Duplicate GPU detected' up to 2.29; "
                  f"from 2.30 unless NCCL_MULTI_RANK_GPU_ENABLE=1, and then without NVLS); use --ranks "
                  f"{gpus} or --engine gloo", file=sys.stderr)  # fmt: skip
            return 2
    from distlib.engines.launch import run_torch

    # echo: rank 0's table and progress lines appear as they come; the rest is printed only on failure.
    run_torch("distlib.bench:_torch_rank_main", ranks, backend=ns.engine, args=argv, timeout=ns.timeout, echo=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
