"""Chapter 16's checkpoint planner (distlib/widgets/goodput.py): its model, its controls, its static frames, its bad input."""

from __future__ import annotations

import ipywidgets as w
import pytest

from distlib.goodput import goodput_curve, llama3_interruptions, young_interval
from distlib.widgets import _base
from distlib.widgets.goodput import SIMULATED_DAYS, STATIC_GPUS, STATIC_WRITES, GoodputWidget


def test_the_view_follows_the_controls():
    wd = GoodputWidget(**GoodputWidget.EXAMPLE)
    v = wd.result
    # the default MTBF is Llama 3's: a failure every 3.09 hours on 16,384 GPUs
    assert v.curve.mtbf == pytest.approx(llama3_interruptions().job_mtbf)
    assert v.mode == "optimal" and v.interval == v.curve.optimum and v.expected == pytest.approx(v.curve.best)
    assert wd.interval_slider.disabled and wd.interval_slider.value == pytest.approx(v.interval / 60)
    assert v.run.duration == SIMULATED_DAYS * 86400 and abs(v.run.goodput - v.expected) < 4 * v.run.standard_error
    # more GPUs: failures come more often, the optimum shortens and the goodput falls
    wd.gpus_slider.value = 65536
    assert wd.result.curve.mtbf == pytest.approx(v.curve.mtbf / 4)
    assert wd.result.interval < v.interval and wd.result.expected < v.expected
    # Young's interval, then the slider's
    wd.mode_buttons.value = "young"
    assert wd.result.interval == pytest.approx(young_interval(30.0, wd.result.curve.mtbf))
    wd.mode_buttons.value = "set"
    assert not wd.interval_slider.disabled
    wd.interval_slider.value = 100.0
    assert wd.result.interval == 6000.0 and wd.result.expected < wd.result.curve.best
    # a faster save: goodput rises at the same interval
    before = wd.result.expected
    wd.write_slider.value = 3.0
    assert wd.result.expected > before and wd.result.curve.write_time == 3.0
    assert "65,536 GPUs" in wd.summary.value and wd.fig.image.value[:4] == b"\x89PNG"


def test_the_summary_quotes_the_models_numbers():
    wd = GoodputWidget(gpus=1024, mtbf_per_gpu=10_000 * 3600.0, write_time=60.0, restart_time=300.0,
                       interval=1800.0)
    c = goodput_curve(gpus=1024, mtbf_per_gpu=10_000 * 3600.0, write_time=60.0, restart_time=300.0)
    assert wd.result.mode == "set" and wd.result.interval == pytest.approx(1800.0)
    assert f"<b>{c.at(1800.0):.1%}</b>" in wd.summary.value
    assert f"{wd.result.run.n_failures:,} failures" in wd.summary.value


def test_the_same_inputs_draw_the_same_run():
    a, b = GoodputWidget(seed=5), GoodputWidget(seed=5)
    assert (a.result.run.failures == b.result.run.failures).all() and a.fig.image.value == b.fig.image.value
    assert GoodputWidget(seed=6).result.run.failures.tolist() != a.result.run.failures.tolist()


@pytest.mark.slow
def test_static_frames_cover_the_gpus_and_the_write_times(tmp_path):
    _base.static_frames(tmp_path / "frames", url="widget-frames")
    try:
        wd = GoodputWidget(**GoodputWidget.EXAMPLE)
    finally:
        _base.static_frames("env")
    assert wd.frame_count == len(STATIC_GPUS) * len(STATIC_WRITES) == 24
    for c in (wd.mtbf_slider, wd.restart_slider, wd.mode_buttons, wd.interval_slider):
        assert c.disabled
    assert len(list((tmp_path / "frames").rglob("*.png"))) >= wd.frame_count


@pytest.mark.parametrize("label, kwargs, error, text", GoodputWidget.BAD_INPUTS,
                         ids=[b[0] for b in GoodputWidget.BAD_INPUTS])
def test_bad_arguments_are_one_line_naming_them(label, kwargs, error, text):
    with pytest.raises(error) as err:
        GoodputWidget(**kwargs)
    assert text in str(err.value) and "\n" not in str(err.value)


def test_only_widgets_both_ipywidgets_have():
    kinds = {type(c) for c in GoodputWidget().controls}
    assert kinds <= {w.SelectionSlider, w.FloatLogSlider, w.ToggleButtons}
