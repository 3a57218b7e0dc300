"""The book's ring all-reduce over MPI, message by message, checked against MPI's own.

::

    mpiexec -n 4 python -m mpi4py -m distlib.examples.ch06_ring
    distlib.engines.run_mpi("distlib.examples.ch06_ring", 4)

Every rank holds ``n`` values (``--n``, default 10, which does not divide
evenly by 4 ranks, so the chunks differ in size). The program

1. runs :func:`distlib.engines.allreduce` with ``algorithm="ring"`` on a
   communicator that records every call the algorithm makes to MPI
   (``MPI_Sendrecv``) and every addition, so that rank 0 can print, step by
   step, which chunk each rank sent to its right-hand neighbour and what it
   did with the chunk that arrived from its left;
2. compares that result, and those of the binomial tree and of recursive
   halving-doubling, with ``MPI_Allreduce`` on the same data: bit for bit on
   whole numbers (every order of additions gives the same sum), and to the
   last few bits on random floats (floating-point addition is not
   associative, so a different order can round differently);
3. checks the book's reduce-scatter, all-gather, broadcast and reduce
   against MPI's built-ins on several buffer lengths
   (:func:`distlib.engines.selftest.run_checks`).

Rank 0 prints everything. The exit status is 1 if any check fails.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

__all__ = ["main", "step_table", "recording_comm"]


def _recording_class():
    from distlib.engines.mpi import MPIComm

    class RecordingComm(MPIComm):
        """An :class:`~distlib.engines.mpi.MPIComm` that writes down what the algorithm asks of MPI.

        ``events`` gets ``("sendrecv", send_offset, dest, recv_offset, source)``
        for every exchange and ``("combine", offset)`` for every addition.
        Offsets are element offsets into ``base`` (the buffer being reduced),
        or None for a message received into scratch space.
        """

        def __init__(self):
            super().__init__()
            self.base = None
            self.events = []

        def _offset(self, buf):
            if self.base is None or buf is None or len(buf) == 0 or not np.shares_memory(buf, self.base):
                return None
            start = buf.__array_interface__["data"][0] - self.base.__array_interface__["data"][0]
            return int(start // self.base.itemsize)

        def sendrecv(self, sendbuf, dest, recvbuf, source, *, tag=0):
            self.events.append(("sendrecv", self._offset(sendbuf), dest, self._offset(recvbuf), source))
            super().sendrecv(sendbuf, dest, recvbuf, source, tag=tag)

        def combine(self, dst, src, op="sum"):
            self.events.append(("combine", self._offset(dst)))
            super().combine(dst, src, op)

    return RecordingComm


def recording_comm():
    """A ``RecordingComm`` over ``MPI.COMM_WORLD`` (imports mpi4py, so call it under mpiexec)."""
    return _recording_class()()


def step_table(events_by_rank, bounds) -> list:
    """Lines of a table: one row per ring step, one column per rank.

    ``a / +b`` means: sent chunk ``a`` to the right, received chunk ``b`` from
    the left and added it in; ``a / =b``: received chunk ``b`` and stored it.

    Parameters
    ----------
    events_by_rank : list of list
        Each rank's ``RecordingComm.events``.
    bounds : sequence of int
        Chunk boundaries (:func:`distlib.chunk_bounds`).

    Examples
    --------
    >>> ev = [[("sendrecv", 1, 1, None, 1), ("combine", 0), ("sendrecv", 0, 1, 1, 1)],
    ...       [("sendrecv", 0, 0, None, 0), ("combine", 1), ("sendrecv", 1, 0, 0, 0)]]
    >>> for line in step_table(ev, [0, 1, 2]):
    ...     print(line)
    step  phase               rank 0    rank 1
       1  reduce-scatter      1 / +0    0 / +1
       2  all-gather          0 / =1    1 / =0
    """
    starts = list(bounds[:-1])

    def chunk(offset):
        return starts.index(offset)

    cells = []
    for events in events_by_rank:
        rows, i = [], 0
        while i < len(events):
            if events[i][0] != "sendrecv":
                raise ValueError(f"expected a sendrecv event, got {events[i]!r}")
            _, send_off, _dest, recv_off, _source = events[i]
            if recv_off is None:  # received into scratch, then added into a chunk
                added = events[i + 1]
                rows.append(("reduce-scatter", f"{chunk(send_off)} / +{chunk(added[1])}"))
                i += 2
            else:
                rows.append(("all-gather", f"{chunk(send_off)} / ={chunk(recv_off)}"))
                i += 1
        cells.append(rows)
    p = len(events_by_rank)
    lines = [f"{'step':>4}  {'phase':<16}" + "".join(f"{'rank ' + str(r):>10}" for r in range(p))]
    for s in range(len(cells[0])):
        lines.append(f"{s + 1:>4}  {cells[0][s][0]:<16}" + "".join(f"{cells[r][s][1]:>10}" for r in range(p)))
    return lines


def main(argv=None) -> None:
    from mpi4py import MPI

    from distlib.engines import algorithms
    from distlib.engines.selftest import run_checks
    from distlib.ring import chunk_bounds

    parser = argparse.ArgumentParser(prog="python -m distlib.examples.ch06_ring", description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10, help="values per rank (default 10)")
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)

    comm = recording_comm()
    rank, p = comm.rank, comm.size
    say = (lambda *a: print(*a, flush=True)) if rank == 0 else (lambda *a: None)
    n = ns.n
    bounds = chunk_bounds(n, p).tolist()

    # 1. The ring, recorded. Rank r holds 100 r + i: whole numbers, so every
    # order of additions gives exactly the same sums.
    mine = 100.0 * rank + np.arange(n, dtype=np.float64)
    x = mine.copy()
    comm.base = x
    algorithms.allreduce(comm, x, algorithm="ring")
    comm.base = None
    events = comm.mpi_comm.gather(comm.events, root=0)
    say(f"ring all-reduce over MPI: p = {p} ranks, n = {n} float64 values per rank")
    say(f"chunk c is x[bounds[c]:bounds[c+1]], bounds = {bounds}")
    if rank == 0:
        for line in step_table(events, bounds):
            say(line)
        say("a / +b: sent chunk a to the right, received chunk b from the left and added it in")
        say("a / =b: sent chunk a to the right, received chunk b from the left and stored it")
    say(f"rank 0 holds after the ring: {x.astype(np.int64).tolist()}")

    # 2. Every book algorithm against MPI_Allreduce.
    builtin = np.empty_like(mine)
    comm.mpi_comm.Allreduce(mine, builtin, op=MPI.SUM)
    rng = np.random.default_rng(rank)
    floats = rng.standard_normal(1000)
    builtin_f = np.empty_like(floats)
    comm.mpi_comm.Allreduce(floats, builtin_f, op=MPI.SUM)
    ok = True
    say(f"{'against MPI_Allreduce':<22}{'whole numbers:':>15}{'random floats:':>16}{'every rank:':>13}")
    say(f"{'':<22}{'bit for bit':>15}{'within 1e-12':>16}{'same bits':>13}")
    for name in algorithms.ALLREDUCE_ALGORITHMS:
        exact = np.array_equal(algorithms.allreduce(comm, mine.copy(), algorithm=name), builtin)
        got = algorithms.allreduce(comm, floats.copy(), algorithm=name)
        close = bool(np.max(np.abs(got - builtin_f)) <= 1e-12 * np.max(np.abs(builtin_f)))
        same = len(set(comm.mpi_comm.allgather(got.tobytes()))) == 1
        everywhere = comm.mpi_comm.allreduce(exact and close and same, op=MPI.LAND)
        ok &= everywhere
        say(f"{name:<22}{str(exact):>15}{str(close):>16}{str(same):>13}")

    # 3. The other collectives against MPI's built-ins.
    sizes = sorted({0, 1, p - 1, p, p + 1, 13, 1000})
    checks, failures = run_checks(comm, sizes=sizes, dtypes=("float64",))
    everyone = comm.mpi_comm.gather((checks, failures), root=0)
    if rank == 0:
        total = sum(c for c, _ in everyone)
        bad = [f for _, fs in everyone for f in fs]
        say("all-reduce, reduce-scatter, all-gather, broadcast and reduce against")
        say(f"MPI's built-ins on {len(sizes)} buffer lengths: {total} checks, {len(bad)} failures")
        ok &= not bad
    ok = comm.mpi_comm.bcast(ok, root=0)
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
