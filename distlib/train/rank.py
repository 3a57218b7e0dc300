"""One rank of the trainer, for every layout and on either engine.

::

    python -m mpi4py -m distlib.train.rank --dp 2 --tp 2 --steps 5 --seed 0           # an MPI rank
    run_torch("distlib.train.rank:main", 4, args=[..., "--engine", "gloo"])         # a gloo rank

:func:`distlib.train.launch.train` starts :attr:`Layout.ranks` of these. The
flags are the layout's (:meth:`distlib.layout.Layout.from_argv`, the one
parser), the run's (``--steps``, ``--seed``, ``--engine``) and the model's
size (:data:`CONFIG_FLAGS`, when not the book's). Each rank finds its place
and its groups in the layout's grid (:meth:`~distlib.layout.Layout.groups`),
builds the parts that each parallelism owns, and runs the same step:

* :mod:`~distlib.train.data_parallel` -- DDP or ZeRO-1/2/3 over the ranks
  holding the same parameters (``replicas``);
* :mod:`~distlib.train.tensor_parallel` -- the model's sums over the
  tensor-parallel group, or sequence parallelism's all-gathers and
  reduce-scatters;
* :mod:`~distlib.train.pipeline_parallel` -- the stage: this rank's chunks
  of the model and the order of its ops; with one stage and one microbatch
  it is the plain step, one forward and one backward;
* :mod:`~distlib.train.context_parallel` -- this rank's zig-zag positions of
  every sequence, and the attention over the context-parallel group (ring,
  all-gather or Ulysses).

Each hands back a :class:`~distlib.train.results.RankReport` as one report
line (:mod:`distlib.engines.report`). Progress goes to stderr, from rank 0.
On gloo the ranks run the very same NumPy program over a communicator that
moves its buffers through torch.distributed's point-to-point calls
(:class:`~distlib.engines.torch_numpy.NumpyTorchComm`), so every layout sends
the same bytes on both engines.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import fields

import numpy as np

from .._check import check_int
from ..engines.algorithms import allreduce
from ..engines.comm import CountingComm, SubComm
from ..layout import Layout
from .adam import Adam
from .context_parallel import context_parallel
from .data import global_batch, local_batch
from .data_parallel import Ledger, make_layout
from .expert_parallel import ep_run_problem, expert_layout, moe_exchange
from .microbatches import mean_loss, scale_accumulated, split_microbatches
from .model import Config, init_units, shard_unit, unit_specs
from .overlap import DEFAULT_BUCKET_MB, Overlap
from .pipeline_parallel import Stage, stage_ops, stage_units
from .results import RankReport
from .tensor_parallel import tensor_parallel

__all__ = ["CONFIG_FLAGS", "ENGINES", "config_flag", "add_config_arguments", "run_argv", "train_rank", "main"]

ENGINES = ("mpi", "gloo")
"""What ``--engine`` names: MPI ranks (mpi4py) or torch.distributed ranks over gloo."""
CONFIG_FLAGS = tuple(f.name for f in fields(Config))
"""The model's sizes as flags (``--hidden 64`` ..., ``--top-k 2`` for ``top_k``), given to the ranks when they are
not the book's."""


def config_flag(name: str) -> str:
    """The flag of a :class:`Config` field: ``--hidden``, ``--top-k``, ``--capacity-factor``.

    >>> config_flag("top_k")
    '--top-k'
    """
    return "--" + name.replace("_", "-")


def add_config_arguments(parser, *, helps: bool = False) -> None:
    """The model's flags (:data:`CONFIG_FLAGS`) on ``parser``, each into ``config_<field>``: the one definition the
    command line and the ranks share. ``--capacity-factor`` is a number, the others integers."""
    for f in fields(Config):
        kind = float if f.name == "capacity_factor" else int
        words = dict(help=f"the model's {f.name.replace('_', ' ')} (default {f.default})") if helps else {}
        parser.add_argument(config_flag(f.name), dest=f"config_{f.name}", type=kind, default=f.default, **words)


