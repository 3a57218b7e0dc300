"""The naive ring that deadlocks, and the fix.

Every rank wants to pass a buffer to its right-hand neighbour and take one
from its left. The naive program does it in the obvious order::

    comm.Ssend(mine, dest=right)     # everyone sends first...
    comm.Recv(theirs, source=left)   # ...so nobody ever gets here

``Ssend`` (synchronous send) returns only once the receiver has started
receiving. Every rank is inside ``Ssend``, no rank reaches ``Recv``: a
cycle of waits, a deadlock, for any message size. (A plain ``Send`` of a
small message would return at once because MPICH buffers it -- the eager
protocol -- so the bug would hide until the messages grew past the eager
limit. ``Ssend`` makes the bug show every time.)

The fix, ``--safe``, is ``Sendrecv``: the send and the receive are posted
together, so each rank's receive is ready while its send waits. Every
exchange in :mod:`distlib.engines.algorithms` is written that way.

As an MPI program (each rank runs it)::

    mpiexec -n 4 python -m mpi4py -m distlib.examples.naive_ring_deadlock          # hangs
    mpiexec -n 4 python -m mpi4py -m distlib.examples.naive_ring_deadlock --safe   # finishes

Run directly, it launches both versions under a time limit and reports::

    python -m distlib.examples.naive_ring_deadlock
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np


def under_mpiexec() -> bool:
    """True when this process was started by an MPI launcher."""
    return any(k in os.environ for k in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE"))


def ring_step(safe: bool, count: int = 4) -> np.ndarray:
    """One ring shift on every rank: send right, receive from the left."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, p = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % p, (rank - 1) % p
    mine = np.full(count, float(rank))
    theirs = np.empty(count)
    if safe:
        comm.Sendrecv(mine, dest=right, recvbuf=theirs, source=left)
    else:
        comm.Ssend(mine, dest=right)  # blocks until `right` posts its receive...
        comm.Recv(theirs, source=left)  # ...which it never does: it is in Ssend too
    return theirs


def demo(n: int = 4, *, timeout: float = 5.0) -> dict:
    """Launch the naive and the safe ring on ``n`` ranks; return ``{"naive": Outcome, "safe": Outcome}``."""
    from distlib.engines.launch import try_mpi

    return {
        "naive": try_mpi("distlib.examples.naive_ring_deadlock", n, timeout=timeout),
        "safe": try_mpi("distlib.examples.naive_ring_deadlock", n, args=["--safe"], timeout=timeout),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m distlib.examples.naive_ring_deadlock", description=__doc__.splitlines()[0])
    parser.add_argument("--safe", action="store_true", help="use Sendrecv (cannot deadlock)")
    parser.add_argument("-n", type=int, default=4, help="ranks, when launching (default 4)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds before a launched run counts as deadlocked")
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if under_mpiexec():
        theirs = ring_step(ns.safe)
        from mpi4py import MPI

        rank = MPI.COMM_WORLD.Get_rank()
        print(f"rank {rank}: received {theirs[0]:g} from the left", flush=True)
        return
    for name, outcome in demo(ns.n, timeout=ns.timeout).items():
        how = "Ssend then Recv" if name == "naive" else "Sendrecv"
        print(f"{name:>5} ring ({how}) on {ns.n} ranks: {outcome}", flush=True)


if __name__ == "__main__":
    main()
