"""The planner's picture draws the view it is given: each bar's pieces are its layout's named seconds, in order,
on one scale; each layout's words say it; a view where nothing fits gets its note and no bars."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

pytest.importorskip("ipywidgets")  # the view's type is the widget's

from distlib.planner import BREAKDOWN_TERMS  # noqa: E402
from distlib.plots.planner import TERM_LABELS, plot_layout_bars, plot_term_legend, short_layout  # noqa: E402
from distlib.widgets.planner import TOP, planner_view  # noqa: E402


def _ax():
    return Figure(figsize=(4.6, 5)).add_subplot()


def test_each_bar_is_its_layouts_named_seconds_end_to_end():
    view = planner_view("GPT-3 175B", 1024, 512)
    pic = plot_layout_bars(_ax(), view, rows=TOP)
    xmax = max(s.step_time for s in view.steps) * 1.04
    assert view.fits and len(view.steps) == TOP
    for i, step in enumerate(view.steps):
        left = 0.0
        for t in BREAKDOWN_TERMS:
            bar = pic.bars[i, t]
            assert bar.get_x() == pytest.approx(left / xmax)
            assert bar.get_width() == pytest.approx(step.breakdown.get(t, 0.0) / xmax)
            left += step.breakdown.get(t, 0.0)
        assert left == pytest.approx(step.step_time)
        assert pic.labels[i].get_text().startswith(f"{i + 1}. {short_layout(step)}\n")
    assert pic.note.get_text() == "" and "GPT-3 175B on 1024" in pic.title.get_text()
    ticks = [t for t in pic.tick_texts if t.get_text()]
    assert ticks and all(0 <= t.get_position()[0] <= 1 for t in ticks)
    assert float(ticks[-1].get_text()) <= xmax


def test_nothing_fitting_is_a_note_and_no_bars():
    view = planner_view("Megatron 1T", 64, 512)
    pic = plot_layout_bars(_ax(), view, rows=TOP)
    assert not view.fits
    assert all(b.get_width() == 0 for b in pic.bars.values()) and all(t.get_text() == "" for t in pic.labels)
    assert pic.note.get_text().startswith("Nothing fits on 64 GPUs") and all(not t.get_text() for t in pic.tick_texts)


def test_an_update_moves_the_same_artists_and_the_legend_names_every_term():
    ax = _ax()
    pic = plot_layout_bars(ax, planner_view("GPT-3 175B", 1024, 512), rows=TOP)
    count = (len(ax.patches), len(ax.texts), len(ax.lines))
    pic.update(planner_view("Megatron 1T", 64, 512))
    assert (len(ax.patches), len(ax.texts), len(ax.lines)) == count
    legend = plot_term_legend(_ax())  # chapter 13's dense models: no experts' all-to-all
    assert [t.get_text() for t in legend.get_texts()] == [TERM_LABELS[t] for t in BREAKDOWN_TERMS if t != "ep_comm"]
    legend = plot_term_legend(_ax(), experts=True)
    assert [t.get_text() for t in legend.get_texts()] == [TERM_LABELS[t] for t in BREAKDOWN_TERMS]
