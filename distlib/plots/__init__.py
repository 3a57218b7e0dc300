"""Drawings: ``plot_*(ax, result, ...)`` functions over the model layer.

Import a topic's module explicitly, e.g. ``from distlib.plots import ring``.
"""

import re as _re

__all__ = ["animation_html"]

_CDN_LINK = _re.compile(r'<link rel="stylesheet"\s+href="https://maxcdn\.bootstrapcdn\.com/font-awesome/[^"]*">\s*')


def animation_html(anim, **kwargs) -> str:
    """``anim.to_jshtml()`` without its link to Font Awesome on a CDN.

    matplotlib's player asks a CDN for Font Awesome 4 (its button icons). The
    static book already serves Font Awesome with the widget manager, and a
    reader offline must not wait on a CDN, so the link is dropped, except in
    Colab, which has the network and no other copy of those icons.
    """
    import sys

    html = anim.to_jshtml(**kwargs)
    return html if "google.colab" in sys.modules else _CDN_LINK.sub("", html)
