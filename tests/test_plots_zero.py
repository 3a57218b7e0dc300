"""ZeRO's two pictures draw the view they are given: each stage's line is its model state per GPU, each bar its
bytes sent in gradients, the mark sits at the chosen GPUs, and an update moves the same artists."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

pytest.importorskip("ipywidgets")  # the view's type is the widget's

import distlib as dl  # noqa: E402
from distlib.plots.zero import STAGE_COLORS, plot_zero_comm, plot_zero_memory, stage_name  # noqa: E402
from distlib.widgets.zero import GPU_COUNTS, RECIPE, zero_view  # noqa: E402

H100 = dl.accelerator("H100")


def _axes():
    fig = Figure(figsize=(4.6, 6))
    return fig.subplots(2, 1)


def test_each_line_is_its_stages_state_per_gpu_and_the_mark_the_chosen_point():
    view = zero_view(70e9, 64, 3)
    ax, _ = _axes()
    pic = plot_zero_memory(ax, view, GPU_COUNTS, accelerator="H100", hbm_bytes=H100.hbm_bytes)
    for s, line in pic.lines.items():
        assert list(line.get_xdata()) == GPU_COUNTS
        expected = [dl.zero_state_bytes_per_gpu(70e9, recipe=RECIPE, dp=p, stage=s).total for p in GPU_COUNTS]
        assert list(line.get_ydata()) == pytest.approx(expected, rel=1e-12)
        assert line.get_linewidth() == (3.2 if s == 3 else 1.2)
    assert list(pic.marker.get_xdata()) == [64] and list(pic.marker.get_ydata()) == [view.held[3].total]
    assert pic.marker_text.get_text() == str(dl.fmt_bytes(view.held[3].total))
    assert list(pic.hbm_line.get_ydata()) == [H100.hbm_bytes] * 2
    assert pic.legend.get_texts()[-1].get_text() == f"H100: {dl.fmt_bytes(H100.hbm_bytes)}"


def test_a_state_that_does_not_fit_is_marked_red():
    view = zero_view(1e12, 8, 0)  # 16 TB of state over 8 GPUs under DDP
    ax, _ = _axes()
    pic = plot_zero_memory(ax, view, GPU_COUNTS, accelerator="H100", hbm_bytes=H100.hbm_bytes)
    assert not view.fits and matplotlib.colors.to_hex(pic.marker.get_color()).upper() == "#D55E00"


def test_each_bar_is_its_stages_bytes_in_gradients_and_says_them():
    view = zero_view(70e9, 64, 3)
    _, cx = _axes()
    bars = plot_zero_comm(cx, view)
    grads = dl.model_state_bytes(70e9, recipe=RECIPE).grads
    p = 64
    assert bars.bars[0].get_width() == pytest.approx(2 * (p - 1) / p)  # DDP's all-reduce
    assert bars.bars[3].get_width() == pytest.approx(3 * (p - 1) / p)  # ZeRO-3: two gathers and a reduce-scatter
    for s, bar in bars.bars.items():
        assert bar.get_width() == pytest.approx(view.sent[s] / grads)
        assert bar.get_facecolor()[:3] == pytest.approx(matplotlib.colors.to_rgb(STAGE_COLORS[s]))
        text = bars.bar_texts[s].get_text()
        assert text.startswith(stage_name(s)) and str(dl.fmt_bytes(view.sent[s])) in text
    assert [t.get_fontweight() for t in bars.bar_texts.values()] == ["normal"] * 3 + ["bold"]


def test_an_update_moves_the_same_artists():
    ax, cx = _axes()
    pic = plot_zero_memory(ax, zero_view(70e9, 64, 3), GPU_COUNTS, accelerator="H100", hbm_bytes=H100.hbm_bytes)
    bars = plot_zero_comm(cx, zero_view(70e9, 64, 3))
    artists = (len(ax.lines), len(ax.texts), len(cx.patches), len(cx.texts))
    pic.update(zero_view(7e9, 8, 1))
    bars.update(zero_view(7e9, 8, 1))
    assert (len(ax.lines), len(ax.texts), len(cx.patches), len(cx.texts)) == artists
    assert list(pic.marker.get_xdata()) == [8] and pic.lines[1].get_linewidth() == 3.2
    assert set(pic.dynamic_artists) >= set(pic.lines.values()) | {pic.marker, pic.marker_text}
