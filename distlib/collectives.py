"""The alpha-beta model of collectives: times, bus bandwidth, and fits to measurements.

The chapter "the alpha-beta model of collectives" teaches this module. Sending
one message of ``n`` bytes costs ``alpha + n * beta``: a fixed latency
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

import csv
import math
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from ._check import check_array, check_choice, check_int, check_real

__all__ = [
    "COLLECTIVES",
    "ALGORITHMS",
    "ALLREDUCE_ALGORITHMS",
    "TWO_LEVEL_ALGORITHMS",
    "OWN_ALLREDUCE_ALGORITHMS",
    "ENGINE_ALLREDUCE_ALGORITHMS",
    "ENGINE_SCATTER_GATHER_ALGORITHMS",
    "BUS_FACTOR_COLLECTIVES",
    "COLLECTIVE_ALIASES",
    "canonical_collective",
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
    "bus_factor",
    "bus_bandwidth",
    "algorithm_bandwidth",
    "fit_alpha_beta",
    "FitReport",
    "fit_report",
    "NcclTable",
    "load_nccl_table",
    "check_nccl_table",
    "two_level_allreduce_time",
]

COLLECTIVES = ("allreduce", "reduce_scatter", "allgather", "broadcast", "reduce")

# The registry of algorithm names: the cost models here, the engines
# (distlib.engines.algorithms, selftest, tuner), the DDP model (overlap) and the
# plots all take their lists from these tuples, so a name is added in one place.
ALGORITHMS = ("ring", "tree", "halving_doubling")
"""Algorithms modelled for every collective."""
ALLREDUCE_ALGORITHMS = ALGORITHMS + ("recursive_doubling",)
"""Algorithms modelled for all-reduce: recursive doubling (the whole buffer
swapped ``lg p`` times) is an all-reduce of its own, the short-message choice.
The engines run each of them, and their ``"auto"`` chooses among these."""
TWO_LEVEL_ALGORITHMS = ("ring", "hierarchical")
"""All-reduces over nodes of ranks (:func:`two_level_allreduce_time`): the flat
ring and the book's hierarchical one (reduce-scatter inside a node, all-reduce
across, all-gather inside), in the order the chapter races them."""
OWN_ALLREDUCE_ALGORITHMS = ALLREDUCE_ALGORITHMS + ("hierarchical",)
"""Every all-reduce distlib itself runs over an engine."""
ENGINE_ALLREDUCE_ALGORITHMS = OWN_ALLREDUCE_ALGORITHMS + ("builtin", "auto")
"""What :func:`distlib.engines.allreduce` accepts: distlib's own, the engine's
own all-reduce (``"builtin"``) and the tuner's pick (``"auto"``)."""
ENGINE_SCATTER_GATHER_ALGORITHMS = ("ring", "halving_doubling", "builtin")
"""What the engines' reduce-scatter and all-gather accept."""
BUS_FACTOR_COLLECTIVES = COLLECTIVES + ("alltoall", "sendrecv")

#: Other spellings of the collectives: torch.distributed's and nccl-tests'
#: (``all_reduce_perf``) names, and NCCL's ``ncclAllReduce`` style.
COLLECTIVE_ALIASES = {
    "all_reduce": "allreduce", "all-reduce": "allreduce",
    "all_gather": "allgather", "all-gather": "allgather",
    "reducescatter": "reduce_scatter", "reduce-scatter": "reduce_scatter",
    "all_to_all": "alltoall", "all-to-all": "alltoall",
    "send_recv": "sendrecv", "sendrecv": "sendrecv",
}


def canonical_collective(name) -> str:
    """The book's name for a collective, from any common spelling.

    Accepts the book's names (``"allreduce"``), torch.distributed's and
    nccl-tests' (``"all_reduce"``, ``"all_gather"``, ``"reduce_scatter"``,
    ``"all_to_all"``), hyphenated forms and NCCL's ``ncclAllReduce`` style,
    case-insensitively. Unknown names are returned lower-cased for the caller
    to reject with its own list.

    Examples
    --------
    >>> canonical_collective("all_reduce"), canonical_collective("AllGather"), canonical_collective("ncclReduceScatter")
    ('allreduce', 'allgather', 'reduce_scatter')
    """
    if not isinstance(name, str):
        raise TypeError(f"collective must be a string, got {type(name).__name__}")
    key = name.strip().lower()
    if key.startswith("nccl"):
        key = key[4:]
    key = COLLECTIVE_ALIASES.get(key, key)
    return {"allreduce": "allreduce", "allgather": "allgather", "reduce_scatter": "reduce_scatter"}.get(key, key)


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


