"""Hello from every rank: the SPMD model in ten lines.

Every process runs this same file. They differ only in ``rank``, their
number within ``COMM_WORLD``, and use it to pick their part of the work::

    mpiexec -n 4 python -m mpi4py -m distlib.examples.mpi_hello

Each rank sums its share of ``0 .. N-1`` (rank ``r`` takes every ``p``-th
number from ``r``), then one all-reduce adds the partial sums. Rank 0
checks the total against ``N (N - 1) / 2``.
"""

from __future__ import annotations

import os
import sys

import numpy as np


def main(argv=None) -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, p = comm.Get_rank(), comm.Get_size()
    print(f"hello from rank {rank} of {p} (pid {os.getpid()} on {MPI.Get_processor_name()})", flush=True)

    N = 1_000_000
    mine = np.arange(rank, N, p, dtype=np.int64)  # the same program, a different slice
    partial = np.array([mine.sum()])
    total = np.empty(1, dtype=np.int64)
    comm.Allreduce(partial, total, op=MPI.SUM)
    print(f"rank {rank}: my partial sum {partial[0]} over {mine.size} numbers", flush=True)
    comm.Barrier()
    if rank == 0:
        version = " ".join(MPI.Get_library_version().split()[:3])
        ok = int(total[0]) == N * (N - 1) // 2
        print(f"total {total[0]} == N(N-1)/2: {ok}   [{version}, MPI standard {MPI.Get_version()}]", flush=True)
        if not ok:
            sys.exit(1)


if __name__ == "__main__":
    main()
