"""Context parallelism in the trainer: each rank's zig-zag positions, and their attention over the whole sequence.

With ``--cp C`` the ``C`` ranks of a context-parallel group (:meth:`distlib.layout.Layout.groups`' ``cp``)
hold the same parameters and the same sequences, but each only its positions of every sequence: the
``2 C`` zig-zag chunks ``c`` and ``2 C - 1 - c`` (:func:`distlib.context_parallel.cp_chunks`, as Llama 3
cuts them). Everything of the model but attention works position by position: the embeddings take this
rank's tokens and their positions, the norms, the MLP and the head see only them, and the loss is the mean
over this rank's tokens (every rank has as many, so the mean of the ranks' means is the whole batch's).
The gradients are then reduced over the ``dp x cp`` ranks that hold the same parameters (the layout's
``replicas``), as data parallelism reduces them.

Attention is the one place a rank needs the others: its queries need every earlier key.
:class:`ContextParallel` is the hook the model (:mod:`distlib.train.model`, which runs no communication)
is handed; it computes, by hand in float64 as the rest of the model, with the block functions of
:mod:`distlib.context_parallel` (FlashAttention's online softmax, forward and backward), and moves:

``"ring"``
    Ring attention (Liu et al. 2023): the key/value block goes round the group, ``C - 1`` hops. Each hop
    is posted before the compute of the block in hand (``overlap=True``, what the trainer runs): the
    non-blocking send and receive run under that compute. The backward sends the blocks round again, and
    each block's key/value gradient follows it to its owner (``C - 1`` hops, each sent once the block's
    compute is done and received under the next one's). ``overlap=False`` is the plain blocking ring:
    compute, then exchange; the same numbers.
``"allgather"``
    Llama 3's method: one all-gather of K and V before the attention (the book's ring all-gather), the
    same again in the backward pass (only the local block is kept), and a reduce-scatter of their
    gradients.
``"ulysses"``
    DeepSpeed-Ulysses (Jacobs et al. 2023): an all-to-all hands each rank ``heads / C`` of this tensor-
    parallel rank's heads for the whole sequence, attention runs whole for them, and a second all-to-all
    hands the outputs back; the backward does the same with the gradients. The all-to-all is a pairwise
    exchange (``C - 1`` steps of :meth:`~distlib.engines.comm.Comm.sendrecv`), written here until the
    book's collectives have one.

Each counts the attention FLOPs it ran and the seconds they took (:attr:`ContextParallel.flops`,
:attr:`ContextParallel.seconds`), for the balance the chapter measures.
"""

from __future__ import annotations

import time

import numpy as np

from .._check import check_bool, check_choice
from ..context_parallel import (SPLITS, block_attention, block_attention_backward, cp_chunks, cp_positions,
                                merge_partials)
from ..layout import CP_KINDS

__all__ = ["TAGS", "ContextParallel", "context_parallel", "alltoall_pairwise"]

TAGS = {"kv": 30001, "dkv": 30002, "alltoall": 30003}
"""Point-to-point tags of context parallelism's messages: apart from the collectives' (0) and the pipeline's
(small, :func:`distlib.train.pipeline_parallel.message_tag`)."""


def alltoall_pairwise(comm, pieces) -> list:
    """``pieces[j]`` to rank ``j`` of ``comm``; what every rank sent this one, in rank order (pairwise exchange).

    ``p - 1`` steps; at step ``k`` a rank sends to ``rank + k`` and receives from ``rank - k``, each piece the
    same size on every rank.

    >>> from distlib.engines.comm import run_threads
    >>> got = run_threads(lambda c: alltoall_pairwise(c, [np.full(2, 10 * c.rank + j) for j in range(3)]), 3)
    >>> [g.tolist() for g in got[1]]
    [[1.0, 1.0], [11.0, 11.0], [21.0, 21.0]]
    """
    p, r = comm.size, comm.rank
    out = [None] * p
    out[r] = np.ascontiguousarray(pieces[r], dtype=float).ravel()
    for step in range(1, p):
        dst, src = (r + step) % p, (r - step) % p
        send = np.ascontiguousarray(pieces[dst], dtype=float).ravel()
        recv = np.empty(send.size)
        comm.sendrecv(send, dst, recv, src, tag=TAGS["alltoall"])
        out[src] = recv
    return out


