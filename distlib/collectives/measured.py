"""What the bench measured, typed: :class:`BenchResult` (one sweep), :class:`Race` (a race on a mini cluster).

Pure dataclasses on the model floor: this module starts nothing and imports
no engine, so plots (:mod:`distlib.plots.bench`, :mod:`distlib.plots.minicluster`)
and the mini cluster can take these types without the command line. The
ranks hand a :class:`BenchResult` back as a report line
(:mod:`distlib.engines.report`); ``--json`` prints :meth:`BenchResult.to_dict`.
SI units throughout: seconds, bytes, bytes/s.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

__all__ = ["Timing", "BenchRow", "BenchResult", "RaceRow", "Race"]


@dataclass(frozen=True)
class Timing:
    """One algorithm at one size (SI units).

    ``seconds`` is the median over the timed samples; ``algbw``/``busbw`` in
    bytes/s (``None`` when the time is 0); ``wrong`` elements off the exact
    sum (``None`` when not checked); ``ratio`` the time over the built-in's,
    sample by sample (the median of the ratios of samples that ran back to
    back); ``choice`` what ``auto`` picked; ``samples`` the seconds per call
    of each timed sample, in the order they ran.
    """

    seconds: float
    algbw: float | None
    busbw: float | None
    wrong: int | None
    batch: int = 1
    ratio: float | None = None
    choice: str | None = None
    samples: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "samples", tuple(self.samples))  # a tuple, also when read back from JSON's list


@dataclass(frozen=True)
class BenchRow:
    """One size of the sweep: ``results`` maps algorithm name -> :class:`Timing`."""

    n_bytes: int
    count: int
    dtype: str
    results: dict


@dataclass(frozen=True)
class BenchResult:
    """What ``python -m distlib.bench`` measured, typed.

    ``algorithms`` starts with ``"builtin"`` (the engine's own all-reduce).
    :meth:`to_dict` gives the ``--json`` form, :meth:`from_dict` reads it
    back; :meth:`column` pulls one quantity of one algorithm over the sizes.

    Examples
    --------
    >>> t = Timing(seconds=1e-3, algbw=1e6, busbw=1e6, wrong=0)
    >>> r = BenchResult("allreduce", "mpi", 2, "float32", 5, 1, ("builtin",), 5e9, "shared memory", None,
    ...                 (BenchRow(1000, 250, "float32", {"builtin": t}),))
    >>> r.sizes, r.column("builtin"), r.avg_busbw()
    ([1000], [0.001], 1000000.0)
    >>> BenchResult.from_dict(r.to_dict()) == r
    True
    """

    collective: str
    engine: str
    p: int
    dtype: str
    iters: int
    warmup: int
    algorithms: tuple
    memcpy_bandwidth: float | None
    transport: str
    calibration: dict | None
    rows: tuple
    statistic: str = "median"
    redop: str = "sum"
    check: bool = True
    cluster: str | None = None  # the mini cluster the ranks ran across (distlib.minicluster), if any

    @property
    def sizes(self) -> list:
        """Buffer sizes in bytes, one per row."""
        return [row.n_bytes for row in self.rows]

    def column(self, algorithm: str, quantity: str = "seconds") -> list:
        """``quantity`` (a :class:`Timing` field) of ``algorithm`` over the sizes."""
        if algorithm not in self.algorithms:
            raise ValueError(f"algorithm must be one of {', '.join(self.algorithms)}; got {algorithm!r}")
        return [getattr(row.results[algorithm], quantity) for row in self.rows]

    def wrong_total(self, algorithm: str | None = None) -> int:
        """Wrong elements summed over the sizes (and over algorithms, if none is named)."""
        names = self.algorithms if algorithm is None else (algorithm,)
        return sum(row.results[a].wrong or 0 for row in self.rows for a in names)

    def avg_busbw(self, algorithm: str = "builtin") -> float:
        """Mean busbw over the sizes, bytes/s: nccl-tests' ``# Avg bus bandwidth``."""
        bus = [b for b in self.column(algorithm, "busbw") if b]
        return sum(bus) / len(bus) if bus else 0.0

    def to_dict(self) -> dict:
        """The JSON form (``--json``)."""
        out = asdict(self)
        out["algorithms"] = list(self.algorithms)
        out["rows"] = [{"n_bytes": r.n_bytes, "count": r.count, "dtype": r.dtype,
                        "results": {k: asdict(v) for k, v in r.results.items()}} for r in self.rows]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "BenchResult":
        """Read the JSON form back (older outputs without the newer keys included)."""
        rows = tuple(BenchRow(int(r["n_bytes"]), int(r["count"]), r["dtype"],
                              {k: Timing(**{f: v.get(f) for f in Timing.__dataclass_fields__ if f in v})
                               for k, v in r["results"].items()}) for r in data["rows"])
        keys = {f for f in cls.__dataclass_fields__} - {"rows", "algorithms"}
        kw = {k: data[k] for k in keys if k in data}
        kw.setdefault("transport", "not recorded")
        return cls(algorithms=tuple(data["algorithms"]), rows=rows, **kw)

    @classmethod
    def from_json(cls, text: str) -> "BenchResult":
        """Read a saved ``--json`` output (a file; leading log lines before the object are skipped).

        Ranks hand their result to the library as a report line instead
        (:mod:`distlib.engines.report`); this is for what a person saved.
        """
        start = text.find("{")
        if start < 0:
            raise ValueError("no JSON object in the benchmark's output")
        return cls.from_dict(json.loads(text[start:]))


@dataclass(frozen=True)
class RaceRow:
    """One buffer size of a race: per algorithm, median seconds, bus bandwidth (bytes/s), wrong elements."""

    n_bytes: int
    seconds: dict
    busbw: dict
    wrong: dict


@dataclass(frozen=True)
class Race:
    """All-reduce algorithms timed on a mini cluster (:func:`distlib.bench.race`).

    Attributes
    ----------
    nodes, p : int
        Nodes, and ranks in all (``p / nodes`` per node).
    link_gbit : float or None
        Each node's link, Gbit/s per direction (``None``: unthrottled).
    engine : str
    algorithms : tuple of str
        As timed (``"builtin"`` first).
    rows : list of RaceRow
    link_bytes : dict
        Hostname -> :class:`distlib.minicluster.LinkBytes` the run put on that node's link.
    memcpy_bandwidth : float
        Bytes/s of one large memory copy on this machine (the bench's reference).
    transport : str

    Examples
    --------
    >>> row = RaceRow(1 << 20, {"ring": 2.0, "hierarchical": 1.0}, {}, {})
    >>> race = Race(2, 4, 8.0, "mpi", ("builtin", "ring", "hierarchical"), [row], {}, 3e9, "veth")
    >>> race.link_bandwidth, race.gain(1 << 20)
    (1000000000.0, 2.0)
    """

    nodes: int
    p: int
    link_gbit: float | None
    engine: str
    algorithms: tuple
    rows: list
    link_bytes: dict
    memcpy_bandwidth: float
    transport: str

    @property
    def link_bandwidth(self) -> float | None:
        """The link's rate in bytes/s per direction (``None`` if unthrottled)."""
        from ..units import gbit_to_bytes_per_s

        return None if self.link_gbit is None else gbit_to_bytes_per_s(self.link_gbit)

    def gain(self, n_bytes: int, *, fast: str = "hierarchical", slow: str = "ring") -> float:
        """How many times faster ``fast`` ran than ``slow`` at ``n_bytes``."""
        row = next((r for r in self.rows if r.n_bytes == n_bytes), None)
        if row is None:
            raise ValueError(f"n_bytes must be one of the sizes raced, {[r.n_bytes for r in self.rows]}; got {n_bytes}")
        return row.seconds[slow] / row.seconds[fast]

    def predicted_busbw(self, algorithm: str, n_bytes: int, *, alpha_intra: float = 0.0, alpha_inter: float = 0.0) -> float:
        """What the two-level alpha-beta model predicts for this cluster (bytes/s of bus bandwidth).

        Links between nodes at the rate set; inside a node the machine's
        memory-copy bandwidth (shared memory: one copy per byte).
        :func:`distlib.collectives.two_level_allreduce_time` is the model.
        """
        from . import bus_bandwidth, two_level_allreduce_time

        if self.link_bandwidth is None:
            raise ValueError("predicted_busbw needs a throttled link (link_gbit)")
        t = two_level_allreduce_time(n_bytes, self.nodes, self.p // self.nodes, alpha_intra=alpha_intra,
                                     bandwidth_intra=self.memcpy_bandwidth, alpha_inter=alpha_inter,
                                     bandwidth_inter=self.link_bandwidth, algorithm=algorithm)  # fmt: skip
        return bus_bandwidth("allreduce", n_bytes, self.p, t)
