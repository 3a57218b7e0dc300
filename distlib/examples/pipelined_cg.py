"""Classic and pipelined conjugate gradient over MPI, on a 2-D Poisson problem.

The matrix is the 5-point Laplacian on an ``n x n`` grid (Dirichlet
boundary): ``(A u)[i, j] = 4 u[i, j] - u[i-1, j] - u[i+1, j] - u[i, j-1] -
u[i, j+1]``, symmetric positive definite, ``n**2`` unknowns. Rank ``r`` owns
a block of grid rows; a matrix-vector product needs one row from each
neighbouring rank (a halo exchange), and every dot product needs a global
sum (an all-reduce), which every rank must wait for.

* **Classic CG** (Hestenes and Stiefel) needs two blocking all-reduces per
  iteration: ``p.Ap`` before the step length, ``r.r`` before the next
  direction.
* **Pipelined CG** (P. Ghysels and W. Vanroose, "Hiding global
  synchronization latency in the preconditioned conjugate gradient
  algorithm", Parallel Computing 40(7):224-238, 2014; PETSc's
  ``KSPPIPECG``) rewrites the recurrences so that one iteration needs a
  single all-reduce, of ``r.r`` and ``w.r`` together (``w = A r``), and
  starts it as a *non-blocking* ``Iallreduce``; the matrix-vector product
  ``q = A w`` runs while the sum travels. It pays with three more vector
  updates per iteration and with rounding errors that grow a little faster
  (the residual it tracks drifts from the true one).

Run it::

    mpiexec -n 2 python -m mpi4py -m distlib.examples.pipelined_cg --n 64

Rank 0 hands back a :class:`CGReport` (one report line,
:mod:`distlib.engines.report`) with, for each method (a :class:`CGRun`),
the iterations, the final residual (recursive and true), the time, and with
``--solution`` the solution itself. :func:`launch` does this from Python
through :func:`distlib.engines.run_mpi` and returns the report.

The helpers :func:`poisson_2d_dense`, :func:`row_blocks` and
:func:`apply_poisson_rows` need only NumPy.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CGRun",
    "CGReport",
    "poisson_2d_dense",
    "row_blocks",
    "apply_poisson_rows",
    "rhs",
    "classic_cg",
    "pipelined_cg",
    "main",
    "launch",
]



@dataclass(frozen=True)
class CGRun:
    """One method's fastest solve (seconds: the slowest rank's).

    ``residual`` is the recursively updated one the method stopped on,
    ``true_residual`` ``||b - A x|| / ||b||`` computed afresh; ``allreduces``
    and ``spmvs`` count the global sums and matrix-vector products;
    ``x`` the whole solution (with ``--solution``), else ``None``.
    """

    iterations: int
    residual: float
    seconds: float
    allreduces: int
    spmv_seconds: float
    spmvs: int
    true_residual: float
    seconds_per_iteration: float
    spmv_seconds_per_call: float
    x: list[float] | None = None


@dataclass(frozen=True)
class CGReport:
    """Classic and pipelined CG on one problem; ``allreduce_latency``: one all-reduce of two numbers (s)."""

    p: int
    n: int
    unknowns: int
    tol: float
    mpi: str
    classic: CGRun
    pipelined: CGRun
    allreduce_latency: float
    launch_seconds: float | None = None

    def method(self, name: str) -> CGRun:
        """``"classic"`` or ``"pipelined"``."""
        if name not in ("classic", "pipelined"):
            raise ValueError(f"name must be 'classic' or 'pipelined', got {name!r}")
        return getattr(self, name)


# ---------------------------------------------------------------------------
# the problem (NumPy only)


def poisson_2d_dense(n: int) -> np.ndarray:
    """The ``n**2 x n**2`` 5-point Laplacian as a dense array (for checking small cases).

    Examples
    --------
    >>> A = poisson_2d_dense(3)
    >>> A.shape, A[4].reshape(3, 3).tolist()      # the middle point
    ((9, 9), [[0.0, -1.0, 0.0], [-1.0, 4.0, -1.0], [0.0, -1.0, 0.0]])
    >>> bool(np.all(np.linalg.eigvalsh(A) > 0))
    True
    """
    from distlib._check import check_int

    n = check_int("n", n, minimum=1)
    T = 2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    eye = np.eye(n)
    return np.kron(T, eye) + np.kron(eye, T) + 0.0  # + 0.0 turns -0.0 into 0.0


def row_blocks(n: int, p: int) -> list:
    """``(start, stop)`` grid rows of each of ``p`` ranks, sizes differing by at most one.

    Examples
    --------
    >>> row_blocks(10, 4)
    [(0, 3), (3, 6), (6, 8), (8, 10)]
    """
    from distlib._check import check_int

    n = check_int("n", n, minimum=1)
    p = check_int("p", p, minimum=1, maximum=n)
    base, extra = divmod(n, p)
    out, start = [], 0
    for r in range(p):
        stop = start + base + (1 if r < extra else 0)
        out.append((start, stop))
        start = stop
    return out


def apply_poisson_rows(u: np.ndarray, above=None, below=None, out=None) -> np.ndarray:
    """``A u`` for a block of grid rows ``u`` (shape ``(rows, n)``), given the rows next to it.

    ``above``/``below`` are the grid rows just before and after the block
    (``None`` at the boundary, where the values are zero).

    Examples
    --------
    A 4 x 4 grid split into two blocks of two rows reproduces the dense product:

    >>> v = np.arange(16.0).reshape(4, 4)
    >>> top = apply_poisson_rows(v[:2], None, v[2])
    >>> bottom = apply_poisson_rows(v[2:], v[1], None)
    >>> bool(np.allclose(np.vstack([top, bottom]).ravel(), poisson_2d_dense(4) @ v.ravel()))
    True
    """
    y = np.multiply(u, 4.0, out=out)
    y[:, 1:] -= u[:, :-1]
    y[:, :-1] -= u[:, 1:]
    y[1:] -= u[:-1]
    y[:-1] -= u[1:]
    if above is not None:
        y[0] -= above
    if below is not None:
        y[-1] -= below
    return y


def rhs(n: int, *, seed: int = 0) -> np.ndarray:
    """The right-hand side ``b`` (shape ``(n, n)``): random, fixed by ``seed``."""
    return np.random.default_rng(seed).standard_normal((n, n))


# ---------------------------------------------------------------------------
# the distributed operator


class _Rows:
    """This rank's block of rows, and the halo exchange with its neighbours."""

    def __init__(self, comm, n):
        self.comm = comm
        self.rank, self.p = comm.Get_rank(), comm.Get_size()
        self.start, self.stop = row_blocks(n, self.p)[self.rank]
        self.n = n
        self.up = self.rank - 1 if self.rank > 0 else None
        self.down = self.rank + 1 if self.rank < self.p - 1 else None
        self.above = np.empty(n) if self.up is not None else None
        self.below = np.empty(n) if self.down is not None else None
        self.spmv_seconds = 0.0
        self.spmv_count = 0

    def apply(self, u, out):
        """``out = A u`` for this rank's rows (halo exchange, then the stencil)."""
        t0 = time.perf_counter()
        comm = self.comm
        reqs = []
        if self.up is not None:
            reqs.append(comm.Irecv(self.above, source=self.up, tag=1))
            reqs.append(comm.Isend(u[0], dest=self.up, tag=2))
        if self.down is not None:
            reqs.append(comm.Irecv(self.below, source=self.down, tag=2))
            reqs.append(comm.Isend(u[-1], dest=self.down, tag=1))
        if reqs:
            from mpi4py import MPI

            MPI.Request.Waitall(reqs)
        apply_poisson_rows(u, self.above, self.below, out=out)
        self.spmv_seconds += time.perf_counter() - t0
        self.spmv_count += 1
        return out