# --------------------------------------------------------------------------
# Times
# --------------------------------------------------------------------------


def _n_bytes(n_bytes):
    """Validate a size or an array of sizes (bytes, >= 0)."""
    if np.ndim(n_bytes) == 0:
        return check_real("n_bytes", n_bytes, minimum=0)
    return check_array("n_bytes", n_bytes, finite=True, minimum=0).astype(float)


def _canon(collective):
    return canonical_collective(collective) if isinstance(collective, str) else collective


def _link(alpha, bandwidth):
    alpha = check_real("alpha", alpha, minimum=0)
    bandwidth = check_real("bandwidth", bandwidth, minimum=0, strict_min=True)
    return alpha, bandwidth


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
# Bus bandwidth (nccl-tests)
# --------------------------------------------------------------------------


def bus_factor(collective, p) -> float:
    """nccl-tests' correction from algorithm bandwidth to bus bandwidth.

    From nccl-tests ``doc/PERFORMANCE.md``: all-reduce ``2 (p-1)/p``;
    reduce-scatter, all-gather and all-to-all ``(p-1)/p``; broadcast, reduce
    and send/receive ``1``.

    Examples
    --------
    >>> bus_factor("allreduce", 8)
    1.75
    >>> bus_factor("broadcast", 8)
    1.0
    """
    collective = check_choice("collective", _canon(collective), BUS_FACTOR_COLLECTIVES)
    p = check_int("p", p, minimum=1)
    if collective == "allreduce":
        return 2 * (p - 1) / p
    if collective in ("reduce_scatter", "allgather", "alltoall"):
        return (p - 1) / p
    return 1.0


def algorithm_bandwidth(n_bytes, seconds):
    """nccl-tests' algorithm bandwidth ``algbw = n_bytes / seconds`` (bytes/s).

    Examples
    --------
    >>> algorithm_bandwidth(1e9, 0.01)
    100000000000.0
    """
    n = _n_bytes(n_bytes)
    t = _seconds(seconds)
    return n / t


def _seconds(seconds):
    if np.ndim(seconds) == 0:
        return check_real("seconds", seconds, minimum=0, strict_min=True)
    arr = check_array("seconds", seconds, finite=True).astype(float)
    if arr.size and np.any(arr <= 0):
        raise ValueError("seconds must hold only positive times")
    return arr


def bus_bandwidth(collective, n_bytes, p, seconds):
    """nccl-tests' bus bandwidth (bytes/s): ``n_bytes / seconds * bus_factor``.

    The factor scales the algorithm bandwidth to the rate each rank's link
    must sustain in a bandwidth-optimal algorithm built from point-to-point
    sends, so busbw can be compared with the link's one-direction bandwidth
    whatever ``p`` is. With the ring model and ``alpha = 0`` it *equals* the
    link bandwidth.

    **Can busbw exceed the link bandwidth?** Not for an algorithm that only
    sends and receives: every rank must move ``2 (p-1)/p`` of the buffer
    through its link (see :func:`bandwidth_lower_bound`), so busbw <= the
    per-direction link rate (measured against the *whole* per-GPU bandwidth,
    e.g. all 18 NVLinks of an H100 together, 450 GB/s each way). It can with
    in-network reduction: NVLink SHARP (NCCL's NVLS algorithm, NVSwitch
    gen 3) or InfiniBand SHARP add the data inside the switch, so each GPU
    sends its buffer once and receives the sum once: about ``n`` bytes each
    way instead of ``2 (p-1)/p * n``. The time approaches ``n / bandwidth``,
    and busbw, which still applies ``2 (p-1)/p``, approaches ``2 (p-1)/p``
    times the link rate (1.75x for 8 GPUs). The factor then no longer
    describes the traffic, but nccl-tests prints it all the same: its
    ``src/all_reduce.cu`` (v2.19.6) always applies ``2 (p-1)/p``, since it
    cannot know which algorithm NCCL ran (NVIDIA/nccl-tests issue 366); a
    correction for a pinned ``NCCL_ALGO`` exists only as an open pull request
    (NVIDIA/nccl-tests#239).

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall", "sendrecv"}
    n_bytes : float or array_like
        nccl-tests' "size" column: each rank's full buffer.
    p : int
        Ranks.
    seconds : float or array_like
        Measured time of one operation.

    Examples
    --------
    The last row of the seed's 8x H100 table, 1 GiB in 7210 us (it prints
    260.61 GB/s: its busbw column was rounded from rounded numbers):

    >>> round(bus_bandwidth("allreduce", 2**30, 8, 7210e-6) / 1e9, 2)
    260.62
    """
    factor = bus_factor(collective, p)
    return algorithm_bandwidth(n_bytes, seconds) * factor