def run_argv(layout: Layout, *, steps: int, seed: int, engine: str, config: Config = Config(),
             overlap: Overlap = Overlap(), checkpoint_dir=None, checkpoint_every: int = 1, resume: bool = False,
             kill_at: tuple | None = None, checkpoint_async: bool = False) -> list:  # fmt: skip
    """The flags a rank is started with: the layout's, the run's, and the model's sizes that differ from the book's.

    >>> run_argv(Layout(tp=2), steps=3, seed=0, engine="mpi")
    ['--tp', '2', '--steps', '3', '--seed', '0', '--engine', 'mpi']
    >>> run_argv(Layout(), steps=1, seed=0, engine="gloo", config=Config(hidden=64))[-2:]
    ['--hidden', '64']
    >>> run_argv(Layout(dp=2, ep=2), steps=1, seed=0, engine="mpi", config=Config(experts=4, top_k=2))[-4:]
    ['--experts', '4', '--top-k', '2']
    """
    sizes = [[config_flag(f.name), str(getattr(config, f.name))] for f in fields(Config)
             if getattr(config, f.name) != f.default]  # fmt: skip
    saving = [] if checkpoint_dir is None else ["--checkpoint-dir", str(checkpoint_dir), "--checkpoint-every",
                                                str(checkpoint_every)] + (["--resume"] if resume else []) \
        + (["--checkpoint-async"] if checkpoint_async else [])
    if kill_at is not None:
        saving += ["--kill-rank", str(kill_at[0]), "--kill-at-step", str(kill_at[1])]
        if len(kill_at) > 2 and kill_at[2] != "step":
            saving += ["--kill-during", kill_at[2]]
    return [*layout.argv(), "--steps", str(steps), "--seed", str(seed), "--engine", engine, *sum(sizes, []),
            *overlap.argv(), *saving]


def _checksum_part(layout, specs, tp_rank: int) -> float:
    """This rank's share of the sum of every parameter: its chunks, without the replicated copies off ``tp_rank`` 0
    (with expert parallelism, its chunks of each part: the non-expert units and its experts)."""
    if hasattr(layout, "parts"):
        return sum(_checksum_part(part, part.specs, tp_rank) for part in layout.parts)
    total = 0.0
    for k, spec in enumerate(specs):
        start, values = layout.owned(k)
        keep = 1.0 - spec.replicated_mask() if tp_rank else np.ones(spec.size)
        total += float(np.sum(values * keep[start : start + len(values)]))
    return total


class _Threads:
    """The background threads an overlapped run uses (:mod:`distlib.train.overlap`): the collectives' over a
    channel of their own (:class:`~distlib.engines.tagged.TaggedComm`, counted apart), and the pipeline's
    receives."""

    def __init__(self, comm, overlap: Overlap, groups):
        from ..engines.tagged import Background, TaggedComm, check_threads

        self.collectives = self.receiver = self.counted = None
        if overlap.background or "pp" in overlap:
            check_threads(comm)
        if overlap.background:
            self.collectives = Background("distlib-overlap")
            self.counted = CountingComm(TaggedComm(comm))
        if "pp" in overlap:
            self.receiver = Background("distlib-pp-recv")
        self.groups = groups

    def channel(self, kind: str, group):
        """``(thread, the group over the tagged channel)`` for a kind the run overlaps, else ``None``."""
        return (self.collectives, SubComm(self.counted, list(group))) if self.collectives is not None else None

    @property
    def waited(self) -> float:
        return self.collectives.waited if self.collectives is not None else 0.0

    def close(self) -> None:
        for thread in (self.collectives, self.receiver):
            if thread is not None:
                thread.close()


