"""The book's collectives, built from point-to-point messages.

Every function here takes a :class:`~distlib.engines.comm.Comm` first and
runs unchanged over MPI, torch.distributed (gloo or NCCL) and threads. The
chapters "MPI" and "NCCL and GPU collectives" read them line by line.

Algorithms
----------
``"ring"``
    Reduce-scatter then all-gather around the ring ``r -> r + 1``: ``p - 1``
    steps each, every step moving one ``1/p`` chunk. Bandwidth-optimal:
    each rank sends ``2 (p - 1) / p`` of the buffer.
``"tree"``
    A binomial tree: reduce to rank 0 in ``ceil(log2 p)`` rounds, then
    broadcast back down the same tree. Few messages, but each carries the
    whole buffer.
``"halving_doubling"``
    Rabenseifner's all-reduce: reduce-scatter by recursive halving (the
    partner is ``rank XOR mask`` and the exchanged half shrinks every
    round), then all-gather by recursive doubling. ``2 log2 p`` messages and
    the ring's bandwidth term. When ``p`` is not a power of two, the first
    ``2 * (p - p')`` ranks fold in pairs (``p'`` the largest power of two
    below ``p``): each even one hands its buffer to the odd one next to it,
    sits out, and gets the result back at the end.
``"recursive_doubling"``
    The short-message all-reduce (MPICH's choice for buffers up to
    ``MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE``, 2048 bytes by default): in round
    ``k`` every rank swaps its *whole* buffer with ``rank XOR 2**k`` and
    adds. ``log2 p`` messages, the fewest of any algorithm here, but each
    carries the full buffer, so it loses to the ring once bytes dominate.
    The same fold as halving-doubling handles a ``p`` that is not a power
    of two.
``"builtin"``
    The engine's own all-reduce (MPICH's ``MPI_Allreduce``, gloo's or
    NCCL's ``all_reduce``), as a reference.
``"auto"``
    Pick one of the four, or the engine's built-in, by the time the
    alpha-beta model, fitted on this machine, predicts for this size (see
    :mod:`distlib.engines.tuner`), the way NCCL's tuner picks ring or tree.

No schedule here relies on buffering: every exchange in which two ranks
both send is a :meth:`~distlib.engines.comm.Comm.sendrecv`, and in the trees
every blocking send meets a receive its partner has already reached.

Examples
--------
Five ranks on threads, a 7-element buffer (not divisible by 5):

>>> from distlib.engines.comm import run_threads
>>> def work(comm):
...     x = np.arange(7.0) + comm.rank
...     return allreduce(comm, x, algorithm="halving_doubling")
>>> out = run_threads(work, 5)
>>> out[3].tolist()          # 5 * i + (0 + 1 + 2 + 3 + 4)
[10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0]
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .._check import check_choice, check_int
from ..collectives import ALLREDUCE_ALGORITHMS, ENGINE_ALLREDUCE_ALGORITHMS, ENGINE_SCATTER_GATHER_ALGORITHMS
from .comm import Comm, check_op, check_rank

__all__ = [
    "ALLREDUCE_ALGORITHMS",
    "allreduce",
    "reduce_scatter",
    "allgather",
    "broadcast",
    "reduce",
    "hierarchical_allreduce",
    "node_groups",
    "set_auto_chooser",
]

# ALLREDUCE_ALGORITHMS (the book's all-reduce algorithms; "auto" chooses among
# them) and the names each collective here accepts come from the one registry,
# distlib.collectives; ALLREDUCE_ALGORITHMS is re-exported under its old name.
_ALLREDUCE_CHOICES = ENGINE_ALLREDUCE_ALGORITHMS
_RS_AG_CHOICES = ENGINE_SCATTER_GATHER_ALGORITHMS


@lru_cache(maxsize=512)
def _bounds(n: int, p: int) -> tuple:
    """Chunk starts plus ``n``, as :func:`distlib.chunk_bounds` (first ``n % p`` chunks one longer).

    A tuple of Python ints, cached: the collectives call it on every
    invocation, and small messages should not pay for NumPy here.

    >>> _bounds(10, 4)
    (0, 3, 6, 8, 10)
    """
    q, extra = divmod(n, p)
    return tuple(i * q + min(i, extra) for i in range(p + 1))


_CHOOSER: list = []
"""The function ``algorithm="auto"`` asks: :mod:`distlib.engines.tuner` puts
:func:`~distlib.engines.tuner.choose_algorithm` here when it is imported
(importing :mod:`distlib.engines` does so). Dependencies then run one way,
tuner -> timing -> algorithms, with no import back."""


_AUTO_MEMOS: dict = {}
"""``id(comm) -> {n_bytes: algorithm}``: choices already made, which ``auto`` reads before asking the
chooser. The tuner owns the dictionaries (it hands them over with :func:`set_auto_chooser`) and drops a
communicator's when it dies or gets a new fit."""


