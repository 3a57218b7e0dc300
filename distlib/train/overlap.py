"""Which communication the trainer runs under its computation: ``--overlap``, ``--bucket-mb``, ``--prefetch-depth``.

Chapter 8 teaches that a collective costs only what the computation beside
it does not hide. The trainer hides four kinds, each switched on by name so
that its effect is measured against the same run with it off, never a
silent default (``--overlap none``, the default, is the blocking trainer):

``prefetch`` (ZeRO-3)
    The all-gather of the next unit's parameters (in the order the step
    uses them, forward and backward) starts while the current unit
    computes; ``--prefetch-depth 2`` keeps two ahead. Each gathered unit in
    flight is held in full, so the peak of ``state_bytes`` rises by up to
    ``depth`` units: FSDP2's ``reshard_after_forward`` trade, reported.
``buckets`` (DDP, ZeRO-1, 2 and 3)
    Gradients are reduced while the backward pass is still running. DDP and
    ZeRO-1 group whole units, last first, into buckets of at least
    ``--bucket-mb`` MiB (PyTorch DDP's ``bucket_cap_mb``, default 25) and
    start a bucket's all-reduce (DDP) or reduce-scatter (ZeRO-1) as soon as
    the last of its units has its final gradient; ZeRO-1 then shards Adam's
    moments bucket by bucket. ZeRO-2 and 3 already reduce-scatter each
    unit's gradient after its backward; with ``buckets`` that reduce-scatter
    runs under the next unit's backward, and the unit's whole gradient is
    held until it ends.
``tp`` (tensor parallelism, with or without sequence parallelism)
    In a block's backward, the all-reduce (or, with ``--sp``, the
    reduce-scatter) of an input gradient starts as soon as that gradient is
    computed and ends after the weight gradient's matmul, which needs no
    communication (Korthikanti et al. 2022, section 6.2; Megatron-LM's
    ``LinearWithGradAccumulationAndAsyncCommunication`` in
    ``megatron/core/tensor_parallel/layers.py`` starts it with
    ``async_op=True`` before the weight-gradient product).
``pp`` (pipeline stages)
    The receive of the next op's activations or gradient is posted before
    the current op computes, so the transfer runs under that compute; the
    sends were already non-blocking.

``all`` turns on every kind the layout has; naming a kind the layout does
not have (``prefetch`` without ``--zero 3``) is an error naming it. A kind
runs its collectives on a background thread
(:class:`distlib.engines.tagged.Background`) over the same ranks with tags
of their own (:class:`~distlib.engines.tagged.TaggedComm`), so every
overlapped run sends the same messages, reduces in the same order and gives
the same losses and parameters as the blocking run (ZeRO-1's buckets cut
its reduce-scatter differently: the sums agree to rounding).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._check import check_int, check_real

__all__ = ["OVERLAPS", "DEFAULT_BUCKET_MB", "MAX_PREFETCH_DEPTH", "Overlap", "parse_overlap", "overlap_problem",
           "fitting_overlaps", "plan_buckets"]

OVERLAPS = ("prefetch", "buckets", "tp", "pp")
"""What ``--overlap`` may name (comma-separated), besides ``none`` and ``all``."""
DEFAULT_BUCKET_MB = 25.0
"""PyTorch DDP's default ``bucket_cap_mb``."""
MAX_PREFETCH_DEPTH = 4


def parse_overlap(text: str):
    """``--overlap``'s words: ``"none"`` -> ``()``, ``"all"`` -> ``"all"``, a list -> the kinds in :data:`OVERLAPS` order.

    >>> parse_overlap("none"), parse_overlap("tp,buckets"), parse_overlap("all")
    ((), ('buckets', 'tp'), 'all')
    >>> parse_overlap("bucket")
    Traceback (most recent call last):
    ...
    ValueError: --overlap must be none, all, or a comma-separated list of prefetch, buckets, tp, pp; got 'bucket'
    """
    words = [w.strip() for w in str(text).split(",") if w.strip()]
    if words == ["none"]:
        return ()
    if words == ["all"]:
        return "all"
    if not words or any(w not in OVERLAPS for w in words):
        raise ValueError(f"--overlap must be none, all, or a comma-separated list of {', '.join(OVERLAPS)}; "
                         f"got {text!r}")  # fmt: skip
    return tuple(k for k in OVERLAPS if k in words)