def _build(comm, lay: Layout, config: Config, seed: int, adam: Adam, cp_options: dict,
           overlap: Overlap = Overlap(), start=None) -> tuple:  # fmt: skip
    """This rank's parts: its counted world, place, groups, data-parallel layout, stage and op order, and the
    background threads of its overlap; from the checkpoint ``start`` (:class:`~distlib.train.checkpoint.Checkpoint`,
    read whole) instead of freshly drawn parameters when given."""
    counted = CountingComm(comm)
    at, groups = lay.coords(comm.rank), lay.groups(comm.rank)
    data_comm, pp_comm, tp_comm, cp_comm = (SubComm(counted, list(g)) for g in (groups.replicas, groups.pp,
                                                                               groups.tp, groups.cp))
    threads = _Threads(comm, overlap, groups)
    chunks = stage_units(at.pp, config.layers, lay.pp, lay.chunks)
    mine = [u for units in chunks for u in units]
    full, specs = unit_specs(config), unit_specs(config, lay.tp)
    every = init_units(config, seed) if start is None else start.weights
    ledger = Ledger()
    hides = dict(buckets="buckets" in overlap, bucket_bytes=overlap.bucket_bytes,
                 prefetch=overlap.prefetch_depth if "prefetch" in overlap else 0, microbatches=lay.microbatches,
                 background=threads.channel("data", groups.replicas))  # fmt: skip
    held = ([specs[u] for u in mine], [shard_unit(full[u], every[u], at.tp, lay.tp) for u in mine])
    if lay.ep > 1:  # the experts cut over the ep group, their gradients reduced over expert_replicas
        layout = expert_layout(lay.zero, *held, config=config, ep_rank=at.ep, ep=lay.ep, comm=data_comm,
                               expert_comm=SubComm(counted, list(groups.expert_replicas)), adam=adam, ledger=ledger,
                               **hides)  # fmt: skip
    else:
        layout = make_layout(lay.zero, *held, data_comm, adam=adam, ledger=ledger, **hides)
    if start is not None:  # resharding on load: this layout's cut of the whole units, moments included
        local = lambda whole: np.concatenate([shard_unit(full[u], whole[u], at.tp, lay.tp) for u in mine])  # noqa: E731
        layout.load_state(local(start.weights), local(start.m), local(start.v))
    reduce, sp = tensor_parallel(tp_comm, sequence_parallel=lay.sequence_parallel,
                                 background=threads.channel("tp", groups.tp) if "tp" in overlap else None)
    cp = context_parallel(cp_comm, kind=lay.cp_kind, seq=config.seq, **cp_options)
    stage = Stage(config=config, stage=at.pp, pp=lay.pp, chunks=lay.chunks, microbatches=lay.microbatches,
                  layout=layout, chunk_units=chunks, pp_comm=pp_comm, reduce=reduce, ledger=ledger, sp=sp,
                  cp=cp, receiver=threads.receiver, moe=moe_exchange(config, SubComm(counted, list(groups.ep))))  # fmt: skip
    ops = stage_ops(lay.schedule, lay.pp, lay.microbatches, at.pp, chunks=lay.chunks)
    return counted, at, (data_comm, pp_comm), stage, ops, ledger, threads, mine


def _flush(stage: Stage, mb_losses, step: int, pp_comm, data_comm) -> float:
    """After the last op: the summed gradient scaled, the layout's update (its data-parallel collective), the loss."""
    if stage.accumulates and not stage.layout.scales_accumulated:
        scale_accumulated(stage.layout.grads, stage.m)
    stage.layout.update(step)
    loss = np.array([mean_loss(mb_losses) if mb_losses is not None else 0.0])
    if pp_comm.size > 1:
        allreduce(pp_comm, loss)  # only the last stage holds the loss: a sum with zeros brings it to every stage
    allreduce(data_comm, loss)  # the global batch's loss: the mean of the replicas' means
    return float(loss[0] / data_comm.size)


def _record(times: dict, clock, seconds: float) -> None:
    """One step's busy, idle, forward and backward seconds (the stage's clock) and its wall time, into ``times``."""
    for name, value in (("busy", clock.forward + clock.backward), ("idle", clock.idle), ("forward", clock.forward),
                        ("backward", clock.backward), ("step", seconds)):  # fmt: skip
        times[name].append(value)


