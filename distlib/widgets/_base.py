"""What every widget shares: controls, a picture, a summary, and two ways to show them.

**Live** (Jupyter, Colab, any kernel): each control's ``observe`` recomputes
the model and redraws the figure into an ``ipywidgets.Image`` (PNG bytes), so
the picture is part of the saved widget state and works the same under
ipywidgets 7.7.1 (Colab) and 8. :meth:`FigureWidget.update` is that one path:
``compute()``, then ``draw(result)``, then ``describe(result)``.

**Static** (the built book, where no kernel runs): the widget renders, at
build time, one frame for every point of a small grid of control values,
through the very same ``update()``, and shows them in ``Stack`` widgets
linked to its controls. That is the static book's, in :mod:`distlib.static`:
the frame grid (:mod:`distlib.static.frames`), the picture pairs and the
switch (:mod:`distlib.static.mode`: ``static_frames()``, or the book build's
``DISTLIB_STATIC_WIDGETS``; names re-exported here).

Pictures are rendered for the size they are shown at (``width`` x ``height``
CSS pixels) at twice that many device pixels, for 2x screens, and are never
drawn larger than that: the Image's CSS width is fixed and capped at 100%.

Redrawing a whole figure costs matplotlib 100 ms and more, mostly laying out
text. A widget whose picture is mostly static marks the artists that change as
*animated*: the rest is drawn once into a cached background (Agg blitting), and
each update only restores it and draws the changed artists.

**Declared for the tests**: every chapter widget (a public ``FigureWidget``
subclass in a module of :mod:`distlib.widgets`) sets two class attributes,
and the tests find the widgets (:func:`distlib.widgets.widget_classes`) and
read them; a widget lacking either fails ``tests/test_widget_inputs.py``::

    #: the chapter's widget as the static-frame tests build it (its constructor's keywords)
    EXAMPLE = dict(cp=4, seq=131072)
    #: bad constructor arguments: (label, keywords, error type, text the one-line message must contain)
    BAD_INPUTS = (("cp below 1", dict(cp=0), ValueError, "cp must be an integer"), ...)

``EXAMPLE`` builds the widget whose static frames ``tests/test_widgets_static.py``
checks (the values its chapter shows it with). Each row of ``BAD_INPUTS`` is a
call that must raise that error, a ``ValueError`` or ``TypeError``, before any
control exists, with a one-line message naming the last keyword and containing
the text (its range or choices); ``tools/bad_inputs.py`` prints them all.
"""

from __future__ import annotations

import io
from typing import Sequence

import ipywidgets as w
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image as PILImage

from ..static import mode
# StaticAxis, label_style, control_layout, static_frames, static_config and StaticConfig lived here
# before distlib.static had them: the widgets and the tests import them from here still.
from ..static.frames import Frame, FrameGrid, StaticAxis, control_layout, label_style  # noqa: F401
from ..static.mode import StaticConfig, static_config, static_frames  # noqa: F401
# CSS px per inch, device px per CSS px (2x screens), and the smallest text
# in any picture (11 pt = 14.7 px; the page's <small> print is 14.4 px).
from ..static.pictures import CSS_DPI, MIN_FONT_PT, NARROW, SCALE, enforce_min_font, fit_frame, palette_png

__all__ = ["FigureImage", "FigureWidget", "StaticAxis", "label_style", "static_frames", "static_config",
           "CSS_DPI", "SCALE", "MIN_FONT_PT", "CONTINUOUS_UPDATE", "log_slider", "accelerator_name"]

#: Every control redraws only when released (or on a click): a redraw costs
#: tens of milliseconds, and a stream of them while dragging lags behind the
#: hand. The static page swaps frames as the slider moves either way.
CONTINUOUS_UPDATE = False


# ---- the picture ------------------------------------------------------------

class FigureImage:
    """A figure drawn off-screen and pushed into an Image widget on demand.

    ``width`` and ``height`` are the CSS pixels it is shown at; the PNG has
    ``SCALE`` times as many pixels in each direction. ``narrow``: drawn for a
    phone, NARROW CSS px wide and ``phone_height`` (default ``height``) high;
    by default, inside a :func:`distlib.static.mode.phone_twin` block (where
    a widget's phone twin is built) and not elsewhere.
    """

    def __init__(self, *, width: int = 460, height: int = 340, phone_height: int | None = None,
                 narrow: bool | None = None, **subplot_kw):
        #: True in a widget's phone twin (the static book's narrow frames), drawn NARROW CSS px wide
        self.narrow = mode.drawn_for_phone() if narrow is None else bool(narrow)
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
        """A static frame (the book's): wrap any text its edge would cut off; True if it must be drawn again
        (:func:`distlib.static.pictures.fit_frame`)."""
        changed = fit_frame(self.figure, what=f"a widget frame ({self.width} x {self.height} CSS px)")
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


# ---- the widget base --------------------------------------------------------

