"""``python -m distlib.bench``: nccl-tests style tables for real engines.

::

    mpiexec -n 4 python -m mpi4py -m distlib.bench allreduce --engine mpi
    python -m distlib.bench allreduce --engine gloo --ranks 4
    python -m distlib.bench allreduce --engine nccl --ranks 8 -b 8 -e 1G -f 2
    python -m distlib.bench allreduce --engine mpi --ranks 2 --algorithms tree,hd,auto --json
    python -m distlib.bench alltoall --engine mpi --ranks 4

It speaks nccl-tests: ``all_reduce`` or ``allreduce``; ``-b/-e/-f`` sizes,
``-n/--iters``, ``-w/--warmup_iters``, ``-d float|double|int32`` (``half`` and
``bfloat16`` are recognised and refused with the reason), ``-o sum``,
``-g 1`` (one GPU per process), ``-c 0|1`` (check the results or not); the
table has nccl-tests' ``size count type redop root`` columns, then per
algorithm ``time algbw busbw #wrong``, and ends with nccl-tests'
``# Out of bounds values`` and ``# Avg bus bandwidth`` lines (of the built-in
all-reduce), so log parsers written for ``all_reduce_perf`` read it.

For every buffer size (``-b`` to ``-e``, multiplied by ``-f`` each time; the
suffixes K, M, G are powers of 1024, as in nccl-tests) the engine's built-in
all-reduce and the book's algorithms (:mod:`distlib.engines.algorithms`)
run on the same engine and the same data. Columns, per algorithm:

``time``
    the **median** microseconds of one all-reduce over the timed samples
    (each sample the slowest rank's; see :mod:`distlib.engines.timing`).
    nccl-tests prints the *mean* over its iterations instead; the median
    is steadier on a shared machine;
``algbw``
    ``size / time`` in GB/s (1 GB = 1e9 bytes);
``busbw``
    ``algbw * 2 (p - 1) / p``, comparable with a link's one-direction
    bandwidth (:func:`distlib.bus_bandwidth`);
``#wrong``
    elements that differ from the exact sum (0 if none; ``N/A`` with
    ``-c 0``): the data are small integers, so every correct algorithm
    gives the exact result;
``/builtin``
    the book algorithm's time divided by the built-in's (below 1: faster).

``alltoall`` (or ``all_to_all``) times the all-to-all the same way: the
engine's own (``MPI_Alltoall``, torch's ``all_to_all_single``) beside the
book's pairwise exchange and Bruck's algorithm (:mod:`distlib.engines.alltoall`;
``--algorithms pairwise,bruck`` by default). The size is what each rank sends
in all (``p`` blocks), as nccl-tests' ``alltoall_perf`` counts it; busbw is
``algbw * (p - 1)/p``; ``#wrong`` counts elements off the NumPy answer;
``redop`` reads ``none``. :func:`distlib.collectives.alltoall_crossover_size`
says where the model expects Bruck to stop winning.

The header gives the machine's memory-copy bandwidth (a NumPy copy of a
large buffer, median), the physical ceiling for processes on one machine,
and, with ``auto``, the alpha-beta fit it chose by.

With ``--engine mpi`` run it under ``mpiexec`` (or pass ``--ranks P`` and it
starts ``mpiexec`` itself); gloo and nccl ranks are always started by this
command (``--ranks P``, default 2). ``--engine nccl`` without a CUDA GPU
prints why it cannot run and exits with status 0.

The package: :mod:`~distlib.collectives.measured` (the typed results, on the model
floor), :mod:`~distlib.bench.sweep` (the sweep every rank runs, the table),
:mod:`~distlib.bench.launch` (:func:`run_bench`, :func:`race`: launching
the ranks and reading their result back typed, through
:mod:`distlib.engines.report`) and :mod:`~distlib.bench.__main__` (the
command line). Every name of the former single module is here.
"""

from __future__ import annotations

from .launch import bench_argv, race, run_bench
from ..collectives.measured import BenchResult, BenchRow, Race, RaceRow, Timing
from .sweep import ALGORITHM_NAMES, DTYPE_NAMES, BadInput, format_table, parse_size, rank_main, run_sweep, sizes

__all__ = ["main", "parse_size", "sizes", "format_table", "ALGORITHM_NAMES", "DTYPE_NAMES", "Timing", "BenchRow",
           "BenchResult", "run_sweep", "run_bench", "race", "Race", "RaceRow", "bench_argv", "BadInput", "rank_main"]

#: Names of the command line (:mod:`distlib.bench.__main__`), found there when asked for. Not imported with the
#: package: ``python -m distlib.bench`` runs that module as ``__main__``, and a copy imported beforehand would
#: make runpy warn.
_CLI_NAMES = ("main", "_torch_rank_main", "_parser", "_check_cli", "max_ranks", "available_memory", "MAX_SIZES",
              "MAX_ITERS", "MAX_TIMEOUT", "RANK_MEMORY", "BUFFERS_PER_RANK")


def __getattr__(name: str):
    if name in _CLI_NAMES:
        from . import __main__ as cli

        return getattr(cli, name)
    raise AttributeError(f"module 'distlib.bench' has no attribute {name!r}")
