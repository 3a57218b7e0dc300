"""The trainer's synthetic data: a deterministic token stream drawn from a seed.

Tokens follow a fixed random successor table most of the time (``follow``,
80 %) and jump to a random token otherwise, so there is something to learn
and the loss falls within a few steps. Step ``t``'s global batch depends on
``(seed, t)`` only: every rank draws the same batch and keeps its own
sequences, so data parallelism needs no data to be sent.
"""

from __future__ import annotations

import numpy as np

from .._check import check_int, check_real

__all__ = ["GLOBAL_BATCH", "global_batch", "local_batch"]

GLOBAL_BATCH = 12
"""Sequences per step, for every layout: 1, 2, 3, 4, 6 or 12 data-parallel ranks split it evenly."""


def global_batch(seed: int, step: int, *, batch: int = GLOBAL_BATCH, seq: int = 16, vocab: int = 64,
                 follow: float = 0.8):
    """``(tokens, targets)`` of step ``step``: ``batch`` sequences of ``seq`` tokens, ``targets`` shifted by one.

    Examples
    --------
    >>> tokens, targets = global_batch(0, 3)
    >>> tokens.shape, bool((tokens[:, 1:] == targets[:, :-1]).all())
    ((12, 16), True)
    >>> bool((global_batch(0, 3)[0] == tokens).all()), bool((global_batch(0, 4)[0] == tokens).all())
    (True, False)
    """
    seed = check_int("seed", seed, minimum=0)
    step = check_int("step", step, minimum=0)
    batch, seq, vocab = (check_int(n, v, minimum=1) for n, v in (("batch", batch), ("seq", seq), ("vocab", vocab)))
    follow = check_real("follow", follow, minimum=0, maximum=1)
    successor = np.random.default_rng(seed).permutation(vocab)  # the rule, the same at every step
    rng = np.random.default_rng([seed, step])
    stream = np.empty((batch, seq + 1), dtype=np.int64)
    stream[:, 0] = rng.integers(0, vocab, batch)
    for i in range(1, seq + 1):
        keep = rng.random(batch) < follow
        stream[:, i] = np.where(keep, successor[stream[:, i - 1]], rng.integers(0, vocab, batch))
    return stream[:, :-1], stream[:, 1:]


def local_batch(tokens, targets, dp_rank: int, dp: int):
    """Data-parallel rank ``dp_rank``'s consecutive ``batch / dp`` sequences of a global batch.

    >>> t, y = global_batch(0, 0)
    >>> local_batch(t, y, 2, 3)[0].shape
    (4, 16)
    """
    dp = check_int("dp", dp, minimum=1)
    dp_rank = check_int("dp_rank", dp_rank, minimum=0, maximum=dp - 1)
    if len(tokens) % dp:
        raise ValueError(f"dp must divide the global batch of {len(tokens)} sequences, got {dp}")
    n = len(tokens) // dp
    return tokens[dp_rank * n : (dp_rank + 1) * n], targets[dp_rank * n : (dp_rank + 1) * n]
