"""Picture pairs: one drawing, two sizes, the browser picks.

A figure drawn for a desktop column and shrunk onto a phone loses its text:
a 672 px chart on a 360 px phone shows 10 pt labels at 7 px. So the book
carries every picture twice, rendered for the two places it is shown:

- **wide**, at most :data:`WIDE_MAX` CSS px: fits the output column of the
  book at every viewport wider than :data:`PHONE_MAX_VIEWPORT` (measured in
  Chromium: the column is 624 px at its narrowest desktop layout, 1200 px);
- **narrow**, :data:`NARROW` CSS px: fits the output column of a 360 px phone
  (328 px), laid out again for that width, not shrunk
  (:func:`distlib.static.phone.phone_layout` says how).

Both are rendered at :data:`SCALE` x their CSS size for 2x screens, with no
text smaller than :data:`MIN_FONT_PT` (11 pt = 14.7 CSS px; the page's
``<small>`` print is 14.4 px). :func:`picture_html` writes them beside the
page and returns a ``<picture>`` element: the browser fetches only the one
its screen needs, and shows it at its CSS size, never stretched.

The book build's kernels show every figure so
(:func:`distlib.static.kernel.install_figure_formatter`); in Jupyter and
Colab figures stay plain inline PNGs.
"""

from __future__ import annotations

import hashlib
import html
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .phone import copy_notes, phone_layout, phone_spec
from .settings import ENV_STRICT, strict_pictures

__all__ = ["MIN_FONT_PT", "WIDE_MAX", "NARROW", "PHONE_MAX_VIEWPORT", "SCALE", "CSS_DPI", "Rendering",
           "enforce_min_font", "render_figure", "fit_texts", "texts_outside", "fit_frame", "strict_pictures",
           "ENV_STRICT", "render_pair", "phone_layout", "phone_copy", "lay_out_for_phone", "picture_html",
           "palette_png", "constrained_layout", "alt_text"]

#: CSS pixels per inch (the browser's reference pixel).
CSS_DPI = 96
#: Device pixels per CSS pixel that pictures are rendered for (2x screens).
SCALE = 2
#: Smallest text in any picture, in points: 11 pt is 14.7 CSS px, no smaller
#: than the book's small print (``<small>`` in the body: 14.4 px).
MIN_FONT_PT = 11
#: Widest picture, CSS px: the book's output column is at least 624 px at
#: every viewport wider than PHONE_MAX_VIEWPORT.
WIDE_MAX = 620
#: Phone picture width, CSS px: the output column of a 360 px phone is 328 px.
NARROW = 328
#: Viewports this wide or narrower (CSS px) get the narrow picture.
PHONE_MAX_VIEWPORT = 651


@dataclass
class Rendering:
    """A PNG and the CSS size it is shown at (its pixels / SCALE)."""

    png: bytes
    width: int
    height: int


def enforce_min_font(figure, pt: float = MIN_FONT_PT) -> None:
    """Raise every text of ``figure`` (titles, labels, ticks, legends, notes) to at least ``pt``."""
    from matplotlib.text import Text

    for t in figure.findobj(Text):
        if t.get_fontsize() < pt:
            t.set_fontsize(pt)


#: The margin (inches) a tight picture keeps around what is drawn.
_PAD_IN = 0.06


def _png(figure, *, tight: bool, compact: bool, ratio: float = 1.0) -> Rendering:
    """``figure`` as a PNG at ``SCALE`` device pixels per CSS px (times ``ratio``: fewer, to shrink it)."""
    from PIL import Image as PILImage

    buf = io.BytesIO()
    kw = {"bbox_inches": "tight", "pad_inches": _PAD_IN} if tight else {}
    figure.savefig(buf, format="png", dpi=CSS_DPI * SCALE * ratio, facecolor="white", **kw)
    img = PILImage.open(io.BytesIO(buf.getvalue()))
    w, h = img.size
    data = palette_png(img) if compact else buf.getvalue()
    return Rendering(data, round(w / SCALE), round(h / SCALE))


