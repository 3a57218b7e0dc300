"""The phone layout, and what the static layer remembers of a figure to draw it for a phone.

A figure is drawn twice for the static book (:mod:`distlib.static.pictures`):
as it is, and again :data:`~distlib.static.pictures.NARROW` CSS px wide, on a
copy. What the second drawing needs to know (its height, an ``adjust``
function, which axes' legends go under them, how a panel of a grid wants to
be laid out) is kept here, in a registry keyed by the figure and its axes
(weak references: a figure closed and forgotten takes its notes with it),
never as attributes hung on matplotlib's objects. :func:`copy_notes` hands
them on to the copy that is drawn for the phone.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field, replace
from typing import Callable

__all__ = ["PhoneLayout", "Panel", "LegendBelow", "AxesNotes", "phone_layout", "phone_spec", "axes_notes",
           "set_panel", "panel", "mark_legend_below_on_phone", "legend_below_on_phone", "copy_notes"]


@dataclass(frozen=True)
class PhoneLayout:
    """How a figure is redrawn for a phone: ``height`` in CSS px (None: its own), ``adjust(figure)``."""

    height: float | None = None
    adjust: Callable | None = None


@dataclass(frozen=True)
class Panel:
    """How one panel of a grid wants to be laid out on a phone (:mod:`distlib.plots.topology`).

    ``ratio``: its drawing's height over its width; ``full``: it needs the
    phone's whole width (the grid becomes one column); ``extra``: CSS px
    under the drawing (tick labels, an x label).
    """

    ratio: float
    full: bool
    extra: float = 0.0


@dataclass(frozen=True)
class LegendBelow:
    """Where :func:`~distlib.static.legend.legend_below` put an axes' legend, to put it there again.

    ``drop``: inches from the axes' bottom edge to the legend's top, or
    ``"figure"`` (at the figure's bottom edge); ``centre``: ``"axes"`` or
    ``"figure"``; ``options``: the rest of what ``ax.legend`` was given
    (never its handles); ``legend``: a weak reference to the legend made.
    """

    drop: float | str
    centre: str
    options: dict
    legend: Callable = field(default=lambda: None, repr=False)


@dataclass
class AxesNotes:
    """What the static layer knows of one axes."""

    #: its legend under the axes, as placed (None: not placed by legend_below)
    legend: LegendBelow | None = None
    #: on a phone, its legend (any, inside the axes on a desktop) moves under it
    legend_below_on_phone: bool = False
    #: its place in a grid of panels, on a phone
    panel: Panel | None = None


@dataclass
class _FigureNotes:
    phone: PhoneLayout | None = None
    axes: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary)


#: figure -> its notes. Weak keys; the values hold no reference back to the figure.
_FIGURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _notes(figure, *, create: bool = True) -> _FigureNotes | None:
    notes = _FIGURES.get(figure)
    if notes is None and create:
        notes = _FIGURES[figure] = _FigureNotes()
    return notes


def phone_layout(figure, *, height: float | None = None, adjust: Callable | None = None):
    """Say how ``figure`` is redrawn for a phone (NARROW CSS px wide).

    ``height``: its height there in CSS px (default: the same height as on a
    desktop, which gives the narrower panels more room); ``adjust(figure)``:
    changes for the narrow drawing (move a legend below, fewer ticks, ...),
    applied after the wide picture is drawn. Returns ``figure``.

    >>> from matplotlib.figure import Figure
    >>> fig = phone_layout(Figure(), height=300)
    >>> phone_spec(fig)
    PhoneLayout(height=300, adjust=None)
    """
    _notes(figure).phone = PhoneLayout(height=height, adjust=adjust)
    return figure


def phone_spec(figure) -> PhoneLayout | None:
    """The :class:`PhoneLayout` said for ``figure`` by :func:`phone_layout`, or None."""
    notes = _notes(figure, create=False)
    return None if notes is None else notes.phone


def axes_notes(ax) -> AxesNotes:
    """The notes of ``ax`` (made empty the first time)."""
    by_axes = _notes(ax.figure).axes
    notes = by_axes.get(ax)
    if notes is None:
        notes = by_axes[ax] = AxesNotes()
    return notes


def _peek(ax) -> AxesNotes | None:
    notes = _notes(ax.figure, create=False)
    return None if notes is None else notes.axes.get(ax)


def set_panel(ax, panel_: Panel) -> None:
    """Record how ``ax``, a panel of a grid, is laid out on a phone."""
    axes_notes(ax).panel = panel_


def panel(ax) -> Panel | None:
    """How ``ax`` said it is laid out on a phone (:func:`set_panel`), or None."""
    notes = _peek(ax)
    return None if notes is None else notes.panel


def mark_legend_below_on_phone(ax) -> None:
    """On a phone, the legend of ``ax`` (whichever it has then) moves under it."""
    axes_notes(ax).legend_below_on_phone = True


def legend_below_on_phone(ax) -> bool:
    """Whether :func:`mark_legend_below_on_phone` was said of ``ax``."""
    notes = _peek(ax)
    return bool(notes is not None and notes.legend_below_on_phone)


def copy_notes(source, copy) -> None:
    """Give ``copy`` (an unpickled copy of figure ``source``) the notes of ``source``.

    The axes are matched by their place in ``figure.axes`` (a copy keeps the
    order); a legend placed under its axes stays known as such when the
    copy's axes holds the copy of that very legend.
    """
    notes = _notes(source, create=False)
    if notes is None:
        return
    mine = _notes(copy)
    mine.phone = notes.phone
    for ax, twin in zip(source.axes, copy.axes):
        seen = notes.axes.get(ax)
        if seen is None:
            continue
        legend = seen.legend
        if legend is not None:
            same = legend.legend() is not None and legend.legend() is ax.get_legend()
            new = twin.get_legend() if same else None
            legend = replace(legend, legend=weakref.ref(new) if new is not None else (lambda: None))
        mine.axes[twin] = AxesNotes(legend=legend, legend_below_on_phone=seen.legend_below_on_phone,
                                    panel=seen.panel)
