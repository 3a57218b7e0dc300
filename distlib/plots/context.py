"""Drawing context parallelism: the ring of ranks, the causal mask by the rank that computes it, and the ring in time.

Each rank has a colour (:func:`rank_color`). :func:`plot_ring` puts the ranks on a circle, the ring's
direction of travel as arrows, and beside each rank the key/value block it computes with at a hop, in its
owner's colour. :func:`plot_causal_mask` draws the ``2 cp x 2 cp`` chunks of the causal mask: a chunk of
queries against a chunk of keys, coloured by the rank that holds the queries (the one that computes it),
the chunks of one hop full and the others faded; the diagonal chunks are half computed, so half drawn.
:func:`plot_rank_work` compares each rank's work under the contiguous and the zig-zag split, and
:func:`plot_ring_schedule` draws :func:`distlib.context_parallel.ring_schedule`: every rank's blocks in
time, in the colour of the block's owner, grey where it waits.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.patches import Circle, FancyArrowPatch, Patch, Rectangle

from ..context_parallel import SPLITS, causal_pairs, cp_chunks
from ..static.phone import phone_layout

__all__ = ["RANK_COLORS", "WAIT_COLOR", "rank_color", "chunk_owners", "plot_ring", "plot_causal_mask",
           "plot_rank_work", "plot_ring_schedule", "rank_legend_handles", "phone_column"]

#: One colour per rank (eight, colour-blind safe after Okabe and Ito, darker where white text sits on them).
RANK_COLORS = ("#0b5d9e", "#c25500", "#1a7f5a", "#a0447c", "#5b6b00", "#8a5a00", "#3b3b98", "#8c2d19")
#: Where a rank computes nothing: waiting for a block, or done.
WAIT_COLOR = "#e6e6e6"
_MASKED = "#f7f7f7"


def rank_color(rank: int) -> str:
    """The colour of ``rank`` (they repeat after eight)."""
    return RANK_COLORS[int(rank) % len(RANK_COLORS)]


def chunk_owners(cp: int, split: str = "zigzag") -> list:
    """The rank holding each of the ``2 cp`` chunks of the sequence.

    >>> chunk_owners(4), chunk_owners(4, "contiguous")
    ([0, 1, 2, 3, 3, 2, 1, 0], [0, 0, 1, 1, 2, 2, 3, 3])
    """
    owners = [0] * (2 * cp)
    for r in range(cp):
        for a, b in cp_chunks(2 * cp, cp, r, split=split):
            for i in range(a, b):
                owners[i] = r
    return owners


def plot_ring(ax, cp: int, hop: int = 0, *, radius: float = 1.0) -> dict:
    """The ``cp`` ranks on a circle (rank 0 on top, clockwise), arrows ``r -> r + 1``, each rank's block at ``hop``.

    Returns ``{"nodes", "blocks", "arrows", "texts"}``, the artists drawn.
    """
    node_r, block_r = 0.2 if cp <= 4 else 0.16, 0.15 if cp <= 4 else 0.12
    angles = [math.pi / 2 - 2 * math.pi * r / cp for r in range(cp)]
    at = [(radius * math.cos(a), radius * math.sin(a)) for a in angles]
    nodes, blocks, arrows, texts = [], [], [], []
    for r, (x, y) in enumerate(at):
        nodes.append(ax.add_patch(Circle((x, y), node_r, facecolor=rank_color(r), edgecolor="white", zorder=3)))
        texts.append(ax.text(x, y, str(r), ha="center", va="center", color="white", fontsize=12, weight="bold",
                             zorder=4))
        owner = (r - hop) % cp
        bx, by = 1.55 * x / radius * radius, 1.55 * y / radius * radius
        blocks.append(ax.add_patch(Rectangle((bx - block_r, by - block_r), 2 * block_r, 2 * block_r,
                                             facecolor=rank_color(owner), edgecolor="black", linewidth=0.8,
                                             zorder=3)))
        texts.append(ax.text(bx, by, str(owner), ha="center", va="center", color="white", fontsize=11, zorder=4))
    if cp > 1:
        for r in range(cp):
            (x0, y0), (x1, y1) = at[r], at[(r + 1) % cp]
            arrows.append(ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), connectionstyle="arc3,rad=-0.35",
                                                       arrowstyle="-|>", mutation_scale=12, color="#555555",
                                                       shrinkA=node_r * 60, shrinkB=node_r * 60, linewidth=1.2,
                                                       zorder=2)))
    lim = 1.55 * radius + 0.3
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.set_axis_off()
    return {"nodes": nodes, "blocks": blocks, "arrows": arrows, "texts": texts}


def plot_causal_mask(ax, cp: int, *, split: str = "zigzag", hop: int | None = None) -> dict:
    """The causal mask in ``2 cp`` chunks a side: queries down, keys across, coloured by the computing rank.

    With ``hop``, the chunk pairs computed at that hop (each rank's queries against the keys of rank
    ``r - hop``) are drawn full and the others faded. Returns ``{"cells", "alpha"}``: the PolyCollection
    and each cell's opacity.
    """
    n, owners = 2 * cp, chunk_owners(cp, split)
    verts, colors, alpha = [], [], []
    for qi in range(n):
        for ki in range(qi + 1):
            if ki == qi:  # half the pairs: the keys at or before each query
                verts.append([(ki, qi), (ki, qi + 1), (ki + 1, qi + 1)])
            else:
                verts.append([(ki, qi), (ki + 1, qi), (ki + 1, qi + 1), (ki, qi + 1)])
            colors.append(rank_color(owners[qi]))
            now = hop is None or owners[ki] == (owners[qi] - hop) % cp
            alpha.append(1.0 if now else 0.2)
    cells = PolyCollection(verts, facecolors=colors, edgecolors="white", linewidths=0.8)
    cells.set_alpha(None)
    rgba = cells.get_facecolors()
    rgba[:, 3] = alpha
    cells.set_facecolors(rgba)
    ax.add_collection(cells)
    ax.add_patch(Rectangle((0, 0), n, n, facecolor=_MASKED, edgecolor="#999999", linewidth=0.8, zorder=0))
    ax.set_xlim(0, n)
    ax.set_ylim(n, 0)
    ax.set_aspect("equal")
    every = 1 if cp <= 4 else 2
    ticks = [i + 0.5 for i in range(0, n, every)]
    ax.set_xticks(ticks, [str(owners[i]) for i in range(0, n, every)])
    ax.set_yticks(ticks, [str(owners[i]) for i in range(0, n, every)])
    ax.tick_params(length=0, labelsize=11)
    ax.set_xlabel("keys of rank")
    ax.set_ylabel("queries of rank")
    return {"cells": cells, "alpha": alpha}


def plot_rank_work(ax, seq: int, cp: int) -> dict:
    """Each rank's causal pairs over the mean, contiguous beside zig-zag (:func:`distlib.context_parallel.causal_pairs`)."""
    width, bars = 0.38, {}
    x = np.arange(cp)
    for i, split in enumerate(SPLITS[::-1]):
        work = causal_pairs(seq, cp, split=split)
        bars[split] = ax.bar(x + (i - 0.5) * width, work / work.mean(), width,
                             color=["#bbbbbb", "#0b5d9e"][i], label=split.replace("zigzag", "zig-zag"))
    ax.axhline(1.0, color="black", linewidth=0.8)
    top = max(float(np.max(b.datavalues)) for b in bars.values())
    ax.set_ylim(0, top * 1.45)  # room above the bars for a legend
    ax.set_xticks(x, [str(r) for r in range(cp)])
    ax.set_xlabel("rank")
    ax.set_ylabel("attention work / mean")
    return bars