def palette_png(img) -> bytes:
    """``img`` (a PIL image) as a 256-colour palette PNG: a third of the bytes of an RGBA one."""
    from PIL import Image as PILImage

    out = io.BytesIO()
    img.convert("RGB").quantize(colors=256, method=PILImage.Quantize.FASTOCTREE).save(
        out, format="png", compress_level=6)
    return out.getvalue()


def constrained_layout(figure) -> None:
    """Lay a phone copy out again with constrained layout, unless it has a layout engine of its own.

    A figure with no engine, or with the placeholder that ``fig.tight_layout()``
    leaves behind (it would keep the wide figure's margins, as fractions of a
    figure half as wide), gets matplotlib's constrained layout. One made with
    ``layout="constrained"`` or ``"tight"`` keeps it; so does one whose engine
    cannot be swapped (a colorbar made for another engine).
    """
    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    engine = figure.get_layout_engine()
    if engine is not None and not isinstance(engine, PlaceHolderLayoutEngine):
        return
    try:
        figure.set_layout_engine("constrained")
    except RuntimeError:
        pass


def render_figure(figure, *, width: float | None = None, height: float | None = None,
                  max_width: float | None = None, tight: bool = True, compact: bool = True,
                  strict: bool | None = None) -> Rendering:
    """Render ``figure`` as a 2x PNG, ``width`` x ``height`` CSS px (default: its own size).

    Text is raised to MIN_FONT_PT first. With ``tight`` the PNG is cropped to
    what is drawn (as Jupyter's inline backend does). If that comes out wider
    than ``max_width`` the figure is fitted, never shrunk first: every text
    that sticks out of the figure (a title, a legend entry, a note) is broken
    into lines measured in pixels (:func:`fit_texts`), the figure is narrowed
    and drawn again, a few times over. Only if it still does not fit is the
    picture drawn at a lower resolution so that it does (its text then a
    little under MIN_FONT_PT); ``strict`` (default: :func:`strict_pictures`)
    makes that last step a ``ValueError`` instead, as the tests want it. The
    text a figure carries can come from the machine (a CPU's name), so the
    build must never depend on it.
    """
    import warnings

    strict = strict_pictures() if strict is None else strict
    with warnings.catch_warnings():
        # a trial drawing too narrow for constrained layout says so; the next trial is wider
        warnings.filterwarnings("ignore", message="constrained_layout not applied")
        return _render_figure(figure, width=width, height=height, max_width=max_width, tight=tight,
                              compact=compact, strict=strict)


def _render_figure(figure, *, width, height, max_width, tight, compact, strict) -> Rendering:
    enforce_min_font(figure)
    w_in, h_in = figure.get_size_inches()
    if width is not None or height is not None:
        figure.set_size_inches((width or w_in * CSS_DPI) / CSS_DPI, (height or h_in * CSS_DPI) / CSS_DPI)
    out = _png(figure, tight=tight, compact=compact)
    for _ in range(6):
        if max_width is None or out.width <= max_width:
            return out
        wrapped = fit_texts(figure)
        if not wrapped:
            cur_w, cur_h = figure.get_size_inches()
            new_w = cur_w - (out.width - max_width + 2) / CSS_DPI
            if new_w * CSS_DPI < max_width / 2:
                break  # what sticks out does not narrow with the figure and cannot be wrapped (math, ticks)
            figure.set_size_inches(new_w, cur_h)
        out = _png(figure, tight=tight, compact=compact)
    if max_width is None or out.width <= max_width:
        return out
    if strict:
        raise ValueError(f"figure does not fit in {max_width} CSS px (drawn {out.width} px wide) even with its "
                         "text wrapped: what sticks out cannot be broken into lines; give it a phone_layout()")
    return _shrunk(figure, max_width, tight=tight, compact=compact, drawn=out)


