"""The book's layouts beside PyTorch's own: the same model, the same ranks, losses and collectives side by side.

Three checks, each one launch of torch.distributed ranks over gloo
(:func:`distlib.engines.run_torch`) that runs the book's layout and then
PyTorch's on the same ranks, from the same seed and the same batches:

:func:`fsdp_beside_zero3`
    The book's ZeRO-3 (:class:`distlib.train.data_parallel.ShardedParameters`, over
    the book's collectives) beside FSDP2: ``torch.distributed.fsdp.fully_shard``
    on every block, then on the whole model (``reshard_after_forward`` left
    at its default), on the model's torch twin (:mod:`distlib.train.torch_model`).
:func:`tp_beside_megatron`
    The book's Megatron tensor parallelism (:mod:`distlib.train.model`'s
    ``"col"`` and ``"row"`` splits) beside DTensor's ``parallelize_module``
    on every block: ``q``, ``k``, ``v`` and ``mlp_in`` ``ColwiseParallel``,
    ``o`` and ``mlp_out`` ``RowwiseParallel``. With ``sequence_parallel=True``
    the book's sequence parallelism (``--sp``) beside DTensor's, as torch's
    tensor-parallel docs lay it out: ``SequenceParallel`` on the norms ``ln1``
    and ``ln2``, the row-parallel layers' outputs ``Shard(1)`` (a
    reduce-scatter along the sequence), and the whole sequence brought back
    before the column-parallel layers; ``PrepareModuleInput`` cuts the
    sequence on the way into the first block and gathers it on the way into
    the final norm, where the book does (:mod:`distlib.train.model`).
:func:`pipelining_beside_book`
    The book's pipeline stages (:mod:`distlib.train.pipeline_parallel`, its activations
    and gradients over the book's point-to-point calls) beside
    ``torch.distributed.pipelining``: the twin cut into the same model chunks
    (:class:`distlib.train.torch_model.Chunk`), one ``PipelineStage`` each, run
    by ``ScheduleGPipe``, ``Schedule1F1B`` or ``ScheduleInterleaved1F1B``.

Each returns a :class:`PeerComparison`: both runs' losses per step,
both runs' collectives per step, and both runs' wall time per step (the
slowest rank's, as :attr:`distlib.train.results.TrainResult.step_seconds`
is). The book's are counted where its
collectives start (:attr:`distlib.engines.comm.CountingComm.collectives`:
``allgather``, ``reduce_scatter``, ``allreduce``), PyTorch's by
``torch.distributed.tensor.debug.CommDebugMode`` around each step's
forward, backward and optimizer step, under the names of the
``torch.distributed`` calls that run them (:data:`TORCH_NAMES`). Each
step's global loss is summed over the ranks outside the counted region.

The timed region is the book's trainer's step (:func:`distlib.train.rank.train_rank`'s
``step_seconds``) on both sides: the step's batch, forward, backward and
optimizer step, and the one-value all-reduce of the loss over the
data-parallel ranks (none with tensor parallelism alone); not converting
and recording the loss. Both runs are timed with their counters on (the
book's :class:`~distlib.engines.comm.CountingComm`, PyTorch's
``CommDebugMode``, which dispatches every operator through Python: on
this small model it makes PyTorch's step about six times slower), unless
``count=False`` turns PyTorch's counter off, as ``benchmarks/bench_train.py`` does.
The pipelining check counts PyTorch's point-to-point sends and their bytes
instead (its stages run no collective, and CommDebugMode's hooks break their
backward): :func:`pipelining_beside_book`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import warnings
from dataclasses import dataclass

from .._check import check_choice, check_int, check_real
from ..layout import Layout
from .data import GLOBAL_BATCH
from .launch import MAX_SEED, MAX_STEPS
from .model import Config

__all__ = ["PeerComparison", "TORCH_NAMES", "TORCH_SCHEDULES", "fsdp_beside_zero3", "tp_beside_megatron",
           "pipelining_beside_book", "fsdp_main", "tp_main", "pipelining_main"]

TORCH_SCHEDULES = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B", "interleaved": "ScheduleInterleaved1F1B"}
"""The book's schedule -> the ``torch.distributed.pipelining`` schedule class that runs it."""
PEER_CHUNKS = 2
"""Model chunks per stage with ``schedule="interleaved"`` in :func:`pipelining_beside_book` (1 otherwise)."""