class ContextParallel:
    """The context-parallel group's attention, for :func:`~distlib.train.model.forward_unit` with ``cp``.

    Parameters
    ----------
    comm : Comm
        The context-parallel group (rank ``c`` holds chunks ``c`` and ``2 C - 1 - c``).
    kind : {"ring", "allgather", "ulysses"}
    seq : int
        Tokens per sequence.
    overlap : bool
        Ring only: post each hop before the compute it hides under (True), or exchange after it.
    split : {"zigzag", "contiguous"}
        How the sequence is cut (the trainer runs zig-zag; contiguous is for measuring what it cures).

    Attributes
    ----------
    positions : ndarray
        This rank's positions of every sequence, in the order its activations hold them.
    flops, seconds : int, float
        Attention FLOPs run and seconds spent in them, since the start.
    wait_seconds : float
        Seconds spent waiting for this group's messages (a hop not yet arrived, a collective), since the start:
        the communication the compute did not hide.

    Examples
    --------
    Two ranks' ring equals one process's causal attention:

    >>> from distlib.engines.comm import run_threads
    >>> from distlib.context_parallel import softmax_attention
    >>> q, k, v = (np.random.default_rng(i).standard_normal((1, 2, 8, 4)) for i in range(3))
    >>> def mine(comm):
    ...     cp = ContextParallel(comm, kind="ring", seq=8)
    ...     at = cp.positions
    ...     return cp.attention(q[:, :, at], k[:, :, at], v[:, :, at])[0], at
    >>> whole = softmax_attention(q, k, v)
    >>> all(np.allclose(o, whole[:, :, at]) for o, at in run_threads(mine, 2))
    True
    """

    def __init__(self, comm, *, kind: str, seq: int, overlap: bool = True, split: str = "zigzag"):
        self.comm, self.rank, self.size = comm, comm.rank, comm.size
        self.kind = check_choice("kind", kind, CP_KINDS)
        self.overlap = check_bool("overlap", overlap)
        self.split = check_choice("split", split, SPLITS)
        self.chunks = [cp_chunks(seq, self.size, r, split=self.split) for r in range(self.size)]
        self.positions = cp_positions(seq, self.size, self.rank, split=self.split)
        self.flops, self.seconds, self.wait_seconds = 0, 0.0, 0.0
        self._next, self._prev = (self.rank + 1) % self.size, (self.rank - 1) % self.size

    def local(self, tokens):
        """This rank's columns of ``(batch, seq)`` tokens or targets."""
        return np.ascontiguousarray(tokens[:, self.positions])

    # ---- what the model calls -------------------------------------------------------------------------------

    def attention(self, q, k, v) -> tuple:
        """Causal attention of this rank's queries over the whole sequence: ``(context, cache)``.

        ``q``, ``k``, ``v``: ``(batch, heads, n, head_dim)`` for this rank's ``n`` positions; the context has
        the shape of ``q``.
        """
        return getattr(self, f"_{self.kind}_forward")(q, k, v)

    def attention_backward(self, dctx, cache) -> tuple:
        """``(dq, dk, dv)`` for this rank's positions, from the context's gradient and :meth:`attention`'s cache."""
        return getattr(self, f"_{self.kind}_backward")(dctx, cache)

    # ---- counting -------------------------------------------------------------------------------------------

    def _waited(self, fn, *args, **kw):
        """``fn(*args, **kw)``, its seconds counted as waiting for messages."""
        start = time.perf_counter()
        out = fn(*args, **kw)
        self.wait_seconds += time.perf_counter() - start
        return out

    def _block(self, fn, *args, **chunks):
        start = time.perf_counter()
        out = fn(*args, **chunks)
        self.seconds += time.perf_counter() - start
        self.flops += out[-1]
        return out[:-1]

    # ---- the ring -------------------------------------------------------------------------------------------

    def _post(self, send, recv, what):
        """Start the hop (overlapped: non-blocking now) or keep it for :meth:`_done` (blocking)."""
        if self.overlap:
            return [self.comm.irecv(recv, self._prev, tag=TAGS[what]), self.comm.isend(send, self._next,
                                                                                       tag=TAGS[what])]
        return (send, recv, what)

    def _done(self, pending) -> None:
        if self.overlap:
            for req in pending:
                self._waited(req.wait)
        else:
            send, recv, what = pending
            self._waited(self.comm.sendrecv, send, self._next, recv, self._prev, tag=TAGS[what])

    def _split_kv(self, buf, shape):
        half = buf.size // 2
        return buf[:half].reshape(shape), buf[half:].reshape(shape)

    def _ring_forward(self, q, k, v):
        p, shape = self.size, k.shape
        cur = np.concatenate([k.ravel(), v.ravel()])
        o, lse = np.zeros(q.shape), np.full(q.shape[:-1], -np.inf)
        for h in range(p):
            j = (self.rank - h) % p
            nxt = np.empty_like(cur) if h < p - 1 else None
            pending = self._post(cur, nxt, "kv") if nxt is not None else None
            kj, vj = self._split_kv(cur, shape)
            part, part_lse = self._block(block_attention, q, kj, vj, q_chunks=self.chunks[self.rank],
                                         k_chunks=self.chunks[j])
            o, lse = merge_partials(o, lse, part, part_lse)
            if nxt is not None:
                self._done(pending)
                cur = nxt
        return o, (q, k, v, o, lse)

    def _ring_backward(self, do, cache):
        q, k, v, o, lse = cache
        p, shape, r = self.size, k.shape, self.rank
        cur = np.concatenate([k.ravel(), v.ravel()])
        dq, own, sends = np.zeros_like(q), None, []
        arriving = np.empty_like(cur)  # the gradient of the block in hand, from the ranks before this one
        for h in range(p):
            j = (r - h) % p
            nxt = np.empty_like(cur) if h < p - 1 else None
            pending = self._post(cur, nxt, "kv") if nxt is not None else None
            incoming = self.comm.irecv(arriving, self._prev, tag=TAGS["dkv"]) if self.overlap and h >= 2 else None
            kj, vj = self._split_kv(cur, shape)
            gq, gk, gv = self._block(block_attention_backward, q, kj, vj, o, lse, do,
                                     q_chunks=self.chunks[r], k_chunks=self.chunks[j])
            dq += gq
            if h == 0:
                own = np.concatenate([gk.ravel(), gv.ravel()])
            else:
                leaving = np.concatenate([gk.ravel(), gv.ravel()])
                if incoming is not None:
                    self._waited(incoming.wait)
                if h >= 2:
                    leaving += arriving
                sends += self._pass_gradient(leaving, arriving)
            if nxt is not None:
                self._done(pending)
                cur = nxt
        if self.overlap and p > 1:  # the own block's gradient, home after its last hop
            self._waited(self.comm.recv, arriving, self._prev, tag=TAGS["dkv"])
        for req in sends:
            self._waited(req.wait)
        total = own + arriving if p > 1 else own
        dk, dv = self._split_kv(total, shape)
        return dq, dk, dv

    def _pass_gradient(self, leaving, arriving) -> list:
        """Send the block's gradient on; blocking, also receive the next one (or the own block's, at the end)."""
        if self.overlap:
            return [self.comm.isend(leaving, self._next, tag=TAGS["dkv"])]
        self._waited(self.comm.sendrecv, leaving, self._next, arriving, self._prev, tag=TAGS["dkv"])
        return []

    # ---- the all-gather -------------------------------------------------------------------------------------

    def _gather(self, k, v):
        from ..engines.algorithms import allgather

        whole = self._waited(allgather, self.comm, np.concatenate([k.ravel(), v.ravel()]))
        whole = whole.reshape(self.size, 2, *k.shape)
        chunks = tuple(c for r in range(self.size) for c in self.chunks[r])
        return np.concatenate(list(whole[:, 0]), axis=-2), np.concatenate(list(whole[:, 1]), axis=-2), chunks

    def _allgather_forward(self, q, k, v):
        kf, vf, chunks = self._gather(k, v)
        o, lse = self._block(block_attention, q, kf, vf, q_chunks=self.chunks[self.rank], k_chunks=chunks)
        return o, (q, k, v, o, lse)  # the gathered K and V are not kept: the backward gathers them again

    def _allgather_backward(self, do, cache):
        from ..engines.algorithms import reduce_scatter

        q, k, v, o, lse = cache
        kf, vf, chunks = self._gather(k, v)
        dq, dkf, dvf = self._block(block_attention_backward, q, kf, vf, o, lse, do,
                                   q_chunks=self.chunks[self.rank], k_chunks=chunks)
        n = k.shape[-2]
        parts = [np.concatenate([dkf[..., j * n:(j + 1) * n, :].ravel(), dvf[..., j * n:(j + 1) * n, :].ravel()])
                 for j in range(self.size)]
        dk, dv = self._split_kv(self._waited(reduce_scatter, self.comm, np.concatenate(parts)), k.shape)
        return dq, dk, dv

    # ---- Ulysses --------------------------------------------------------------------------------------------

    def _to_heads(self, tensors):
        """Sequence-split ``(b, H, n, d)`` tensors to head-split ``(b, H / C, s, d)`` ones (one all-to-all)."""
        p, (b, h, n, d) = self.size, tensors[0].shape
        g = h // p
        got = self._waited(alltoall_pairwise, self.comm,
                           [np.concatenate([x[:, j * g:(j + 1) * g].ravel() for x in tensors]) for j in range(p)])
        size = b * g * n * d
        return [np.concatenate([piece[i * size:(i + 1) * size].reshape(b, g, n, d) for piece in got], axis=2)
                for i in range(len(tensors))]

    def _to_sequence(self, tensors):
        """Head-split ``(b, H / C, s, d)`` tensors back to sequence-split ``(b, H, n, d)`` (one all-to-all)."""
        p, (b, g, s, d) = self.size, tensors[0].shape
        n = s // p
        got = self._waited(alltoall_pairwise, self.comm,
                           [np.concatenate([x[:, :, j * n:(j + 1) * n].ravel() for x in tensors]) for j in range(p)])
        size = b * g * n * d
        return [np.concatenate([piece[i * size:(i + 1) * size].reshape(b, g, n, d) for piece in got], axis=1)
                for i in range(len(tensors))]

    def _ulysses_forward(self, q, k, v):
        if q.shape[1] % self.size:
            raise ValueError(f"cp ({self.size}) must divide this rank's {q.shape[1]} heads with kind='ulysses'")
        qh, kh, vh = self._to_heads([q, k, v])
        chunks = tuple(c for r in range(self.size) for c in self.chunks[r])
        o, lse = self._block(block_attention, qh, kh, vh, q_chunks=chunks, k_chunks=chunks)
        (ctx,) = self._to_sequence([o])
        return ctx, (qh, kh, vh, o, lse)

    def _ulysses_backward(self, dctx, cache):
        qh, kh, vh, o, lse = cache
        (doh,) = self._to_heads([dctx])
        chunks = tuple(c for r in range(self.size) for c in self.chunks[r])
        dq, dk, dv = self._block(block_attention_backward, qh, kh, vh, o, lse, doh, q_chunks=chunks, k_chunks=chunks)
        return tuple(self._to_sequence([dq, dk, dv]))


def context_parallel(cp_comm, *, kind: str, seq: int, overlap: bool = True, split: str = "zigzag"):
    """The hook for the model: a :class:`ContextParallel` over the group ``cp_comm``, or ``None`` for one rank."""
    if cp_comm.size == 1:
        return None
    return ContextParallel(cp_comm, kind=kind, seq=seq, overlap=overlap, split=split)
