"""Animations (matplotlib's ``to_jshtml`` player) for the static book: at their CSS size, twice in the book.

The frames are rendered for 2x screens and shown at the figure's size in
CSS pixels (96 per inch, at most :data:`~distlib.static.pictures.WIDE_MAX`),
never stretched; no text in them is smaller than the page's small print
(:data:`~distlib.static.pictures.MIN_FONT_PT`). In the book build the player
comes twice, the second drawn again for a phone
(:data:`~distlib.static.pictures.NARROW` CSS px wide, as
:func:`distlib.static.phone.phone_layout` on the figure says), and the page's
CSS shows the one that fits the screen.
"""

from __future__ import annotations

import html as _html
import re as _re

from . import pictures
from .phone import phone_spec
from .settings import environment

__all__ = ["animation_html"]

_CDN_LINK = _re.compile(r'<link rel="stylesheet"\s+href="https://maxcdn\.bootstrapcdn\.com/font-awesome/[^"]*">\s*')

#: a frame in matplotlib's player: base64 broken into lines that end in a backslash (a JS string continued)
_FRAME = _re.compile(r"data:image/png;base64,([A-Za-z0-9+/=\\\n]+)")


def animation_html(anim, **kwargs) -> str:
    """``anim.to_jshtml()`` without its link to Font Awesome on a CDN, drawn for the page it is on.

    matplotlib's player asks a CDN for Font Awesome 4 (its button icons). The
    static book already serves Font Awesome with the widget manager, and a
    reader offline must not wait on a CDN, so the link is dropped, except in
    Colab, which has the network and no other copy of those icons.

    The frames are rendered for 2x screens and shown at the figure's size in
    CSS pixels (96 per inch, at most ``pictures.WIDE_MAX``), never stretched;
    no text in them is smaller than the page's small print
    (``pictures.MIN_FONT_PT``). In the book build (the environment says so:
    :func:`distlib.static.settings.environment`) the player comes twice, the
    second drawn again for a phone (``pictures.NARROW`` CSS px wide, as
    :func:`distlib.static.phone.phone_layout` on the figure says), and the
    page's CSS shows the one that fits the screen.
    """
    import sys

    fig = anim._fig
    w_in, h_in = fig.get_size_inches()
    wide = _jshtml(anim, min(w_in * pictures.CSS_DPI, pictures.WIDE_MAX), h_in * pictures.CSS_DPI, **kwargs)
    if environment().frames is not None:
        spec = phone_spec(fig)
        pictures.lay_out_for_phone(fig)
        narrow = _jshtml(anim, pictures.NARROW, (spec and spec.height) or h_in * pictures.CSS_DPI, **kwargs)
        fig.set_size_inches(w_in, h_in)
        html = f'<div class="distlib-only-wide">{wide}</div><div class="distlib-only-narrow">{narrow}</div>'
    else:
        html = wide
    return html if "google.colab" in sys.modules else _CDN_LINK.sub("", html)


def _palette_frames(html: str) -> str:
    """The player's frames as 256-colour palette PNGs: a third of the bytes a page sends.

    matplotlib embeds every frame as an RGBA PNG in base64; the charts these
    players show have a few flat colours, which a palette keeps. (Each frame
    stays where it was: only its bytes change.)
    """
    import base64
    import io

    from PIL import Image

    def smaller(m):
        raw = base64.b64decode(m.group(1).replace("\\", "").replace("\n", ""))
        png = pictures.palette_png(Image.open(io.BytesIO(raw)))
        return "data:image/png;base64," + base64.b64encode(png if len(png) < len(raw) else raw).decode("ascii")

    return _FRAME.sub(smaller, html)


def _jshtml(anim, width: float, height: float, **kwargs) -> str:
    """One player, its frames ``width`` x ``height`` CSS px, drawn at 2x."""
    fig = anim._fig
    fig.set_size_inches(width / pictures.CSS_DPI, height / pictures.CSS_DPI)
    fig.set_dpi(pictures.SCALE * pictures.CSS_DPI)
    pictures.enforce_min_font(fig)
    anim.__dict__.pop("_html_representation", None)  # to_jshtml keeps its first answer (if it has one)
    html = _palette_frames(anim.to_jshtml(**kwargs))
    css = f"width:{round(width)}px;max-width:100%;height:auto"
    alt = _html.escape("animation, its last frame: " + pictures.alt_text(fig), quote=True)
    # a function, not a template: the alt text is inserted as it is, backslashes and all
    return _re.sub(r'(<img id="_anim_img\w*")', lambda m: f'{m.group(1)} style="{css}" alt="{alt}"', html, count=1)
