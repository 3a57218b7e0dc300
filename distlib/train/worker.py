"""One rank of the trainer: ``python -m mpi4py -m distlib.train.worker --dp D --tp T --zero Z --steps K --seed S``.

With ``--sp 1``: sequence parallelism over the tensor-parallel ranks.

:func:`distlib.train.launch.train` starts ``D * T`` of these with
:func:`distlib.engines.run_mpi`; each trains its part of the model
(:func:`train_rank`) and hands back a :class:`~distlib.train.results.RankReport`
as one report line (:mod:`distlib.engines.report`). Progress goes to
stderr, from rank 0.

Where each collective happens, per step (``L`` blocks; the tensor-parallel
group is ``tp`` neighbouring ranks, the data-parallel group one rank of each):

* tensor parallelism (``tp > 1``): per block, two all-reduces of the
  activations in the forward pass (after ``wo`` and ``w2``) and two of
  the input gradients in the backward (of ``q, k, v`` together, and of
  ``w1``), over the tensor-parallel group (:mod:`distlib.train.model`);
* with sequence parallelism (``sp``) instead: per block, forward and
  backward each two all-gathers and two reduce-scatters along the sequence,
  and in the backward one all-reduce of the norms' gradients;
  one all-gather before the head (forward) and one of the embeddings'
  output gradient (backward) -- ``4 L + 2`` all-gathers, ``4 L``
  reduce-scatters and ``L`` all-reduces a step, over the tensor-parallel group;
* data parallelism: the layout's gradient and parameter collectives
  (:mod:`distlib.train.layout`), and one all-reduce of the loss, over the
  data-parallel group.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from .._check import check_int
from ..engines.algorithms import allreduce
from ..engines.comm import CountingComm, SubComm
from ..walls import ZERO_STAGES
from .adam import Adam
from .data import global_batch, local_batch
from .layout import Ledger, forward_backward, make_layout
from .model import Config, init_units, shard_unit, unit_specs
from .sequence import SequenceParallel
from .results import RankReport

__all__ = ["groups", "train_rank", "main"]


def groups(rank: int, dp: int, tp: int) -> tuple:
    """``(dp_rank, tp_rank, dp_group, tp_group)`` of world rank ``rank``: rank ``d * tp + t`` is ``(d, t)``.

    Tensor-parallel groups are runs of neighbouring ranks (on a real
    machine, the GPUs of one node); a data-parallel group takes one rank
    of each.

    >>> groups(5, 2, 4)
    (1, 1, [1, 5], [4, 5, 6, 7])
    """
    dp_rank, tp_rank = divmod(rank, tp)
    return dp_rank, tp_rank, [d * tp + tp_rank for d in range(dp)], [dp_rank * tp + t for t in range(tp)]


def _checksum_part(layout, specs, tp_rank: int) -> float:
    """This rank's share of the sum of every parameter: its chunks, without the replicated copies off ``tp_rank`` 0."""
    total = 0.0
    for k, spec in enumerate(specs):
        start, values = layout.owned(k)
        keep = 1.0 - spec.replicated_mask() if tp_rank else np.ones(spec.size)
        total += float(np.sum(values * keep[start : start + len(values)]))
    return total


