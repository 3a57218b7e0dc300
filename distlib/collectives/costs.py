"""The alpha-beta cost of a collective: the formulas the chapter derives, one per algorithm.

The chapter "the alpha-beta model of collectives" teaches this module, through
:mod:`distlib.collectives`, which re-exports it. Sending one message of ``n``
bytes costs ``alpha + n * beta``: a fixed latency
``alpha`` (seconds) plus ``beta = 1 / bandwidth`` seconds per byte, with
``bandwidth`` the per-link rate in bytes/s **in one direction**. Every
collective below costs

    T = A(p) * alpha + B(p) * n_bytes * beta

for an algorithm-specific number of sequential message steps ``A(p)`` and
bytes factor ``B(p)`` (see :func:`cost_coefficients`). ``n_bytes`` is the
full buffer each rank holds, as nccl-tests counts it (for all-gather the
gathered result, for reduce-scatter the input). Reduction arithmetic (the
"gamma" term) is left out. ``lg`` is ``log2``; ``L = ceil(lg p)``;
``p' = 2**floor(lg p)``.

============== ================== ============================ =================================
collective     algorithm          A(p) (latency steps)         B(p) (bytes factor)
============== ================== ============================ =================================
allreduce      ring               2 (p-1)                      2 (p-1)/p
reduce_scatter ring               p-1                          (p-1)/p
allgather      ring               p-1                          (p-1)/p
broadcast      ring               p-1                          1   (pipelined chain, see below)
reduce         ring               p-1                          1   (pipelined chain)
broadcast      tree               L                            L   (binomial tree)
reduce         tree               L                            L
allreduce      tree               2 L                          2 L (reduce, then broadcast)
reduce_scatter tree               2 L                          L + (p-1)/p (reduce, binomial scatter)
allgather      tree               2 L                          (p-1)/p + L (binomial gather, broadcast)
allreduce      halving_doubling   2 lg p                       2 (p-1)/p (Rabenseifner)
allreduce      recursive_doubling lg p                         lg p      (whole buffer each step)
reduce_scatter halving_doubling   lg p                         (p-1)/p   (recursive halving)
allgather      halving_doubling   L                            (p-1)/p   (recursive doubling; Bruck)
broadcast      halving_doubling   2 L                          2 (p-1)/p (scatter + allgather)
reduce         halving_doubling   2 lg p                       2 (p-1)/p (reduce-scatter + gather)
============== ================== ============================ =================================

Non-powers of two, halving-doubling: the reductions fold the ``r = p - p'``
extra ranks into partners first (one step of a full buffer), run on ``p'``
ranks, and unfold (the scheme MPICH documents in ``allreduce.c``,
``reduce.c`` and ``reduce_scatter.c``; Thakur, Rabenseifner and Gropp,
"Optimization of collective communication operations in MPICH", IJHPCA
19(1), 2005): allreduce ``(2 floor(lg p) + 2)`` steps and ``2 (p'-1)/p' + 2``
bytes, or by recursive doubling ``floor(lg p) + 2`` and ``floor(lg p) + 2``; reduce-scatter ``floor(lg p) + 2`` and ``1 + (p'-1)/p' + 1/p``; reduce
``2 floor(lg p) + 1`` and ``1 + 2 (p'-1)/p'``. All-gather uses Bruck's
algorithm (``L`` steps, ``(p-1)/p``) and broadcast a binomial scatter plus
that all-gather, both valid for any ``p``. (MPICH writes ``(p-1)/p`` where
the fold gives ``(p'-1)/p'``; the difference is below ``1/p'``.)

The ring broadcast and reduce are NCCL's: a chain ``root -> 1 -> ... ->
p-1`` that streams the buffer in small pieces, so after ``p - 1`` hops of
latency the pipe delivers at link rate: ``(p-1) alpha + n beta``. This is the
limit of many pieces; cutting the buffer into ``S`` pieces of their own
``alpha`` costs ``(p - 2 + S)(alpha + n beta / S)``, at best
``(sqrt((p-2) alpha) + sqrt(n beta))**2``.

With ``p = 1`` every collective is free (0 s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._check import check_array, check_choice, check_int, check_real
from .names import ALGORITHMS, ALLREDUCE_ALGORITHMS, COLLECTIVES, TWO_LEVEL_ALGORITHMS, _canon

__all__ = [
    "alpha_beta_time",
    "p2p_time",
    "cost_coefficients",
    "collective_time",
    "bandwidth_lower_bound",
    "in_network_allreduce_time",
    "fastest_algorithm",
    "crossover_size",
    "Regime",
    "regime",
    "two_level_allreduce_time",
]


def _n_bytes(n_bytes):
    """Validate a size or an array of sizes (bytes, >= 0)."""
    if np.ndim(n_bytes) == 0:
        return check_real("n_bytes", n_bytes, minimum=0)
    return check_array("n_bytes", n_bytes, finite=True, minimum=0).astype(float)


def _link(alpha, bandwidth):
    alpha = check_real("alpha", alpha, minimum=0)
    bandwidth = check_real("bandwidth", bandwidth, minimum=0, strict_min=True)
    return alpha, bandwidth



def alpha_beta_time(steps, bytes_factor, n_bytes, *, alpha, bandwidth):
    """The one alpha-beta formula every cost in the book uses: ``steps * alpha + bytes_factor * n_bytes / bandwidth``.

    ``steps`` message steps on the critical path, each paying latency
    ``alpha`` (s), and ``bytes_factor * n_bytes`` bytes through a link of
    ``bandwidth`` bytes/s (one direction). :func:`collective_time` feeds it
    the coefficients of :func:`cost_coefficients`; other schedules (the
    double binary tree of chapter 7, ZeRO's extra all-gather) feed their own.

    Examples
    --------
    >>> round(alpha_beta_time(14, 1.75, 1e9, alpha=5e-6, bandwidth=100e9), 9)   # ring all-reduce, p = 8
    0.01757
    """
    steps = check_real("steps", steps, minimum=0)
    bytes_factor = check_real("bytes_factor", bytes_factor, minimum=0)
    n = _n_bytes(n_bytes)
    alpha, bandwidth = _link(alpha, bandwidth)
    return steps * alpha + bytes_factor * n / bandwidth


def p2p_time(n_bytes, *, alpha, bandwidth):
    """Seconds to send one ``n_bytes`` message: ``alpha + n_bytes / bandwidth``.

    Parameters
    ----------
    n_bytes : float or array_like
        Message size in bytes (>= 0).
    alpha : float
        Latency in seconds (>= 0).
    bandwidth : float
        Link bandwidth in bytes/s, one direction (> 0).

    Examples
    --------
    >>> round(p2p_time(1e6, alpha=2e-6, bandwidth=50e9) * 1e6, 9)   # 2 us + 20 us, in us
    22.0
    """
    n = _n_bytes(n_bytes)
    alpha, bandwidth = _link(alpha, bandwidth)
    return alpha + n / bandwidth


def cost_coefficients(collective, p, *, algorithm="ring") -> tuple:
    """``(A, B)`` such that the time is ``A * alpha + B * n_bytes / bandwidth``.

    ``A`` counts message steps on the critical path, ``B`` the bytes on it
    as a multiple of the buffer size. See the module docstring for the table.

    Examples
    --------
    >>> cost_coefficients("allreduce", 8)                       # 2(p-1), 2(p-1)/p
    (14, 1.75)
    >>> cost_coefficients("allreduce", 8, algorithm="halving_doubling")
    (6, 1.75)
    >>> cost_coefficients("allreduce", 6, algorithm="halving_doubling")  # fold to p' = 4
    (6, 3.5)
    >>> cost_coefficients("broadcast", 5, algorithm="tree")     # ceil(log2 5) rounds
    (3, 3)
    >>> cost_coefficients("allreduce", 8, algorithm="recursive_doubling")   # 3 swaps of the whole buffer
    (3, 3.0)
    """
    collective = check_choice("collective", _canon(collective), COLLECTIVES)
    algorithm = check_choice("algorithm", algorithm, ALLREDUCE_ALGORITHMS)
    if algorithm not in ALGORITHMS and collective != "allreduce":
        raise ValueError(f"algorithm {algorithm!r} is modelled for allreduce only; for {collective} use one of "
                         + ", ".join(repr(a) for a in ALGORITHMS))  # fmt: skip
    p = check_int("p", p, minimum=1)
    if p == 1:
        return (0, 0.0)
    frac = (p - 1) / p
    L = math.ceil(math.log2(p))
    if algorithm == "recursive_doubling":
        lg = p.bit_length() - 1
        steps = lg if p == 1 << lg else lg + 2  # + fold in, + result back out
        return (steps, float(steps))
    if algorithm == "ring":
        return {
            "allreduce": (2 * (p - 1), 2 * frac),
            "reduce_scatter": (p - 1, frac),
            "allgather": (p - 1, frac),
            "broadcast": (p - 1, 1.0),
            "reduce": (p - 1, 1.0),
        }[collective]
    if algorithm == "tree":
        return {
            "broadcast": (L, L),
            "reduce": (L, L),
            "allreduce": (2 * L, 2 * L),
            "reduce_scatter": (2 * L, L + frac),
            "allgather": (2 * L, frac + L),
        }[collective]
    # halving_doubling
    lg = int(math.floor(math.log2(p)))
    pp = 2 ** lg
    if pp == p:
        return {
            "allreduce": (2 * lg, 2 * frac),
            "reduce_scatter": (lg, frac),
            "allgather": (lg, frac),
            "broadcast": (2 * lg, 2 * frac),
            "reduce": (2 * lg, 2 * frac),
        }[collective]
    fold = (pp - 1) / pp
    return {
        "allreduce": (2 * lg + 2, 2 * fold + 2),
        "reduce_scatter": (lg + 2, 1 + fold + 1 / p),
        "allgather": (L, frac),
        "broadcast": (2 * L, 2 * frac),
        "reduce": (2 * lg + 1, 1 + 2 * fold),
    }[collective]


def collective_time(collective, n_bytes, p, *, alpha, bandwidth, algorithm="ring"):
    """Alpha-beta time of a collective, in seconds.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather", "broadcast", "reduce"}
    n_bytes : float or array_like
        Each rank's full buffer in bytes (for all-gather the gathered
        result), as nccl-tests counts it. An array gives an array of times.
    p : int
        Ranks (>= 1).
    alpha : float
        Per-message latency in seconds (>= 0).
    bandwidth : float
        Per-link bandwidth in bytes/s, one direction (> 0).
    algorithm : {"ring", "tree", "halving_doubling", "recursive_doubling"}
        See the module docstring for each formula (``"recursive_doubling"``
        for all-reduce only).

    Returns
    -------
    float or ndarray

    Raises
    ------
    ValueError
        Naming the argument: unknown collective or algorithm, ``p < 1``,
        negative or NaN ``alpha``/``n_bytes``, ``bandwidth <= 0``.

    Examples
    --------
    Ring all-reduce of 1 GB on 8 ranks over 100 GB/s links with 5 us latency:
    ``2*7*5e-6 + 2*7/8 * 1e9 / 100e9``:

    >>> round(collective_time("allreduce", 1e9, 8, alpha=5e-6, bandwidth=100e9), 6)
    0.01757
    >>> collective_time("broadcast", 1e6, 8, alpha=1e-6, bandwidth=1e9, algorithm="tree")
    0.003003
    >>> collective_time("allreduce", 1e6, 8, alpha=1e-6, bandwidth=1e9, algorithm="butterfly")
    Traceback (most recent call last):
    ...
    ValueError: algorithm must be one of 'ring', 'tree', 'halving_doubling', 'recursive_doubling'; got 'butterfly'
    """
    n = _n_bytes(n_bytes)
    alpha, bandwidth = _link(alpha, bandwidth)
    a, b = cost_coefficients(collective, p, algorithm=algorithm)
    return alpha_beta_time(a, b, n, alpha=alpha, bandwidth=bandwidth)


def bandwidth_lower_bound(collective, n_bytes, p, *, bandwidth):
    """The least time any point-to-point algorithm needs to move the bytes.

    Each rank must send (and receive) at least ``2 (p-1)/p`` of the buffer in
    an all-reduce, ``(p-1)/p`` in a reduce-scatter or all-gather, and the
    whole buffer must leave the root of a broadcast (or reach the root of a
    reduce): nccl-tests' PERFORMANCE.md; Patarasuk and Yuan, "Bandwidth
    optimal all-reduce algorithms for clusters of workstations", JPDC 2009.
    In-network reduction (switches that add) is outside this model and can
    beat the all-reduce bound (see :func:`bus_bandwidth`).

    Examples
    --------
    >>> bandwidth_lower_bound("allreduce", 8e9, 8, bandwidth=100e9)   # 1.75 * 8 GB / 100 GB/s
    0.14
    """
    n = _n_bytes(n_bytes)
    collective = check_choice("collective", collective, COLLECTIVES)
    p = check_int("p", p, minimum=1)
    bandwidth = check_real("bandwidth", bandwidth, minimum=0, strict_min=True)
    if p == 1:
        return 0.0 * n
    factor = {"allreduce": 2 * (p - 1) / p, "reduce_scatter": (p - 1) / p, "allgather": (p - 1) / p,
              "broadcast": 1.0, "reduce": 1.0}[collective]
    return factor * n / bandwidth


def in_network_allreduce_time(n_bytes, p, *, alpha, bandwidth):
    """Idealised all-reduce through a switch that adds: ``2 alpha + n_bytes / bandwidth``.

    With in-network reduction (InfiniBand SHARP; NVLink SHARP, which NCCL
    calls NVLS, on third-generation NVSwitch) every rank sends its buffer
    into the switch once and receives the sum once: ``n_bytes`` each way
    per rank, instead of the ``2 (p-1)/p * n_bytes`` that any algorithm
    built from point-to-point sends must move (:func:`bandwidth_lower_bound`).
    One latency on the way up, one on the way down. This is a best case:
    real implementations move somewhat more (NVLS shards the buffer across
    the GPUs and multicasts the result), and the switch's own reduction
    rate can cap them.

    Parameters
    ----------
    n_bytes : float or array_like
        Each rank's buffer (bytes, >= 0).
    p : int
        Ranks (>= 1); with one rank nothing moves (0 s).
    alpha : float
        Latency of one trip through the switch, seconds (>= 0).
    bandwidth : float
        Each rank's link to the switch, bytes/s, one direction (> 0).

    Examples
    --------
    1 GB on 8 ranks over 450 GB/s links (H100 NVLink, one direction), no latency:
    the time is ``n / B``, so nccl-tests' all-reduce bus bandwidth, which
    multiplies ``n / t`` by ``2 (p-1)/p``, reads 1.75 times the link rate:

    >>> from distlib.collectives import bus_bandwidth
    >>> t = in_network_allreduce_time(1e9, 8, alpha=0.0, bandwidth=450e9)
    >>> round(bus_bandwidth("allreduce", 1e9, 8, t) / 1e9, 1)
    787.5
    """
    n = _n_bytes(n_bytes)
    p = check_int("p", p, minimum=1)
    alpha, bandwidth = _link(alpha, bandwidth)
    if p == 1:
        return 0.0 * n
    return 2 * alpha + n / bandwidth


def fastest_algorithm(collective, n_bytes, p, *, alpha, bandwidth, algorithms=ALGORITHMS) -> str:
    """The algorithm with the least modelled time (the first listed on a tie).

    Examples
    --------
    >>> fastest_algorithm("allreduce", 1e3, 64, alpha=5e-6, bandwidth=50e9)
    'halving_doubling'
    >>> fastest_algorithm("allreduce", 1e9, 64, alpha=5e-6, bandwidth=50e9, algorithms=("ring", "tree"))
    'ring'
    """
    algorithms = _check_algorithms(algorithms)
    n = check_real("n_bytes", n_bytes, minimum=0)
    times = [collective_time(collective, n, p, alpha=alpha, bandwidth=bandwidth, algorithm=a)
             for a in algorithms]
    return algorithms[int(np.argmin(times))]


def _check_algorithms(algorithms) -> tuple:
    if isinstance(algorithms, str):
        raise TypeError(f"algorithms must be a sequence of algorithm names, got the string {algorithms!r}")
    algorithms = tuple(algorithms)
    if not algorithms:
        raise ValueError("algorithms must name at least one algorithm")
    for a in algorithms:
        check_choice("algorithms", a, ALLREDUCE_ALGORITHMS)
    return algorithms


def crossover_size(collective, p, *, alpha, bandwidth, algorithms=("tree", "ring")):
    """The buffer size (bytes) at which two algorithms take equal time, or None.

    Both times are straight lines in ``n``: ``A_i alpha + B_i n / bandwidth``.
    They cross at ``n = (A_2 - A_1) / (B_1 - B_2) * alpha * bandwidth`` if
    that is positive; otherwise one algorithm is never slower (e.g.
    halving-doubling versus ring for a power-of-two ``p``: same bytes, fewer
    steps) and the answer is None.

    Examples
    --------
    Binomial-tree versus ring all-reduce, 256 ranks, 1 us, 25 GB/s:
    ``(510 - 16) / (16 - 2*255/256) * 1e-6 * 25e9`` bytes:

    >>> round(crossover_size("allreduce", 256, alpha=1e-6, bandwidth=25e9))
    881651
    >>> crossover_size("allreduce", 256, alpha=1e-6, bandwidth=25e9,
    ...                algorithms=("halving_doubling", "ring")) is None
    True
    """
    algorithms = _check_algorithms(algorithms)
    if len(algorithms) != 2:
        raise ValueError(f"algorithms must name exactly two algorithms, got {len(algorithms)}")
    alpha, bandwidth = _link(alpha, bandwidth)
    a1, b1 = cost_coefficients(collective, p, algorithm=algorithms[0])
    a2, b2 = cost_coefficients(collective, p, algorithm=algorithms[1])
    if b1 == b2 or alpha == 0:
        return None
    n = (a2 - a1) / (b1 - b2) * alpha * bandwidth
    return float(n) if n > 0 else None


@dataclass(frozen=True)
class Regime:
    """Where a collective sits between latency- and bandwidth-bound.

    Attributes
    ----------
    latency_time : float
        ``A * alpha`` seconds.
    bandwidth_time : float
        ``B * n_bytes / bandwidth`` seconds.
    n_half : float or None
        The size at which the two terms are equal,
        ``(A / B) * alpha * bandwidth`` bytes. Point to point (``A = B =
        1``) this is ``n* = alpha / beta``: at that size half the time is
        latency and the achieved rate is half the link's. For a ring
        all-reduce ``A / B = p``, so ``n_half = p * alpha / beta``.
        None when a term is absent (``p = 1`` or ``alpha = 0``).
    label : str
        ``"latency-bound"`` if ``latency_time > bandwidth_time``, else
        ``"bandwidth-bound"``.
    """

    latency_time: float
    bandwidth_time: float
    n_half: float | None
    label: str

    @property
    def time(self) -> float:
        return self.latency_time + self.bandwidth_time

    @property
    def latency_fraction(self) -> float:
        """Share of the time spent on latency, in [0, 1]."""
        return self.latency_time / self.time if self.time > 0 else 0.0


def regime(collective, n_bytes, p, *, alpha, bandwidth, algorithm="ring") -> Regime:
    """Split a collective's time into its latency and bandwidth terms.

    Examples
    --------
    >>> r = regime("allreduce", 1e6, 8, alpha=5e-6, bandwidth=50e9)
    >>> r.label, round(r.n_half)        # n_half = p * alpha * bandwidth for the ring
    ('latency-bound', 2000000)
    >>> regime("allreduce", 1e9, 8, alpha=5e-6, bandwidth=50e9).label
    'bandwidth-bound'
    """
    n = check_real("n_bytes", n_bytes, minimum=0)
    alpha, bandwidth = _link(alpha, bandwidth)
    a, b = cost_coefficients(collective, p, algorithm=algorithm)
    lat = a * alpha
    bw = b * n / bandwidth
    n_half = (a / b) * alpha * bandwidth if (a and b and alpha) else None
    return Regime(lat, bw, n_half, "latency-bound" if lat > bw else "bandwidth-bound")



# --------------------------------------------------------------------------
# Two-level clusters: fast links inside a node, one slower link per node
# (chapter "A cluster on one machine"; distlib.engines.algorithms.hierarchical_allreduce)
# --------------------------------------------------------------------------


def two_level_allreduce_time(n_bytes, nodes, ranks_per_node, *, alpha_intra, bandwidth_intra, alpha_inter,
                             bandwidth_inter, algorithm="hierarchical"):  # fmt: skip
    """Alpha-beta time of an all-reduce on ``nodes`` nodes of ``ranks_per_node`` ranks each, in seconds.

    Inside a node every rank has links of ``bandwidth_intra`` (bytes/s, one
    direction) and latency ``alpha_intra``; each node has *one* link to the
    others of ``bandwidth_inter`` (bytes/s, one direction), which all of its
    ranks share, with latency ``alpha_inter``. With ``N = nodes``,
    ``L = ranks_per_node``, ``p = N L``:

    ``"ring"`` (flat ring, ranks of a node next to each other): ``2 (p - 1)``
    steps of ``n/p`` bytes; in each step one rank per node sends across, so
    a step costs ``max(alpha_intra + n/(p B_intra), alpha_inter + n/(p B_inter))``
    and the slow link sets the pace: busbw ~ ``B_inter``.

    ``"hierarchical"``: a ring reduce-scatter inside the node, then ``L``
    ring all-reduces of ``n/L`` bytes across the nodes at once (sharing the
    node's link: ``2 (N - 1) / N * n`` bytes cross it per direction), then
    a ring all-gather inside the node::

        2 [(L - 1) alpha_intra + (L - 1)/L n / B_intra] + 2 (N - 1) alpha_inter + 2 (N - 1)/N n / B_inter

    so the bytes over the slow link drop from ``2 (p - 1)/p n`` to
    ``2 (N - 1)/N n``: 1.5 n against n for 2 nodes of 2 ranks.

    Examples
    --------
    2 nodes x 2 ranks, 1 MB, free intra-node links, 250 MB/s between nodes, no latency:

    >>> kw = dict(alpha_intra=0, bandwidth_intra=1e15, alpha_inter=0, bandwidth_inter=250e6)
    >>> round(two_level_allreduce_time(1e6, 2, 2, algorithm="ring", **kw) * 1e3, 3)       # 1.5 MB at 250 MB/s
    6.0
    >>> round(two_level_allreduce_time(1e6, 2, 2, **kw) * 1e3, 3)                           # 1 MB at 250 MB/s
    4.0
    """
    n = _n_bytes(n_bytes)
    N = check_int("nodes", nodes, minimum=1)
    L = check_int("ranks_per_node", ranks_per_node, minimum=1)
    a_in, b_in = check_real("alpha_intra", alpha_intra, minimum=0), check_real("bandwidth_intra", bandwidth_intra, minimum=0, strict_min=True)
    a_x, b_x = check_real("alpha_inter", alpha_inter, minimum=0), check_real("bandwidth_inter", bandwidth_inter, minimum=0, strict_min=True)
    algorithm = check_choice("algorithm", algorithm, TWO_LEVEL_ALGORITHMS)
    p = N * L
    if N == 1:
        return collective_time("allreduce", n, L, alpha=a_in, bandwidth=b_in)
    if algorithm == "ring":
        step = np.maximum(a_in + n / p / b_in, a_x + n / p / b_x) if L > 1 else a_x + n / p / b_x
        return 2 * (p - 1) * (float(step) if np.ndim(step) == 0 else step)
    inside = collective_time("reduce_scatter", n, L, alpha=a_in, bandwidth=b_in)
    across = collective_time("allreduce", n / L, N, alpha=a_x, bandwidth=b_x / L)  # L rings share the link
    return 2 * inside + across