def _dots(comm, pairs, *, blocking=True):
    """Global dot products of several pairs, summed in one all-reduce (blocking or not)."""
    from mpi4py import MPI

    local = np.array([float(np.vdot(a, b)) for a, b in pairs])
    glob = np.empty_like(local)
    if blocking:
        comm.Allreduce(local, glob, op=MPI.SUM)
        return glob
    return glob, comm.Iallreduce(local, glob, op=MPI.SUM)


def classic_cg(comm, n, b_local, *, tol=1e-8, max_iter=10_000):
    """Hestenes-Stiefel CG on this rank's rows; two blocking all-reduces per iteration.

    Stops when ``||r|| <= tol * ||b||`` (the recursively updated residual).
    Returns ``(x_local, info)``.
    """
    op = _Rows(comm, n)
    x = np.zeros_like(b_local)
    r = b_local.copy()
    pdir = r.copy()
    q = np.empty_like(r)
    allreduces = 0
    (rr,) = _dots(comm, [(r, r)])
    bb = rr
    allreduces += 1
    it = 0
    t0 = time.perf_counter()
    while rr > tol * tol * bb and it < max_iter:
        op.apply(pdir, q)
        (pq,) = _dots(comm, [(pdir, q)])
        alpha = rr / pq
        x += alpha * pdir
        r -= alpha * q
        (rr_new,) = _dots(comm, [(r, r)])
        allreduces += 2
        pdir *= rr_new / rr
        pdir += r
        rr = rr_new
        it += 1
    seconds = time.perf_counter() - t0
    return x, {"iterations": it, "residual": float(np.sqrt(rr / bb)), "seconds": seconds,
               "allreduces": allreduces, "spmv_seconds": op.spmv_seconds, "spmvs": op.spmv_count}


