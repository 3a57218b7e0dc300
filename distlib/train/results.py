"""What the trainer's ranks hand back, and the run's result as the command line prints it.

Each rank emits one :class:`RankReport` (:mod:`distlib.engines.report`);
the launching side reads them all back typed and folds them into one
:class:`TrainResult` (:meth:`TrainResult.from_ranks`), whose
:meth:`~TrainResult.to_json` is the object ``python -m distlib.train --json``
prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["RankReport", "TrainResult", "JSON_FIELDS"]

JSON_FIELDS = ("losses", "param_checksum", "state_bytes", "comm_bytes", "step_seconds")
"""The keys of ``python -m distlib.train --json``, in order (the book's contract)."""


@dataclass(frozen=True)
class RankReport:
    """One rank's account of a run.

    ``losses`` are the global batch's mean loss, one per step (the same on
    every rank); ``checksum_part`` the float64 sum of the parameters this
    rank answers for after the last step (its data-parallel chunk, without
    the tensor-parallel copies of replicated tensors on ranks other than
    tensor-parallel rank 0), so the parts of all ranks add up to the sum of
    every parameter once; ``state_bytes`` the most parameter, gradient and
    optimizer-state bytes it held at once, and ``state_parts`` those bytes
    by part at that moment; ``comm_bytes`` the bytes it sent;
    ``step_seconds`` its wall time per step.
    """

    rank: int
    dp_rank: int
    tp_rank: int
    losses: list[float]
    checksum_part: float
    state_bytes: int
    state_parts: dict[str, int]
    comm_bytes: int
    messages: int
    step_seconds: list[float]
    local_params: int


@dataclass(frozen=True)
class TrainResult:
    """A whole run: the layout, what the contract's JSON holds, and every rank's report.

    Examples
    --------
    >>> r = RankReport(0, 0, 0, [2.0, 1.5], 3.25, 100, {"weights": 100}, 0, 0, [0.5, 0.25], 10)
    >>> TrainResult.from_ranks([r], dp=1, tp=1, zero=0, seed=0).to_json()["step_seconds"]
    [0.5, 0.25]
    """

    dp: int
    tp: int
    zero: int
    seed: int
    losses: list[float]
    param_checksum: float
    state_bytes: list[int]
    comm_bytes: list[int]
    step_seconds: list[float]
    ranks: list[RankReport] = field(default_factory=list)
    log: str = ""
    """Rank 0's progress lines (its stderr)."""
    run_id: str = ""
    """The launch's ``DISTLIB_RUN_ID`` (see :func:`distlib.engines.stray_processes`)."""
    nodes: int | None = None
    """The mini cluster's nodes the ranks ran on (``--nodes``), or ``None``: one machine, no cluster."""
    link_gbit: float | None = None
    """With ``nodes``: each node's link rate in Gbit/s per direction (``None``: unthrottled)."""
    link_bytes: dict = field(default_factory=dict)
    """With ``nodes``: bytes each node's link carried, sent plus received (tc's counters), by node name."""

    @classmethod
    def from_ranks(cls, reports, *, dp: int, tp: int, zero: int, seed: int, log: str = "",
                   run_id: str = "") -> "TrainResult":
        """Fold the ranks' reports (in rank order): rank 0's losses, the checksum's parts summed, each step's
        slowest rank."""
        reports = list(reports)
        seconds = [max(r.step_seconds[i] for r in reports) for i in range(len(reports[0].step_seconds))]
        return cls(dp=dp, tp=tp, zero=zero, seed=seed, losses=list(reports[0].losses),
                   param_checksum=math.fsum(r.checksum_part for r in reports),
                   state_bytes=[r.state_bytes for r in reports], comm_bytes=[r.comm_bytes for r in reports],
                   step_seconds=seconds, ranks=reports, log=log, run_id=run_id)  # fmt: skip

    def to_json(self) -> dict:
        """The object ``python -m distlib.train --json`` prints: :data:`JSON_FIELDS`, and after them, for a run
        across a mini cluster (``--nodes``), ``nodes``, ``link_gbit`` and ``link_bytes``."""
        data = {name: getattr(self, name) for name in JSON_FIELDS}
        if self.nodes is not None:  # --nodes: where the ranks ran, and what crossed the links
            data.update(nodes=self.nodes, link_gbit=self.link_gbit, link_bytes=dict(self.link_bytes))
        return data
