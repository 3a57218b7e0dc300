"""The all-to-all, built from point-to-point messages: pairwise exchange and Bruck's algorithm.

Chapter 15 (expert parallelism) routes every token to the rank that holds its
expert with an all-to-all, and sends the results back with a second one. Every
function here takes a :class:`~distlib.engines.comm.Comm` first and runs
unchanged over MPI, torch.distributed (gloo or NCCL) and threads, like the
collectives of :mod:`distlib.engines.algorithms`.

What it does
------------
Rank ``r`` holds a 1-D buffer cut into ``p`` consecutive blocks, block ``j``
meant for rank ``j``; afterwards rank ``r`` holds block ``r`` of every rank,
rank 0's first. :func:`alltoall` cuts a buffer of ``n`` elements as
:func:`distlib.chunk_bounds` does (the first ``n % p`` blocks one element
longer), so rank ``r`` receives ``p`` blocks of the same length and its result
has ``p * len(block r)`` elements. :func:`alltoallv` takes the blocks' lengths
(``counts[j]`` elements for rank ``j``), which may differ from rank to rank, as
the tokens routed to each expert do.

Algorithms
----------
``"pairwise"``
    ``p - 1`` rounds; in round ``k`` rank ``r`` sends its block for
    ``(r + k) mod p`` and receives the block of ``(r - k) mod p``, one
    :meth:`~distlib.engines.comm.Comm.sendrecv`. Each byte crosses once.
``"bruck"``
    Bruck et al. (IEEE TPDS 8(11), 1997), as MPICH's
    ``alltoall_intra_brucks.c`` runs it: rotate the blocks so that place
    ``j`` holds the block for ``r + j``; in round ``k`` send every place whose
    bit ``k`` is set to ``r + 2**k`` (packed into one message) and receive
    the same places from ``r - 2**k``; after ``ceil(log2 p)`` rounds place
    ``j`` holds the block from ``r - j``. Fewer messages, more bytes.
``"builtin"``
    The engine's own: ``MPI_Alltoall`` (``MPI_Alltoallv`` for uneven
    blocks), torch's ``all_to_all_single`` (gloo and NCCL), a gather of
    Python objects on threads.

:mod:`distlib.collectives.alltoall` gives each algorithm's alpha-beta time.
Every exchange is a ``sendrecv``, so no schedule here relies on buffering.

Examples
--------
Three ranks on threads, 7 elements each (blocks of 3, 2 and 2):

>>> from distlib.engines.comm import run_threads
>>> out = run_threads(lambda c: alltoall(c, np.arange(7) + 10 * c.rank, algorithm="bruck"), 3)
>>> out[1].tolist()          # elements 3, 4 of ranks 0, 1, 2
[3, 4, 13, 14, 23, 24]
"""

from __future__ import annotations

import numpy as np

from .._check import check_choice, check_int
from ..collectives.names import ALLTOALL_ALGORITHMS
from .comm import Comm

__all__ = [
    "ALLTOALL_ALGORITHMS",
    "ENGINE_ALLTOALL_ALGORITHMS",
    "alltoall",
    "alltoallv",
    "exchange_counts",
    "builtin_alltoallv",
]

ENGINE_ALLTOALL_ALGORITHMS = ALLTOALL_ALGORITHMS + ("builtin",)
"""What :func:`alltoall` and :func:`alltoallv` accept: the book's two and the engine's own."""

_TAG = 0  # the collectives' tag, as in distlib.engines.algorithms


def _check_comm(comm) -> Comm:
    if not isinstance(comm, Comm):
        raise TypeError(f"comm must be a distlib.engines Comm (MPIComm, TorchComm or ThreadComm), got {type(comm).__name__}")
    return comm


def _offsets(counts) -> list:
    out = [0]
    for c in counts:
        out.append(out[-1] + c)
    return out