def pipelined_cg(comm, n, b_local, *, tol=1e-8, max_iter=10_000):
    """Ghysels-Vanroose pipelined CG (no preconditioner) on this rank's rows.

    One non-blocking all-reduce per iteration (``gamma = r.r`` and
    ``delta = w.r`` together), overlapped with ``q = A w``. The recurrences
    are those of PETSc's ``KSPPIPECG`` with the identity as preconditioner::

        r = b - A x;  w = A r
        repeat:
            start gamma = (r, r), delta = (w, r);  q = A w;  wait
            beta = gamma / gamma_old        (0 in the first iteration)
            alpha = gamma / (delta - beta * gamma / alpha_old)
            z = q + beta z;  s = w + beta s;  p = r + beta p
            x += alpha p;  r -= alpha s;  w -= alpha z

    Stops when ``||r|| <= tol * ||b||`` (the recursively updated residual).
    Returns ``(x_local, info)``.
    """
    op = _Rows(comm, n)
    x = np.zeros_like(b_local)
    r = b_local.copy()
    w = op.apply(r, np.empty_like(r))
    q = np.empty_like(r)
    z = np.zeros_like(r)
    s = np.zeros_like(r)
    pdir = np.zeros_like(r)
    (bb,) = _dots(comm, [(b_local, b_local)])
    allreduces = 1
    alpha = gamma_old = 0.0
    it = 0
    gamma = bb
    t0 = time.perf_counter()
    while it < max_iter:
        glob, req = _dots(comm, [(r, r), (w, r)], blocking=False)
        op.apply(w, q)  # runs while the sums travel
        req.Wait()
        allreduces += 1
        gamma, delta = float(glob[0]), float(glob[1])
        if gamma <= tol * tol * bb:
            break
        if it == 0:
            beta, alpha = 0.0, gamma / delta
        else:
            beta = gamma / gamma_old
            alpha = gamma / (delta - beta * gamma / alpha)
        z *= beta
        z += q
        s *= beta
        s += w
        pdir *= beta
        pdir += r
        x += alpha * pdir
        r -= alpha * s
        w -= alpha * z
        gamma_old = gamma
        it += 1
    seconds = time.perf_counter() - t0
    return x, {"iterations": it, "residual": float(np.sqrt(gamma / bb)), "seconds": seconds,
               "allreduces": allreduces, "spmv_seconds": op.spmv_seconds, "spmvs": op.spmv_count}


def _true_residual(comm, n, b_local, x_local):
    op = _Rows(comm, n)
    r = b_local - op.apply(x_local, np.empty_like(x_local))
    rr, bb = _dots(comm, [(r, r), (b_local, b_local)])
    return float(np.sqrt(rr / bb))