def _shrunk(figure, max_width: float, *, tight: bool, compact: bool, drawn: Rendering) -> Rendering:
    """The last resort of :func:`render_figure`: ``figure`` drawn at fewer pixels, ``max_width`` CSS px wide."""
    from PIL import Image as PILImage

    ratio = max_width / drawn.width
    for _ in range(4):
        out = _png(figure, tight=tight, compact=compact, ratio=ratio)
        pixels = PILImage.open(io.BytesIO(out.png)).size[0]
        if pixels <= max_width * SCALE:  # never more pixels than 2x its CSS width: never stretched
            break
        ratio *= max_width * SCALE / (pixels + 1)
    return Rendering(out.png, min(int(max_width), out.width), out.height)


def fit_texts(figure, *, pad_in: float = _PAD_IN, drawn: bool = False) -> bool:
    """Break every text of ``figure`` that sticks out of its box into lines that fit it; True if any changed.

    Its box is the figure less ``pad_in`` inches on each side: by default the
    margin the tight crop adds (``_PAD_IN``), so a figure whose texts all fit
    draws no wider than it is; 0 for a canvas of a fixed size (a widget's
    frame), where what sticks out is cut off. ``drawn``: the figure's canvas
    has just drawn it (its renderer's measures are current).

    The lines are measured in pixels with the text's own font, not counted
    in characters: how wide "AMD EPYC (2" draws is not how wide "intel xeon"
    does. A text is narrowed by twice what sticks out (a centred title or
    legend loses half of it on each side); a word wider than that is broken
    inside. Tick labels, turned text (a y label: lines would not narrow it)
    and math (``$...$``) are left alone.
    """
    renderer = _renderer(figure, drawn)
    changed = False
    for t, out, ext, widest in _sticking_out(figure, renderer, pad_in):
        # a legend is as wide as its widest entry: that one, and any nearly as wide, are narrowed
        target = widest - 2 * out - 4 * renderer.points_to_pixels(1)
        if ext.width <= target:
            continue
        shown = t._get_wrapped_text() if t.get_wrap() else t.get_text()
        lines = _wrap_pixels(shown, max(target, ext.width / 3),
                             lambda s: renderer.get_text_width_height_descent(s, t.get_fontproperties(), False)[0])
        if lines != shown:
            t.set_wrap(False)
            t.set_text(lines)
            changed = True
    return changed


def texts_outside(figure, *, pad_in: float = 0.0, drawn: bool = False) -> list[str]:
    """The texts of ``figure`` (as :func:`fit_texts` chooses them) that stick out of its box, by more than 1 px."""
    renderer = _renderer(figure, drawn)
    return [t.get_text() for t, out, _, _ in _sticking_out(figure, renderer, pad_in) if out > 1]


def fit_frame(figure, *, what: str = "a widget frame") -> bool:
    """A static frame (the book's): wrap any text its edge would cut off; True if it must be drawn again.

    ``figure`` has just been drawn on its canvas, a canvas of a fixed size:
    a text that sticks out is cut, not shown. Its texts are broken into lines
    that fit (:func:`fit_texts`); what still sticks out is a ``ValueError``
    where pictures are checked strictly (:func:`strict_pictures`, the
    tests), and left cut in a reader's build. ``what`` names the frame in
    that error.
    """
    if not texts_outside(figure, drawn=True):
        return False
    changed = fit_texts(figure, pad_in=0.0, drawn=True)
    still = texts_outside(figure)
    if still and strict_pictures():
        raise ValueError(f"{what} cuts off {still[0]!r}: "
                         "give it room (a phone_height, a shorter label) or fewer words")
    return changed


def _renderer(figure, drawn: bool):
    if not drawn:
        figure.draw_without_rendering()
        return figure._get_renderer()
    return figure.canvas.get_renderer()


