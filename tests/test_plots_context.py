"""Chapter 14's drawings (distlib/plots/context.py): the artists drawn are the model's numbers."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from distlib.context_parallel import ring_schedule, ring_work  # noqa: E402
from distlib.plots.context import (chunk_owners, plot_causal_mask, plot_rank_work, plot_ring,  # noqa: E402
                                   plot_ring_schedule, rank_color)


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


@pytest.mark.parametrize("cp, hop", [(2, 1), (4, 0), (4, 3), (8, 5)])
def test_the_ring_shows_each_ranks_block_at_the_hop(ax, cp, hop):
    art = plot_ring(ax, cp, hop)
    assert len(art["nodes"]) == cp and len(art["arrows"]) == (cp if cp > 1 else 0)
    for r, block in enumerate(art["blocks"]):
        assert block.get_facecolor() == to_rgba(rank_color((r - hop) % cp))


@pytest.mark.parametrize("split", ["zigzag", "contiguous"])
@pytest.mark.parametrize("cp, hop", [(2, 0), (4, 1), (8, 7)])
def test_the_mask_colours_each_chunk_pair_by_its_rank_and_marks_the_hops(ax, cp, hop, split):
    art = plot_causal_mask(ax, cp, split=split, hop=hop)
    n, owners = 2 * cp, chunk_owners(cp, split)
    assert len(art["alpha"]) == n * (n + 1) // 2  # every chunk pair at or below the diagonal
    pairs = [(q, k) for q in range(n) for k in range(q + 1)]
    now = [a == 1.0 for a in art["alpha"]]
    assert now == [owners[k] == (owners[q] - hop) % cp for q, k in pairs]
    colors = art["cells"].get_facecolors()
    for (q, _), color in zip(pairs, colors):
        assert np.allclose(color[:3], to_rgba(rank_color(owners[q]))[:3])


def test_the_work_bars_are_even_with_zigzag(ax):
    bars = plot_rank_work(ax, 1024, 4)
    assert [round(b.get_height(), 9) for b in bars["zigzag"]] == [1.0] * 4
    heights = [b.get_height() for b in bars["contiguous"]]
    assert heights == sorted(heights) and heights[-1] / heights[0] > 6


def test_the_schedule_draws_a_box_per_block_with_work(ax):
    work = ring_work(64, 4, split="contiguous")
    art = plot_ring_schedule(ax, ring_schedule(work, 3.0))
    assert len(art["boxes"].get_paths()) == int(np.count_nonzero(work))


def test_on_a_phone_the_panels_stand_in_one_column():
    from distlib.static.pictures import render_pair

    fig, axes = plt.subplots(1, 3, figsize=(6.4, 2.9))
    plot_rank_work(axes[0], 256, 4)
    for ax in axes[1:]:
        plot_ring_schedule(ax, ring_schedule(ring_work(256, 4), 0.25))
    fig.tight_layout()
    from distlib.plots.context import phone_column

    phone_column(fig, height=700)
    wide, narrow = render_pair(fig, compact=False, strict=True)
    assert narrow.height > 2 * wide.height * narrow.width / wide.width  # stacked, not squeezed side by side
    plt.close(fig)
