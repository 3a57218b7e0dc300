"""Drawings for the chapter "A cluster on one machine": the race of flat and hierarchical all-reduce."""

from __future__ import annotations

import numpy as np

from ..collectives import TWO_LEVEL_ALGORITHMS
from ..static.legend import legend_below
from ..static.phone import phone_layout
from ..static.pictures import CSS_DPI
from .overlap import phone_figure

__all__ = ["plot_race"]

_COLORS = {"ring": "#1f77b4", "hierarchical": "#D55E00", "builtin": "#7f7f7f"}
_LABELS = {"ring": "flat ring", "hierarchical": "hierarchical", "builtin": "MPICH built-in"}


def plot_race(ax, races, *, n_bytes=None, algorithms=TWO_LEVEL_ALGORITHMS):
    """Bus bandwidth measured (bars) and predicted by the two-level model (black ticks), per link rate.

    Parameters
    ----------
    ax : matplotlib Axes
    races : sequence of :class:`distlib.collectives.measured.Race`
        One per link rate (each with a throttled link).
    n_bytes : int, optional
        The buffer size to show (default: each race's largest).
    algorithms : sequence of str
        Default :data:`distlib.collectives.TWO_LEVEL_ALGORITHMS`, flat ring first.

    Returns
    -------
    list of matplotlib artists
    """
    artists = []
    width = 0.8 / len(algorithms)
    x = np.arange(len(races))
    for j, name in enumerate(algorithms):
        measured, model = [], []
        for race in races:
            size = n_bytes if n_bytes is not None else race.rows[-1].n_bytes
            row = next(r for r in race.rows if r.n_bytes == size)
            measured.append(row.busbw[name] / 1e6)
            model.append(race.predicted_busbw(name, size) / 1e6)
        pos = x + (j - (len(algorithms) - 1) / 2) * width
        artists.append(ax.bar(pos, measured, width * 0.9, color=_COLORS.get(name), label=f"{_LABELS.get(name, name)}, measured"))
        artists.append(ax.hlines(model, pos - width * 0.45, pos + width * 0.45, colors="black", linewidth=2,
                                 label="two-level model" if j == 0 else None))  # fmt: skip
    for race, xi in zip(races, x):
        artists.append(ax.hlines(race.link_bandwidth / 1e6, xi - 0.45, xi + 0.45, colors="black", linestyles=":",
                                 label="link rate" if xi == 0 else None))  # fmt: skip
    ax.set_xticks(x)
    ax.set_xticklabels([f"{race.link_gbit:g} Gbit/s" for race in races])
    ax.set_xlabel("link between the nodes (per direction)")
    ax.set_ylabel("bus bandwidth (MB/s)")
    _legend(ax, ncol=2)
    # on a phone: the legend in one column, the title in lines that fit
    phone_layout(ax.figure, height=ax.figure.get_size_inches()[1] * CSS_DPI + 90, adjust=_phone_race)
    return artists


def _legend(ax, *, ncol):
    """The legend under the x label: inside, it covers a bar or the link's line."""
    # 0.52 in, as this picture was tuned (the computed drop, for 10 pt tick and x labels, is 0.5 in)
    return legend_below(ax, drop=0.52, fontsize=8, ncols=ncol, frameon=False)


def _phone_race(fig) -> None:
    """The race's figure on a phone: a legend of one column (``phone_layout``'s adjust)."""
    for ax in fig.axes:
        if ax.get_legend() is not None:
            _legend(ax, ncol=1)
    phone_figure(fig)
