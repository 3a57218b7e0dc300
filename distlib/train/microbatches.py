"""Microbatches: a batch cut in order, and one process accumulating their gradients (what a pipeline reproduces).

A pipeline runs a step's batch as ``m`` microbatches, sums their gradients
and takes one Adam step after the last one (the *flush*). This module is
the home of that arithmetic, and both the pipeline's ranks and the
one-process reference below use it:

* :func:`split_microbatches` cuts a batch into ``m`` consecutive pieces
  of equal size;
* the step's gradient is the sum of the microbatches' gradients, added in
  the order their backward passes run, divided by ``m``
  (:func:`scale_accumulated`): each microbatch's loss is a mean over its
  own tokens, so this equals the gradient of the whole batch's mean loss
  (Megatron-LM divides each microbatch's loss by the number of
  microbatches for the same reason);
* the step's loss is the mean of the microbatches' mean losses
  (:func:`mean_loss`), again the whole batch's mean.

In exact arithmetic that is the one-process step of
:func:`distlib.train.rank.train_rank` (one rank). In float64 it is
not bit for bit: the sums over tokens inside the matmuls run over other
groupings, so the losses differ from the whole batch's in the last bits
(the tests measure it). :func:`accumulate_run` therefore is the reference
a pipeline is checked against, not the whole-batch run: a pipeline stage
runs the same microbatches through the same units and adds their
gradients the same way, so what is left between the two is only the order
of additions (a schedule's order of backward passes, the data-parallel and
tensor-parallel sums), not a different computation.
"""

from __future__ import annotations

import math

import numpy as np

from .._check import check_int
from .adam import Adam
from .data import global_batch
from .model import Config, init_units, loss_and_grads

__all__ = ["split_microbatches", "mean_loss", "scale_accumulated", "accumulate_run"]


def split_microbatches(tokens, targets, m: int) -> list:
    """``m`` consecutive ``(tokens, targets)`` pieces of a batch, in order, of ``len(tokens) / m`` sequences each.

    Examples
    --------
    >>> t, y = global_batch(0, 0)
    >>> parts = split_microbatches(t, y, 4)
    >>> len(parts), parts[0][0].shape, bool((np.concatenate([p for p, _ in parts]) == t).all())
    (4, (3, 16), True)
    """
    m = check_int("microbatches", m, minimum=1)
    if len(tokens) % m:
        raise ValueError(f"microbatches must divide the batch of {len(tokens)} sequences, got {m}")
    n = len(tokens) // m
    return [(tokens[j * n : (j + 1) * n], targets[j * n : (j + 1) * n]) for j in range(m)]


def mean_loss(losses) -> float:
    """The step's loss: the mean of the microbatches' mean losses (given in microbatch order).

    >>> mean_loss([1.0, 2.0, 4.5])
    2.5
    """
    losses = [float(x) for x in losses]
    if not losses:
        raise ValueError("losses must hold at least one microbatch's loss, got none")
    return math.fsum(losses) / len(losses)


def scale_accumulated(grad, m: int) -> None:
    """Turn the sum of ``m`` microbatches' gradients, in place, into the gradient of the batch's mean loss.

    >>> g = np.array([3.0, 6.0]); scale_accumulated(g, 3); g.tolist()
    [1.0, 2.0]
    """
    m = check_int("microbatches", m, minimum=1)
    grad /= m


def accumulate_run(*, microbatches: int, steps: int, seed: int, config: Config = Config(), adam: Adam = Adam(),
                   batch: int | None = None) -> tuple:  # fmt: skip
    """One process, whole model, each step's batch as ``microbatches`` accumulated pieces: ``(losses, checksum)``.

    Each step: the batch of :func:`~distlib.train.data.global_batch` cut by
    :func:`split_microbatches`; for each microbatch in order, its loss and
    gradient (:func:`~distlib.train.model.loss_and_grads`), added into one
    flat gradient that starts at zero; :func:`scale_accumulated`; one Adam
    step on the flat parameter vector.

    Parameters
    ----------
    microbatches : int
        ``m``; it must divide the batch.
    steps, seed : int
        Steps to train; the seed of the parameters and of the data.
    config, adam
        The model's sizes and the optimizer (the defaults are the book's).
    batch : int, optional
        Sequences per step (default :data:`~distlib.train.data.GLOBAL_BATCH`).

    Returns
    -------
    tuple
        ``losses`` (one per step, :func:`mean_loss` of the microbatches) and
        ``checksum`` (the float64 sum of every parameter after the last step).

    Examples
    --------
    One microbatch is the whole batch; four give the same numbers to rounding:

    >>> c = Config(layers=1)
    >>> one, four = (accumulate_run(microbatches=m, steps=2, seed=0, config=c) for m in (1, 4))
    >>> max(abs(a - b) for a, b in zip(one[0], four[0])) < 1e-12, one[0][1] < one[0][0]
    (True, True)
    """
    m = check_int("microbatches", microbatches, minimum=1)
    steps = check_int("steps", steps, minimum=1)
    seed = check_int("seed", seed, minimum=0)
    units = init_units(config, seed)
    sizes = [len(u) for u in units]
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    weights = np.concatenate(units)
    views = [weights[bounds[k] : bounds[k + 1]] for k in range(len(sizes))]
    mom, vel = np.zeros_like(weights), np.zeros_like(weights)
    losses = []
    for step in range(1, steps + 1):
        kwargs = {} if batch is None else {"batch": batch}
        tokens, targets = global_batch(seed, step - 1, seq=config.seq, vocab=config.vocab, **kwargs)
        grad, step_losses = np.zeros_like(weights), []
        for mb_tokens, mb_targets in split_microbatches(tokens, targets, m):
            loss, grads = loss_and_grads(config, views, mb_tokens, mb_targets)
            step_losses.append(loss)
            for k, g in enumerate(grads):
                grad[bounds[k] : bounds[k + 1]] += g
        scale_accumulated(grad, m)
        adam.update(weights, grad, mom, vel, step=step)
        losses.append(mean_loss(step_losses))
    return losses, math.fsum(float(np.sum(v)) for v in views)