# --------------------------------------------------------------------------
# Fitting alpha and beta to measurements
# --------------------------------------------------------------------------


def _fit_arrays(n_bytes, seconds):
    n = check_array("n_bytes", n_bytes, ndim=1, finite=True, minimum=0).astype(float)
    t = check_array("seconds", seconds, ndim=1, finite=True).astype(float)
    if n.shape != t.shape:
        raise ValueError(f"n_bytes and seconds must have the same length, got {n.size} and {t.size}")
    if t.size and np.any(t <= 0):
        raise ValueError("seconds must hold only positive times")
    if np.unique(n).size < 2:
        raise ValueError("n_bytes must hold at least two different sizes to separate alpha from beta")
    return n, t


def _solve(n, t, a, b, weighting):
    """Non-negative least squares for (alpha, beta) in t = a*alpha + b*n*beta."""
    X = np.stack([np.full_like(n, a, dtype=float), b * n], axis=1)
    w = 1.0 / t if weighting == "relative" else np.ones_like(t)
    Xw, yw = X * w[:, None], t * w

    def loss(x):
        return float(np.sum((Xw @ x - yw) ** 2))

    candidates = []
    sol, *_ = np.linalg.lstsq(Xw, yw, rcond=None)
    if np.all(sol >= 0):
        candidates.append(sol)
    for j in (0, 1):  # one coefficient pinned at zero
        col = Xw[:, j]
        denom = float(col @ col)
        x = np.zeros(2)
        if denom > 0:
            x[j] = max(float(col @ yw) / denom, 0.0)
        candidates.append(x)
    best = min(candidates, key=loss)
    return float(best[0]), float(best[1])


def fit_alpha_beta(n_bytes, seconds, *, collective="allreduce", p, algorithm="ring", weighting="relative"):
    """Fit ``alpha`` and ``bandwidth`` of a collective's model to measured times.

    Least squares over ``T(n) = A alpha + B n beta`` with ``alpha, beta >=
    0``. By default every point counts by its **relative** error (each
    residual divided by the measured time): measured sizes span many decades
    (8 B to GBs), and plain squared errors are dominated by the largest
    times, so the latency, which only shows at small sizes, would be fitted
    to noise. ``weighting="absolute"`` shows that failure.

    Parameters
    ----------
    n_bytes, seconds : array_like
        Sizes (bytes) and measured times (s), equal lengths, at least two
        different sizes.
    collective, algorithm : str
        Which model (see :func:`collective_time`).
    p : int
        Ranks (>= 2: with one rank nothing is sent).
    weighting : {"relative", "absolute"}

    Returns
    -------
    (alpha, bandwidth) : tuple of float
        Seconds and bytes/s (one direction). ``bandwidth`` is ``inf`` if the
        fit finds no per-byte cost.

    Examples
    --------
    Noiseless ring all-reduce times are recovered exactly:

    >>> sizes = np.logspace(3, 9, 13)
    >>> t = collective_time("allreduce", sizes, 8, alpha=4e-6, bandwidth=200e9)
    >>> a, bw = fit_alpha_beta(sizes, t, p=8)
    >>> round(a * 1e6, 6), round(bw / 1e9, 6)
    (4.0, 200.0)
    """
    n, t = _fit_arrays(n_bytes, seconds)
    p = check_int("p", p, minimum=2)
    weighting = check_choice("weighting", weighting, ["relative", "absolute"])
    a, b = cost_coefficients(collective, p, algorithm=algorithm)
    alpha_steps, beta = _solve(n, t, a, b, weighting)
    return alpha_steps, (1.0 / beta if beta > 0 else math.inf)


