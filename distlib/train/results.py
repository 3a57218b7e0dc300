"""What the trainer's ranks hand back, and the run's result as the command line prints it.

Each rank emits one :class:`RankReport` (:mod:`distlib.engines.report`):
its losses, its share of the parameters' checksum, the state and bytes it
held and sent, and per step the seconds it computed (``busy_seconds``), the
seconds it waited for a pipeline neighbour (``idle_seconds``) and the time
to its flush. The launching side reads them all back typed and folds them
into one :class:`TrainResult` (:meth:`TrainResult.from_ranks`), whose
:meth:`~TrainResult.to_json` is the object ``python -m distlib.train --json``
prints: the contract's keys (:data:`JSON_FIELDS`), and for a pipeline each
stage's idle and busy time beside the bubble :func:`distlib.pipeline_schedule`
predicts from the measured forward and backward times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..layout import Layout
from ..pipeline_schedule import pipeline_schedule

__all__ = ["RankReport", "TrainResult", "JSON_FIELDS", "EVERY_RUN_FIELDS", "PIPELINE_FIELDS", "progress_losses"]

JSON_FIELDS = ("losses", "param_checksum", "state_bytes", "comm_bytes", "step_seconds")
"""The keys of ``python -m distlib.train --json``, in order (the book's contract)."""
EVERY_RUN_FIELDS = ("activation_bytes",)
"""The keys every run's JSON adds after them (Part V's contract): per rank, the peak activations kept for backward."""
PIPELINE_FIELDS = ("idle_seconds", "busy_seconds", "measured_bubble", "predicted_bubble", "predicted_idle_seconds")
"""The keys a pipeline's JSON adds after them."""


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
    ``step_seconds`` its wall time per step. Per step also: ``busy_seconds``
    (forward and backward compute), ``idle_seconds`` (waiting in a pipeline
    receive), ``flush_seconds`` (from the step's start to its last op),
    ``forward_seconds`` and ``backward_seconds``; ``ops`` are the first
    step's ops as they ran, ``"F3.0"`` for the forward of microbatch 3
    through chunk 0. ``activation_bytes`` is the most bytes of
    activations it kept for backward passes at once (the caches its stage
    held, :attr:`distlib.train.pipeline_parallel.Stage.activation_peak`);
    with context parallelism ``attention_flops`` and ``attention_seconds``
    are the attention products it ran over the whole run and their time,
    ``attention_wait_seconds`` the time it waited for their messages.
    ``overlap`` names what it ran under computation (``--overlap``) and
    ``overlap_wait_seconds`` is, per step, the time it waited for those
    background collectives; ``unit_seconds`` is, per local unit, the
    seconds of its forward (row 0) and backward (row 1) pass in a step (the
    mean over the steps after the first); ``first_step`` the first step it ran
    (after a resume, the one after the checkpoint's) and ``save_seconds``, per
    step, the time the step spent on its checkpoint (the whole write, or with
    ``--checkpoint-async`` the snapshot only). With experts,
    ``tokens_per_expert`` is, per step, the assignments (token, chosen expert)
    of this rank's tokens that each expert computed, over all its blocks, and
    ``dropped_tokens``, per step, those dropped for want of capacity
    (:mod:`distlib.train.experts`); both empty without experts. The ranks of
    a tensor-parallel group route the same tokens alike, and each counts them.
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
    pp_rank: int = 0
    busy_seconds: list[float] = field(default_factory=list)
    idle_seconds: list[float] = field(default_factory=list)
    flush_seconds: list[float] = field(default_factory=list)
    forward_seconds: list[float] = field(default_factory=list)
    backward_seconds: list[float] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    activation_bytes: int = 0
    attention_flops: int = 0
    attention_seconds: float = 0.0
    attention_wait_seconds: float = 0.0
    overlap_wait_seconds: list[float] = field(default_factory=list)
    overlap: list[str] = field(default_factory=list)
    unit_seconds: list = field(default_factory=list)
    first_step: int = 1
    save_seconds: list[float] = field(default_factory=list)
    tokens_per_expert: list = field(default_factory=list)
    dropped_tokens: list[int] = field(default_factory=list)


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
class TrainResult:
    """A whole run: its layout, what the contract's JSON holds, every rank's report, and for a pipeline its stages.

    For a pipeline (:attr:`Layout.is_pipeline`): ``idle_seconds``,
    ``busy_seconds``: per stage, the mean over steps (the first left out
    when there are more) and over the stage's ranks of the seconds waiting
    in a receive and computing. ``measured_bubble``: per step, the slowest
    rank's time to the flush ``T``, and the stages' idle share
    ``1 - busy / T``, averaged; ``predicted_bubble``:
    :func:`distlib.pipeline_schedule`'s ``bubble_fraction`` with the stages'
    mean measured forward and backward times per microbatch, and
    ``predicted_idle_seconds`` its ``idle_time`` per stage. The two idle
    times differ in what they count: the measured one is the waits inside
    the pipeline's receives, the predicted one every second of the step a
    stage does not compute. Without a pipeline they are ``None``.

    Examples
    --------
    >>> r = RankReport(0, 0, 0, [2.0, 1.5], 3.25, 100, {"weights": 100}, 0, 0, [0.5, 0.25], 10)
    >>> TrainResult.from_ranks([r], layout=Layout(), seed=0).to_json()["step_seconds"]
    [0.5, 0.25]
    """

    layout: Layout
    seed: int
    losses: list[float]
    param_checksum: float
    state_bytes: list[int]
    comm_bytes: list[int]
    step_seconds: list[float]
    ranks: list[RankReport] = field(default_factory=list)
    activation_bytes: list[int] = field(default_factory=list)
    """Per rank, the most bytes of activations it kept for backward passes at once."""
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
    idle_seconds: list[float] | None = None
    busy_seconds: list[float] | None = None
    measured_bubble: float | None = None
    predicted_bubble: float | None = None
    predicted_idle_seconds: list[float] | None = None
    overlap: tuple = ()
    """What ran under computation (``--overlap``, :mod:`distlib.train.overlap`); empty: nothing."""
    first_step: int = 1
    """The first step this run executed (1-based): 1, or the step after the checkpoint it resumed from;
    ``losses`` and ``step_seconds`` hold the steps from it on."""
    checkpointing: bool = False
    """Whether the run wrote or read checkpoints (then its JSON has ``first_step``)."""
    overlap_wait_seconds: list[float] | None = None
    """With ``overlap``: per step, the most seconds a rank waited for the collectives it had started in the
    background (what computation did not hide; the pipeline's posted receives count as idle time instead)."""
    tokens_per_expert: list | None = None
    """With experts: per step, the assignments each expert computed, summed over every block and rank (``E``
    integers a step); ``None`` without experts."""
    dropped_tokens: list[int] | None = None
    """With experts: per step, the assignments dropped for want of capacity, over every block and rank."""

    @classmethod
    def from_ranks(cls, reports, *, layout: Layout, seed: int, log: str = "", run_id: str = "") -> "TrainResult":
        """Fold the ranks' reports (in rank order): rank 0's losses, the checksum's parts summed, each step's
        slowest rank; for a pipeline, its stages' times and bubble."""
        reports = list(reports)
        seconds = [max(r.step_seconds[i] for r in reports) for i in range(len(reports[0].step_seconds))]
        stages = _stage_times(reports, layout) if layout.is_pipeline else {}
        if reports[0].overlap:
            stages.update(overlap=tuple(reports[0].overlap), overlap_wait_seconds=[
                max(r.overlap_wait_seconds[i] for r in reports) for i in range(len(seconds))])
        stages["first_step"] = reports[0].first_step
        if reports[0].tokens_per_expert:  # summed over the ranks: every token is routed on one rank of each
            routers = [r for r in reports if r.tp_rank == 0]  # tensor-parallel group (the others route it alike)
            stages.update(tokens_per_expert=[[sum(c) for c in zip(*(r.tokens_per_expert[i] for r in routers))]
                                             for i in range(len(seconds))],
                          dropped_tokens=[sum(r.dropped_tokens[i] for r in routers) for i in range(len(seconds))])
        return cls(layout=layout, seed=seed, losses=list(reports[0].losses),
                   param_checksum=math.fsum(r.checksum_part for r in reports),
                   state_bytes=[r.state_bytes for r in reports], comm_bytes=[r.comm_bytes for r in reports],
                   step_seconds=seconds, ranks=reports, log=log, run_id=run_id,
                   activation_bytes=[r.activation_bytes for r in reports], **stages)  # fmt: skip

    def to_json(self) -> dict:
        """The object ``python -m distlib.train --json`` prints: :data:`JSON_FIELDS`, :data:`EVERY_RUN_FIELDS`;
        for a pipeline :data:`PIPELINE_FIELDS`; with ``--overlap``, ``overlap`` and ``overlap_wait_seconds``; with
        ``--experts``, ``tokens_per_expert`` and ``dropped_tokens``; for a run across a mini cluster (``--nodes``), ``nodes``,
        ``link_gbit`` and ``link_bytes``."""
        data = {name: getattr(self, name) for name in JSON_FIELDS + EVERY_RUN_FIELDS}
        if self.layout.is_pipeline:
            data.update({name: getattr(self, name) for name in PIPELINE_FIELDS})
        if self.checkpointing or self.first_step != 1:
            data["first_step"] = self.first_step
        if self.overlap:
            data.update(overlap=list(self.overlap), overlap_wait_seconds=self.overlap_wait_seconds)
        if self.tokens_per_expert is not None:  # --experts: the routing, per step
            data.update(tokens_per_expert=self.tokens_per_expert, dropped_tokens=self.dropped_tokens)
        if self.nodes is not None:  # --nodes: where the ranks ran, and what crossed the links
            data.update(nodes=self.nodes, link_gbit=self.link_gbit, link_bytes=dict(self.link_bytes))
        return data


def _stage_times(reports, layout: Layout) -> dict:
    """A pipeline's :data:`PIPELINE_FIELDS`, from its ranks' reports."""
    steps, m = _steps(reports), layout.microbatches
    by_stage = [[r for r in reports if r.pp_rank == s] for s in range(layout.pp)]
    tf = _mean(r.forward_seconds[i] / m for r in reports for i in steps)
    tb = _mean(r.backward_seconds[i] / m for r in reports for i in steps)
    sim = pipeline_schedule(layout.schedule, layout.pp, m, forward_time=max(tf, 1e-12),
                            backward_time=max(tb, 1e-12), chunks=layout.chunks)  # fmt: skip
    return dict(idle_seconds=[_mean(r.idle_seconds[i] for r in rs for i in steps) for rs in by_stage],
                busy_seconds=[_mean(r.busy_seconds[i] for r in rs for i in steps) for rs in by_stage],
                measured_bubble=_mean(_idle_share(by_stage, i) for i in steps), predicted_bubble=sim.bubble_fraction,
                predicted_idle_seconds=list(sim.idle_time))


def progress_losses(text: str) -> dict:
    """``{step: loss}`` from rank 0's progress lines (``step 4/6  loss 3.755432  27.1 ms``): what a run that
    failed had trained before it stopped (its report never came; its progress did).

    >>> progress_losses("step 1/6  loss 4.659452  12.0 ms\\nstep 2/6  loss 4.566986  9.1 ms\\nrank 1 killed")
    {1: 4.659452, 2: 4.566986}
    """
    import re

    return {int(m.group(1)): float(m.group(2)) for m in re.finditer(r"^step (\d+)/\d+\s+loss (\S+)", text, re.M)}
