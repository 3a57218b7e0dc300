"""Context parallelism: attention with the sequence split over ranks, exact, balanced, and what it costs.

The chapter "Context parallelism" teaches this module. A causal decoder's
query at position ``i`` needs the key and value of every position ``j <= i``,
so a rank that holds a slice of the sequence cannot finish its attention
alone. This module computes that attention in pieces and says what the
pieces cost; it is pure NumPy (the trainer's ranks,
:mod:`distlib.train.context_parallel`, run the same functions over real
messages).

**Online softmax** (Milakov and Gimelshein 2018; FlashAttention, Dao et al.
2022). Attention over keys split into blocks is exact if each block's
partial result carries its row's log-sum-exp ``lse = m + log l`` (``m`` the
running maximum of the scores, ``l`` the sum of their exponentials shifted
by ``m``): two partials merge as

    m = max(lse1, lse2),  w_i = exp(lse_i - m),  lse = m + log(w1 + w2),
    o = (w1 o1 + w2 o2) / (w1 + w2)

(:func:`merge_partials`). :func:`online_softmax_attention` checks it against
:func:`softmax_attention` for any split.

**Ring attention** (Liu, Zaharia and Abbeel 2023). Each of ``cp`` ranks keeps
its queries; the key/value blocks travel round the ring ``r -> r + 1`` in
``cp - 1`` hops, each hop's transfer running while the rank computes on the
block it already holds. The backward pass sends the blocks round again, and
with them the gradients of keys and values, which arrive home after their
own ``cp - 1`` hops (:func:`ring_attention` simulates both on arrays).

**Balance.** Cut contiguously, rank ``c`` of ``cp`` holds queries
``c n .. (c+1) n - 1`` (``n = s / cp``) and computes ``n^2 c + n (n + 1) / 2``
query-key pairs: the last rank about ``2 cp - 1`` times the first. Cut into
``2 cp`` chunks with rank ``c`` holding chunks ``c`` and ``2 cp - 1 - c``
(Llama 3, Grattafiori et al. 2024, section 3.3.2), every rank computes
``m^2 (2 cp - 1) + m (m + 1)`` pairs (``m = s / (2 cp)``): the same
(:func:`causal_pairs`).

**Three ways to bring the keys** (:data:`distlib.layout.CP_KINDS`):
``"ring"`` (point to point, hidden under compute when a block's work is
large enough, :func:`ring_overlap_tokens`), ``"allgather"`` (Llama 3's: one
all-gather of K and V, exposed but small with grouped-query attention's few
key/value heads) and ``"ulysses"`` (DeepSpeed-Ulysses, Jacobs et al. 2023:
an all-to-all turns the sequence split into a head split, so each rank runs
whole-sequence attention for ``heads / cp`` heads, and another turns it
back; ``cp`` must divide the heads). :func:`cp_comm` counts each one's bytes,
messages and latency terms per rank; :func:`cp_layer` puts memory and time
per rank together; :func:`ring_timeline` lays a ring's hops on chapter 8's
two streams (:class:`distlib.overlap.Event`).

Units: bytes, seconds, FLOP, FLOP/s, bytes/s (one direction), as everywhere.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ._check import check_bool, check_choice, check_int, check_real
from .activations import activation_bytes_per_layer
from .collectives import collective_time, p2p_time
from .collectives.alltoall import alltoall_time as _collectives_alltoall_time
from .layout import CP_KINDS
from .overlap.schedule import COMM, Event

__all__ = ["CP_KINDS", "SPLITS", "FORWARD_MATMULS", "BACKWARD_MATMULS", "cp_chunks", "cp_positions",
           "softmax_attention", "softmax_attention_backward", "block_attention", "block_attention_backward",
           "merge_partials", "online_softmax_attention", "RingHop", "RingAttention", "ring_attention",
           "causal_pairs", "chunk_pairs", "work_imbalance", "alltoall_time", "CPComm", "cp_comm",
           "cp_collectives", "RingTimeline", "ring_timeline", "ring_work", "RingSchedule", "ring_schedule",
           "ring_overlap_tokens", "ring_step_saving", "CPLayer", "cp_layer", "cp_activation_bytes_per_layer"]

SPLITS = ("zigzag", "contiguous")
"""How the sequence is cut over the ranks: ``2 cp`` zig-zag chunks (rank ``c``: chunks ``c`` and ``2 cp - 1 - c``),
or ``cp`` contiguous pieces."""
FORWARD_MATMULS = 2
"""Matrix products of attention's forward over one block: ``Q K^T`` and ``P V`` (``2 n_q n_k d`` FLOPs each)."""
BACKWARD_MATMULS = 5
"""Matrix products of FlashAttention's backward over one block: ``Q K^T`` again, ``dV``, ``dP``, ``dQ``, ``dK``."""


# ---- where each rank's positions are -------------------------------------------------------------------------


def cp_chunks(seq: int, cp: int, rank: int, *, split: str = "zigzag") -> tuple:
    """The ``(start, stop)`` position ranges rank ``rank`` of ``cp`` holds of a sequence of ``seq`` tokens, in order.

    Parameters
    ----------
    seq, cp, rank : int
        Tokens per sequence, context-parallel ranks, this rank (``0 <= rank < cp``).
    split : {"zigzag", "contiguous"}
        ``"zigzag"``: ``2 cp`` chunks of ``seq / (2 cp)``, rank ``c`` holding chunks ``c`` and ``2 cp - 1 - c``
        (``seq`` a multiple of ``2 cp``); ``"contiguous"``: one piece of ``seq / cp``.

    Examples
    --------
    >>> [cp_chunks(16, 4, r) for r in range(4)]
    [((0, 2), (14, 16)), ((2, 4), (12, 14)), ((4, 6), (10, 12)), ((6, 8), (8, 10))]
    >>> cp_chunks(16, 4, 3, split="contiguous")
    ((12, 16),)
    """
    seq, cp = check_int("seq", seq, minimum=1), check_int("cp", cp, minimum=1)
    rank = check_int("rank", rank, minimum=0, maximum=cp - 1)
    split = check_choice("split", split, SPLITS)
    pieces = 2 * cp if split == "zigzag" else cp
    if seq % pieces:
        raise ValueError(f"seq must be a multiple of {'2 x cp' if split == 'zigzag' else 'cp'} ({pieces}) "
                         f"with split={split!r}, got {seq}")
    m = seq // pieces
    if split == "contiguous":
        return ((rank * m, (rank + 1) * m),)
    last = 2 * cp - 1 - rank
    return ((rank * m, (rank + 1) * m), (last * m, (last + 1) * m))


def cp_positions(seq: int, cp: int, rank: int, *, split: str = "zigzag") -> np.ndarray:
    """The positions rank ``rank`` holds (:func:`cp_chunks`), as one integer array.

    >>> cp_positions(8, 2, 0).tolist(), cp_positions(8, 2, 1).tolist()
    ([0, 1, 6, 7], [2, 3, 4, 5])
    """
    return np.concatenate([np.arange(a, b) for a, b in cp_chunks(seq, cp, rank, split=split)])


def _offsets(chunks) -> list:
    """``(start, stop, offset)`` of each chunk, ``offset`` where it starts in the rank's local array."""
    out, offset = [], 0
    for a, b in chunks:
        out.append((a, b, offset))
        offset += b - a
    return out


def _relation(qa: int, qb: int, ka: int, kb: int) -> str:
    """How queries ``qa..qb-1`` see keys ``ka..kb-1`` under the causal mask: ``"none"``, ``"all"`` or ``"some"``."""
    if ka > qb - 1:
        return "none"
    if kb - 1 <= qa:
        return "all"
    return "some"


# ---- attention, whole and in blocks ---------------------------------------------------------------------------


