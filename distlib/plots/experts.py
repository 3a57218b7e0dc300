"""Drawing chapter 15's experts: tokens to experts and back, the load against the capacity, the all-to-all's bytes.

:func:`plot_token_flow` draws a dispatch (:func:`distlib.dispatch_matrix` with ``to="expert"``): the ranks on
the left, the experts in the middle (coloured by the rank holding them), the ranks again on the right; a band
from rank to expert for the rows sent (the dispatch) and from expert back to rank (the combine), as wide as
the rows. :func:`plot_expert_load` draws a :class:`distlib.DispatchStats`: per expert the assignments kept and
dropped, the capacity and the mean. :func:`plot_alltoall_bytes` draws the bytes each rank sends and receives in
one all-to-all beside the closed form of :func:`distlib.moe_alltoall`. :func:`plot_imbalance` draws
:class:`distlib.BalanceRun` curves, :func:`plot_nodes_per_token` two :class:`distlib.NodeTraffic` histograms.

Each function draws on the axes it is given and returns what it drew. Colours: Okabe and Ito's.
"""

from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection

from ..experts_model import BalanceRun, DispatchStats, MoeAlltoall, NodeTraffic
from ..static.phone import phone_layout

__all__ = ["RANK_COLORS", "KEPT_COLOR", "DROPPED_COLOR", "BALANCING_COLORS", "rank_color", "plot_token_flow",
           "plot_expert_load", "plot_alltoall_bytes", "plot_imbalance", "plot_nodes_per_token", "phone_column"]

#: One colour per rank (cycled past eight).
RANK_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#7f7f7f")
#: Assignments an expert computes, and those past its capacity.
KEPT_COLOR, DROPPED_COLOR = "#0072B2", "#D55E00"
#: One colour per balancing rule of :func:`distlib.balance_simulation`.
BALANCING_COLORS = {"none": "#7f7f7f", "aux": "#E69F00", "bias": "#009E73"}


def rank_color(r: int) -> str:
    """Rank ``r``'s colour."""
    return RANK_COLORS[int(r) % len(RANK_COLORS)]


def _flow_array(flow) -> np.ndarray:
    arr = np.asarray(flow)
    if arr.ndim != 2 or arr.shape[1] % arr.shape[0] or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"flow must be rows from each of ep ranks to each of E experts (ep, E), E a multiple of "
                         f"ep (distlib.dispatch_matrix(..., to='expert')), got shape {arr.shape}")
    return arr


def _spots(n: int) -> np.ndarray:
    """``n`` heights spread over [0, 1], top first."""
    return np.array([0.5]) if n == 1 else np.linspace(1.0, 0.0, n)


def _bands(flow, xs, y_from, y_to, colors, widest) -> LineCollection:
    segs, widths, cols = [], [], []
    for s, e in zip(*np.nonzero(flow)):
        segs.append([(xs[0], y_from[s if xs[0] != 1 else e]), (xs[1], y_to[e if xs[1] == 1 else s])])
        widths.append(0.4 + 5.6 * flow[s, e] / widest)
        cols.append(colors[s])
    alpha = max(0.12, min(0.45, 60.0 / max(len(segs), 1)))  # many bands: fainter, so that the last drawn hides less
    return LineCollection(segs, linewidths=widths, colors=cols, alpha=alpha, capstyle="butt")


