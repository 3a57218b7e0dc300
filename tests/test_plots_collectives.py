"""Alpha-beta plots: each fits a phone (328 CSS px) as well as the page, with no label under a legend."""

from __future__ import annotations

import pickle

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from distlib.plots.pictures import NARROW, phone_copy, phone_spec, render_pair
from distlib.plots import collectives as cp


def _regime_and_times(p=1024):
    sizes = cp.default_sizes(8, 1e10, 81)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(6.4, 7.6))
    cp.plot_regime(ax1, "allreduce", p, alpha=5e-6, bandwidth=50e9, sizes=sizes)
    cp.plot_collective_times(ax2, sizes, cp.times_by_algorithm("allreduce", sizes, p, alpha=5e-6, bandwidth=50e9),
                             crossovers=cp.crossovers("allreduce", p, alpha=5e-6, bandwidth=50e9))
    fig.tight_layout()
    return fig


def test_figures_of_these_plots_can_be_copied_for_a_phone():
    fig = _regime_and_times()
    copy = pickle.loads(pickle.dumps(fig))  # a lambda formatter made this fail: the phone drawing then changed the page's
    assert len(copy.axes) == 2
    plt.close("all")


@pytest.mark.parametrize("p", [8, 1024])
def test_both_renderings_fit(p):
    fig = _regime_and_times(p)
    wide, narrow = render_pair(fig)
    assert narrow.width <= NARROW and wide.width <= 620
    assert narrow.height > wide.height  # the phone's legends go under the plots: a taller picture
    plt.close("all")


def test_phone_legends_leave_the_axes_and_line_labels_stay_inside():
    fig = _regime_and_times()
    phone = phone_copy(fig)  # as render_pair lays it out
    phone.set_size_inches(NARROW / 96, 9)
    phone.canvas.draw()
    r = phone.canvas.get_renderer()
    for ax in phone.axes:
        box = ax.get_window_extent(r)
        legend = ax.get_legend().get_window_extent(r)
        assert legend.y1 < box.y0  # under the axes
        for t in ax.texts:  # n_half and crossover labels: inside the axes, clear of the legend
            tb = t.get_window_extent(r)
            assert box.x0 - 1 <= tb.x0 and tb.x1 <= box.x1 + 1
            assert not tb.overlaps(legend)
    plt.close("all")


def test_crossover_label_goes_to_the_free_end_of_its_line():
    sizes = cp.default_sizes(8, 1e10, 81)
    fig, ax = plt.subplots()
    times = cp.times_by_algorithm("allreduce", sizes, 1024, alpha=5e-6, bandwidth=50e9)
    cp.plot_collective_times(ax, sizes, times, crossovers=cp.crossovers("allreduce", 1024, alpha=5e-6, bandwidth=50e9))
    (label,) = ax.texts
    # ring and tree cross high in the plot (about 10 ms of 100 us .. 4 s): the label hangs from the top
    assert label.xy[1] > 0.5 and label.get_va() == "top"
    plt.close("all")


def test_figure_legend_becomes_one_column():
    fig, ax = plt.subplots(figsize=(6.4, 4.8), layout="constrained")
    sizes = np.logspace(3, 9, 7)
    cp.plot_bus_bandwidth(ax, sizes, np.linspace(1e9, 4e11, 7), link_bandwidth=4.5e11)
    ax.semilogx(sizes, sizes / 1e7, label="a long second label for the legend")
    fig.legend(loc="outside lower center", ncols=2)
    phone = phone_copy(fig)  # as render_pair lays it out
    (legend,) = phone.legends
    assert legend._ncols == 1 and len(legend.get_texts()) == 3
    assert phone_spec(fig).height > fig.get_size_inches()[1] * 96
    render_pair(fig)
    plt.close("all")
