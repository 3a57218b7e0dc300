"""Classic and pipelined CG over MPI converge to the true solution, on 1, 2 and 4 ranks."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distlib.examples import pipelined_cg as pcg

N = 10  # a 10 x 10 grid: 100 unknowns, solved directly by numpy for the reference


@pytest.fixture(scope="module")
def exact():
    A = pcg.poisson_2d_dense(N)
    return np.linalg.solve(A, pcg.rhs(N, seed=3).ravel())


@pytest.mark.engines
@pytest.mark.parametrize("p", [1, 2, 4])
def test_both_methods_reach_the_true_solution(p, exact):
    pytest.importorskip("mpi4py")
    out = pcg.launch(p, n=N, tol=1e-10, seed=3, solution=True, timeout=60)
    assert isinstance(out, pcg.CGReport) and out.p == p and out.unknowns == N * N and out.launch_seconds > 0
    classic, piped = out.classic, out.pipelined
    assert out.method("pipelined") is piped and isinstance(classic, pcg.CGRun)
    for info in (classic, piped):
        x = np.asarray(info.x)
        assert np.linalg.norm(x - exact) <= 1e-8 * np.linalg.norm(exact)
        assert info.residual <= 1e-10  # the recursively updated residual met the tolerance
        assert info.true_residual <= 1e-9  # and the true one b - A x is close behind
        assert info.iterations > 5  # it did iterate: the starting guess x = 0 is far off
    assert abs(classic.iterations - piped.iterations) <= 3
    # two blocking all-reduces per classic iteration, one non-blocking per pipelined one
    assert classic.allreduces == 2 * classic.iterations + 1
    assert piped.allreduces == piped.iterations + 2
    # the pipelined method does one more matrix-vector product to start (w = A r)
    assert piped.spmvs == piped.iterations + 2
    assert classic.spmvs == classic.iterations
    assert classic.seconds_per_iteration == pytest.approx(classic.seconds / classic.iterations)


def test_a_report_without_the_solution_holds_none():
    run = pcg.CGRun(3, 1e-9, 1e-3, 7, 1e-4, 3, 2e-9, 3e-4, 3e-5)
    assert run.x is None
    with pytest.raises(ValueError, match="'classic' or 'pipelined'"):
        pcg.CGReport(2, 8, 64, 1e-8, "MPICH", run, run, 1e-5).method("fast")


def test_launch_checks_arguments_before_starting_anything():
    with pytest.raises(ValueError, match="n must be"):
        pcg.launch(4, n=2)
    with pytest.raises(ValueError, match="tol"):
        pcg.launch(2, n=8, tol=0.0)


# --- the NumPy side: the matrix, the row blocks, the local stencil -----------


def test_dense_matrix_is_the_5_point_laplacian():
    A = pcg.poisson_2d_dense(4)
    assert np.array_equal(A, A.T)
    assert np.all(np.diag(A) == 4)
    assert np.all(A.sum(axis=1) >= 0) and A.sum() == 4 * 4 * 4 - 2 * (2 * 4 * 3)  # 4 n^2 - 2 * (edges)
    eig = np.linalg.eigvalsh(A)
    k = np.arange(1, 5)
    lam1 = 2 - 2 * np.cos(k * np.pi / 5)  # 1-D eigenvalues; 2-D ones are their pairwise sums
    np.testing.assert_allclose(np.sort(eig), np.sort(np.add.outer(lam1, lam1).ravel()), atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40))
def test_row_blocks_cover_the_grid_evenly(n, p):
    if p > n:
        with pytest.raises(ValueError, match="p must be"):
            pcg.row_blocks(n, p)
        return
    blocks = pcg.row_blocks(n, p)
    assert blocks[0][0] == 0 and blocks[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
    sizes = [b - a for a, b in blocks]
    assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(0, 2**31 - 1))
def test_blockwise_stencil_equals_the_dense_product(n, p, seed):
    p = min(p, n)
    u = np.random.default_rng(seed).standard_normal((n, n))
    parts = []
    for start, stop in pcg.row_blocks(n, p):
        above = u[start - 1] if start > 0 else None
        below = u[stop] if stop < n else None
        parts.append(pcg.apply_poisson_rows(u[start:stop], above, below))
    np.testing.assert_allclose(np.vstack(parts).ravel(), pcg.poisson_2d_dense(n) @ u.ravel(), atol=1e-12)
