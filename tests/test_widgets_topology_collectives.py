"""Headless tests of the topology and collectives widgets: set .value, check the model moved."""

from __future__ import annotations

import ipywidgets as w
import pytest

from distlib.collectives import collective_time, crossover_size
from distlib.topology import topology_closed_form
from distlib.widgets.collectives import CollectivesWidget
from distlib.widgets.topology import KIND_SPECS, TopologyWidget

# widgets that exist in both ipywidgets 7.7.1 and 8
ALLOWED = (w.IntSlider, w.FloatSlider, w.FloatLogSlider, w.Dropdown, w.ToggleButtons, w.Play, w.HTML, w.Image,
           w.HBox, w.VBox)
PNG = b"\x89PNG\r\n\x1a\n"


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


@pytest.fixture(autouse=True)
def no_display(monkeypatch):
    import IPython.display

    def boom(*args, **kwargs):
        raise AssertionError("widgets must not call display()")

    monkeypatch.setattr(IPython.display, "display", boom)


def test_topology_widget_uses_portable_widgets_and_draws():
    tw = TopologyWidget()
    assert isinstance(tw, w.VBox)
    for child in _walk(tw):
        assert isinstance(child, ALLOWED), type(child)
    assert bytes(tw.fig.image.value).startswith(PNG)


def test_topology_widget_size_slider_updates_the_model():
    tw = TopologyWidget(kind="torus2", size=4)
    assert tw.metrics.hosts == 16 and tw.metrics.diameter == 4 and tw.metrics.bisection_links == 8
    before = bytes(tw.fig.image.value)
    tw.size.value = 6
    assert tw.metrics.hosts == 36 and tw.metrics.diameter == 6 and tw.metrics.bisection_links == 12
    assert bytes(tw.fig.image.value) != bytes(before)
    assert "36" in tw.table.value


@pytest.mark.parametrize("key", list(KIND_SPECS))
def test_every_kind_and_size_on_the_slider_is_valid(key):
    tw = TopologyWidget()
    tw.kind.value = key
    _, _, lo, hi, step, default, build = KIND_SPECS[key]
    assert (tw.size.min, tw.size.max, tw.size.step, tw.size.value) == (lo, hi, step, default)
    for v in range(lo, hi + 1, step):
        tw.size.value = v
        kind, kwargs = build(v)
        cf = topology_closed_form(kind, **kwargs)
        assert tw.topo.kind == kind
        assert (tw.metrics.hosts, tw.metrics.links, tw.metrics.diameter) == (cf.hosts, cf.links, cf.diameter)
        if cf.bisection_links is not None and kind != "dgx":
            assert tw.metrics.bisection_links == cf.bisection_links


def test_fat_tree_slider_offers_only_even_k():
    tw = TopologyWidget(kind="fat_tree")
    assert tw.size.step == 2 and tw.size.min % 2 == 0 and tw.size.max % 2 == 0
    tw.size.value = 6
    assert tw.topo.size["k"] == 6 and tw.metrics.hosts == 54
    with pytest.raises(ValueError, match="size must be in"):
        TopologyWidget(kind="fat_tree", size=5)


def test_ring_order_toggle_changes_the_hop_pattern():
    tw = TopologyWidget(kind="torus2", size=4)
    assert max(tw.loads.hops) == 1 and tw.loads.max_load == 1
    tw.ring.value = "host order"
    assert max(tw.loads.hops) == 2  # the row ends go round the wrap-around: two links


def test_dgx_reports_bandwidth():
    tw = TopologyWidget(kind="dgx", size=2)
    assert tw.bisection.bandwidth == pytest.approx(8 * 50e9)
    assert "GB/s" in tw.table.value


def test_collectives_widget_portable_and_draws():
    cw = CollectivesWidget()
    for child in _walk(cw):
        assert isinstance(child, ALLOWED), type(child)
    assert bytes(cw.fig.image.value).startswith(PNG)


def test_collectives_widget_sliders_update_times():
    cw = CollectivesWidget(collective="allreduce", alpha=5e-6, bandwidth=50e9, p=64, n_bytes=1e6)
    ring = cw.times["ring"]
    assert ring == pytest.approx(collective_time("allreduce", 1e6, 64, alpha=5e-6, bandwidth=50e9))
    cw.alpha.value = 1e-5
    assert cw.times["ring"] > ring
    before = dict(cw.times)
    cw.bandwidth.value = 1e11
    assert all(cw.times[a] < before[a] for a in cw.times)
    cw.p.value = 63
    assert cw.times["ring"] == pytest.approx(collective_time("allreduce", 1e6, 63, alpha=1e-5, bandwidth=1e11))
    img = bytes(cw.fig.image.value)
    cw.n_bytes.value = 1e9
    assert bytes(cw.fig.image.value) != img


def test_collectives_widget_winner_crossover_and_regime():
    cw = CollectivesWidget(collective="allreduce", alpha=5e-6, bandwidth=50e9, p=63, n_bytes=1e9)
    assert cw.winner == "ring"  # 63 ranks: halving-doubling's fold costs two extra buffers
    cw.n_bytes.value = 100.0
    assert cw.winner in ("tree", "halving_doubling")
    x = cw.crossovers[("ring", "tree")]
    assert x == pytest.approx(crossover_size("allreduce", 63, alpha=5e-6, bandwidth=50e9,
                                             algorithms=("ring", "tree")))
    assert cw.regime.label == "latency-bound"
    cw.n_bytes.value = 1e10
    assert cw.regime.label == "bandwidth-bound"
    cw.regime_algorithm.value = "tree"
    assert cw.regime.n_half == pytest.approx(5e-6 * 50e9)  # tree: A/B = 1
    cw.collective.value = "broadcast"
    assert cw.times["tree"] == pytest.approx(collective_time("broadcast", 1e10, 63, alpha=5e-6, bandwidth=50e9,
                                                             algorithm="tree"))


def test_collectives_sliders_offer_valid_ranges_only():
    cw = CollectivesWidget()
    assert cw.p.min >= 2 and cw.alpha.min > -10 and cw.bandwidth.min >= 6
    cw.p.value = cw.p.max
    cw.alpha.value = 10 ** cw.alpha.max
    cw.bandwidth.value = 10 ** cw.bandwidth.min
    cw.n_bytes.value = 10 ** cw.n_bytes.max
    lo, hi = 1e-7, 1e4
    for curve in cw.curves.values():  # the fixed y range holds every curve
        assert curve.min() >= lo * 0.999 or curve.min() == 0
        assert curve.max() <= hi