TORCH_NAMES = {"_allgather_base_": "all_gather_into_tensor", "all_gather_into_tensor": "all_gather_into_tensor",
               "_reduce_scatter_base_": "reduce_scatter_tensor", "reduce_scatter_tensor": "reduce_scatter_tensor",
               "allreduce_": "all_reduce", "all_reduce": "all_reduce"}  # fmt: skip
"""The c10d operator CommDebugMode reports -> the ``torch.distributed`` call it is (FSDP2's all-gather runs
``c10d._allgather_base_``, which is what ``all_gather_into_tensor`` runs)."""

_QUIET = (r"FSDP2-wrapped module \(.*\) returned a view tensor",
          r"Full backward hook is firing when gradients are computed with respect to module outputs since no "
          r"inputs require gradients")  # fmt: skip
"""Warnings of a counted step that say nothing about it: FSDP2's note on view outputs (an in-place op on one
would skip an all-gather; the twin makes none) and CommDebugMode's module hooks seeing token inputs."""


@dataclass(frozen=True)
class PeerComparison:
    """The book's layout and PyTorch's on the same ranks: losses per step, collectives per step, by kind.

    Examples
    --------
    >>> c = PeerComparison("FSDP2", "ZeRO-3", 2, 1, 0, [2.0], [2.0 + 1e-15], [{"allgather": 4}],
    ...                    [{"all_gather_into_tensor": 3}])
    >>> c.max_loss_difference < 1e-15
    True
    """

    peer: str
    """PyTorch's tool: ``"FSDP2 fully_shard"``, ``"DTensor parallelize_module"`` or
    ``"pipelining Schedule1F1B"`` (the schedule's class)."""
    book: str
    """The book's layout: ``"ZeRO-3"``, ``"Megatron TP"``, ``"Megatron TP + SP"`` (sequence parallelism) or
    ``"pipeline 1f1b"`` (the schedule)."""
    ranks: int
    steps: int
    seed: int
    book_losses: list[float]
    peer_losses: list[float]
    book_counts: list[dict[str, int]]
    """Per step, the book's collectives on rank 0 by kind (:attr:`~distlib.engines.comm.CountingComm.collectives`)."""
    peer_counts: list[dict[str, int]]
    """Per step, PyTorch's collectives on rank 0 as CommDebugMode counts them (:data:`TORCH_NAMES`)."""
    peer_forward_counts: list[dict[str, int]] = dataclasses.field(default_factory=list)
    """Per step, those of them that ran in the forward pass."""
    book_comm_bytes: list[int] = dataclasses.field(default_factory=list)
    """Bytes each rank sent in the book's run, over all steps (as ``python -m distlib.train`` counts them)."""
    book_step_seconds: list[float] = dataclasses.field(default_factory=list)
    """Per step, the book's wall time on the slowest rank (the module docstring says what is timed)."""
    peer_step_seconds: list[float] = dataclasses.field(default_factory=list)
    """Per step, PyTorch's wall time on the slowest rank, over the same region."""
    peer_comm_bytes: list[int] = dataclasses.field(default_factory=list)
    """Bytes each rank sent in PyTorch's run, where they are counted (:func:`pipelining_beside_book`: its
    stages' activations and gradients)."""
    run_id: str = ""
    """The launch's ``DISTLIB_RUN_ID`` (:func:`distlib.engines.stray_processes`)."""

    @property
    def max_loss_difference(self) -> float:
        """The largest relative difference between the two runs' losses."""
        return max(abs(a - b) / abs(b) for a, b in zip(self.peer_losses, self.book_losses))


# ----------------------------------------------------------------------------
# On the ranks
# ----------------------------------------------------------------------------


def _book_run(comm, layout, *, steps: int, seed: int, config: Config = Config(), overlap: str = "") -> tuple:
    """The book's ``layout`` on ``comm`` (:func:`distlib.train.rank.train_rank`): ``(losses, collectives of each
    step by kind, every rank's bytes sent, each step's seconds on the slowest rank)``; ``overlap`` its
    ``--overlap`` kinds, comma-separated (the background channel's collectives are not in the counts)."""
    from ..engines.comm import CountingComm
    from .overlap import Overlap
    from .rank import train_rank

    counted = CountingComm(comm)  # train_rank counts into its own counter, which tells this one too
    totals = []
    say = lambda _line: totals.append(dict(counted.collectives))  # noqa: E731
    hides = Overlap(tuple(k for k in overlap.split(",") if k), bucket_mb=1e-3)
    report = train_rank(counted, layout, steps=steps, seed=seed, say=say, config=config, overlap=hides)
    per_step, before = [], {}
    for now in totals:  # after each step: the running totals, so each step's own counts are the differences
        per_step.append({k: v - before.get(k, 0) for k, v in now.items() if v - before.get(k, 0)})
        before = now
    return report.losses, per_step, comm.allgather_object(counted.bytes_sent), _slowest(comm, report.step_seconds)


