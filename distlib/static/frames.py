"""Frame grids: a widget's pictures drawn at build time for a grid of control values, picked by its sliders.

The built book runs no kernel. So a widget there renders, at build time, one
frame (picture and summary) for every point of a small grid of control
values (its :class:`StaticAxis` list), through the very same ``update()`` as
the live path, and shows them in nested ``ipywidgets.Stack`` widgets whose
``selected_index`` is ``jslink``-ed to the controls. The browser then swaps
frames with no kernel and no network. Controls outside the grid are shown
disabled, with a one-line reason. Each frame is a picture pair
(:func:`distlib.static.pictures.picture_html`): the widget's own drawing,
and its *phone twin*'s (the same widget built again, live, in a
:func:`distlib.static.mode.phone_twin` block).

:class:`FrameGrid` builds that view for a widget it is given. It asks the
widget only for what every :class:`distlib.widgets._base.FigureWidget` has:
``controls``, ``fig`` and ``summary``, ``static_axes()``,
``render_frame(values)``, ``phone_twin()``, ``static_reason`` and the layout
methods ``_leaf_layout``/``_static_layout`` a widget may override. Needs
ipywidgets 8 (``Stack``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, Sequence

import ipywidgets as w

from .mode import StaticConfig
from .pictures import Rendering, picture_html

__all__ = ["StaticAxis", "Frame", "FrameGrid", "label_style", "control_layout", "fixed_text", "value_text"]


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
class Frame:
    """One frame as the live path drew it: its PNG and its summary's HTML."""

    png: bytes
    summary: str


def label_style() -> dict:
    """Slider style that leaves room for descriptive labels."""
    return {"description_width": "initial"}


def control_layout() -> w.Layout:
    """Controls take the width they need up to the page's, never more (phones)."""
    return w.Layout(width="440px", max_width="100%")


class FrameGrid:
    """The static view of ``widget``: its frames for every point of its grid, written as ``config`` says.

    After :meth:`build`, ``links`` holds every jslink of the view (source,
    trait, target, trait), ``frame_count`` the frames drawn, ``view`` the
    tree of ``Stack`` widgets, and ``box_layout`` the one ``Layout`` every
    frame's box shares.
    """

    def __init__(self, widget, config: StaticConfig):
        self.widget = widget
        self.config = config
        self.links: list = []
        self.frame_count = 0
        self.view = None
        self._shared: dict | None = None
        self._twin = None

    @property
    def box_layout(self) -> w.Layout:
        """The one ``Layout`` every frame's box shares."""
        return self._models()["box"]

    def _models(self) -> dict:
        """One Layout (and style) model shared by every frame, not one each: the page's widget state is
        a list of models, and most would be copies. (Made with the first frame.)"""
        if self._shared is None:
            self._shared = {"box": w.Layout(), "html": w.Layout(),
                            "style": w.HTMLStyle() if hasattr(w, "HTMLStyle") else None, "pictures": {}}
        return self._shared

    # ---- the widget's controls -------------------------------------------------
    def _control_names(self) -> list[str]:
        wdg = self.widget
        return [name for name, value in vars(wdg).items()
                if isinstance(value, w.ValueWidget) and value in wdg.controls]

    def _values(self) -> dict:
        return {name: getattr(self.widget, name).value for name in self._control_names()}

    # ---- the view --------------------------------------------------------------
    def build(self) -> list:
        """Draw every frame and return the children of the static widget."""
        wdg = self.widget
        axes = wdg.static_axes()
        initial = self._values()
        for ax in axes:
            if not hasattr(wdg, ax.control):
                raise AttributeError(f"{type(wdg).__name__} has no control {ax.control!r}")
        live = {ax.control for ax in axes}
        shared_controls = {}
        for ax in axes:
            if not ax.local:
                vals = ax.grid(initial)
                shared_controls[ax.control] = self._selector(ax, vals, initial[ax.control])
        # the live controls first; then the fixed ones, greyed out, under one line that says why
        fixed, shown, fixed_controls = [], [], []
        names = self._control_names()
        for c in wdg.controls:
            name = next(n for n in names if getattr(wdg, n) is c)
            if name in live:
                if name in shared_controls:
                    shown.append(shared_controls[name][0])
                continue
            c.disabled = True
            c.add_class("distlib-fixed")
            if hasattr(c, "readout"):
                c.readout = False  # its value is said in words in the note, not as 7e+09
            fixed_controls.append(c)
            fixed.append(fixed_text(c, name))
        note = []
        if fixed:
            note = [w.HTML(f"<small class='distlib-static-note'>Fixed on this static page: "
                           f"{', '.join(_plain(f) for f in fixed)}; {wdg.static_reason}.</small>")]
        shown = shown + note + fixed_controls
        self._twin = wdg.phone_twin()
        wdg.fig.compact = self._twin.fig.compact = True
        try:
            tree = self._branch(axes, 0, dict(initial), shared_controls, first_view=True)
        finally:
            wdg.fig.compact = False
            self._twin.fig.image.value = b""
            self._twin.close()
            self._twin = None
        # leave the live controls where the initial frame is
        wdg._restore(initial)
        # the live picture is not shown on the static page: keep its pixels out of the page's widget state
        wdg.fig.image.value = b""
        self.view = tree
        return wdg._static_layout(w.VBox(shown), tree)

    def _selector(self, ax: StaticAxis, vals: list, current, chosen: dict | None = None):
        """A control for the grid ``vals``: (shown widget, linked widget, linked trait)."""
        ctrl = getattr(self.widget, ax.control)
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
            self.links.append((play, "value", slider, "value"))
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

    def _branch(self, axes, level, chosen, shared, *, first_view=False):
        """``first_view``: this branch is on the page's first view (every control at its start value)."""
        if level == len(axes):
            return self._leaf(chosen, first_view=first_view)
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
        children = [self._branch(axes, level + 1, {**chosen, ax.control: v}, shared,
                                 first_view=first_view and v == current) for v in vals]
        stack = w.Stack(children, selected_index=vals.index(current))
        w.jslink((linked, trait), (stack, "selected_index"))
        self.links.append((linked, trait, stack, "selected_index"))
        if ax.local:
            return w.VBox([shown, stack])
        return stack

    def _leaf(self, chosen, *, first_view=False) -> w.Widget:
        """One frame. Only the first view's frame is fetched with the page; the others load when a
        control first shows them (``loading="lazy"`` on a hidden image)."""
        wdg, twin, cfg = self.widget, self._twin, self.config
        frame = wdg.render_frame(chosen)
        phone = twin.render_frame(chosen)
        self.frame_count += 1
        shared = self._models()
        kw = {"layout": shared["html"]}
        if shared["style"] is not None:
            kw["style"] = shared["style"]
        key = hashlib.sha1(frame.png + phone.png).hexdigest()[:16] + ("" if first_view else "-lazy")
        picture = shared["pictures"].get(key)  # an identical picture is one model, shown wherever it recurs
        if picture is None:
            wide = Rendering(frame.png, wdg.fig.width, wdg.fig.height)
            narrow = Rendering(phone.png, twin.fig.width, twin.fig.height)
            picture = w.HTML(picture_html(wide, narrow, folder=cfg.folder, url=cfg.url,
                                          alt=alt_text(frame.summary, type(wdg)), lazy=not first_view), **kw)
            picture.add_class("distlib-picture-box")
            shared["pictures"][key] = picture
        return wdg._leaf_layout(picture, w.HTML(frame.summary, **kw))


