"""The alpha-beta cost of an all-to-all: pairwise exchange against Bruck's algorithm.

Chapter 15 (expert parallelism) routes tokens to experts with an all-to-all;
chapter 14 (Ulysses) swaps heads for sequence with one. In an all-to-all every
rank holds ``n_bytes`` in all, cut into ``p`` blocks of ``n_bytes / p``, block
``j`` meant for rank ``j``; afterwards rank ``r`` holds block ``r`` of every
rank, in rank order. (MPI calls it ``MPI_Alltoall``, Bruck et al. the *index*
operation, torch ``all_to_all_single``.) ``n_bytes`` is what each rank sends
in all, its own block included, as nccl-tests' ``alltoall_perf`` counts it.

The same model as :mod:`distlib.collectives.costs`: one message of ``m``
bytes costs ``alpha + m / bandwidth`` (``bandwidth`` per link, one
direction), a rank sends one message and receives one at the same time, and
the time is ``A alpha + B n_bytes / bandwidth``. Local copies (Bruck's
rotations and packing) are left out.

Pairwise exchange
    ``p - 1`` rounds; in round ``k`` rank ``r`` sends its block for
    ``(r + k) mod p`` and receives from ``(r - k) mod p``. Every byte goes
    straight to its owner, so each rank sends ``(p - 1)/p n_bytes``, the
    least any algorithm can::

        T = (p - 1) alpha + (p - 1)/p n_bytes / bandwidth

    MPICH's long-message all-to-all (Thakur, Rabenseifner and Gropp,
    "Optimization of collective communication operations in MPICH", IJHPCA
    19(1), 2005, its section on all-to-all; its partners are ``r XOR k`` when ``p`` is a
    power of two, which costs the same).

Bruck's algorithm
    Bruck, Ho, Kipnis, Upfal and Weathersby, "Efficient algorithms for
    all-to-all communications in multiport message-passing systems", IEEE
    TPDS 8(11), 1997, the index algorithm with radix 2. Rank ``r`` first
    rotates its blocks so that place ``j`` holds the block for
    ``(r + j) mod p``. In round ``k = 0, 1, ..., L - 1`` (``L = ceil(log2
    p)``) it sends to ``r + 2**k`` every block whose place ``j`` has bit
    ``k`` set, and receives the same places from ``r - 2**k``. A block at
    place ``j`` thus travels ``j`` ranks in the rounds of ``j``'s set bits,
    and ends on its owner; a last local rotation puts the blocks in source
    order. Round ``k`` carries

        c_k(p) = #{1 <= j < p : bit k of j is 1}

    blocks (the indexed type MPICH's ``alltoall_intra_brucks.c`` builds each
    round), and over all rounds ``S(p) = sum_k c_k(p)``, the number of one
    bits in ``0, 1, ..., p - 1``. So::

        T = L alpha + S(p)/p n_bytes / bandwidth

    For ``p`` a power of two ``c_k = p/2`` and ``S(p) = (p/2) log2 p``: the
    ``lg p alpha + (n/2) lg p beta`` of Thakur et al. (2005). For
    other ``p`` the rounds carry fewer blocks than ``p/2`` and that formula
    over-counts: ``S(5) = 5`` blocks, not ``(5/2) * 3``.

Bruck sends fewer messages and more bytes: it wins for short blocks, pairwise
for long ones. MPICH takes Bruck for blocks up to 256 bytes on 8 ranks or
more (Thakur et al. 2005). With ``p = 1`` the all-to-all is free.
"""

from __future__ import annotations

from .._check import check_choice, check_int, check_real
from .costs import _link, _n_bytes, alpha_beta_time
from .names import ALLTOALL_ALGORITHMS

__all__ = [
    "ALLTOALL_ALGORITHMS",
    "bruck_blocks_per_round",
    "alltoall_coefficients",
    "alltoall_time",
    "fastest_alltoall",
    "alltoall_crossover_size",
]