def _slowest(comm, seconds) -> list:
    """Each step's seconds on the slowest rank (every rank passes its own, every rank gets the answer)."""
    return [max(step) for step in zip(*comm.allgather_object(list(seconds)))]


def _named(counts) -> dict:
    """CommDebugMode's ``{operator: count}`` as ``{torch.distributed call: count}`` (:data:`TORCH_NAMES`)."""
    out = {}
    for op, n in counts.items():
        name = TORCH_NAMES.get(getattr(op, "__name__", str(op)), str(op))
        out[name] = out.get(name, 0) + int(n)
    return out


def _counted_step(model, optimizer, tokens, targets, count: bool = True) -> tuple:
    """One training step under CommDebugMode: ``(loss, counts of the step, counts of its forward pass)``.

    With ``count=False`` the step runs without it (both counts ``None``): CommDebugMode dispatches every
    operator through Python, which on this small model makes a step several times slower.
    """
    import contextlib

    import torch
    from torch.distributed.tensor.debug import CommDebugMode

    with warnings.catch_warnings():
        for message in _QUIET:
            warnings.filterwarnings("ignore", message=message, category=UserWarning)
        with CommDebugMode() if count else contextlib.nullcontext() as mode:
            loss = model(torch.from_numpy(tokens), torch.from_numpy(targets))
            forward = _named(mode.get_comm_counts()) if count else None
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    return loss.detach(), _named(mode.get_comm_counts()) if count else None, forward


def _peer_run(comm, model, *, steps: int, seed: int, dp: int, count: bool = True) -> tuple:
    """PyTorch's layout (already applied to ``model``): ``(global losses, collectives of each step, those of
    its forward pass, each step's seconds on the slowest rank)``.

    Data-parallel rank ``comm.rank`` of ``dp`` takes its sequences of each global batch (all of them with
    ``dp=1``: every tensor-parallel rank reads the whole batch). With ``count=False``, no CommDebugMode
    and no counts (both lists empty).
    """
    import torch.distributed as dist

    from .data import global_batch, local_batch
    from .torch_model import adam_for

    optimizer = adam_for(model)
    config, losses, counts, forwards, seconds = model.config, [], [], [], []
    for step in range(steps):
        start = time.perf_counter()  # the region train_rank times: batch, step, the loss's all-reduce
        batch = global_batch(seed, step, batch=config.batch, seq=config.seq, vocab=config.vocab)
        tokens, targets = local_batch(*batch, comm.rank % dp, dp)
        loss, counted, forward = _counted_step(model, optimizer, tokens, targets, count)
        if dp > 1:  # the global batch's loss, the mean of the ranks' means, as the book's trainer reports it
            dist.all_reduce(loss)
            loss = loss / dp
        seconds.append(time.perf_counter() - start)
        losses.append(float(loss))
        if count:
            counts.append(counted)
            forwards.append(forward)
    return losses, counts, forwards, _slowest(comm, seconds)


def _twin(seed: int, config: Config = Config()):
    from .model import init_units
    from .torch_model import TinyTransformer, load_units

    return load_units(TinyTransformer(config), init_units(config, seed))


def _rank_flags(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="distlib.train.peers")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--sp", type=int, default=0)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--schedule", default="1f1b")
    parser.add_argument("--microbatches", type=int, default=1)
    parser.add_argument("--config", default="{}", help="the model's sizes that differ from the book's, as JSON")
    parser.add_argument("--overlap", default="", help="the book's side's --overlap kinds, comma-separated")
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)
    ns.config = Config(**json.loads(ns.config))
    return ns


