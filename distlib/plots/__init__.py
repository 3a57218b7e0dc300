"""Drawings: ``plot_*(ax, result, ...)`` functions over the model layer.

Import a topic's module explicitly, e.g. ``from distlib.plots import ring``.
"""

import html as _html
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
    except Exception:  # an old or unusual front end: keep its defaults
        return False
    _static_figures(get_ipython())
    return True


def _static_figures(ip) -> None:
    """In the book build (``DISTLIB_STATIC_WIDGETS`` set), every figure carries a phone-sized twin."""
    from .pictures import install_figure_formatter, static_env

    env = static_env()
    if env is None:
        return
    folder, url = env
    install_figure_formatter(ip, None if folder == "inline" else folder, url)


crisp_inline_figures()

_CDN_LINK = _re.compile(r'<link rel="stylesheet"\s+href="https://maxcdn\.bootstrapcdn\.com/font-awesome/[^"]*">\s*')


def animation_html(anim, **kwargs) -> str:
    """``anim.to_jshtml()`` without its link to Font Awesome on a CDN.

    matplotlib's player asks a CDN for Font Awesome 4 (its button icons). The
    static book already serves Font Awesome with the widget manager, and a
    reader offline must not wait on a CDN, so the link is dropped, except in
    Colab, which has the network and no other copy of those icons.

    The frames are rendered for 2x screens and shown at the figure's size in
    CSS pixels (96 per inch, at most ``pictures.WIDE_MAX``), never stretched;
    no text in them is smaller than the page's small print
    (``pictures.MIN_FONT_PT``). In the book build the player comes twice,
    the second drawn again for a phone (``pictures.NARROW`` CSS px wide, as
    :func:`distlib.plots.pictures.phone_layout` on the figure says), and the page's
    CSS shows the one that fits the screen.
    """
    import sys

    from . import pictures

    fig = anim._fig
    w_in, h_in = fig.get_size_inches()
    wide = _jshtml(anim, min(w_in * pictures.CSS_DPI, pictures.WIDE_MAX), h_in * pictures.CSS_DPI, **kwargs)
    if pictures.static_env() is not None:
        spec = getattr(fig, "_distlib_phone", None) or {}
        pictures.lay_out_for_phone(fig)
        narrow = _jshtml(anim, pictures.NARROW, spec.get("height") or h_in * pictures.CSS_DPI, **kwargs)
        fig.set_size_inches(w_in, h_in)
        html = f'<div class="distlib-only-wide">{wide}</div><div class="distlib-only-narrow">{narrow}</div>'
    else:
        html = wide
    return html if "google.colab" in sys.modules else _CDN_LINK.sub("", html)


#: a frame in matplotlib's player: base64 broken into lines that end in a backslash (a JS string continued)
_FRAME = _re.compile(r"data:image/png;base64,([A-Za-z0-9+/=\\\n]+)")


def _palette_frames(html: str) -> str:
    """The player's frames as 256-colour palette PNGs: a third of the bytes a page sends.

    matplotlib embeds every frame as an RGBA PNG in base64; the charts these
    players show have a few flat colours, which a palette keeps. (Each frame
    stays where it was: only its bytes change.)
    """
    import base64
    import io

    from PIL import Image

    from .pictures import palette_png

    def smaller(m):
        raw = base64.b64decode(m.group(1).replace("\\", "").replace("\n", ""))
        png = palette_png(Image.open(io.BytesIO(raw)))
        return "data:image/png;base64," + base64.b64encode(png if len(png) < len(raw) else raw).decode("ascii")

    return _FRAME.sub(smaller, html)


def _jshtml(anim, width: float, height: float, **kwargs) -> str:
    """One player, its frames ``width`` x ``height`` CSS px, drawn at 2x."""
    import re

    from . import pictures

    fig = anim._fig
    fig.set_size_inches(width / pictures.CSS_DPI, height / pictures.CSS_DPI)
    fig.set_dpi(pictures.SCALE * pictures.CSS_DPI)
    pictures.enforce_min_font(fig)
    anim.__dict__.pop("_html_representation", None)  # to_jshtml keeps its first answer (if it has one)
    html = _palette_frames(anim.to_jshtml(**kwargs))
    css = f"width:{round(width)}px;max-width:100%;height:auto"
    alt = _html.escape("animation, its last frame: " + pictures._alt(fig), quote=True)
    # a function, not a template: the alt text is inserted as it is, backslashes and all
    return re.sub(r'(<img id="_anim_img\w*")', lambda m: f'{m.group(1)} style="{css}" alt="{alt}"', html, count=1)