def set_auto_chooser(choose, memos=None) -> None:
    """Install ``choose(comm, n_bytes) -> algorithm name`` as what ``algorithm="auto"`` runs.

    ``memos``, if given, is the chooser's own ``{id(comm): {n_bytes: algorithm}}`` of choices made,
    read first (every later call of a size takes its answer from there).
    """
    global _AUTO_MEMOS
    if not callable(choose):
        raise TypeError(f"choose must be callable(comm, n_bytes), got {type(choose).__name__}")
    _CHOOSER[:] = [choose]
    _AUTO_MEMOS = {} if memos is None else memos


def _choose_algorithm():
    if not _CHOOSER:
        import importlib

        importlib.import_module(__package__ + ".tuner")  # registers itself; not an import cycle at load time
    return _CHOOSER[0]


def _note(comm, name: str) -> None:
    """Tell ``comm`` which collective starts (:meth:`~distlib.engines.comm.Comm.note_collective`), if it has ranks
    to talk to."""
    if comm.size > 1:
        comm.note_collective(name)


def _check_comm(comm) -> Comm:
    if not isinstance(comm, Comm):
        raise TypeError(f"comm must be a distlib.engines Comm (MPIComm, TorchComm or ThreadComm), got {type(comm).__name__}")
    return comm


# ----------------------------------------------------------------------------
# Public collectives
# ----------------------------------------------------------------------------


def allreduce(comm, buf, *, op: str = "sum", algorithm: str = "ring"):
    """All-reduce ``buf`` in place over ``comm``; returns ``buf``.

    Parameters
    ----------
    comm : Comm
        The communicator (every rank calls with the same ``algorithm``,
        ``op`` and buffer length).
    buf : array or tensor
        This rank's contiguous buffer (any shape; reduced as a flat vector).
        Afterwards it holds the element-wise reduction over all ranks.
    op : {"sum", "max", "min"}
    algorithm : {"ring", "tree", "halving_doubling", "recursive_doubling", "builtin", "auto"}
        See the module docstring.

    Returns
    -------
    The same ``buf``.

    Examples
    --------
    >>> from distlib.engines.comm import run_threads
    >>> out = run_threads(lambda c: allreduce(c, np.full(3, c.rank + 1), algorithm="tree"), 4)
    >>> [o.tolist() for o in out]      # 1 + 2 + 3 + 4 everywhere
    [[10, 10, 10], [10, 10, 10], [10, 10, 10], [10, 10, 10]]
    """
    comm = _check_comm(comm)
    op = check_op(op)
    algorithm = check_choice("algorithm", algorithm, _ALLREDUCE_CHOICES)
    x = comm.flat(buf)
    n = len(x)
    _note(comm, "allreduce")
    if algorithm == "auto":
        # The tuner's memo first, without a call: with the built-in among the
        # candidates, an 8-byte all-reduce takes a few microseconds, and each
        # tenth of one spent choosing shows. (It never holds an empty buffer
        # or a one-rank communicator: those ask no one.)
        known = _AUTO_MEMOS.get(id(comm))
        n_bytes = x.nbytes if type(x) is np.ndarray else n * comm.itemsize(x)
        algorithm = known.get(n_bytes) if known is not None else None
        if algorithm is None:
            algorithm = _choose_algorithm()(comm, n_bytes) if n and comm.size > 1 else "ring"
    if algorithm == "builtin":  # asked for, or what the tuner found fastest at this size
        comm.allreduce(x, op=op)
        return buf
    if comm.size == 1 or n == 0:
        return buf
    if algorithm == "ring":
        bounds = _bounds(n, comm.size)
        _ring_reduce_scatter(comm, x, bounds, op)
        _ring_allgather(comm, x, bounds)
    elif algorithm == "recursive_doubling":
        _rd_allreduce(comm, x, op)
    elif algorithm == "tree":
        _tree_reduce(comm, x, 0, op)
        _tree_broadcast(comm, x, 0)
    elif algorithm == "hierarchical":
        _hier_allreduce(comm, x, op, _hierarchy(comm, None))
    else:
        _hd_allreduce(comm, x, op)
    return buf


