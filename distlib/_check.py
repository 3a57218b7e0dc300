"""Argument checks shared by every public function.

Each check names the argument and the range it accepts, so a reader who types
``p=0`` into a cell learns what went wrong from the message alone.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "check_int",
    "check_real",
    "check_choice",
    "check_array",
    "check_bool",
    "check_int_choice",
    "check_int_grid",
    "check_real_in",
]


def _is_bool(value) -> bool:
    return isinstance(value, (bool, np.bool_))


def check_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` or raise naming ``name`` and its range.

    Examples
    --------
    >>> check_int("p", 8, minimum=1)
    8
    >>> check_int("p", 0, minimum=1)
    Traceback (most recent call last):
    ...
    ValueError: p must be an integer >= 1, got 0
    """
    if _is_bool(value) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be an integer{_range_text(minimum, maximum)}, got {value!r}")
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be an integer{_range_text(minimum, maximum)}, got {value}")
    return value


def check_real(
    name: str,
    value,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    strict_min: bool = False,
    strict_max: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` or raise naming ``name`` and its range.

    ``strict_min`` excludes the minimum itself (for quantities such as a
    bandwidth, which must be positive rather than merely non-negative).

    Examples
    --------
    >>> check_real("bandwidth", 1e9, minimum=0, strict_min=True)
    1000000000.0
    >>> check_real("mfu", float("nan"), minimum=0, maximum=1)
    Traceback (most recent call last):
    ...
    ValueError: mfu must be a finite number in [0, 1], got nan
    """
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number{_interval_text(minimum, maximum, strict_min, strict_max)}, got {value!r}")
    value = float(value)
    bad = not math.isfinite(value)
    if minimum is not None:
        bad = bad or value < minimum or (strict_min and value == minimum)
    if maximum is not None:
        bad = bad or value > maximum or (strict_max and value == maximum)
    if bad:
        raise ValueError(
            f"{name} must be a finite number{_interval_text(minimum, maximum, strict_min, strict_max)}, got {value!r}"
        )
    return value


def check_choice(name: str, value, choices) -> str:
    """Return ``value`` if it is one of ``choices``, else raise listing them.

    Examples
    --------
    >>> check_choice("phase", "tree", ["ring", "tree"])
    'tree'
    """
    if isinstance(choices, (tuple, list, frozenset, set, dict)):
        try:
            if value in choices:  # the common case, cheap: collectives check on every call
                return value
        except (TypeError, ValueError):  # unhashable, or an array compared with strings
            pass
    choices = list(choices)
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}; got {value!r}")
    return value


def check_array(name: str, value, *, ndim: int | None = None, finite: bool = False, minimum: float | None = None) -> np.ndarray:
    """Return ``value`` as a numeric NumPy array or raise naming ``name``."""
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise ValueError(f"{name} must be an array of numbers: {exc}") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number)):
        raise TypeError(f"{name} must be an array of numbers, got dtype {arr.dtype}")
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    if finite and arr.size and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must hold only finite numbers (no NaN or inf)")
    if minimum is not None and arr.size and np.any(arr < minimum):
        raise ValueError(f"{name} must hold numbers >= {minimum}, got min {arr.min()!r}")
    return arr


def check_bool(name: str, value) -> bool:
    """Return ``value`` as a ``bool`` if it is one, else raise naming ``name``.

    A switch takes ``True`` or ``False``; the string ``"no"`` is truthy, so it
    is refused rather than read as on.

    Examples
    --------
    >>> check_bool("overlap", False)
    False
    >>> check_bool("overlap", "no")
    Traceback (most recent call last):
    ...
    TypeError: overlap must be True or False, got 'no'
    """
    if not _is_bool(value):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_int_choice(name: str, value, choices) -> int:
    """Return ``value`` as an ``int`` if it is one of the integers ``choices``, else raise listing them.

    Unlike :func:`check_choice`, ``True`` is not taken for ``1`` (a ``TypeError``).

    Examples
    --------
    >>> check_int_choice("nodes", 4.0, [2, 4, 8])
    4
    >>> check_int_choice("nodes", 3, [2, 4, 8])
    Traceback (most recent call last):
    ...
    ValueError: nodes must be one of 2, 4, 8; got 3
    """
    choices = list(choices)
    listed = ", ".join(repr(c) for c in choices)
    integral = isinstance(value, numbers.Integral) or (isinstance(value, float) and value.is_integer())
    if _is_bool(value) or not integral:
        raise TypeError(f"{name} must be one of {listed}; got {value!r}")
    if int(value) not in choices:
        raise ValueError(f"{name} must be one of {listed}; got {value!r}")
    return int(value)


def check_int_grid(name: str, value, *, minimum: int, maximum: int, step: int = 1, where: str = "") -> int:
    """Return ``value`` as an ``int`` on a slider's positions ``minimum, minimum + step, ..., maximum``.

    ``where`` ends the range with what it depends on (``" for p = 4"``).

    Examples
    --------
    >>> check_int_grid("k", 4, minimum=2, maximum=6, step=2)
    4
    >>> check_int_grid("k", 5, minimum=2, maximum=6, step=2)
    Traceback (most recent call last):
    ...
    ValueError: k must be in [2, 6] in steps of 2, got 5
    >>> check_int_grid("step", 0.5, minimum=0, maximum=6, where=" for p = 4")
    Traceback (most recent call last):
    ...
    TypeError: step must be an integer in [0, 6] for p = 4, got 0.5
    """
    text = f"[{minimum}, {maximum}]" + (f" in steps of {step}" if step != 1 else "") + where
    integral = isinstance(value, numbers.Integral) or (isinstance(value, float) and value.is_integer())
    if _is_bool(value) or not integral:
        raise TypeError(f"{name} must be an integer in {text}, got {value!r}")
    value = int(value)
    if not (minimum <= value <= maximum and (value - minimum) % step == 0):
        raise ValueError(f"{name} must be in {text}, got {value}")
    return value


def check_real_in(name: str, value, minimum: float, maximum: float, *, unit: str = "") -> float:
    """Return ``value`` as a finite ``float`` in ``[minimum, maximum]`` (a slider's range), else raise.

    The bounds are written in six significant digits and followed by
    ``unit``; a value within a relative 1e-10 of a bound counts as on it (a
    bound computed as ``10**-1 * 1e-3`` is not exactly ``1e-4``).

    Examples
    --------
    >>> check_real_in("alpha", 5e-6, 1e-7, 1e-3, unit="s")
    5e-06
    >>> check_real_in("alpha", 5.0, 1e-7, 1e-3, unit="s")
    Traceback (most recent call last):
    ...
    ValueError: alpha must be a finite number in [1e-07, 0.001] s, got 5.0
    """
    text = f"[{_bound_text(minimum)}, {_bound_text(maximum)}]" + (f" {unit}" if unit else "")
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in {text}, got {value!r}")
    value = float(value)
    lo, hi = minimum - 1e-10 * abs(minimum), maximum + 1e-10 * abs(maximum)
    if not (math.isfinite(value) and lo <= value <= hi):
        raise ValueError(f"{name} must be a finite number in {text}, got {value!r}")
    return value


def _bound_text(x) -> str:
    """A bound as a reader reads it: ``1e+12``, ``65536``, ``17179869184``, ``1.99526e+12``."""
    x = float(x)
    short = f"{x:.6g}"
    if float(short) == x or not (x.is_integer() and abs(x) < 1e15):
        return short
    return str(int(x))


def _range_text(minimum, maximum) -> str:
    if minimum is not None and maximum is not None:
        return f" in [{minimum}, {maximum}]"
    if minimum is not None:
        return f" >= {minimum}"
    if maximum is not None:
        return f" <= {maximum}"
    return ""


def _interval_text(minimum, maximum, strict_min, strict_max) -> str:
    if minimum is not None and maximum is not None:
        left = "(" if strict_min else "["
        right = ")" if strict_max else "]"
        return f" in {left}{_num(minimum)}, {_num(maximum)}{right}"
    if minimum is not None:
        return f" {'>' if strict_min else '>='} {_num(minimum)}"
    if maximum is not None:
        return f" {'<' if strict_max else '<='} {_num(maximum)}"
    return ""


def _num(x) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)
