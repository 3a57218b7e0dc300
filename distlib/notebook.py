"""Helpers the chapter notebooks share: glue that also works outside the book.

In the Jupyter Book build, ``glue`` hands a value to myst-nb so prose can
quote it with ``{glue:text}`` roles. In Colab or a plain kernel, where myst-nb
is absent, it does nothing and returns the value, so cells run unchanged.
"""

from __future__ import annotations

__all__ = ["glue", "in_colab"]


def glue(name: str, value, *, display: bool = False) -> None:
    """Store ``value`` under ``name`` for the book's prose (where myst-nb is installed).

    Returns nothing, so that a cell ending in a glue shows no stray value in a
    reader's Jupyter or Colab (where the book's prose is not there to use it).
    """
    try:
        from myst_nb import glue as _glue
    except ImportError:
        return None
    _glue(name, value, display=display)
    return None


def in_colab() -> bool:
    """True when running inside Google Colab."""
    import sys

    return "google.colab" in sys.modules
