"""How a widget built now draws: live or as pre-drawn frames, for a desktop or for a phone.

One small object, a :class:`Mode`, says it. Code that builds widgets asks
:func:`current_mode`; code that wants another mode says so for a block, in
the open::

    with frames_mode(StaticConfig(folder, "widget-frames/")):
        widget = RingWidget(p=4)       # drawn as frames
    with phone_twin():
        twin = RingWidget(p=4)         # live, drawn NARROW CSS px wide

The mode is held in a :class:`contextvars.ContextVar` (a context object, not
a module global that anyone may append to). When no block chose one, the
environment decides (:func:`distlib.static.settings.environment`): the book
build's kernels draw frames, every other kernel draws live widgets.
``static_frames()`` (re-exported by :mod:`distlib.widgets._base`) chooses one
for the rest of a session, the way the tests and benchmarks use it.
"""

from __future__ import annotations

import contextlib
import os
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from .settings import ENV_DIR, environment

__all__ = ["StaticConfig", "Mode", "current_mode", "frames_mode", "phone_twin", "drawn_for_phone", "static_frames",
           "static_config", "make_config"]


@dataclass(frozen=True)
class StaticConfig:
    """Where static frames go: ``folder`` (None: embed PNG bytes in the page) and ``url`` prefix."""

    folder: Path | None
    url: str = ""


@dataclass(frozen=True)
class Mode:
    """``frames``: where a widget's pre-drawn frames go (None: a live widget); ``narrow``: its picture
    is drawn for a phone (:data:`~distlib.static.pictures.NARROW` CSS px wide), as a phone twin's is."""

    frames: StaticConfig | None = None
    narrow: bool = False


#: The mode a block or a session chose; None: the environment's.
_CHOSEN: ContextVar[Mode | None] = ContextVar("distlib_static_mode", default=None)


def make_config(folder: str | os.PathLike, url: str = "") -> StaticConfig:
    """The :class:`StaticConfig` for ``folder`` (``"inline"``: embedded) reached by ``url``.

    Static frames are shown in ``ipywidgets.Stack``, which exists from
    ipywidgets 8 on: older ipywidgets is a ``RuntimeError`` that says so.
    """
    import ipywidgets as w

    if not hasattr(w, "Stack"):
        raise RuntimeError(
            f"static widget frames need ipywidgets >= 8 (Stack); this is ipywidgets {w.__version__}. "
            f"Unset {ENV_DIR} to keep the widgets live.")
    if str(folder) == "inline":
        return StaticConfig(None, "")
    if url and not url.endswith("/"):
        url += "/"
    return StaticConfig(Path(folder), url)


def current_mode() -> Mode:
    """The mode widgets built now follow: a block's or the session's choice, else the environment's."""
    chosen = _CHOSEN.get()
    if chosen is not None:
        return chosen
    env = environment()
    return Mode(frames=None if env.frames is None else make_config(env.frames, env.url))


def drawn_for_phone() -> bool:
    """Whether a picture made now is drawn for a phone (inside a :func:`phone_twin` block)."""
    chosen = _CHOSEN.get()
    return chosen is not None and chosen.narrow


def static_config() -> StaticConfig | None:
    """The static-frame configuration in force, or None for live widgets."""
    return current_mode().frames


@contextlib.contextmanager
def frames_mode(frames: StaticConfig | None, *, narrow: bool = False):
    """Within the block, widgets are built with ``frames`` (None: live) and ``narrow``."""
    token = _CHOSEN.set(Mode(frames=frames, narrow=narrow))
    try:
        yield _CHOSEN.get()
    finally:
        _CHOSEN.reset(token)


def phone_twin():
    """Within the block, widgets are built live with their pictures drawn for a phone (a phone twin)."""
    return frames_mode(None, narrow=True)


def static_frames(folder: str | os.PathLike | None = "inline", url: str = "") -> None:
    """Switch static (kernel-free) frames on for widgets built from now on (in this context).

    ``folder``: where frame PNGs are written (``"inline"`` embeds them in the
    widget state instead); ``url``: the prefix pages reach that folder by.
    ``static_frames(None)`` switches back to live widgets and
    ``static_frames("env")`` to following the environment variables.
    Requires ipywidgets 8 (``Stack``).
    """
    if folder is not None and str(folder) == "env":
        _CHOSEN.set(None)
        return
    _CHOSEN.set(Mode(frames=None if folder is None else make_config(folder, url)))
