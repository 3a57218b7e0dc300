"""Link rates quoted in Gbit/s, turned into the bytes/s the library computes in.

NICs, switch ports and throttled links are sold and configured in Gbit/s
(1e9 bit/s, decimal, per direction); every cost model takes bytes/s. The
conversion lives here once, so no module divides by 8 in its own way.
"""

from __future__ import annotations

from ._check import check_real

__all__ = ["BITS_PER_BYTE", "BITS_PER_GBIT", "gbit_to_bytes_per_s", "bytes_per_s_to_gbit"]

BITS_PER_BYTE = 8
BITS_PER_GBIT = 1e9
"""One Gbit/s is 1e9 bit/s (decimal, as line rates are quoted)."""


def gbit_to_bytes_per_s(gbit) -> float:
    """A line rate in Gbit/s as bytes/s (the direction is whatever the rate's is).

    Parameters
    ----------
    gbit : float
        Rate in Gbit/s (>= 0).

    Returns
    -------
    float
        bytes/s.

    Examples
    --------
    One 400 Gb/s NDR InfiniBand port carries 50 GB/s in each direction:

    >>> gbit_to_bytes_per_s(400) / 1e9
    50.0
    >>> gbit_to_bytes_per_s(-1)
    Traceback (most recent call last):
    ...
    ValueError: gbit must be a finite number >= 0, got -1.0
    """
    gbit = check_real("gbit", gbit, minimum=0)
    return gbit * BITS_PER_GBIT / BITS_PER_BYTE


def bytes_per_s_to_gbit(bandwidth) -> float:
    """The inverse of :func:`gbit_to_bytes_per_s`: bytes/s as Gbit/s, for showing a rate.

    Examples
    --------
    >>> bytes_per_s_to_gbit(400e9)      # a DGX H100's eight 400 Gb/s NICs together
    3200.0
    """
    bandwidth = check_real("bandwidth", bandwidth, minimum=0)
    return bandwidth * BITS_PER_BYTE / BITS_PER_GBIT
