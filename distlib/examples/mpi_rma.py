"""One-sided communication (RMA): Put, Get and Accumulate between fences.

::

    mpiexec -n 4 python -m mpi4py -m distlib.examples.mpi_rma

Every rank exposes a small NumPy array as an MPI *window*. Between two
``Fence`` calls (one access epoch) ranks read and write each other's
windows without the target taking part:

* ``Put``: rank ``r`` writes its rank number into slot 0 of its right
  neighbour's window;
* ``Get``: rank ``r`` reads slot 1 (its left neighbour's id, set before the
  epoch) of its left neighbour's window;
* ``Accumulate``: every rank adds ``r + 1`` into slot 2 of rank 0's window,
  an atomic remote sum (the one-sided cousin of a reduce).

The closing fence completes every operation; then each rank checks what
arrived. This is the programming model of RDMA networks and of NVSHMEM.
"""

from __future__ import annotations

import numpy as np


def main(argv=None) -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, p = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % p, (rank - 1) % p

    local = np.zeros(3, dtype=np.int64)
    local[1] = 1000 + rank  # what the right-hand neighbour will Get
    win = MPI.Win.Create(local, disp_unit=local.itemsize, comm=comm)

    got = np.zeros(1, dtype=np.int64)
    win.Fence()  # open the epoch
    win.Put(np.array([rank], dtype=np.int64), right, target=(0, 1))
    win.Get(got, left, target=(1, 1))
    win.Accumulate(np.array([rank + 1], dtype=np.int64), 0, target=(2, 1), op=MPI.SUM)
    win.Fence()  # close it: every Put/Get/Accumulate above is now complete

    checks = {
        "Put from the left neighbour": (int(local[0]), left),
        "Get from the left neighbour": (int(got[0]), 1000 + left),
    }
    if rank == 0:
        checks["Accumulate of r + 1 over all ranks"] = (int(local[2]), p * (p + 1) // 2)
    lines = [f"rank {rank}: {name}: {value} (expected {want})" for name, (value, want) in checks.items()]
    ok = all(value == want for value, want in checks.values())
    win.Free()
    everyone = comm.gather((lines, ok), root=0)
    if rank == 0:
        for rank_lines, _ in everyone:
            print("\n".join(rank_lines))
        good = all(o for _, o in everyone)
        print(f"one-sided results correct on every rank: {good}", flush=True)
        if not good:
            comm.Abort(1)
    comm.Barrier()


if __name__ == "__main__":
    main()
