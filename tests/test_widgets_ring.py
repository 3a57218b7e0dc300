"""Chapter 1's widgets, driven headless: set a control, check the model moved."""

import numpy as np
import pytest

pytest.importorskip("ipywidgets")

from distlib.widgets.ring import ClusterWidget, RingWidget  # noqa: E402


def test_ring_widget_step_slider_moves_the_picture():
    wdg = RingWidget(p=4)
    first = wdg.fig.image.value
    assert wdg.step_slider.max == 6 and wdg.play.max == 6
    wdg.step_slider.value = 3
    assert wdg.picture.step == 3
    assert wdg.fig.image.value != first
    # after 3 reduce-scatter steps every GPU owns one finished chunk
    held = wdg.trace.holdings(3).sum(axis=2)
    assert sorted((held == 4).sum(axis=1).tolist()) == [1, 1, 1, 1]


def test_ring_widget_p_slider_resimulates_and_clamps_step():
    wdg = RingWidget(p=6)
    wdg.step_slider.value = 10
    wdg.p_slider.value = 3
    assert wdg.trace.p == 3
    assert wdg.step_slider.max == 4 and wdg.play.max == 4
    assert wdg.step_slider.value == 4 and wdg.picture.step == 4
    np.testing.assert_array_equal(wdg.trace.result[0], wdg.trace.result[2])


def test_ring_widget_caption_counts_bytes_sent():
    wdg = RingWidget(p=4)
    wdg.step_slider.value = 6
    # 16 float32 values = 64 B; each GPU sent 2 * 3/4 * 64 = 96 B
    assert "96, 96, 96, 96" in wdg.caption.value


def test_ring_widget_only_offers_valid_ranges():
    wdg = RingWidget(p=4)
    assert wdg.p_slider.min >= 2 and wdg.step_slider.min == 0
    with pytest.raises(ValueError, match="p must be an integer in"):
        RingWidget(p=1)


def test_cluster_widget_recomputes_on_each_control():
    wdg = ClusterWidget(p=8, params=7e9, link_bandwidth=50e9, flops_per_gpu=989e12, mfu=0.4, tokens_per_gpu=4096)
    before = wdg.result
    png = wdg.fig.image.value
    wdg.link_slider.value = 1.0  # 1 GB/s
    assert wdg.result.comm_time == pytest.approx(before.comm_time * 50, rel=1e-9)
    assert wdg.result.communication_bound
    assert "communication-bound" in wdg.summary.value
    assert wdg.fig.image.value != png
    wdg.dtype_buttons.value = 4
    assert wdg.result.grad_bytes == pytest.approx(4 * 7e9)
    wdg.p_slider.value = 1024
    assert wdg.result.p == 1024
    wdg.mfu_slider.value = 0.8
    assert wdg.result.achieved_flops == pytest.approx(0.8 * 989e12)


def test_cluster_widget_sliders_cannot_reach_invalid_values():
    wdg = ClusterWidget()
    assert wdg.mfu_slider.min > 0 and wdg.mfu_slider.max <= 1
    wdg.mfu_slider.value = 5  # ipywidgets clamps to the slider's range
    assert wdg.result.achieved_flops <= wdg.tflops_slider.value * 1e12


def test_ring_widget_frame_cache_shows_the_right_frame():
    wdg = RingWidget(p=4)
    wdg.step_slider.value = 3
    third = wdg.fig.image.value
    wdg.step_slider.value = 4
    assert wdg.fig.image.value != third
    wdg.p_slider.value = 5
    wdg.step_slider.value = 3
    assert wdg.fig.image.value != third  # same step, other ring
    wdg.p_slider.value = 4
    wdg.step_slider.value = 3
    assert wdg.fig.image.value == third and wdg.picture.step == 3


@pytest.mark.parametrize("p", [2, 3, 4, 6, 8, 12])
@pytest.mark.parametrize("size_px", [(420, 440), (328, 360)])
def test_ring_gpu_names_stay_clear_of_the_arrows(p, size_px):
    """At 11 pt, no "GPU r" label may sit on an arrow (they did at p = 2, 6 and 8)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    import distlib as dl
    from distlib.plots.ring import RingPicture, _arc_points

    fig = Figure(figsize=(size_px[0] / 96, size_px[1] / 96), dpi=96)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.93)
    pic = RingPicture(ax, dl.simulate_ring_allreduce(np.ones((p, 2 * p), dtype=np.float32)))
    renderer = fig.canvas.get_renderer()
    names = [t for t in ax.texts if t.get_text().startswith("GPU ")]
    assert len(names) == p and all(t.get_fontsize() >= 11 for t in names)
    curve = np.concatenate([_arc_points(a, b) for a, b in pic._arcs(pic.box)])
    xy = ax.transData.transform(curve)
    for t in names:
        box = t.get_window_extent(renderer)
        inside = (xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)
        assert not inside.any(), f"{t.get_text()} sits on an arrow at p = {p}"


def test_step_bars_write_a_time_after_its_lane_when_the_bar_is_too_short():
    from matplotlib.figure import Figure

    from distlib.cluster import cluster_step
    from distlib.plots.ring import StepBars

    ax = Figure(figsize=(460 / 96, 260 / 96)).add_subplot()
    bars = StepBars(ax)
    fast = cluster_step(p=1024, params=7e9, bytes_per_value=2, link_bandwidth=344e9, flops_per_gpu=989e12,
                        mfu=0.4, tokens_per_gpu=4096)  # all-reduce ~16% of the step: too short for its time
    bars.update(fast)
    comp, comm, step = bars.labels
    assert comp.get_ha() == "center" and comp.get_position()[1] == 1  # inside the long green bar
    assert comm.get_ha() == "left" and comm.get_position()[1] < 0  # after the red lane of the overlap row
    assert comm.get_position()[0] > bars.comm1.get_width()
    assert step.get_text() == ""  # no room right of the 84% lane
    slow = cluster_step(p=1024, params=7e9, bytes_per_value=2, link_bandwidth=100e9, flops_per_gpu=989e12,
                        mfu=0.4, tokens_per_gpu=4096)
    bars.update(slow)
    assert comm.get_ha() == "center" and step.get_text().startswith("step ")
    assert "\n" in bars.title.get_text()  # verdict on its own line
    assert bars.title.get_text().startswith("1,024 GPUs: ")  # the picture says which p it is for


def test_ring_animation_comes_twice_in_the_static_book(monkeypatch, tmp_path):
    """The book's player and its phone twin: both drawn (to_jshtml must not answer from its cache)."""
    import distlib as dl
    from distlib.plots import animation_html
    from distlib.plots.ring import animate_ring

    monkeypatch.setenv("DISTLIB_STATIC_WIDGETS", str(tmp_path))
    anim = animate_ring(dl.simulate_ring_allreduce(np.ones((4, 8), dtype=np.float32)))
    html = animation_html(anim, default_mode="loop")
    wide, narrow = html.split('class="distlib-only-narrow"')
    assert "width:403px" in wide and "width:328px" in narrow  # 4.2 in at 96 px per inch; a phone's column
    assert wide.count("data:image/png") == narrow.count("data:image/png") == 7  # every step of p = 4
    assert anim._fig.get_size_inches()[0] == pytest.approx(4.2)  # the figure is given back as it was
