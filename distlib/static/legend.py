"""One way to put a legend under its axes: below the x tick labels and the x label, entries centred.

Inside the axes a legend covers data somewhere at some setting; a phone's
narrower plot makes that certain. So most of the book's plots put theirs
under the axes, and every one of them asks :func:`legend_below`.

How far under the axes' bottom edge the legend's top sits (the *drop*) is
computed from what is there (:func:`text_under`): the tick marks and their
pad, each line of the tick labels and of the x label at its own font size
(1.25 lines apart), and a 4 pt gap. A plot may say how many lines of x label
text to leave room for (``lines=``: a label whose lines are taller than its
font, as a log axis's powers of ten beside a two-line label) or give the
drop itself (``drop=``, inches), or put the legend at the figure's bottom
edge (``drop="figure"``), where the axes' own margin leaves room for it.

The placement is recorded (:class:`distlib.static.phone.LegendBelow`), so a
phone layout can put the legend there again in one column
(:func:`legend_below_again`), whatever the fonts have become meanwhile.
"""

from __future__ import annotations

import weakref

from .phone import LegendBelow, axes_notes

__all__ = ["legend_below", "legend_below_again", "placed_below", "recorded_below", "placement", "text_under"]

#: Points between the last line of text under the axes and the legend.
GAP_PT = 4
#: Lines of text are this many font sizes apart.
LINE_SPACING = 1.25


def text_under(ax, *, lines: float | None = None) -> float:
    """Points from the bottom edge of ``ax`` to below its x tick labels and x label.

    The tick marks and their pad (``xtick.major.size`` and ``.pad``), then
    each line of text under the axes at its own font size, then
    :data:`GAP_PT`. ``lines``: that many lines at the x label's font size
    instead of the lines counted (the tallest tick label's and the x
    label's).

    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> ax.set_xticks([0, 1], ["one", "two\\nlines"], fontsize=11)  # doctest: +ELLIPSIS
    [...]
    >>> ax.set_xlabel("x", fontsize=11)  # doctest: +ELLIPSIS
    Text(...)
    >>> text_under(ax)  # 3.5 + 3.5 + (2 + 1) * 11 * 1.25 + 4
    52.25
    >>> text_under(ax, lines=1)
    24.75
    """
    from matplotlib import rcParams

    ticks = rcParams["xtick.major.size"] + rcParams["xtick.major.pad"]
    label = ax.xaxis.label
    if lines is not None:
        return ticks + lines * label.get_fontsize() * LINE_SPACING + GAP_PT
    shown = [t for t in ax.get_xticklabels() if t.get_text()]
    if shown:
        tallest = max(shown, key=lambda t: (t.get_text().count("\n"), t.get_fontsize()))
        ticks += (tallest.get_text().count("\n") + 1) * tallest.get_fontsize() * LINE_SPACING
    if label.get_text():
        ticks += (label.get_text().count("\n") + 1) * label.get_fontsize() * LINE_SPACING
    return ticks + GAP_PT


def placement(ax, drop: float | str, centre: str = "axes") -> dict:
    """The keywords of ``ax.legend`` that put a legend ``drop`` inches under ``ax`` (or at the figure's
    bottom edge: ``drop="figure"``), centred on the axes or on the figure (``centre``)."""
    from matplotlib.transforms import ScaledTranslation, blended_transform_factory

    fig = ax.figure
    if drop == "figure":
        return {"loc": "lower center", "bbox_to_anchor": (0.5, 0.0), "bbox_transform": fig.transFigure}
    if centre not in ("axes", "figure"):
        raise ValueError(f"centre must be 'axes' or 'figure', got {centre!r}")
    below = ax.transAxes + ScaledTranslation(0, -drop, fig.dpi_scale_trans)
    if centre == "figure":
        below = blended_transform_factory(fig.transFigure, below)
    return {"loc": "upper center", "bbox_to_anchor": (0.5, 0), "bbox_transform": below}


def legend_below(ax, handles=None, labels=None, *, drop: float | str | None = None, lines: float | None = None,
                 centre: str = "axes", **options):
    """A legend under ``ax``, below its x tick labels and x label; returns it.

    Parameters
    ----------
    ax : matplotlib Axes
    handles, labels : optional
        As ``ax.legend`` takes them (default: the labelled artists of ``ax``).
    drop : float or "figure", optional
        Inches from the axes' bottom edge to the legend's top. Default:
        computed, ``text_under(ax, lines=lines) / 72``. ``"figure"``: the
        legend sits on the figure's bottom edge instead.
    lines : float, optional
        Lines of text under the axes to leave room for (see :func:`text_under`).
    centre : {"axes", "figure"}
        Centred under the axes, or on the figure (whose y labels push the
        axes right: a legend as wide as the figure would stick out there).
    **options
        The rest of ``ax.legend``'s keywords (``ncols``, ``fontsize``, ``frameon``, ...).

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> _ = ax.plot([1, 2], label="a line")
    >>> leg = legend_below(ax, drop=0.5, frameon=False)
    >>> placed_below(ax).drop, placed_below(ax).options
    (0.5, {'frameon': False})
    """
    if drop is None:
        drop = text_under(ax, lines=lines) / 72
    given = {k: v for k, v in (("handles", handles), ("labels", labels)) if v is not None}
    leg = ax.legend(**given, **placement(ax, drop, centre), **options)
    axes_notes(ax).legend = LegendBelow(drop=drop, centre=centre, options=dict(options), legend=weakref.ref(leg))
    return leg


def legend_below_again(ax, handles=None, labels=None, **changes):
    """Put the legend of ``ax`` where :func:`legend_below` last put it, with ``changes`` to its options
    (``ncols=1`` on a phone); ``handles``/``labels`` as ``ax.legend`` takes them."""
    seen = axes_notes(ax).legend
    if seen is None:
        raise ValueError("legend_below_again: this axes has no legend placed by legend_below")
    return legend_below(ax, handles, labels, drop=seen.drop, centre=seen.centre, **{**seen.options, **changes})


def recorded_below(ax) -> LegendBelow | None:
    """Where :func:`legend_below` last put a legend of ``ax`` (whichever legend ``ax`` shows now), or None."""
    return axes_notes(ax).legend


def placed_below(ax) -> LegendBelow | None:
    """How :func:`legend_below` placed the legend ``ax`` shows now, or None if it did not place that one."""
    seen = recorded_below(ax)
    leg = ax.get_legend()
    return seen if seen is not None and leg is not None and seen.legend() is leg else None
