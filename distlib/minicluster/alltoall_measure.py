"""The all-to-all measured across two mini-cluster nodes, beside its alpha-beta model (chapter 15).

:func:`measure_alltoall` makes a fresh mini cluster of two nodes whose link is
throttled with ``tc``'s token bucket (:mod:`distlib.minicluster.cluster`), runs
``python -m distlib.bench alltoall`` across it (the book's pairwise exchange,
:mod:`distlib.engines.alltoall`, and the engine's built-in, ``MPI_Alltoall``)
with one rank a node and then two, and returns the measured medians beside
what the model predicts.

The model. Only bytes between nodes cross the throttled link; inside a node
ranks share memory, which is fast against it. So the all-to-all is priced at
the level of nodes: each node holds ``ranks_per_node x n_bytes`` in all,
``1/nodes`` of it for its own ranks, and the nodes run a pairwise exchange
over links of the throttled rate, :func:`distlib.collectives.alltoall_time`
with ``p = nodes``::

    T = (nodes - 1) alpha + (nodes - 1)/nodes * ranks_per_node * n_bytes / bandwidth

With one rank a node that is the ordinary pairwise all-to-all of two ranks
(half of each buffer crosses); with two ranks a node, half of each rank's
three foreign blocks stays in its node, and the two ranks share the link, so
the time doubles for the same ``n_bytes``. ``bandwidth`` is the link's rate
(``link_gbit`` Gbit/s, one direction); ``alpha`` the per-message latency,
which is small against the sizes the check uses (bandwidth dominates where
``n_bytes / bandwidth`` is many times ``alpha``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .._check import check_choice, check_int, check_real

__all__ = ["AlltoallPoint", "measure_alltoall", "alltoall_model_time"]


@dataclass(frozen=True)
class AlltoallPoint:
    """One all-to-all size on the two nodes: measured medians beside the model (seconds; bytes each rank holds)."""

    ranks: int
    ranks_per_node: int
    n_bytes: int
    link_gbit: float
    model: float
    measured: dict
    """Algorithm (``"pairwise"``, ``"builtin"``) -> seconds: the least of the repeats' medians (the slowest rank's)."""
    repeats: dict = None
    """Algorithm -> every repeat's median, in the order run."""

    def ratio(self, algorithm: str = "pairwise") -> float:
        """Measured over model."""
        return self.measured[algorithm] / self.model


def alltoall_model_time(n_bytes, *, nodes: int, ranks_per_node: int, bandwidth: float, alpha: float = 0.0) -> float:
    """The model's seconds for an all-to-all of ``n_bytes`` a rank on ``nodes`` nodes of ``ranks_per_node`` ranks,
    only the nodes' links (``bandwidth`` bytes/s one direction) counted (the module docstring).

    Examples
    --------
    Two nodes, one rank each, 1 MB a rank at 37.5 MB/s (0.3 Gbit/s): half of it crosses.

    >>> round(alltoall_model_time(1e6, nodes=2, ranks_per_node=1, bandwidth=37.5e6), 4)
    0.0133
    >>> round(alltoall_model_time(1e6, nodes=2, ranks_per_node=2, bandwidth=37.5e6), 4)   # two share the link
    0.0267
    """
    from ..collectives.alltoall import alltoall_time

    nodes = check_int("nodes", nodes, minimum=1)
    ranks_per_node = check_int("ranks_per_node", ranks_per_node, minimum=1)
    return float(alltoall_time(ranks_per_node * n_bytes, nodes, alpha=alpha, bandwidth=bandwidth))


def _bench(cluster, ranks: int, sizes, *, engine: str, iters: int, timeout: float):
    from ..bench.launch import bench_argv
    from ..collectives.measured import BenchResult
    from ..engines.launch import run_mpi, run_torch
    from ..engines.report import read

    args = bench_argv(engine=engine, ranks=ranks, collective="alltoall", algorithms=("pairwise",),
                      min_bytes=min(sizes), max_bytes=max(sizes), step_factor=4.0, iters=iters, warmup=1,
                      timeout=timeout, nodes=2)
    if engine == "mpi":
        result = run_mpi("distlib.bench", ranks, args=args, timeout=timeout, cluster=cluster)
    else:
        result = run_torch("distlib.bench:_torch_rank_main", ranks, args=args, timeout=timeout, cluster=cluster)
    return read(result, BenchResult)


def measure_alltoall(*, link_gbit: float = 0.3, sizes=(1 << 18, 1 << 20, 1 << 22), ranks_per_node=(1, 2),
                     engine: str = "mpi", iters: int = 5, repeats: int = 2, alpha: float = 0.0,
                     timeout: float = 120.0) -> list:
    """Time the all-to-all across a fresh two-node mini cluster (as root) beside the model, for each size.

    Parameters
    ----------
    link_gbit : float
        The link's rate, Gbit/s per direction (``tc tbf``).
    sizes : sequence of int
        Bytes each rank holds (and sends, its own block included), powers of 4 apart (the bench's ``-f 4``).
    ranks_per_node : sequence of int
        1 (two ranks, everything but a rank's own block crosses) and 2 (four ranks, half stays in a node).
    engine : {"mpi", "gloo"}
    iters : int
        Timed calls a size (after one warm-up); the bench reports their median.
    repeats : int
        Bench runs a rank count, alternating between the rank counts; each point keeps the least of its repeats'
        medians (other work on the machine only adds time; a dropped packet costs TCP a retransmission timeout).
    alpha : float
        The model's per-message latency, seconds.

    Returns
    -------
    list of AlltoallPoint
        One a size and rank count, smallest first.

    Raises
    ------
    distlib.minicluster.MiniClusterUnavailable
        Not root, or no network namespaces here (the message says why).
    """
    from ..units import gbit_to_bytes_per_s
    from . import mini_cluster

    link_gbit = check_real("link_gbit", link_gbit, minimum=0.01, maximum=100)
    engine = check_choice("engine", engine, ("mpi", "gloo"))
    iters = check_int("iters", iters, minimum=1)
    sizes = sorted(check_int("sizes[i]", s, minimum=8) for s in sizes)
    per_node = [check_int("ranks_per_node[i]", r, minimum=1, maximum=4) for r in ranks_per_node]
    repeats = check_int("repeats", repeats, minimum=1)
    bandwidth = gbit_to_bytes_per_s(link_gbit)
    seen = {}  # (ranks per node, n_bytes) -> algorithm -> medians
    with mini_cluster(2, link_gbit=link_gbit) as cluster:
        for _ in range(repeats):
            for ppn in per_node:
                for row in _bench(cluster, 2 * ppn, sizes, engine=engine, iters=iters, timeout=timeout).rows:
                    for name, timing in row.results.items():
                        seen.setdefault((ppn, row.n_bytes), {}).setdefault(name, []).append(timing.seconds)
    out = []
    for (ppn, n), runs in sorted(seen.items()):
        model = alltoall_model_time(n, nodes=2, ranks_per_node=ppn, bandwidth=bandwidth, alpha=alpha)
        out.append(AlltoallPoint(ranks=2 * ppn, ranks_per_node=ppn, n_bytes=n, link_gbit=link_gbit, model=model,
                                 measured={k: min(v) for k, v in runs.items()}, repeats=runs))
    return out