def _sticking_out(figure, renderer, pad_in: float):
    """``(text, pixels out, its extent, the width it stands for)`` for each text out of the padded box."""
    from matplotlib.axis import Tick
    from matplotlib.legend import Legend
    from matplotlib.text import Text

    box = figure.bbox.padded(-pad_in * figure.dpi) if pad_in else figure.bbox
    ticks = {id(t) for tick in figure.findobj(Tick) for t in (tick.label1, tick.label2)}
    # a legend entry is as far out as its legend's frame
    holder = {id(t): leg for leg in figure.findobj(Legend) for t in leg.get_texts()}
    widest = {}
    for t in figure.findobj(Text):
        text = t.get_text()
        if (id(t) in ticks or not t.get_visible() or not text.strip() or "$" in text
                or t.figure is None or t.get_rotation() % 180):
            continue
        ext = t.get_window_extent(renderer)
        leg = holder.get(id(t))
        frame = leg.get_window_extent(renderer) if leg is not None else ext
        out = max(0.0, box.x0 - frame.x0) + max(0.0, frame.x1 - box.x1)
        if out <= 0.5:
            continue
        if leg is not None and id(leg) not in widest:
            widest[id(leg)] = max(x.get_window_extent(renderer).width for x in leg.get_texts())
        yield t, out, ext, widest[id(leg)] if leg is not None else ext.width


def _wrap_pixels(text: str, width: float, measure: Callable[[str], float]) -> str:
    """``text`` broken at spaces (inside a word only if the word alone is too wide) into lines ``width`` wide.

    Its own line breaks stay, except after a line this had to break: what
    spilled over runs on into the next line ("... EPYC (2" / "logical cores"
    becomes "... EPYC" / "(2 logical cores"), not onto a line of its own.
    """
    out: list[str] = []
    spill = ""
    for para in text.split("\n"):
        words = (spill.split(" ") if spill else []) + para.split(" ")
        lines, line = [], ""
        for word in words:
            while measure(word) > width and len(word) > 1:
                cut = max((k for k in range(1, len(word)) if measure(word[:k]) <= width), default=1)
                if line:
                    lines.append(line)
                    line = ""
                lines.append(word[:cut])
                word = word[cut:]
            trial = f"{line} {word}" if line else word
            if line and measure(trial) > width:
                lines.append(line)
                line = word
            else:
                line = trial
        if lines:  # this line was broken: its last piece runs on into the next
            out += lines
            spill = line
        else:
            out.append(line)
            spill = ""
    if spill:
        out.append(spill)
    return "\n".join(out)


def render_pair(figure, *, compact: bool = True, strict: bool | None = None) -> tuple[Rendering, Rendering]:
    """The wide and the narrow rendering of ``figure`` (see the module's doc).

    The wide one is the figure as drawn, narrowed to WIDE_MAX if it is wider;
    the narrow one is laid out again at NARROW CSS px, on a copy of the
    figure (:func:`phone_copy`): its :func:`phone_layout` adjustments are
    applied there, and a figure laid out by ``fig.tight_layout()`` or not at
    all gets matplotlib's constrained layout.
    """
    w_in, h_in = figure.get_size_inches()
    wide = render_figure(figure, width=min(w_in * CSS_DPI, WIDE_MAX), max_width=WIDE_MAX, compact=compact,
                         strict=strict)
    figure.set_size_inches(w_in, h_in)
    spec = phone_spec(figure)
    phone = phone_copy(figure)
    narrow = render_figure(phone, width=NARROW, height=(spec and spec.height) or h_in * CSS_DPI,
                           max_width=NARROW, compact=compact, strict=strict)
    phone.set_size_inches(w_in, h_in)
    if phone is not figure:
        _forget(phone)
    return wide, narrow


def phone_copy(figure):
    """The copy of ``figure`` that :func:`render_pair` draws for a phone, laid out but not yet sized.

    Its titles wrap and :func:`lay_out_for_phone` has run. It is ``figure`` itself if that cannot be
    pickled. (A copy of a pyplot figure is registered with pyplot: close it.)
    """
    spec = phone_spec(figure)
    adjust = spec and spec.adjust  # the original's (the copy is given the same notes)
    phone = _copy(figure)
    if phone is not figure:
        copy_notes(figure, phone)
    for text in _titles(phone):
        text.set_wrap(True)  # a long title takes two lines on a phone, not the width of two phones
    lay_out_for_phone(phone, adjust=adjust)
    return phone