def reduce_scatter(comm, buf, *, op: str = "sum", algorithm: str = "ring"):
    """Reduce ``buf`` over all ranks and give rank ``r`` the ``r``-th chunk.

    The buffer of ``n`` elements is cut into ``p`` chunks as
    :func:`distlib.chunk_bounds` does (the first ``n % p`` chunks one
    element longer). ``buf`` itself is left untouched.

    Parameters
    ----------
    comm : Comm
    buf : array or tensor
        This rank's full buffer (same length on every rank).
    op : {"sum", "max", "min"}
    algorithm : {"ring", "halving_doubling", "builtin"}

    Returns
    -------
    A new 1-D buffer holding chunk ``comm.rank`` of the reduction.

    Examples
    --------
    >>> from distlib.engines.comm import run_threads
    >>> out = run_threads(lambda c: reduce_scatter(c, np.arange(5) * (c.rank + 1)), 3)
    >>> [o.tolist() for o in out]      # 6 * [0, 1, 2, 3, 4] in chunks 2, 2, 1
    [[0, 6], [12, 18], [24]]
    """
    comm = _check_comm(comm)
    op = check_op(op)
    algorithm = check_choice("algorithm", algorithm, _RS_AG_CHOICES)
    x = comm.flat(buf)
    p, r = comm.size, comm.rank
    bounds = _bounds(len(x), p)
    _note(comm, "reduce_scatter")
    if algorithm == "builtin":
        return comm.builtin_reduce_scatter(x, [bounds[i + 1] - bounds[i] for i in range(p)], op=op)
    x = comm.copy(x)
    if p > 1 and len(x) > 0:
        if algorithm == "ring":
            _ring_reduce_scatter(comm, x, bounds, op)
        else:
            _hd_reduce_scatter(comm, x, bounds, op)
    return comm.copy(x[bounds[r] : bounds[r + 1]])


def allgather(comm, buf, *, counts=None, algorithm: str = "ring"):
    """Concatenate every rank's ``buf``, in rank order, on every rank.

    Parameters
    ----------
    comm : Comm
    buf : array or tensor
        This rank's piece.
    counts : sequence of int, optional
        Length of each rank's piece (they may differ). Default: every piece
        has ``len(buf)`` elements.
    algorithm : {"ring", "halving_doubling", "builtin"}

    Returns
    -------
    A new 1-D buffer of ``sum(counts)`` elements.

    Examples
    --------
    >>> from distlib.engines.comm import run_threads
    >>> out = run_threads(lambda c: allgather(c, np.full(c.rank, c.rank), counts=[0, 1, 2, 3]), 4)
    >>> out[0].tolist()
    [1, 2, 2, 3, 3, 3]
    """
    comm = _check_comm(comm)
    algorithm = check_choice("algorithm", algorithm, _RS_AG_CHOICES)
    piece = comm.flat(buf)
    p, r = comm.size, comm.rank
    if counts is None:
        counts = [len(piece)] * p
    counts = [check_int("counts[i]", c, minimum=0) for c in counts]
    if len(counts) != p:
        raise ValueError(f"counts must have one entry per rank ({p}), got {len(counts)}")
    if counts[r] != len(piece):
        raise ValueError(f"counts[{r}] is {counts[r]} but rank {r}'s buf has {len(piece)} elements")
    _note(comm, "allgather")
    if algorithm == "builtin":
        return comm.builtin_allgather(piece, counts)
    bounds = tuple(int(b) for b in np.concatenate([[0], np.cumsum(counts)]))
    x = comm.empty(bounds[-1], like=piece)
    x[bounds[r] : bounds[r + 1]] = piece
    if p > 1 and bounds[-1] > 0:
        if algorithm == "ring":
            _ring_allgather(comm, x, bounds)
        else:
            _hd_allgather(comm, x, bounds)
    return x


