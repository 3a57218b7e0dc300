"""Chapter 10's ZeRO explorer: what it shows is chapter 2's formulas, and every control moves it."""

from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

import distlib as dl  # noqa: E402
from distlib.widgets.zero import GPU_COUNTS, RECIPE, ZeroWidget, zero_view  # noqa: E402


def test_it_starts_where_it_was_told_and_says_so():
    wdg = ZeroWidget(params=70e9, gpus=64, stage=3)
    r = wdg.result
    assert (r.params, r.gpus, r.stage, r.accelerator) == (70e9, 64, 3, "H100")
    assert "<b>ZeRO-3</b>, 70 billion parameters on 64 GPUs" in wdg.summary.value
    assert "fits" in wdg.summary.value and "does not fit" not in wdg.summary.value
    wdg.close()


@pytest.mark.parametrize("control, value", [("params_slider", 1e12), ("gpus_dropdown", 8), ("stage_buttons", 0)])
def test_each_control_changes_the_numbers_and_the_picture(control, value):
    wdg = ZeroWidget(params=70e9, gpus=64, stage=3)
    before_png, before_text = bytes(wdg.fig.image.value), wdg.summary.value
    getattr(wdg, control).value = value
    assert bytes(wdg.fig.image.value) != before_png
    assert wdg.summary.value != before_text
    wdg.close()


@pytest.mark.parametrize("params, gpus", [(7e9, 1), (70e9, 8), (175e9, 512), (1e12, 1024)])
def test_the_numbers_are_the_library_formulas(params, gpus):
    r = zero_view(params, gpus, 2)
    hbm = dl.accelerator("H100").hbm_bytes
    for s in dl.walls.ZERO_STAGES:
        assert r.held[s].total == dl.zero_state_bytes_per_gpu(params, recipe=RECIPE, dp=gpus, stage=s).total
        assert r.sent[s] == dl.gradient_comm_bytes_per_gpu(params, gpus, recipe=RECIPE, stage=s)
        assert r.min_gpus[s] == dl.min_gpus_to_fit(params, recipe=RECIPE, hbm_bytes=hbm, stage=s)
        assert r.seconds(s) == pytest.approx(r.sent[s] / dl.NDR_NIC_BANDWIDTH)
    if gpus > 1:  # ZeRO-1 and 2 send what DDP sends; ZeRO-3 half again
        assert r.sent[1] == pytest.approx(r.sent[0]) and r.sent[2] == pytest.approx(r.sent[0])
        assert r.sent[3] == pytest.approx(1.5 * r.sent[0])
    else:
        assert r.sent == (0.0, 0.0, 0.0, 0.0)


def test_a_70b_model_fits_only_under_zero_3_and_the_text_says_how_many_gpus_it_needs():
    wdg = ZeroWidget(params=70e9, gpus=8, stage=0)
    assert "does not fit" in wdg.summary.value and "no number of GPUs is enough" in wdg.summary.value
    least = dl.min_gpus_to_fit(70e9, recipe=RECIPE, hbm_bytes=dl.accelerator("H100").hbm_bytes, stage=3)
    assert f"ZeRO-3: {least:,}" in wdg.summary.value
    wdg.stage_buttons.value = 3
    assert wdg.result.fits is (least <= 8)
    wdg.gpus_dropdown.value = GPU_COUNTS[-1]
    assert wdg.result.fits and "fits" in wdg.summary.value
    wdg.close()


def test_its_static_grid_holds_the_values_the_prose_names():
    axes = {a.control: a.values for a in ZeroWidget().static_axes()}
    assert 70e9 in axes["params_slider"] and 1e12 in axes["params_slider"]
    assert {8, 64} <= set(axes["gpus_dropdown"]) and list(axes["stage_buttons"]) == [0, 1, 2, 3]
