"""Helpers the chapter notebooks share: glue that also works outside the book.

In the Jupyter Book build, ``glue`` hands a value to myst-nb so prose can
quote it with ``{glue:text}`` roles. In Colab or a plain kernel, where myst-nb
is absent, it does nothing and returns the value, so cells run unchanged.
"""

from __future__ import annotations

__all__ = ["glue", "in_colab"]


def glue(name: str, value, *, display: bool = False):
    """Store ``value`` under ``name`` for the book's prose; return ``value``."""
    try:
        from myst_nb import glue as _glue
    except ImportError:
        return value
    _glue(name, value, display=display)
    return value


def in_colab() -> bool:
    """True when running inside Google Colab."""
    import sys

    return "google.colab" in sys.modules
