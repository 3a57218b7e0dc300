"""Drawings: ``plot_*(ax, result, ...)`` functions over the model layer.

Import a topic's module explicitly, e.g. ``from distlib.plots import ring``.
Importing this package changes nothing in a kernel: the book build has its
kernels call :func:`crisp_inline_figures` as they start (see
:mod:`distlib.static.kernel`), and a reader's notebook may call it too.
``animation_html`` and ``crisp_inline_figures`` live in :mod:`distlib.static`
and are re-exported here.
"""

from ..static.animation import animation_html
from ..static.kernel import crisp_inline_figures

__all__ = ["animation_html", "crisp_inline_figures"]
