"""Communication hiding drawn and driven headless: plots, animation, widget."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("ipywidgets")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import distlib as dl  # noqa: E402
from distlib.plots.overlap import animate_timeline, plot_bucket_sweep, plot_timeline, time_unit  # noqa: E402
from distlib.widgets.overlap import FORWARD_FRACTION, OverlapWidget  # noqa: E402


def _ax():
    fig = Figure(figsize=(5, 2), dpi=60)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _bars(coll):
    """(start, end) of each bar of a PolyCollection, in axis units."""
    return [(float(p.vertices[:, 0].min()), float(p.vertices[:, 0].max())) for p in coll.get_paths()]


def test_plot_timeline_draws_every_interval_and_the_exposed_span():
    tl = dl.overlap_timeline([0.01, 0.01, 0.01], [0.004, 0.02, 0.003], forward_time=0.005)
    fig, ax = _ax()
    art = plot_timeline(ax, tl)
    assert art["scale"] == 1e3  # milliseconds
    compute = _bars(art["compute"])
    comm = _bars(art["comm"])
    assert len(compute) == 4 and len(comm) == 3  # forward + 3 layers; 3 all-reduces
    np.testing.assert_allclose(comm, np.c_[tl.comm_start, tl.comm_end] * 1e3)
    assert art["exposed"].get_x() == pytest.approx(tl.backward_end * 1e3)
    assert art["exposed"].get_width() == pytest.approx(tl.exposed_comm * 1e3)
    assert "exposed comm" in art["title"].get_text()
    fig.canvas.draw()


def test_plot_timeline_accepts_a_ddp_step_and_cuts_at_until():
    s = dl.ddp_step([0.01] * 4, [1e8] * 4, bucket_bytes=2e8, alpha=1e-5, bandwidth=2.5e10, p=8)
    fig, ax = _ax()
    art = plot_timeline(ax, s, until=0.025)
    assert len(_bars(art["comm"])) == s.n_buckets == 2
    assert max(e for _, e in _bars(art["compute"])) == pytest.approx(25.0)
    assert art["now"].get_visible()
    with pytest.raises(TypeError, match="timeline"):
        plot_timeline(ax, [1, 2, 3])


def test_plot_bucket_sweep_marks_the_best_capacity():
    sw = dl.bucket_sweep([0.01] * 8, [1e8] * 8, alpha=1e-3, bandwidth=1e11, p=8, bucket_bytes=[1e8, 2e8, 4e8, 8e8])
    fig, ax = _ax()
    art = plot_bucket_sweep(ax, sw)
    np.testing.assert_allclose(art["time"].get_ydata(), sw.iteration_time * 1e3)
    assert art["best"].get_xdata()[0] == 2e8
    assert art["floor"].get_ydata()[0] == pytest.approx(sw.compute_time * 1e3)
    fig.canvas.draw()


def test_animation_is_small_and_ends_on_the_full_step():
    tl = dl.overlap_timeline([1, 1, 1], [0.5, 2, 0.5], forward_time=1)
    anim = animate_timeline(tl, frames=6)
    html = anim.to_jshtml()
    assert html.count("frames[") >= 6 and len(html) < 200_000
    # after the last frame the bars are the whole step
    anim._func(5)
    fig = anim._fig
    colls = [c for c in fig.axes[0].collections]
    ends = max(e for c in colls for _, e in _bars(c))
    assert ends == pytest.approx(tl.iteration_time)
    with pytest.raises(ValueError, match="frames"):
        animate_timeline(tl, frames=31)


def test_time_unit():
    assert time_unit(2.0) == (1.0, "s")
    assert time_unit(0.2) == (1e3, "ms")
    assert time_unit(2e-4) == (1e6, "µs")


# --- widget -------------------------------------------------------------------


def test_widget_recomputes_on_each_control():
    wdg = OverlapWidget(layers=8, backward_time=5e-3, grad_bytes=1e9, bucket_bytes=25 * 2**20, alpha=5e-6, bandwidth=25e9, p=8)
    s0 = wdg.result
    png = bytes(wdg.fig.image.value)
    assert png.startswith(b"\x89PNG")
    assert s0.n_buckets == 8  # 125 MB per layer >= 25 MiB: one bucket per layer
    assert s0.timeline.forward_time == pytest.approx(FORWARD_FRACTION * 8 * 5e-3)

    wdg.bucket_slider.value = 1024  # 1 GiB: one bucket for the whole model
    assert wdg.result.n_buckets == 1
    assert wdg.result.exposed_comm == pytest.approx(wdg.result.total_comm)
    assert bytes(wdg.fig.image.value) != png

    wdg.p_slider.value = 2
    assert wdg.result.p == 2
    assert wdg.result.total_comm == pytest.approx(2 * 5e-6 + 1e9 / 25e9)  # 2(p-1)alpha + 2(p-1)/p n / bw

    wdg.bandwidth_slider.value = 100
    assert wdg.result.bandwidth == pytest.approx(100e9)
    wdg.alpha_slider.value = 100
    assert wdg.result.alpha == pytest.approx(100e-6)

    wdg.layers_slider.value = 24
    assert len(wdg.result.timeline.backward_times) == 24
    wdg.backward_slider.value = 10
    assert wdg.result.timeline.backward_times[0] == pytest.approx(0.01)
    wdg.grad_slider.value = 10
    assert sum(bk.n_bytes for bk in wdg.result.buckets) == pytest.approx(1e10)
    wdg.profile_dropdown.value = "embedding"
    assert wdg.result.buckets[-1].n_bytes >= 0.31 * 1e10


def test_widget_overlap_toggle_and_summary():
    wdg = OverlapWidget(bandwidth=1e9)  # slow links: the all-reduces queue
    assert wdg.result.timeline.backed_up
    assert "queue up" in wdg.summary.value
    assert f"{wdg.result.speedup:.2f}x" in wdg.summary.value
    wdg.overlap_buttons.value = False
    assert wdg.result.iteration_time == pytest.approx(wdg.result.no_overlap_time)
    assert "1.00x" in wdg.summary.value


def test_widget_sliders_only_offer_valid_values():
    wdg = OverlapWidget()
    for slider in [wdg.layers_slider, wdg.backward_slider, wdg.grad_slider, wdg.bucket_slider,
                   wdg.alpha_slider, wdg.bandwidth_slider, wdg.p_slider]:
        for value in (slider.min, slider.max) if not hasattr(slider, "base") else (
                slider.base ** slider.min, slider.base ** slider.max):
            slider.value = value
            assert wdg.result.iteration_time > 0
    assert wdg.result.p == 1024


# ---- phones: every picture fits NARROW CSS px, its text inside it -------------

def _inside(fig, artists):
    """Whether every artist's box lies inside the figure (to the pixel)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    box = fig.bbox
    return all(a.get_window_extent(r).x0 >= box.x0 - 1 and a.get_window_extent(r).x1 <= box.x1 + 1 for a in artists)


