"""One pipeline rank: ``python -m mpi4py -m distlib.train.pipeline --dp D --tp T --pp P --schedule S ...``.

:func:`distlib.train.launch.train` starts ``D * P * T`` of these when
``--pp`` is above 1 (or ``--microbatches`` above 1). Rank
``(d * P + s) * T + t`` is tensor-parallel rank ``t`` of stage ``s`` of
data-parallel replica ``d`` (:func:`pipeline_groups`): tensor parallelism
innermost, on neighbouring ranks, as Megatron-LM orders its groups.

Each rank holds its stage's model chunks (:mod:`distlib.train.stages`)
and runs its ops in the order :func:`distlib.pipeline_schedule` gives
(:func:`~distlib.train.stages.stage_ops`). A forward op receives the
chunk's input activations from the stage before (blocking: the wait is the
stage's idle time), runs the chunk's units, and sends its output on with a
non-blocking send; a backward op receives the gradient of the chunk's
output, runs the units' backward passes, adds their gradients into the
step's sum and sends the input's gradient back. Only receives block, and
:func:`~distlib.pipeline_schedule` has placed every op of every stage, so
the ops' dependencies have an order: the pipeline cannot deadlock, 1F1B
included. All messages go through the rank's
:class:`~distlib.engines.comm.CountingComm`, so their bytes are counted.

After the last op (the *flush*) the rank scales the summed gradient
(:func:`~distlib.train.microbatches.scale_accumulated`) and its layout
(:mod:`distlib.train.layout`, over the data-parallel group of the ranks
holding the same stage and tensor-parallel part) all-reduces it, DDP, or
reduce-scatters it, ZeRO-1, and takes the Adam step. ZeRO-2 and 3 are
refused with pipelines, as Megatron-LM refuses them: they would shard the
gradient that the microbatches are still adding into.

With sequence parallelism (``--sp``) the stages run the same model code
with a :class:`~distlib.train.model.SequenceParallel` over each stage's
tensor-parallel group: a stage's output is then this rank's positions
only, so tensor-parallel rank ``t`` of one stage sends ``seq / tp``
positions of each microbatch to rank ``t`` of the next (as Megatron-LM's
stages do with sequence parallelism), ``1 / tp`` of the whole activation.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from .._check import check_choice, check_int, check_int_choice
from ..engines.algorithms import allreduce
from ..engines.comm import CountingComm, SubComm
from ..pipeline_schedule import PIPELINE_SCHEDULES
from .adam import Adam
from .data import GLOBAL_BATCH, global_batch, local_batch
from .layout import Ledger, make_layout
from .microbatches import mean_loss, scale_accumulated, split_microbatches
from .model import Config, backward_unit, forward_unit, init_units, shard_unit, unit_specs
from .sequence import SequenceParallel
from .pipeline_results import StageReport
from .stages import message_tag, pipeline_problem, stage_ops, stage_units
from .worker import _checksum_part

__all__ = ["PIPELINE_ZERO", "pipeline_groups", "Stage", "train_stage_rank", "main"]

PIPELINE_ZERO = (0, 1)
"""ZeRO stages a pipeline runs with (Megatron-LM also allows its distributed optimizer, ZeRO-1, only)."""


def pipeline_groups(rank: int, dp: int, pp: int, tp: int) -> tuple:
    """``(dp_rank, pp_rank, tp_rank, dp_group, pp_group, tp_group)`` of world rank ``(d * pp + s) * tp + t``.

    >>> pipeline_groups(5, 2, 2, 2)
    (1, 0, 1, [1, 5], [5, 7], [4, 5])
    """
    d, rest = divmod(rank, pp * tp)
    s, t = divmod(rest, tp)
    return (d, s, t, [(e * pp + s) * tp + t for e in range(dp)], [(d * pp + q) * tp + t for q in range(pp)],
            [(d * pp + s) * tp + u for u in range(tp)])  # fmt: skip


class _Clock:
    """Seconds of one step: computing (forward, backward) and waiting for a neighbour."""

    def __init__(self):
        self.forward = self.backward = self.idle = 0.0

    def wait(self, req) -> None:
        start = time.perf_counter()
        req.wait()
        self.idle += time.perf_counter() - start


class Stage:
    """This rank's model chunks, its layout and its pipeline neighbours: :meth:`step` runs one training step.

    Parameters
    ----------
    config : Config
    stage, pp, chunks, microbatches : int
        This stage, the stages, model chunks per stage, microbatches per step.
    layout
        From :func:`~distlib.train.layout.make_layout` over the stage's units, in chunk order.
    chunk_units : list of list of int
        Per chunk, the model's unit indices (:func:`~distlib.train.stages.stage_units`).
    pp_comm : Comm
        The ``pp`` ranks of this pipeline (rank ``s`` is stage ``s``).
    reduce : callable or None
        The tensor-parallel sum, as :func:`~distlib.train.model.forward_unit` takes it.
    ledger : Ledger
    sp : SequenceParallel, optional
        Sequence parallelism over the stage's tensor-parallel group (instead of ``reduce``): the activations
        the stages exchange are this rank's positions.
    """

    def __init__(self, *, config, stage, pp, chunks, microbatches, layout, chunk_units, pp_comm, reduce, ledger,
                 sp=None):  # fmt: skip
        self.config, self.stage, self.pp, self.chunks, self.m = config, stage, pp, chunks, microbatches
        self.layout, self.comm, self.reduce, self.sp = layout, pp_comm, reduce, sp
        self.positions = config.seq if sp is None else config.seq // sp.size  # of each sequence, sent between stages
        self.last_unit = config.layers + 1
        self.local, start = [], 0  # per chunk: (local index, model unit index) of its units
        for units in chunk_units:
            self.local.append([(start + i, u) for i, u in enumerate(units)])
            start += len(units)
        self.scratch = np.empty(max(layout.sizes))  # one unit's gradient, before it is added into the sum
        ledger.hold("grads", self.scratch)

    def _virtual(self, chunk: int) -> int:
        return chunk * self.pp + self.stage

    def _receive(self, kind, mb, chunk, shape, clock):
        buf = np.empty(int(np.prod(shape)))
        source = (self._virtual(chunk) + (-1 if kind == "F" else 1)) % self.pp
        clock.wait(self.comm.irecv(buf, source, tag=message_tag(kind, mb, self._virtual(chunk), self.m)))
        return buf.reshape(shape)

    def _send(self, kind, mb, chunk, x, pending) -> None:
        to = self._virtual(chunk) + (1 if kind == "F" else -1)
        buf = np.ascontiguousarray(x).reshape(-1)
        pending.append((self.comm.isend(buf, to % self.pp, tag=message_tag(kind, mb, to, self.m)), buf))

    def forward(self, mb, chunk, tokens, targets, caches, losses, clock, pending) -> None:
        """Microbatch ``mb`` through chunk ``chunk``: receive its input (but on chunk 0 of stage 0), run, send on."""
        c, u0 = self.config, self._virtual(chunk)
        x = tokens if u0 == 0 else self._receive("F", mb, chunk, (len(tokens), self.positions, c.hidden), clock)
        start, caches[mb, chunk] = time.perf_counter(), []
        for k, unit in self.local[chunk]:
            head = unit == self.last_unit
            x, cache = forward_unit(self.layout.specs[k], self.layout.params(k), x, config=c,
                                    targets=targets if head else None, reduce=self.reduce, sp=self.sp)  # fmt: skip
            self.layout.release(k)
            caches[mb, chunk].append(cache)
        clock.forward += time.perf_counter() - start
        if self.local[chunk][-1][1] == self.last_unit:
            losses[mb] = x
        else:
            self._send("F", mb, chunk, x, pending)

    def backward(self, mb, chunk, rows, caches, clock, pending) -> None:
        """The backward of ``mb`` through ``chunk``: receive the output's gradient (but at the head), run, send back."""
        c = self.config
        last = self.local[chunk][-1][1] == self.last_unit
        dy = None if last else self._receive("B", mb, chunk, (rows, self.positions, c.hidden), clock)
        start = time.perf_counter()
        for (k, _), cache in zip(reversed(self.local[chunk]), reversed(caches.pop((mb, chunk)))):
            grad = self.scratch[: self.layout.sizes[k]]
            dy = backward_unit(self.layout.specs[k], self.layout.params(k), dy, cache, grad, config=c,
                               reduce=self.reduce, sp=self.sp)  # fmt: skip
            self.layout.grad_buffer(k)[...] += grad
            self.layout.grad_done(k)
        clock.backward += time.perf_counter() - start
        if self._virtual(chunk) > 0:
            self._send("B", mb, chunk, dy, pending)

    def step(self, ops, pieces) -> tuple:
        """Run ``ops`` over the microbatches ``pieces`` (``(tokens, targets)`` each) up to the flush.

        Returns ``(losses, clock, ran)``: the microbatches' losses (on the
        stage holding the head; ``None`` elsewhere), the step's
        :class:`_Clock` and the ops as they ran.
        """
        self.layout.grads[...] = 0.0
        caches, losses, clock, pending, ran = {}, [None] * self.m, _Clock(), [], []
        for kind, mb, chunk in ops:
            tokens, targets = pieces[mb]
            if kind == "F":
                self.forward(mb, chunk, tokens, targets, caches, losses, clock, pending)
            else:
                self.backward(mb, chunk, len(tokens), caches, clock, pending)
            ran.append(f"{kind}{mb}.{chunk}")
        for req, _ in pending:
            clock.wait(req)
        return (losses if losses[0] is not None else None), clock, ran