def plot_token_flow(ax, flow, *, labels: bool = True) -> dict:
    """Tokens from the ranks to the experts (the dispatch) and back (the combine).

    Parameters
    ----------
    ax : matplotlib Axes
    flow : array_like of int, (ep, E)
        Rows each rank sends each expert (:func:`distlib.dispatch_matrix` with ``to="expert"``); expert ``e``
        lives on rank ``e // (E / ep)``.
    labels : bool
        Name the three columns.

    Returns
    -------
    dict
        ``"dispatch"`` and ``"combine"`` (LineCollections, one band per rank-expert pair with rows, as wide as
        their share of the widest), ``"ranks"`` and ``"experts"`` (the PathCollections of the dots).
    """
    flow = _flow_array(flow)
    ep, experts = flow.shape
    y_rank, y_expert = _spots(ep), _spots(experts)
    owner = np.arange(experts) // (experts // ep)
    widest = max(int(flow.max()), 1)
    colors = [rank_color(r) for r in range(ep)]
    dispatch = ax.add_collection(_bands(flow, (0, 1), y_rank, y_expert, colors, widest))
    combine = ax.add_collection(_bands(flow, (1, 2), y_expert, y_rank, colors, widest))
    dot = max(8.0, 90.0 / ep)
    ranks = ax.scatter(np.r_[np.zeros(ep), np.full(ep, 2.0)], np.r_[y_rank, y_rank], s=dot * 4,
                       c=colors + colors, zorder=3, edgecolors="white")
    expert_dots = ax.scatter(np.ones(experts), y_expert, s=max(6.0, 600.0 / experts), zorder=3,
                             c=[rank_color(r) for r in owner], marker="s", edgecolors="none")
    ax.set_xlim(-0.5, 2.5)  # room for the column names under the outer dots
    ax.set_ylim(-0.08, 1.08)
    ax.set_yticks([])
    if labels:
        ax.set_xticks([0, 1, 2], ["from ranks", f"{experts} experts", "back to ranks"])
    else:
        ax.set_xticks([])
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.tick_params(length=0)
    return {"dispatch": dispatch, "combine": combine, "ranks": ranks, "experts": expert_dots}


def plot_expert_load(ax, stats: DispatchStats, *, owner=None) -> dict:
    """Assignments per expert: those kept (blue) under those dropped (vermilion), the capacity and the mean.

    ``owner`` (E,): each expert's rank (:func:`distlib.expert_ranks`); when given, a thin strip under the bars
    shows it in the rank's colour. Returns ``{"kept", "dropped"}`` (BarContainers), ``"capacity"`` (the Line2D,
    None when unbounded) and ``"mean"`` (Line2D).
    """
    if not isinstance(stats, DispatchStats):
        raise TypeError(f"stats must be a DispatchStats (distlib.dispatch_stats), got {type(stats).__name__}")
    experts = stats.load.size
    x = np.arange(experts)
    kept = ax.bar(x, stats.kept, width=0.85, color=KEPT_COLOR, label="kept")
    dropped = ax.bar(x, stats.dropped, bottom=stats.kept, width=0.85, color=DROPPED_COLOR, label="dropped")
    mean = ax.axhline(stats.load.mean(), color="black", linestyle=":", linewidth=1.0, label="mean load")
    cap = None
    top = max(float(stats.load.max()), 1.0)
    if stats.capacity is not None:
        cap = ax.axhline(stats.capacity, color="black", linestyle="--", linewidth=1.2, label="capacity")
        top = max(top, float(stats.capacity))
    if owner is not None:
        owner = np.asarray(owner)
        ax.bar(x, np.full(experts, -0.04 * top), width=1.0, color=[rank_color(r) for r in owner], zorder=0)
    ax.set_xlim(-0.6, experts - 0.4)
    ax.set_ylim(-0.05 * top if owner is not None else 0, top * 1.12)
    ax.set_xlabel("expert")
    ax.set_ylabel("assignments")
    if experts > 16:
        ax.set_xticks(np.arange(0, experts, experts // 8))
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return {"kept": kept, "dropped": dropped, "capacity": cap, "mean": mean}


def plot_alltoall_bytes(ax, matrix, a2a: MoeAlltoall, *, row_bytes: float) -> dict:
    """Bytes each rank sends to and receives from the other ranks in one all-to-all, beside the closed form.

    Parameters
    ----------
    ax : matplotlib Axes
    matrix : array_like of int, (ep, ep)
        Rows rank ``s`` sends rank ``d`` (:func:`distlib.dispatch_matrix`); the diagonal stays on the rank.
    a2a : MoeAlltoall
        Its ``sent``: the bytes each rank sends under uniform routing, nothing dropped (a dashed line).
    row_bytes : float
        Bytes of one row (``hidden * bytes_per_element``).

    Returns
    -------
    dict
        ``"sent"``, ``"received"`` (BarContainers, bytes), ``"uniform"`` (Line2D), ``"scale"`` (the unit's bytes,
        ``"unit"`` its name).
    """
    m = np.asarray(matrix)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"matrix must be rows between ep ranks (ep, ep), got shape {m.shape}")
    if not isinstance(a2a, MoeAlltoall):
        raise TypeError(f"a2a must be a MoeAlltoall (distlib.moe_alltoall), got {type(a2a).__name__}")
    off = m - np.diag(np.diag(m))
    sent, received = off.sum(axis=1) * float(row_bytes), off.sum(axis=0) * float(row_bytes)
    top = max(float(sent.max(initial=0)), float(received.max(initial=0)), a2a.sent, 1.0)
    scale, unit = next((s, u) for s, u in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "bytes")) if top >= s)
    x = np.arange(m.shape[0])
    bars_s = ax.bar(x - 0.2, sent / scale, width=0.4, color=[rank_color(r) for r in x], label="sent")
    bars_r = ax.bar(x + 0.2, received / scale, width=0.4, color="white", edgecolor=[rank_color(r) for r in x],
                    hatch="///", label="received")
    uniform = ax.axhline(a2a.sent / scale, color="black", linestyle="--", linewidth=1.2,
                         label="uniform: T k (ep-1)/ep h bytes")
    ax.set_xticks(x, [str(r) for r in x])
    ax.set_xlabel("rank")
    ax.set_ylabel(f"{unit} per all-to-all")
    ax.set_ylim(0, top / scale * 1.18)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return {"sent": bars_s, "received": bars_r, "uniform": uniform, "scale": scale, "unit": unit}


