"""Real collectives on real engines: MPI (mpi4py + MPICH) and torch.distributed.

The chapters "MPI" and "NCCL and GPU collectives" teach from this package.

* :mod:`~distlib.engines.comm` -- the :class:`Comm` interface the book's
  algorithms are written against, and :func:`run_threads` (``p`` ranks as
  threads, for tests and quick cells);
* :mod:`~distlib.engines.algorithms` -- all-reduce by ring, binomial tree
  and recursive halving-doubling, reduce-scatter, all-gather, broadcast and
  reduce, built from point-to-point messages;
* :mod:`~distlib.engines.alltoall` -- the all-to-all by pairwise exchange
  and by Bruck's algorithm, even blocks (:func:`alltoall`) or uneven
  (:func:`alltoallv`), beside the engine's own;
* :mod:`~distlib.engines.timing` -- nccl-tests style timing of all-reduces
  and the memory-copy reference (:func:`memcpy_bandwidth`);
* :mod:`~distlib.engines.tuner` -- ``algorithm="auto"``: fit the
  alpha-beta model on this machine and pick the fastest predicted algorithm;
* :mod:`~distlib.engines.launch` -- :func:`run_mpi` and :func:`run_torch`
  start real processes from a notebook, bounded in time, and clean up;
* :mod:`~distlib.engines.mpi` and :mod:`~distlib.engines.torch_dist` -- the
  engines themselves. They import mpi4py / torch only when used, and say
  what to ``pip install`` when it is missing;
  :mod:`~distlib.engines.torch_numpy` moves NumPy buffers through
  torch.distributed (gloo), for code written over NumPy (the trainer);
* :mod:`~distlib.engines.progress` -- ranks' heartbeats, and the
  launchers' watchdog that names a rank that stopped;
* :mod:`~distlib.engines.selftest` -- every book collective checked against
  the engine's built-in, as one SPMD program.

From a notebook::

    import distlib.engines as de
    print(de.run_mpi("distlib.examples.mpi_hello", 4))
    print(de.try_mpi("distlib.examples.naive_ring_deadlock", 2, timeout=5))   # deadlocked
    result = de.run_torch("distlib.examples.torch_ddp:main", 2)

Importing this package imports neither mpi4py nor torch.
"""

from .algorithms import ALLREDUCE_ALGORITHMS, allgather, allreduce, broadcast, reduce, reduce_scatter
from .alltoall import ENGINE_ALLTOALL_ALGORITHMS, alltoall, alltoallv, exchange_counts
from .comm import Comm, DeadlockError, Request, ThreadComm, run_threads
from .launch import (
    Outcome,
    PrivateNetworkUnavailable,
    RunError,
    RunResult,
    RunStalled,
    RunTimeout,
    find_mpiexec,
    run_mpi,
    run_torch,
    run_torchrun,
    stray_processes,
    try_mpi,
    try_torch,
)
from .timing import compare_allreduce, memcpy_bandwidth, time_allreduce
from .tuner import Calibration, calibrate, choose_algorithm

__all__ = [
    "ALLREDUCE_ALGORITHMS",
    "allreduce",
    "reduce_scatter",
    "allgather",
    "broadcast",
    "reduce",
    "ENGINE_ALLTOALL_ALGORITHMS",
    "alltoall",
    "alltoallv",
    "exchange_counts",
    "Comm",
    "Request",
    "ThreadComm",
    "DeadlockError",
    "run_threads",
    "RunResult",
    "RunError",
    "RunTimeout",
    "RunStalled",
    "Outcome",
    "run_mpi",
    "run_torch",
    "run_torchrun",
    "PrivateNetworkUnavailable",
    "try_mpi",
    "try_torch",
    "find_mpiexec",
    "stray_processes",
    "memcpy_bandwidth",
    "time_allreduce",
    "compare_allreduce",
    "Calibration",
    "calibrate",
    "choose_algorithm",
]