def bruck_blocks_per_round(p) -> tuple:
    """Blocks each rank sends in each round of Bruck's all-to-all: ``c_k(p)`` for ``k = 0 .. ceil(log2 p) - 1``.

    ``c_k(p)`` counts the places ``1 <= j < p`` whose bit ``k`` is 1 (the
    module docstring derives it). In closed form, with ``q = 2**(k+1)``:
    ``c_k(p) = floor(p / q) * 2**k + max(0, p mod q - 2**k)``.

    Parameters
    ----------
    p : int
        Ranks (>= 1).

    Returns
    -------
    tuple of int
        One count per round; empty for ``p = 1``.

    Examples
    --------
    >>> bruck_blocks_per_round(8)        # a power of two: p/2 every round
    (4, 4, 4)
    >>> bruck_blocks_per_round(5)        # places 1, 3 | 2, 3 | 4
    (2, 2, 1)
    >>> bruck_blocks_per_round(1)
    ()
    """
    p = check_int("p", p, minimum=1)
    rounds = (p - 1).bit_length()  # ceil(log2 p)
    out = []
    for k in range(rounds):
        half, q = 1 << k, 1 << (k + 1)
        out.append((p // q) * half + max(0, p % q - half))
    return tuple(out)


def alltoall_coefficients(p, *, algorithm="pairwise") -> tuple:
    """``(A, B)`` such that an all-to-all takes ``A * alpha + B * n_bytes / bandwidth``.

    ``A`` counts rounds (messages one after the other), ``B`` the bytes each
    rank sends as a multiple of ``n_bytes``. Pairwise: ``(p - 1, (p - 1)/p)``;
    Bruck: ``(ceil(log2 p), S(p)/p)`` with ``S(p)`` the sum of
    :func:`bruck_blocks_per_round`. The module docstring derives both.

    Parameters
    ----------
    p : int
        Ranks (>= 1).
    algorithm : {"pairwise", "bruck"}

    Examples
    --------
    >>> alltoall_coefficients(8)                          # 7 rounds, 7/8 of the data
    (7, 0.875)
    >>> alltoall_coefficients(8, algorithm="bruck")       # 3 rounds of half the data
    (3, 1.5)
    >>> alltoall_coefficients(6, algorithm="bruck")       # 3 + 2 + 2 blocks of 6
    (3, 1.1666666666666667)
    >>> alltoall_coefficients(4, algorithm="ring")
    Traceback (most recent call last):
    ...
    ValueError: algorithm must be one of 'pairwise', 'bruck'; got 'ring'
    """
    algorithm = check_choice("algorithm", algorithm, ALLTOALL_ALGORITHMS)
    p = check_int("p", p, minimum=1)
    if p == 1:
        return (0, 0.0)
    if algorithm == "pairwise":
        return (p - 1, (p - 1) / p)
    blocks = bruck_blocks_per_round(p)
    return (len(blocks), sum(blocks) / p)


def alltoall_time(n_bytes, p, *, alpha, bandwidth, algorithm="pairwise"):
    """Alpha-beta time of an all-to-all in seconds, each rank holding ``n_bytes`` in all.

    Parameters
    ----------
    n_bytes : float or array_like
        Bytes each rank holds (and sends, its own block included): ``p``
        blocks of ``n_bytes / p`` (>= 0). An array gives an array of times.
    p : int
        Ranks (>= 1).
    alpha : float
        Per-message latency in seconds (>= 0).
    bandwidth : float
        Per-link bandwidth in bytes/s, one direction (> 0).
    algorithm : {"pairwise", "bruck"}
        See the module docstring for each formula and its source.

    Returns
    -------
    float or ndarray

    Raises
    ------
    ValueError
        Naming the argument: an unknown algorithm, ``p < 1``, a negative or
        NaN ``n_bytes`` or ``alpha``, ``bandwidth <= 0``.

    Examples
    --------
    Pairwise, 8 ranks, 1 GB each, 5 us, 100 GB/s: ``7 * 5e-6 + 7/8 * 1e9 / 100e9``:

    >>> round(alltoall_time(1e9, 8, alpha=5e-6, bandwidth=100e9), 9)
    0.008785
    >>> round(alltoall_time(1e9, 8, alpha=5e-6, bandwidth=100e9, algorithm="bruck"), 9)   # 3 alpha + 1.5 n / bw
    0.015015
    >>> alltoall_time(1e6, 0, alpha=1e-6, bandwidth=1e9)
    Traceback (most recent call last):
    ...
    ValueError: p must be an integer >= 1, got 0
    """
    n = _n_bytes(n_bytes)
    alpha, bandwidth = _link(alpha, bandwidth)
    a, b = alltoall_coefficients(p, algorithm=algorithm)
    return alpha_beta_time(a, b, n, alpha=alpha, bandwidth=bandwidth)


def fastest_alltoall(n_bytes, p, *, alpha, bandwidth) -> str:
    """``"bruck"`` or ``"pairwise"``: the one the model says is faster (``"pairwise"`` on a tie).

    On 2 or 3 ranks the two are the same schedule in cost (``S(p) = p - 1``
    and ``ceil(log2 p) = p - 1``), so the tie goes to pairwise, which sends
    no byte twice.

    Examples
    --------
    64 ranks, 5 us, 50 GB/s: 64 KiB in all (1 KiB blocks) is latency, 64 MiB is bytes:

    >>> fastest_alltoall(2**16, 64, alpha=5e-6, bandwidth=50e9), fastest_alltoall(2**26, 64, alpha=5e-6, bandwidth=50e9)
    ('bruck', 'pairwise')
    """
    n = check_real("n_bytes", n_bytes, minimum=0)
    pair = alltoall_time(n, p, alpha=alpha, bandwidth=bandwidth, algorithm="pairwise")
    bruck = alltoall_time(n, p, alpha=alpha, bandwidth=bandwidth, algorithm="bruck")
    return "bruck" if bruck < pair else "pairwise"


def alltoall_crossover_size(p, *, alpha, bandwidth):
    """``n_bytes`` (each rank's total) below which Bruck's all-to-all is faster than pairwise, or None.

    Both times are straight lines in ``n``; they cross at::

        n* = (A_pair - A_bruck) / (B_bruck - B_pair) * alpha * bandwidth
           = p (p - 1 - ceil(log2 p)) / (S(p) - p + 1) * alpha * bandwidth

    None when they never cross: ``p <= 3`` (the same cost) or ``alpha = 0``
    (pairwise never slower).

    Examples
    --------
    For ``p = 8``: ``8 * (7 - 3) / (12 - 7) = 6.4`` times ``alpha * bandwidth``;
    with 5 us and 50 GB/s, 1.6 MB in all, 200 kB blocks:

    >>> round(alltoall_crossover_size(8, alpha=5e-6, bandwidth=50e9))
    1600000
    >>> alltoall_crossover_size(3, alpha=5e-6, bandwidth=50e9) is None
    True
    """
    alpha, bandwidth = _link(alpha, bandwidth)
    a1, b1 = alltoall_coefficients(p, algorithm="pairwise")
    a2, b2 = alltoall_coefficients(p, algorithm="bruck")
    if b2 <= b1 or a1 <= a2 or alpha == 0:
        return None
    return float((a1 - a2) / (b2 - b1) * alpha * bandwidth)

