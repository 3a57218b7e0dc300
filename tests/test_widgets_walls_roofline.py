"""The walls and roofline widgets, driven headless: set a control, check the model moved."""

import pytest

pytest.importorskip("ipywidgets")

import distlib as dl  # noqa: E402
from distlib.widgets.roofline import RooflineWidget  # noqa: E402
from distlib.widgets.walls import CHIP_COUNTS, WallsWidget  # noqa: E402


@pytest.fixture(scope="module")
def walls_widget():
    return WallsWidget(params=7e9, tokens=1e12, recipe="mixed_precision_adam", accelerator="H100",
                       mfu=0.4, chips=8, stage=0)


def test_walls_widget_starts_with_the_7b_example(walls_widget):
    r = walls_widget.result
    assert r.state_per_gpu.total == pytest.approx(112e9)
    assert not r.fits
    assert "does not fit" in walls_widget.summary.value
    assert walls_widget.fig.image.value[:4] == b"\x89PNG"


def test_walls_widget_each_control_updates_result_and_picture(walls_widget):
    wdg = walls_widget
    steps = [
        (wdg.stage_buttons, 3, lambda r: r.state_per_gpu.total == pytest.approx(112e9 / 8)),
        (wdg.accelerator_dropdown, "MI300X", lambda r: r.hbm_bytes == 206141652992 and r.link_bandwidth == 448e9),
        (wdg.recipe_dropdown, "bf16_adam", lambda r: r.state.total == pytest.approx(84e9)),
        (wdg.params_slider, 7e10, lambda r: r.params == pytest.approx(7e10)),
        (wdg.tokens_slider, 1e13, lambda r: r.flops == pytest.approx(6 * r.params * 1e13, rel=1e-9)),
        (wdg.mfu_slider, 0.8, lambda r: r.mfu == pytest.approx(0.8)),
        (wdg.chips_dropdown, 1024, lambda r: r.chips == 1024 and
         r.compute_time_cluster == pytest.approx(r.time_one_chip / 1024)),
    ]
    for control, value, check in steps:
        before_png, before = wdg.fig.image.value, wdg.result
        control.value = value
        assert wdg.result is not before, control.description
        assert check(wdg.result), control.description
        assert wdg.fig.image.value != before_png, control.description


def test_walls_widget_matches_the_model():
    wdg = WallsWidget(params=70e9, chips=8, stage=3)
    expected = dl.three_walls(70e9, 1e12, chips=8, stage=3, accelerator="H100", mfu=0.4)
    assert wdg.result == expected
    assert "14 chips" in wdg.summary.value  # ZeRO-3 needs 14 x 80 GB


def test_walls_widget_gives_a100_nodes_their_200_gb_s_nics():
    # a DGX A100 has 8 x 200 Gb/s HDR NICs; the H100's DGX node 8 x 400 Gb/s
    wdg = WallsWidget(accelerator="H100", chips=1024)
    assert wdg.result.cluster.nic_bandwidth == pytest.approx(400e9)
    wdg.accelerator_dropdown.value = "A100"
    assert wdg.result.accelerator.name == "A100"
    assert wdg.result.cluster.nic_bandwidth == pytest.approx(200e9)
    assert "1600 Gb/s per node" in wdg.summary.value


def test_walls_widget_offers_only_valid_values():
    wdg = WallsWidget()
    assert wdg.mfu_slider.min > 0 and wdg.mfu_slider.max <= 1
    assert wdg.chips_dropdown.options == tuple(CHIP_COUNTS)
    assert set(wdg.accelerator_dropdown.options) == set(dl.accelerator_names())
    assert [v for _, v in wdg.stage_buttons.options] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="chips must be one of"):
        WallsWidget(chips=3)
    with pytest.raises(ValueError, match="known: A100"):
        WallsWidget(accelerator="V100")


def test_roofline_widget_size_slider_moves_matmul_across_the_ridge():
    wdg = RooflineWidget(accelerator="H100", kind="matmul (n x n x n)", n=256)
    assert wdg.placement.bound == "memory"
    png = wdg.fig.image.value
    wdg.size_slider.value = 4096
    assert wdg.operation.flops == 2 * 4096**3
    assert wdg.placement.bound == "compute"
    assert "compute-bound" in wdg.summary.value
    assert wdg.fig.image.value != png


