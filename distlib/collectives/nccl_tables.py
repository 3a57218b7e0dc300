"""nccl-tests result tables shipped with the library, and a check of their own arithmetic.

:func:`load_nccl_table` reads ``distlib/data/<name>.csv`` (its ``# key: value``
header lines and its rows, in SI units); :func:`check_nccl_table` recomputes
every row's count, algbw and busbw from its size and time and lists the rows
that disagree beyond what rounding allows. Re-exported by :mod:`distlib.collectives`.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from .busbw import bus_factor

__all__ = ["NcclTable", "load_nccl_table", "check_nccl_table"]


@dataclass
class NcclTable:
    """An nccl-tests result table, in SI units.

    Attributes
    ----------
    n_bytes, count : ndarray
        The "size" (bytes) and "count" (elements) columns.
    dtype : list of str
    seconds : ndarray
        The "time" column converted from microseconds.
    algbw, busbw : ndarray
        As printed, converted from GB/s (nccl-tests divides by 1e9) to bytes/s.
    meta : dict
        The file's ``# key: value`` header lines: source, status (whether it
        is a verified measurement), collective, p, notes.
    """

    name: str
    n_bytes: np.ndarray
    count: np.ndarray
    dtype: list
    seconds: np.ndarray
    algbw: np.ndarray
    busbw: np.ndarray
    meta: dict
    decimals: list = field(default_factory=list, repr=False)  # per row: (time_us, algbw, busbw) decimals

    @property
    def collective(self) -> str:
        return self.meta.get("collective", "allreduce")

    @property
    def p(self) -> int:
        return int(self.meta["p"])

    @property
    def verified(self) -> bool:
        return self.meta.get("status", "").lower().startswith("verified")


_ITEMSIZE = {"float": 4, "half": 2, "bfloat16": 2, "double": 8, "int32": 4, "int8": 1, "uint8": 1,
             "int64": 8, "uint64": 8, "int": 4, "float32": 4, "float16": 2, "float64": 8}


def load_nccl_table(name="nccl_tests_h100_seed") -> NcclTable:
    """Load a shipped nccl-tests table from ``distlib/data/<name>.csv``.

    ``"nccl_tests_h100_seed"`` is the 8x H100 ``all_reduce_perf`` table the
    course's source material prints. It is an *illustrative example*, not a
    verified measurement (``table.verified`` is False); see its ``meta``.

    Examples
    --------
    >>> tab = load_nccl_table("nccl_tests_h100_seed")
    >>> tab.p, tab.collective, tab.verified
    (8, 'allreduce', False)
    >>> float(tab.seconds[-1]), float(tab.n_bytes[-1])
    (0.00721, 1073741824.0)
    """
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise ValueError(f"name must be the name of a shipped table such as 'nccl_tests_h100_seed', got {name!r}")
    path = resources.files("distlib") / "data" / f"{name}.csv"
    if not path.is_file():
        available = sorted(p.name[:-4] for p in (resources.files("distlib") / "data").iterdir()
                           if p.name.startswith("nccl") and p.name.endswith(".csv"))
        raise ValueError(f"name must be one of {available}; got {name!r}")
    meta: dict = {}
    rows = []
    with path.open("r", encoding="utf-8") as fh:
        lines = []
        for line in fh:
            if line.startswith("#"):
                key, _, value = line[1:].partition(":")
                if value:
                    k = key.strip()
                    meta[k] = (meta[k] + " " + value.strip()) if k in meta else value.strip()
            elif line.strip():
                lines.append(line)
        for row in csv.DictReader(lines):
            rows.append(row)
    n_bytes = np.array([float(r["size_bytes"]) for r in rows])
    return NcclTable(
        name=name,
        n_bytes=n_bytes,
        count=np.array([int(r["count"]) for r in rows]),
        dtype=[r["type"] for r in rows],
        seconds=np.array([float(r["time_us"]) for r in rows]) / 1e6,
        algbw=np.array([float(r["algbw_GBps"]) for r in rows]) * 1e9,
        busbw=np.array([float(r["busbw_GBps"]) for r in rows]) * 1e9,
        meta=meta,
        decimals=[tuple(_decimals(r[c]) for c in ("time_us", "algbw_GBps", "busbw_GBps")) for r in rows],
    )


def _decimals(text: str) -> int:
    text = text.strip()
    return len(text.split(".")[1]) if "." in text else 0


def check_nccl_table(table: NcclTable, *, allow_rounding: bool = True) -> list:
    """Rows of an nccl-tests table that disagree with its own definitions.

    Checks every row for ``count == size / itemsize``, ``algbw == size /
    time`` and ``busbw == algbw * bus_factor(collective, p)`` (GB/s = 1e9
    bytes/s, as nccl-tests prints).

    Parameters
    ----------
    allow_rounding : bool
        True: a printed number only has to be reachable from *some* true
        values that round to the printed ones (time within half its last
        printed digit, algbw within half a unit of its last decimal), i.e.
        the row could have come from nccl-tests. False: recompute algbw and
        busbw from the printed size and time and compare at the printed
        decimals.

    Returns
    -------
    list of dict
        One entry per disagreement: ``row``, ``column``, ``printed`` and
        ``expected`` (recomputed from the printed size and time), in the
        printed unit.

    Examples
    --------
    >>> tab = load_nccl_table()
    >>> [(e["row"], e["column"]) for e in check_nccl_table(tab, allow_rounding=False)]
    [(3, 'busbw'), (4, 'busbw'), (5, 'busbw'), (6, 'busbw')]
    >>> [(e["row"], e["printed"], e["expected"]) for e in check_nccl_table(tab)]  # beyond rounding
    [(4, 186.99, 187.01), (6, 260.61, 260.62)]
    """
    if not isinstance(table, NcclTable):
        raise TypeError(f"table must be an NcclTable from load_nccl_table(), got {type(table).__name__}")
    factor = bus_factor(table.collective, table.p)
    problems = []
    for i in range(len(table.n_bytes)):
        size, t = table.n_bytes[i], table.seconds[i]
        item = _ITEMSIZE.get(table.dtype[i])
        if item is not None and table.count[i] * item != size:
            problems.append({"row": i, "column": "count", "printed": int(table.count[i]),
                             "expected": size / item})
        dec_alg, dec_bus = table.decimals[i][1], table.decimals[i][2]
        alg, bus = table.algbw[i] / 1e9, table.busbw[i] / 1e9
        exact_alg = size / t / 1e9
        if allow_rounding:
            dt = 0.5 * 10.0 ** -table.decimals[i][0] * 1e-6
            lo, hi = size / (t + dt) / 1e9, (size / (t - dt) / 1e9 if t > dt else math.inf)
            half_a, half_b = 0.5 * 10.0 ** -dec_alg, 0.5 * 10.0 ** -dec_bus
            ok_alg = lo - half_a - 1e-12 <= alg <= hi + half_a + 1e-12
            a_lo, a_hi = max(lo, alg - half_a), min(hi, alg + half_a)
            ok_bus = a_lo <= a_hi and factor * a_lo - half_b - 1e-12 <= bus <= factor * a_hi + half_b + 1e-12
        else:
            ok_alg = round(exact_alg, dec_alg) == round(alg, dec_alg)
            ok_bus = round(exact_alg * factor, dec_bus) == round(bus, dec_bus)
        if not ok_alg:
            problems.append({"row": i, "column": "algbw", "printed": round(float(alg), dec_alg),
                             "expected": round(float(exact_alg), dec_alg)})
        if not ok_bus:
            problems.append({"row": i, "column": "busbw", "printed": round(float(bus), dec_bus),
                             "expected": round(float(exact_alg * factor), dec_bus)})
    return problems
