"""The trainer's overlap measured across two mini-cluster nodes, beside what chapters 8 and 10's timelines predict.

:func:`measure_overlap` runs the one rank program (:mod:`distlib.train.rank`) on a fresh two-node mini cluster
whose link is throttled, one rank a node, alternately blocking (``--overlap none``) and overlapped, and puts
beside the measured steps the step the book's timelines predict for the same sizes, link and measured compute:

``"buckets"`` (DDP, ``--dp 2``, every unit a bucket of its own)
    :func:`distlib.overlap_timeline` (chapter 8): each unit's backward time (measured, the blocking runs'),
    each unit's all-reduce at the link's rate, one at a time on one channel; with ``overlap=False`` the same
    all-reduces after the backward pass.
``"zero3"`` (ZeRO-3, ``--dp 2 --zero 3``, ``--overlap prefetch,buckets``: FSDP's default)
    :func:`distlib.overlap.zero.zero3_timeline` (chapter 10): the units' mean forward and backward times,
    a mean unit's all-gather and reduce-scatter at the link's rate, prefetch 1 against 0.
``"pp"`` (two pipeline stages, ``--pp 2 --microbatches 4``, 1F1B, ``--overlap pp``)
    :func:`distlib.pipeline_schedule` (chapter 12) with each stage's measured forward and backward time per
    microbatch and each activation's or gradient's transfer at the link's rate, its receive posted as the op
    starts (``posted=0``, blocking) against one op ahead (``posted=1``).
``"tp"`` (tensor parallelism, ``--tp 2``, ``--overlap tp``)
    Chapter 11's rule, Korthikanti et al. (2022) section 6.2: each block's two backward all-reduces
    (``tokens x hidden`` float64 values each, at the link's rate) hide under the weight gradient computed
    beside them (``w1``'s; ``wq``, ``wk`` and ``wv``'s), so each saves ``min(all-reduce, weight gradient)``.
    A weight gradient's time is its share of the block's backward FLOPs times the block's measured
    backward compute (the measured backward less its two blocking all-reduces).

The prediction is the measured blocking step minus the seconds the timeline says overlap saves (the same
way :mod:`distlib.train.ring_overlap` predicts ring attention's), so what the timelines leave out of both
modes (Python's own time, the optimizer) cancels. ``benchmarks/bench_train.py --overlap`` prints them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._check import check_choice, check_int, check_real

__all__ = ["OVERLAP_BENCH_CONFIG", "MEASURED_OVERLAPS", "WORD_NAMES", "OverlapRun", "measure_overlap",
           "tp_backward_flops"]

OVERLAP_BENCH_CONFIG = dict(hidden=128, layers=4, heads=4, seq=64, batch=8, vocab=64)
"""A model whose blocks' backward passes and gradients' transfers over a 1 Gbit/s link are of the same order:
1.6 MB of float64 gradient a block, tens of milliseconds of NumPy a backward pass."""
MEASURED_OVERLAPS = ("buckets", "zero3", "tp", "pp")
_SETUPS = {  # kind -> (layout keywords, --overlap, bucket MiB)
    "buckets": (dict(dp=2), ("buckets",), 1e-3),
    "zero3": (dict(dp=2, zero=3), ("prefetch", "buckets"), 25.0),
    "tp": (dict(tp=2), ("tp",), 25.0),
    "pp": (dict(pp=2, microbatches=4), ("pp",), 25.0),
}


@dataclass(frozen=True)
class OverlapRun:
    """One overlap's step across two nodes, blocking and overlapped, beside the timeline's prediction.

    Steps are the medians over every run's steps after the first (the slowest rank's time of each step).
    """

    kind: str
    link_gbit: float
    engine: str
    blocking_seconds: float
    overlapped_seconds: float
    predicted_overlapped_seconds: float
    predicted_saving_seconds: float
    compute_seconds: float
    """Per step, the units' forward and backward compute (the blocking runs' means, one rank)."""
    comm_seconds: float
    """Per step, the collectives the overlap moves, at the link's rate (the timeline's)."""
    wait_seconds: float
    """Per step, what the overlapped runs still waited for their background collectives (the median)."""
    losses_equal: bool

    @property
    def measured_saving(self) -> float:
        return self.blocking_seconds - self.overlapped_seconds

    @property
    def prediction_error(self) -> float:
        """``|measured - predicted| / measured`` of the overlapped step."""
        return abs(self.overlapped_seconds - self.predicted_overlapped_seconds) / self.overlapped_seconds

    def words(self) -> dict:
        """The run's numbers as a chapter shows them: ``{name: text}`` (:data:`WORD_NAMES`)."""
        from ..fmt import fmt_seconds

        return {"blocking": fmt_seconds(self.blocking_seconds), "overlapped": fmt_seconds(self.overlapped_seconds),
                "predicted": fmt_seconds(self.predicted_overlapped_seconds),
                "saved": fmt_seconds(self.measured_saving), "saved_pred": fmt_seconds(self.predicted_saving_seconds),
                "error": f"{self.prediction_error:.0%}", "compute": fmt_seconds(self.compute_seconds),
                "comm": fmt_seconds(self.comm_seconds), "wait": fmt_seconds(self.wait_seconds),
                "same": "the same" if self.losses_equal else "different"}  # fmt: skip

    def lines(self) -> str:
        """Two lines for a notebook cell's output."""
        w = self.words()
        return (f"{self.kind} on {self.engine}, two nodes at {self.link_gbit:g} Gbit/s: step blocking {w['blocking']}, "
                f"overlapped {w['overlapped']}, predicted {w['predicted']} (off by {w['error']})\n"
                f"saved {w['saved']}, predicted {w['saved_pred']}; compute {w['compute']} and its communication "
                f"{w['comm']} a step; " + ("" if self.kind == "pp" else f"still waited {w['wait']}; ")
                + f"losses {w['same']} as blocking")