def test_roofline_widget_accelerator_and_operation_menus():
    wdg = RooflineWidget(accelerator="H100", kind="matmul (n x n x n)", n=1024)
    png = wdg.fig.image.value
    wdg.accelerator_dropdown.value = "TPU v4"
    assert wdg.placement.roof.name == "TPU v4"
    assert wdg.placement.roof.peak_flops == 275e12
    assert wdg.fig.image.value != png
    png = wdg.fig.image.value
    wdg.operation_dropdown.value = "attention, untiled (seq n)"
    assert wdg.placement.bound == "memory"
    wdg.operation_dropdown.value = "attention, tiled (seq n)"
    assert wdg.placement.bound == "compute"
    assert wdg.fig.image.value != png


def test_roofline_widget_rejects_out_of_range_size():
    with pytest.raises(ValueError, match="n must be in"):
        RooflineWidget(n=3)


# --- the static plot functions the chapters call ---------------------------------

def _axes():
    from matplotlib.figure import Figure

    return Figure(figsize=(4, 3), dpi=60).add_subplot()


def test_plot_memory_breakdown_draws_zero_stages_and_hbm():
    from distlib.plots.walls import plot_memory_breakdown

    w = dl.three_walls(7e9, 1e12, chips=8, stage=2, accelerator="H100")
    ax = _axes()
    bars = plot_memory_breakdown(ax, w)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2", "3"]
    assert ax.get_xlabel() == "ZeRO stage"
    # the HBM line is named in the legend, not written over the bars
    assert ax.get_legend().texts[-1].get_text() == f"HBM {dl.fmt_bytes(dl.accelerator('H100').hbm_bytes)}"
    assert bars.hbm_line.get_ydata()[0] == pytest.approx(dl.accelerator("H100").hbm_bytes / 1e9)  # GB
    assert bars.outline.get_visible() and bars.outline.get_x() == pytest.approx(2 - 0.3)
    # segment tops add up to each stage's total (GB)
    tops = {}
    for path in bars.segments.get_paths():
        x = round(float(path.vertices[:, 0].mean()))
        tops[x] = max(tops.get(x, 0.0), float(path.vertices[:, 1].max()))
    for s in range(4):
        expected = dl.zero_state_bytes_per_gpu(7e9, recipe="mixed_precision_adam", dp=8, stage=s).total / 1e9
        assert tops[s] == pytest.approx(expected)
    with pytest.raises(TypeError, match="Walls, a StateBytes"):
        plot_memory_breakdown(_axes(), [1.0, 2.0])


def test_plot_training_time_log_axis_spans_both_bars():
    from distlib.plots.walls import plot_training_time

    w = dl.three_walls(175e9, 300e9, chips=1024, accelerator="A100", mfu=0.4)
    ax = _axes()
    plot_training_time(ax, w)
    lo, hi = ax.get_ylim()
    assert ax.get_yscale() == "log"
    assert lo <= w.compute_time_cluster and w.time_one_chip <= hi
    assert ax.get_xticklabels()[1].get_text() == "1,024 chips"
    with pytest.raises(TypeError, match="Walls"):
        plot_training_time(_axes(), 3.0)


def test_plot_roofline_marks_ridges_operations_and_measurements():
    from distlib.plots.roofline import plot_roofline

    ax = _axes()
    m = dl.Roof("my laptop", 2e11, 5e10)
    out = plot_roofline(ax, ["H100", "TPU v5p"], dl.example_operations(), measured=[m, ("point", 10.0, 1e11)])
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert len(out["roofs"]) == 2
    x, y = out["ridges"][0].get_data()
    assert x[0] == pytest.approx(dl.ridge_point("H100")) and y[0] == pytest.approx(989.5e12)
    assert len(out["operations"]) == len(dl.example_operations())
    assert len(out["measured"]) == 2
    one = plot_roofline(_axes(), "A100")  # a single name works
    assert len(one["roofs"]) == 1
    with pytest.raises(TypeError, match="measured item"):
        plot_roofline(_axes(), "A100", measured=[object()])


