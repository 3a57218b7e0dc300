"""The static book: every picture drawn twice (desktop and phone), widgets as pre-drawn frames.

The built book runs no kernel, and is read on 360 px phones as on desktops.
This package is all that takes: it draws on what :mod:`distlib.plots` and
:mod:`distlib.widgets` make and imports neither (nor the engines, the bench
or the mini cluster; ``tests/test_layers.py`` checks).

Modules
-------
:mod:`~distlib.static.settings`
    The environment variables below, read there and nowhere else.
:mod:`~distlib.static.mode`
    How widgets built now draw: live or as frames, wide or for a phone
    (a :class:`~distlib.static.mode.Mode` in a context variable, chosen for
    a block by ``frames_mode()`` / ``phone_twin()``, else by the environment).
:mod:`~distlib.static.pictures`
    Picture pairs: a figure rendered wide and again for a phone, the
    ``<picture>`` that carries both, text never under 11 pt, text fitted
    (wrapped, never shrunk where the tests look) to its picture.
:mod:`~distlib.static.phone`
    The phone layout (``phone_layout(fig, height=, adjust=)``) and the
    registry of what is known of a figure and its axes for its phone drawing
    (keyed by the figure, handed to the copy drawn for the phone).
:mod:`~distlib.static.legend`
    ``legend_below(ax, ...)``: the one way a plot puts its legend under its axes.
:mod:`~distlib.static.frames`
    Frame grids: the frames a widget's sliders select among (ipywidgets 8).
:mod:`~distlib.static.animation`
    ``animation_html``: a ``to_jshtml`` player at its CSS size, twice in the book.
:mod:`~distlib.static.kernel`
    A kernel's figures as picture pairs (``crisp_inline_figures``), and the
    environment a book build starts its kernels with (``kernel_environment``).

Environment variables
---------------------
Only these, each set from outside: by the book build
(``book/_ext/offline_book.py``, for the kernels that execute the chapters)
or by the tests.

``DISTLIB_STATIC_WIDGETS``
    The static book is being built: the folder where pictures and widget
    frames are written, or ``inline`` to embed them in the page. Unset,
    empty or ``0``: widgets are live and figures plain inline PNGs.
``DISTLIB_STATIC_URL``
    The URL prefix by which the page reaches that folder (e.g. ``widget-frames/``).
``DISTLIB_PICTURES_STRICT``
    ``1`` (the tests set it): a picture that could only fit by being drawn
    smaller, or a widget frame that cuts a text off, is an error instead.

The build also sets ``PYTHONSTARTUP`` (Python's own) for its kernels, to a
file that calls :func:`~distlib.static.kernel.crisp_inline_figures` as they
start; importing a module of distlib never changes a kernel.
"""

from .legend import legend_below, legend_below_again, placed_below
from .mode import Mode, StaticConfig, current_mode, frames_mode, phone_twin, static_config, static_frames
from .phone import Panel, PhoneLayout, phone_layout, phone_spec
from .pictures import (CSS_DPI, MIN_FONT_PT, NARROW, PHONE_MAX_VIEWPORT, SCALE, WIDE_MAX, Rendering, picture_html,
                       render_figure, render_pair)
from .settings import ENV_DIR, ENV_STRICT, ENV_URL, Environment, environment

__all__ = ["legend_below", "legend_below_again", "placed_below", "Mode", "StaticConfig", "current_mode",
           "frames_mode", "phone_twin", "static_config", "static_frames", "Panel", "PhoneLayout", "phone_layout",
           "phone_spec", "CSS_DPI", "MIN_FONT_PT", "NARROW", "PHONE_MAX_VIEWPORT", "SCALE", "WIDE_MAX", "Rendering",
           "picture_html", "render_figure", "render_pair", "ENV_DIR", "ENV_STRICT", "ENV_URL", "Environment",
           "environment"]