def test_break_at_commas_keeps_lines_short_and_ends_a_line_at_a_colon():
    from distlib.plots.overlap import _break_at_commas

    text = "step 152 ms, exposed comm 7.82 ms, 1.57x vs no overlap"
    lines = _break_at_commas(text, 34).split("\n")
    assert lines == ["step 152 ms, exposed comm 7.82 ms,", "1.57x vs no overlap"]
    assert _break_at_commas("DDP, 2 gloo processes: measured (markers), model (lines)", 34).split("\n") == [
        "DDP, 2 gloo processes:", "measured (markers), model (lines)"]
    assert _break_at_commas("short, title", 34) == "short, title"


def test_chapter_figures_fit_a_phone_with_legends_under_the_axes():
    import matplotlib.pyplot as plt

    from distlib.plots.pictures import NARROW, phone_spec, render_pair

    b = [2e-3] * 48
    grads = dl.gradient_profile(1e9, 48)
    link = dict(alpha=10e-6, bandwidth=25e9, p=64, forward_time=0.5 * 2e-3 * 48)
    sweep = dl.bucket_sweep(b, grads, **link)
    fig, axes = plt.subplots(2, 1, figsize=(6.4, 7.4))
    plot_bucket_sweep(axes[0], sweep)
    axes[0].set_title("48 layers, 1 GB of gradients, p = 64")
    plot_timeline(axes[1], dl.ddp_step(b, grads, bucket_bytes=sweep.best_bucket_bytes, **link))
    fig.tight_layout()
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    # the legend hangs under the x label, never over the curve
    assert axes[0].get_legend().get_window_extent(r).y1 < axes[0].xaxis.label.get_window_extent(r).y0
    assert phone_spec(fig).height > 7.4 * 96  # taller on a phone: its titles take two lines
    wide, narrow = render_pair(fig)  # raises if the phone drawing is wider than NARROW
    assert narrow.width <= NARROW and wide.width <= 620
    plt.close(fig)


def test_animation_is_laid_out_for_a_phone_with_its_title_inside():
    from distlib.plots.pictures import NARROW, phone_spec

    tl = dl.overlap_timeline([0.01] * 4, [0.015] * 4, forward_time=0.02)
    anim = animate_timeline(tl, frames=4)
    fig = anim._fig
    spec = phone_spec(fig)
    assert spec.height >= 240
    spec.adjust(fig)
    fig.set_size_inches(NARROW / 96, spec.height / 96)
    anim._func(3)  # the last frame has the longest title: "t = 90 ms, exposed so far 30 ms"
    ax = fig.axes[0]
    assert "exposed so far" in ax.get_title()
    assert _inside(fig, [ax.title, *ax.get_yticklabels(), ax.xaxis.label])
    assert len([t for t in ax.get_xticks() if 0 <= t <= ax.get_xlim()[1]]) <= 6


def test_widget_phone_twin_keeps_its_row_labels_on_the_frame():
    from distlib.static.mode import phone_twin

    with phone_twin():
        wdg = OverlapWidget(layers=48, backward_time=2e-3, bucket_bytes=2**20, bandwidth=1e9, p=64)
    assert wdg.fig.narrow and wdg.fig.width == 328
    ax = wdg.fig.ax
    labels = [t for t in wdg.picture.tick_labels if t.get_visible()]
    assert 2 <= len(labels) <= 5
    assert _inside(wdg.fig.figure, [*ax.get_yticklabels(), *labels, ax.xaxis.label])


def test_animation_html_carries_a_wide_and_a_phone_player_in_the_book_build(monkeypatch, tmp_path):
    from distlib.plots import animation_html

    monkeypatch.setenv("DISTLIB_STATIC_WIDGETS", str(tmp_path))
    tl = dl.overlap_timeline([0.01] * 4, [0.015] * 4, forward_time=0.02)
    html = animation_html(animate_timeline(tl, frames=3), default_mode="once")
    wide, narrow = html.split('class="distlib-only-narrow"')
    assert "distlib-only-wide" in wide
    assert wide.count("frames[") >= 3 and narrow.count("frames[") >= 3
    assert "width:328px" in narrow and "width:576px" in wide