@dataclass
class FitReport:
    """A fit of the alpha-beta model and how well it holds.

    Attributes
    ----------
    alpha, bandwidth : float
        Fitted on all points (s, bytes/s).
    fitted : ndarray
        Model times at every size.
    residuals : ndarray
        Relative residuals ``(fitted - measured) / measured``.
    train : ndarray of bool
        The points of the held-out check's fit.
    alpha_train, bandwidth_train : float
        The fit on the ``train`` points only.
    heldout_residuals : ndarray
        Relative residuals of that fit on the other points.
    """

    n_bytes: np.ndarray
    seconds: np.ndarray
    collective: str
    p: int
    algorithm: str
    weighting: str
    alpha: float
    bandwidth: float
    fitted: np.ndarray
    residuals: np.ndarray
    train: np.ndarray
    alpha_train: float
    bandwidth_train: float
    heldout_residuals: np.ndarray = field(repr=False)

    @property
    def rms_relative_error(self) -> float:
        return float(np.sqrt(np.mean(self.residuals ** 2)))

    @property
    def max_relative_error(self) -> float:
        return float(np.max(np.abs(self.residuals)))

    @property
    def heldout_rms(self) -> float:
        r = self.heldout_residuals
        return float(np.sqrt(np.mean(r ** 2))) if r.size else math.nan

    @property
    def heldout_max(self) -> float:
        r = self.heldout_residuals
        return float(np.max(np.abs(r))) if r.size else math.nan

    @property
    def n_half(self) -> float | None:
        """Size where the fitted latency and bandwidth terms are equal (bytes)."""
        a, b = cost_coefficients(self.collective, self.p, algorithm=self.algorithm)
        if not (a and b and self.alpha) or not math.isfinite(self.bandwidth):
            return None
        return (a / b) * self.alpha * self.bandwidth


def fit_report(n_bytes, seconds, *, collective="allreduce", p, algorithm="ring", weighting="relative",
               train=None) -> FitReport:
    """:func:`fit_alpha_beta` plus residuals and a held-out check.

    The held-out check refits on the ``train`` points and measures the
    relative error on the others. By default ``train`` takes every other
    size in increasing order, so both the latency-bound small sizes and the
    bandwidth-bound large ones are in it and in the held-out set.

    Parameters
    ----------
    train : array_like of bool or int, optional
        A mask, or indices, of the points to fit in the held-out check.

    Examples
    --------
    >>> sizes = np.logspace(3, 9, 13)
    >>> t = collective_time("allreduce", sizes, 8, alpha=4e-6, bandwidth=200e9)
    >>> r = fit_report(sizes, t, p=8)
    >>> r.max_relative_error < 1e-9, r.heldout_max < 1e-9
    (True, True)
    """
    n, t = _fit_arrays(n_bytes, seconds)
    alpha, bandwidth = fit_alpha_beta(n, t, collective=collective, p=p, algorithm=algorithm, weighting=weighting)
    p = int(p)
    if train is None:
        order = np.argsort(n, kind="stable")
        mask = np.zeros(n.size, dtype=bool)
        mask[order[::2]] = True
    else:
        tr = np.asarray(train)
        if tr.dtype == bool:
            if tr.shape != n.shape:
                raise ValueError(f"train must be a mask of length {n.size}, got shape {tr.shape}")
            mask = tr.copy()
        else:
            idx = check_array("train", tr, ndim=1).astype(int)
            if idx.size and (idx.min() < 0 or idx.max() >= n.size):
                raise ValueError(f"train indices must be in [0, {n.size - 1}]")
            mask = np.zeros(n.size, dtype=bool)
            mask[idx] = True
    if np.unique(n[mask]).size < 2:
        raise ValueError("train must select at least two different sizes")
    a_tr, bw_tr = fit_alpha_beta(n[mask], t[mask], collective=collective, p=p, algorithm=algorithm,
                                 weighting=weighting)
    steps = cost_coefficients(collective, p, algorithm=algorithm)[0]
    if math.isfinite(bandwidth):
        fitted = collective_time(collective, n, p, alpha=alpha, bandwidth=bandwidth, algorithm=algorithm)
    else:  # no per-byte cost found
        fitted = np.full_like(n, steps * alpha)
    held = ~mask
    if math.isfinite(bw_tr):
        pred = collective_time(collective, n[held], p, alpha=a_tr, bandwidth=bw_tr, algorithm=algorithm)
    else:
        pred = np.full(int(held.sum()), steps * a_tr)
    return FitReport(
        n_bytes=n, seconds=t, collective=collective, p=p, algorithm=algorithm, weighting=weighting,
        alpha=alpha, bandwidth=bandwidth, fitted=np.asarray(fitted, dtype=float),
        residuals=(np.asarray(fitted) - t) / t, train=mask, alpha_train=a_tr, bandwidth_train=bw_tr,
        heldout_residuals=(pred - t[held]) / t[held],
    )


