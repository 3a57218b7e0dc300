"""Every MPI collective, run for real, with what each rank ends up holding.

::

    mpiexec -n 4 python -m mpi4py -m distlib.examples.mpi_collectives

Each collective is called on NumPy buffers (mpi4py's upper-case methods,
which hand MPI the array's memory directly), its result printed per rank,
and checked against what the definition says it must be. Rank ``r``
contributes ``r + 1`` (or an array built from it), so results are easy to
read: the sum over ranks is ``p (p + 1) / 2``.
"""

from __future__ import annotations

import numpy as np


def main(argv=None) -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, p = comm.Get_rank(), comm.Get_size()
    total = p * (p + 1) // 2
    report = []
    failures = []

    def show(name, value, expected):
        ok = np.array_equal(np.asarray(value), np.asarray(expected))
        report.append(f"{name:<15} {np.asarray(value).tolist()}")
        if not ok:
            failures.append(f"{name}: got {np.asarray(value).tolist()}, expected {np.asarray(expected).tolist()}")

    # Broadcast: root's buffer copied everywhere.
    buf = np.array([10, 20, 30]) if rank == 0 else np.zeros(3, dtype=int)
    comm.Bcast(buf, root=0)
    show("Bcast", buf, [10, 20, 30])

    # Reduce: the sum lands on the root only.
    mine = np.full(2, rank + 1)
    out = np.zeros(2, dtype=int)
    comm.Reduce(mine, out if rank == 0 else None, op=MPI.SUM, root=0)
    show("Reduce", out if rank == 0 else "(not root)", [total, total] if rank == 0 else "(not root)")

    # Allreduce: the sum everywhere.
    out = np.zeros(2, dtype=int)
    comm.Allreduce(mine, out, op=MPI.SUM)
    show("Allreduce", out, [total, total])

    # Allgather: every rank's piece, in rank order, everywhere.
    out = np.zeros(p, dtype=int)
    comm.Allgather(np.array([rank + 1]), out)
    show("Allgather", out, np.arange(1, p + 1))

    # Scatter: root's array cut into p pieces, piece r to rank r.
    send = np.arange(2 * p) * 10 if rank == 0 else None
    out = np.zeros(2, dtype=int)
    comm.Scatter(send, out, root=0)
    show("Scatter", out, [20 * rank, 20 * rank + 10])

    # Gather: the reverse, onto the root.
    out = np.zeros(p, dtype=int) if rank == 0 else None
    comm.Gather(np.array([rank + 1]), out, root=0)
    show("Gather", out if rank == 0 else "(not root)", np.arange(1, p + 1) if rank == 0 else "(not root)")

    # Reduce-scatter: reduce p blocks, block r to rank r (here block r holds r).
    send = np.repeat(np.arange(p), 2) * (rank + 1)
    out = np.zeros(2, dtype=int)
    comm.Reduce_scatter_block(send, out, op=MPI.SUM)
    show("Reduce_scatter", out, [rank * total] * 2)

    # Alltoall: block j of rank r goes to rank j (a transpose).
    send = np.arange(p) + 100 * rank
    out = np.zeros(p, dtype=int)
    comm.Alltoall(send, out)
    show("Alltoall", out, 100 * np.arange(p) + rank)

    # The lower-case methods move any picklable object (slower: pickling).
    show("allreduce(obj)", comm.allreduce(rank + 1), total)
    show("bcast(obj)", comm.bcast({"lr": 0.1} if rank == 0 else None)["lr"] * 10, 1)

    everyone = comm.gather((report, failures), root=0)
    if rank == 0:
        for r, (lines, bad) in enumerate(everyone):
            for line in lines:
                print(f"rank {r}: {line}")
        bad = [f"rank {r}: {f}" for r, (_, fs) in enumerate(everyone) for f in fs]
        print(f"{sum(len(lines) for lines, _ in everyone)} results checked, {len(bad)} wrong", flush=True)
        for line in bad:
            print(line, flush=True)
        if bad:
            comm.Abort(1)
    comm.Barrier()


if __name__ == "__main__":
    main()