def fsdp_main(argv=None) -> None:
    """One rank of :func:`fsdp_beside_zero3`: the book's ZeRO-3, then FSDP2, on the same ranks."""
    from torch.distributed.fsdp import fully_shard

    from ..engines.report import emit
    from ..engines.torch_numpy import numpy_world

    ns, comm = _rank_flags(argv), numpy_world()
    book_losses, book_counts, book_bytes, book_seconds = _book_run(comm, Layout(dp=comm.size, zero=3),
                                                                   steps=ns.steps, seed=ns.seed, config=ns.config,
                                                                   overlap=ns.overlap)  # fmt: skip
    model = _twin(ns.seed, ns.config)
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)  # the root: the embeddings, the final norm and the output projection, one group
    peer_losses, peer_counts, forwards, peer_seconds = _peer_run(comm, model, steps=ns.steps, seed=ns.seed,
                                                                 dp=comm.size, count=bool(ns.count))  # fmt: skip
    emit(PeerComparison("FSDP2 fully_shard", "ZeRO-3", comm.size, ns.steps, ns.seed, book_losses, peer_losses,
                        book_counts, peer_counts, forwards, book_bytes, book_seconds, peer_seconds))  # fmt: skip


def tp_main(argv=None) -> None:
    """One rank of :func:`tp_beside_megatron`: the book's tensor parallelism, then DTensor's, on the same ranks."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    from ..engines.report import emit
    from ..engines.torch_numpy import numpy_world

    ns, comm = _rank_flags(argv), numpy_world()
    sp = bool(ns.sp)
    book_losses, book_counts, book_bytes, book_seconds = _book_run(
        comm, Layout(tp=comm.size, sequence_parallel=sp), steps=ns.steps, seed=ns.seed, config=ns.config,
        overlap=ns.overlap)
    model, mesh = _twin(ns.seed, ns.config), init_device_mesh("cpu", (comm.size,))
    if sp:
        _sequence_parallel(model, mesh)
    else:
        plan = {"q": ColwiseParallel(), "k": ColwiseParallel(), "v": ColwiseParallel(), "o": RowwiseParallel(),
                "mlp_in": ColwiseParallel(), "mlp_out": RowwiseParallel()}  # fmt: skip
        for block in model.blocks:
            parallelize_module(block, mesh, plan)
    peer_losses, peer_counts, forwards, peer_seconds = _peer_run(comm, model, steps=ns.steps, seed=ns.seed, dp=1,
                                                                 count=bool(ns.count))  # fmt: skip
    emit(PeerComparison("DTensor parallelize_module", "Megatron TP + SP" if sp else "Megatron TP", comm.size,
                        ns.steps, ns.seed, book_losses, peer_losses, book_counts, peer_counts, forwards,
                        book_bytes, book_seconds, peer_seconds))  # fmt: skip


def _sequence_parallel(model, mesh) -> None:
    """DTensor's sequence parallelism on the twin, cut and gathered where the book's ``--sp`` cuts and gathers.

    The twin's block has no attention or MLP submodule to put torch docs' ``PrepareModuleInput`` on, so
    the whole sequence is made on each norm's way out instead (``PrepareModuleOutput``, ``Shard(1)`` to
    ``Replicate()``, kept a DTensor so that ``q``, ``k`` and ``v`` share one all-gather, and its backward
    is one reduce-scatter of their summed input gradients).
    """
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, PrepareModuleOutput,
                                                   RowwiseParallel, SequenceParallel, parallelize_module)

    whole = dict(output_layouts=Shard(1), desired_output_layouts=Replicate(), use_local_output=False)
    for block in model.blocks:
        parallelize_module(block, mesh, {"ln1": SequenceParallel(), "ln2": SequenceParallel(),
                                         "q": ColwiseParallel(), "k": ColwiseParallel(), "v": ColwiseParallel(),
                                         "o": RowwiseParallel(output_layouts=Shard(1)), "mlp_in": ColwiseParallel(),
                                         "mlp_out": RowwiseParallel(output_layouts=Shard(1))})  # fmt: skip
        parallelize_module(block, mesh, {"ln1": PrepareModuleOutput(**whole), "ln2": PrepareModuleOutput(**whole)})
    parallelize_module(model, mesh, {
        # After the embeddings (whole on every rank): this rank's positions; backward, an all-gather.
        "blocks.0": PrepareModuleInput(input_layouts=(Replicate(),), desired_input_layouts=(Shard(1),),
                                       use_local_output=True),
        # Before the final norm and the output projection (replicated): the whole sequence; backward, a split.
        "lnf": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),),
                                  use_local_output=True),
    })  # fmt: skip


def _torch_stages(model, schedule: str, microbatches: int, comm):
    """The twin cut as the book's stages are, this rank's ``PipelineStage`` s, and the schedule over them."""
    import torch
    import torch.nn.functional as F
    from torch.distributed import pipelining

    from .pipeline_parallel import stage_units
    from .torch_model import Chunk

    chunks = PEER_CHUNKS if schedule == "interleaved" else 1
    pp, vocab = comm.size, model.config.vocab
    parts = [Chunk(model, units) for units in stage_units(comm.rank, model.config.layers, pp, chunks)]
    stages = [pipelining.PipelineStage(part, c * pp + comm.rank, pp * chunks, torch.device("cpu"))
              for c, part in enumerate(parts)]  # fmt: skip

    def loss_fn(logits, targets):  # a microbatch's mean over its tokens, as the book's head computes it
        return F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))

    kind = getattr(pipelining, TORCH_SCHEDULES[schedule])
    first = stages if schedule == "interleaved" else stages[0]
    return parts, stages, kind(first, microbatches, loss_fn=loss_fn, scale_grads=True)


def _count_sends(stage, tally: dict) -> None:
    """Count, into ``tally``, the point-to-point sends ``stage`` posts (``"isend"``) and their bytes (``"bytes"``).

    CommDebugMode counts collectives, not sends, and its module hooks break a stage's backward
    (``torch.autograd.grad``; torch 2.13: "A leaf node was passed to _will_engine_execute_node"), so the
    sends are read where the schedules get them: from the stage's ``get_fwd_send_ops`` and
    ``get_bwd_send_ops``, wrapped on this one object.
    """
    for name in ("get_fwd_send_ops", "get_bwd_send_ops"):
        inner = getattr(stage, name)

        def wrapped(chunk_id, inner=inner):
            ops = inner(chunk_id)
            tally["isend"] = tally.get("isend", 0) + len(ops)
            tally["bytes"] = tally.get("bytes", 0) + sum(op.tensor.numel() * op.tensor.element_size() for op in ops)
            return ops

        setattr(stage, name, wrapped)


def _pipelining_run(comm, model, *, schedule: str, microbatches: int, steps: int, seed: int,
                    count: bool = True) -> tuple:  # fmt: skip
    """``torch.distributed.pipelining`` on the twin: ``(losses, sends of each step, every rank's bytes sent, each
    step's seconds on the slowest rank)``. The step's loss is the mean of the microbatches' losses, which the
    last stage holds, brought to every rank. With ``count=False`` no sends are counted (both lists empty)."""
    import torch

    from .data import global_batch
    from .microbatches import mean_loss
    from .torch_model import adam_for

    parts, stages, runner = _torch_stages(model, schedule, microbatches, comm)
    tally = {}
    for stage in stages if count else ():
        _count_sends(stage, tally)
    optimizer = adam_for(torch.nn.ModuleList(parts))
    config, losses, counts, seconds = model.config, [], [], []
    last = comm.rank == comm.size - 1
    for step in range(steps):
        start = time.perf_counter()  # the region the book's stage times: batch, step, the loss to every stage
        tokens, targets = (torch.from_numpy(a) for a in global_batch(seed, step, seq=config.seq, vocab=config.vocab))
        before, mb_losses = dict(tally), []
        inputs = (tokens,) if comm.rank == 0 else ()
        runner.step(*inputs, target=targets if last else None, losses=mb_losses if last else None)
        optimizer.step()
        optimizer.zero_grad()
        mine = mean_loss(float(x.detach()) for x in mb_losses) if last else None
        losses.append(comm.allgather_object(mine)[-1])
        seconds.append(time.perf_counter() - start)
        if count:
            counts.append({"isend": tally.get("isend", 0) - before.get("isend", 0)})
    sent = comm.allgather_object(tally.get("bytes", 0)) if count else []
    return losses, comm.allgather_object(counts)[0], sent, _slowest(comm, seconds)


def pipelining_main(argv=None) -> None:
    """One rank of :func:`pipelining_beside_book`: a stage of the book's pipeline, then of torch's, on this rank."""
    from ..engines.report import emit
    from ..engines.torch_numpy import numpy_world

    ns, comm = _rank_flags(argv), numpy_world()
    chunks = PEER_CHUNKS if ns.schedule == "interleaved" else 1
    layout = Layout(pp=comm.size, schedule=ns.schedule, chunks=chunks, microbatches=ns.microbatches)
    book_losses, book_counts, book_bytes, book_seconds = _book_run(comm, layout, steps=ns.steps, seed=ns.seed)
    peer_losses, peer_counts, peer_bytes, peer_seconds = _pipelining_run(
        comm, _twin(ns.seed), schedule=ns.schedule, microbatches=ns.microbatches, steps=ns.steps, seed=ns.seed,
        count=bool(ns.count))  # fmt: skip
    emit(PeerComparison(f"pipelining {TORCH_SCHEDULES[ns.schedule]}", f"pipeline {ns.schedule}", comm.size,
                        ns.steps, ns.seed, book_losses, peer_losses, book_counts, peer_counts, [], book_bytes,
                        peer_comm_bytes=peer_bytes, book_step_seconds=book_seconds,
                        peer_step_seconds=peer_seconds))  # fmt: skip


# ----------------------------------------------------------------------------
# From the notebook: one launch each
# ----------------------------------------------------------------------------


def _launch(main: str, ranks: int, steps: int, seed: int, timeout: float, sp: bool = False,
            count: bool = True, extra=(), config: Config | None = None, overlap: str = "") -> PeerComparison:  # fmt: skip
    from ..engines.launch import run_torch
    from ..engines.report import read
    from ..engines.torch_dist import import_torch

    import_torch()  # "pip install torch" here, once, before any rank starts
    if not isinstance(count, bool):
        raise ValueError(f"count must be True or False, got {count!r}")
    args = ["--steps", str(steps), "--seed", str(seed), "--sp", str(int(sp)), "--count", str(int(count)),
            *map(str, extra)]  # fmt: skip
    if config is not None and config != Config():
        args += ["--config", json.dumps(dataclasses.asdict(config))]
    if overlap:
        args += ["--overlap", overlap]
    result = run_torch(f"distlib.train.peers:{main}", ranks, args=args, timeout=timeout)
    return dataclasses.replace(read(result, PeerComparison), run_id=result.run_id)


def _check_run(steps, seed, timeout) -> tuple:
    steps = check_int("steps", steps, minimum=1, maximum=MAX_STEPS)
    seed = check_int("seed", seed, minimum=0, maximum=MAX_SEED)
    return steps, seed, check_real("timeout", timeout, minimum=0, strict_min=True)


def _ranks_of(ranks, choices, what: str) -> int:
    from ..engines._processes import max_ranks

    ranks = check_int("ranks", ranks, minimum=2, maximum=max_ranks())
    if ranks not in choices:
        raise ValueError(f"ranks must {what}: one of {', '.join(map(str, choices))}; got {ranks}")
    return ranks


def fsdp_beside_zero3(ranks: int = 2, steps: int = 3, seed: int = 0, *, timeout: float = 120.0,
                      count: bool = True, config: Config | None = None, overlap: bool = False) -> PeerComparison:  # fmt: skip
    """The book's ZeRO-3 and FSDP2's ``fully_shard`` on the same ``ranks`` gloo ranks, side by side.

    Parameters
    ----------
    ranks : int
        Data-parallel ranks, at least 2, dividing the global batch of 12 sequences.
    steps, seed : int
        Training steps; the seed of the parameters and of the data.
    timeout : float
        Seconds before the launch is stopped.
    count : bool
        Count PyTorch's collectives (CommDebugMode). ``False``: ``peer_counts`` and
        ``peer_forward_counts`` stay empty, and ``peer_step_seconds`` time PyTorch's step without
        CommDebugMode's per-operator dispatch (what a benchmark wants; the book's counter costs nothing).
    config : Config, optional
        The model's sizes (the book's small model by default): a larger one makes communication a visible
        part of the step (``benchmarks/bench_train.py --peers-config large``).
    overlap : bool
        The book's ZeRO-3 prefetches its all-gathers and reduce-scatters under compute (``--overlap
        prefetch,buckets``), as FSDP2 does by default; its counts then hold only the blocking collectives.

    Returns
    -------
    PeerComparison
        ``book_counts``: ``allgather`` and ``reduce_scatter`` of the parameters and gradients, and the
        ``allreduce`` of the loss; ``peer_counts``: ``all_gather_into_tensor`` and ``reduce_scatter_tensor``.
        ``book_step_seconds`` and ``peer_step_seconds``: each step's wall time on the slowest rank.

    Raises
    ------
    ValueError
        An argument out of range (before anything starts).
    distlib.engines.RunError
        A rank failed or the launch timed out.

    Examples
    --------
    >>> fsdp_beside_zero3(ranks=5)
    Traceback (most recent call last):
    ...
    ValueError: ranks must divide the global batch of 12 sequences: one of 2, 3, 4, 6, 12; got 5
    """
    batch = (config or Config()).batch
    choices = [d for d in range(2, batch + 1) if batch % d == 0]
    ranks = _ranks_of(ranks, choices, f"divide the global batch of {batch} sequences")
    return _launch("fsdp_main", ranks, *_check_run(steps, seed, timeout), count=count, config=config,
                   overlap="prefetch,buckets" if overlap else "")


def tp_beside_megatron(ranks: int = 2, steps: int = 3, seed: int = 0, *, timeout: float = 120.0,
                       sequence_parallel: bool = False, count: bool = True, config: Config | None = None,
                       overlap: bool = False) -> PeerComparison:  # fmt: skip
    """The book's tensor parallelism and DTensor's ``parallelize_module`` on the same ``ranks`` gloo ranks.

    Parameters
    ----------
    ranks : int
        Tensor-parallel ranks: 2 or 4 (they divide the 4 heads and the MLP's 128 columns).
    steps, seed : int
        Training steps; the seed of the parameters and of the data.
    timeout : float
        Seconds before the launch is stopped.
    count : bool
        Count PyTorch's collectives (CommDebugMode). ``False``: ``peer_counts`` and
        ``peer_forward_counts`` stay empty, and ``peer_step_seconds`` time PyTorch's step without
        CommDebugMode's per-operator dispatch (what a benchmark wants; the book's counter costs nothing).
    sequence_parallel : bool
        The book's ``--sp`` beside DTensor's ``SequenceParallel`` (module docstring).
    config : Config, optional
        The model's sizes (the book's small model by default).
    overlap : bool
        The book's backward sums run under its weight gradients (``--overlap tp``).

    Returns
    -------
    PeerComparison
        ``book_counts``: ``allreduce`` of the activations (forward) and their gradients (backward);
        ``peer_counts``: ``all_reduce``; with ``sequence_parallel``, ``allgather`` and ``reduce_scatter``
        (``all_gather_into_tensor``, ``reduce_scatter_tensor``) of the activations in their place, and
        ``allreduce`` of the norms' gradients.
        ``book_step_seconds`` and ``peer_step_seconds``: each step's wall time on the slowest rank.

    Raises
    ------
    ValueError
        An argument out of range (before anything starts).
    distlib.engines.RunError
        A rank failed or the launch timed out.

    Examples
    --------
    >>> tp_beside_megatron(ranks=3)
    Traceback (most recent call last):
    ...
    ValueError: ranks must divide the 4 heads and the MLP's 128 columns: one of 2, 4; got 3
    """
    config = config or Config()
    choices = [t for t in range(2, config.heads + 1) if config.heads % t == 0 and config.ffn % t == 0]
    ranks = _ranks_of(ranks, choices, f"divide the {config.heads} heads and the MLP's {config.ffn} columns")
    if not isinstance(sequence_parallel, bool):
        raise ValueError(f"sequence_parallel must be True or False, got {sequence_parallel!r}")
    if sequence_parallel and config.seq % ranks:
        raise ValueError(f"ranks must divide the sequence of {config.seq} tokens with sequence_parallel, got {ranks}")
    return _launch("tp_main", ranks, *_check_run(steps, seed, timeout), sp=sequence_parallel, count=count,
                   config=config, overlap="tp" if overlap else "")


def pipelining_beside_book(stages: int = 2, schedule: str = "1f1b", microbatches: int = 4, steps: int = 3,
                           seed: int = 0, *, timeout: float = 120.0, count: bool = True) -> PeerComparison:  # fmt: skip
    """The book's pipeline stages and ``torch.distributed.pipelining``'s on the same ``stages`` gloo ranks.

    Both cut the model alike (:func:`distlib.train.pipeline_parallel.stage_units`; the twin by
    :class:`~distlib.train.torch_model.Chunk`, one ``PipelineStage`` per chunk, with virtual stage
    ``c * stages + rank`` for chunk ``c`` as the book places it), split each step's global batch of 12
    sequences into the same ``microbatches`` consecutive pieces, and run the same schedule:
    :data:`TORCH_SCHEDULES` (``"interleaved"``: :data:`PEER_CHUNKS` chunks per stage). One data-parallel
    replica, no tensor parallelism, ZeRO 0; float64.

    The loss convention is the book's (:mod:`distlib.train.microbatches`): each microbatch's loss is the
    mean over its own tokens (the schedule's ``loss_fn``), the step's gradient is the sum of the
    microbatches' gradients divided by ``microbatches`` (torch's ``scale_grads=True``, its default, does
    that division after the last backward), and the reported loss is the mean of the microbatches'
    losses. So both equal one process *accumulating the same microbatches*
    (:func:`~distlib.train.microbatches.accumulate_run`), not a single whole-batch step, which differs in
    the last bits.

    Parameters
    ----------
    stages : int
        Pipeline stages (ranks): at least 2, dividing the 8 layers (with ``"interleaved"``, ``stages`` times
        :data:`PEER_CHUNKS` must divide them).
    schedule : {"gpipe", "1f1b", "interleaved"}
    microbatches : int
        Microbatches per step: dividing the 12 sequences (with ``"interleaved"``, a multiple of ``stages``).
    steps, seed : int
        Training steps; the seed of the parameters and of the data.
    timeout : float
        Seconds before the launch is stopped.
    count : bool
        Count PyTorch's point-to-point sends per step and their bytes (at its stages' ``get_fwd_send_ops``
        and ``get_bwd_send_ops``; CommDebugMode counts collectives only, and its module hooks break a
        stage's backward). ``False``: ``peer_counts`` and ``peer_comm_bytes`` stay empty. The book's side
        is always counted (its :class:`~distlib.engines.comm.CountingComm` costs nothing).

    Returns
    -------
    PeerComparison
        ``book_losses`` and ``peer_losses`` per step; ``book_counts``: the book's collectives on rank 0 per
        step (the loss's all-reduce over the stages); ``peer_counts``: PyTorch's sends on rank 0 per step
        (``{"isend": n}``); ``book_comm_bytes`` and ``peer_comm_bytes``: each stage's bytes sent (the
        activations and gradients; the book's also the loss); each step's wall time on the slowest rank,
        both runs. ``peer_forward_counts`` stays empty.

    Raises
    ------
    ValueError
        An argument out of range, named (before anything starts).
    distlib.engines.RunError
        A rank failed or the launch timed out.

    Examples
    --------
    >>> pipelining_beside_book(stages=3)
    Traceback (most recent call last):
    ...
    ValueError: stages must divide the 8 layers: one of 2, 4, 8; got 3
    >>> pipelining_beside_book(schedule="zigzag")
    Traceback (most recent call last):
    ...
    ValueError: schedule must be one of 'gpipe', '1f1b', 'interleaved'; got 'zigzag'
    """
    stages, schedule, microbatches = _pipelining_args(stages, schedule, microbatches)
    return _launch("pipelining_main", stages, *_check_run(steps, seed, timeout), count=count,
                   extra=("--schedule", schedule, "--microbatches", microbatches))


def _pipelining_args(stages, schedule, microbatches) -> tuple:
    """:func:`pipelining_beside_book`'s stages, schedule and microbatches, checked (one error naming the first
    out of range); Megatron-LM's rules, as :meth:`distlib.layout.Layout.problem` applies them."""
    from ..engines._processes import max_ranks
    from ..pipeline_schedule import PIPELINE_SCHEDULES

    layers = Config().layers
    stages = check_int("stages", stages, minimum=2, maximum=max_ranks())
    choices = [d for d in range(2, layers + 1) if layers % d == 0]
    if stages not in choices:
        raise ValueError(f"stages must divide the {layers} layers: one of {', '.join(map(str, choices))}; got {stages}")
    schedule = check_choice("schedule", schedule, PIPELINE_SCHEDULES)
    inter = [d for d in choices if layers % (d * PEER_CHUNKS) == 0]
    if schedule == "interleaved" and stages not in inter:
        raise ValueError(f"stages must be one of {', '.join(map(str, inter))} with schedule 'interleaved' "
                         f"(stages times its {PEER_CHUNKS} chunks must divide the {layers} layers), got {stages}")
    microbatches = check_int("microbatches", microbatches, minimum=1)
    if GLOBAL_BATCH % microbatches:
        fits = ", ".join(str(d) for d in range(1, GLOBAL_BATCH + 1) if GLOBAL_BATCH % d == 0)
        raise ValueError(f"microbatches must divide the {GLOBAL_BATCH} sequences of a step: one of {fits}; "
                         f"got {microbatches}")  # fmt: skip
    if schedule == "interleaved" and microbatches % stages:
        raise ValueError(f"microbatches must be a multiple of stages ({stages}) with schedule 'interleaved', "
                         f"got {microbatches}")  # fmt: skip
    return stages, schedule, microbatches
