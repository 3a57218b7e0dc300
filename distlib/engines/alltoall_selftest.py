"""Check the book's all-to-alls against the engine's own and against NumPy, on real processes.

Run on any engine; each rank checks what it received and rank 0 prints one
JSON summary line (``{"engine", "p", "checks", "failures"}``)::

    mpiexec -n 5 python -m mpi4py -m distlib.engines.alltoall_selftest --engine mpi
    python -c "import distlib.engines as e; print(e.run_torch('distlib.engines.alltoall_selftest:main', 3, args=['--engine', 'gloo']))"

Rank ``s`` sends element ``i`` of its buffer as ``1000 s + i`` (exact in
float64 and int32), so every rank can compute what it should receive from
every other with NumPy alone (:func:`expected`). Each size runs
:func:`~distlib.engines.alltoall.alltoall` by pairwise exchange, by Bruck's
algorithm and by the engine's built-in (``MPI_Alltoall``, torch's
``all_to_all_single``), and :func:`~distlib.engines.alltoall.alltoallv` with
uneven counts (zeros among them) by all three (``MPI_Alltoallv``); every
result is compared element by element with the NumPy answer and the book's
with the built-in's. Exits with status 1 if any check fails.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from .alltoall import ENGINE_ALLTOALL_ALGORITHMS, alltoall, alltoallv

__all__ = ["main", "run_checks", "default_sizes", "uneven_counts", "expected"]


def default_sizes(p: int) -> list:
    """Buffer lengths that exercise every edge: empty, shorter than ``p``, not a multiple of ``p``, past eager limits."""
    return sorted({0, 1, max(p - 1, 0), p, p + 1, 2 * p + 3, 13, 1000, 65_537})


def uneven_counts(p: int, seed: int = 0) -> np.ndarray:
    """``counts[s, d]``: elements rank ``s`` sends rank ``d`` in the uneven checks (zeros among them).

    >>> uneven_counts(3).tolist()
    [[0, 4, 1], [3, 0, 4], [6, 3, 0]]
    """
    s, d = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    return (3 * s + 4 * d + seed) % 7


def _data(rank: int, n: int, dtype: str) -> np.ndarray:
    return (1000 * rank + np.arange(n)).astype(dtype)


def expected(rank: int, counts: np.ndarray, dtype: str) -> np.ndarray:
    """What rank ``rank`` receives when rank ``s`` sends ``counts[s, d]`` elements to ``d`` (its data ``1000 s + i``)."""
    p = counts.shape[0]
    pieces = []
    for s in range(p):
        start = int(counts[s, :rank].sum())
        pieces.append(_data(s, int(counts[s].sum()), dtype)[start : start + int(counts[s, rank])])
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=dtype)


def _even_counts(p: int, n: int) -> np.ndarray:
    q, extra = divmod(n, p)
    return np.tile([q + (1 if j < extra else 0) for j in range(p)], (p, 1))


def run_checks(comm, sizes=None, dtypes=("float64", "int32")) -> tuple:
    """Run every check on this rank; returns ``(n_checks, failures)``."""
    p, r = comm.size, comm.rank
    sizes = default_sizes(p) if sizes is None else sizes
    failures, checks = [], 0

    def check(name, got, want):
        nonlocal checks
        checks += 1
        got = np.asarray(comm.to_numpy(got))
        if got.shape != want.shape or not np.array_equal(got, want):
            wrong = int(np.count_nonzero(got != want)) if got.shape == want.shape else "all"
            failures.append(f"rank {r}: {name}: {wrong} elements differ (got {got.size}, want {want.size})")

    for dtype in dtypes:
        for n in sizes:
            buf = comm.from_numpy(_data(r, n, dtype))
            want = expected(r, _even_counts(p, n), dtype)
            got = {}
            for algorithm in ENGINE_ALLTOALL_ALGORITHMS:
                got[algorithm] = alltoall(comm, buf, algorithm=algorithm)
                check(f"alltoall {algorithm} n={n} {dtype}", got[algorithm], want)
            for algorithm in ("pairwise", "bruck"):
                check(f"alltoall {algorithm} n={n} {dtype} = builtin", got[algorithm], comm.to_numpy(got["builtin"]))
            check(f"alltoall n={n} {dtype} leaves buf alone", buf, _data(r, n, dtype))
        for seed in (0, 3):
            counts = uneven_counts(p, seed) * (1 + seed * 50)  # seed 3: blocks of up to 906 elements
            buf = comm.from_numpy(_data(r, int(counts[r].sum()), dtype))
            want = expected(r, counts, dtype)
            for algorithm in ENGINE_ALLTOALL_ALGORITHMS:
                got = alltoallv(comm, buf, counts[r].tolist(), algorithm=algorithm)
                check(f"alltoallv {algorithm} seed={seed} {dtype}", got, want)
            given = alltoallv(comm, buf, counts[r].tolist(), recv_counts=counts[:, r].tolist())
            check(f"alltoallv pairwise recv_counts given seed={seed} {dtype}", given, want)
    return checks, failures


def make_comm(engine: str):
    """The world communicator of ``engine`` (as :func:`distlib.engines.selftest.make_comm`)."""
    from .selftest import make_comm as world_of

    return world_of(engine)


def main(argv=None) -> int:
    """Command line: ``--engine {mpi,gloo,nccl,gloo-numpy}``, optional ``--sizes 0,1,7`` and ``--dtypes float64,int32``."""
    parser = argparse.ArgumentParser(prog="python -m distlib.engines.alltoall_selftest",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.add_argument("--engine", choices=["mpi", "gloo", "nccl", "gloo-numpy"], default="mpi")
    parser.add_argument("--sizes", type=lambda s: [int(v) for v in s.split(",")], default=None)
    parser.add_argument("--dtypes", type=lambda s: s.split(","), default=["float64", "int32"])
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)
    comm = make_comm(ns.engine)
    checks, failures = run_checks(comm, ns.sizes, ns.dtypes)
    everyone = comm.allgather_object((checks, failures))
    total = sum(c for c, _ in everyone)
    bad = [f for _, fs in everyone for f in fs]
    if comm.rank == 0:
        print(json.dumps({"engine": comm.engine, "p": comm.size, "checks": total, "failures": bad}), flush=True)
    if bad:
        raise SystemExit(1)
    return 0


if __name__ == "__main__":
    main()