# --------------------------------------------------------------------------
# nccl-tests tables shipped with the library
# --------------------------------------------------------------------------


@dataclass
class NcclTable:
    """An nccl-tests result table, in SI units.

    Attributes
    ----------
    n_bytes, count : ndarray
        The "size" (bytes) and "count" (elements) columns.
    dtype : list of str
    seconds : ndarray
        The "time" column converted from microseconds.
    algbw, busbw : ndarray
        As printed, converted from GB/s (nccl-tests divides by 1e9) to bytes/s.
    meta : dict
        The file's ``# key: value`` header lines: source, status (whether it
        is a verified measurement), collective, p, notes.
    """

    name: str
    n_bytes: np.ndarray
    count: np.ndarray
    dtype: list
    seconds: np.ndarray
    algbw: np.ndarray
    busbw: np.ndarray
    meta: dict
    decimals: list = field(default_factory=list, repr=False)  # per row: (time_us, algbw, busbw) decimals

    @property
    def collective(self) -> str:
        return self.meta.get("collective", "allreduce")

    @property
    def p(self) -> int:
        return int(self.meta["p"])

    @property
    def verified(self) -> bool:
        return self.meta.get("status", "").lower().startswith("verified")


_ITEMSIZE = {"float": 4, "half": 2, "bfloat16": 2, "double": 8, "int32": 4, "int8": 1, "uint8": 1,
             "int64": 8, "uint64": 8, "int": 4, "float32": 4, "float16": 2, "float64": 8}


def load_nccl_table(name="nccl_tests_h100_seed") -> NcclTable:
    """Load a shipped nccl-tests table from ``distlib/data/<name>.csv``.

    ``"nccl_tests_h100_seed"`` is the 8x H100 ``all_reduce_perf`` table the
    course's source material prints. It is an *illustrative example*, not a
    verified measurement (``table.verified`` is False); see its ``meta``.

    Examples
    --------
    >>> tab = load_nccl_table("nccl_tests_h100_seed")
    >>> tab.p, tab.collective, tab.verified
    (8, 'allreduce', False)
    >>> float(tab.seconds[-1]), float(tab.n_bytes[-1])
    (0.00721, 1073741824.0)
    """
    if not isinstance(name, str) or not name.replace("_", "").isalnum():
        raise ValueError(f"name must be the name of a shipped table such as 'nccl_tests_h100_seed', got {name!r}")
    path = resources.files("distlib") / "data" / f"{name}.csv"
    if not path.is_file():
        available = sorted(p.name[:-4] for p in (resources.files("distlib") / "data").iterdir()
                           if p.name.startswith("nccl") and p.name.endswith(".csv"))
        raise ValueError(f"name must be one of {available}; got {name!r}")
    meta: dict = {}
    rows = []
    with path.open("r", encoding="utf-8") as fh:
        lines = []
        for line in fh:
            if line.startswith("#"):
                key, _, value = line[1:].partition(":")
                if value:
                    k = key.strip()
                    meta[k] = (meta[k] + " " + value.strip()) if k in meta else value.strip()
            elif line.strip():
                lines.append(line)
        for row in csv.DictReader(lines):
            rows.append(row)
    n_bytes = np.array([float(r["size_bytes"]) for r in rows])
    return NcclTable(
        name=name,
        n_bytes=n_bytes,
        count=np.array([int(r["count"]) for r in rows]),
        dtype=[r["type"] for r in rows],
        seconds=np.array([float(r["time_us"]) for r in rows]) / 1e6,
        algbw=np.array([float(r["algbw_GBps"]) for r in rows]) * 1e9,
        busbw=np.array([float(r["busbw_GBps"]) for r in rows]) * 1e9,
        meta=meta,
        decimals=[tuple(_decimals(r[c]) for c in ("time_us", "algbw_GBps", "busbw_GBps")) for r in rows],
    )


