"""ZeRO-3 with and without prefetch (distlib.overlap.zero): closed forms derived by hand, held units, bad input."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distlib.overlap.schedule import BACKWARD, COMM, FORWARD, Event
from distlib.overlap.zero import zero3_closed_form, zero3_timeline

times = st.floats(min_value=0.0, max_value=10.0, allow_nan=False)
layer_counts = st.integers(min_value=1, max_value=12)


@settings(max_examples=200, deadline=None)
@given(layer_counts, times, times, times, times)
def test_no_prefetch_is_everything_in_series(L, f, b, g, r):
    t = zero3_timeline(L, f, b, g, r, prefetch=0)
    assert t.step_time == pytest.approx(L * (2 * g + f + b + r), rel=1e-9, abs=1e-12)
    assert t.exposed_comm == pytest.approx(L * (2 * g + r), rel=1e-9, abs=1e-9)
    assert t.hidden_comm == pytest.approx(0.0, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(layer_counts, times, times, st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_prefetch_when_compute_bound_shows_one_gather_and_one_reduce_scatter(L, f_extra, b_extra, g, r):
    f, b = g + f_extra, g + r + b_extra  # f >= g and b >= g + r
    t = zero3_timeline(L, f, b, g, r, prefetch=1)
    assert t.step_time == pytest.approx(g + L * (f + b) + r, rel=1e-9, abs=1e-12)
    assert t.exposed_comm == pytest.approx(g + r, rel=1e-6, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 12), st.floats(0.0, 1.0), st.floats(0.0, 1.0), times, st.floats(0.0, 1.0))
def test_prefetch_when_communication_bound_is_the_channel_plus_one_backward(L, f_share, b_share, extra, r):
    g = 1.0 + extra
    f, b = f_share * g, b_share * g  # g >= f and g >= b
    t = zero3_timeline(L, f, b, g, r, prefetch=1)
    assert t.step_time == pytest.approx(2 * L * g + (L - 1) * r + max(r, b), rel=1e-9)
    assert t.step_time >= t.total_comm - 1e-9  # the channel is the bottleneck: never faster than its work


def test_comm_bound_without_reduce_scatter_is_the_gathers_plus_one_compute():
    t = zero3_timeline(6, 1.0, 2.0, 3.0, 0.0)  # gathers of 3 outlast every compute
    assert t.step_time == pytest.approx(2 * 6 * 3.0 + 2.0)
    assert zero3_timeline(1, 1.0, 2.0, 3.0, 0.5).step_time == pytest.approx(2 * 3.0 + 2.0 + 0.5)


def test_the_library_closed_form_agrees_and_refuses_outside_its_regimes():
    for args in [(4, 2.0, 4.0, 1.0, 1.0), (5, 1.0, 2.0, 3.0, 1.0), (3, 1.0, 0.5, 2.0, 4.0), (1, 1.0, 1.0, 2.0, 1.0)]:
        for k in (0, 1):
            assert zero3_closed_form(*args, prefetch=k) == pytest.approx(zero3_timeline(*args, prefetch=k).step_time)
    with pytest.raises(ValueError, match="no closed form with prefetch=1"):
        zero3_closed_form(4, 2.0, 2.5, 1.5, 2.0)  # b < g + r and g < f: between the regimes
    with pytest.raises(ValueError, match=r"prefetch must be an integer in \[0, 1\], got 2"):
        zero3_closed_form(4, 2.0, 4.0, 1.0, 1.0, prefetch=2)


def test_prefetch_never_hurts_and_hides_most_when_compute_and_gather_match():
    for g in (0.5, 1.0, 2.0, 4.0):
        off, on = (zero3_timeline(8, 1.0, 2.0, g, 0.25, prefetch=k) for k in (0, 1))
        assert on.step_time <= off.step_time
    t = zero3_timeline(8, 1.0, 2.0, 1.0, 0.25)
    assert t.hidden_comm == pytest.approx(t.total_comm - 1.25)


def test_peak_units_one_without_prefetch_two_with_and_k_plus_one_deeper():
    assert zero3_timeline(6, 1.0, 2.0, 0.5, 0.5, prefetch=0).peak_units == 1
    assert zero3_timeline(6, 1.0, 2.0, 0.5, 0.5, prefetch=1).peak_units == 2
    assert zero3_timeline(6, 1.0, 2.0, 3.0, 0.5, prefetch=1).peak_units == 2  # comm-bound: still two
    assert zero3_timeline(6, 1.0, 2.0, 0.5, 0.5, prefetch=2).peak_units == 3
    deep = zero3_timeline(6, 1.0, 2.0, 3.0, 0.5, prefetch=2)
    shallow = zero3_timeline(6, 1.0, 2.0, 3.0, 0.5, prefetch=1)
    assert deep.total_comm <= deep.step_time <= shallow.step_time  # deeper helps a little; the channel's work bounds it


def test_events_are_chapter_8s_and_cover_every_interval_once():
    t = zero3_timeline(3, 1.0, 2.0, 0.5, 0.25)
    ev = t.events
    assert all(isinstance(e, Event) for e in ev)
    assert [e.kind for e in ev].count(FORWARD) == 3 and [e.kind for e in ev].count(BACKWARD) == 3
    comm = [e for e in ev if e.kind == COMM]
    assert len(comm) == 3 * 2 + 3
    assert sum(e.duration for e in comm) == pytest.approx(t.total_comm)
    for a, b in zip(comm, comm[1:]):  # one channel: no two collectives at once
        assert b.start >= a.end - 1e-12
    compute = [e for e in ev if e.row == "compute"]
    assert [e.label for e in compute] == ["forward 0", "forward 1", "forward 2", "backward 2", "backward 1",
                                          "backward 0"]
    for e in compute:  # a use starts only once its gather is done
        assert e.start >= t.gather_end[e.index] - 1e-12
    assert sum(e - s for s, e in t.idle) == pytest.approx(t.exposed_comm)


@pytest.mark.parametrize("kwargs, match", [
    (dict(layers=0), r"layers must be an integer >= 1, got 0"),
    (dict(layers=2.5), r"layers must be an integer >= 1"),
    (dict(forward_time=-1.0), r"forward_time must be a finite number >= 0"),
    (dict(gather_time=float("nan")), r"gather_time must be a finite number >= 0"),
    (dict(reduce_scatter_time="1"), r"reduce_scatter_time must be a number >= 0"),
    (dict(prefetch=-1), r"prefetch must be an integer in \[0, 7\], got -1"),
    (dict(prefetch=8), r"prefetch must be an integer in \[0, 7\], got 8"),
    (dict(prefetch=True), r"prefetch must be an integer"),
])
def test_bad_input_names_the_parameter_and_its_range(kwargs, match):
    args = dict(layers=4, forward_time=1.0, backward_time=2.0, gather_time=0.5, reduce_scatter_time=0.5)
    args.update(kwargs)
    with pytest.raises((TypeError, ValueError), match=match):
        zero3_timeline(**args)


def test_the_drawing_shades_every_wait_and_refuses_other_results():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from distlib.overlap import overlap_timeline
    from distlib.plots.overlap import plot_zero3_timeline

    t = zero3_timeline(4, 2e-3, 4e-3, 3e-3, 1e-3)
    fig, ax = plt.subplots()
    art = plot_zero3_timeline(ax, t)
    assert len(art["exposed"]) == len(t.idle) > 1
    assert len(art["compute"].get_paths()) == 8 and len(art["comm"].get_paths()) == 12
    assert "2 layers held" in art["title"].get_text()
    with pytest.raises(TypeError, match="timeline must be a Zero3Timeline"):
        plot_zero3_timeline(ax, overlap_timeline([1.0], [1.0]))
    plt.close(fig)