def plot_imbalance(ax, runs) -> dict:
    """Max over mean load per step, one line per :class:`distlib.BalanceRun`, coloured by its rule.

    Returns ``{rule: Line2D}``.
    """
    runs = [runs] if isinstance(runs, BalanceRun) else list(runs)
    if not runs or not all(isinstance(r, BalanceRun) for r in runs):
        raise TypeError("runs must be BalanceRun results (distlib.balance_simulation), one or several")
    names = {"none": "no balancing", "aux": "aux loss", "bias": "bias (DeepSeek-V3)"}
    lines = {}
    for r in runs:
        (lines[r.balancing],) = ax.plot(np.arange(1, r.steps + 1), r.imbalance, color=BALANCING_COLORS[r.balancing],
                                        linewidth=2, label=names[r.balancing])
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle=":")
    ax.set_xlabel("step")
    ax.set_ylabel("max load / mean load")
    ax.set_ylim(0.9, max(float(r.imbalance.max()) for r in runs) * 1.08)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return lines


def plot_nodes_per_token(ax, traffic: dict, *, max_nodes: int | None = None) -> dict:
    """How many nodes each token's experts are on: one bar group per :class:`distlib.NodeTraffic` of ``traffic``
    (``{label: NodeTraffic}``), the limit ``max_nodes`` as a dashed line. Returns ``{label: BarContainer}``."""
    if not traffic or not all(isinstance(t, NodeTraffic) for t in traffic.values()):
        raise TypeError("traffic must map labels to NodeTraffic results (distlib.node_traffic)")
    most = max(int(t.nodes.max()) for t in traffic.values())
    x = np.arange(1, most + 1)
    width = 0.8 / len(traffic)
    bars = {}
    for i, (label, t) in enumerate(traffic.items()):
        share = np.bincount(t.nodes, minlength=most + 1)[1:] / t.nodes.size
        bars[label] = ax.bar(x + (i - (len(traffic) - 1) / 2) * width, share, width=width, label=label,
                             color=(KEPT_COLOR, "#009E73", "#E69F00")[i % 3])
    if max_nodes is not None:
        ax.axvline(max_nodes + 0.5, color="black", linestyle="--", linewidth=1.0)
    ax.set_xticks(x)
    ax.set_xlabel("nodes a token is sent to")
    ax.set_ylabel("share of tokens")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return bars


def _one_column(fig) -> None:
    """The phone copy's panels one under the other."""
    axes = list(fig.axes)
    grid = fig.add_gridspec(len(axes), 1)
    for i, ax in enumerate(axes):
        ax.set_subplotspec(grid[i, 0])


def phone_column(fig, *, height: float) -> None:
    """On a phone, ``fig``'s panels one under the other, ``height`` CSS px in all
    (:func:`distlib.static.phone.phone_layout`)."""
    phone_layout(fig, height=height, adjust=_one_column)
