"""Drawings: ``plot_*(ax, result, ...)`` functions over the model layer.

Import a topic's module explicitly, e.g. ``from distlib.plots import ring``.
``animation_html`` and ``crisp_inline_figures`` live in :mod:`distlib.static`
and are re-exported here; importing this package in a kernel calls
:func:`crisp_inline_figures`.
"""

from ..static.animation import animation_html
from ..static.kernel import crisp_inline_figures

__all__ = ["animation_html", "crisp_inline_figures"]

crisp_inline_figures()
