"""The book's table of accelerators, every figure with its source.

Chapter "Accelerators and the roofline" reads its numbers from here, and so do
the three walls. The table lives in ``distlib/data/accelerators.csv``: one row
per chip, one column per figure and one source column next to each figure
(document name and URL), so a reader can check every number.

Conventions, applied to every row:

* ``bf16_flops`` is the **dense** BF16 matrix peak in FLOP/s. Vendors often
  print the 2:4 structured-sparsity figure (twice as large, marked with an
  asterisk); the table halves it and says so in the source column.
* ``link_bandwidth`` is the chip's scale-up bandwidth (NVLink, Infinity
  Fabric, ICI, Gaudi's scale-up Ethernet ports) summed over its links, in
  bytes/s, **in one direction**. Vendors usually print the total of both
  directions (H100: "NVLink 900 GB/s" is 450 GB/s each way).
* ``hbm_bytes`` is the memory the chip exposes, in bytes: for the NVIDIA GPUs
  the total ``nvidia-smi`` reports (MiB = 2**20 bytes; an H200 shows
  143,771 MiB = 140.4 GiB, more than its marketed "141 GB" in bytes), for
  the MI300X what ``rocm-smi`` reports (206,141,652,992 bytes), for Gaudi 3
  what ``hl-smi`` reports (131,072 MiB) and for TPUs Google's GiB figure.
  :attr:`Accelerator.hbm_gib` shows it in GiB.
* Rates are decimal: 1 GB/s = 1e9 bytes/s.

Examples
--------
>>> h100 = accelerator("h100")
>>> h100.bf16_flops, h100.hbm_bandwidth
(989500000000000.0, 3350000000000.0)
>>> round(h100.ridge_point)            # FLOP per byte of HBM traffic
295
>>> accelerator("TPU-v5p").link_bandwidth   # 1200 GB/s bidirectional per chip
600000000000.0
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

__all__ = ["Accelerator", "accelerator", "accelerators", "accelerator_names", "FIGURES"]

#: The four figures every row carries, each with its own source column.
FIGURES = ("bf16_flops", "hbm_bytes", "hbm_bandwidth", "link_bandwidth")


@dataclass(frozen=True)
class Accelerator:
    """One accelerator's peak figures (SI units) and where each comes from.

    Attributes
    ----------
    name : str
        Short name used in the book ("H100", "TPU v5p").
    vendor, variant : str
        Maker and the exact part the figures describe ("H100 SXM5 80 GB").
    bf16_flops : float
        Dense BF16 matrix peak, FLOP/s.
    hbm_bytes : float
        Capacity of the chip's HBM, bytes.
    hbm_bandwidth : float
        Peak HBM bandwidth, bytes/s.
    link_bandwidth : float
        Chip-to-chip scale-up bandwidth per chip, summed over its links, one
        direction, bytes/s.
    link_name : str
        What that link is (NVLink 4, ICI, ...).
    sources : dict
        Figure name (``"bf16_flops"``, ``"hbm_bytes"``, ``"hbm_bandwidth"``,
        ``"link_bandwidth"``) -> document and URL it was taken from.
    notes : str
        Caveats (variants, rounding, units).
    """

    name: str
    vendor: str
    variant: str
    bf16_flops: float
    hbm_bytes: float
    hbm_bandwidth: float
    link_bandwidth: float
    link_name: str
    sources: dict = field(repr=False, hash=False)
    notes: str = field(default="", repr=False)
    aliases: tuple = field(default=(), repr=False)

    @property
    def hbm_gib(self) -> float:
        """HBM capacity in GiB (2**30 bytes), the unit ``nvidia-smi`` and the TPU docs use.

        Examples
        --------
        >>> round(accelerator("H200").hbm_gib, 1), round(accelerator("H100").hbm_gib, 1)
        (140.4, 79.6)
        >>> round(accelerator("MI300X").hbm_gib, 1), accelerator("Gaudi 3").hbm_gib
        (192.0, 128.0)
        """
        return self.hbm_bytes / 2**30

    @property
    def ridge_point(self) -> float:
        """FLOP per byte of HBM traffic at which compute and memory time balance."""
        return self.bf16_flops / self.hbm_bandwidth

    @property
    def peak_flops(self) -> float:
        """Alias of :attr:`bf16_flops`, the roof the roofline chapter uses."""
        return self.bf16_flops

    @property
    def bandwidth(self) -> float:
        """Alias of :attr:`hbm_bandwidth` (bytes/s), the roofline's slope."""
        return self.hbm_bandwidth


