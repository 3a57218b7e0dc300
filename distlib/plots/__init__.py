"""Drawings: ``plot_*(ax, result, ...)`` functions over the model layer.

Import a topic's module explicitly, e.g. ``from distlib.plots import ring``.
"""

import re as _re

__all__ = ["animation_html", "crisp_inline_figures"]


def crisp_inline_figures() -> bool:
    """In a Jupyter kernel, render inline figures for 2x screens ("retina").

    The PNG has twice the pixels and says its display size in its metadata,
    so the book (myst-nb) and Jupyter show it at its size, sharp, never
    stretched. Called when this package is imported; does nothing (and
    returns False) outside a kernel.
    """
    import sys

    if "ipykernel" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        if get_ipython() is None:
            return False
        set_matplotlib_formats("retina")
        return True
    except Exception:  # an old or unusual front end: keep its defaults
        return False


crisp_inline_figures()

_CDN_LINK = _re.compile(r'<link rel="stylesheet"\s+href="https://maxcdn\.bootstrapcdn\.com/font-awesome/[^"]*">\s*')


def animation_html(anim, **kwargs) -> str:
    """``anim.to_jshtml()`` without its link to Font Awesome on a CDN.

    matplotlib's player asks a CDN for Font Awesome 4 (its button icons). The
    static book already serves Font Awesome with the widget manager, and a
    reader offline must not wait on a CDN, so the link is dropped, except in
    Colab, which has the network and no other copy of those icons.

    The frames are rendered for 2x screens and shown at the figure's size in
    CSS pixels (96 per inch), shrinking on a narrow page, never stretched;
    no text in them is smaller than the page's small print (10 pt).
    """
    import re
    import sys

    from matplotlib.text import Text

    fig = anim._fig
    width_in, _ = fig.get_size_inches()
    fig.set_dpi(2 * 96)
    for t in fig.findobj(Text):
        if t.get_fontsize() < 10:
            t.set_fontsize(10)
    html = anim.to_jshtml(**kwargs)
    css = f"width:{round(width_in * 96)}px;max-width:100%;height:auto"
    html = re.sub(r'(<img id="_anim_img\w*")', rf'\1 style="{css}"', html, count=1)
    return html if "google.colab" in sys.modules else _CDN_LINK.sub("", html)
