"""Chapter 14's ring explorer (distlib/widgets/context.py): its model, its controls, its static frames, its bad input."""

from __future__ import annotations

import ipywidgets as w
import pytest

from distlib.context_parallel import causal_pairs
from distlib.widgets import _base
from distlib.widgets.context import CP_OPTIONS, ContextWidget


def test_the_view_follows_the_controls():
    wd = ContextWidget(**ContextWidget.EXAMPLE)
    assert wd.result.cp == 4 and wd.result.split == "zigzag" and wd.result.imbalance == 1.0
    wd.split_buttons.value = "contiguous"
    assert wd.result.work.tolist() == causal_pairs(131072, 4, split="contiguous").tolist()
    assert 6.9 < wd.result.imbalance < 7.0  # 1 + 2 (cp - 1) n / (n + 1)
    # the contiguous ring waits for its busiest rank: the step is its work, hops hidden or not
    assert wd.result.overlapped_step < wd.result.blocking_step
    wd.hop_slider.value = 3
    wd.cp_buttons.value = 2  # the hop slider follows the ring
    assert wd.hop_slider.max == 1 and wd.result.hop == 1
    wd.overlap_box.value = False
    assert wd.result.schedule.step_time == wd.result.blocking_step
    assert "2 ranks" in wd.summary.value and wd.fig.image.value[:4] == b"\x89PNG"


@pytest.mark.slow
def test_static_frames_cover_every_hop_of_every_ring(tmp_path):
    _base.static_frames(tmp_path / "frames", url="widget-frames")
    try:
        wd = ContextWidget(**ContextWidget.EXAMPLE)
    finally:
        _base.static_frames("env")
    assert wd.frame_count == 2 * sum(CP_OPTIONS)  # 3 rings x 2 splits x every hop
    live = {id(c) for c in (wd.cp_buttons, wd.split_buttons, wd.hop_slider)}
    disabled = [c for c in (wd.transfer_dropdown, wd.overlap_box) if id(c) not in live]
    assert all(c.disabled for c in disabled)
    assert len(list((tmp_path / "frames").rglob("*.png"))) >= wd.frame_count


@pytest.mark.parametrize("label, kwargs, error, text", ContextWidget.BAD_INPUTS, ids=[b[0] for b in
                                                                                     ContextWidget.BAD_INPUTS])
def test_bad_arguments_are_one_line_naming_them(label, kwargs, error, text):
    with pytest.raises(error) as err:
        ContextWidget(**kwargs)
    assert text in str(err.value) and "\n" not in str(err.value)


def test_only_widgets_both_ipywidgets_have():
    wd = ContextWidget(cp=2, seq=64)
    kinds = {type(c) for c in wd.controls}
    assert kinds <= {w.ToggleButtons, w.IntSlider, w.Dropdown, w.Checkbox}
