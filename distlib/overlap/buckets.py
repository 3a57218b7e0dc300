"""Gradients and the buckets DDP packs them into: per-layer sizes, PyTorch's packing rule.

:func:`gradient_profile` splits a model's gradient bytes over its layers (in
backward order); :func:`bucket_gradients` packs them into buckets of a given
capacity, by PyTorch DistributedDataParallel's rule or by a first-fit one.
:mod:`distlib.overlap.ddp` prices and schedules the buckets. Re-exported by
:mod:`distlib.overlap`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._check import check_choice, check_int, check_real
from .schedule import _times

__all__ = ["DDP_BUCKET_BYTES", "DDP_FIRST_BUCKET_BYTES", "Bucket", "bucket_gradients", "gradient_profile"]

#: PyTorch DDP's default bucket capacity, ``bucket_cap_mb=25`` MiB
#: (``_DEFAULT_BUCKET_CAP_MB * 1024 * 1024`` in ``torch/nn/parallel/distributed.py``).
DDP_BUCKET_BYTES = 25 * 2**20
#: PyTorch DDP's default capacity of the first bucket, 1 MiB
#: (``torch.distributed._DEFAULT_FIRST_BUCKET_BYTES`` = 1048576).
DDP_FIRST_BUCKET_BYTES = 2**20


class Bucket(NamedTuple):
    """Consecutive layers (in backward order) whose gradients travel in one all-reduce."""

    index: int
    layers: tuple
    n_bytes: float
    capacity: float


def _bucket_args(grad_bytes, bucket_bytes, first_bucket_bytes, rule):
    g = _times("grad_bytes", grad_bytes)
    cap = check_real("bucket_bytes", bucket_bytes, minimum=0, strict_min=True)
    first = cap if first_bucket_bytes is None else check_real(
        "first_bucket_bytes", first_bucket_bytes, minimum=0, strict_min=True)
    check_choice("rule", rule, ["ddp", "fit"])
    return g, cap, first


def bucket_gradients(grad_bytes, *, bucket_bytes, first_bucket_bytes=None, rule="ddp") -> tuple:
    """Pack per-layer gradients, in backward order, into buckets of a given capacity.

    Parameters
    ----------
    grad_bytes : array_like, shape (L,)
        Bytes of each layer's gradients, in the order they become ready.
    bucket_bytes : float
        Capacity of a bucket, bytes (> 0). PyTorch DDP's default is
        ``DDP_BUCKET_BYTES`` (25 MiB).
    first_bucket_bytes : float, optional
        Capacity of the first bucket only (default: ``bucket_bytes``). DDP
        uses 1 MiB (``DDP_FIRST_BUCKET_BYTES``) when ``bucket_cap_mb`` is
        left at its default.
    rule : {"ddp", "fit"}
        ``"ddp"`` is PyTorch's rule (``compute_bucket_assignment_by_size``
        in ``torch/csrc/distributed/c10d/reducer.cpp``): add the gradient to
        the open bucket, *then* close the bucket if it holds ``>= capacity``
        bytes. A bucket may therefore overshoot its capacity by up to one
        gradient. ``"fit"`` closes the open bucket *before* a gradient that
        would push it over capacity, so only a gradient larger than the
        capacity makes a bucket overshoot (it then travels alone).

    Returns
    -------
    tuple of Bucket
        In order; every layer appears exactly once, layers stay in order.

    Examples
    --------
    Five gradients of 40, 40, 40, 100 and 8 bytes with a 100-byte capacity
    (the same grouping ``torch.distributed._compute_bucket_assignment_by_size``
    returns):

    >>> [b.layers for b in bucket_gradients([40, 40, 40, 100, 8], bucket_bytes=100)]
    [(0, 1, 2), (3,), (4,)]
    >>> [b.layers for b in bucket_gradients([40, 40, 40, 100, 8], bucket_bytes=100, rule="fit")]
    [(0, 1), (2,), (3,), (4,)]
    >>> [b.n_bytes for b in bucket_gradients([40, 40, 40, 100, 8], bucket_bytes=1000, first_bucket_bytes=40)]
    [40.0, 188.0]
    """
    g, cap, first = _bucket_args(grad_bytes, bucket_bytes, first_bucket_bytes, rule)
    return _bucket(g, cap, first, rule)


def _bucket(g: np.ndarray, cap: float, first: float, rule: str) -> tuple:
    buckets = []
    layers: list = []
    size = 0.0
    limit = first
    for i, x in enumerate(g.tolist()):
        if rule == "fit" and layers and size + x > limit:
            buckets.append(Bucket(len(buckets), tuple(layers), size, limit))
            layers, size, limit = [], 0.0, cap
        layers.append(i)
        size += x
        if rule == "ddp" and size >= limit:
            buckets.append(Bucket(len(buckets), tuple(layers), size, limit))
            layers, size, limit = [], 0.0, cap
    if layers:
        buckets.append(Bucket(len(buckets), tuple(layers), size, limit))
    return tuple(buckets)



# ---------------------------------------------------------------------------
# gradient-size profiles

#: GPT-2 small: the token embedding (50257 x 768, tied with the output layer)
#: is 38.6 M of 124.4 M parameters, about 31 %.
EMBEDDING_FRACTION = 0.31


def gradient_profile(total_bytes, n_layers, *, profile="uniform") -> np.ndarray:
    """Split a model's gradient bytes over ``n_layers`` layers, in backward order.

    ``"uniform"``: equal shares. ``"embedding"``: the last layer to finish
    its backward (the token embedding, at the input of the network) holds
    ``EMBEDDING_FRACTION`` of the bytes, as in GPT-2 small, and the others
    share the rest equally; its all-reduce is the one that can never hide.

    Examples
    --------
    >>> gradient_profile(1200, 3).tolist()
    [400.0, 400.0, 400.0]
    >>> float(gradient_profile(1000, 4, profile="embedding")[-1])
    310.0
    """
    total = check_real("total_bytes", total_bytes, minimum=0)
    n = check_int("n_layers", n_layers, minimum=1)
    check_choice("profile", profile, ["uniform", "embedding"])
    if profile == "uniform" or n == 1:
        return np.full(n, total / n)
    out = np.full(n, total * (1 - EMBEDDING_FRACTION) / (n - 1))
    out[-1] = total * EMBEDDING_FRACTION
    return out
