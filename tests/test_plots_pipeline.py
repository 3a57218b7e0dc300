"""Chapter 12's schedule picture: the frame is drawn once, each update draws one schedule's boxes in it, and the
title says that schedule and its two bubbles."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure  # noqa: E402

import distlib as dl  # noqa: E402
from distlib.plots.pipeline import plot_schedule_picture, schedule_title  # noqa: E402


def _ax():
    fig = Figure(figsize=(4.6, 3.3))
    return fig.add_subplot()


def test_every_op_is_one_box_and_the_stages_say_their_peak_in_flight():
    s = dl.pipeline_schedule("1f1b", 4, 8, forward_time=1.0, backward_time=2.0)
    ax = _ax()
    pic = plot_schedule_picture(ax, s)
    assert len(pic.drawn["boxes"].get_paths()) == len(s.events) == 2 * 4 * 8
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"{k} ({n:g})" for k, n in enumerate(s.peak_in_flight)]
    assert pic.title.get_text() == schedule_title(s)
    assert pic.title.get_text() == (f"1F1B, v = 1, p = 4, m = 8\nbubble {s.bubble_fraction:.0%} of the step, "
                                    f"{s.bubble_ratio:.0%} of the ideal")


def test_an_update_replaces_the_boxes_and_keeps_the_frame():
    ax = _ax()
    pic = plot_schedule_picture(ax, dl.pipeline_schedule("gpipe", 4, 8, forward_time=1.0, backward_time=2.0))
    legend, title = pic.legend, pic.title
    s = dl.pipeline_schedule("interleaved", 2, 8, forward_time=1.0, backward_time=2.0, chunks=2)
    pic.update(s)
    assert len(ax.collections) == 2  # the rows' grey and the boxes of this schedule only
    assert len(pic.drawn["boxes"].get_paths()) == len(s.events)
    assert pic.legend is legend and pic.title is title and ax.figure.legends == [legend]
    assert schedule_title(s, narrow=True).startswith("interleaved 1F1B, v = 2, p = 2, m = 8\nbubble ")
    assert "of step" in schedule_title(s, narrow=True) and "of the step" in schedule_title(s)