def train_rank(comm, *, dp: int, tp: int, zero: int, steps: int, seed: int, sp: bool = False,
               config: Config = Config(), adam: Adam = Adam(), say=None) -> RankReport:  # fmt: skip
    """Train on this rank of ``comm`` for ``steps`` steps; this rank's report.

    Every rank of ``comm`` calls it with the same arguments (SPMD).

    Parameters
    ----------
    comm : Comm
        The world: ``dp * tp`` ranks (MPI under ``mpiexec``; threads in tests).
    dp, tp : int
        Data-parallel and tensor-parallel ranks (:func:`groups` places them).
    zero : int
        ZeRO stage, 0 to 3 (:mod:`distlib.train.layout`).
    steps, seed : int
        Steps to train; the seed of the parameters and of the data.
    sp : bool
        Sequence parallelism over the tensor-parallel group (``tp`` above 1,
        dividing ``config.seq``): :class:`~distlib.train.model.SequenceParallel`.
    config, adam
        The model's sizes and the optimizer (the defaults are the book's).
    say : callable, optional
        Called with a progress line after each step.

    Returns
    -------
    RankReport

    Raises
    ------
    ValueError
        ``comm`` does not have ``dp * tp`` ranks, an argument is out of range, or ``sp`` without ``tp``
        above 1 dividing the sequence.

    Examples
    --------
    >>> from distlib.engines.comm import run_threads
    >>> one, two = (run_threads(lambda c: train_rank(c, dp=p, tp=1, zero=p - 1, steps=2, seed=0), p)[0] for p in (1, 2))
    >>> abs(one.losses[-1] - two.losses[-1]) < 1e-12, one.comm_bytes, two.comm_bytes > 0
    (True, 0, True)
    >>> tp, sp = (run_threads(lambda c: train_rank(c, dp=1, tp=2, zero=0, steps=2, seed=0, sp=s), 2)[0] for s in (0, 1))
    >>> abs(sp.losses[-1] - one.losses[-1]) < 1e-12, sp.messages > tp.messages
    (True, True)
    """
    dp, tp, steps = (check_int(n, v, minimum=1) for n, v in (("dp", dp), ("tp", tp), ("steps", steps)))
    zero = check_int("zero", zero, minimum=min(ZERO_STAGES), maximum=max(ZERO_STAGES))
    seed = check_int("seed", seed, minimum=0)
    if comm.size != dp * tp:
        raise ValueError(f"dp * tp must be the number of ranks of comm ({comm.size}), got {dp} * {tp}")
    if sp and (tp == 1 or config.seq % tp):
        raise ValueError(f"sp needs tp above 1 dividing the sequence ({config.seq}), got tp {tp}")
    counted = CountingComm(comm)
    dp_rank, tp_rank, dp_group, tp_group = groups(comm.rank, dp, tp)
    dp_comm, tp_comm = SubComm(counted, dp_group), SubComm(counted, tp_group)
    specs = unit_specs(config, tp)
    units = [shard_unit(full, flat, tp_rank, tp) for full, flat in zip(unit_specs(config), init_units(config, seed))]
    ledger = Ledger()
    layout = make_layout(zero, specs, units, dp_comm, adam=adam, ledger=ledger)
    del units
    reduce = (lambda buf: allreduce(tp_comm, buf)) if tp > 1 and not sp else None
    seq = SequenceParallel(tp_comm) if sp else None
    losses, seconds = [], []
    for step in range(1, steps + 1):
        start = time.perf_counter()
        tokens, targets = local_batch(*global_batch(seed, step - 1, seq=config.seq, vocab=config.vocab), dp_rank, dp)
        loss = np.array([forward_backward(layout, config, tokens, targets, reduce=reduce, sp=seq)])
        layout.update(step)
        allreduce(dp_comm, loss)  # the global batch's loss: the mean of the ranks' means
        losses.append(float(loss[0] / dp))
        seconds.append(time.perf_counter() - start)
        if say is not None:
            say(f"step {step}/{steps}  loss {losses[-1]:.6f}  {seconds[-1] * 1e3:.1f} ms")
    return RankReport(rank=comm.rank, dp_rank=dp_rank, tp_rank=tp_rank, losses=losses,
                      checksum_part=_checksum_part(layout, specs, tp_rank), state_bytes=ledger.peak,
                      state_parts=ledger.at_peak, comm_bytes=counted.bytes_sent, messages=counted.messages,
                      step_seconds=seconds, local_params=sum(s.size for s in specs))  # fmt: skip


def main(argv=None) -> None:
    """Entry point of one MPI rank (arguments already checked by the launching side)."""
    from ..engines.mpi import world
    from ..engines.report import emit

    parser = argparse.ArgumentParser(prog="python -m distlib.train.worker")
    for name in ("dp", "tp", "zero", "steps", "seed"):
        parser.add_argument(f"--{name}", type=int, required=True)
    parser.add_argument("--sp", type=int, default=0)
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)
    comm = world()
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if comm.rank == 0 else None
    emit(train_rank(comm, dp=ns.dp, tp=ns.tp, zero=ns.zero, steps=ns.steps, seed=ns.seed, sp=bool(ns.sp),
                    say=say))  # fmt: skip


if __name__ == "__main__":
    main()