WORD_NAMES = ("blocking", "overlapped", "predicted", "saved", "saved_pred", "error", "compute", "comm", "wait", "same")
"""The names :meth:`OverlapRun.words` gives, which a chapter glues (as ``"(not measured here)"`` where it cannot)."""


def _run(layout, config, cluster, *, steps, engine, overlap, timeout):
    from ..engines.launch import run_mpi, run_torch
    from ..engines.report import read_all
    from .rank import run_argv
    from .results import RankReport, TrainResult

    args = run_argv(layout, steps=steps, seed=0, engine=engine, config=config, overlap=overlap)
    if engine == "gloo":
        result = run_torch("distlib.train.rank:main", layout.ranks, args=args, timeout=timeout, cluster=cluster)
    else:
        result = run_mpi("distlib.train.rank", layout.ranks, args=args, timeout=timeout, cluster=cluster)
    return TrainResult.from_ranks(read_all(result, RankReport), layout=layout, seed=0, run_id=result.run_id)


def _pp_saving(layout, config, reports, bandwidth) -> tuple:
    """``(saving, transfer seconds per step)`` of the pipeline: receives posted as each op starts against one op
    ahead, from each stage's measured forward and backward seconds per microbatch."""
    from ..pipeline_schedule import pipeline_schedule

    m = layout.microbatches
    per_stage = [np.mean([r.unit_seconds for r in reports if r.pp_rank == s], axis=0).sum(axis=1) / m
                 for s in range(layout.pp)]  # fmt: skip
    message = (config.batch // m) * config.seq * config.hidden * 8 / bandwidth
    times = dict(forward_time=[t[0] for t in per_stage], backward_time=[t[1] for t in per_stage],
                 message_time=message)  # fmt: skip
    off, on = (pipeline_schedule(layout.schedule, layout.pp, m, posted=k, **times).iteration_time for k in (0, 1))
    return off - on, 2 * m * (layout.pp - 1) * message


def _predicted_saving(kind, config, units, link_gbit) -> tuple:
    """``(saving, comm seconds per step)`` of the timeline for ``kind``, from the units' measured seconds."""
    from ..collectives import collective_time
    from ..overlap.schedule import overlap_timeline
    from ..overlap.zero import zero3_timeline
    from ..units import gbit_to_bytes_per_s
    from .model import unit_specs

    bandwidth = gbit_to_bytes_per_s(link_gbit)
    nbytes = np.array([spec.size * 8 for spec in unit_specs(config)], dtype=float)
    forward, backward = np.asarray(units[0]), np.asarray(units[1])
    if kind == "buckets":  # every unit its own bucket, reduced last unit first
        comm = collective_time("allreduce", nbytes[::-1], 2, alpha=0.0, bandwidth=bandwidth)
        args = dict(forward_time=float(forward.sum()))
        on = overlap_timeline(backward[::-1], comm, overlap=True, **args).iteration_time
        off = overlap_timeline(backward[::-1], comm, overlap=False, **args).iteration_time
        return off - on, float(np.sum(comm))
    if kind == "tp":
        return _tp_saving(config, backward, bandwidth)
    n = len(nbytes)
    g = float(collective_time("allgather", nbytes.mean(), 2, alpha=0.0, bandwidth=bandwidth))
    r = float(collective_time("reduce_scatter", nbytes.mean(), 2, alpha=0.0, bandwidth=bandwidth))
    f, b = float(forward.mean()), float(backward.mean())
    off = zero3_timeline(n, f, b, g, r, prefetch=0).step_time
    on = zero3_timeline(n, f, b, g, r, prefetch=1).step_time
    return off - on, n * (2 * g + r)


def tp_backward_flops(config, tp: int = 2) -> dict:
    """One block's backward matmul FLOPs on one of ``tp`` ranks, by part: ``"w1"`` and ``"qkv"`` (the weight
    gradients that hide the two all-reduces) and ``"total"`` (every backward matmul, attention's included).

    Each weight ``W`` (``m x n``) of the forward costs ``2 T m n``; its backward twice that (the input's
    gradient and the weight's); the attention products ``4 b s^2 a`` forward, twice that backward.

    >>> from distlib.train.model import Config
    >>> f = tp_backward_flops(Config(hidden=4, heads=2, seq=2, batch=1, layers=1, vocab=8), tp=1)
    >>> f["w1"], f["qkv"], f["total"]   # T = 2, h = 4, ffn = 16: 2 (192 + 64 + 256 + 256) + 2 * 4 * 1 * 2**2 * 4
    (256, 192, 1664)
    """
    tokens, h, f, a = config.batch * config.seq, config.hidden, config.ffn // tp, config.hidden // tp
    w1 = 2 * tokens * h * f
    qkv = 3 * 2 * tokens * h * a
    forward = qkv + 2 * tokens * a * h + w1 + 2 * tokens * f * h
    attention = 4 * config.batch * config.seq**2 * a
    return {"w1": w1, "qkv": qkv, "total": 2 * forward + 2 * attention}


def _tp_saving(config, backward, bandwidth) -> tuple:
    from ..collectives import collective_time

    ar = float(collective_time("allreduce", config.batch * config.seq * config.hidden * 8, 2, alpha=0.0,
                               bandwidth=bandwidth))  # fmt: skip
    flops = tp_backward_flops(config, 2)
    saving = 0.0
    for block in backward[1:-1]:  # the blocks (not the embeddings or the head)
        compute = max(block - 2 * ar, 0.0)  # the measured backward holds its two blocking all-reduces
        for part in ("w1", "qkv"):
            saving += min(ar, compute * flops[part] / flops["total"])
    return saving, (len(backward) - 2) * 2 * ar


def measure_overlap(kind: str = "buckets", *, link_gbit: float = 1.0, steps: int = 5, repeats: int = 2,
                    engine: str = "gloo", config=None, timeout: float = 300.0) -> OverlapRun:  # fmt: skip
    """Run ``kind`` (:data:`MEASURED_OVERLAPS`) across a fresh two-node mini cluster (as root), blocking and
    overlapped, ``repeats`` runs each, alternating; the link throttled to ``link_gbit`` Gbit/s per direction.

    Raises
    ------
    distlib.minicluster.MiniClusterUnavailable
        Not root, or no network namespaces here (the message says why).
    """
    from ..layout import Layout
    from ..minicluster import mini_cluster
    from .model import Config
    from .overlap import Overlap

    kind = check_choice("kind", kind, MEASURED_OVERLAPS)
    steps, repeats = check_int("steps", steps, minimum=2), check_int("repeats", repeats, minimum=1)
    link_gbit = check_real("link_gbit", link_gbit, minimum=0.01, maximum=100)
    engine = check_choice("engine", engine, ("gloo", "mpi"))
    config = Config(**OVERLAP_BENCH_CONFIG) if config is None else config
    degrees, kinds, bucket_mb = _SETUPS[kind]
    layout = Layout(**degrees)
    modes = {"blocking": Overlap(), "overlapped": Overlap(kinds, bucket_mb=bucket_mb)}
    runs = {mode: [] for mode in modes}
    with mini_cluster(2, link_gbit=link_gbit) as cluster:
        for _ in range(repeats):
            for mode, overlap in modes.items():
                runs[mode].append(_run(layout, config, cluster, steps=steps, engine=engine, overlap=overlap,
                                       timeout=timeout))  # fmt: skip
    step = {mode: float(np.median([s for r in rs for s in r.step_seconds[1:]])) for mode, rs in runs.items()}
    blocking_ranks = [rank for r in runs["blocking"] for rank in r.ranks]
    units = np.mean([rank.unit_seconds for rank in blocking_ranks], axis=0)
    if kind == "pp":
        from ..units import gbit_to_bytes_per_s

        saving, comm = _pp_saving(layout, config, blocking_ranks, gbit_to_bytes_per_s(link_gbit))
        units = units * layout.pp  # every stage's compute, as the other kinds count one rank's whole model
    else:
        saving, comm = _predicted_saving(kind, config, units, link_gbit)
    waits = [w for r in runs["overlapped"] for w in r.overlap_wait_seconds[1:]]
    first = runs["blocking"][0].losses
    same = all(max(abs(a - b) for a, b in zip(r.losses, first)) < 1e-9 for rs in runs.values() for r in rs)
    return OverlapRun(kind=kind, link_gbit=link_gbit, engine=engine, blocking_seconds=step["blocking"],
                      overlapped_seconds=step["overlapped"], predicted_overlapped_seconds=step["blocking"] - saving,
                      predicted_saving_seconds=saving, compute_seconds=float(units.sum()), comm_seconds=comm,
                      wait_seconds=float(np.median(waits)), losses_equal=same)  # fmt: skip