def _decimals(text: str) -> int:
    text = text.strip()
    return len(text.split(".")[1]) if "." in text else 0


def check_nccl_table(table: NcclTable, *, allow_rounding: bool = True) -> list:
    """Rows of an nccl-tests table that disagree with its own definitions.

    Checks every row for ``count == size / itemsize``, ``algbw == size /
    time`` and ``busbw == algbw * bus_factor(collective, p)`` (GB/s = 1e9
    bytes/s, as nccl-tests prints).

    Parameters
    ----------
    allow_rounding : bool
        True: a printed number only has to be reachable from *some* true
        values that round to the printed ones (time within half its last
        printed digit, algbw within half a unit of its last decimal), i.e.
        the row could have come from nccl-tests. False: recompute algbw and
        busbw from the printed size and time and compare at the printed
        decimals.

    Returns
    -------
    list of dict
        One entry per disagreement: ``row``, ``column``, ``printed`` and
        ``expected`` (recomputed from the printed size and time), in the
        printed unit.

    Examples
    --------
    >>> tab = load_nccl_table()
    >>> [(e["row"], e["column"]) for e in check_nccl_table(tab, allow_rounding=False)]
    [(3, 'busbw'), (4, 'busbw'), (5, 'busbw'), (6, 'busbw')]
    >>> [(e["row"], e["printed"], e["expected"]) for e in check_nccl_table(tab)]  # beyond rounding
    [(4, 186.99, 187.01), (6, 260.61, 260.62)]
    """
    if not isinstance(table, NcclTable):
        raise TypeError(f"table must be an NcclTable from load_nccl_table(), got {type(table).__name__}")
    factor = bus_factor(table.collective, table.p)
    problems = []
    for i in range(len(table.n_bytes)):
        size, t = table.n_bytes[i], table.seconds[i]
        item = _ITEMSIZE.get(table.dtype[i])
        if item is not None and table.count[i] * item != size:
            problems.append({"row": i, "column": "count", "printed": int(table.count[i]),
                             "expected": size / item})
        dec_alg, dec_bus = table.decimals[i][1], table.decimals[i][2]
        alg, bus = table.algbw[i] / 1e9, table.busbw[i] / 1e9
        exact_alg = size / t / 1e9
        if allow_rounding:
            dt = 0.5 * 10.0 ** -table.decimals[i][0] * 1e-6
            lo, hi = size / (t + dt) / 1e9, (size / (t - dt) / 1e9 if t > dt else math.inf)
            half_a, half_b = 0.5 * 10.0 ** -dec_alg, 0.5 * 10.0 ** -dec_bus
            ok_alg = lo - half_a - 1e-12 <= alg <= hi + half_a + 1e-12
            a_lo, a_hi = max(lo, alg - half_a), min(hi, alg + half_a)
            ok_bus = a_lo <= a_hi and factor * a_lo - half_b - 1e-12 <= bus <= factor * a_hi + half_b + 1e-12
        else:
            ok_alg = round(exact_alg, dec_alg) == round(alg, dec_alg)
            ok_bus = round(exact_alg * factor, dec_bus) == round(bus, dec_bus)
        if not ok_alg:
            problems.append({"row": i, "column": "algbw", "printed": round(float(alg), dec_alg),
                             "expected": round(float(exact_alg), dec_alg)})
        if not ok_bus:
            problems.append({"row": i, "column": "busbw", "printed": round(float(bus), dec_bus),
                             "expected": round(float(exact_alg * factor), dec_bus)})
    return problems


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