def alt_text(summary_html: str, widget_type: type) -> str:
    """What a static frame shows, for a reader who cannot see it: the frame's own read-out as text.

    (The read-out is drawn from the same state as the picture; a widget
    with none falls back to the first line of its docstring.)

    >>> alt_text("<b>GPU busy</b> 40% &middot; compute-bound", object)
    'GPU busy 40% · compute-bound'
    """
    import html
    import re

    said = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", summary_html)).split())
    if not said:
        doc = (widget_type.__doc__ or "").strip().splitlines()
        said = doc[0].strip() if doc else widget_type.__name__
    return said if len(said) <= 400 else said[:397].rstrip() + "..."


def _sort_key(v):
    try:
        return (0, float(v))
    except (TypeError, ValueError):
        return (1, str(v))


def _unit_free(description: str) -> str:
    """A control's name without its unit: "link GB/s (one direction)" -> "link GB/s"."""
    return str(description).split(" (")[0]


def fixed_text(ctrl, attribute: str) -> str:
    """A fixed control in the static note: its name and value ("MFU 0.4"), or a button row's chosen label."""
    labels = getattr(ctrl, "_options_labels", None)
    if not ctrl.description:
        return str(ctrl.label) if labels else attribute.replace("_", " ")
    return f"{_unit_free(ctrl.description)} {value_text(ctrl)}"


def value_text(ctrl) -> str:
    """A control's value as the prose writes it, with the unit its label names.

    >>> value_text(w.FloatLogSlider(value=5e-5, min=-7, max=-3, description="latency between nodes (s)"))
    '50 µs'
    >>> value_text(w.FloatLogSlider(value=1e12, min=9, max=13, description="training tokens"))
    '1 trillion'
    >>> value_text(w.FloatSlider(value=0.4, description="MFU"))
    '0.4'
    >>> value_text(w.FloatLogSlider(value=50_000, min=3, max=6, description="one GPU's MTBF (hours)"))
    '5.7 years'
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
               "min": lambda x: fmt_seconds(x * 60), "hours": lambda x: fmt_seconds(x * 3600),
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