def train_rank(comm, layout: Layout, *, steps: int, seed: int, config: Config = Config(), adam: Adam = Adam(),
               say=None, cp_overlap: bool = True, cp_split: str = "zigzag",
               overlap: Overlap = Overlap(), checkpoint_dir=None, checkpoint_every: int = 1, resume: bool = False,
               kill_at: tuple | None = None, checkpoint_async: bool = False) -> RankReport:  # fmt: skip
    """Train on this rank of ``comm`` with ``layout`` for ``steps`` steps; this rank's report.

    Every rank of ``comm`` calls it with the same arguments (SPMD).

    Parameters
    ----------
    comm : Comm
        The world: ``layout.ranks`` ranks (MPI under ``mpiexec``, gloo, or threads in tests).
    layout : Layout
        The layout; checked against ``config`` here (:meth:`Layout.problem`).
    steps, seed : int
        Steps to train; the seed of the parameters and of the data.
    config, adam
        The model's sizes and the optimizer (the defaults are the book's).
    say : callable, optional
        Called with a progress line after each step.
    cp_overlap, cp_split
        Context parallelism's ring posts each hop under the block before it (True; False: the blocking
        ring), and its sequence is cut in zig-zag chunks (``"contiguous"``: the imbalance it cures); both
        give the same numbers (:class:`~distlib.train.context_parallel.ContextParallel`).
    overlap : Overlap
        Which communication runs under computation (:mod:`distlib.train.overlap`; checked against the layout
        by the launching side); the same numbers as without.
    checkpoint_dir, checkpoint_every, resume
        Write a sharded checkpoint (:mod:`distlib.train.checkpoint`) into ``checkpoint_dir`` after every
        ``checkpoint_every`` steps; with ``resume``, start from the newest complete one there, written at any
        layout, and run the steps after it up to ``steps``.
    checkpoint_async : bool
        Each rank copies its state and a thread of its own writes it while the next steps run
        (:class:`~distlib.train.checkpoint.AsyncSaver`); the step waits only for the copy.
    kill_at : (rank, step) or (rank, step, "save"), optional
        That rank ``SIGKILL`` s itself during that step (1-based), after its forward and backward passes and
        before the update: a failure made on purpose (real processes only, not threads). With ``"save"``, during
        that step's checkpoint instead, once its shard is written and before the checkpoint is committed (a
        torn save, never read).

    Returns
    -------
    RankReport

    Raises
    ------
    ValueError
        ``comm`` does not have the layout's ranks, or the layout does not fit ``config`` (one line, the flag named).

    Examples
    --------
    One process, two data-parallel ranks under ZeRO-1, two stages accumulating two microbatches: the same losses.

    >>> from distlib.engines.comm import run_threads
    >>> run = lambda lay: run_threads(lambda c: train_rank(c, lay, steps=2, seed=0), lay.ranks)
    >>> one, two, pipe = (run(lay)[0] for lay in (Layout(), Layout(dp=2, zero=1), Layout(pp=2, microbatches=2)))
    >>> abs(one.losses[-1] - two.losses[-1]) < 1e-12, one.comm_bytes, two.comm_bytes > 0, pipe.ops
    (True, 0, True, ['F0.0', 'F1.0', 'B0.0', 'B1.0'])
    >>> tp, sp = (run(Layout(tp=2, sequence_parallel=s))[0] for s in (False, True))
    >>> abs(sp.losses[-1] - one.losses[-1]) < 1e-12, sp.messages > tp.messages
    (True, True)
    """
    if not isinstance(layout, Layout):
        raise TypeError(f"layout must be a distlib.layout.Layout, got {type(layout).__name__}")
    steps, seed = check_int("steps", steps, minimum=1), check_int("seed", seed, minimum=0)
    if comm.size != layout.ranks:
        raise ValueError(f"the layout's {layout.ranks} ranks ({layout.words()}) must be the ranks of comm "
                         f"({comm.size})")
    _check(layout, config, overlap, checkpoint_dir)
    resumed = _resume_from(checkpoint_dir, config) if resume else None
    if kill_at is not None and comm.engine == "threads":
        raise ValueError("kill_at kills a rank's process: it needs real ranks (mpi or gloo), not threads")
    built = _build(comm, layout, config, seed, adam, dict(overlap=cp_overlap, split=cp_split), overlap, resumed)
    run = _Run(comm, layout, config, seed, adam, built, checkpoint=(checkpoint_dir, checkpoint_every, checkpoint_async),
               kill_at=kill_at)  # fmt: skip
    for step in range(1 if resumed is None else resumed.step + 1, steps + 1):
        run.step(step)
        if say is not None:
            say(f"step {step}/{steps}  loss {run.losses[-1]:.6f}  {run.times['step'][-1] * 1e3:.1f} ms")
    return run.report(overlap, first=1 if resumed is None else resumed.step + 1)


def _check(layout: Layout, config: Config, overlap: Overlap, checkpoint_dir) -> None:
    """``ValueError`` with one line if the layout does not fit ``config``, or asks expert parallelism for what it
    does not do yet (:func:`~distlib.train.expert_parallel.ep_run_problem`)."""
    layout.check(config)
    problem = ep_run_problem(layout, overlap=bool(overlap.kinds))
    if problem:
        raise ValueError(problem)


