"""Ring context parallelism's overlap, measured: the trainer across two mini-cluster nodes, overlapped and blocking.

:func:`measure_ring_overlap` runs the one rank program (:mod:`distlib.train.rank`) with ``--cp C`` (ring)
across a fresh two-node mini cluster whose link is throttled, once as the trainer runs it (each hop posted
under the block before, :class:`~distlib.train.context_parallel.ContextParallel`) and once blocking
(``--cp-blocking``), and puts the step the model predicts (:func:`distlib.context_parallel.ring_step_saving`)
beside them. The chapter "Context parallelism" and ``benchmarks/bench_context.py`` call it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._check import check_choice, check_int, check_real
from ..context_parallel import ring_step_saving

__all__ = ["RING_BENCH_CONFIG", "RingOverlapRun", "measure_ring_overlap"]


RING_BENCH_CONFIG = dict(seq=512, hidden=64, heads=4, layers=2, batch=4, vocab=64)
"""A model whose attention blocks take milliseconds in NumPy: 4 sequences of 512 tokens, 4 heads of 16, 2 layers."""


@dataclass(frozen=True)
class RingOverlapRun:
    """Ring CP's step across two nodes, overlapped and blocking, beside the step the model predicts.

    Times are the fastest step of each mode (the slowest rank's, first step left out) over its runs;
    ``predicted_overlapped_seconds`` is the blocking step minus the hops' hidden seconds
    (:func:`distlib.context_parallel.ring_step_saving`, from the blocking runs' measured attention seconds
    and each hop's float64 block at the link's rate).
    """

    cp: int
    link_gbit: float
    engine: str
    overlapped_seconds: float
    blocking_seconds: float
    predicted_overlapped_seconds: float
    hop_seconds: float
    block_bytes: int
    attention_seconds: float
    """One layer's attention compute on one rank per step, forward and backward (the blocking runs' mean)."""
    overlapped_attention_seconds: float
    """The same, in the overlapped runs (the hops' own work on the CPU can slow it)."""
    blocking_wait_seconds: float
    overlapped_wait_seconds: float
    """Per step and rank, the seconds spent waiting for the ring's messages, in each mode (the means)."""
    losses_equal: bool
    """Whether both modes gave the same losses (to 1e-12)."""

    @property
    def measured_ratio(self) -> float:
        """Blocking step over overlapped step, measured."""
        return self.blocking_seconds / self.overlapped_seconds

    @property
    def predicted_ratio(self) -> float:
        """The same ratio, the overlapped step predicted."""
        return self.blocking_seconds / self.predicted_overlapped_seconds


def _ring_run(layout, config, cluster, *, steps, engine, blocking, timeout):
    from ..engines.launch import run_mpi, run_torch
    from ..engines.report import read_all
    from .rank import run_argv
    from .results import RankReport, TrainResult

    args = run_argv(layout, steps=steps, seed=0, engine=engine, config=config) + (["--cp-blocking"] if blocking else [])
    if engine == "gloo":
        result = run_torch("distlib.train.rank:main", layout.ranks, args=args, timeout=timeout, cluster=cluster)
    else:
        result = run_mpi("distlib.train.rank", layout.ranks, args=args, timeout=timeout, cluster=cluster)
    return TrainResult.from_ranks(read_all(result, RankReport), layout=layout, seed=0, run_id=result.run_id)


def measure_ring_overlap(*, cp: int = 2, link_gbit: float = 0.2, steps: int = 4, repeats: int = 2,
                         engine: str = "gloo", config=None, timeout: float = 300.0) -> RingOverlapRun:
    """Run the trainer's ring CP across a fresh two-node mini cluster (as root), overlapped and blocking.

    ``cp / 2`` ranks a node, the link throttled to ``link_gbit`` per direction; the modes alternate,
    ``repeats`` runs each, so that a busy moment of the machine falls on both. gloo by default: its
    transport moves a non-blocking message while the rank computes; MPICH moves one between nodes only
    inside an MPI call unless its progress thread spins on a core of its own.

    Raises
    ------
    distlib.minicluster.MiniClusterUnavailable
        Not root, or no network namespaces here (the message says why).
    """
    from ..collectives import p2p_time
    from ..layout import Layout
    from ..minicluster import mini_cluster
    from ..units import gbit_to_bytes_per_s
    from .model import Config

    cp, steps = check_int("cp", cp, minimum=2), check_int("steps", steps, minimum=2)
    repeats = check_int("repeats", repeats, minimum=1)
    link_gbit = check_real("link_gbit", link_gbit, minimum=0.01, maximum=100)
    engine = check_choice("engine", engine, ("gloo", "mpi"))
    config = Config(**RING_BENCH_CONFIG) if config is None else config
    layout = Layout(cp=cp)
    runs = {True: [], False: []}
    with mini_cluster(2, link_gbit=link_gbit) as cluster:
        for _ in range(repeats):
            for blocking in (False, True):
                runs[blocking].append(_ring_run(layout, config, cluster, steps=steps, engine=engine,
                                                blocking=blocking, timeout=timeout))
    fastest = {mode: min(min(r.step_seconds[1:]) for r in rs) for mode, rs in runs.items()}
    per_step = {mode: {name: float(np.mean([getattr(r, name) for run in rs for r in run.ranks])) / steps
                       for name in ("attention_seconds", "attention_wait_seconds")} for mode, rs in runs.items()}
    attention = per_step[True]["attention_seconds"] / config.layers
    block = 2 * config.batch * config.heads * (config.seq // cp) * config.head_dim * 8
    hop = p2p_time(block, alpha=0.0, bandwidth=gbit_to_bytes_per_s(link_gbit))
    saving = ring_step_saving(layers=config.layers, cp=cp, attention_seconds=attention, hop_seconds=hop)
    same = all(max(abs(a - b) for a, b in zip(run.losses, runs[False][0].losses)) < 1e-12
               for run in runs[True] + runs[False])
    return RingOverlapRun(cp=cp, link_gbit=link_gbit, engine=engine, overlapped_seconds=fastest[False],
                          blocking_seconds=fastest[True], predicted_overlapped_seconds=fastest[True] - saving,
                          hop_seconds=hop, block_bytes=block, attention_seconds=attention,
                          overlapped_attention_seconds=per_step[False]["attention_seconds"] / config.layers,
                          blocking_wait_seconds=per_step[True]["attention_wait_seconds"],
                          overlapped_wait_seconds=per_step[False]["attention_wait_seconds"], losses_equal=same)