def _check_flags(comm, *, dp, tp, pp, zero, steps, seed, schedule, chunks, microbatches, config, sp=False) -> None:
    for name, value in (("dp", dp), ("tp", tp), ("pp", pp), ("steps", steps)):
        check_int(name, value, minimum=1)
    check_int("seed", seed, minimum=0)
    check_int_choice("zero", zero, range(4))
    if zero not in PIPELINE_ZERO:
        raise ValueError(f"zero must be 0 or 1 with pipeline stages (Megatron-LM refuses ZeRO-2 and 3 with "
                         f"pipelines: they shard the gradient the microbatches add into), got {zero}")  # fmt: skip
    if GLOBAL_BATCH % dp:
        raise ValueError(f"dp must divide the global batch of {GLOBAL_BATCH} sequences, got {dp}")
    if comm.size != dp * tp * pp:
        raise ValueError(f"dp * tp * pp must be the number of ranks of comm ({comm.size}), got {dp} * {tp} * {pp}")
    if sp and (tp == 1 or config.seq % tp):
        raise ValueError(f"sp needs tp above 1 dividing the sequence ({config.seq}), got tp {tp}")
    problem = pipeline_problem(layers=config.layers, pp=pp, schedule=schedule, chunks=chunks,
                               microbatches=microbatches, batch=GLOBAL_BATCH // dp)  # fmt: skip
    if problem:
        raise ValueError(problem.lstrip("-"))


def _build(comm, *, dp, tp, pp, zero, seed, schedule, chunks, microbatches, config, adam, sp=False):
    counted = CountingComm(comm)
    dp_rank, pp_rank, tp_rank, dp_group, pp_group, tp_group = pipeline_groups(comm.rank, dp, pp, tp)
    dp_comm, pp_comm, tp_comm = (SubComm(counted, g) for g in (dp_group, pp_group, tp_group))
    chunk_list = stage_units(pp_rank, config.layers, pp, chunks)
    mine = [u for units in chunk_list for u in units]
    full, specs = unit_specs(config), unit_specs(config, tp)
    every = init_units(config, seed)
    units = [shard_unit(full[u], every[u], tp_rank, tp) for u in mine]
    ledger = Ledger()
    layout = make_layout(zero, [specs[u] for u in mine], units, dp_comm, adam=adam, ledger=ledger)
    reduce = (lambda buf: allreduce(tp_comm, buf)) if tp > 1 and not sp else None
    stage = Stage(config=config, stage=pp_rank, pp=pp, chunks=chunks, microbatches=microbatches, layout=layout,
                  chunk_units=chunk_list, pp_comm=pp_comm, reduce=reduce, ledger=ledger,
                  sp=SequenceParallel(tp_comm) if sp else None)  # fmt: skip
    ops = stage_ops(schedule, pp, microbatches, pp_rank, chunks=chunks)
    return counted, (dp_rank, pp_rank, tp_rank), (dp_comm, pp_comm), stage, ops, ledger


def _flush(stage: Stage, mb_losses, step: int, pp_comm, dp_comm) -> float:
    """After the last op: the summed gradient scaled, the layout's update (its DP collective), the step's loss."""
    scale_accumulated(stage.layout.grads, stage.m)
    stage.layout.update(step)
    loss = np.array([mean_loss(mb_losses) if mb_losses is not None else 0.0])
    allreduce(pp_comm, loss)  # only the last stage holds the loss: a sum with zeros brings it to every stage
    allreduce(dp_comm, loss)
    return float(loss[0] / dp_comm.size)


def _record(times: dict, clock, seconds: float) -> None:
    """One step's busy, idle, forward and backward seconds (the stage's clock) and its wall time, into ``times``."""
    for name, value in (("busy", clock.forward + clock.backward), ("idle", clock.idle), ("forward", clock.forward),
                        ("backward", clock.backward), ("step", seconds)):  # fmt: skip
        times[name].append(value)


def train_stage_rank(comm, *, dp: int, tp: int, pp: int, zero: int, steps: int, seed: int, schedule: str = "1f1b",
                     chunks: int = 1, microbatches: int = 1, sp: bool = False, config: Config = Config(),
                     adam: Adam = Adam(), say=None) -> StageReport:  # fmt: skip
    """Train on this rank of ``comm`` (``dp * pp * tp`` ranks) as one pipeline stage; this rank's report.

    Every rank of ``comm`` calls it with the same arguments (SPMD).

    Parameters
    ----------
    comm : Comm
        The world (MPI under ``mpiexec``; threads in tests).
    dp, tp, pp : int
        Data-parallel replicas, tensor-parallel ranks per stage, pipeline stages (:func:`pipeline_groups`).
    zero : {0, 1}
        DDP or ZeRO-1 over each stage's data-parallel group (:data:`PIPELINE_ZERO`).
    steps, seed : int
    schedule : {"gpipe", "1f1b", "interleaved"}
    chunks, microbatches : int
        Model chunks per stage (interleaved only), microbatches per replica and step.
    sp : bool
        Sequence parallelism over each stage's tensor-parallel ranks (``tp`` above 1, dividing the sequence).
    config, adam, say
        The model's sizes, the optimizer, and a callable given a progress line after each step (optional).

    Returns
    -------
    StageReport

    Raises
    ------
    ValueError
        A flag out of range or a layout the pipeline refuses (named as
        :func:`~distlib.train.stages.pipeline_problem` names it).

    Examples
    --------
    Two stages on threads reproduce one process accumulating the same two microbatches:

    >>> from distlib.engines.comm import run_threads
    >>> from distlib.train.microbatches import accumulate_run
    >>> run = lambda c: train_stage_rank(c, dp=1, tp=1, pp=2, zero=0, steps=2, seed=0, microbatches=2)
    >>> reports = run_threads(run, 2)
    >>> losses, checksum = accumulate_run(microbatches=2, steps=2, seed=0)
    >>> max(abs(a - b) for a, b in zip(reports[0].losses, losses)) < 1e-12
    True
    >>> reports[0].ops
    ['F0.0', 'F1.0', 'B0.0', 'B1.0']

    With tensor and sequence parallelism inside the stages too:

    >>> run = lambda c: train_stage_rank(c, dp=1, tp=2, pp=2, zero=0, steps=2, seed=0, microbatches=2, sp=True)
    >>> max(abs(a - b) for a, b in zip(run_threads(run, 4)[0].losses, losses)) < 1e-12
    True
    """
    schedule = check_choice("schedule", schedule, PIPELINE_SCHEDULES)
    _check_flags(comm, dp=dp, tp=tp, pp=pp, zero=zero, steps=steps, seed=seed, schedule=schedule, chunks=chunks,
                 microbatches=microbatches, config=config, sp=sp)  # fmt: skip
    counted, (dp_rank, pp_rank, tp_rank), (dp_comm, pp_comm), stage, ops, ledger = _build(
        comm, dp=dp, tp=tp, pp=pp, zero=zero, seed=seed, schedule=schedule, chunks=chunks,
        microbatches=microbatches, config=config, adam=adam, sp=sp)  # fmt: skip
    times = {name: [] for name in ("step", "busy", "idle", "flush", "forward", "backward")}
    losses, ran_first = [], None
    for step in range(1, steps + 1):
        start = time.perf_counter()
        batch = local_batch(*global_batch(seed, step - 1, seq=config.seq, vocab=config.vocab), dp_rank, dp)
        mb_losses, clock, ran = stage.step(ops, split_microbatches(*batch, microbatches))
        times["flush"].append(time.perf_counter() - start)
        ran_first = ran_first or ran
        losses.append(_flush(stage, mb_losses, step, pp_comm, dp_comm))
        _record(times, clock, time.perf_counter() - start)
        if say is not None:
            say(f"step {step}/{steps}  loss {losses[-1]:.6f}  {times['step'][-1] * 1e3:.1f} ms")
    layout = stage.layout
    return StageReport(rank=comm.rank, dp_rank=dp_rank, tp_rank=tp_rank, losses=losses,
                       checksum_part=_checksum_part(layout, layout.specs, tp_rank), state_bytes=ledger.peak,
                       state_parts=ledger.at_peak, comm_bytes=counted.bytes_sent, messages=counted.messages,
                       step_seconds=times["step"], local_params=sum(layout.sizes), pp_rank=pp_rank,
                       busy_seconds=times["busy"], idle_seconds=times["idle"], flush_seconds=times["flush"],
                       forward_seconds=times["forward"], backward_seconds=times["backward"], ops=ran_first)  # fmt: skip


def main(argv=None) -> None:
    """Entry point of one MPI rank (arguments already checked by the launching side)."""
    from ..engines.mpi import world
    from ..engines.report import emit

    parser = argparse.ArgumentParser(prog="python -m distlib.train.pipeline")
    for name in ("dp", "tp", "pp", "zero", "steps", "seed", "chunks", "microbatches"):
        parser.add_argument(f"--{name}", type=int, required=True)
    parser.add_argument("--schedule", required=True)
    parser.add_argument("--sp", type=int, default=0)
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)
    comm = world()
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if comm.rank == 0 else None
    emit(train_stage_rank(comm, dp=ns.dp, tp=ns.tp, pp=ns.pp, zero=ns.zero, steps=ns.steps, seed=ns.seed,
                          schedule=ns.schedule, chunks=ns.chunks, microbatches=ns.microbatches, sp=bool(ns.sp),
                          say=say))  # fmt: skip


if __name__ == "__main__":
    main()
