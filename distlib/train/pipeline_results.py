"""What a pipeline's ranks hand back, and the run's result: the contract's JSON plus each stage's idle time.

A pipeline rank reports what every trainer rank reports
(:class:`~distlib.train.results.RankReport`) and, per step, the seconds
it computed (``busy_seconds``), the seconds it waited for a neighbour's
activations or gradients (``idle_seconds``) and the time from the step's
start to the pipeline's flush (``flush_seconds``), plus the order of the
ops it ran. :class:`PipelineResult` folds them per stage and sets the
measured bubble beside the one :func:`distlib.pipeline_schedule` predicts
from the measured forward and backward times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..pipeline_schedule import pipeline_schedule
from .results import RankReport, TrainResult

__all__ = ["StageReport", "PipelineResult"]


@dataclass(frozen=True)
class StageReport(RankReport):
    """One pipeline rank's account: a :class:`RankReport` and its stage's times.

    ``forward_seconds`` and ``backward_seconds`` are, per step, the
    stage's compute for all its microbatches' forward (backward) passes,
    all its chunks together; ``ops`` the first step's ops as they ran,
    ``"F3.0"`` for the forward of microbatch 3 through chunk 0.
    """

    pp_rank: int = 0
    busy_seconds: list[float] = field(default_factory=list)
    idle_seconds: list[float] = field(default_factory=list)
    flush_seconds: list[float] = field(default_factory=list)
    forward_seconds: list[float] = field(default_factory=list)
    backward_seconds: list[float] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)


def _mean(values) -> float:
    values = list(values)
    return math.fsum(values) / len(values)


def _steps(reports) -> range:
    """The steps the times are read from: all but the first (warm-up) when there are more."""
    n = len(reports[0].busy_seconds)
    return range(1, n) if n > 1 else range(n)


def _idle_share(by_stage, i: int) -> float:
    """Step ``i``'s bubble: per stage ``1 - busy / T`` (``T`` the slowest rank's time to the flush), averaged."""
    flush = max(r.flush_seconds[i] for rs in by_stage for r in rs)
    return _mean(1.0 - _mean(r.busy_seconds[i] for r in rs) / flush for rs in by_stage)


@dataclass(frozen=True)
class PipelineResult(TrainResult):
    """A pipeline run: a :class:`TrainResult` plus the schedule and each stage's measured times.

    ``idle_seconds``, ``busy_seconds``: per stage, the mean over steps (the
    first left out when there are more) and over the stage's ranks of the
    seconds waiting in a receive and computing. ``measured_bubble``: per
    step, the slowest rank's time to the flush ``T``, and the stages'
    idle share ``1 - busy / T``, averaged; ``predicted_bubble``:
    :func:`distlib.pipeline_schedule`'s ``bubble_fraction`` with the
    stages' mean measured forward and backward times per microbatch, and
    ``predicted_idle_seconds`` its ``idle_time`` per stage. The two idle
    times differ in what they count: the measured one is the waits inside
    the pipeline's receives, the predicted one every second of the step a
    stage does not compute (a last stage's wait for the first stage to
    finish its backward passes included).
    """

    pp: int = 1
    schedule: str = "1f1b"
    chunks: int = 1
    microbatches: int = 1
    idle_seconds: list[float] = field(default_factory=list)
    busy_seconds: list[float] = field(default_factory=list)
    measured_bubble: float = 0.0
    predicted_bubble: float = 0.0
    predicted_idle_seconds: list[float] = field(default_factory=list)

    @classmethod
    def from_stages(cls, reports, *, dp: int, tp: int, pp: int, zero: int, seed: int, schedule: str, chunks: int,
                    microbatches: int, log: str = "", run_id: str = "") -> "PipelineResult":  # fmt: skip
        """Fold the ranks' :class:`StageReport` s (in rank order) into the run's result."""
        reports = list(reports)
        base = TrainResult.from_ranks(reports, dp=dp, tp=tp, zero=zero, seed=seed, log=log, run_id=run_id)
        steps = _steps(reports)
        by_stage = [[r for r in reports if r.pp_rank == s] for s in range(pp)]
        idle = [_mean(r.idle_seconds[i] for r in rs for i in steps) for rs in by_stage]
        busy = [_mean(r.busy_seconds[i] for r in rs for i in steps) for rs in by_stage]
        measured = _mean(_idle_share(by_stage, i) for i in steps)
        tf = _mean(r.forward_seconds[i] / microbatches for r in reports for i in steps)
        tb = _mean(r.backward_seconds[i] / microbatches for r in reports for i in steps)
        sim = pipeline_schedule(schedule, pp, microbatches, forward_time=max(tf, 1e-12), backward_time=max(tb, 1e-12),
                                chunks=chunks)  # fmt: skip
        fields = {name: getattr(base, name) for name in TrainResult.__dataclass_fields__}
        return cls(**fields, pp=pp, schedule=schedule, chunks=chunks, microbatches=microbatches, idle_seconds=idle,
                   busy_seconds=busy, measured_bubble=measured, predicted_bubble=sim.bubble_fraction,
                   predicted_idle_seconds=list(sim.idle_time))  # fmt: skip

    def to_json(self) -> dict:
        """The contract's keys, then ``idle_seconds`` and ``busy_seconds`` (per stage), the two bubbles and
        ``predicted_idle_seconds`` (per stage)."""
        return {**super().to_json(), "idle_seconds": self.idle_seconds, "busy_seconds": self.busy_seconds,
                "measured_bubble": self.measured_bubble, "predicted_bubble": self.predicted_bubble,
                "predicted_idle_seconds": self.predicted_idle_seconds}  # fmt: skip
