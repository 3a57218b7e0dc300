"""Chapter 15's drawings (distlib/plots/experts.py): the artists drawn are the model's numbers."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from distlib.experts_model import (balance_simulation, dispatch_matrix, dispatch_stats, expert_ranks,  # noqa: E402
                                   moe_alltoall, node_limited_route, node_traffic, route, router_logits)
from distlib.plots.experts import (DROPPED_COLOR, KEPT_COLOR, phone_column, plot_alltoall_bytes,  # noqa: E402
                                   plot_expert_load, plot_imbalance, plot_nodes_per_token, plot_token_flow,
                                   rank_color)
from distlib.static.phone import phone_spec  # noqa: E402


@pytest.fixture
def ax():
    fig, ax = plt.subplots(figsize=(6.4, 4))
    yield ax
    plt.close(fig)


def _batch(experts=8, ep=4, top_k=2, cap=40, skew=1.0):
    r = route(router_logits(256, experts, skew=skew), top_k)
    s = dispatch_stats(r.choices, experts, cap)
    return r, s, dispatch_matrix(r.choices, s.mask, experts=experts, ep=ep, to="expert")


def test_the_flow_has_a_band_per_rank_expert_pair_as_wide_as_its_rows(ax):
    _, s, flow = _batch()
    art = plot_token_flow(ax, flow)
    pairs = int((flow > 0).sum())
    assert len(art["dispatch"].get_segments()) == len(art["combine"].get_segments()) == pairs
    widths = art["dispatch"].get_linewidths()
    rows = flow[np.nonzero(flow)]
    assert widths[np.argmax(rows)] == pytest.approx(max(widths)) and widths[np.argmin(rows)] == pytest.approx(min(widths))
    assert len(art["ranks"].get_offsets()) == 2 * 4 and len(art["experts"].get_offsets()) == 8
    assert flow.sum() == s.kept.sum()  # the bands carry the kept rows only
    # each dispatch band starts at its rank (x = 0) and ends at its expert (x = 1), in its rank's colour
    seg = art["dispatch"].get_segments()[0]
    assert seg[0][0] == 0 and seg[1][0] == 1
    assert np.allclose(art["dispatch"].get_colors()[0][:3], matplotlib.colors.to_rgb(rank_color(0)))


def test_the_flow_refuses_a_rank_matrix(ax):
    with pytest.raises(ValueError, match="flow must be rows from each of ep ranks to each of E experts"):
        plot_token_flow(ax, np.ones((4, 6), dtype=int))


def test_the_load_bars_are_kept_under_dropped_with_the_capacity_line(ax):
    _, s, _ = _batch()
    art = plot_expert_load(ax, s, owner=expert_ranks(8, 4))
    assert [b.get_height() for b in art["kept"]] == s.kept.tolist()
    assert [b.get_height() for b in art["dropped"]] == s.dropped.tolist()
    assert [b.get_y() for b in art["dropped"]] == s.kept.tolist()  # stacked on the kept
    assert art["capacity"].get_ydata()[0] == 40 and art["mean"].get_ydata()[0] == pytest.approx(s.load.mean())
    assert matplotlib.colors.same_color(art["kept"][0].get_facecolor(), KEPT_COLOR)
    assert matplotlib.colors.same_color(art["dropped"][0].get_facecolor(), DROPPED_COLOR)
    assert ax.get_ylim()[1] > s.load.max()


def test_without_a_capacity_there_is_no_line_and_nothing_dropped(ax):
    r, _, _ = _batch()
    art = plot_expert_load(ax, dispatch_stats(r.choices, 8, None))
    assert art["capacity"] is None and all(b.get_height() == 0 for b in art["dropped"])


def test_the_bytes_are_the_matrixs_off_diagonal_and_the_line_the_closed_form(ax):
    _, s, flow = _batch()
    m = flow.reshape(4, 4, 2).sum(axis=2)
    a2a = moe_alltoall(64, 4096, top_k=2, ep=4)
    art = plot_alltoall_bytes(ax, m, a2a, row_bytes=4096 * 2)
    scale = art["scale"]
    off = m - np.diag(np.diag(m))
    assert np.allclose([b.get_height() * scale for b in art["sent"]], off.sum(axis=1) * 8192)
    assert np.allclose([b.get_height() * scale for b in art["received"]], off.sum(axis=0) * 8192)
    assert art["uniform"].get_ydata()[0] * scale == pytest.approx(a2a.sent) and art["unit"] == "kB"


def test_the_imbalance_curves_are_the_runs(ax):
    runs = [balance_simulation(tokens=512, experts=8, top_k=2, skew=2.0, steps=10, balancing=b)
            for b in ("none", "bias")]
    lines = plot_imbalance(ax, runs)
    assert set(lines) == {"none", "bias"}
    assert np.array_equal(lines["bias"].get_ydata(), runs[1].imbalance) and lines["none"].get_xdata()[-1] == 10
    with pytest.raises(TypeError, match="runs must be BalanceRun results"):
        plot_imbalance(ax, [1.0])


def test_the_node_histogram_is_the_share_of_tokens_per_node_count(ax):
    x = router_logits(500, 32, skew=1.0)
    free = node_traffic(route(x, 8, gate="sigmoid").choices, 8, nodes=4)
    limited = node_traffic(node_limited_route(x, 8, 8, 2).choices, 8, nodes=4)
    bars = plot_nodes_per_token(ax, {"any nodes": free, "at most 2": limited}, max_nodes=2)
    heights = [b.get_height() for b in bars["at most 2"]]
    assert sum(heights) == pytest.approx(1.0) and all(h == 0 for h in heights[2:])
    assert [b.get_height() for b in bars["any nodes"]] == pytest.approx(
        (np.bincount(free.nodes, minlength=5)[1:] / 500).tolist())


def test_a_figure_of_these_plots_goes_one_column_on_a_phone():
    fig, axes = plt.subplots(1, 2, figsize=(6.4, 3))
    try:
        phone_column(fig, height=600)
        assert phone_spec(fig).height == 600 and phone_spec(fig).adjust is not None
        assert fig.get_size_inches()[0] <= 6.4
    finally:
        plt.close(fig)