def _check_counts(name: str, counts, p: int) -> list:
    if isinstance(counts, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of {p} element counts, got {counts!r}")
    try:
        counts = list(counts)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of {p} element counts, got {counts!r}") from None
    if len(counts) != p:
        raise ValueError(f"{name} must have one entry per rank ({p}), got {len(counts)}")
    return [check_int(f"{name}[{i}]", c, minimum=0) for i, c in enumerate(counts)]


# ----------------------------------------------------------------------------
# Public
# ----------------------------------------------------------------------------


def alltoall(comm, buf, *, algorithm: str = "pairwise"):
    """Block ``j`` of every rank's ``buf`` to rank ``j``; returns what this rank received, in rank order.

    Parameters
    ----------
    comm : Comm
        Every rank calls with the same ``algorithm`` and the same buffer length.
    buf : array or tensor
        This rank's contiguous buffer of ``n`` elements, cut into ``p`` blocks
        as :func:`distlib.chunk_bounds` cuts it (the first ``n % p`` one
        element longer); block ``j`` goes to rank ``j``. Left untouched.
    algorithm : {"pairwise", "bruck", "builtin"}
        See the module docstring.

    Returns
    -------
    A new 1-D buffer of ``p * len(block r)`` elements on rank ``r``: block
    ``r`` of rank 0, then of rank 1, ...

    Examples
    --------
    >>> from distlib.engines.comm import run_threads
    >>> out = run_threads(lambda c: alltoall(c, np.array([c.rank * 10 + j for j in range(4)])), 4)
    >>> [o.tolist() for o in out]      # a transpose
    [[0, 10, 20, 30], [1, 11, 21, 31], [2, 12, 22, 32], [3, 13, 23, 33]]
    """
    comm = _check_comm(comm)
    algorithm = check_choice("algorithm", algorithm, ENGINE_ALLTOALL_ALGORITHMS)
    x = comm.flat(buf)
    p, r = comm.size, comm.rank
    q, extra = divmod(len(x), p)
    block = [q + (1 if j < extra else 0) for j in range(p)]
    if comm.size > 1:
        comm.note_collective("alltoall")
    if algorithm == "builtin":
        return builtin_alltoallv(comm, x, block, [block[r]] * p)
    return _run(comm, x, block, [block[r]] * p, lambda s, d: block[d], algorithm)


def alltoallv(comm, buf, counts, *, recv_counts=None, algorithm: str = "pairwise"):
    """The all-to-all with blocks of any length: ``counts[j]`` elements of ``buf`` to rank ``j``.

    Parameters
    ----------
    comm : Comm
    buf : array or tensor
        This rank's contiguous buffer of ``sum(counts)`` elements: the block
        for rank 0 first, then rank 1's, ... Left untouched.
    counts : sequence of int
        Elements for each rank (>= 0; one entry per rank).
    recv_counts : sequence of int, optional
        Elements this rank will receive from each rank (entry ``s`` equals
        rank ``s``'s ``counts[r]``). Left out, they are exchanged first with
        :func:`exchange_counts`, as an expert router does before it sends
        the tokens.
    algorithm : {"pairwise", "bruck", "builtin"}
        Bruck's relayed blocks are sized from every rank's counts, which it
        gathers first (one ``allgather_object`` of ``p`` integers per rank).

    Returns
    -------
    A new 1-D buffer of ``sum(recv_counts)`` elements: what rank 0 sent
    here, then rank 1's, ...

    Raises
    ------
    ValueError
        ``counts`` with the wrong length or a negative entry, a buffer that
        is not ``sum(counts)`` long, or ``recv_counts`` that disagree with
        what the other ranks send (checked where they are known: Bruck).

    Examples
    --------
    Rank ``s`` sends ``d + 1`` copies of ``10 s + d`` to rank ``d``:

    >>> from distlib.engines.comm import run_threads
    >>> def route(c):
    ...     counts = [d + 1 for d in range(c.size)]
    ...     buf = np.repeat([10 * c.rank + d for d in range(c.size)], counts)
    ...     return alltoallv(c, buf, counts)
    >>> run_threads(route, 3)[2].tolist()
    [2, 2, 2, 12, 12, 12, 22, 22, 22]
    """
    comm = _check_comm(comm)
    algorithm = check_choice("algorithm", algorithm, ENGINE_ALLTOALL_ALGORITHMS)
    x = comm.flat(buf)
    p, r = comm.size, comm.rank
    counts = _check_counts("counts", counts, p)
    if sum(counts) != len(x):
        raise ValueError(f"counts must add up to the buffer's length ({len(x)} elements), got sum {sum(counts)}")
    if comm.size > 1:
        comm.note_collective("alltoall")
    if algorithm == "bruck" and p > 1:
        matrix = [_check_counts("counts", row, p) for row in comm.allgather_object(counts)]
        column = [matrix[s][r] for s in range(p)]
        if recv_counts is not None and _check_counts("recv_counts", recv_counts, p) != column:
            raise ValueError(f"recv_counts must be what the ranks send rank {r}, {column}; got {list(recv_counts)}")
        return _run(comm, x, counts, column, lambda s, d: matrix[s][d], algorithm)
    if recv_counts is None:
        recv_counts = exchange_counts(comm, counts)
    recv_counts = _check_counts("recv_counts", recv_counts, p)
    if algorithm == "builtin":
        return builtin_alltoallv(comm, x, counts, recv_counts)
    return _run(comm, x, counts, recv_counts, None, algorithm)


def exchange_counts(comm, counts) -> list:
    """How many elements each rank will send this one, given what this one sends each (``counts``).

    An all-to-all of one integer per rank (pairwise, over the same
    communicator): what an expert router runs before it sends the tokens,
    so that every rank can size its receive buffer.

    Examples
    --------
    >>> from distlib.engines.comm import run_threads
    >>> run_threads(lambda c: exchange_counts(c, [10 * c.rank + d for d in range(3)]), 3)[1]
    [1, 11, 21]
    """
    comm = _check_comm(comm)
    counts = _check_counts("counts", counts, comm.size)
    ones = [1] * comm.size
    sent = comm.from_numpy(np.asarray(counts, dtype=np.int64))  # the engine's kind of buffer (a tensor on torch)
    got = _run(comm, comm.flat(sent), ones, ones, None, "pairwise")
    return [int(v) for v in comm.to_numpy(got)]


def builtin_alltoallv(comm, buf, counts, recv_counts):
    """The engine's own all-to-all: ``counts[j]`` elements of ``buf`` to rank ``j``, ``recv_counts[s]`` from ``s``.

    MPI: ``MPI_Alltoall`` when every block has one length, ``MPI_Alltoallv``
    otherwise (MPICH chooses its algorithm inside). torch.distributed (gloo,
    NCCL): ``all_to_all_single`` with split sizes. Threads: every rank's
    blocks gathered as Python objects. A :class:`~distlib.engines.comm.CountingComm`
    forwards it uncounted, as it does the other built-ins; a
    :class:`~distlib.engines.comm.SubComm` has no built-ins.

    Returns
    -------
    A new 1-D buffer of ``sum(recv_counts)`` elements, in source order.
    """
    comm = _check_comm(comm)
    while hasattr(comm, "inner"):  # CountingComm and the like: the built-in is the wrapped engine's
        comm = comm.inner
    x = comm.flat(buf)
    p, r = comm.size, comm.rank
    counts = _check_counts("counts", counts, p)
    recv_counts = _check_counts("recv_counts", recv_counts, p)
    out = comm.empty(sum(recv_counts), like=x)
    if comm.engine == "mpi" and hasattr(comm, "mpi_comm"):
        if len(set(counts)) == 1 and len(set(recv_counts)) == 1 and counts[0] == recv_counts[0]:
            if counts[0]:
                comm.mpi_comm.Alltoall(x, out)
        else:
            comm.mpi_comm.Alltoallv([x, (counts, _offsets(counts)[:-1])],
                                    [out, (recv_counts, _offsets(recv_counts)[:-1])])  # fmt: skip
        return out
    if comm.engine in ("gloo", "nccl") and hasattr(comm, "dist"):
        if isinstance(x, np.ndarray):  # NumPy buffers over gloo (NumpyTorchComm): tensors sharing their memory
            comm.dist.all_to_all_single(comm.torch.from_numpy(out), comm.torch.from_numpy(np.ascontiguousarray(x)),
                                        output_split_sizes=recv_counts, input_split_sizes=counts)  # fmt: skip
        else:
            comm.dist.all_to_all_single(out, x, output_split_sizes=recv_counts, input_split_sizes=counts)
        return out
    if comm.engine == "threads":
        starts = _offsets(counts)
        mine = [np.array(x[starts[j] : starts[j + 1]], copy=True) for j in range(p)]
        everyone = comm.allgather_object(mine)
        got = [everyone[s][r] for s in range(p)]
        if [len(g) for g in got] != recv_counts:
            raise ValueError(f"recv_counts must be what the ranks send rank {r}, {[len(g) for g in got]}; "
                             f"got {recv_counts}")  # fmt: skip
        return np.concatenate(got) if got else out
    raise NotImplementedError(f"{type(comm).__name__} ({comm.engine}) has no built-in all-to-all")


# ----------------------------------------------------------------------------
# The two algorithms
# ----------------------------------------------------------------------------


def _run(comm, x, counts, recv_counts, size, algorithm):
    """``x`` (blocks of ``counts``) exchanged by ``algorithm``; what arrives has blocks of ``recv_counts``.

    ``size(s, d)``: elements rank ``s`` sends rank ``d`` (Bruck relays other
    ranks' blocks and must know their lengths).
    """
    p = comm.size
    if p == 1:
        return comm.copy(x)
    if algorithm == "pairwise":
        return _pairwise(comm, x, counts, recv_counts)
    return _bruck(comm, x, counts, recv_counts, size)


def _pairwise(comm, x, counts, recv_counts):
    """Round ``k = 1 .. p-1``: send the block for ``r + k``, receive the block of ``r - k``."""
    p, r = comm.size, comm.rank
    send_at, recv_at = _offsets(counts), _offsets(recv_counts)
    out = comm.empty(recv_at[-1], like=x)
    out[recv_at[r] : recv_at[r + 1]] = x[send_at[r] : send_at[r + 1]]
    for k in range(1, p):
        dst, src = (r + k) % p, (r - k) % p
        # Both ends know the size (dst's recv_counts[r] is this rank's counts[dst]): empty halves skip together.
        comm.sendrecv(x[send_at[dst] : send_at[dst + 1]], dst, out[recv_at[src] : recv_at[src + 1]], src, tag=_TAG)
    return out


def _bruck(comm, x, counts, recv_counts, size):
    """Bruck's index algorithm, radix 2 (the module docstring); blocks of any length, sized by ``size(s, d)``."""
    p, r = comm.size, comm.rank
    send_at = _offsets(counts)
    # Place j holds the block for rank r + j (the first rotation). Views of x: nothing is written into them.
    places = [x[send_at[(r + j) % p] : send_at[(r + j) % p + 1]] for j in range(p)]
    bit = 1
    while bit < p:
        dst, src = (r + bit) % p, (r - bit) % p
        moving = [j for j in range(1, p) if j & bit]
        # The block at place j of rank src came from src - (j mod bit) and goes to that rank + j.
        incoming = [size((src - (j % bit)) % p, (src - (j % bit) + j) % p) for j in moving]
        send = comm.empty(sum(len(places[j]) for j in moving), like=x)
        at = 0
        for j in moving:
            n = len(places[j])
            send[at : at + n] = places[j]
            at += n
        recv = comm.empty(sum(incoming), like=x)
        comm.sendrecv(send, dst, recv, src, tag=_TAG)
        at = 0
        for j, n in zip(moving, incoming):
            places[j] = recv[at : at + n]  # views of this round's receive buffer, which is never reused
            at += n
        bit <<= 1
    # Place j now holds the block from rank r - j: put them in source order.
    recv_at = _offsets(recv_counts)
    out = comm.empty(recv_at[-1], like=x)
    for s in range(p):
        block = places[(r - s) % p]
        if len(block) != recv_counts[s]:
            raise ValueError(f"recv_counts[{s}] is {recv_counts[s]} but rank {s} sent rank {r} {len(block)} elements")
        out[recv_at[s] : recv_at[s + 1]] = block
    return out
