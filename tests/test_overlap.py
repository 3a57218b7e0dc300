"""Communication hiding: the one-channel schedule, its closed forms, DDP buckets."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distlib as dl
from distlib.cluster import ring_allreduce_time
from distlib.overlap import EMBEDDING_FRACTION

times = st.floats(min_value=0.0, max_value=10.0, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-3, max_value=10.0)


@st.composite
def layers(draw, min_size=1, max_size=12):
    n = draw(st.integers(min_size, max_size))
    b = draw(st.lists(times, min_size=n, max_size=n))
    c = draw(st.lists(times, min_size=n, max_size=n))
    f = draw(times)
    return b, c, f


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


# --- known cases ------------------------------------------------------------


def test_every_allreduce_fits_only_the_last_is_exposed():
    t = dl.overlap_timeline([1, 1, 1], [0.5, 0.5, 0.5], forward_time=2)
    assert t.iteration_time == 5.5
    assert t.exposed_comm == 0.5
    assert t.comm_start.tolist() == [3.0, 4.0, 5.0]
    assert t.no_overlap_time == 6.5
    assert t.speedup == pytest.approx(6.5 / 5.5)
    assert not t.backed_up


def test_queue_backs_up_when_allreduces_outlast_the_layers():
    t = dl.overlap_timeline([1, 1, 1], [2, 2, 2])
    assert t.comm_start.tolist() == [1.0, 3.0, 5.0]
    assert t.comm_end.tolist() == [3.0, 5.0, 7.0]
    assert t.queue_delay.tolist() == [0.0, 1.0, 2.0]
    assert t.backed_up
    assert t.iteration_time == 7.0  # b[0] + C
    assert t.exposed_comm == 4.0


def test_seed_formula_is_wrong_and_the_corrected_one_is_right():
    # The seed's layer-wise formula, T = B + max(0, T_AR^1 - sum_{l>=2} T_bwd^l),
    # predicts full hiding (T = B = 3) here; layer 1 finishes backward last, so
    # its all-reduce starts at 3 and the step takes 3.5.
    b, c = [1, 1, 1], [0.5, 0.5, 0.5]
    seed = sum(b) + max(0.0, c[-1] - sum(b[:-1]))
    assert seed == 3.0
    assert dl.overlap_timeline(b, c).iteration_time == 3.5
    assert dl.layerwise_closed_form(b, c) == 3.5


def test_long_first_ready_allreduce_sets_the_step():
    t = dl.overlap_timeline([1, 1, 1], [5, 0, 0])
    assert t.iteration_time == 6.0
    assert dl.layerwise_exact_time([1, 1, 1], [5, 0, 0]) == 6.0
    assert not dl.no_backup([1, 1, 1], [5, 0, 0])


def test_events_describe_every_interval():
    t = dl.overlap_timeline([1, 2], [0.5, 0.25], forward_time=1, labels=["top", "bottom"])
    ev = t.events
    assert [(e.kind, e.label, e.start, e.end) for e in ev] == [
        ("forward", "forward", 0.0, 1.0),
        ("backward", "top", 1.0, 2.0),
        ("backward", "bottom", 2.0, 4.0),
        ("comm", "all-reduce top", 2.0, 2.5),
        ("comm", "all-reduce bottom", 4.0, 4.25),
    ]
    assert [e.row for e in ev] == ["compute"] * 3 + ["comm"] * 2
    assert t.exposed_interval == (4.0, 4.25)


def test_speedup_bound_closed_form():
    assert dl.overlap_speedup_bound(45, 30) == pytest.approx(75 / 45)
    assert dl.overlap_speedup_bound(3, 3) == 2.0
    assert dl.overlap_speedup_bound(0, 0) == 1.0
    assert dl.overlap_speedup_bound(1, 1000) == pytest.approx(1.001)


# --- laws -------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(layers())
def test_timeline_bounds_and_exact_closed_form(args):
    b, c, f = args
    t = dl.overlap_timeline(b, c, forward_time=f)
    T = t.iteration_time
    B, C = math.fsum(b), math.fsum(c)
    assert T >= f + B - 1e-9
    assert T >= f + C - 1e-9
    assert T >= t.lower_bound - 1e-9  # F + max(B + c[-1], b[0] + C)
    assert T <= f + B + C + 1e-9
    assert close(T, dl.layerwise_exact_time(b, c, forward_time=f))
    assert -1e-9 <= t.exposed_comm <= C + 1e-9
    assert t.exposed_comm >= c[-1] - 1e-9  # the last gradient's all-reduce never hides
    assert close(t.hidden_comm, C - t.exposed_comm) or t.exposed_comm > C
    assert close(t.hidden_fraction * C, t.hidden_comm) or C == 0
    assert t.speedup <= dl.overlap_speedup_bound(f + B, C) + 1e-9 <= 2 + 2e-9


@settings(max_examples=80, deadline=None)
@given(layers())
def test_no_overlap_mode_is_sequential(args):
    b, c, f = args
    t = dl.overlap_timeline(b, c, forward_time=f, overlap=False)
    assert close(t.iteration_time, f + math.fsum(b) + math.fsum(c))
    assert close(t.iteration_time, t.no_overlap_time)
    assert close(t.exposed_comm, math.fsum(c))
    assert dl.overlap_timeline(b, c, forward_time=f).iteration_time <= t.iteration_time + 1e-9


@settings(max_examples=80, deadline=None)
@given(layers(), st.data())
def test_closed_form_when_communication_fits(args, data):
    b, _, f = args
    # every all-reduce but the last fits inside the next layer's backward
    fracs = data.draw(st.lists(st.floats(0, 1), min_size=len(b), max_size=len(b)))
    c = [fr * nxt for fr, nxt in zip(fracs, b[1:])] + [data.draw(times)]
    assert dl.no_backup(b, c)
    t = dl.overlap_timeline(b, c, forward_time=f)
    assert close(t.iteration_time, dl.layerwise_closed_form(b, c, forward_time=f))
    assert close(t.exposed_comm, c[-1])
    np.testing.assert_allclose(t.queue_delay, 0, atol=1e-9)


@settings(max_examples=80, deadline=None)
@given(layers(), st.data())
def test_closed_form_is_a_lower_bound_and_exact_iff_last_does_not_wait(args, data):
    b, c, f = args
    t = dl.overlap_timeline(b, c, forward_time=f)
    cf = dl.layerwise_closed_form(b, c, forward_time=f)
    assert t.iteration_time >= cf - 1e-9
    if t.queue_delay[-1] <= 1e-12:
        assert close(t.iteration_time, cf)
    else:
        assert t.iteration_time > cf


@settings(max_examples=80, deadline=None)
@given(layers(), st.data())
def test_monotonic_in_comm_and_backward_times(args, data):
    b, c, f = args
    i = data.draw(st.integers(0, len(b) - 1))
    extra = data.draw(positive)
    base = dl.overlap_timeline(b, c, forward_time=f).iteration_time
    c2 = list(c)
    c2[i] += extra
    assert dl.overlap_timeline(b, c2, forward_time=f).iteration_time >= base - 1e-9
    b2 = list(b)
    b2[i] += extra
    assert dl.overlap_timeline(b2, c, forward_time=f).iteration_time >= base - 1e-9


@settings(max_examples=100, deadline=None)
@given(layers())
def test_schedule_respects_readiness_and_one_channel(args):
    b, c, f = args
    t = dl.overlap_timeline(b, c, forward_time=f)
    layer_end = f + np.cumsum(b)
    np.testing.assert_allclose(t.ready, layer_end)
    assert np.all(t.comm_start >= t.ready - 1e-12)
    assert np.all(t.comm_start[1:] >= t.comm_end[:-1] - 1e-12)  # one at a time, in ready order
    # work-conserving: a message waits only while the channel is busy
    waited = t.queue_delay > 0
    np.testing.assert_allclose(t.comm_start[1:][waited[1:]], t.comm_end[:-1][waited[1:]])
    assert t.queue_delay[0] == 0


# --- buckets ----------------------------------------------------------------

byte_lists = st.lists(st.integers(0, 400).map(lambda k: 4.0 * k), min_size=1, max_size=30)
caps = st.integers(1, 1200).map(float)


@settings(max_examples=100, deadline=None)
@given(byte_lists, caps, st.sampled_from(["ddp", "fit"]), st.one_of(st.none(), caps))
def test_buckets_conserve_bytes_and_order(g, cap, rule, first):
    buckets = dl.bucket_gradients(g, bucket_bytes=cap, first_bucket_bytes=first, rule=rule)
    assert [i for bk in buckets for i in bk.layers] == list(range(len(g)))
    assert math.isclose(sum(bk.n_bytes for bk in buckets), sum(g))
    assert [bk.index for bk in buckets] == list(range(len(buckets)))
    for bk in buckets:
        assert bk.layers and math.isclose(bk.n_bytes, sum(g[i] for i in bk.layers))
    assert buckets[0].capacity == (cap if first is None else first)
    for bk, nxt in zip(buckets[:-1], buckets[1:]):
        if rule == "ddp":  # closed as soon as it reached capacity, not before
            assert bk.n_bytes >= bk.capacity
            assert bk.n_bytes - g[bk.layers[-1]] < bk.capacity
        else:  # closed only when the next gradient would overflow it
            assert bk.n_bytes + g[nxt.layers[0]] > bk.capacity
    if rule == "fit":
        assert all(bk.n_bytes <= bk.capacity or len(bk.layers) == 1 for bk in buckets)


@settings(max_examples=25, deadline=None)
@given(byte_lists.filter(lambda g: min(g) > 0), caps, st.one_of(st.none(), caps))
def test_ddp_rule_matches_pytorch(g, cap, first):
    torch = pytest.importorskip("torch")
    dist = pytest.importorskip("torch.distributed")
    if not hasattr(dist, "_compute_bucket_assignment_by_size"):
        pytest.skip("this torch build has no DDP bucket assignment")
    tensors = [torch.empty(int(x) // 4, dtype=torch.float32) for x in g]
    limits = [int(cap)] if first is None else [int(first), int(cap)]
    expected, _ = dist._compute_bucket_assignment_by_size(tensors, limits, [False] * len(tensors))
    got = dl.bucket_gradients(g, bucket_bytes=cap, first_bucket_bytes=first)
    assert [list(bk.layers) for bk in got] == [list(e) for e in expected]


def test_pytorch_defaults():
    assert dl.DDP_BUCKET_BYTES == 25 * 1024 * 1024
    assert dl.DDP_FIRST_BUCKET_BYTES == 1024 * 1024
    dist = pytest.importorskip("torch.distributed")
    if hasattr(dist, "_DEFAULT_FIRST_BUCKET_BYTES"):
        assert dist._DEFAULT_FIRST_BUCKET_BYTES == dl.DDP_FIRST_BUCKET_BYTES


# --- DDP step -----------------------------------------------------------------


def test_ddp_bucket_times_follow_the_ring_model():
    g = [3e7, 1e7, 4e7, 2e7, 5e7]
    s = dl.ddp_step([1e-3] * 5, g, bucket_bytes=4e7, alpha=2e-5, bandwidth=5e10, p=16, forward_time=2e-3)
    assert [bk.layers for bk in s.buckets] == [(0, 1), (2,), (3, 4)]
    want = [2 * 15 * 2e-5 + 2 * 15 / 16 * n / 5e10 for n in (4e7, 4e7, 7e7)]
    np.testing.assert_allclose(s.bucket_comm_times, want, rtol=1e-12)
    np.testing.assert_allclose(s.timeline.ready, [4e-3, 5e-3, 7e-3], rtol=1e-12)
    # the model simulates the same queue overlap_timeline does
    want_T = dl.layerwise_exact_time([2e-3, 1e-3, 2e-3], want, forward_time=2e-3)
    assert s.iteration_time == pytest.approx(want_T, rel=1e-12)


def test_ddp_one_bucket_and_one_rank():
    b, g = [0.01] * 6, [1e8] * 6
    s = dl.ddp_step(b, g, bucket_bytes=1e12, alpha=1e-5, bandwidth=1e11, p=8, forward_time=0.03)
    assert s.n_buckets == 1
    assert s.iteration_time == pytest.approx(0.09 + ring_allreduce_time(6e8, 8, bandwidth=1e11, alpha=1e-5))
    s1 = dl.ddp_step(b, g, bucket_bytes=1e8, alpha=1e-5, bandwidth=1e11, p=1)
    assert s1.exposed_comm == 0 and s1.iteration_time == pytest.approx(0.06)


def test_ddp_no_overlap_and_first_bucket():
    b, g = [0.01] * 4, [1e8] * 4
    kw = dict(alpha=1e-5, bandwidth=1e11, p=8)
    s = dl.ddp_step(b, g, bucket_bytes=1e8, overlap=False, **kw)
    assert s.iteration_time == pytest.approx(s.no_overlap_time)
    assert s.speedup == pytest.approx(1.0)
    s = dl.ddp_step(b, g, bucket_bytes=3e8, first_bucket_bytes=1e8, **kw)
    assert [bk.layers for bk in s.buckets] == [(0,), (1, 2, 3)]


def test_bucket_sweep_trades_latency_against_early_start():
    b, g = [0.01] * 8, [1e8] * 8
    sw = dl.bucket_sweep(b, g, alpha=1e-3, bandwidth=1e11, p=8, bucket_bytes=[1e8, 2e8, 4e8, 8e8])
    assert sw.n_buckets.tolist() == [8, 4, 2, 1]
    # 8 buckets: 8 * (14 ms latency + 1.75 ms) back to back after the first layer
    assert sw.iteration_time[0] == pytest.approx(0.01 + 8 * 0.01575)
    assert sw.best_bucket_bytes == 2e8
    assert sw.iteration_time[-1] == pytest.approx(sw.one_bucket_time)
    assert np.all(sw.iteration_time >= sw.compute_time)
    default = dl.bucket_sweep(b, g, alpha=1e-5, bandwidth=1e11, p=8)
    assert default.bucket_bytes[0] == 1e8 and default.bucket_bytes[-1] == pytest.approx(8e8)
    assert default.best_time <= default.one_bucket_time


def test_gradient_profiles_sum_to_the_model():
    for profile in ["uniform", "embedding"]:
        g = dl.gradient_profile(7e9, 32, profile=profile)
        assert len(g) == 32 and g.sum() == pytest.approx(7e9)
    assert dl.gradient_profile(1e9, 10, profile="embedding")[-1] == pytest.approx(EMBEDDING_FRACTION * 1e9)
    # GPT-2 small: 50257 x 768 token embedding of 124.4 M parameters
    assert EMBEDDING_FRACTION == pytest.approx(50257 * 768 / 124.44e6, abs=0.005)


def test_uses_collective_time_when_present():
    kw = dict(alpha=3e-6, bandwidth=4e10, p=8)
    s = dl.ddp_step([1e-3, 1e-3], [5e7, 5e7], bucket_bytes=1e8, **kw)
    assert s.bucket_comm_times[0] == pytest.approx(ring_allreduce_time(1e8, 8, bandwidth=4e10, alpha=3e-6))
    if hasattr(dl, "collective_time"):
        tree = dl.ddp_step([1e-3, 1e-3], [5e7, 5e7], bucket_bytes=1e8, algorithm="tree", **kw)
        want = dl.collective_time("allreduce", 1e8, 8, alpha=3e-6, bandwidth=4e10, algorithm="tree")
        assert tree.bucket_comm_times[0] == pytest.approx(want)


# --- bad input --------------------------------------------------------------


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: dl.overlap_timeline([1, -1], [0, 0]), "backward_times"),
        (lambda: dl.overlap_timeline([1, 1], [0, float("nan")]), "comm_times"),
        (lambda: dl.overlap_timeline([1, 1], [0, float("inf")]), "comm_times"),
        (lambda: dl.overlap_timeline([1, 1], [0]), "comm_times must have one entry per layer"),
        (lambda: dl.overlap_timeline([], []), "backward_times"),
        (lambda: dl.overlap_timeline([[1]], [[1]]), "backward_times"),
        (lambda: dl.overlap_timeline([1], [1], forward_time=-1), "forward_time"),
        (lambda: dl.overlap_timeline([1], [1], forward_time=float("nan")), "forward_time"),
        (lambda: dl.overlap_timeline([1], [1], labels=["a", "b"]), "labels"),
        (lambda: dl.overlap_speedup_bound(-1, 1), "compute_time"),
        (lambda: dl.no_backup([1, 2], [1]), "comm_times"),
        (lambda: dl.layerwise_closed_form([1], [1], forward_time=-2), "forward_time"),
        (lambda: dl.bucket_gradients([1, 2], bucket_bytes=0), "bucket_bytes"),
        (lambda: dl.bucket_gradients([1, 2], bucket_bytes=-5), "bucket_bytes"),
        (lambda: dl.bucket_gradients([1, 2], bucket_bytes=float("nan")), "bucket_bytes"),
        (lambda: dl.bucket_gradients([1, -2], bucket_bytes=10), "grad_bytes"),
        (lambda: dl.bucket_gradients([1, 2], bucket_bytes=10, first_bucket_bytes=0), "first_bucket_bytes"),
        (lambda: dl.bucket_gradients([1, 2], bucket_bytes=10, rule="greedy"), "rule"),
        (lambda: dl.ddp_step([1], [1, 2], bucket_bytes=1, alpha=0, bandwidth=1, p=2), "grad_bytes"),
        (lambda: dl.ddp_step([1], [1], bucket_bytes=1, alpha=-1, bandwidth=1, p=2), "alpha"),
        (lambda: dl.ddp_step([1], [1], bucket_bytes=1, alpha=0, bandwidth=0, p=2), "bandwidth"),
        (lambda: dl.ddp_step([1], [1], bucket_bytes=1, alpha=0, bandwidth=1, p=0), "p must be"),
        (lambda: dl.ddp_step([1], [1], bucket_bytes=1, alpha=0, bandwidth=1, p=2, algorithm="star"), "algorithm"),
        (lambda: dl.bucket_sweep([1], [1], alpha=0, bandwidth=1, p=2, bucket_bytes=[1, 0]), "bucket_bytes"),
        (lambda: dl.bucket_sweep([1], [1], alpha=0, bandwidth=1, p=2, bucket_bytes=[]), "bucket_bytes"),
        (lambda: dl.gradient_profile(1e9, 0), "n_layers"),
        (lambda: dl.gradient_profile(1e9, 4, profile="zipf"), "profile"),
    ],
)
def test_bad_arguments_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_types_are_named():
    with pytest.raises(TypeError, match="backward_times"):
        dl.overlap_timeline(["a"], [1])
    with pytest.raises(TypeError, match="overlap"):
        dl.overlap_timeline([1], [1], overlap="yes")
    with pytest.raises(TypeError, match="p must be an integer"):
        dl.ddp_step([1], [1], bucket_bytes=1, alpha=0, bandwidth=1, p=2.5)


# --- explicit buckets, the naive formula, the measured-sweep plot (chapter 8) ---


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(times, st.floats(1.0, 1e6)), min_size=1, max_size=10), st.floats(1.0, 2e6), times)
def test_bucket_timeline_reproduces_ddp_step(layer_list, cap, f):
    b, g = [x for x, _ in layer_list], [y for _, y in layer_list]
    for overlap in (True, False):
        s = dl.ddp_step(b, g, bucket_bytes=cap, alpha=1e-3, bandwidth=1e6, p=4, forward_time=f, overlap=overlap)
        t = dl.bucket_timeline(b, s.buckets, s.bucket_comm_times, forward_time=f, overlap=overlap)
        assert close(t.iteration_time, s.iteration_time)
        np.testing.assert_allclose(t.comm_end, s.timeline.comm_end, rtol=1e-12, atol=1e-12)


def test_bucket_timeline_sends_buckets_in_ready_order():
    # buckets given out of order are sent in the order they become ready
    t = dl.bucket_timeline([1, 1, 1], [[2], [0, 1]], [0.25, 0.5])
    assert t.ready.tolist() == [2.0, 3.0]
    assert t.comm_times.tolist() == [0.5, 0.25]
    assert t.message_labels == ("bucket 1", "bucket 0")
    assert t.iteration_time == 3.25


@pytest.mark.parametrize(
    "buckets, comm, match",
    [
        ([[0], [2]], [1, 1], "every layer"),
        ([[0, 1], [1, 2]], [1, 1], "every layer"),
        ([[0, 1, 2]], [1, 1], "one entry per bucket"),
        ([[0, 1], []], [1, 1], "empty"),
        ([[0, 1, 2]], [-1], "comm_times"),
    ],
)
def test_bucket_timeline_rejects_bad_buckets(buckets, comm, match):
    with pytest.raises(ValueError, match=match):
        dl.bucket_timeline([1, 1, 1], buckets, comm)


def test_bucket_timeline_bad_types():
    with pytest.raises(TypeError, match="buckets"):
        dl.bucket_timeline([1], "0", [1])
    with pytest.raises(TypeError, match=r"buckets\[0\]"):
        dl.bucket_timeline([1], [["a"]], [1])


@settings(max_examples=100, deadline=None)
@given(layers())
def test_naive_formula_never_exceeds_the_truth_and_misses_the_last_allreduce(args):
    b, c, f = args
    naive = dl.naive_layerwise_time(b, c)
    exact = dl.overlap_timeline(b, c).iteration_time
    assert naive <= exact + 1e-9  # it is at best a lower bound
    B = math.fsum(b)
    if dl.no_backup(b, c) and c[-1] <= B - b[-1]:
        assert close(exact - naive, c[-1])  # short by exactly the input layer's all-reduce


def test_naive_formula_is_right_only_when_the_last_allreduce_is_free():
    assert dl.naive_layerwise_time([1, 1, 1], [0.5, 0.5, 0.0]) == dl.overlap_timeline([1, 1, 1], [0.5, 0.5, 0]).iteration_time
    assert dl.naive_layerwise_time([1, 1, 1], [0.5, 0.5, 0.1]) < dl.overlap_timeline([1, 1, 1], [0.5, 0.5, 0.1]).iteration_time


def _fake_report():
    from distlib.overlap.measure import AllreduceTimes, Bucket, DDPReport, SweepRow

    ar = {400_000: 5e-4, 800_000: 9e-4, 1_200_000: 1.3e-3}
    return DDPReport(
        p=2, forward_time=1e-3, backward_times=[1e-3, 1e-3, 1e-3], grad_bytes=[400_000, 400_000, 400_000],
        allreduce=AllreduceTimes(n_bytes=list(ar), seconds=list(ar.values())),
        sweep=[
            SweepRow(bucket_cap_mb=0.25, buckets=None, compute=4e-3, overlap=4.6e-3, no_overlap=5.3e-3,
                     compute_cpu=4e-3, overlap_cpu=5e-3, no_overlap_cpu=5e-3),
            SweepRow(bucket_cap_mb=2.0, buckets=[Bucket(n_bytes=1_200_000, layers=[0, 1, 2])], compute=4e-3,
                     overlap=5.3e-3, no_overlap=5.3e-3),
        ],
    )


def test_plot_measured_sweep_draws_measurements_and_model():
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from distlib.overlap.measure import compare_ddp
    from distlib.plots.overlap import plot_measured_sweep

    c = compare_ddp(_fake_report())
    fig = Figure(figsize=(4, 3), dpi=60)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    art = plot_measured_sweep(ax, c, cpu=True)
    np.testing.assert_allclose(art["measured_overlap"].get_ydata(), [4.6, 5.3])
    np.testing.assert_allclose(art["model_overlap"].get_ydata(), c.predicted_overlap * 1e3)
    np.testing.assert_allclose(art["measured_overlap"].get_xdata(), [0.25 * 2**20, 2 * 2**20])
    assert art["model_no_overlap"].get_ydata()[0] == pytest.approx(5.3)
    assert art["cpu"] is None  # the second row has no CPU times
    fig.canvas.draw()
    with pytest.raises(TypeError, match="DDPComparison"):
        plot_measured_sweep(ax, object())


@settings(max_examples=100, deadline=None)
@given(times, times, times)
def test_cg_iteration_pipelined_hides_one_of_two_costs(spmv, ar, vec):
    classic = dl.cg_iteration_time(spmv, ar, vector_time=vec)
    piped = dl.cg_iteration_time(spmv, ar, method="pipelined", vector_time=vec)
    assert close(classic, spmv + 2 * ar + vec)
    assert close(piped, max(spmv, ar) + vec)
    assert piped <= classic + 1e-12
    # the gain from pipelining is the overlap bound of the product and the two sums, at most 3x
    if min(spmv, ar) > 0 and vec == 0:
        assert classic / piped <= 3 + 1e-9


def test_cg_iteration_bad_arguments():
    with pytest.raises(ValueError, match="method"):
        dl.cg_iteration_time(1, 1, method="chebyshev")
    with pytest.raises(ValueError, match="allreduce_time"):
        dl.cg_iteration_time(1, -1)


def test_ddp_step_prices_buckets_with_the_cluster_model():
    c = dl.gpu_cluster(16, nic_bandwidth=400e9)
    s = dl.ddp_step([0.01] * 4, [1e8] * 4, bucket_bytes=1e8, cluster=c)
    assert s.p == c.p
    assert s.bucket_comm_times[0] == pytest.approx(dl.predict_time("allreduce", 1e8, c))
    sweep = dl.bucket_sweep([0.01] * 4, [1e8] * 4, bucket_bytes=[1e8, 4e8], cluster=c)
    assert sweep.one_bucket_time == pytest.approx(0.04 + dl.predict_time("allreduce", 4e8, c))
    with pytest.raises(ValueError, match="not both"):
        dl.ddp_step([0.01], [1e8], bucket_bytes=1e8, cluster=c, alpha=0.0, bandwidth=1e9)
    with pytest.raises(TypeError, match="cluster"):
        dl.ddp_step([0.01], [1e8], bucket_bytes=1e8)