def lay_out_for_phone(figure, *, adjust: Callable | None = None) -> None:
    """Run ``adjust`` (default: ``figure``'s :func:`phone_layout` one) on ``figure``, then
    :func:`constrained_layout`, unless the adjust placed the axes itself (``subplots_adjust``):
    those margins are kept."""
    if adjust is None:
        spec = phone_spec(figure)
        adjust = spec and spec.adjust
    margins = _margins(figure)
    if adjust is not None:
        adjust(figure)
    if _margins(figure) == margins:
        constrained_layout(figure)


def _margins(figure) -> tuple:
    p = figure.subplotpars
    return p.left, p.right, p.bottom, p.top, p.wspace, p.hspace


def _forget(copy) -> None:
    """An unpickled copy of a pyplot figure registers itself with pyplot: unregister it (never shown)."""
    import sys

    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None and any(m.canvas.figure is copy for m in plt._pylab_helpers.Gcf.get_all_fig_managers()):
        plt.close(copy)


def _titles(figure):
    out = [t for t in (getattr(figure, "_suptitle", None),) if t is not None]
    for ax in figure.axes:
        out += [ax.title, getattr(ax, "_left_title", None), getattr(ax, "_right_title", None)]
    return [t for t in out if t is not None and t.get_text()]


def _copy(figure):
    """A copy of ``figure`` to lay out for a phone, or the figure itself if it cannot be pickled."""
    import pickle

    try:
        return pickle.loads(pickle.dumps(figure))
    except Exception:
        return figure


# ---- the HTML ---------------------------------------------------------------

def _src(r: Rendering, folder: Path | None, url: str) -> str:
    if folder is None:
        import base64

        return "data:image/png;base64," + base64.b64encode(r.png).decode("ascii")
    name = hashlib.sha1(r.png).hexdigest()[:16] + ".png"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    if not target.exists():
        target.write_bytes(r.png)
    return url + name


def picture_html(wide: Rendering, narrow: Rendering, *, folder: str | Path | None, url: str = "",
                 alt: str = "", cls: str = "distlib-frame", lazy: bool = False) -> str:
    """A ``<picture>``: ``narrow`` on viewports up to PHONE_MAX_VIEWPORT px, ``wide`` elsewhere.

    ``folder``: where the PNGs are written (named by their content), reached
    from the page by ``url``; None embeds them as data URIs. The browser
    fetches only the one it shows. The image's CSS size and aspect ratio are
    set up front (``distbook.css`` reads ``--w``/``--ar`` and, on a phone,
    ``--wn``/``--arn``), so swapping frames never moves the page. ``lazy``:
    the browser fetches it only once it is shown (``loading="lazy"``; a
    widget's frames that no control has chosen yet are hidden, so unfetched).
    """
    folder = Path(folder) if folder is not None else None
    if url and not url.endswith("/"):
        url += "/"
    ws, ns = _src(wide, folder, url), _src(narrow, folder, url)
    style = (f"--w:{wide.width}px;--ar:{wide.width}/{wide.height};"
             f"--wn:{narrow.width}px;--arn:{narrow.width}/{narrow.height}")
    loading = 'loading="lazy" ' if lazy else ""
    return (f'<picture class="distlib-picture"><source media="(max-width: {PHONE_MAX_VIEWPORT}px)" '
            f'srcset="{html.escape(ns)}"><img class="{cls}" src="{html.escape(ws)}" alt="{html.escape(alt)}" '
            f'{loading}style="{style}" width="{wide.width}" height="{wide.height}"></picture>')


def alt_text(fig) -> str:
    """Alt text for ``fig``: its titles, and what each plot draws against what (its axis labels)."""
    sup = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) is not None else ""
    parts = [sup] if sup else []
    for ax in fig.axes:
        title = " ".join(ax.get_title().split())
        y, x = (" ".join(lab.split()) for lab in (ax.get_ylabel(), ax.get_xlabel()))
        axes = f"{y} against {x}" if x and y else (y or x)
        parts.append(": ".join(t for t in (title, axes) if t))
    return "; ".join(p for p in parts if p) or "figure"