def _qkv(q, k, v):
    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    if q.ndim < 2 or k.shape[:-2] != q.shape[:-2] or v.shape[:-1] != k.shape[:-1] or k.shape[-1] != q.shape[-1]:
        raise ValueError(f"q, k, v must be (..., n_q, d), (..., n_k, d), (..., n_k, d_v) with the same leading axes, "
                         f"got {q.shape}, {k.shape}, {v.shape}")
    return q, k, v


def _scale(d: int) -> float:
    return 1.0 / math.sqrt(d)


def softmax_attention(q, k, v, *, causal: bool = True) -> np.ndarray:
    """Attention the plain way: ``softmax(Q K^T / sqrt(d)) V``, the whole score matrix at once.

    Arrays are ``(..., n, d)``; with ``causal`` query ``i`` sees keys ``0..i`` (``n_q == n_k``).

    >>> q = k = v = np.eye(2)
    >>> softmax_attention(q, k, v).round(3).tolist()     # row 0 sees itself only
    [[1.0, 0.0], [0.33, 0.67]]
    """
    q, k, v = _qkv(q, k, v)
    s = (q @ np.swapaxes(k, -1, -2)) * _scale(q.shape[-1])
    if check_bool("causal", causal):
        n = s.shape[-1]
        s = np.where(np.tril(np.ones((s.shape[-2], n), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def softmax_attention_backward(q, k, v, grad_output, *, causal: bool = True) -> tuple:
    """``(dq, dk, dv)`` of :func:`softmax_attention` for the output's gradient ``grad_output`` (the textbook way).

    >>> q, k, v = (np.random.default_rng(0).standard_normal((3, 4)) for _ in range(3))
    >>> dq, dk, dv = softmax_attention_backward(q, k, v, np.ones((3, 4)))
    >>> bool(np.allclose(dv.sum(axis=0), 3.0))           # every row's probabilities sum to one
    True
    """
    q, k, v = _qkv(q, k, v)
    scale = _scale(q.shape[-1])
    s = (q @ np.swapaxes(k, -1, -2)) * scale
    if check_bool("causal", causal):
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    do = np.asarray(grad_output, dtype=float)
    dp = do @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) * scale
    return ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ do


def _softmax_part(s, v):
    """One block's normalized output and log-sum-exp; rows that see no key get output 0 and ``lse = -inf``."""
    m = s.max(axis=-1)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m_safe[..., None])
    l = p.sum(axis=-1)
    seen = l > 0
    lse = np.where(seen, m_safe + np.log(np.where(seen, l, 1.0)), -np.inf)
    return (p @ v) / np.where(seen, l, 1.0)[..., None], lse


def merge_partials(o1, lse1, o2, lse2) -> tuple:
    """Two partial attentions of the same queries over disjoint keys, merged exactly: ``(o, lse)``.

    ``o`` is each row's output normalized over its own keys and ``lse`` the log-sum-exp of its scores
    (``-inf`` where a row saw no key). The larger ``lse`` is the running maximum; the other is rescaled by
    ``exp(lse_i - max)``, as FlashAttention rescales its accumulator (Dao et al. 2022, Algorithm 1).

    Examples
    --------
    One query, two keys with scores 0 and ``log 3`` and values 1 and 5, seen one at a time: weights 1/4 and 3/4.

    >>> o, lse = merge_partials(np.array([[1.0]]), np.array([0.0]), np.array([[5.0]]), np.array([np.log(3.0)]))
    >>> o.item(), round(float(np.exp(lse).item()), 12)
    (4.0, 4.0)
    """
    o1, o2 = np.asarray(o1, dtype=float), np.asarray(o2, dtype=float)
    lse1, lse2 = np.asarray(lse1, dtype=float), np.asarray(lse2, dtype=float)
    m = np.maximum(lse1, lse2)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    w1, w2 = np.exp(lse1 - m_safe), np.exp(lse2 - m_safe)
    total = w1 + w2
    seen = total > 0
    lse = np.where(seen, m_safe + np.log(np.where(seen, total, 1.0)), -np.inf)
    o = (w1[..., None] * o1 + w2[..., None] * o2) / np.where(seen, total, 1.0)[..., None]
    return o, lse


def _lead(q) -> int:
    return int(np.prod(q.shape[:-2], dtype=np.int64))


def chunk_pairs(q_chunks, k_chunks) -> list:
    """The causal work between queries in ``q_chunks`` and keys in ``k_chunks`` (both ``(start, stop)`` lists).

    One ``(q_slice, k_slice, masked)`` per pair of chunks that shares any query-key pair, the slices into the
    local arrays; ``masked`` when only some of the pair's queries see some of its keys (a diagonal piece).

    >>> chunk_pairs(((0, 2), (6, 8)), ((2, 4), (4, 6)))      # rank 0's queries, rank 1's keys: the late chunk
    [(slice(2, 4, None), slice(0, 2, None), False), (slice(2, 4, None), slice(2, 4, None), False)]
    """
    out = []
    for qa, qb, qo in _offsets(q_chunks):
        for ka, kb, ko in _offsets(k_chunks):
            how = _relation(qa, qb, ka, kb)
            if how != "none":
                out.append((slice(qo, qo + qb - qa), slice(ko, ko + kb - ka), how == "some"))
    return out


def _masked_scores(q, k, qpos, kpos, masked, scale):
    s = (q @ np.swapaxes(k, -1, -2)) * scale
    if masked:
        s = np.where(kpos[None, :] <= qpos[:, None], s, -np.inf)
    return s


def block_attention(q, k, v, *, q_chunks, k_chunks) -> tuple:
    """Causal attention of queries ``q`` (at ``q_chunks``) over one block of keys ``k``, ``v`` (at ``k_chunks``).

    Works chunk pair by chunk pair (:func:`chunk_pairs`): pairs the mask hides entirely are skipped, the
    others computed and merged (:func:`merge_partials`).

    Returns
    -------
    tuple
        ``(o, lse, flops)``: the partial output ``(..., n_q, d_v)``, its log-sum-exp ``(..., n_q)`` (``-inf``
        for rows that saw no key) and the FLOPs of the products run, ``2 n_q n_k d`` each
        (:data:`FORWARD_MATMULS` of them per chunk pair).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> q, k, v = (rng.standard_normal((8, 4)) for _ in range(3))
    >>> whole = ((0, 8),)
    >>> o, lse, flops = block_attention(q, k, v, q_chunks=whole, k_chunks=whole)
    >>> bool(np.allclose(o, softmax_attention(q, k, v))), flops == 2 * 2 * 8 * 8 * 4
    (True, True)
    """
    q, k, v = _qkv(q, k, v)
    qpos = np.concatenate([np.arange(a, b) for a, b in q_chunks])
    kpos = np.concatenate([np.arange(a, b) for a, b in k_chunks])
    if len(qpos) != q.shape[-2] or len(kpos) != k.shape[-2]:
        raise ValueError(f"q_chunks and k_chunks must cover q's {q.shape[-2]} and k's {k.shape[-2]} rows, "
                         f"got {len(qpos)} and {len(kpos)}")
    o = np.zeros(q.shape[:-1] + (v.shape[-1],))
    lse = np.full(q.shape[:-1], -np.inf)
    scale, flops = _scale(q.shape[-1]), 0
    for qs, ks, masked in chunk_pairs(q_chunks, k_chunks):
        s = _masked_scores(q[..., qs, :], k[..., ks, :], qpos[qs], kpos[ks], masked, scale)
        part, part_lse = _softmax_part(s, v[..., ks, :])
        o[..., qs, :], lse[..., qs] = merge_partials(o[..., qs, :], lse[..., qs], part, part_lse)
        flops += FORWARD_MATMULS * 2 * _lead(q) * (qs.stop - qs.start) * (ks.stop - ks.start) * q.shape[-1]
    return o, lse, flops


def block_attention_backward(q, k, v, out, lse, grad_output, *, q_chunks, k_chunks) -> tuple:
    """One block's share of attention's backward (FlashAttention's): ``(dq, dk, dv, flops)``.

    ``out`` and ``lse`` are the queries' *final* output and log-sum-exp (over every key, not this block's), so
    ``P = exp(S - lse)`` is this block's piece of the true probabilities; ``dq`` is this block's contribution
    to the queries' gradient, ``dk`` and ``dv`` the whole gradient of this block's keys and values from these
    queries. FLOPs: :data:`BACKWARD_MATMULS` products per chunk pair.

    Examples
    --------
    One block holding every key gives the textbook gradient:

    >>> rng = np.random.default_rng(2)
    >>> q, k, v, do = (rng.standard_normal((6, 3)) for _ in range(4))
    >>> whole = ((0, 6),)
    >>> o, lse, _ = block_attention(q, k, v, q_chunks=whole, k_chunks=whole)
    >>> mine = block_attention_backward(q, k, v, o, lse, do, q_chunks=whole, k_chunks=whole)[:3]
    >>> all(np.allclose(a, b) for a, b in zip(mine, softmax_attention_backward(q, k, v, do)))
    True
    """
    q, k, v = _qkv(q, k, v)
    out, lse, do = (np.asarray(a, dtype=float) for a in (out, lse, grad_output))
    qpos = np.concatenate([np.arange(a, b) for a, b in q_chunks])
    kpos = np.concatenate([np.arange(a, b) for a, b in k_chunks])
    delta = (do * out).sum(axis=-1)
    lse_safe = np.where(np.isfinite(lse), lse, 0.0)
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    scale, flops = _scale(q.shape[-1]), 0
    for qs, ks, masked in chunk_pairs(q_chunks, k_chunks):
        s = _masked_scores(q[..., qs, :], k[..., ks, :], qpos[qs], kpos[ks], masked, scale)
        p = np.where(np.isfinite(s), np.exp(s - lse_safe[..., qs, None]), 0.0)
        dv[..., ks, :] += np.swapaxes(p, -1, -2) @ do[..., qs, :]
        ds = p * (do[..., qs, :] @ np.swapaxes(v[..., ks, :], -1, -2) - delta[..., qs, None]) * scale
        dq[..., qs, :] += ds @ k[..., ks, :]
        dk[..., ks, :] += np.swapaxes(ds, -1, -2) @ q[..., qs, :]
        flops += BACKWARD_MATMULS * 2 * _lead(q) * (qs.stop - qs.start) * (ks.stop - ks.start) * q.shape[-1]
    return dq, dk, dv, flops


def online_softmax_attention(q, k, v, *, blocks, causal: bool = True) -> tuple:
    """Attention with the keys and values taken ``blocks[i]`` at a time, merged by :func:`merge_partials`.

    Parameters
    ----------
    q, k, v : array_like
        ``(..., n, d)``.
    blocks : sequence of int
        Lengths (>= 1) of consecutive key blocks; they must add up to ``n``.
    causal : bool

    Returns
    -------
    tuple
        ``(output, lse)``; equal to :func:`softmax_attention` (to rounding) for any ``blocks``.

    Examples
    --------
    >>> rng = np.random.default_rng(3)
    >>> q, k, v = (rng.standard_normal((2, 7, 4)) for _ in range(3))
    >>> out, _ = online_softmax_attention(q, k, v, blocks=[3, 1, 3])
    >>> bool(np.allclose(out, softmax_attention(q, k, v)))
    True
    """
    q, k, v = _qkv(q, k, v)
    sizes = [check_int("blocks[i]", b, minimum=1) for b in blocks]
    n = k.shape[-2]
    if sum(sizes) != n:
        raise ValueError(f"blocks must add up to the {n} keys, got {sum(sizes)}")
    whole = ((0, q.shape[-2]),)
    o, lse = np.zeros(q.shape[:-1] + (v.shape[-1],)), np.full(q.shape[:-1], -np.inf)
    start = 0
    for size in sizes:
        ks = slice(start, start + size)
        if causal:
            part, part_lse, _ = block_attention(q, k[..., ks, :], v[..., ks, :], q_chunks=whole,
                                                k_chunks=((start, start + size),))
        else:
            part, part_lse = _softmax_part((q @ np.swapaxes(k[..., ks, :], -1, -2)) * _scale(q.shape[-1]),
                                           v[..., ks, :])
        o, lse = merge_partials(o, lse, part, part_lse)
        start += size
    return o, lse


# ---- ring attention, simulated on arrays ----------------------------------------------------------------------


@dataclass(frozen=True)
class RingHop:
    """One message of a ring: in ``phase`` (``"forward"``/``"backward"``), hop ``step`` (1-based), rank ``src``
    sends ``dst`` the keys and values (``what="kv"``) or their gradients (``"dkv"``) of rank ``block``'s
    positions, ``n_bytes`` bytes."""

    phase: str
    step: int
    what: str
    src: int
    dst: int
    block: int
    n_bytes: int


@dataclass(frozen=True)
class RingAttention:
    """What :func:`ring_attention` computed and sent.

    Attributes
    ----------
    cp : int
    split : str
    output, lse : ndarray
        The attention output ``(..., s, d)`` and log-sum-exp ``(..., s)``, back in position order.
    dq, dk, dv : ndarray or None
        The gradients (position order), when a ``grad_output`` was given.
    hops : tuple of RingHop
        Every message, in the order sent.
    forward_flops, backward_flops : ndarray, shape (cp,)
        Each rank's attention FLOPs (products actually run: masked chunk pairs skipped).
    forward_seconds, backward_seconds : ndarray, shape (cp,)
        Each rank's measured compute time (this process, one rank after another).
    """

    cp: int
    split: str
    output: np.ndarray
    lse: np.ndarray
    hops: tuple
    forward_flops: np.ndarray
    backward_flops: np.ndarray
    forward_seconds: np.ndarray
    backward_seconds: np.ndarray
    dq: np.ndarray | None = None
    dk: np.ndarray | None = None
    dv: np.ndarray | None = None

    def held(self, step: int) -> list:
        """The rank whose keys and values each rank computes with at forward hop ``step`` (0: its own)."""
        step = check_int("step", step, minimum=0, maximum=self.cp - 1)
        return [(r - step) % self.cp for r in range(self.cp)]

    @property
    def bytes_sent(self) -> np.ndarray:
        """Bytes each rank sent, forward and backward."""
        out = np.zeros(self.cp, dtype=np.int64)
        for hop in self.hops:
            out[hop.src] += hop.n_bytes
        return out

    @property
    def messages(self) -> np.ndarray:
        """Messages each rank sent."""
        return np.bincount([hop.src for hop in self.hops], minlength=self.cp)


def _ring_forward(local, chunks, cp):
    """Each rank's queries against every block in ring order: ``(states, hops, flops, seconds)``."""
    states = [(np.zeros(q.shape[:-1] + (v.shape[-1],)), np.full(q.shape[:-1], -np.inf)) for q, _, v in local]
    held, hops = list(range(cp)), []
    flops, seconds = np.zeros(cp, dtype=np.int64), np.zeros(cp)
    for h in range(cp):
        if h:
            hops += [RingHop("forward", h, "kv", r, (r + 1) % cp, held[r],
                             local[held[r]][1].nbytes + local[held[r]][2].nbytes) for r in range(cp)]
            held = [held[(r - 1) % cp] for r in range(cp)]
        for r in range(cp):
            j, start = held[r], time.perf_counter()
            o, lse, f = block_attention(local[r][0], local[j][1], local[j][2], q_chunks=chunks[r], k_chunks=chunks[j])
            states[r] = merge_partials(*states[r], o, lse)
            flops[r] += f
            seconds[r] += time.perf_counter() - start
    return states, hops, flops, seconds


def _ring_backward(local, states, grads, chunks, cp):
    """The backward: blocks round the ring again, each block's key/value gradient following it home.

    The owner keeps its own share; the share of the ranks after it travels with the block and reaches the
    owner after ``cp - 1`` hops (``dkv``). Returns ``(dq, dk, dv, hops, flops, seconds)`` per rank.
    """
    dq = [np.zeros_like(q) for q, _, _ in local]
    own, travelling = [None] * cp, [None] * cp
    held, hops = list(range(cp)), []
    flops, seconds = np.zeros(cp, dtype=np.int64), np.zeros(cp)
    for h in range(cp):
        if h:
            hops += [RingHop("backward", h, "kv", r, (r + 1) % cp, held[r],
                             local[held[r]][1].nbytes + local[held[r]][2].nbytes) for r in range(cp)]
            held = [held[(r - 1) % cp] for r in range(cp)]
        leaving = [None] * cp
        for r in range(cp):
            j, start = held[r], time.perf_counter()
            gq, gk, gv, f = block_attention_backward(local[r][0], local[j][1], local[j][2], *states[r], grads[r],
                                                     q_chunks=chunks[r], k_chunks=chunks[j])
            dq[r] += gq
            if h == 0:
                own[r] = (gk, gv)
            else:
                if travelling[r] is not None:  # what the ranks before this one added to block j's gradient
                    assert travelling[r][0] == j
                    gk, gv = gk + travelling[r][1], gv + travelling[r][2]
                leaving[r] = (j, gk, gv)
            flops[r] += f
            seconds[r] += time.perf_counter() - start
        if h:
            hops += [RingHop("backward", h, "dkv", r, (r + 1) % cp, leaving[r][0],
                             leaving[r][1].nbytes + leaving[r][2].nbytes) for r in range(cp)]
            travelling = [leaving[(r - 1) % cp] for r in range(cp)]
    dk, dv = [], []
    for r in range(cp):
        home = travelling[r] if cp > 1 else (r, 0.0, 0.0)
        assert home[0] == r  # every block's gradient has come home
        dk.append(own[r][0] + home[1])
        dv.append(own[r][1] + home[2])
    return dq, dk, dv, hops, flops, seconds


def _scatter(parts, positions, like_shape):
    out = np.empty(like_shape)
    for part, where in zip(parts, positions):
        out[..., where, :] = part
    return out


def ring_attention(q, k, v, *, cp: int, split: str = "zigzag", grad_output=None) -> RingAttention:
    """Causal ring attention over ``cp`` simulated ranks: each keeps its queries, the key/value blocks travel.

    Rank ``r`` holds the positions :func:`cp_chunks` gives it. At hop ``h`` (``0 .. cp - 1``) it computes
    its queries against the block of rank ``r - h`` (:func:`block_attention`) and merges the partial result
    (:func:`merge_partials`); between hops every rank passes the block it holds to rank ``r + 1``. With
    ``grad_output`` the backward runs too: the blocks go round again, and each block's key/value gradient
    travels with it and reaches its owner after ``cp - 1`` hops (FlashAttention's backward per block,
    :func:`block_attention_backward`).

    Parameters
    ----------
    q, k, v : array_like
        ``(..., s, d)``, the whole sequence in position order (self-attention: the same ``s``).
    cp : int
        Ranks (``s`` a multiple of ``2 cp`` for ``"zigzag"``, of ``cp`` for ``"contiguous"``).
    split : {"zigzag", "contiguous"}
    grad_output : array_like, optional
        The gradient of the output, ``(..., s, d_v)``.

    Returns
    -------
    RingAttention

    Examples
    --------
    Four ranks: equal to one process, in ``3`` hops each way, every rank doing the same work:

    >>> rng = np.random.default_rng(0)
    >>> q, k, v, do = (rng.standard_normal((2, 16, 4)) for _ in range(4))
    >>> r = ring_attention(q, k, v, cp=4, grad_output=do)
    >>> bool(np.allclose(r.output, softmax_attention(q, k, v))), max(h.step for h in r.hops)
    (True, 3)
    >>> all(np.allclose(a, b) for a, b in zip((r.dq, r.dk, r.dv), softmax_attention_backward(q, k, v, do)))
    True
    >>> r.forward_flops.tolist() == [r.forward_flops[0]] * 4, r.held(1)
    (True, [3, 0, 1, 2])
    """
    q, k, v = _qkv(q, k, v)
    cp = check_int("cp", cp, minimum=1)
    split = check_choice("split", split, SPLITS)
    s = q.shape[-2]
    if k.shape[-2] != s:
        raise ValueError(f"ring attention is self-attention: q and k must have the same length, got {s} and "
                         f"{k.shape[-2]}")
    chunks = [cp_chunks(s, cp, r, split=split) for r in range(cp)]
    positions = [cp_positions(s, cp, r, split=split) for r in range(cp)]
    local = [(q[..., p, :], k[..., p, :], v[..., p, :]) for p in positions]
    states, hops, fflops, fsec = _ring_forward(local, chunks, cp)
    out = _scatter([o for o, _ in states], positions, q.shape[:-1] + (v.shape[-1],))
    lse = np.empty(q.shape[:-1])
    for (_, part), where in zip(states, positions):
        lse[..., where] = part
    extra, bflops, bsec = {}, np.zeros(cp, dtype=np.int64), np.zeros(cp)
    if grad_output is not None:
        do = np.asarray(grad_output, dtype=float)
        if do.shape != out.shape:
            raise ValueError(f"grad_output must have the output's shape {out.shape}, got {do.shape}")
        dq, dk, dv, back, bflops, bsec = _ring_backward(local, states, [do[..., p, :] for p in positions], chunks, cp)
        hops = hops + back
        extra = dict(dq=_scatter(dq, positions, q.shape), dk=_scatter(dk, positions, k.shape),
                     dv=_scatter(dv, positions, v.shape))
    return RingAttention(cp=cp, split=split, output=out, lse=lse, hops=tuple(hops), forward_flops=fflops,
                         backward_flops=bflops, forward_seconds=fsec, backward_seconds=bsec, **extra)


# ---- the causal mask's work per rank ---------------------------------------------------------------------------


def causal_pairs(seq: int, cp: int, *, split: str = "zigzag") -> np.ndarray:
    """Query-key pairs (key at or before query) each of ``cp`` ranks computes: its attention work, exactly.

    Contiguous, rank ``c``: ``n^2 c + n (n + 1) / 2`` with ``n = seq / cp``. Zig-zag, every rank:
    ``m^2 (2 cp - 1) + m (m + 1)`` with ``m = seq / (2 cp)``.

    Examples
    --------
    >>> causal_pairs(16, 4, split="contiguous").tolist()      # n = 4: 10, 26, 42, 58
    [10, 26, 42, 58]
    >>> causal_pairs(16, 4).tolist()                          # m = 2: 4 * 7 + 6
    [34, 34, 34, 34]
    >>> n = 1024; r = causal_pairs(4 * n, 4, split="contiguous"); bool(r[-1] / r[0] == 1 + 2 * 3 * n / (n + 1))
    True
    """
    out = []
    for rank in range(check_int("cp", cp, minimum=1)):
        out.append(sum((b * (b + 1) - a * (a + 1)) // 2 for a, b in cp_chunks(seq, cp, rank, split=split)))
    return np.array(out, dtype=np.int64)


def work_imbalance(work) -> float:
    """The busiest rank's work over the least busy's (1: balanced).

    >>> work_imbalance([10, 26, 42, 58])
    5.8
    """
    work = np.asarray(work, dtype=float)
    if work.size == 0 or np.any(work <= 0):
        raise ValueError(f"work must hold one positive amount per rank, got {work.tolist()}")
    return float(work.max() / work.min())


# ---- what each kind sends -------------------------------------------------------------------------------------


def alltoall_time(n_bytes, p: int, *, alpha, bandwidth) -> float:
    """Seconds of a pairwise-exchange all-to-all of ``n_bytes`` per rank over ``p`` ranks.

    ``p - 1`` steps; in each, every rank sends ``n_bytes / p`` to one partner:
    ``(p - 1) alpha + (p - 1) / p * n_bytes / bandwidth``. The formula's home is
    :func:`distlib.collectives.alltoall_time` (which also models Bruck's algorithm);
    this asks it.

    >>> round(alltoall_time(8e6, 4, alpha=1e-5, bandwidth=1e9) * 1e3, 9)    # 3 x 10 us + 6 ms
    6.03
    """
    return _collectives_alltoall_time(n_bytes, p, alpha=alpha, bandwidth=bandwidth, algorithm="pairwise")


def _heads_per_rank(heads: int, kv_heads, tp: int) -> tuple:
    heads, tp = check_int("heads", heads, minimum=1), check_int("tp", tp, minimum=1)
    kv_heads = heads if kv_heads is None else check_int("kv_heads", kv_heads, minimum=1, maximum=heads)
    if heads % tp:
        raise ValueError(f"tp must divide the {heads} heads, got {tp}")
    if max(kv_heads, tp) % min(kv_heads, tp):
        raise ValueError(f"tp and the {kv_heads} key/value heads must divide one another, got tp={tp}")
    return heads // tp, max(kv_heads // tp, 1)  # fewer key/value heads than TP ranks: each rank holds one copy


@dataclass(frozen=True)
class CPComm:
    """What one rank sends for one layer's attention under context parallelism, one microbatch, forward and back.

    Attributes
    ----------
    kind : str
    cp : int
    forward_bytes, backward_bytes : float
        Bytes this rank sends.
    forward_messages, backward_messages : int
        Messages this rank sends.
    forward_steps, backward_steps : int
        Latency terms: message steps one after another on the critical path, each paying ``alpha``.
    collectives : tuple
        ``(name, n_bytes, phase)`` of each collective or message, ``n_bytes`` as
        :func:`distlib.collective_time` counts them (the gathered result for an all-gather, the per-rank
        buffer for an all-to-all, the message for ``"p2p"``).
    """

    kind: str
    cp: int
    forward_bytes: float
    backward_bytes: float
    forward_messages: int
    backward_messages: int
    forward_steps: int
    backward_steps: int
    collectives: tuple = field(repr=False)

    @property
    def bytes(self) -> float:
        """Forward and backward bytes."""
        return self.forward_bytes + self.backward_bytes

    @property
    def messages(self) -> int:
        """Forward and backward messages."""
        return self.forward_messages + self.backward_messages

    def time(self, *, alpha, bandwidth, phase: str | None = None) -> float:
        """Seconds, sent one after another with nothing overlapped (``phase`` ``"forward"``/``"backward"``: one)."""
        phases = ("forward", "backward") if phase is None else (check_choice("phase", phase, ("forward", "backward")),)
        total = 0.0
        for name, n_bytes, when in self.collectives:
            if when not in phases:
                continue
            if name == "p2p":
                total += p2p_time(n_bytes, alpha=alpha, bandwidth=bandwidth)
            elif name == "alltoall":
                total += alltoall_time(n_bytes, self.cp, alpha=alpha, bandwidth=bandwidth)
            else:
                total += collective_time(name, n_bytes, self.cp, alpha=alpha, bandwidth=bandwidth)
        return total


def cp_comm(kind: str, *, seq: int, heads: int, head_dim: int, cp: int, batch: int = 1, kv_heads: int | None = None,
            tp: int = 1, bytes_per_value: int = 2) -> CPComm:
    """Bytes, messages and latency terms one rank sends for one layer's attention (forward and backward).

    With ``n = seq / cp`` tokens a rank, ``H = heads / tp`` query heads and ``H_kv`` key/value heads a
    tensor-parallel rank (at least one), one rank's keys and values are ``P = 2 b n H_kv d`` values:

    * ``"ring"``: forward ``cp - 1`` hops of ``P``; backward ``cp - 1`` hops of ``P`` again and ``cp - 1`` of
      its gradient: ``3 (cp - 1) P`` in ``3 (cp - 1)`` messages.
    * ``"allgather"``: an all-gather of ``P`` from every rank forward, again backward (nothing but the local
      block is kept), and a reduce-scatter of the gradients: ``3 (cp - 1) P`` too (ring algorithms), but as
      three collectives that cannot hide under the attention they feed.
    * ``"ulysses"``: four all-to-alls, each rank sending ``(cp - 1) / cp`` of its buffer: the queries, keys
      and values (``b n d (H + 2 H_kv')``) and the output (``b n d H``) forward, the same two backward;
      ``H_kv' = max(H_kv, cp)`` (too few key/value heads are copied). ``cp`` must divide ``H``.

    Parameters
    ----------
    kind : {"ring", "allgather", "ulysses"}
    seq, heads, head_dim, cp : int
    batch : int
        Sequences in the microbatch.
    kv_heads : int, optional
        Key/value heads (grouped-query attention); default ``heads``.
    tp : int
        Tensor-parallel ranks (they split the heads).
    bytes_per_value : int
        2 for bf16, 8 for the book's float64 trainer.

    Examples
    --------
    The book's trainer at ``cp = 2``: one sequence of 16 tokens, 4 heads of 8 in float64 (``P`` = 4096 bytes):

    >>> [cp_comm(k, seq=16, heads=4, head_dim=8, cp=2, bytes_per_value=8).bytes for k in CP_KINDS]
    [12288.0, 12288.0, 8192.0]
    >>> c = cp_comm("ring", seq=16, heads=4, head_dim=8, cp=4, bytes_per_value=8)
    >>> c.forward_messages, c.backward_messages, c.bytes == 3 * 3 * 2048
    (3, 6, True)
    """
    kind = check_choice("kind", kind, CP_KINDS)
    cp, seq = check_int("cp", cp, minimum=1), check_int("seq", seq, minimum=1)
    d, b = check_int("head_dim", head_dim, minimum=1), check_int("batch", batch, minimum=1)
    beta = check_int("bytes_per_value", bytes_per_value, minimum=1)
    if seq % cp:
        raise ValueError(f"cp must divide the sequence of {seq} tokens, got {cp}")
    h, hkv = _heads_per_rank(heads, kv_heads, tp)
    n = seq // cp
    piece = float(2 * b * n * hkv * d * beta)
    if cp == 1:
        return CPComm(kind, 1, 0.0, 0.0, 0, 0, 0, 0, ())
    if kind == "ring":
        hops = [("p2p", piece, "forward")] * (cp - 1) + [("p2p", piece, "backward")] * (2 * (cp - 1))
        return CPComm(kind, cp, (cp - 1) * piece, 2 * (cp - 1) * piece, cp - 1, 2 * (cp - 1), cp - 1,
                      2 * (cp - 1), tuple(hops))
    if kind == "allgather":
        ops = (("allgather", cp * piece, "forward"), ("allgather", cp * piece, "backward"),
               ("reduce_scatter", cp * piece, "backward"))
        return CPComm(kind, cp, (cp - 1) * piece, 2 * (cp - 1) * piece, cp - 1, 2 * (cp - 1), cp - 1,
                      2 * (cp - 1), ops)
    if h % cp:
        raise ValueError(f"cp must divide the {h} heads of each tensor-parallel rank with kind='ulysses' "
                         f"(its all-to-all hands each rank whole heads), got {cp}")
    kv_sent = max(hkv, cp)
    if max(hkv, cp) % min(hkv, cp):
        raise ValueError(f"cp and the {hkv} key/value heads of each tensor-parallel rank must divide one "
                         f"another with kind='ulysses', got cp={cp}")
    qkv, single = b * n * d * (h + 2 * kv_sent) * beta, b * n * d * h * beta
    ops = (("alltoall", qkv, "forward"), ("alltoall", single, "forward"), ("alltoall", single, "backward"),
           ("alltoall", qkv, "backward"))
    sent = (cp - 1) / cp * (qkv + single)
    return CPComm(kind, cp, sent, sent, 2 * (cp - 1), 2 * (cp - 1), 2 * (cp - 1), 2 * (cp - 1), ops)


def cp_collectives(kind: str, **shape) -> tuple:
    """``(collective, n_bytes)`` of every collective or message of one layer's attention, forward then backward.

    What a planner prices on its own cluster model (chapter 13's :func:`distlib.layout_step` asks for
    ``"allgather"``); ``shape`` as :func:`cp_comm` takes it.

    >>> cp_collectives("allgather", seq=16, heads=4, head_dim=8, cp=2, bytes_per_value=8)
    (('allgather', 8192.0), ('allgather', 8192.0), ('reduce_scatter', 8192.0))
    """
    return tuple((name, n_bytes) for name, n_bytes, _ in cp_comm(kind, **shape).collectives)


# ---- a ring's hops on chapter 8's two streams -------------------------------------------------------------------


@dataclass(frozen=True)
class RingTimeline:
    """One rank's pass round the ring: a block's compute on one stream, the hops on one channel.

    Attributes
    ----------
    compute_times : ndarray, shape (cp,)
        Hop ``h``'s compute (the block of rank ``r - h``).
    comm_times : ndarray, shape (cp - 1,)
        Hop ``h + 1``'s transfer.
    overlap : bool
    compute_start, compute_end, comm_start, comm_end : ndarray
    """

    compute_times: np.ndarray
    comm_times: np.ndarray
    overlap: bool
    compute_start: np.ndarray
    compute_end: np.ndarray
    comm_start: np.ndarray
    comm_end: np.ndarray

    @property
    def step_time(self) -> float:
        """When the last block's compute ends."""
        return float(self.compute_end[-1])

    @property
    def exposed_comm(self) -> float:
        """Seconds the compute stream waited for a hop: ``step_time`` minus every block's compute."""
        return max(self.step_time - math.fsum(self.compute_times), 0.0)

    @property
    def hidden_comm(self) -> float:
        """Transfer seconds that ran under compute."""
        return max(math.fsum(self.comm_times) - self.exposed_comm, 0.0)

    @property
    def events(self) -> list:
        """Every interval as chapter 8's :class:`~distlib.overlap.Event` (compute as ``"forward"``)."""
        out = [Event("forward", f"block {h}", float(a), float(b), h)
               for h, (a, b) in enumerate(zip(self.compute_start, self.compute_end))]
        return out + [Event(COMM, f"hop {h + 1}", float(a), float(b), h)
                      for h, (a, b) in enumerate(zip(self.comm_start, self.comm_end))]


def ring_timeline(compute_times, comm_times, *, overlap: bool = True) -> RingTimeline:
    """Lay one rank's ring out in time: each block's compute, and each hop's transfer on one channel.

    With ``overlap`` the next hop is posted when a block's compute starts (the rank sends the block it holds
    and receives the next while it computes, Liu et al. 2023), so transfer ``h + 1`` starts at
    ``max(compute h starts, channel free)`` (chapter 8's rule) and compute ``h + 1`` at
    ``max(compute h ends, transfer h + 1 ends)``. Without, each hop follows the compute before it. Closed
    forms for equal times ``c`` and ``t``: overlapped ``c + (cp - 1) max(c, t)``, blocking
    ``cp c + (cp - 1) t``.

    Parameters
    ----------
    compute_times : sequence of float
        ``cp`` blocks' compute seconds (>= 0), in ring order.
    comm_times : float or sequence of float
        Each hop's transfer seconds: one value for every hop, or ``cp - 1``.
    overlap : bool

    Examples
    --------
    >>> ring_timeline([2.0] * 4, 1.0).step_time, ring_timeline([2.0] * 4, 1.0, overlap=False).step_time
    (8.0, 11.0)
    >>> t = ring_timeline([1.0] * 4, 3.0)                  # transfers longer than blocks: 1 + 3 x 3
    >>> t.step_time, t.exposed_comm, t.hidden_comm
    (10.0, 6.0, 3.0)
    """
    c = np.asarray([check_real("compute_times[i]", x, minimum=0) for x in compute_times], dtype=float)
    if c.size == 0:
        raise ValueError("compute_times must hold one time per block (cp >= 1), got none")
    n = c.size
    if np.ndim(comm_times) == 0:
        t = np.full(n - 1, check_real("comm_times", comm_times, minimum=0))
    else:
        t = np.asarray([check_real("comm_times[i]", x, minimum=0) for x in comm_times], dtype=float)
        if t.size != n - 1:
            raise ValueError(f"comm_times must hold one time per hop ({n - 1}), got {t.size}")
    overlap = check_bool("overlap", overlap)
    cs, ce, ts, te = np.zeros(n), np.zeros(n), np.zeros(n - 1), np.zeros(n - 1)
    free = 0.0
    for h in range(n):
        ready = ce[h - 1] if h else 0.0
        cs[h] = max(ready, te[h - 1]) if h else 0.0
        ce[h] = cs[h] + c[h]
        if h < n - 1:
            ts[h] = max(cs[h] if overlap else ce[h], free)
            free = te[h] = ts[h] + t[h]
    return RingTimeline(compute_times=c, comm_times=t, overlap=overlap, compute_start=cs, compute_end=ce,
                        comm_start=ts, comm_end=te)


def ring_work(seq: int, cp: int, *, split: str = "zigzag") -> np.ndarray:
    """Query-key pairs rank ``r`` computes at hop ``h`` (with the keys of rank ``r - h``): a ``(cp, cp)`` array.

    Each row adds up to the rank's :func:`causal_pairs`.

    >>> ring_work(16, 4, split="contiguous")[3].tolist(), ring_work(16, 4)[3].tolist()
    ([10, 16, 16, 16], [10, 8, 8, 8])
    """
    cp = check_int("cp", cp, minimum=1)
    chunks = [cp_chunks(seq, cp, r, split=split) for r in range(cp)]
    out = np.zeros((cp, cp), dtype=np.int64)
    for r in range(cp):
        for h in range(cp):
            out[r, h] = sum(_pairs(qa, qb, ka, kb) for qa, qb in chunks[r] for ka, kb in chunks[(r - h) % cp])
    return out


def _pairs(qa: int, qb: int, ka: int, kb: int) -> int:
    """Pairs ``(q, k)`` with ``qa <= q < qb``, ``ka <= k < kb`` and ``k <= q``."""
    lo, hi = max(qa, ka), min(qb, kb)
    some = (hi - lo) * (lo - ka + 1 + hi - ka) // 2 if hi > lo else 0  # queries among the keys: a triangle
    return some + max(0, qb - max(qa, kb)) * (kb - ka)  # queries after every key: all of them


@dataclass(frozen=True)
class RingSchedule:
    """Every rank's pass round the ring, each waiting for the block its neighbour passes on.

    Attributes
    ----------
    compute_times : ndarray, shape (cp, cp)
        Rank ``r``'s compute at hop ``h``.
    comm_time : float
        One hop's transfer.
    overlap : bool
    compute_start, compute_end : ndarray, shape (cp, cp)
    """

    compute_times: np.ndarray
    comm_time: float
    overlap: bool
    compute_start: np.ndarray
    compute_end: np.ndarray

    @property
    def step_time(self) -> float:
        """When the last rank's last block is done."""
        return float(self.compute_end[:, -1].max())

    @property
    def busy(self) -> np.ndarray:
        """Each rank's compute seconds."""
        return self.compute_times.sum(axis=1)

    @property
    def idle(self) -> np.ndarray:
        """Each rank's seconds without compute until the step ends: waiting for hops, or done early."""
        return self.step_time - self.busy


def ring_schedule(compute_times, comm_time, *, overlap: bool = True) -> RingSchedule:
    """Lay every rank's ring out in time: rank ``r`` gets hop ``h``'s block from rank ``r - 1``.

    A hop's transfer starts once both neighbours have posted it: overlapped, when each starts the compute
    of the block before (the sender passes on the block it is computing with); blocking, when each has
    finished it. It takes ``comm_time``. A rank computes hop ``h`` once hop ``h - 1`` is done and the block
    has arrived (blocking: and its own send of the block before has gone). With every rank's times equal
    this is :func:`ring_timeline`; with a contiguous split's unequal blocks the ranks with less work wait.

    Examples
    --------
    >>> r = ring_schedule(np.full((4, 4), 2.0), 1.0)
    >>> r.step_time == ring_timeline([2.0] * 4, 1.0).step_time
    True
    >>> uneven = ring_schedule(ring_work(16, 4, split="contiguous") / 16, 0.1)
    >>> uneven.step_time, uneven.idle.round(2).tolist()
    (3.625, [3.0, 2.0, 1.0, 0.0])
    """
    c = np.asarray(compute_times, dtype=float)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or c.size == 0 or np.any(~np.isfinite(c)) or np.any(c < 0):
        raise ValueError(f"compute_times must be a square (cp, cp) array of seconds >= 0, got shape {c.shape}")
    t = check_real("comm_time", comm_time, minimum=0)
    overlap = check_bool("overlap", overlap)
    p = c.shape[0]
    start, end = np.zeros_like(c), np.zeros_like(c)
    for h in range(p):
        for r in range(p):
            start[r, h] = end[r, h - 1] if h else 0.0
        if h:
            posted = start[:, h - 1] if overlap else end[:, h - 1]
            arrive = np.array([max(posted[(r - 1) % p], posted[r]) + t for r in range(p)])
            sent = np.roll(arrive, -1)  # rank r's own send ends when rank r + 1 has it
            start[:, h] = np.maximum(start[:, h], arrive if overlap else np.maximum(arrive, sent))
        end[:, h] = start[:, h] + c[:, h]
    return RingSchedule(compute_times=c, comm_time=t, overlap=overlap, compute_start=start, compute_end=end)


def ring_overlap_tokens(*, flops, bandwidth, heads: int, head_dim: int, kv_heads: int | None = None,
                        alpha: float = 0.0, bytes_per_value: int = 2, work: float = 1.0) -> float:
    """The fewest tokens per rank at which a ring's hop hides under the compute of the block before it.

    A hop of ``n`` tokens' keys and values takes ``alpha + 2 n H_kv d beta / B`` (``beta`` bytes a value,
    ``B`` the link's bandwidth); the block it hides under costs ``w 4 n^2 H d`` FLOPs at ``F`` FLOP/s, ``w``
    the share of the block the causal mask leaves (1: every pair; 1/2: a zig-zag rank's blocks after its
    own). Per sequence and layer, hiding needs ``4 w H d n^2 / F >= alpha + 2 H_kv d beta n / B``, so

        n* = (c + sqrt(c^2 + 4 a alpha)) / (2 a),  a = 4 w H d / F,  c = 2 H_kv d beta / B,

    and without latency ``n* = (F / B) (beta / 2) (H_kv / H) / w``: Liu et al.'s ``c >= F / B`` for bf16,
    full blocks and as many key/value heads as query heads.

    Examples
    --------
    >>> round(ring_overlap_tokens(flops=1e15, bandwidth=50e9, heads=32, head_dim=128), 6)        # F / B
    20000.0
    >>> round(ring_overlap_tokens(flops=1e15, bandwidth=50e9, heads=32, head_dim=128, kv_heads=8, work=0.5), 6)
    10000.0
    """
    f = check_real("flops", flops, minimum=0, strict_min=True)
    bw = check_real("bandwidth", bandwidth, minimum=0, strict_min=True)
    h, d = check_int("heads", heads, minimum=1), check_int("head_dim", head_dim, minimum=1)
    hkv = h if kv_heads is None else check_int("kv_heads", kv_heads, minimum=1, maximum=h)
    alpha = check_real("alpha", alpha, minimum=0)
    beta = check_int("bytes_per_value", bytes_per_value, minimum=1)
    w = check_real("work", work, minimum=0, maximum=1, strict_min=True)
    a, c = 4 * w * h * d / f, 2 * hkv * d * beta / bw
    return float((c + math.sqrt(c * c + 4 * a * alpha)) / (2 * a))


def ring_step_saving(*, layers: int, cp: int, attention_seconds: float, hop_seconds: float) -> float:
    """Seconds of a training step that overlapping a zig-zag ring saves over the blocking ring.

    Each of ``layers`` layers runs a forward and a backward pass round the ring. ``attention_seconds`` is one
    layer's attention compute on one rank, forward and backward (what the trainer measures), shared out by
    FLOPs: :data:`FORWARD_MATMULS` against :data:`BACKWARD_MATMULS` between the passes, and within a pass
    three chunk pairs for the rank's own block and two for each other (the zig-zag split). A forward hop
    carries one block (``hop_seconds``), a backward hop the block and a block's gradient (twice that). Each
    pass's saving is the blocking :func:`ring_timeline` minus the overlapped one.

    Examples
    --------
    Two ranks, blocks far longer than hops: every hop hides, ``3 (cp - 1)`` hops a layer.

    >>> round(ring_step_saving(layers=4, cp=2, attention_seconds=1.0, hop_seconds=0.01), 9)
    0.12
    """
    layers, cp = check_int("layers", layers, minimum=1), check_int("cp", cp, minimum=1)
    seconds = check_real("attention_seconds", attention_seconds, minimum=0)
    hop = check_real("hop_seconds", hop_seconds, minimum=0)
    share = [3.0] + [2.0] * (cp - 1)
    total, saving = FORWARD_MATMULS + BACKWARD_MATMULS, 0.0
    for matmuls, transfer in ((FORWARD_MATMULS, hop), (BACKWARD_MATMULS, 2 * hop)):
        blocks = [seconds * matmuls / total * s / sum(share) for s in share]
        saving += ring_timeline(blocks, transfer, overlap=False).step_time - ring_timeline(blocks, transfer).step_time
    return layers * saving


# ---- memory and time per rank ---------------------------------------------------------------------------------


def cp_activation_bytes_per_layer(seq: int, micro_batch: int, hidden: int, heads: int, *, cp: int = 1, tp: int = 1,
                                  sequence_parallel: bool = False, recompute: str = "selective",
                                  ffn_hidden: int | None = None, kv_heads: int | None = None,
                                  gated_ffn: bool = False) -> float:
    """Bytes of activations one layer keeps for its backward pass on one GPU, the sequence cut ``cp`` ways.

    Everything but attention is position by position, so a rank keeps Korthikanti et al.'s count
    (:func:`distlib.activation_bytes_per_layer`) for its ``seq / cp`` tokens. Attention keeps its queries,
    keys, values and output for those tokens too, and nothing of the other ranks' blocks (the ring passes
    them on; the all-gather is done again in the backward pass). Only when the scores themselves are kept
    (``recompute="none"``, no FlashAttention) does a rank keep more: its queries' ``5`` bytes a score against
    *every* key, ``5 a b (s / cp) s / t``, where the count for ``s / cp`` tokens has ``5 a b (s / cp)^2 / t``.

    Examples
    --------
    Llama 3 405B at 128K tokens over CP 16 keeps what it keeps at 8K without CP:

    >>> llama = dict(ffn_hidden=53248, kv_heads=8, gated_ffn=True, tp=8, sequence_parallel=True)
    >>> cp_activation_bytes_per_layer(131072, 1, 16384, 128, cp=16, **llama) == \\
    ...     cp_activation_bytes_per_layer(8192, 1, 16384, 128, **llama)
    True
    >>> one, two = (cp_activation_bytes_per_layer(2048, 1, 1024, 16, cp=c, recompute="none") for c in (1, 2))
    >>> one == 2 * two                                   # kept scores too: half the rows, every key
    True
    """
    cp = check_int("cp", cp, minimum=1)
    seq = check_int("seq", seq, minimum=1)
    if seq % cp:
        raise ValueError(f"cp must divide the sequence of {seq} tokens, got {cp}")
    n = seq // cp
    kept = activation_bytes_per_layer(n, micro_batch, hidden, heads, tp=tp, sequence_parallel=sequence_parallel,
                                      recompute=recompute, ffn_hidden=ffn_hidden, kv_heads=kv_heads,
                                      gated_ffn=gated_ffn)
    if recompute == "none":
        kept += 5 * heads * micro_batch * n * (seq - n) / tp
    return kept


@dataclass(frozen=True)
class CPLayer:
    """One layer's attention on one rank under context parallelism, one microbatch, forward and backward.

    Attributes
    ----------
    kind : str
    seq, cp, tp, tokens : int
        The sequence, the degrees, and the tokens each rank holds (``seq / cp``).
    activation_bytes : float
        Activations the layer keeps for its backward pass on one GPU (:func:`cp_activation_bytes_per_layer`).
    transient_bytes : float
        Key/value bytes held only while the layer's attention runs: the gathered sequence (all-gather), two
        blocks (ring: the one computed, the one arriving), the other heads' positions (Ulysses).
    attention_flops, attention_seconds : float
        The rank's attention products (zig-zag, balanced; masked pairs skipped) and their time.
    comm : CPComm
    comm_seconds : float
        Every message, one after another.
    exposed_seconds : float
        What the attention waits for: the ring's hops that do not hide (:func:`ring_timeline`), all of it for
        the all-gather and the all-to-alls.
    """

    kind: str
    seq: int
    cp: int
    tp: int
    tokens: int
    activation_bytes: float
    transient_bytes: float
    attention_flops: float
    attention_seconds: float
    comm: CPComm
    comm_seconds: float
    exposed_seconds: float

    @property
    def time(self) -> float:
        """Attention's compute plus the communication it waits for."""
        return self.attention_seconds + self.exposed_seconds


def _ring_exposed(pairs_per_hop, coefficient, flops, hop_seconds) -> float:
    """Exposed seconds of a ring pass whose hops cost ``coefficient * pairs / flops`` and ``hop_seconds``."""
    return ring_timeline([coefficient * p / flops for p in pairs_per_hop], hop_seconds).exposed_comm


def cp_layer(kind: str, *, seq: int, cp: int, hidden: int, heads: int, flops: float, bandwidth: float,
             alpha: float = 0.0, tp: int = 1, kv_heads: int | None = None, micro_batch: int = 1,
             bytes_per_value: int = 2, sequence_parallel: bool = True, recompute: str = "selective",
             ffn_hidden: int | None = None, gated_ffn: bool = False) -> CPLayer:
    """Memory and time of one layer's attention on one rank: ``seq`` tokens over ``cp`` ranks, heads over ``tp``.

    ``flops`` is the rate the attention products run at (dense, achieved), ``bandwidth`` and ``alpha`` the
    link between context-parallel ranks (bytes/s one direction, seconds). Each rank's attention work is the
    zig-zag split's ``(2 cp - 1) m^2 + m (m + 1)`` query-key pairs per head (:func:`causal_pairs`), at
    ``2 d`` FLOPs a pair and product, :data:`FORWARD_MATMULS` + :data:`BACKWARD_MATMULS` products.

    Examples
    --------
    Llama 3 405B's layer at 128K tokens, TP 8 and CP 16 (bf16, H100s at 400 TFLOP/s over 50 GB/s):
    the all-gather adds a tenth of the attention's own time, the ring's hops would hide under it.

    >>> kw = dict(seq=131072, cp=16, hidden=16384, heads=128, kv_heads=8, tp=8, flops=400e12, bandwidth=50e9)
    >>> ag, ring = cp_layer("allgather", **kw), cp_layer("ring", **kw)
    >>> ag.tokens, round(ag.exposed_seconds / ag.attention_seconds, 3), ring.exposed_seconds
    (8192, 0.098, 0.0)
    >>> ag.comm.bytes == ring.comm.bytes
    True
    """
    kind = check_choice("kind", kind, CP_KINDS)
    hidden, heads = check_int("hidden", hidden, minimum=1), check_int("heads", heads, minimum=1)
    if hidden % heads:
        raise ValueError(f"heads must divide hidden ({hidden}), got {heads}")
    f = check_real("flops", flops, minimum=0, strict_min=True)
    d, b = hidden // heads, check_int("micro_batch", micro_batch, minimum=1)
    comm = cp_comm(kind, seq=seq, heads=heads, head_dim=d, cp=cp, batch=b, kv_heads=kv_heads, tp=tp,
                   bytes_per_value=bytes_per_value)
    h, hkv = _heads_per_rank(heads, kv_heads, tp)
    m = seq // (2 * cp) if seq % (2 * cp) == 0 else None
    pairs = float(causal_pairs(seq, cp)[0]) if m else (seq * (seq + 1) / 2) / cp
    per_pair = 2 * d * b * h
    work = (FORWARD_MATMULS + BACKWARD_MATMULS) * per_pair * pairs
    link = dict(alpha=alpha, bandwidth=bandwidth)
    total = comm.time(**link)
    piece = 2 * b * (seq // cp) * hkv * d * bytes_per_value
    if kind == "ring" and cp > 1:
        hops = [pairs - 2 * (cp - 1) * (m or 0) ** 2] + [2.0 * (m or 0) ** 2] * (cp - 1) if m else [pairs / cp] * cp
        hop = p2p_time(piece, **link)
        exposed = (_ring_exposed(hops, FORWARD_MATMULS * per_pair, f, hop)
                   + _ring_exposed(hops, BACKWARD_MATMULS * per_pair, f, 2 * hop))
        transient = 2.0 * piece
    else:
        exposed = total
        transient = float(cp * piece) if kind == "allgather" and cp > 1 else (float(piece) if cp > 1 else 0.0)
    kept = cp_activation_bytes_per_layer(seq, b, hidden, heads, cp=cp, tp=tp, sequence_parallel=sequence_parallel,
                                         recompute=recompute, ffn_hidden=ffn_hidden, kv_heads=kv_heads,
                                         gated_ffn=gated_ffn)
    return CPLayer(kind=kind, seq=seq, cp=cp, tp=tp, tokens=seq // cp, activation_bytes=kept,
                   transient_bytes=transient, attention_flops=work, attention_seconds=work / f, comm=comm,
                   comm_seconds=total, exposed_seconds=exposed)
