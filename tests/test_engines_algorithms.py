"""The book's collectives on p threads (ThreadComm): laws, edge cases, deadlock freedom.

No processes are started here; the same code runs over MPI and gloo in
test_engines_mpi.py and test_engines_torch.py.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import distlib as dl
from distlib.engines import (
    ALLREDUCE_ALGORITHMS,
    Calibration,
    DeadlockError,
    allgather,
    allreduce,
    broadcast,
    calibrate,
    choose_algorithm,
    reduce,
    reduce_scatter,
    run_threads,
)
from distlib.engines.algorithms import _bounds, hierarchical_allreduce, node_groups
from distlib.engines.tuner import CANDIDATES, set_calibration
from distlib.engines.comm import ThreadComm

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _data(p, n, seed):
    return np.random.default_rng(seed).integers(-1000, 1000, size=(p, n))


@FAST
@given(p=st.integers(1, 9), n=st.integers(0, 40), seed=st.integers(0, 2**16))
def test_every_allreduce_equals_numpy_sum(p, n, seed):
    X = _data(p, n, seed)

    def work(comm):
        return {a: allreduce(comm, X[comm.rank].copy(), algorithm=a) for a in ALLREDUCE_ALGORITHMS + ("builtin",)}

    for rank_result in run_threads(work, p, timeout=5):
        for algorithm, got in rank_result.items():
            np.testing.assert_array_equal(got, X.sum(axis=0), err_msg=algorithm)


@FAST
@given(p=st.integers(1, 9), n=st.integers(0, 30), seed=st.integers(0, 2**16), op=st.sampled_from(["max", "min"]))
def test_allreduce_max_min(p, n, seed, op):
    X = _data(p, n, seed)
    want = X.max(axis=0) if op == "max" else X.min(axis=0)
    out = run_threads(lambda c: [allreduce(c, X[c.rank].copy(), op=op, algorithm=a) for a in ALLREDUCE_ALGORITHMS], p)
    for per_rank in out:
        for got in per_rank:
            np.testing.assert_array_equal(got, want)


@FAST
@given(p=st.integers(1, 9), n=st.integers(0, 30), seed=st.integers(0, 2**16))
def test_reduce_scatter_gives_rank_r_chunk_r(p, n, seed):
    X = _data(p, n, seed)
    bounds = dl.chunk_bounds(n, p)
    out = run_threads(lambda c: [reduce_scatter(c, X[c.rank], algorithm=a) for a in ("ring", "halving_doubling")], p)
    total = X.sum(axis=0)
    for r, per_rank in enumerate(out):
        for got in per_rank:
            np.testing.assert_array_equal(got, total[bounds[r] : bounds[r + 1]])


def test_reduce_scatter_leaves_input_untouched():
    X = _data(4, 10, 0)
    copies = X.copy()
    run_threads(lambda c: reduce_scatter(c, X[c.rank]), 4)
    np.testing.assert_array_equal(X, copies)


@FAST
@given(counts=st.lists(st.integers(0, 6), min_size=1, max_size=9))
def test_allgather_concatenates_uneven_pieces(counts):
    p = len(counts)
    want = np.concatenate([np.full(c, r * 10 + 1) for r, c in enumerate(counts)])

    def work(comm):
        piece = np.full(counts[comm.rank], comm.rank * 10 + 1)
        return [allgather(comm, piece, counts=counts, algorithm=a) for a in ("ring", "halving_doubling", "builtin")]

    for per_rank in run_threads(work, p):
        for got in per_rank:
            np.testing.assert_array_equal(got, want)


@FAST
@given(p=st.integers(1, 9), root=st.integers(0, 8), n=st.integers(0, 12))
def test_broadcast_and_reduce_any_root(p, root, n):
    root %= p
    X = _data(p, n, root)
    out = run_threads(lambda c: (broadcast(c, X[c.rank].copy(), root=root), reduce(c, X[c.rank].copy(), root=root)), p)
    for got_b, _ in out:
        np.testing.assert_array_equal(got_b, X[root])
    np.testing.assert_array_equal(out[root][1], X.sum(axis=0))


def test_float_results_are_bit_identical_on_every_rank():
    # Each chunk is summed on one rank and then copied, so all ranks agree bit for bit.
    X = np.random.default_rng(1).standard_normal((6, 1001))
    for algorithm in ALLREDUCE_ALGORITHMS:
        out = run_threads(lambda c, a=algorithm: allreduce(c, X[c.rank].copy(), algorithm=a), 6)
        for got in out[1:]:
            assert got.tobytes() == out[0].tobytes(), algorithm
        np.testing.assert_allclose(out[0], X.sum(axis=0), rtol=1e-12, atol=1e-12)


def test_multidimensional_buffers_are_reduced_in_place():
    out = run_threads(lambda c: allreduce(c, np.full((2, 3), c.rank + 1.0)), 3)
    assert out[0].shape == (2, 3)
    assert np.all(out[2] == 6.0)


def test_bounds_match_chunk_bounds():
    for n in range(0, 30):
        for p in range(1, 10):
            assert list(_bounds(n, p)) == dl.chunk_bounds(n, p).tolist()


# ---------------------------------------------------------------------------
# Deadlock: ThreadComm's blocking send is synchronous, like MPI_Ssend


def test_naive_ring_deadlocks_and_is_reported():
    def naive(comm):
        x, y = np.ones(3), np.empty(3)
        comm.send(x, (comm.rank + 1) % comm.size)  # everyone sends first...
        comm.recv(y, (comm.rank - 1) % comm.size)

    with pytest.raises(DeadlockError, match="deadlock|failed"):
        run_threads(naive, 3, timeout=0.5)


def test_sendrecv_ring_does_not_deadlock():
    def safe(comm):
        y = np.empty(3)
        comm.sendrecv(np.full(3, comm.rank), (comm.rank + 1) % comm.size, y, (comm.rank - 1) % comm.size)
        return y[0]

    assert run_threads(safe, 4, timeout=2) == [3, 0, 1, 2]


def test_book_algorithms_survive_synchronous_sends_at_many_sizes():
    # The schedules never rely on buffering: with synchronous sends they still finish.
    for p in (2, 3, 5, 8):
        for n in (1, p - 1, p + 1, 257):
            run_threads(lambda c, n=n: [allreduce(c, np.ones(n), algorithm=a) for a in ALLREDUCE_ALGORITHMS], p, timeout=5)


def test_a_failing_rank_fails_the_run():
    def work(comm):
        if comm.rank == 1:
            raise RuntimeError("rank 1 broke")
        comm.recv(np.empty(1), 1)

    with pytest.raises(RuntimeError, match="rank 1 broke"):
        run_threads(work, 3, timeout=5)


# ---------------------------------------------------------------------------
# Argument checks


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda c: allreduce(c, np.ones(2), algorithm="butterfly"), ValueError, "algorithm"),
        (lambda c: allreduce(c, np.ones(2), op="prod"), ValueError, "op"),
        (lambda c: allreduce(c, [1.0, 2.0]), TypeError, "NumPy array"),
        (lambda c: allreduce(c, np.ones((4, 4))[:, ::2]), ValueError, "contiguous"),
        (lambda c: broadcast(c, np.ones(2), root=5), ValueError, "root"),
        (lambda c: allgather(c, np.ones(2), counts=[2]), ValueError, "counts"),
        (lambda c: allgather(c, np.ones(2), counts=[3, 2]), ValueError, "counts"),
        (lambda c: reduce_scatter(c, np.ones(2), algorithm="tree"), ValueError, "algorithm"),
    ],
)
def test_bad_arguments_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        run_threads(call, 2)


def test_comm_must_be_a_comm():
    with pytest.raises(TypeError, match="comm"):
        allreduce("not a comm", np.ones(2))


def test_run_threads_checks_p():
    with pytest.raises(ValueError, match="p must be"):
        run_threads(lambda c: None, 0)


# ---------------------------------------------------------------------------
# auto: the tuner


def _cal(p, alpha, bandwidth):
    return Calibration("threads", p, "here", [], {}, alpha=dict(alpha), bandwidth=dict(bandwidth))


def test_tuner_picks_the_smallest_predicted_time():
    alpha = {"ring": 5e-6, "tree": 2e-6, "halving_doubling": 5e-6}
    bandwidth = dict.fromkeys(ALLREDUCE_ALGORITHMS, 1e10)
    cal = _cal(6, alpha, bandwidth)
    for n_bytes in (0, 8, 1e3, 1e5, 1e7, 1e9):
        times = {a: dl.collective_time("allreduce", n_bytes, 6, alpha=alpha[a], bandwidth=1e10, algorithm=a) for a in alpha}
        assert cal.choose(n_bytes) == min(times, key=times.get)
    assert cal.choose(8) == "tree" and cal.choose(1e9) == "ring"


def test_calibration_round_trips_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("DISTLIB_CACHE_DIR", str(tmp_path))
    sizes = (64, 4096, 65536)
    cals = run_threads(lambda c: calibrate(c, n_bytes=sizes, iters=2), 3, timeout=30)
    assert all(c.to_dict() == cals[0].to_dict() for c in cals)  # every rank holds rank 0's fit
    cal = cals[0]
    assert set(cal.alpha) == set(ALLREDUCE_ALGORITHMS) | {"builtin"}  # the engine's own is a candidate too
    assert all(a >= 0 for a in cal.alpha.values()) and all(b > 0 for b in cal.bandwidth.values())
    stored = json.loads((tmp_path / "alpha_beta.json").read_text())
    assert len(stored) == 1 and next(iter(stored.values()))["p"] == 3
    # A second calibration reads the cache instead of measuring: same numbers, same time stamp.
    again = run_threads(lambda c: calibrate(c, n_bytes=sizes), 3)[0]
    assert again.to_dict() == cal.to_dict()
    fresh = run_threads(lambda c: calibrate(c, n_bytes=sizes, iters=2, refresh=True), 3, timeout=30)[0]
    assert fresh.created >= cal.created


def test_auto_uses_the_communicators_fit(tmp_path, monkeypatch):
    monkeypatch.setenv("DISTLIB_CACHE_DIR", str(tmp_path))
    alpha = {"ring": 5e-6, "tree": 1e-9, "halving_doubling": 5e-6}
    bandwidth = {"ring": 1e10, "tree": 1e7, "halving_doubling": 1e10}  # tree: cheap steps, poor bandwidth
    cal = _cal(4, alpha, bandwidth)

    def work(comm):
        set_calibration(comm, cal)
        small = choose_algorithm(comm, 4)
        big = choose_algorithm(comm, 1 << 20)
        out = allreduce(comm, np.full(5, comm.rank + 1.0), algorithm="auto")
        return small, big, out

    for small, big, out in run_threads(work, 4):
        assert small == "tree" and big in ("ring", "halving_doubling")
        assert np.all(out == 10.0)


def test_auto_runs_the_builtin_where_the_fit_says_it_is_fastest(tmp_path, monkeypatch):
    # A fit in which the engine's own all-reduce has the lowest latency and the ring the best bandwidth:
    # small buffers go to the built-in, large ones to the ring, and auto really calls the built-in.
    monkeypatch.setenv("DISTLIB_CACHE_DIR", str(tmp_path))
    alpha = {"ring": 5e-6, "tree": 4e-6, "halving_doubling": 5e-6, "recursive_doubling": 4e-6, "builtin": 1e-6}
    bandwidth = {"ring": 1e10, "tree": 1e10, "halving_doubling": 1e10, "recursive_doubling": 1e10, "builtin": 1e9}
    cal = _cal(3, alpha, bandwidth)
    assert cal.choose(8) == "builtin" and cal.choose(2**26) == "ring"

    def work(comm):
        set_calibration(comm, cal)
        builtin_calls = []
        real = comm.allreduce

        def counting(buf, *, op="sum"):
            builtin_calls.append(len(buf))
            return real(buf, op=op)

        comm.allreduce = counting
        small = allreduce(comm, np.arange(3.0) + comm.rank, algorithm="auto")
        big = allreduce(comm, np.arange(2**24, dtype=np.float32) % 97 + comm.rank, algorithm="auto")
        return choose_algorithm(comm, 24), choose_algorithm(comm, 2**26), builtin_calls, small, big

    out = run_threads(work, 3, timeout=30)
    for small_choice, big_choice, builtin_calls, small, big in out:
        assert (small_choice, big_choice) == ("builtin", "ring")  # every rank the same
        assert builtin_calls == [3]  # the small buffer went through the built-in, the large one did not
        assert small.tolist() == [3.0, 6.0, 9.0]
        np.testing.assert_array_equal(big, 3 * (np.arange(2**24, dtype=np.float32) % 97) + 3)


def test_auto_keeps_the_builtin_unless_another_is_clearly_faster():
    # The book's pick must be expected more than BUILTIN_MARGIN faster than the built-in to replace it.
    from distlib.engines.tuner import BUILTIN_MARGIN

    for slower, want in ((1.0, "builtin"), (0.999 / (1 - BUILTIN_MARGIN), "builtin"),
                         (1.001 / (1 - BUILTIN_MARGIN), "recursive_doubling")):  # fmt: skip
        alpha = dict.fromkeys(ALLREDUCE_ALGORITHMS, 1e-3) | {"recursive_doubling": 1e-6, "builtin": 1e-6}
        cal = _cal(2, alpha, dict.fromkeys(CANDIDATES, 1e18))
        cal.alpha["builtin"] *= slower * cal.predict("recursive_doubling", 8) / cal.predict("builtin", 8)
        assert cal.predict("builtin", 8) == pytest.approx(slower * cal.predict("recursive_doubling", 8))
        assert cal.choose(8) == want, slower


def test_auto_follows_the_measurements_where_a_straight_line_cannot():
    # A built-in that switches algorithms inside: fast up to 1 MiB, four times slower per byte past it.
    # One alpha-beta line cannot follow that; expected() goes through the measured times themselves.
    sizes = [8, 1024, 2**17, 2**20, 2**23, 2**25]
    ring = [10e-6 + n / 4e9 for n in sizes]
    builtin = [5e-6 + n / 5e9 if n <= 2**20 else 5e-6 + 2**20 / 5e9 + (n - 2**20) / 1.25e9 for n in sizes]
    seconds = {a: [t * 2 for t in ring] for a in ALLREDUCE_ALGORITHMS} | {"ring": ring, "builtin": builtin}
    alpha, bandwidth = {}, {}
    for a, t in seconds.items():
        alpha[a], bandwidth[a] = dl.fit_alpha_beta(sizes, t, p=2, algorithm="ring" if a == "builtin" else a)
    cal = Calibration("threads", 2, "here", sizes, seconds, alpha, bandwidth)
    for n, r, b in zip(sizes, ring, builtin):
        assert cal.expected("ring", n) == pytest.approx(r) and cal.expected("builtin", n) == pytest.approx(b)
        assert cal.choose(n) == ("builtin" if b <= r else "ring"), n
    assert cal.choose(2**28) == "ring" and cal.choose(2**10) == "builtin"
    assert cal.choose(2**19) == "builtin" and cal.choose(2**24) == "ring"  # between them: the ratios, interpolated


@FAST
@given(p=st.integers(1, 7), n=st.integers(1, 60), seg=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_the_ring_in_pieces_gives_the_same_bits(p, n, seg, seed):
    # Floats whose sum depends on the order of the additions: the segmented reduce-scatter (MPIComm's
    # large-buffer path) must add the same numbers in the same order as whole chunks do.
    scale = (10.0 ** (np.arange(n) % 7 - 3)).astype(np.float32)  # magnitudes 1e-3 .. 1e3: rounding shows
    X = np.random.default_rng(seed).standard_normal((p, n)).astype(np.float32) * scale

    def work(comm, segment):
        comm.ring_segment_bytes = segment
        x = X[comm.rank].copy()
        out = allreduce(comm, x, algorithm="ring")
        rs = reduce_scatter(comm, X[comm.rank].copy(), algorithm="ring")
        return out, rs

    whole = run_threads(work, p, None, timeout=10)
    pieces = run_threads(work, p, seg * 4, timeout=10)
    for (w, wrs), (g, grs) in zip(whole, pieces):
        assert g.tobytes() == w.tobytes() and grs.tobytes() == wrs.tobytes()


@FAST
@given(p=st.integers(1, 12), n=st.integers(1, 50), seed=st.integers(0, 2**16))
def test_recursive_doubling_gives_every_rank_the_same_bits(p, n, seed):
    # Floats, where the order of additions matters: partners always add the
    # same two partial sums, so no rank may differ from another in any bit.
    X = np.random.default_rng(seed).standard_normal((p, n)).astype(np.float32)
    out = run_threads(lambda c: allreduce(c, X[c.rank].copy(), algorithm="recursive_doubling"), p, timeout=5)
    for got in out:
        assert got.tobytes() == out[0].tobytes()
    np.testing.assert_allclose(out[0], X.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-5 * p)


def test_recursive_doubling_sends_one_whole_buffer_per_round():
    # p = 8: three swaps of all 10 elements, no other message.
    sent = run_threads(lambda c: _count_sendrecv(c, 8), 8)
    assert sent == [[10, 10, 10]] * 8
    # p = 6: ranks 0, 2 fold into 1, 3 (one whole message each way), the
    # 4 survivors swap twice.
    sent = run_threads(lambda c: _count_sendrecv(c, 6), 6)
    assert sent[1] == [10, 10] and sent[0] == []


def _count_sendrecv(comm, p):
    sizes = []
    real = comm.sendrecv

    def counting(sendbuf, dest, recvbuf, source, **kw):
        sizes.append(len(sendbuf))
        return real(sendbuf, dest, recvbuf, source, **kw)

    comm.sendrecv = counting
    allreduce(comm, np.ones(10), algorithm="recursive_doubling")
    return sizes


def test_a_cached_fit_without_a_current_algorithm_is_measured_again(tmp_path, monkeypatch):
    monkeypatch.setenv("DISTLIB_CACHE_DIR", str(tmp_path))
    from distlib.engines import tuner

    old = _cal(2, {"ring": 1e-6, "tree": 1e-6, "halving_doubling": 1e-6}, dict.fromkeys(("ring", "tree", "halving_doubling"), 1e9))
    tuner._save(tuner._key("threads", 2), old)
    assert tuner._load(tuner._key("threads", 2)) is None  # written before recursive doubling existed
    no_builtin = _cal(2, dict.fromkeys(ALLREDUCE_ALGORITHMS, 1e-6), dict.fromkeys(ALLREDUCE_ALGORITHMS, 1e9))
    tuner._save(tuner._key("threads", 2), no_builtin)
    assert tuner._load(tuner._key("threads", 2)) is None  # written before the built-in was a candidate
    full = _cal(2, dict.fromkeys(CANDIDATES, 1e-6), dict.fromkeys(CANDIDATES, 1e9))
    tuner._save(tuner._key("threads", 2), full)
    assert tuner._load(tuner._key("threads", 2)).to_dict() == full.to_dict()


def test_calibrate_rejects_too_few_sizes():
    with pytest.raises(ValueError, match="n_bytes"):
        run_threads(lambda c: calibrate(c, n_bytes=[64], cache=False), 2)


# ---------------------------------------------------------------------------
# Engines stay lazy


def test_importing_engines_imports_neither_mpi4py_nor_torch():
    code = (
        "import sys, distlib, distlib.engines, distlib.engines.mpi, distlib.engines.torch_dist, distlib.bench; "
        "import distlib.examples.mpi_train, distlib.examples.torch_ddp; "
        "print(sorted(m for m in ('mpi4py', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "module, call, hint",
    [
        ("mpi4py", "from distlib.engines.mpi import world; world()", "pip install mpi4py mpich"),
        ("torch", "from distlib.engines.torch_dist import init; init('gloo')", "pip install torch"),
    ],
)
def test_missing_engine_says_what_to_install(module, call, hint):
    code = f"import sys; sys.modules[{module!r}] = None\ntry:\n    {call}\nexcept ImportError as e:\n    print(e)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert hint in out.stdout


def test_thread_comm_is_a_comm():
    comm = run_threads(lambda c: c, 2)[0]
    assert isinstance(comm, ThreadComm) and comm.engine == "threads" and "rank=0" in repr(comm)


def test_calibration_with_an_infinite_fitted_bandwidth_still_predicts():
    """A fit whose per-byte slope is zero returns bandwidth=inf; 'auto' must
    still choose (and a cached fit like that must not break later runs)."""
    cal = Calibration("threads", 2, "here", [], {}, alpha={"ring": 5e-6, "tree": 3e-6, "halving_doubling": 4e-6},
                      bandwidth={"ring": 1e9, "tree": 1e9, "halving_doubling": float("inf")})
    t = cal.predict("halving_doubling", 2**20)
    assert 0 < t < 1e-3
    assert cal.choose(2**24) == "halving_doubling"


def test_scratch_views_follow_the_buffer_when_it_grows():
    comm = ThreadComm.__new__(ThreadComm)  # only the buffer helpers are used here
    like = np.zeros(1, np.float32)
    a = comm.scratch(4, like)
    assert comm.scratch(4, like) is a  # the same request hands back the same view
    big = comm.scratch(100, like)  # grows the buffer: older views must not be reused
    small = comm.scratch(4, like)
    assert len(small) == 4 and np.shares_memory(small, big) and not np.shares_memory(small, a)
    other = comm.scratch(4, np.zeros(1, np.float64))  # another dtype, another buffer
    assert other.dtype == np.float64 and not np.shares_memory(other, small)
    comm.free_scratch()
    assert not np.shares_memory(comm.scratch(4, like), big)


def test_recursive_doubling_reuses_its_plan_only_for_the_same_buffer_kind():
    # The communicator remembers the fold and scratch of the last size: calls
    # of other sizes, dtypes and algorithms in between must not confuse it.
    calls = [(5, np.float64, "recursive_doubling"), (7, np.float64, "recursive_doubling"),
             (7, np.float64, "ring"), (5, np.int32, "recursive_doubling"), (5, np.float64, "recursive_doubling"),
             (1000, np.float64, "recursive_doubling"), (5, np.float64, "recursive_doubling")]  # fmt: skip

    def work(comm):
        out = []
        for n, dtype, algorithm in calls:
            x = (np.arange(n) + comm.rank).astype(dtype)
            out.append(allreduce(comm, x, algorithm=algorithm))
        return out

    for per_rank in run_threads(work, 3):
        for (n, dtype, algorithm), got in zip(calls, per_rank):
            assert got.dtype == dtype and got.tolist() == (3 * np.arange(n) + 3).tolist(), (n, dtype, algorithm)


def test_no_import_circle_and_no_state_on_the_communicator(tmp_path, monkeypatch):
    # algorithms must not import tuner or timing (tuner -> timing -> algorithms is the one direction)
    import ast
    from pathlib import Path

    import distlib.engines.algorithms as algorithms_module

    tree = ast.parse(Path(algorithms_module.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    assert not imported & {"tuner", "timing"}, imported
    # auto and recursive doubling keep what they remember with their own modules, not on the Comm
    monkeypatch.setenv("DISTLIB_CACHE_DIR", str(tmp_path))
    cal = _cal(2, {"ring": 5e-6, "tree": 1e-9, "halving_doubling": 5e-6}, {"ring": 1e10, "tree": 1e7, "halving_doubling": 1e10})

    def work(comm):
        set_calibration(comm, cal)
        allreduce(comm, np.ones(3), algorithm="auto")
        allreduce(comm, np.ones(3), algorithm="recursive_doubling")
        return sorted(k for k in comm.__dict__ if k not in ("rank", "size", "_world") and not k.startswith("_scratch"))

    for keys in run_threads(work, 2):
        assert keys == [], keys


# ----------------------------------------------------------------------------
# CountingComm: the bytes a rank sends, counted where the collectives send them
# ----------------------------------------------------------------------------


@FAST
@given(p=st.integers(1, 7), n=st.integers(0, 40))
def test_counting_comm_counts_what_the_ring_sends(p, n):
    from distlib.engines.comm import CountingComm, SubComm

    def work(comm):
        counted = CountingComm(comm)
        x = np.arange(n, dtype=np.float64) + comm.rank
        out = {}
        for name, run in (("allreduce", lambda: allreduce(counted, x.copy())),
                          ("reduce_scatter", lambda: reduce_scatter(counted, x)),
                          ("allgather", lambda: allgather(counted, x))):  # fmt: skip
            before = counted.bytes_sent
            got = run()
            out[name] = (counted.bytes_sent - before, got)
        before = counted.bytes_sent  # a sub-communicator's bytes land in the counter under it
        evens = [r for r in range(comm.size) if r % 2 == comm.rank % 2]
        allreduce(SubComm(counted, evens), x.copy())
        out["sub"] = (counted.bytes_sent - before, len(evens))
        return out

    out = run_threads(work, p, timeout=10)
    X = np.arange(n, dtype=np.float64)[None, :] + np.arange(p)[:, None]
    np.testing.assert_array_equal(out[0]["allreduce"][1], X.sum(axis=0))  # counting changes no result
    # Every element is sent p - 1 times in each ring phase, once around the ring in all.
    assert sum(o["allreduce"][0] for o in out) == 2 * (p - 1) * n * 8
    assert sum(o["reduce_scatter"][0] for o in out) == (p - 1) * n * 8
    assert sum(o["allgather"][0] for o in out) == (p - 1) * p * n * 8  # each of p pieces of n, p - 1 hops
    # Per rank, the alpha-beta bytes factor of distlib.collectives, up to one chunk's rounding.
    for o in out:
        _, factor = dl.cost_coefficients("allreduce", p)
        assert abs(o["allreduce"][0] - factor * n * 8) <= 2 * (p - 1) * 8
    sizes = {}
    for r, o in enumerate(out):
        sizes.setdefault(r % 2, o["sub"])
    for parity, (_, q) in sizes.items():
        assert sum(o["sub"][0] for r, o in enumerate(out) if r % 2 == parity) == 2 * (q - 1) * n * 8


def test_counting_comm_wants_a_comm():
    from distlib.engines.comm import CountingComm

    with pytest.raises(TypeError, match="comm must be a distlib.engines Comm"):
        CountingComm(object())


@given(p=st.integers(1, 5), calls=st.lists(st.sampled_from(["allreduce", "reduce_scatter", "allgather"]), max_size=6))
@settings(max_examples=15, deadline=None)
def test_counting_comm_counts_each_collective_by_kind_through_sub_communicators(p, calls):
    from distlib.engines.comm import CountingComm, SubComm

    def work(comm):
        outer = CountingComm(CountingComm(comm))  # a counter around a counter: both count
        for name in calls:
            {"allreduce": allreduce, "reduce_scatter": reduce_scatter, "allgather": allgather}[name](
                SubComm(outer, list(range(comm.size))), np.ones(3))  # fmt: skip
        return outer.collectives, outer.inner.collectives

    want = {name: calls.count(name) for name in calls} if p > 1 else {}  # one rank talks to nobody: no collective
    assert run_threads(work, p, timeout=10) == [(want, want)] * p
