"""What the static book is told from outside: three environment variables, read here and nowhere else.

A book build (``book/_ext/offline_book.py``) and the tests set them for the
processes and kernels they start; everything else in :mod:`distlib.static`
asks :func:`environment`, when it needs to know, for an :class:`Environment`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["ENV_DIR", "ENV_URL", "ENV_STRICT", "Environment", "environment", "static_env", "strict_pictures"]

#: The book build's switch (set by book/_ext/offline_book.py for each chapter's
#: kernel): the folder pictures are written into, or "inline" to embed them.
ENV_DIR = "DISTLIB_STATIC_WIDGETS"
#: The URL prefix the page reaches that folder by.
ENV_URL = "DISTLIB_STATIC_URL"
#: Set to "1" (the test suite does) and a picture that can only fit by being shrunk is an error.
ENV_STRICT = "DISTLIB_PICTURES_STRICT"


@dataclass(frozen=True)
class Environment:
    """The static book's settings as the environment gives them.

    ``frames``: the folder pictures and frames are written into, ``"inline"``
    to embed them in the page, or None outside a book build (unset, empty or
    ``"0"``); ``url``: the prefix the page reaches that folder by;
    ``strict``: a picture that only fits by being drawn smaller is an error.
    """

    frames: str | None
    url: str = ""
    strict: bool = False


def environment() -> Environment:
    """The :class:`Environment` now (read at every call: a test or a build may change it).

    >>> import os
    >>> old = {k: os.environ.pop(k, None) for k in (ENV_DIR, ENV_URL, ENV_STRICT)}
    >>> environment()
    Environment(frames=None, url='', strict=False)
    >>> os.environ.update({ENV_DIR: "inline", ENV_STRICT: "1"})
    >>> environment()
    Environment(frames='inline', url='', strict=True)
    >>> for k, v in old.items():
    ...     _ = os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    """
    folder = os.environ.get(ENV_DIR, "").strip()
    frames = None if not folder or folder == "0" else folder
    return Environment(frames=frames, url=os.environ.get(ENV_URL, "") if frames else "",
                       strict=os.environ.get(ENV_STRICT, "").strip() == "1")


def static_env() -> tuple[str, str] | None:
    """``(folder, url)`` when the environment asks for the static book's pictures, else None.

    ``folder`` is a path or ``"inline"``; unset, empty or ``"0"`` means no.
    """
    env = environment()
    return None if env.frames is None else (env.frames, env.url)


def strict_pictures() -> bool:
    """True when :data:`ENV_STRICT` is ``"1"``: :func:`~distlib.static.pictures.render_figure` then raises
    instead of shrinking."""
    return environment().strict
