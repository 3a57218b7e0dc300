"""Tensor parallelism's two pictures draw the views they are given: the activation curves are the grid's, the
compute and communication lines the row's, the marks sit at the chosen T, and an update moves the same artists."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import distlib as dl  # noqa: E402
from distlib.planner.tensor_parallel import PLACEMENTS, tp_view  # noqa: E402
from distlib.plots.tensor_parallel import plot_tp_activations, plot_tp_comm_compute  # noqa: E402

DEGREES = [1, 2, 4, 8, 16]
GRID = {(t, sp, m): tp_view(t, sp, m, "nvlink")
        for t, sp, m in itertools.product(DEGREES, (False, True), dl.RECOMPUTE_MODES)}


def _row(sp, recompute, placement):
    return {t: tp_view(t, sp, recompute, placement) for t in DEGREES}


def _ax():
    return Figure(figsize=(4.6, 3.3)).add_subplot()


def _draw_comm(ax, r):
    return plot_tp_comm_compute(ax, r, _row(r.sequence_parallel, r.recompute, r.placement), GRID, DEGREES,
                                link="NVLink", link_bandwidth=450e9, nic_bandwidth=dl.NDR_NIC_BANDWIDTH,
                                efficiency=0.5)


def test_each_activation_curve_is_the_grids_and_the_chosen_one_is_thick_and_marked():
    r = tp_view(8, True, "selective", "nvlink")
    pic = plot_tp_activations(_ax(), r, GRID, DEGREES)
    assert len(pic.lines) == 2 * len(dl.RECOMPUTE_MODES)
    for (m, sp), line in pic.lines.items():
        assert list(line.get_ydata()) == [GRID[t, sp, m].activation_bytes for t in DEGREES]
        assert line.get_linestyle() == ("-" if sp else "--")
        assert line.get_linewidth() == (3.4 if (m, sp) == ("selective", True) else 1.2)
    assert list(pic.marker.get_xdata()) == [8] and list(pic.marker.get_ydata()) == [r.activation_bytes]
    assert pic.text.get_text() == str(dl.fmt_bytes(r.activation_bytes))


def test_compute_and_each_placements_comm_are_the_rows_and_the_marks_the_chosen_ones():
    r = tp_view(8, False, "none", "nic")
    pic = _draw_comm(_ax(), r)
    row = _row(False, "none", "nic")
    assert list(pic.compute_line.get_ydata()) == [row[t].compute_seconds for t in DEGREES]
    for p in PLACEMENTS:  # T = 1 sends nothing: no point on a log axis
        assert list(pic.comm_lines[p].get_xdata()) == DEGREES[1:]
        assert list(pic.comm_lines[p].get_ydata()) == [row[t].comm[p] for t in DEGREES[1:]]
    assert pic.comm_lines["nic"].get_linewidth() == 3.0 and pic.comm_lines["nvlink"].get_linewidth() == 1.2
    assert list(pic.comm_marker.get_ydata()) == [r.comm["nic"]]
    assert list(pic.compute_marker.get_ydata()) == [r.compute_seconds]
    assert pic.comm_text.get_text() == f"comm {dl.fmt_seconds(r.comm['nic'])}"
    assert [t.get_text() for t in pic.legend.get_texts()] == [
        "compute, 50% of peak", "NVLink, 450 GB/s", f"NIC, {dl.fmt_rate(dl.NDR_NIC_BANDWIDTH)}"]


def test_at_one_rank_there_is_no_traffic_to_mark():
    pic = _draw_comm(_ax(), tp_view(1, False, "none", "nvlink"))
    assert len(pic.comm_marker.get_xdata()) == 0 and pic.comm_text.get_text() == "T = 1: no TP traffic"


def test_an_update_moves_the_same_artists():
    ax = _ax()
    pic = _draw_comm(ax, tp_view(8, False, "none", "nvlink"))
    count = (len(ax.lines), len(ax.texts))
    r = tp_view(2, True, "full", "nic")
    pic.update(r, _row(True, "full", "nic"))
    assert (len(ax.lines), len(ax.texts)) == count and list(pic.compute_marker.get_xdata()) == [2]