def plot_ring_schedule(ax, schedule, *, xmax: float | None = None, unit: float = 1.0) -> dict:
    """Every rank's pass round the ring in time (:class:`~distlib.context_parallel.RingSchedule`), rank 0 on top.

    A box per hop in the colour of the block's owner (rank ``r - h``), grey where the rank waits or is done;
    a dashed line where the step ends. ``unit`` divides the times (e.g. a mean block's compute). Returns
    ``{"boxes", "waits", "end"}``.
    """
    cp = schedule.compute_times.shape[0]
    end = schedule.step_time / unit
    waits = PolyCollection([[(0, r - 0.36), (end, r - 0.36), (end, r + 0.36), (0, r + 0.36)] for r in range(cp)],
                           facecolors=WAIT_COLOR, edgecolors="none", zorder=1)
    ax.add_collection(waits)
    verts, colors = [], []
    for r in range(cp):
        for h in range(cp):
            a, b = schedule.compute_start[r, h] / unit, schedule.compute_end[r, h] / unit
            if b > a:
                verts.append([(a, r - 0.36), (b, r - 0.36), (b, r + 0.36), (a, r + 0.36)])
                colors.append(rank_color((r - h) % cp))
    boxes = PolyCollection(verts, facecolors=colors, edgecolors="white", linewidths=0.6, zorder=2)
    ax.add_collection(boxes)
    line = ax.axvline(end, color="black", linestyle="--", linewidth=1.0, zorder=3)
    ax.set_xlim(0, (xmax if xmax is not None else end) * 1.02)
    ax.set_ylim(cp - 0.5, -0.5)
    ax.set_yticks(range(cp), [str(r) for r in range(cp)])
    ax.set_ylabel("rank")
    return {"boxes": boxes, "waits": waits, "end": line}


def rank_legend_handles(cp: int) -> list:
    """One patch per rank, for a legend: ``"rank r"`` in its colour."""
    return [Patch(color=rank_color(r), label=f"rank {r}") for r in range(cp)]


def _one_column(fig) -> None:
    """The phone copy's panels one under the other (the copy then gets constrained layout)."""
    axes = list(fig.axes)
    grid = fig.add_gridspec(len(axes), 1)
    for i, ax in enumerate(axes):
        ax.set_subplotspec(grid[i, 0])
        if ax.get_ylabel() == "" and i:  # a row of panels shares one label; a column needs it on each
            ax.set_ylabel("rank")


def phone_column(fig, *, height: float) -> None:
    """On a phone, ``fig``'s panels one under the other, ``height`` CSS px in all
    (:func:`distlib.static.phone.phone_layout`)."""
    phone_layout(fig, height=height, adjust=_one_column)
