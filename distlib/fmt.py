"""Numbers with units, formatted for prose and tables.

Computations stay in SI base units (bytes, seconds, FLOP/s); these helpers
only turn a result into text. Decimal prefixes throughout: 1 GB = 1e9 bytes.
"""

from __future__ import annotations

import math

__all__ = ["Text", "si", "fmt_bytes", "fmt_seconds", "fmt_rate", "fmt_flops", "fmt_share", "fmt_count", "fmt_bytes_binary", "fmt_flop"]

_PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


class Text(str):
    """A string whose repr is itself, so glued text shows without quotes.

    >>> Text("1.75 GB")
    1.75 GB
    """

    def __repr__(self) -> str:
        return str(self)


def si(value: float, unit: str, *, digits: int = 3) -> Text:
    """``value`` with a decimal SI prefix and ``digits`` significant digits.

    >>> si(1.75e9, "B")
    1.75 GB
    >>> si(0.0, "s")
    0 s
    """
    if value == 0 or not math.isfinite(value):
        return Text(f"{value:g} {unit}")
    mag = abs(value)
    if mag < 1:
        for scale, prefix in [(1e-3, "m"), (1e-6, "µ"), (1e-9, "n")]:
            if mag >= scale:
                return Text(f"{value / scale:.{digits}g} {prefix}{unit}")
        return Text(f"{value:.{digits}g} {unit}")
    for scale, prefix in _PREFIXES:
        if mag >= scale:
            return Text(f"{value / scale:.{digits}g} {prefix}{unit}")
    return Text(f"{value:.{digits}g} {unit}")


def fmt_bytes(n_bytes: float, *, digits: int = 3) -> Text:
    """Format with a decimal prefix.

    >>> fmt_bytes(14e9)
    14 GB
    """
    return si(n_bytes, "B", digits=digits)


def fmt_bytes_binary(n_bytes: float, *, digits: int = 3) -> Text:
    """Format with a binary prefix (KiB = 1024 B), for sizes that are powers of two.

    >>> fmt_bytes_binary(16 * 2**20), fmt_bytes_binary(4096), fmt_bytes_binary(100), fmt_bytes_binary(1.5 * 2**30)
    (16 MiB, 4 KiB, 100 B, 1.5 GiB)
    """
    x = float(n_bytes)
    for k, prefix in [(4, "Ti"), (3, "Gi"), (2, "Mi"), (1, "Ki")]:
        if abs(x) >= 1024**k:
            return Text(f"{x / 1024**k:.{digits}g} {prefix}B")
    return Text(f"{x:.{digits}g} B")


def fmt_seconds(seconds: float, *, digits: int = 3) -> Text:
    """Seconds, switching to minutes, hours, days or years when they read better (from two of each).

    >>> fmt_seconds(0.245)
    245 ms
    >>> fmt_seconds(1160.0)
    19.3 min
    >>> fmt_seconds(1.0e9)
    31.7 years
    """
    for limit, name in [(365.25 * 86400, "years"), (86400, "days"), (3600, "hours"), (60, "min")]:
        if seconds >= 2 * limit:
            return Text(f"{seconds / limit:.{digits}g} {name}")
    return si(seconds, "s", digits=digits)


def fmt_rate(bytes_per_second: float, *, digits: int = 3) -> Text:
    """Format with a decimal prefix.

    >>> fmt_rate(9e11)
    900 GB/s
    """
    return si(bytes_per_second, "B/s", digits=digits)


def fmt_flops(flops_per_second: float, *, digits: int = 3) -> Text:
    """Format with a decimal prefix.

    >>> fmt_flops(9.89e14)
    989 TFLOP/s
    """
    return si(flops_per_second, "FLOP/s", digits=digits)


def fmt_count(n: float, *, digits: int = 3) -> Text:
    """A count as the prose writes it: digits with commas below a million, then words.

    >>> fmt_count(4096), fmt_count(7e9), fmt_count(1.75e11), fmt_count(1e12), fmt_count(2.5e6)
    (4,096, 7 billion, 175 billion, 1 trillion, 2.5 million)
    """
    x = float(n)
    for scale, word in [(1e12, "trillion"), (1e9, "billion"), (1e6, "million")]:
        if abs(x) >= scale:
            return Text(f"{x / scale:.{digits}g} {word}")
    return Text(f"{x:,.0f}" if x == round(x) else f"{x:,.{digits}g}")


def fmt_flop(n: float, *, digits: int = 2) -> Text:
    """An amount of arithmetic: SI prefixes up to PFLOP, then a power of ten (no exa- or zetta- for a reader to decode).

    >>> fmt_flop(2.147e9), fmt_flop(4.2e22), fmt_flop(3.14e23, digits=3)
    (2.15 GFLOP, 4.2 × 10²² FLOP, 3.14 × 10²³ FLOP)
    """
    x = float(n)
    if not math.isfinite(x) or abs(x) < 1e18:
        return si(x, "FLOP", digits=max(digits, 3))
    exp = int(math.floor(math.log10(abs(x))))
    sup = str(exp).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return Text(f"{x / 10**exp:.{digits}g} × 10{sup} FLOP")


def fmt_share(fraction: float) -> Text:
    """A fraction as a percentage that never rounds to 0% or 100% unless it is exactly that.

    Examples
    --------
    >>> fmt_share(0.35), fmt_share(0.996), fmt_share(1.0), fmt_share(0.004)
    (35%, 99.6%, 100%, 0.4%)
    """
    x = float(fraction)
    text = f"{x:.0%}"
    if (text == "100%" and x != 1.0) or (text in ("0%", "-0%") and x != 0.0):
        text = f"{x:.1%}"
    return Text(text)