def _has(kind: str, layout) -> str | None:
    """Why ``layout`` has nothing for ``kind`` to hide (``None``: it has)."""
    if kind == "prefetch" and (layout.zero != 3 or layout.replicas == 1):
        return "--overlap prefetch needs --zero 3 over more than one data-parallel rank (it prefetches ZeRO-3's " \
               "all-gathers)"
    if kind == "buckets" and layout.replicas == 1:
        return "--overlap buckets needs more than one data-parallel rank (--dp or --cp above 1): there is no " \
               "gradient to reduce"
    if kind == "tp" and layout.tp == 1:
        return "--overlap tp needs --tp above 1"
    if kind == "pp" and layout.pp == 1:
        return "--overlap pp needs --pp above 1"
    return None


def fitting_overlaps(layout) -> tuple:
    """The kinds ``layout`` has something for (what ``--overlap all`` turns on).

    >>> from distlib.layout import Layout
    >>> fitting_overlaps(Layout(dp=2, zero=3)), fitting_overlaps(Layout(tp=2, pp=2)), fitting_overlaps(Layout())
    (('prefetch', 'buckets'), ('tp', 'pp'), ())
    """
    return tuple(k for k in OVERLAPS if _has(k, layout) is None)


def overlap_problem(kinds, layout) -> str | None:
    """The first kind in ``kinds`` that ``layout`` has nothing for, as one line; ``None`` if all fit."""
    for kind in kinds:
        why = _has(kind, layout)
        if why:
            return why
    return None


@dataclass(frozen=True)
class Overlap:
    """A run's overlap: the kinds on (:data:`OVERLAPS`), DDP and ZeRO-1's bucket size, ZeRO-3's prefetch depth.

    >>> Overlap(("buckets",), bucket_mb=1.0).argv()
    ['--overlap', 'buckets', '--bucket-mb', '1.0']
    >>> Overlap().argv(), Overlap().words()
    ([], 'no overlap')
    """

    kinds: tuple = ()
    bucket_mb: float = DEFAULT_BUCKET_MB
    prefetch_depth: int = 1

    def __post_init__(self):
        kinds = tuple(self.kinds)
        bad = [k for k in kinds if k not in OVERLAPS]
        if bad:
            raise ValueError(f"overlap kinds must be among {', '.join(OVERLAPS)}; got {bad[0]!r}")
        object.__setattr__(self, "kinds", tuple(k for k in OVERLAPS if k in kinds))
        check_real("bucket_mb", self.bucket_mb, minimum=0, strict_min=True)
        check_int("prefetch_depth", self.prefetch_depth, minimum=1, maximum=MAX_PREFETCH_DEPTH)

    def __contains__(self, kind: str) -> bool:
        return kind in self.kinds

    @property
    def bucket_bytes(self) -> int:
        return max(1, int(self.bucket_mb * 2**20))

    @property
    def background(self) -> bool:
        """Whether a collective runs on the background thread (prefetch, buckets or tp)."""
        return bool({"prefetch", "buckets", "tp"} & set(self.kinds))

    def argv(self) -> list:
        """The flags a rank gets (none when nothing overlaps and the sizes are the defaults)."""
        out = ["--overlap", ",".join(self.kinds)] if self.kinds else []
        if self.bucket_mb != DEFAULT_BUCKET_MB:
            out += ["--bucket-mb", repr(float(self.bucket_mb))]
        if self.prefetch_depth != 1:
            out += ["--prefetch-depth", str(self.prefetch_depth)]
        return out

    def words(self) -> str:
        if not self.kinds:
            return "no overlap"
        extra = []
        if "buckets" in self:
            extra.append(f"buckets of {self.bucket_mb:g} MiB")
        if "prefetch" in self:
            extra.append(f"prefetch depth {self.prefetch_depth}")
        return "overlap " + "+".join(self.kinds) + (f" ({', '.join(extra)})" if extra else "")


def plan_buckets(sizes, bucket_bytes: int, itemsize: int = 8) -> list:
    """Units grouped into buckets as DDP groups parameters: last unit first, a bucket closed once it holds at least
    ``bucket_bytes``; each bucket ``(first, stop)``, a range of unit indices (contiguous in the flat vector).

    >>> plan_buckets([10, 10, 10, 10], 160)          # two units of 80 bytes a bucket, the last ones first
    [(2, 4), (0, 2)]
    >>> plan_buckets([10, 10, 10], 10**9)             # one bucket: reduced when the whole backward is done
    [(0, 3)]
    """
    bucket_bytes = check_int("bucket_bytes", bucket_bytes, minimum=1)
    out, stop, held = [], len(sizes), 0
    for k in range(len(sizes) - 1, -1, -1):
        held += sizes[k] * itemsize
        if held >= bucket_bytes or k == 0:
            out.append((k, stop))
            stop, held = k, 0
    return out


def bucket_mb_problem(value) -> str | None:
    """``--bucket-mb``'s range, as one line."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return f"--bucket-mb must be a number of MiB above 0, got {value!r}"
    return None