class FigureWidget(w.VBox):
    """Base of every chapter widget: ``controls``, ``fig`` (picture), ``summary`` (HTML).

    A subclass builds its controls and figure, sets ``self.controls``,
    ``self.fig`` and ``self.summary``, says how to redraw from the controls'
    values (one path for live and static use) and calls ``self._finish(...)``.
    Redrawing is :meth:`update`: by default ``compute()`` (the model's result
    for the controls' values), ``draw(result)`` (the picture, rendered into
    ``fig``) and ``describe(result)`` (the summary), each overridden; a
    widget that needs another order (a cache of frames, a guard while its
    controls are rearranged) overrides ``update()`` itself. It may override
    ``static_axes()`` (the grid of the static page) and ``_layout(...)`` (how
    the parts are arranged). Its constructor checks every argument first
    (``distlib._check``), so that a bad one is a one-line ``ValueError`` or
    ``TypeError`` naming it and its range, raised before any control is built.
    """

    #: What the static page says under its live controls, before the fixed (greyed-out) ones.
    static_reason = ("to change them, open the chapter in Colab or Jupyter "
                     "(the rocket at the top of the page) or download it")

    controls: list
    fig: FigureImage
    summary: w.HTML
    #: the keywords the static-frame tests build the widget with (each subclass sets it; see the module)
    EXAMPLE: dict
    #: ``(label, keywords, error type, text the message must contain)`` rows (each subclass sets it)
    BAD_INPUTS: tuple

    def __new__(cls, *args, **kwargs):
        """Remember the arguments the widget is built with: the static page builds its phone twin from them.

        (``__new__`` is handed the very arguments ``__init__`` gets, whichever
        subclass defines that; no subclass has to pass them on.)
        """
        self = super().__new__(cls, *args, **kwargs)
        self._init_args = (args, dict(kwargs))
        return self

    def _finish(self, extra: Sequence[w.Widget] = ()) -> None:
        """Draw once, wire the observers, and lay out (live or static)."""
        self._extra = list(extra)
        self.update()
        for c in self.controls:
            c.observe(self._on_change, names="value")
        #: where this widget's static frames went (a StaticConfig), or None: a live widget
        self.static = mode.current_mode().frames
        if self.static is None:
            children = self._layout(w.VBox(list(self.controls)), self.fig.image, self.summary)
        else:
            children = self._build_static(self.static)
        super().__init__(children)
        self.add_class("distlib-widget")

    def _on_change(self, change) -> None:
        if not getattr(self, "_quiet", False):
            self.update()

    # ---- one redraw: compute, draw, describe ------------------------------
    def update(self):
        """Recompute and redraw from the controls' values: ``describe(draw(compute()))``; returns the result."""
        result = self.compute()
        self.draw(result)
        self.describe(result)
        return result

    def compute(self):  # pragma: no cover - a subclass overrides it, or update()
        """The model's result for the controls' values (no drawing)."""
        raise NotImplementedError(f"{type(self).__name__} defines neither compute() nor update()")

    def draw(self, result) -> None:  # pragma: no cover - a subclass overrides it, or update()
        """Draw ``result`` into ``self.fig`` and render it (``self.fig.render()``)."""
        raise NotImplementedError(f"{type(self).__name__} defines neither draw() nor update()")

    def describe(self, result) -> None:
        """Say ``result`` in words in ``self.summary`` (default: nothing to say)."""

    def _layout(self, controls: w.Widget, picture: w.Widget, summary: w.Widget) -> list:
        """The children of the widget: controls, picture, extras (legend), summary."""
        return [controls, picture, *self._extra, summary]

    def static_axes(self) -> list[StaticAxis]:
        """The controls live on the static page and their grids (override)."""
        return []

    def phone_twin(self) -> "FigureWidget":
        """The same widget, live, built again from the same arguments, its picture drawn for a phone."""
        args, kw = self._init_args
        with mode.phone_twin():
            return type(self)(*args, **kw)

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

    def render_frame(self, values: dict) -> Frame:
        """Set the controls to ``values`` and return the frame the live path draws."""
        self._quiet = True
        try:
            for name, value in values.items():
                self._set(name, value)
        finally:
            self._quiet = False
        self.update()
        return Frame(bytes(self.fig.image.value), self.summary.value)

    def _build_static(self, cfg: StaticConfig) -> list:
        """The static page's children: every frame of the grid (:class:`distlib.static.frames.FrameGrid`)."""
        self._frame_grid = grid = FrameGrid(self, cfg)
        #: every jslink of the static view: (source, trait, target, trait)
        self.static_links = grid.links
        children = grid.build()
        self.frame_count = grid.frame_count
        self.static_view = grid.view
        return children

    def _static_layout(self, controls: w.Widget, tree: w.Widget) -> list:
        return [controls, tree]

    def _restore(self, values: dict) -> None:
        self.render_frame(values)

    def _leaf_layout(self, image: w.Widget, summary: w.Widget) -> w.Widget:
        return w.VBox([image, *self._extra, summary], layout=self._frame_grid.box_layout)
