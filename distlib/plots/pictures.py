"""Pictures for the static book: one drawing, two sizes, the browser picks.

Moved to :mod:`distlib.static` (its picture pairs in
:mod:`distlib.static.pictures`, the phone layout in
:mod:`distlib.static.phone`, the environment in
:mod:`distlib.static.settings`); every name this module had is re-exported
here under the same name, so ``from distlib.plots.pictures import
phone_layout`` and the rest keep working.
"""

from __future__ import annotations

from ..static.kernel import install_figure_formatter
from ..static.phone import phone_layout, phone_spec
from ..static.pictures import (CSS_DPI, MIN_FONT_PT, NARROW, PHONE_MAX_VIEWPORT, SCALE, WIDE_MAX, Rendering,
                               alt_text, constrained_layout, enforce_min_font, fit_texts,
                               lay_out_for_phone, palette_png, phone_copy, picture_html, render_figure, render_pair,
                               texts_outside)
from ..static.pictures import _wrap_pixels  # noqa: F401  (the tests measure it here)
from ..static.settings import ENV_DIR, ENV_STRICT, ENV_URL, static_env, strict_pictures

__all__ = ["MIN_FONT_PT", "WIDE_MAX", "NARROW", "PHONE_MAX_VIEWPORT", "SCALE", "CSS_DPI", "Rendering",
           "enforce_min_font", "render_figure", "fit_texts", "texts_outside", "strict_pictures", "ENV_STRICT",
           "render_pair", "phone_layout", "phone_spec", "phone_copy", "lay_out_for_phone", "picture_html",
           "install_figure_formatter", "static_env", "palette_png", "constrained_layout", "ENV_DIR", "ENV_URL"]

_alt = alt_text