class _Run:
    """One rank's run, step by step: its parts (:func:`_build`), the times and losses so far, its checkpoints."""

    def __init__(self, comm, layout, config, seed, adam, built, *, checkpoint, kill_at):
        self.comm, self.layout, self.config, self.seed, self.adam = comm, layout, config, seed, adam
        self.kill_at = None if kill_at is None else (*kill_at[:2], kill_at[2] if len(kill_at) > 2 else "step")
        (self.counted, self.at, (self.data_comm, self.pp_comm), self.stage, self.ops, self.ledger, self.threads,
         self.mine) = built  # fmt: skip
        self.checkpoint_dir, self.checkpoint_every, checkpoint_async = checkpoint
        self.times = {name: [] for name in ("step", "busy", "idle", "flush", "forward", "backward", "waited",
                                            "units", "save")}  # fmt: skip
        self.losses, self.ran_first, self.saver = [], None, None
        if self.checkpoint_dir is not None and checkpoint_async:
            from .checkpoint import AsyncSaver

            self.saver = AsyncSaver(comm, self.checkpoint_dir)

    def step(self, step: int) -> None:
        """Run step ``step`` (1-based): its batch, forward and backward, update, loss, checkpoint; record it."""
        config, at, stage, times = self.config, self.at, self.stage, self.times
        start, waited = time.perf_counter(), self.threads.waited
        batch = local_batch(*global_batch(self.seed, step - 1, batch=config.batch, seq=config.seq,
                                          vocab=config.vocab), at.dp, self.layout.dp)  # fmt: skip
        if stage.cp is not None:  # this rank's positions of every sequence
            batch = tuple(stage.cp.local(part) for part in batch)
        mb_losses, clock, ran = stage.step(self.ops, split_microbatches(*batch, self.layout.microbatches))
        if self.kill_at == (self.comm.rank, step, "step"):
            _kill_self(step)
        times["flush"].append(time.perf_counter() - start)
        self.ran_first = self.ran_first or ran
        self.losses.append(_flush(stage, mb_losses, step, self.pp_comm, self.data_comm))
        saved = time.perf_counter()
        if self.checkpoint_dir is not None and step % self.checkpoint_every == 0:
            self._save(step)
        times["save"].append(time.perf_counter() - saved)
        if stage.moe is not None:
            stage.moe.routed.end_step()
        _record(times, clock, time.perf_counter() - start)
        times["waited"].append(self.threads.waited - waited)
        times["units"].append(stage.unit_seconds)

    def _save(self, step: int) -> None:
        from .checkpoint import save_checkpoint

        what = dict(layout=self.stage.layout, units=self.mine, config=self.config, seed=self.seed, adam=self.adam,
                    run_layout=self.layout, tp_rank=self.at.tp)  # fmt: skip
        if self.saver is not None:
            self.saver.save(step, **what)  # the snapshot only; written while the next steps run
        else:
            torn = self.kill_at == (self.comm.rank, step, "save")
            save_checkpoint(self.comm, self.checkpoint_dir, step, **what,
                            after_write=(lambda: _kill_self(step)) if torn else None)  # fmt: skip

    def report(self, overlap: Overlap, *, first: int) -> RankReport:
        """End the run (its threads; the last checkpoint committed) and say what it did."""
        self.threads.close()
        if self.saver is not None:
            self.saver.close()
        times, stage, at, dp_layout = self.times, self.stage, self.at, self.stage.layout
        behind = self.threads.counted  # what the background channel sent
        units = np.mean(times["units"][1:] or times["units"], axis=0).tolist() if times["units"] else []
        return RankReport(rank=self.comm.rank, dp_rank=at.dp, tp_rank=at.tp, losses=self.losses,
                          checksum_part=_checksum_part(dp_layout, dp_layout.specs, at.tp),
                          state_bytes=self.ledger.peak, state_parts=self.ledger.at_peak,
                          comm_bytes=self.counted.bytes_sent + (behind.bytes_sent if behind else 0),
                          messages=self.counted.messages + (behind.messages if behind else 0),
                          step_seconds=times["step"], local_params=sum(dp_layout.sizes), pp_rank=at.pp,
                          busy_seconds=times["busy"], idle_seconds=times["idle"], flush_seconds=times["flush"],
                          forward_seconds=times["forward"], backward_seconds=times["backward"], ops=self.ran_first,
                          activation_bytes=stage.activation_peak, attention_flops=stage.cp.flops if stage.cp else 0,
                          attention_seconds=stage.cp.seconds if stage.cp else 0.0,
                          attention_wait_seconds=stage.cp.wait_seconds if stage.cp else 0.0,
                          overlap_wait_seconds=times["waited"], overlap=list(overlap.kinds), unit_seconds=units,
                          first_step=first, save_seconds=times["save"],
                          **(_routing(stage.moe.routed) if stage.moe is not None else {}))  # fmt: skip


def _routing(routed) -> dict:
    """The report's routing counts: per step, this rank's assignments per expert and those it dropped."""
    return dict(tokens_per_expert=routed.tokens_per_expert, dropped_tokens=routed.dropped_tokens)