def _key(name: str) -> str:
    """Lower-case and drop spaces, hyphens, underscores and dots."""
    return re.sub(r"[\s\-_.]+", "", name.lower())


@lru_cache(maxsize=1)
def _table() -> tuple[Accelerator, ...]:
    # Read once per process. The specs are shared: treat them (and their sources) as read-only.
    text = resources.files("distlib").joinpath("data/accelerators.csv").read_text(encoding="utf-8")
    rows = []
    for row in csv.DictReader(text.splitlines()):
        sources = {f: row[f + "_source"] for f in FIGURES}
        aliases = tuple(a.strip() for a in row["aliases"].split(";") if a.strip())
        rows.append(
            Accelerator(
                name=row["name"],
                vendor=row["vendor"],
                variant=row["variant"],
                bf16_flops=float(row["bf16_flops"]),
                hbm_bytes=float(row["hbm_bytes"]),
                hbm_bandwidth=float(row["hbm_bandwidth"]),
                link_bandwidth=float(row["link_bandwidth"]),
                link_name=row["link_name"],
                sources=sources,
                notes=row["notes"],
                aliases=aliases,
            )
        )
    return tuple(rows)


@lru_cache(maxsize=1)
def _index() -> dict[str, Accelerator]:
    index = {}
    for spec in _table():
        for label in (spec.name, *spec.aliases):
            index[_key(label)] = spec
    return index


def accelerators() -> list[Accelerator]:
    """Every accelerator in the table, in the table's order.

    >>> [a.name for a in accelerators()][:3]
    ['A100', 'H100', 'H200']
    """
    return list(_table())


def accelerator_names() -> list[str]:
    """The short names :func:`accelerator` accepts (aliases work too).

    >>> accelerator_names()
    ['A100', 'H100', 'H200', 'B200', 'MI300X', 'TPU v4', 'TPU v5p', 'Gaudi 3']
    """
    return [a.name for a in _table()]


def accelerator(name) -> Accelerator:
    """The spec of accelerator ``name`` from the book's sourced table.

    Look-up ignores case, spaces, hyphens and underscores, so ``"tpu v5p"``,
    ``"TPU-v5p"`` and ``"tpuv5p"`` all work, as do aliases such as
    ``"H100 SXM"`` or ``"gaudi3"``. An :class:`Accelerator` passed in is
    returned unchanged, so functions can take a name or a spec.

    Raises
    ------
    ValueError
        For an unknown name; the message lists the known names.
    TypeError
        If ``name`` is not a string.

    Examples
    --------
    >>> accelerator("mi300x").link_bandwidth / 1e9   # 7 links x 64 GB/s, one way
    448.0
    >>> accelerator("gaudi3").name
    'Gaudi 3'
    >>> accelerator("V100")
    Traceback (most recent call last):
    ...
    ValueError: unknown accelerator 'V100'; known: A100, H100, H200, B200, MI300X, TPU v4, TPU v5p, Gaudi 3
    """
    if isinstance(name, Accelerator):
        return name
    if not isinstance(name, str):
        raise TypeError(f"accelerator name must be a string, got {name!r}")
    spec = _index().get(_key(name))
    if spec is None:
        raise ValueError(f"unknown accelerator {name!r}; known: {', '.join(accelerator_names())}")
    return spec
