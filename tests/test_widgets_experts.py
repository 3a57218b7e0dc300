"""Chapter 15's experts widget (distlib/widgets/experts.py): its model, its controls, its static frames."""

from __future__ import annotations

import math

import numpy as np
import pytest

from distlib.experts_model import capacity, moe_alltoall
from distlib.widgets.experts import (BALANCE_STEPS, HIDDEN, STATIC_BALANCING, STATIC_CAPACITY_FACTORS, STATIC_SKEWS,
                                     TOKENS, ExpertsWidget)


def test_the_view_follows_the_controls():
    wd = ExpertsWidget(**ExpertsWidget.EXAMPLE)
    v = wd.result
    assert (v.experts, v.top_k, v.ep, v.balancing, v.run) == (16, 2, 4, "none", None)
    assert v.stats.capacity == capacity(TOKENS, 16, 2, 1.0) == 256
    assert v.stats.kept.sum() + v.stats.dropped.sum() == TOKENS * 2  # every assignment kept or dropped
    assert v.flow.shape == (4, 16) and v.flow.sum() == v.stats.kept.sum() == v.matrix.sum()
    assert v.a2a.sent == moe_alltoall(TOKENS // 4, HIDDEN, top_k=2, ep=4).sent
    assert v.stats.imbalance > 2 and v.stats.dropped_total > 0  # skew 1, no balancing: a hot expert drops
    dropped = v.stats.dropped_total
    # more room: fewer drops; none at all without a capacity
    wd.capacity_slider.value = 2.0
    assert wd.result.stats.capacity == 512 and wd.result.stats.dropped_total < dropped
    wd.capacity_slider.value = math.inf
    assert wd.result.capacity_factor is None and wd.result.stats.dropped_total == 0
    assert "no capacity" in wd.summary.value
    # balancing evens the load; the same batch routed otherwise
    wd.capacity_slider.value = 1.0
    for rule in ("bias", "aux"):
        wd.balancing_buttons.value = rule
        assert wd.result.run.steps == BALANCE_STEPS and wd.result.stats.imbalance < 1.5
        assert wd.result.stats.dropped_total < dropped / 4
    # no skew and no balancing: nearly even
    wd.balancing_buttons.value = "none"
    wd.skew_slider.value = 0.0
    assert wd.result.stats.imbalance < 1.3
    # one rank: nothing crosses
    wd.ep_slider.value = 1
    assert wd.result.a2a.sent == 0 and wd.result.busiest_sent == 0 and "no all-to-all" in wd.summary.value
    wd.experts_slider.value, wd.ep_slider.value, wd.top_k_slider.value = 64, 8, 8
    assert wd.result.flow.shape == (8, 64) and wd.result.stats.load.sum() == TOKENS * 8
    assert wd.fig.image.value[:4] == b"\x89PNG"


def test_the_summary_quotes_the_models_numbers():
    wd = ExpertsWidget(experts=8, top_k=1, capacity_factor=1.25, skew=2.0, ep=2, balancing="none")
    s = wd.result.stats
    assert f"<b>{s.dropped_total:,}</b> dropped ({s.drop_fraction:.1%})" in wd.summary.value
    assert f"<b>{s.imbalance:.2f}x</b>" in wd.summary.value and f"at most <b>{s.capacity}</b>" in wd.summary.value


def test_the_same_inputs_draw_the_same_batch():
    a, b = ExpertsWidget(balancing="bias"), ExpertsWidget(balancing="bias")
    assert np.array_equal(a.result.routes.choices, b.result.routes.choices)
    assert a.fig.image.value == b.fig.image.value


def test_the_static_grid_holds_the_chapters_values_and_stays_small():
    wd = ExpertsWidget(**ExpertsWidget.EXAMPLE)
    axes = {a.control: a.grid({}) for a in wd.static_axes()}
    assert set(axes) == {"capacity_slider", "skew_slider", "balancing_buttons"}
    assert 1.0 in axes["capacity_slider"] and math.inf in axes["capacity_slider"]
    assert 1.0 in axes["skew_slider"] and "none" in axes["balancing_buttons"]
    frames = len(STATIC_CAPACITY_FACTORS) * len(STATIC_SKEWS) * len(STATIC_BALANCING)
    assert frames == np.prod([len(v) for v in axes.values()]) and 20 <= frames <= 40
    # every grid value is a place of its control
    for name, values in axes.items():
        options = [o[1] if isinstance(o, tuple) else o for o in getattr(wd, name).options]
        assert set(values) <= set(options), name


@pytest.mark.parametrize("kw, error, text", [row[1:] for row in ExpertsWidget.BAD_INPUTS])
def test_bad_inputs_fail_before_any_control(kw, error, text):
    with pytest.raises(error, match=None) as info:
        ExpertsWidget(**kw)
    assert text in str(info.value) and "\n" not in str(info.value)
