"""Helpers the chapter notebooks share: glue that also works outside the book.

In the Jupyter Book build, ``glue`` hands a value to myst-nb so prose can
quote it with ``{glue:text}`` roles. In Colab or a plain kernel, where myst-nb
is absent, it does nothing and returns the value, so cells run unchanged.
"""

from __future__ import annotations

__all__ = ["glue", "in_colab"]


_PLAIN = (str, int, float)


def glue(name: str | None = None, value=None, *, display: bool = False, **values) -> None:
    """Store ``value`` under ``name`` for the book's prose (where myst-nb is installed).

    Two forms: ``glue("n_params", dl.fmt_bytes(n))`` stores one value as it is
    (a :class:`~distlib.fmt.Text`, a float for a format spec in the prose, a
    figure); ``glue(steps=3, dp_small=2)`` stores each keyword's plain value
    (a string or a number) as the text ``f"{value}"`` shows, which is what
    ``glue("steps", Text(f"{steps}"))`` stored. Both may be given at once.

    Returns nothing, so that a cell ending in a glue shows no stray value in a
    reader's Jupyter or Colab (where the book's prose is not there to use it).

    >>> glue(steps=3, share=0.25, label="DDP")   # outside the book: nothing to do, nothing shown
    >>> glue(steps=[3])
    Traceback (most recent call last):
    ...
    TypeError: glue's keyword steps must be a string or a number (its text is glued), got list
    """
    for key, plain in values.items():
        if isinstance(plain, bool) or not isinstance(plain, _PLAIN):
            raise TypeError(f"glue's keyword {key} must be a string or a number (its text is glued), "
                            f"got {type(plain).__name__}")
    if name is None and value is not None:
        raise TypeError("glue needs a name for its value: glue(name, value) or glue(name=value)")
    try:
        from myst_nb import glue as _glue
    except ImportError:
        return None
    from .fmt import Text

    if name is not None:
        _glue(name, value, display=display)
    for key, plain in values.items():
        _glue(key, plain if isinstance(plain, Text) else Text(f"{plain}"), display=display)
    return None


def in_colab() -> bool:
    """True when running inside Google Colab."""
    import sys

    return "google.colab" in sys.modules
