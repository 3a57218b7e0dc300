"""Chapter 16's drawings (distlib/plots/goodput.py): the artists drawn are the model's numbers."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from distlib.goodput import EVENT_KINDS, goodput_curve, llama3_interruptions, simulate_failures  # noqa: E402
from distlib.plots.goodput import (KIND_COLORS, kind_legend_handles, plot_failure_timeline,  # noqa: E402
                                   plot_goodput_curve, plot_interruptions, time_unit)

JOB = dict(gpus=16384, mtbf_per_gpu=50_000 * 3600.0, write_time=30.0, restart_time=600.0)


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def test_the_curve_is_the_models_and_the_optimum_sits_on_its_peak(ax):
    c = goodput_curve(**JOB)
    art = plot_goodput_curve(ax, c, chosen=3600.0)
    scale, name = art["unit"]
    assert (scale, name) == (60.0, "min") and ax.get_xscale() == "log"
    assert np.allclose(art["expected"].get_xdata() * scale, c.intervals)
    assert np.array_equal(art["expected"].get_ydata(), c.expected)
    assert np.array_equal(art["first_order"].get_ydata(), c.first_order)
    x, y = art["optimum"].get_xdata()[0], art["optimum"].get_ydata()[0]
    assert x * scale == pytest.approx(c.optimum) and y == pytest.approx(c.expected.max(), abs=1e-4)
    assert art["young"].get_xdata()[0] * scale == pytest.approx(c.young)
    assert art["daly"].get_xdata()[0] * scale == pytest.approx(c.daly)
    assert art["chosen"].get_xdata()[0] == 60.0 and art["chosen"].get_ydata()[0] == pytest.approx(c.at(3600.0))
    lo, hi = ax.get_ylim()
    assert 0 <= lo < c.expected.max() < hi <= 1


def test_without_a_chosen_interval_nothing_is_marked_for_it(ax):
    assert plot_goodput_curve(ax, goodput_curve(**JOB))["chosen"] is None


def test_the_timeline_draws_every_stretch_in_its_kinds_colour(ax):
    run = simulate_failures(**JOB, interval=900.0, duration=2 * 86400.0, seed=2)
    art = plot_failure_timeline(ax, run)
    assert art["unit"] == (86400.0, "days")  # two days: the axis counts days
    for k, kind in enumerate(EVENT_KINDS):
        n = int(np.sum(run.kinds == k))
        if n:
            bars = art["bars"][kind]
            assert len(bars.get_paths()) == n
            assert np.allclose(bars.get_facecolor()[0], to_rgba(KIND_COLORS[kind]))
    assert np.allclose(art["failures"].get_xdata() * 86400.0, run.failures)
    assert set(art["bars"]) >= {"work", "save", "lost", "restart"}


def test_until_cuts_the_run_at_that_time(ax):
    run = simulate_failures(**JOB, interval=900.0, duration=5 * 86400.0, seed=2)
    art = plot_failure_timeline(ax, run, until=86400.0, unit=(3600.0, "h"))
    assert ax.get_xlim() == (0.0, 24.0)
    shown = sum(len(b.get_paths()) for b in art["bars"].values())
    assert shown == int(np.sum(run.starts < 86400.0)) < run.starts.size
    assert len(art["failures"].get_xdata()) == int(np.sum(run.failures < 86400.0))


def test_llama3s_causes_largest_first(ax):
    table = llama3_interruptions()
    art = plot_interruptions(ax, table)
    assert art["labels"][0] == "GPU" and art["counts"] == sorted(art["counts"], reverse=True)
    assert sum(art["counts"]) == 419 and [b.get_width() for b in art["bars"]] == art["counts"]
    rows = plot_interruptions(ax, table, by="component")
    assert len(rows["counts"]) == 18
    with pytest.raises(ValueError, match="by must be one of 'category', 'component'"):
        plot_interruptions(ax, table, by="cause")


def test_legend_and_units():
    handles = kind_legend_handles()
    assert [h.get_label() for h in handles][-1] == "failure" and len(handles) == len(EVENT_KINDS) + 1
    assert time_unit(59) == (1.0, "s") and time_unit(7200) == (3600.0, "h")


def test_wrong_results_are_refused(ax):
    with pytest.raises(TypeError, match="curve must be a GoodputCurve"):
        plot_goodput_curve(ax, simulate_failures(**JOB, interval=900.0, duration=3600.0))
    with pytest.raises(TypeError, match="run must be a FailureRun"):
        plot_failure_timeline(ax, goodput_curve(**JOB))