def test_walls_widget_times_communication_with_the_cluster_model():
    from distlib.widgets.walls import WallsWidget

    wdg = WallsWidget(params=7e9, tokens=1e12, accelerator="H100", chips=8)
    wdg.chips_dropdown.value = max(wdg.chips_dropdown.options)  # many nodes: the network, not NVLink
    r = wdg.update()
    assert r.cluster is not None and r.cluster.nodes > 1
    assert r.link_bandwidth < dl.accelerator("H100").link_bandwidth
    assert "NCCL reaching" in wdg.summary.value


@pytest.mark.parametrize("height_px", [230, 300, 400])
def test_time_ticks_keep_their_labels_apart(height_px):
    """Named times on a 14-decade axis: a label and a half apart, days and years kept first."""
    import math

    from matplotlib.figure import Figure

    from distlib.plots.walls import TimeBars

    fig = Figure(figsize=(4, height_px / 96), dpi=96)
    ax = fig.add_subplot()
    TimeBars(ax, ylim=(1.0, 1e14))
    ticks = list(ax.get_yticks())
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert {"1 s", "1 day", "1 year"} <= set(labels)
    pt_per_decade = ax.get_position().height * fig.get_figheight() * 72 / 14
    gaps = [math.log10(b / a) * pt_per_decade for a, b in zip(ticks, ticks[1:])]
    assert min(gaps) >= 1.5 * 11 - 1e-6
    if height_px >= 400:
        assert "1 h" in labels  # room for more on a tall axis


def test_walls_widget_writes_the_chips_hbm_over_the_axes_not_beside_the_tick():
    from distlib.widgets.walls import WallsWidget

    wdg = WallsWidget(params=7e9, tokens=1e12, accelerator="H100", chips=8)
    text = wdg.memory.hbm_text
    assert text.get_text() == f"HBM per chip: {dl.fmt_bytes(dl.accelerator('H100').hbm_bytes)}"
    renderer = wdg.fig.canvas.get_renderer()
    ylabel = wdg.mem_ax.yaxis.label.get_window_extent(renderer)
    assert not text.get_window_extent(renderer).overlaps(ylabel)
    assert [t.get_text() for t in wdg.mem_ax.get_xticklabels()] == ["0", "1", "2", "3"]


def test_plot_roofline_legend_goes_under_the_axes_in_short_lines():
    from distlib.plots.pictures import phone_spec
    from distlib.plots.roofline import _LINE_MAX, plot_roofline

    ax = _axes()
    plot_roofline(ax, ["H100", "A100"], dl.example_operations())
    leg = ax.get_legend()
    texts = [t.get_text() for t in leg.texts]
    assert leg._loc == 9  # "upper center", hung from under the axes
    assert all(len(line) <= _LINE_MAX for t in texts for line in t.split("\n"))
    assert "attention untiled\n(seq 4096, 32x128): 62.7 FLOP/B" in texts  # broken before the parenthesis
    assert phone_spec(ax.figure).adjust is not None  # one column on a phone


def test_roofline_widget_notes_sit_between_the_axes_and_the_title():
    from distlib.widgets.roofline import RooflineWidget

    wdg = RooflineWidget(accelerator="H100", n=1024)
    renderer = wdg.fig.canvas.get_renderer()
    axes = wdg.fig.ax.get_window_extent(renderer)
    title = wdg.fig.ax.title.get_window_extent(renderer)
    notes = [wdg.picture.ridge_text.get_window_extent(renderer), wdg.picture.op_text.get_window_extent(renderer)]
    assert wdg.picture.op_text.get_text().endswith("compute-bound, 990 TFLOP/s")
    for box in notes:
        assert axes.y1 <= box.y0 and box.y1 <= title.y0  # over the axes, under the title
        assert 0 <= box.x0 and box.x1 <= wdg.fig.figure.bbox.width  # inside the picture
    assert notes[1].y1 <= notes[0].y0  # the verdict under the ridge
    assert title.x0 >= 0 and title.x1 <= wdg.fig.figure.bbox.width