def _resume_from(directory, config):
    """The newest complete checkpoint in ``directory``, read whole (every rank reads it; ``CheckpointError`` if
    there is none or it does not fit)."""
    from .checkpoint import CheckpointError, newest_checkpoint, read_checkpoint

    if directory is None:
        raise ValueError("resume needs a checkpoint directory")
    path = newest_checkpoint(directory)
    if path is None:
        raise CheckpointError(f"--resume: no complete checkpoint in {directory}")
    return read_checkpoint(path, config)


def _after_restart(saving: dict) -> dict:
    """A rank started again by its launcher (``torchrun --max-restarts``: ``TORCHELASTIC_RESTART_COUNT``; a job
    Slurm requeued: ``SLURM_RESTART_COUNT``) resumes from the newest checkpoint if there is one, and does not
    kill itself again: the failure was the first attempt's."""
    import os

    from .checkpoint import newest_checkpoint

    restarts = max(int(os.environ.get(name, "0") or 0) for name in ("TORCHELASTIC_RESTART_COUNT", "SLURM_RESTART_COUNT"))
    if restarts == 0:
        return saving
    resume = saving["resume"] or (saving["checkpoint_dir"] is not None
                                  and newest_checkpoint(saving["checkpoint_dir"]) is not None)  # fmt: skip
    return {**saving, "resume": resume, "kill_at": None}


def _kill_self(step: int) -> None:
    """End this process as a crashed node would: ``SIGKILL``, no clean-up, no last words but one line."""
    import os
    import signal

    print(f"rank killing itself with SIGKILL during step {step} (--kill-rank/--kill-at-step)", file=sys.stderr,
          flush=True)  # fmt: skip
    os.kill(os.getpid(), signal.SIGKILL)


def _parse(argv) -> tuple:
    """``(layout, steps, seed, engine, config, cp_overlap, overlap, checkpointing)`` from a rank's flags (checked by the launching side
    already)."""
    parser = argparse.ArgumentParser(prog="python -m distlib.train.rank")
    Layout.add_arguments(parser)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--engine", choices=ENGINES, default="mpi")
    parser.add_argument("--cp-blocking", action="store_true",
                        help="context parallelism's ring exchanges after each block instead of under it")
    parser.add_argument("--overlap", default="")
    parser.add_argument("--bucket-mb", type=float, default=DEFAULT_BUCKET_MB)
    parser.add_argument("--prefetch-depth", type=int, default=1)
    parser.add_argument("--checkpoint-dir", default=None)
    parser.add_argument("--checkpoint-every", type=int, default=1)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--checkpoint-async", action="store_true")
    parser.add_argument("--kill-rank", type=int, default=None)
    parser.add_argument("--kill-at-step", type=int, default=None)
    parser.add_argument("--kill-during", choices=("step", "save"), default="step")
    add_config_arguments(parser)
    ns = parser.parse_args(argv)
    config = Config(**{f.name: getattr(ns, f"config_{f.name}") for f in fields(Config)})
    overlap = Overlap(tuple(k for k in ns.overlap.split(",") if k), bucket_mb=ns.bucket_mb,
                      prefetch_depth=ns.prefetch_depth)  # fmt: skip
    saving = dict(checkpoint_dir=ns.checkpoint_dir, checkpoint_every=ns.checkpoint_every, resume=ns.resume,
                  kill_at=None if ns.kill_rank is None else (ns.kill_rank, ns.kill_at_step, ns.kill_during),
                  checkpoint_async=ns.checkpoint_async)  # fmt: skip
    return Layout.from_namespace(ns), ns.steps, ns.seed, ns.engine, config, not ns.cp_blocking, overlap, saving


def main(argv=None) -> None:
    """Entry point of one rank, MPI's (``python -m mpi4py -m distlib.train.rank``) or gloo's (``--engine gloo``)."""
    from ..engines.report import emit

    layout, steps, seed, engine, config, cp_overlap, overlap, saving = _parse(sys.argv[1:] if argv is None else argv)
    saving = _after_restart(saving)
    if engine == "gloo":
        from ..engines.torch_numpy import numpy_world

        comm = numpy_world()
    else:
        from ..engines.mpi import world

        comm = world()
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if comm.rank == 0 else None
    emit(train_rank(comm, layout, steps=steps, seed=seed, config=config, say=say, cp_overlap=cp_overlap,
                    overlap=overlap, **saving))


if __name__ == "__main__":
    main()