def broadcast(comm, buf, *, root: int = 0):
    """Copy ``root``'s ``buf`` into every rank's ``buf`` along a binomial tree.

    ``ceil(log2 p)`` rounds; in each, every rank that already has the data
    sends it to one rank that does not. Returns ``buf``.

    Examples
    --------
    >>> from distlib.engines.comm import run_threads
    >>> out = run_threads(lambda c: broadcast(c, np.full(2, c.rank), root=2), 5)
    >>> [o.tolist() for o in out]
    [[2, 2], [2, 2], [2, 2], [2, 2], [2, 2]]
    """
    comm = _check_comm(comm)
    root = check_rank("root", root, comm.size)
    x = comm.flat(buf)
    _note(comm, "broadcast")
    if comm.size > 1 and len(x) > 0:
        _tree_broadcast(comm, x, root)
    return buf


def reduce(comm, buf, *, root: int = 0, op: str = "sum"):
    """Reduce every rank's ``buf`` onto ``root`` along a binomial tree.

    Afterwards ``root``'s ``buf`` holds the reduction; the other ranks'
    buffers hold partial results (scratch). Returns ``buf``.

    Examples
    --------
    >>> from distlib.engines.comm import run_threads
    >>> out = run_threads(lambda c: reduce(c, np.full(2, c.rank), root=1), 6)
    >>> out[1].tolist()             # 0 + 1 + ... + 5
    [15, 15]
    """
    comm = _check_comm(comm)
    root = check_rank("root", root, comm.size)
    op = check_op(op)
    x = comm.flat(buf)
    _note(comm, "reduce")
    if comm.size > 1 and len(x) > 0:
        _tree_reduce(comm, x, root, op)
    return buf


# ----------------------------------------------------------------------------
# Ring
# ----------------------------------------------------------------------------


def _ring_reduce_scatter(comm, x, bounds, op) -> None:
    """In place: afterwards chunk ``rank`` of ``x`` holds the full reduction.

    Step ``s``: send chunk ``rank - s - 1`` to the right, receive chunk
    ``rank - s - 2`` from the left and add it in. Chunk ``c`` starts at rank
    ``c + 1`` and travels ``p - 1`` hops, collecting a contribution at each,
    so it ends, complete, on rank ``c``.
    """
    p, r = comm.size, comm.rank
    right, left = (r + 1) % p, (r - 1) % p
    longest = max(bounds[i + 1] - bounds[i] for i in range(p))
    seg = _segment(comm, x, longest)
    tmp = comm.scratch(seg, like=x)
    for s in range(p - 1):
        cs, cr = (r - s - 1) % p, (r - s - 2) % p
        if seg >= longest:  # the whole chunk in one message
            incoming = tmp[: bounds[cr + 1] - bounds[cr]]
            comm.sendrecv(x[bounds[cs] : bounds[cs + 1]], right, incoming, left)
            if len(incoming):
                comm.combine(x[bounds[cr] : bounds[cr + 1]], incoming, op)
            continue
        # In pieces of ``seg`` elements: each piece is added while it is still
        # in the cache, and the scratch is one piece long. Both ends of a
        # message cut the same chunk the same way, and every element gets the
        # same addition in the same order, so the result is bit for bit the
        # unsegmented ring's. Every rank makes the same number of exchanges
        # (a piece past the end of a shorter chunk is an empty message), so
        # an engine that sends empty messages (MPI) matches them all.
        for k in range(0, longest, seg):
            s0, s1 = min(bounds[cs] + k, bounds[cs + 1]), min(bounds[cs] + k + seg, bounds[cs + 1])
            r0, r1 = min(bounds[cr] + k, bounds[cr + 1]), min(bounds[cr] + k + seg, bounds[cr + 1])
            incoming = tmp[: r1 - r0]
            comm.sendrecv(x[s0:s1], right, incoming, left)
            if r1 > r0:
                comm.combine(x[r0:r1], incoming, op)


