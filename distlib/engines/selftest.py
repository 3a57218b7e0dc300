"""Check every book collective against the engine's built-in one, on real processes.

Run on any engine; each rank checks its own results and rank 0 prints one
JSON summary line (``{"engine", "p", "checks", "failures"}``)::

    mpiexec -n 5 python -m mpi4py -m distlib.engines.selftest --engine mpi
    python -c "import distlib.engines as e; print(e.run_torch('distlib.engines.selftest:main', 3, args=['--engine', 'gloo']))"

The data are small integers (``x[i] = i % 7 + rank``), so every sum is
exact in floating point and a result either matches the closed form and the
built-in bit for bit or is wrong. Exits with status 1 if any check fails.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from ..collectives import ENGINE_SCATTER_GATHER_ALGORITHMS
from ..ring import chunk_bounds
from .algorithms import ALLREDUCE_ALGORITHMS, allgather, allreduce, broadcast, reduce, reduce_scatter

__all__ = ["main", "run_checks", "default_sizes"]


def default_sizes(p: int) -> list:
    """Buffer lengths that exercise every edge: empty, shorter than ``p``, uneven, large."""
    return sorted({0, 1, 2, max(p - 1, 0), p, p + 1, 2 * p + 3, 13, 1000, 65_537})


def make_comm(engine: str):
    """The world communicator of ``engine`` (``"mpi"``, ``"gloo"``, ``"nccl"``, or ``"gloo-numpy"``: NumPy
    buffers over gloo, :class:`~distlib.engines.torch_numpy.NumpyTorchComm`)."""
    if engine == "mpi":
        from .mpi import world

        return world()
    if engine == "gloo-numpy":
        from .torch_numpy import numpy_world

        return numpy_world()
    from .torch_dist import init

    return init(engine)


def run_checks(comm, sizes=None, dtypes=("float64", "int32")) -> tuple:
    """Run every check on this rank; returns ``(n_checks, failures)``."""
    p, r = comm.size, comm.rank
    make, back = comm.from_numpy, comm.to_numpy
    sizes = default_sizes(p) if sizes is None else sizes
    failures, checks = [], 0

    def check(name, got, want):
        nonlocal checks
        checks += 1
        got = back(got)
        if got.shape != want.shape or not np.array_equal(got, want):
            failures.append(f"rank {r}: {name}")

    for dtype in dtypes:
        for n in sizes:
            i = np.arange(n) % 7
            mine = (i + r).astype(dtype)
            total = (p * i + p * (p - 1) // 2).astype(dtype)
            tag = f"{dtype} n={n}"
            builtin = comm.allreduce(make(mine))
            check(f"builtin allreduce {tag}", builtin, total)
            for algorithm in ALLREDUCE_ALGORITHMS:
                out = allreduce(comm, make(mine), algorithm=algorithm)
                check(f"{algorithm} allreduce {tag}", out, back(builtin))
            out = allreduce(comm, make(mine), op="max", algorithm="ring")
            check(f"ring allreduce max {tag}", out, (i + p - 1).astype(dtype))
            bounds = chunk_bounds(n, p)
            want = total[bounds[r] : bounds[r + 1]]
            for algorithm in ENGINE_SCATTER_GATHER_ALGORITHMS:
                try:
                    out = reduce_scatter(comm, make(mine), algorithm=algorithm)
                except NotImplementedError:
                    continue
                check(f"{algorithm} reduce_scatter {tag}", out, want)
            counts = [(n + 3 * q) % (p + 2) for q in range(p)]  # uneven, some empty
            piece = np.full(counts[r], r + 1, dtype=dtype)
            want = np.repeat(np.arange(1, p + 1), counts).astype(dtype)
            for algorithm in ENGINE_SCATTER_GATHER_ALGORITHMS:
                out = allgather(comm, make(piece), counts=counts, algorithm=algorithm)
                check(f"{algorithm} allgather {tag}", out, want)
            out = broadcast(comm, make(mine), root=p - 1)
            check(f"tree broadcast {tag}", out, (i + p - 1).astype(dtype))
            out = reduce(comm, make(mine), root=p // 2)
            if r == p // 2:
                check(f"tree reduce {tag}", out, total)
    return checks, failures


def main(argv=None) -> int:
    """Command line: ``--engine {mpi,gloo,nccl,gloo-numpy}``, optional ``--sizes 0,1,7`` and ``--dtypes float64,int32``."""
    parser = argparse.ArgumentParser(prog="python -m distlib.engines.selftest", description=__doc__.splitlines()[0])
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
