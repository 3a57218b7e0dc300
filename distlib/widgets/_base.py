"""What every widget shares: controls, a picture, a summary, and two ways to show them.

**Live** (Jupyter, Colab, any kernel): each control's ``observe`` recomputes
the model and redraws the figure into an ``ipywidgets.Image`` (PNG bytes), so
the picture is part of the saved widget state and works the same under
ipywidgets 7.7.1 (Colab) and 8.

**Static** (the built book, where no kernel runs): the widget renders, at
build time, one frame (picture and summary) for every point of a small grid
of control values, through the very same ``update()`` as the live path, and
shows them in nested ``Stack`` widgets whose ``selected_index`` is
``jslink``-ed to the controls. The browser then swaps frames with no kernel
and no network. Controls outside the grid are shown disabled with a one-line
reason. ``Stack`` exists only in ipywidgets 8, so static mode is switched on
explicitly, never guessed: by :func:`static_frames` or by the environment
variable ``DISTLIB_STATIC_WIDGETS`` (a folder to write frame files into; the
book's Sphinx extension sets it for the kernels it starts), together with
``DISTLIB_STATIC_URL`` (the URL prefix those files are reached by from the
page). Set ``DISTLIB_STATIC_WIDGETS=inline`` to embed frames in the page.

Pictures are rendered for the size they are shown at (``width`` x ``height``
CSS pixels) at twice that many device pixels, for 2x screens, and are never
drawn larger than that: the Image's CSS width is fixed and capped at 100%.

Redrawing a whole figure costs matplotlib 100 ms and more, mostly laying out
text. A widget whose picture is mostly static marks the artists that change as
*animated*: the rest is drawn once into a cached background (Agg blitting), and
each update only restores it and draws the changed artists.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import ipywidgets as w
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image as PILImage

__all__ = ["FigureImage", "FigureWidget", "StaticAxis", "label_style", "static_frames", "static_config",
           "CSS_DPI", "SCALE", "MIN_FONT_PT", "CONTINUOUS_UPDATE", "log_slider", "accelerator_name"]

# CSS px per inch, device px per CSS px (2x screens), and the smallest text
# in any picture (11 pt = 14.7 px; the page's <small> print is 14.4 px).
from ..plots.pictures import (CSS_DPI, ENV_DIR, ENV_URL, MIN_FONT_PT, NARROW, SCALE, Rendering,  # noqa: E402
                              enforce_min_font, fit_texts, palette_png, picture_html, static_env,
                              strict_pictures, texts_outside)
#: Every control redraws only when released (or on a click): a redraw costs
#: tens of milliseconds, and a stream of them while dragging lags behind the
#: hand. The static page swaps frames as the slider moves either way.
CONTINUOUS_UPDATE = False



# ---- the switch -------------------------------------------------------------

@dataclass
class StaticConfig:
    """Where static frames go: ``folder`` (None: embed PNG bytes in the page) and ``url`` prefix."""

    folder: Path | None
    url: str = ""


_override: list = []  # set by static_frames(); wins over the environment
_PHONE: list = []  # non-empty while a widget's phone twin is built


def static_frames(folder: str | os.PathLike | None = "inline", url: str = ""):
    """Switch static (kernel-free) frames on for widgets built from now on.

    ``folder``: where frame PNGs are written (``"inline"`` embeds them in the
    widget state instead); ``url``: the prefix pages reach that folder by.
    ``static_frames(None)`` switches back to live widgets and
    ``static_frames("env")`` to following the environment variables.
    Requires ipywidgets 8 (``Stack``).
    """
    _override.clear()
    if folder == "env":
        return
    if folder is None:
        _override.append(None)
    else:
        _override.append(_make_config(str(folder), url))


def _make_config(folder: str, url: str) -> StaticConfig:
    if not hasattr(w, "Stack"):
        raise RuntimeError(
            f"static widget frames need ipywidgets >= 8 (Stack); this is ipywidgets {w.__version__}. "
            f"Unset {ENV_DIR} to keep the widgets live.")
    if folder == "inline":
        return StaticConfig(None, "")
    if url and not url.endswith("/"):
        url += "/"
    return StaticConfig(Path(folder), url)


def static_config() -> StaticConfig | None:
    """The static-frame configuration in force, or None for live widgets."""
    if _override:
        return _override[0]
    env = static_env()
    return None if env is None else _make_config(*env)


# ---- the picture ------------------------------------------------------------

class FigureImage:
    """A figure drawn off-screen and pushed into an Image widget on demand.

    ``width`` and ``height`` are the CSS pixels it is shown at; the PNG has
    ``SCALE`` times as many pixels in each direction.
    """

    def __init__(self, *, width: int = 460, height: int = 340, phone_height: int | None = None, **subplot_kw):
        #: True in a widget's phone twin (the static book's narrow frames), drawn NARROW CSS px wide
        self.narrow = bool(_PHONE)
        if self.narrow:
            width, height = NARROW, int(phone_height or height)
        self.width, self.height = int(width), int(height)
        self.figure = Figure(figsize=(self.width / CSS_DPI, self.height / CSS_DPI), dpi=CSS_DPI * SCALE)
        self.canvas = FigureCanvasAgg(self.figure)
        self.ax = self.figure.add_subplot(**subplot_kw)
        self.image = w.Image(format="png", layout=image_layout(self.width))
        self._animated: list = []
        self._background = None
        #: True while static frames are drawn: store palette PNGs (a third of the size) straight away
        self.compact = False
        self._refitted = False

    def set_animated(self, artists) -> None:
        """Redraw only ``artists`` on later renders; the rest is cached."""
        self._animated = [a for a in artists if a is not None]
        for a in self._animated:
            a.set_animated(True)
        self._background = None

    def invalidate(self) -> None:
        """Forget the cached background (after changing static content)."""
        for a in self._animated:
            a.set_animated(False)
        self._animated = []
        self._background = None

    def enforce_min_font(self) -> None:
        """Raise every text in the figure to at least ``MIN_FONT_PT``."""
        enforce_min_font(self.figure)

    def _fit_frame(self) -> bool:
        """A static frame (the book's): wrap any text its edge would cut off; True if the frame must be drawn again.

        A frame is a canvas of a fixed size: a text that sticks out is cut,
        not shown. Its texts are broken into lines that fit (:func:`fit_texts`);
        what still sticks out is an error where pictures are checked strictly
        (the tests), and left cut in a reader's build.
        """
        if not texts_outside(self.figure, drawn=True):
            return False
        changed = fit_texts(self.figure, pad_in=0.0, drawn=True)
        still = texts_outside(self.figure)
        if still and strict_pictures():
            raise ValueError(f"a widget frame ({self.width} x {self.height} CSS px) cuts off {still[0]!r}: "
                             "give it room (a phone_height, a shorter label) or fewer words")
        if changed:
            self._background = None  # a static text may have changed: draw the background again
        return changed

    def render(self) -> bytes:
        """Draw the figure, store it as PNG in the Image widget, return the bytes."""
        if self._animated:
            if self._background is None:
                self.enforce_min_font()
                self.canvas.draw()
                self._background = self.canvas.copy_from_bbox(self.figure.bbox)
            else:
                self.canvas.restore_region(self._background)
            renderer = self.canvas.get_renderer()
            for a in self._animated:
                if a.get_visible():
                    if isinstance(a, Text) and a.get_fontsize() < MIN_FONT_PT:
                        a.set_fontsize(MIN_FONT_PT)
                    a.draw(renderer)
        else:
            self.enforce_min_font()
            self.canvas.draw()
        if self.compact and not self._refitted and self._fit_frame():
            self._refitted = True
            try:
                return self.render()  # once more, with the texts broken into lines
            finally:
                self._refitted = False
        width, height = self.canvas.get_width_height(physical=True)
        img = PILImage.frombuffer("RGBA", (width, height), self.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
        buf = io.BytesIO()
        if self.compact:
            png = palette_png(img)
        else:
            img.save(buf, format="png", compress_level=1)
            png = buf.getvalue()
        self.image.value = png
        return png


def image_layout(width: int) -> w.Layout:
    """Shown at ``width`` CSS px, shrunk (never stretched) to fit a narrow screen."""
    return w.Layout(width=f"{int(width)}px", max_width="100%", height="auto")


def log_slider(*, value: float, base: float, min: float, max: float, step: float, **kwargs) -> w.FloatLogSlider:
    """A ``FloatLogSlider`` whose grid of exponents passes through ``value``.

    The browser snaps a log slider to ``min + k * step``; with the grid
    shifted onto ``value`` a slider made for 5e-6 shows 5e-06, not 5.01e-06.
    The range grows (never shrinks) by less than one step at each end.
    """
    import math

    exp = math.log10(float(value)) if base == 10 else math.log2(float(value)) if base == 2 else math.log(value, base)
    if abs(exp - round(exp)) < 1e-9:
        exp = float(round(exp))
    if not (min - 1e-9 <= exp <= max + 1e-9):
        raise ValueError(f"value must be in [{base}**{min}, {base}**{max}], got {value!r}")
    k = math.ceil((exp - min) / step - 1e-9)
    lo = exp - k * step
    n = math.ceil((max - lo) / step - 1e-9)
    return w.FloatLogSlider(value=value, base=base, min=lo, max=lo + n * step, step=step, **kwargs)


def accelerator_name(value) -> str:
    """The table's name of accelerator ``value`` (a name, looked up as :func:`distlib.accelerator` does, or a spec).

    Checked before a widget builds its menu: a name outside the table is a
    ``ValueError`` listing the known ones, anything but a name a ``TypeError``.
    """
    from ..hardware import Accelerator, accelerator, accelerator_names

    if not isinstance(value, (str, Accelerator)):
        raise TypeError(f"accelerator must be one of {', '.join(accelerator_names())} (a name); got {value!r}")
    return accelerator(value).name


def label_style() -> dict:
    """Slider style that leaves room for descriptive labels."""
    return {"description_width": "initial"}


def control_layout() -> w.Layout:
    """Controls take the width they need up to the page's, never more (phones)."""
    return w.Layout(width="440px", max_width="100%")


# ---- the widget base --------------------------------------------------------

@dataclass
class StaticAxis:
    """One control that stays live on the static page.

    ``control``: attribute name of the live control; ``values``: the grid
    (or a function of the values chosen on the axes before it, when the
    control's range depends on them); ``labels``: how the readout shows a
    value; ``local``: the control is drawn inside each branch of the axes
    before it (its range differs there); ``player``: add a Play button that
    animates this (integer, 0-based) control.
    """

    control: str
    values: Sequence | Callable[[dict], Sequence]
    labels: Callable[[object], str] = str
    local: bool = False
    player: int | None = None  # Play interval in ms, or None
    description: str | Callable[[dict], str] | None = None

    def grid(self, chosen: dict) -> list:
        vals = self.values(chosen) if callable(self.values) else self.values
        return list(vals)


@dataclass
class _Frame:
    png: bytes
    summary: str


class FigureWidget(w.VBox):
    """Base of every chapter widget: ``controls``, ``fig`` (picture), ``summary`` (HTML).

    A subclass builds its controls and figure, sets ``self.controls``,
    ``self.fig`` and ``self.summary``, implements ``update()`` (recompute and
    redraw from the controls' values, one path for live and static use) and
    calls ``self._finish(...)``. It may override ``static_axes()`` (the grid
    of the static page) and ``_layout(...)`` (how the parts are arranged).
    Its constructor checks every argument first (``distlib._check``), so that
    a bad one is a one-line ``ValueError`` or ``TypeError`` naming it and its
    range, raised before any control is built.
    """

    #: What the static page says under its live controls, before the fixed (greyed-out) ones.
    static_reason = ("to change them, open the chapter in Colab or Jupyter "
                     "(the rocket at the top of the page) or download it")

    controls: list
    fig: FigureImage
    summary: w.HTML

    def _finish(self, extra: Sequence[w.Widget] = ()) -> None:
        """Draw once, wire the observers, and lay out (live or static)."""
        self._extra = list(extra)
        self.update()
        for c in self.controls:
            c.observe(self._on_change, names="value")
        self.static = static_config()
        if self.static is None:
            children = self._layout(w.VBox(list(self.controls)), self.fig.image, self.summary)
        else:
            children = self._build_static(self.static)
        super().__init__(children)
        self.add_class("distlib-widget")

    def _on_change(self, change) -> None:
        if not getattr(self, "_quiet", False):
            self.update()

    def update(self):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _layout(self, controls: w.Widget, picture: w.Widget, summary: w.Widget) -> list:
        """The children of the widget: controls, picture, extras (legend), summary."""
        return [controls, picture, *self._extra, summary]

    def static_axes(self) -> list[StaticAxis]:
        """The controls live on the static page and their grids (override)."""
        return []

    def __init_subclass__(cls, **kwargs):
        """Remember each widget's constructor arguments: the static page builds a phone twin from them."""
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return

        def __init__(self, *args, **kw):
            if "_init_args" not in self.__dict__:
                self.__dict__["_init_args"] = (args, kw)
            init(self, *args, **kw)

        __init__.__doc__, __init__.__wrapped__ = init.__doc__, init
        cls.__init__ = __init__

    def _phone_twin(self) -> "FigureWidget":
        """The same widget, live, its picture drawn for a phone (``FigureImage.narrow``)."""
        args, kw = self.__dict__.get("_init_args", ((), {}))
        saved = list(_override)
        _override[:] = [None]
        _PHONE.append(True)
        try:
            return type(self)(*args, **kw)
        finally:
            _PHONE.pop()
            _override[:] = saved

    # ---- static frames --------------------------------------------------
    def _control_values(self) -> dict:
        return {name: getattr(self, name).value for name in self._control_names()}

    def _control_names(self) -> list[str]:
        names = []
        for name, value in vars(self).items():
            if isinstance(value, w.ValueWidget) and value in self.controls:
                names.append(name)
        return names

    def _set(self, name: str, value) -> None:
        ctrl = getattr(self, name)
        if ctrl.value != value:
            ctrl.value = value  # the observer redraws

    def render_frame(self, values: dict) -> _Frame:
        """Set the controls to ``values`` and return the frame the live path draws."""
        self._quiet = True
        try:
            for name, value in values.items():
                self._set(name, value)
        finally:
            self._quiet = False
        self.update()
        return _Frame(bytes(self.fig.image.value), self.summary.value)

    def _build_static(self, cfg: StaticConfig) -> list:
        axes = self.static_axes()
        initial = self._control_values()
        for ax in axes:
            if not hasattr(self, ax.control):
                raise AttributeError(f"{type(self).__name__} has no control {ax.control!r}")
        live = {ax.control for ax in axes}
        #: every jslink of the static view: (source, trait, target, trait)
        self.static_links: list = []
        self.frame_count = 0
        shared_controls = {}
        for ax in axes:
            if not ax.local:
                vals = ax.grid(initial)
                shared_controls[ax.control] = self._selector(ax, vals, initial[ax.control])
        # the live controls first; then the fixed ones, greyed out, under one line that says why
        fixed, shown, fixed_controls = [], [], []
        for c in self.controls:
            name = next(n for n in self._control_names() if getattr(self, n) is c)
            if name in live:
                if name in shared_controls:
                    shown.append(shared_controls[name][0])
                continue
            c.disabled = True
            c.add_class("distlib-fixed")
            if hasattr(c, "readout"):
                c.readout = False  # its value is said in words in the note, not as 7e+09
            fixed_controls.append(c)
            fixed.append(_fixed_text(c, name))
        note = []
        if fixed:
            note = [w.HTML(f"<small class='distlib-static-note'>Fixed on this static page: "
                           f"{', '.join(_plain(f) for f in fixed)}; {self.static_reason}.</small>")]
        shown = shown + note + fixed_controls
        self._twin = self._phone_twin()
        self.fig.compact = self._twin.fig.compact = True
        try:
            tree = self._branch(axes, 0, dict(initial), shared_controls, cfg, first_view=True)
        finally:
            self.fig.compact = False
            self._twin.fig.image.value = b""
            self._twin.close()
            self._twin = None
        # leave the live controls where the initial frame is
        self._restore(initial)
        # the live picture is not shown on the static page: keep its pixels out of the page's widget state
        self.fig.image.value = b""
        self.static_view = tree
        return self._static_layout(w.VBox(shown), tree)

    def _static_layout(self, controls: w.Widget, tree: w.Widget) -> list:
        return [controls, tree]

    def _restore(self, values: dict) -> None:
        self.render_frame(values)

    def _selector(self, ax: StaticAxis, vals: list, current, chosen: dict | None = None):
        """A control for the grid ``vals``: (shown widget, linked widget, linked trait)."""
        ctrl = getattr(self, ax.control)
        if current not in vals:
            vals = sorted(set(vals) | {current}, key=_sort_key)
        index = vals.index(current)
        desc = ax.description(chosen or {}) if callable(ax.description) else (ax.description or ctrl.description)
        style = label_style()
        if ax.player is not None:
            slider = w.IntSlider(value=index, min=0, max=len(vals) - 1, description=desc, style=style,
                                 layout=w.Layout(width="auto", max_width="100%", flex="1 1 200px"))
            play = w.Play(value=index, min=0, max=len(vals) - 1, step=1, interval=ax.player,
                          description=f"Play {desc}", layout=w.Layout(flex="0 0 auto", width="auto"))
            w.jslink((play, "value"), (slider, "value"))
            self.static_links.append((play, "value", slider, "value"))
            box = w.HBox([play, slider], layout=w.Layout(flex_flow="row wrap", max_width="100%"))
            return box, slider, "value"
        if isinstance(ctrl, (w.Dropdown, w.ToggleButtons)):
            names = dict(zip(ctrl._options_values, ctrl._options_labels))
            opts = [(names.get(v, ax.labels(v)), v) for v in vals]
            sel = type(ctrl)(options=opts, value=current, description=desc, style=style)
            return sel, sel, "index"
        sel = w.SelectionSlider(options=[(ax.labels(v), v) for v in vals], value=current, description=desc,
                                continuous_update=True, style=style, layout=control_layout())
        return sel, sel, "index"

    def _branch(self, axes, level, chosen, shared, cfg, *, first_view=False):
        """``first_view``: this branch is on the page's first view (every control at its start value)."""
        if level == len(axes):
            return self._leaf(chosen, cfg, first_view=first_view)
        ax = axes[level]
        vals = ax.grid(chosen)
        current = chosen[ax.control]
        if current not in vals:
            vals = sorted(set(vals) | {current}, key=_sort_key) if not ax.local else vals
        if ax.local:
            if current not in vals:
                current = vals[0]
            shown, linked, trait = self._selector(ax, vals, current, chosen)
        else:
            shown, linked, trait = shared[ax.control]
            vals = [v for _, v in linked.options] if trait == "index" else vals
        children = [self._branch(axes, level + 1, {**chosen, ax.control: v}, shared, cfg,
                                 first_view=first_view and v == current) for v in vals]
        stack = w.Stack(children, selected_index=vals.index(current))
        w.jslink((linked, trait), (stack, "selected_index"))
        self.static_links.append((linked, trait, stack, "selected_index"))
        if ax.local:
            return w.VBox([shown, stack])
        return stack

    def _leaf(self, chosen, cfg, *, first_view=False) -> w.Widget:
        """One frame. Only the first view's frame is fetched with the page; the others load when a
        control first shows them (``loading="lazy"`` on a hidden image)."""
        frame = self.render_frame(chosen)
        phone = self._twin.render_frame(chosen)
        self.frame_count += 1
        # One Layout (and style) model shared by every frame, not one each: the
        # page's widget state is a list of models, and most would be copies.
        if not hasattr(self, "_shared"):
            self._shared = {"box": w.Layout(), "html": w.Layout(),
                            "style": w.HTMLStyle() if hasattr(w, "HTMLStyle") else None, "pictures": {}}
        shared = self._shared
        kw = {"layout": shared["html"]}
        if shared["style"] is not None:
            kw["style"] = shared["style"]
        key = hashlib.sha1(frame.png + phone.png).hexdigest()[:16] + ("" if first_view else "-lazy")
        picture = shared["pictures"].get(key)  # an identical picture is one model, shown wherever it recurs
        if picture is None:
            wide = Rendering(frame.png, self.fig.width, self.fig.height)
            narrow = Rendering(phone.png, self._twin.fig.width, self._twin.fig.height)
            picture = w.HTML(picture_html(wide, narrow, folder=cfg.folder, url=cfg.url,
                                          alt=self._alt_text(frame.summary), lazy=not first_view), **kw)
            picture.add_class("distlib-picture-box")
            shared["pictures"][key] = picture
        return self._leaf_layout(picture, w.HTML(frame.summary, **kw))

    def _alt_text(self, summary_html: str) -> str:
        """What a static frame shows, for a reader who cannot see it: the frame's own read-out as text.

        (The read-out is drawn from the same state as the picture; a widget
        with none falls back to the first line of its docstring.)
        """
        import html
        import re

        said = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", summary_html)).split())
        if not said:
            doc = (type(self).__doc__ or "").strip().splitlines()
            said = doc[0].strip() if doc else type(self).__name__
        return said if len(said) <= 400 else said[:397].rstrip() + "..."

    def _leaf_layout(self, image: w.Widget, summary: w.Widget) -> w.Widget:
        return w.VBox([image, *self._extra, summary], layout=self._shared["box"])


def _sort_key(v):
    try:
        return (0, float(v))
    except (TypeError, ValueError):
        return (1, str(v))


def _unit_free(description: str) -> str:
    """A control's name without its unit: "link GB/s (one direction)" -> "link GB/s"."""
    return str(description).split(" (")[0]


def _fixed_text(ctrl, attribute: str) -> str:
    """A fixed control in the static note: its name and value ("MFU 0.4"), or a button row's chosen label."""
    labels = getattr(ctrl, "_options_labels", None)
    if not ctrl.description:
        return str(ctrl.label) if labels else attribute.replace("_", " ")
    return f"{_unit_free(ctrl.description)} {_value_text(ctrl)}"


def _value_text(ctrl) -> str:
    """A control's value as the prose writes it, with the unit its label names.

    >>> _value_text(w.FloatLogSlider(value=5e-5, min=-7, max=-3, description="latency between nodes (s)"))
    '50 µs'
    >>> _value_text(w.FloatLogSlider(value=1e12, min=9, max=13, description="training tokens"))
    '1 trillion'
    >>> _value_text(w.FloatSlider(value=0.4, description="MFU"))
    '0.4'
    """
    from ..fmt import fmt_bytes, fmt_bytes_binary, fmt_count, fmt_flops, fmt_rate, fmt_seconds

    if getattr(ctrl, "_options_labels", None) is not None:  # a menu or a row of buttons: its chosen label
        return f"({ctrl.label})"
    v = ctrl.value
    unit = ""
    if " (" in (ctrl.description or ""):
        unit = ctrl.description.split(" (", 1)[1].rstrip(")").split(",")[0].split(" ")[0]
    as_unit = {"s": fmt_seconds, "B/s": fmt_rate, "bytes": fmt_bytes, "B": fmt_bytes,
               "ms": lambda x: fmt_seconds(x / 1e3), "µs": lambda x: fmt_seconds(x / 1e6),
               "GB/s": lambda x: fmt_rate(x * 1e9), "GB": lambda x: fmt_bytes(x * 1e9),
               "MiB": lambda x: fmt_bytes_binary(x * 2**20), "TFLOP/s": lambda x: fmt_flops(x * 1e12)}
    if unit in as_unit:
        return str(as_unit[unit](float(v)))
    if isinstance(v, int) or float(v).is_integer() or abs(float(v)) >= 1e6:
        return str(fmt_count(v))
    return f"{float(v):.3g}"


def _plain(text: str) -> str:
    import html

    return html.escape(str(text))