def _segment(comm, x, longest: int) -> int:
    """Elements per piece of the ring's reduce-scatter: ``comm.ring_segment_bytes`` worth, or ``longest`` (whole
    chunks) when that is unset or the chunks are no longer."""
    seg_bytes = getattr(comm, "ring_segment_bytes", None)
    if not seg_bytes:
        return longest
    return max(1, min(longest, seg_bytes // comm.itemsize(x)))


def _ring_allgather(comm, x, bounds) -> None:
    """In place: chunk ``rank`` is valid on entry; all chunks are on exit.

    Step ``s``: forward chunk ``rank - s`` to the right and store chunk
    ``rank - s - 1`` arriving from the left.
    """
    p, r = comm.size, comm.rank
    right, left = (r + 1) % p, (r - 1) % p
    for s in range(p - 1):
        cs, cr = (r - s) % p, (r - s - 1) % p
        comm.sendrecv(x[bounds[cs] : bounds[cs + 1]], right, x[bounds[cr] : bounds[cr + 1]], left)


# ----------------------------------------------------------------------------
# Binomial tree
# ----------------------------------------------------------------------------


def _tree_reduce(comm, x, root, op) -> None:
    """Binomial-tree reduce onto ``root``.

    In virtual ranks ``v = (rank - root) mod p``: in round ``k`` (mask
    ``2**k``), a rank whose bit ``k`` is set sends its partial sum to
    ``v - 2**k`` and stops; the others receive from ``v + 2**k`` (if it
    exists) and add.
    """
    p, r = comm.size, comm.rank
    v = (r - root) % p
    tmp = None
    mask = 1
    while mask < p:
        if v & mask:
            comm.send(x, (v - mask + root) % p)
            return
        if v + mask < p:
            if tmp is None:
                tmp = comm.scratch(len(x), like=x)
            comm.recv(tmp, (v + mask + root) % p)
            comm.combine(x, tmp, op)
        mask <<= 1


def _tree_broadcast(comm, x, root) -> None:
    """Binomial-tree broadcast from ``root`` (the reduce's tree, run backwards)."""
    p, r = comm.size, comm.rank
    v = (r - root) % p
    mask = 1
    while mask < p:  # receive from the parent: v with its lowest set bit cleared
        if v & mask:
            comm.recv(x, (v - mask + root) % p)
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:  # then feed the children, the largest subtree first
        if v + mask < p:
            comm.send(x, (v + mask + root) % p)
        mask >>= 1


# ----------------------------------------------------------------------------
# Recursive halving-doubling (Rabenseifner), any p
# ----------------------------------------------------------------------------


class _Fold:
    """How ``p`` ranks map onto ``p2`` (a power of two) after folding pairs.

    The first ``2 * extra`` ranks pair up as (even, odd); the even one sits
    out. Survivors get consecutive "new ranks" ``0 .. p2 - 1``. Build one
    with :func:`_fold`, which remembers it: small messages should not pay
    for this arithmetic on every call.
    """

    def __init__(self, p: int, rank: int):
        self.p2 = 1 << (p.bit_length() - 1)
        self.extra = p - self.p2
        if rank < 2 * self.extra:
            self.new = -1 if rank % 2 == 0 else rank // 2
        else:
            self.new = rank - self.extra
        self.sits_out = self.new < 0
        self.folded = rank < 2 * self.extra  # part of a pair (either side)
        # Recursive doubling's partners, round by round (real ranks).
        self.doubling_partners = () if self.sits_out else tuple(
            self.real(self.new ^ (1 << k)) for k in range(self.p2.bit_length() - 1))  # fmt: skip

    def real(self, new: int) -> int:
        return 2 * new + 1 if new < self.extra else new + self.extra

    def first_chunk(self, new: int) -> int:
        """First of the real ranks' chunks that new rank ``new`` stands for."""
        return 2 * new if new < self.extra else new + self.extra


_fold = lru_cache(maxsize=256)(_Fold)


def _fold_in(comm, x, tmp, fold, op) -> None:
    """Before the power-of-two part: each even rank of a pair hands ``x`` to the odd one, which adds it."""
    if fold.folded:
        if fold.sits_out:
            comm.send(x, comm.rank + 1)
        else:
            comm.recv(tmp, comm.rank - 1)
            comm.combine(x, tmp, op)


def _fold_out(comm, x, fold) -> None:
    """After it: the odd rank of each pair hands the finished ``x`` back to the even one."""
    if fold.folded:
        if fold.sits_out:
            comm.recv(x, comm.rank + 1)
        else:
            comm.send(x, comm.rank - 1)


def _halving(comm, x, sb, fold, tmp, op) -> None:
    """Recursive halving over the ``p2`` super-chunks ``sb``: new rank ``i`` ends owning ``sb[i]:sb[i+1]``."""
    me = fold.new
    lo, hi = 0, fold.p2
    mask = fold.p2 >> 1
    while mask:
        partner = fold.real(me ^ mask)
        mid = (lo + hi) // 2
        (klo, khi), (slo, shi) = ((mid, hi), (lo, mid)) if me & mask else ((lo, mid), (mid, hi))
        keep = x[sb[klo] : sb[khi]]
        incoming = tmp[: len(keep)]
        comm.sendrecv(x[sb[slo] : sb[shi]], partner, incoming, partner)
        if len(keep):
            comm.combine(keep, incoming, op)
        lo, hi = klo, khi
        mask >>= 1


def _doubling(comm, x, sb, fold) -> None:
    """Recursive doubling over super-chunks: new rank ``i`` starts with ``sb[i]:sb[i+1]``, ends with all."""
    me = fold.new
    lo, hi = me, me + 1
    mask = 1
    while mask < fold.p2:
        partner = fold.real(me ^ mask)
        width = hi - lo
        plo, phi = (lo - width, lo) if me & mask else (hi, hi + width)
        comm.sendrecv(x[sb[lo] : sb[hi]], partner, x[sb[plo] : sb[phi]], partner)
        lo, hi = min(lo, plo), max(hi, phi)
        mask <<= 1


def _hd_allreduce(comm, x, op) -> None:
    fold = _fold(comm.size, comm.rank)
    n = len(x)
    # Scratch for the largest incoming piece. Halves of the chunk list are
    # uneven when n < p2 (all of a short buffer can sit in one half), so
    # size it for the whole buffer.
    tmp = comm.scratch(n, like=x)
    _fold_in(comm, x, tmp, fold, op)
    if not fold.sits_out:
        sb = _bounds(n, fold.p2)
        _halving(comm, x, sb, fold, tmp, op)
        _doubling(comm, x, sb, fold)
    _fold_out(comm, x, fold)


def _rd_allreduce(comm, x, op) -> None:
    """Recursive doubling: ``log2 p'`` swaps of the whole buffer, each followed by an add.

    In round ``k`` new rank ``i`` swaps with ``i XOR 2**k``; afterwards it
    holds the sum over the ``2**(k+1)`` new ranks that agree with it above
    bit ``k``. Partners add the same two partial sums (in either order, and
    IEEE addition is commutative), so every rank ends with bit-identical
    values.
    """
    # Small messages are all overhead: the fold is remembered per (p, rank)
    # and the scratch view per size (Comm.scratch), so a repeated call goes
    # almost straight to the loop.
    fold = _fold(comm.size, comm.rank)
    tmp = comm.scratch(len(x), like=x)
    if fold.folded:
        _fold_in(comm, x, tmp, fold, op)
    sendrecv, combine = comm.sendrecv, comm.combine
    for partner in fold.doubling_partners:
        sendrecv(x, partner, tmp, partner)
        combine(x, tmp, op)
    if fold.folded:
        _fold_out(comm, x, fold)


def _super_bounds(bounds, fold) -> tuple:
    """Element bounds of the ``p2`` super-chunks: new rank ``i`` stands for one or two real chunks."""
    return tuple(bounds[fold.first_chunk(i)] for i in range(fold.p2)) + (bounds[-1],)


def _hd_reduce_scatter(comm, x, bounds, op) -> None:
    p, r = comm.size, comm.rank
    fold = _fold(p, r)
    n = len(x)
    tmp = comm.scratch(n, like=x)  # one half can hold almost all of x (short or folded buffers)
    _fold_in(comm, x, tmp, fold, op)
    if not fold.sits_out:
        _halving(comm, x, _super_bounds(bounds, fold), fold, tmp, op)
    if fold.folded:  # the odd rank hands its even partner that partner's own chunk
        if fold.sits_out:
            comm.recv(x[bounds[r] : bounds[r + 1]], r + 1)
        else:
            comm.send(x[bounds[r - 1] : bounds[r]], r - 1)


def _hd_allgather(comm, x, bounds) -> None:
    p, r = comm.size, comm.rank
    fold = _fold(p, r)
    if fold.folded:  # the even rank's piece joins its odd partner's
        if fold.sits_out:
            comm.send(x[bounds[r] : bounds[r + 1]], r + 1)
        else:
            comm.recv(x[bounds[r - 1] : bounds[r]], r - 1)
    if not fold.sits_out:
        _doubling(comm, x, _super_bounds(bounds, fold), fold)
    _fold_out(comm, x, fold)


# ----------------------------------------------------------------------------
# Hierarchical: a fast link inside a node, a slow one between nodes
# ----------------------------------------------------------------------------


def this_node() -> str:
    """The node this process runs on: its hostname (each node of a mini cluster has its own).

    Not an environment variable: ``mpiexec`` copies its own environment to
    the ranks of every node.
    """
    import socket

    return socket.gethostname()


def node_groups(comm, node=None) -> list:
    """Ranks grouped by node, in order of each node's lowest rank (every rank must call).

    ``node`` is this rank's node label (default :func:`this_node`).

    >>> from distlib.engines.comm import run_threads
    >>> run_threads(lambda c: node_groups(c, node=f"n{c.rank % 2}"), 4)[0]
    [[0, 2], [1, 3]]
    """
    comm = _check_comm(comm)
    labels = comm.allgather_object(this_node() if node is None else str(node))
    groups: dict = {}
    for r, label in enumerate(labels):
        groups.setdefault(label, []).append(r)
    return sorted(groups.values())


class _Hierarchy:
    """This rank's two sub-communicators: its node, and its peers (same local index) on the other nodes."""

    def __init__(self, comm, groups):
        from .comm import SubComm

        mine = next(g for g in groups if comm.rank in g)
        self.groups = groups
        self.even = len({len(g) for g in groups}) == 1
        self.local = SubComm(comm, mine)
        i = mine.index(comm.rank)
        self.cross = SubComm(comm, [g[i] for g in groups]) if self.even else None


# Each communicator's node structure, kept by this module (its owner) and
# forgotten with the communicator; threads pass ``node`` explicitly instead.
import weakref  # noqa: E402

_HIERARCHIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _hierarchy(comm, node) -> _Hierarchy:
    if node is None:
        h = _HIERARCHIES.get(comm)
        if h is None:
            h = _HIERARCHIES[comm] = _Hierarchy(comm, node_groups(comm))
        return h
    return _Hierarchy(comm, node_groups(comm, node))


def _hier_allreduce(comm, x, op, h: _Hierarchy) -> None:
    if not h.even or len(h.groups) == 1 or h.local.size == 1:
        # One node, one rank per node, or nodes of unequal size: the flat ring.
        bounds = _bounds(len(x), comm.size)
        _ring_reduce_scatter(comm, x, bounds, op)
        _ring_allgather(comm, x, bounds)
        return
    local, cross = h.local, h.cross
    bl = _bounds(len(x), local.size)
    _ring_reduce_scatter(local, x, bl, op)  # inside the node: local rank i owns chunk i of the node's sum
    piece = x[bl[local.rank] : bl[local.rank + 1]]
    if len(piece):  # across nodes: only 1/L of the buffer per rank crosses the slow links
        bc = _bounds(len(piece), cross.size)
        _ring_reduce_scatter(cross, piece, bc, op)
        _ring_allgather(cross, piece, bc)
    _ring_allgather(local, x, bl)  # inside the node again: everyone gets every chunk


def hierarchical_allreduce(comm, buf, *, op: str = "sum", node=None):
    """All-reduce in three phases that respect a fast link inside a node and a slow one between nodes.

    1. reduce-scatter inside each node (ring over its ``L`` ranks): local
       rank ``i`` then holds chunk ``i`` summed over its node;
    2. all-reduce of that chunk across nodes (ring over the ``N`` ranks with
       local index ``i``, one per node), so each rank sends only
       ``2 (N - 1) / N`` of ``1/L`` of the buffer over the slow links;
    3. all-gather inside each node.

    ``allreduce(comm, buf, algorithm="hierarchical")`` is the same with the
    node found by :func:`this_node`. With one node, one rank per node or
    nodes of unequal size it is the flat ring. The cost model is
    :func:`distlib.collectives.two_level_allreduce_time` with
    ``algorithm="hierarchical"``.

    Parameters
    ----------
    comm : Comm
    buf : array or tensor
    op : {"sum", "max", "min"}
    node : str, optional
        This rank's node label (all ranks with the same label share a node).

    Examples
    --------
    >>> from distlib.engines.comm import run_threads
    >>> out = run_threads(lambda c: hierarchical_allreduce(c, np.arange(5.0) + c.rank, node=f"n{c.rank // 2}"), 4)
    >>> out[3].tolist()      # 4 * i + (0 + 1 + 2 + 3)
    [6.0, 10.0, 14.0, 18.0, 22.0]
    """
    comm = _check_comm(comm)
    op = check_op(op)
    x = comm.flat(buf)
    if comm.size > 1 and len(x):
        _hier_allreduce(comm, x, op, _hierarchy(comm, node))
    return buf