def _allreduce_latency(comm, repeats=200):
    """Median time of one blocking all-reduce of two doubles (what a CG iteration waits for)."""
    from mpi4py import MPI

    a, b = np.ones(2), np.empty(2)
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        comm.Allreduce(a, b, op=MPI.SUM)
        ts.append(time.perf_counter() - t0)
    t = np.array(ts)
    comm.Allreduce(MPI.IN_PLACE, t, op=MPI.MAX)
    return float(np.median(t))


# ---------------------------------------------------------------------------
# the program


def _parser():
    ap = argparse.ArgumentParser(prog="distlib.examples.pipelined_cg", description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=64, help="grid side: n*n unknowns (default 64)")
    ap.add_argument("--tol", type=float, default=1e-8, help="relative residual to reach (default 1e-8)")
    ap.add_argument("--max-iter", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1, help="solve this many times, keep the fastest")
    ap.add_argument("--solution", action="store_true", help="gather the solutions and print them too")
    return ap


def main(argv=None) -> None:
    from mpi4py import MPI

    ns = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    comm = MPI.COMM_WORLD
    rank, p = comm.Get_rank(), comm.Get_size()
    if ns.n < p:
        raise SystemExit(f"--n ({ns.n}) must be at least the number of ranks ({p})")
    if not 0 < ns.tol < 1:
        raise SystemExit(f"--tol must be in (0, 1), got {ns.tol}")
    start, stop = row_blocks(ns.n, p)[rank]
    b_local = np.ascontiguousarray(rhs(ns.n, seed=ns.seed)[start:stop])
    out = {"p": p, "n": ns.n, "unknowns": ns.n * ns.n, "tol": ns.tol, "mpi": MPI.Get_library_version().split("\n")[0]}
    for name, solver in (("classic", classic_cg), ("pipelined", pipelined_cg)):
        best = None
        for _ in range(max(ns.repeats, 1)):
            comm.Barrier()
            x_local, info = solver(comm, ns.n, b_local, tol=ns.tol, max_iter=ns.max_iter)
            info["seconds"] = comm.allreduce(info["seconds"], op=MPI.MAX)
            if best is None or info["seconds"] < best[1]["seconds"]:
                best = (x_local, info)
        x_local, info = best
        info["true_residual"] = _true_residual(comm, ns.n, b_local, x_local)
        info["seconds_per_iteration"] = info["seconds"] / max(info["iterations"], 1)
        info["spmv_seconds_per_call"] = info["spmv_seconds"] / max(info["spmvs"], 1)
        if ns.solution:
            parts = comm.gather(x_local, root=0)
            if rank == 0:
                info["x"] = np.vstack(parts).ravel().tolist()
        out[name] = CGRun(**info)
    out["allreduce_latency"] = _allreduce_latency(comm)
    if rank == 0:
        from distlib.engines.report import emit

        emit(CGReport(**out))


def launch(p: int = 2, *, n: int = 64, tol: float = 1e-8, repeats: int = 1, solution: bool = False,
           seed: int = 0, timeout: float = 60.0) -> CGReport:
    """Run :func:`main` on ``p`` MPI ranks (``mpiexec``, bounded by ``timeout``); return rank 0's :class:`CGReport`."""
    from distlib._check import check_int, check_real
    from distlib.engines import run_mpi
    from distlib.engines.report import read

    p = check_int("p", p, minimum=1, maximum=16)
    n = check_int("n", n, minimum=p)
    tol = check_real("tol", tol, minimum=0, maximum=1, strict_min=True, strict_max=True)
    repeats = check_int("repeats", repeats, minimum=1)
    args = ["--n", n, "--tol", repr(tol), "--repeats", repeats, "--seed", seed]
    if solution:
        args.append("--solution")
    result = run_mpi("distlib.examples.pipelined_cg", p, args=[str(a) for a in args], timeout=timeout)
    return dataclasses.replace(read(result, CGReport), launch_seconds=result.seconds)


if __name__ == "__main__":
    main()
