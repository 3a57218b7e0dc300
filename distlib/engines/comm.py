"""One small communicator interface over every engine the book runs on.

The chapters on MPI and on NCCL write each collective algorithm once, over
:class:`Comm`, and run it on three engines:

* :class:`distlib.engines.mpi.MPIComm` -- mpi4py over MPICH (processes
  started by ``mpiexec``);
* :class:`distlib.engines.torch_dist.TorchComm` -- ``torch.distributed``
  with the gloo backend (CPU tensors) or NCCL (CUDA tensors);
* :class:`ThreadComm` (this module) -- ``p`` threads in one process, for
  property tests and notebook cells that must not start processes. Its
  blocking :meth:`~ThreadComm.send` is *synchronous* (it returns only once
  the receiver has taken the message, as ``MPI_Ssend`` does), so an
  algorithm that only works thanks to buffering deadlocks here too, and the
  deadlock is reported as :class:`DeadlockError` instead of hanging.

A buffer is a 1-D contiguous array of the engine's kind (a NumPy array for
MPI and threads, a ``torch.Tensor`` for torch). Algorithms slice it
(``x[a:b]`` is a view for both kinds), allocate scratch space with
:meth:`Comm.empty` and reduce with :meth:`Comm.combine`.
"""

from __future__ import annotations

import threading
import time
from collections import deque

import numpy as np

from .._check import check_choice, check_int, check_real

__all__ = [
    "OPS",
    "Comm",
    "Request",
    "ThreadComm",
    "DeadlockError",
    "SubComm",
    "CountingComm",
    "run_threads",
]

OPS = ("sum", "max", "min")
"""Reductions every engine supports."""


class Request:
    """A pending non-blocking operation; :meth:`wait` completes it."""

    def wait(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class _Done(Request):
    """A request that is already complete (an empty message)."""

    def wait(self) -> None:
        return None


DONE = _Done()


class Comm:
    """The interface the book's collectives are written against.

    Subclasses set ``rank``, ``size`` and ``engine`` and implement the
    point-to-point calls; everything else has a default here.

    Attributes
    ----------
    rank : int
        This process's rank, ``0 <= rank < size``.
    size : int
        Number of ranks ``p``.
    engine : str
        ``"mpi"``, ``"gloo"``, ``"nccl"`` or ``"threads"``.
    """

    rank: int = 0
    size: int = 1
    engine: str = "abstract"
    ring_segment_bytes: int | None = None
    """The ring's reduce-scatter moves and adds each chunk in pieces of at most this many bytes
    (``None``: whole chunks, one message per step). Pieces that fit in a core's cache are added
    while still there, and the scratch space is one piece; the result is the same bit for bit.
    :class:`~distlib.engines.mpi.MPIComm` sets it; set it on an instance to try others."""

    # -- point to point ---------------------------------------------------
    def send(self, buf, dest: int, *, tag: int = 0) -> None:
        """Blocking send of the whole of ``buf`` to rank ``dest``."""
        raise NotImplementedError

    def recv(self, buf, source: int, *, tag: int = 0) -> None:
        """Blocking receive into the whole of ``buf`` from rank ``source``."""
        raise NotImplementedError

    def isend(self, buf, dest: int, *, tag: int = 0) -> Request:
        """Start sending ``buf``; do not touch ``buf`` before ``.wait()``."""
        raise NotImplementedError

    def irecv(self, buf, source: int, *, tag: int = 0) -> Request:
        """Start receiving into ``buf``; read it only after ``.wait()``."""
        raise NotImplementedError

    def sendrecv(self, sendbuf, dest: int, recvbuf, source: int, *, tag: int = 0) -> None:
        """Send ``sendbuf`` to ``dest`` while receiving ``recvbuf`` from ``source``.

        The pair can never deadlock, whatever the neighbours do at the same
        time, because neither half waits for the other to finish first. An
        empty or ``None`` buffer skips that half (both ends of a message
        compute the same size, so they skip together).
        """
        reqs = []
        if _nonempty(recvbuf):
            reqs.append(self.irecv(recvbuf, source, tag=tag))
        if _nonempty(sendbuf):
            reqs.append(self.isend(sendbuf, dest, tag=tag))
        for req in reqs:
            req.wait()

    # -- synchronisation and built-ins ------------------------------------
    def barrier(self) -> None:
        """Return only once every rank has called it."""
        raise NotImplementedError

    def allreduce(self, buf, *, op: str = "sum"):
        """The engine's own all-reduce of ``buf``, in place; returns ``buf``."""
        raise NotImplementedError

    def bcast_object(self, obj, *, root: int = 0):
        """Broadcast a picklable Python object from ``root``; returns it everywhere."""
        raise NotImplementedError

    def allgather_object(self, obj) -> list:
        """Every rank's ``obj``, in rank order, on every rank."""
        raise NotImplementedError

    def builtin_reduce_scatter(self, buf, counts, *, op: str = "sum"):
        """The engine's own reduce-scatter (rank ``r`` gets ``counts[r]`` elements)."""
        raise NotImplementedError(f"{self.engine} has no built-in reduce-scatter")

    def builtin_allgather(self, buf, counts):
        """The engine's own all-gather of pieces of ``counts[r]`` elements."""
        raise NotImplementedError(f"{self.engine} has no built-in all-gather")

    def note_collective(self, name: str) -> None:
        """Told by each of the book's collectives as it starts on more than one rank (``name``: ``"allreduce"``,
        ``"reduce_scatter"``, ``"allgather"``, ``"broadcast"``, ``"reduce"``); nothing here,
        :class:`CountingComm` counts them."""

    # -- buffers ------------------------------------------------------------
    def empty(self, n: int, like):
        """An uninitialised 1-D buffer of ``n`` elements, same dtype/device as ``like``."""
        return np.empty(n, dtype=like.dtype)

    def scratch(self, n: int, like):
        """A 1-D work buffer of ``n`` elements like ``like``, reused from call to call.

        Collectives need scratch space for incoming pieces. Allocating it
        afresh on every call is slow for large buffers: the allocator maps new
        pages, and the kernel zeroes each page when it is first touched, which
        costs about as much as the copy itself. This keeps one buffer per
        dtype and device and grows it when needed (call :meth:`free_scratch`
        to give the memory back). One collective at a time per communicator.
        """
        last = self.__dict__.get("_scratch_last")
        if last is not None and last[0] == n and last[1] is like.dtype and last[2] == getattr(like, "device", None):
            return last[3]  # the same request as last time (every call of a small all-reduce)
        key = (like.dtype, getattr(like, "device", None))
        views = self.__dict__.get("_scratch_views")
        if views is not None:  # the same length as a recent call: hand back the same view
            view = views.get((key, n))
            if view is not None:
                self._scratch_last = (n, like.dtype, key[1], view)
                return view
        store = self.__dict__.setdefault("_scratch", {})
        views = self.__dict__.setdefault("_scratch_views", {})
        buf = store.get(key)
        if buf is None or len(buf) < n:
            buf = self.empty(n, like)
            store[key] = buf
            for old in [k for k in views if k[0] == key]:  # views of the buffer just replaced
                del views[old]
            self.__dict__.pop("_scratch_last", None)
        if len(views) > 64:
            views.clear()
        view = views[(key, n)] = buf[:n]
        self._scratch_last = (n, like.dtype, key[1], view)
        return view

    def free_scratch(self) -> None:
        """Drop the buffers kept by :meth:`scratch`."""
        for name in ("_scratch", "_scratch_views", "_scratch_last"):
            self.__dict__.pop(name, None)

    def copy(self, buf):
        """A new buffer holding a copy of ``buf``."""
        return np.array(buf, copy=True)

    def from_numpy(self, array):
        """``array`` as this engine's buffer type (a copy, on the engine's device)."""
        return np.array(array, copy=True)

    def to_numpy(self, buf) -> np.ndarray:
        """``buf`` as a NumPy array (copied to the host if needed)."""
        return np.asarray(buf)

    def combine(self, dst, src, op: str = "sum") -> None:
        """``dst = op(dst, src)`` element-wise, in place."""
        if op == "sum":
            np.add(dst, src, dst)
        elif op == "max":
            np.maximum(dst, src, out=dst)
        else:
            np.minimum(dst, src, out=dst)

    def flat(self, buf):
        """``buf`` as a 1-D view (raises if that would need a copy)."""
        if type(buf) is np.ndarray and buf.ndim == 1 and (buf.strides[0] == buf.itemsize or len(buf) < 2):
            return buf  # already a contiguous vector: the common case, kept cheap for small messages
        if not isinstance(buf, np.ndarray):
            raise TypeError(f"buf must be a NumPy array for the {self.engine} engine, got {type(buf).__name__}")
        if not buf.flags.c_contiguous:
            raise ValueError("buf must be C-contiguous (the collectives work in place on a 1-D view)")
        return buf.reshape(-1)

    def itemsize(self, buf) -> int:
        """Bytes per element of ``buf``."""
        return int(buf.dtype.itemsize)

    def synchronize(self) -> None:
        """Wait for queued device work (CUDA); a no-op on the CPU."""
        return None

    def wtime(self) -> float:
        """Wall-clock seconds, for timing (after :meth:`synchronize`)."""
        return time.perf_counter()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} engine={self.engine!r} rank={self.rank} size={self.size}>"


class SubComm(Comm):
    """Some ranks of a communicator, seen as a communicator of their own.

    ``SubComm(parent, ranks)`` on a rank listed in ``ranks`` has ``rank`` =
    its position in that list and ``size = len(ranks)``; point-to-point
    calls go to the parent with ranks translated back. It is how the
    hierarchical all-reduce runs the book's ring inside a node and across
    nodes without asking the engine for new communicators. Messages keep
    the parent's ordering (one pair, one tag), so the phases that use
    different sub-communicators one after the other cannot mix.
    Only point-to-point calls and buffer helpers are offered: no built-ins.
    """

    def __init__(self, parent: Comm, ranks):
        ranks = [int(r) for r in ranks]
        if parent.rank not in ranks:
            raise ValueError(f"ranks must include this rank ({parent.rank}), got {ranks}")
        self.parent = parent
        self.ranks = ranks
        self.rank = ranks.index(parent.rank)
        self.size = len(ranks)
        self.engine = parent.engine

    def send(self, buf, dest, *, tag=0):
        self.parent.send(buf, self.ranks[dest], tag=tag)

    def recv(self, buf, source, *, tag=0):
        self.parent.recv(buf, self.ranks[source], tag=tag)

    def isend(self, buf, dest, *, tag=0):
        return self.parent.isend(buf, self.ranks[dest], tag=tag)

    def irecv(self, buf, source, *, tag=0):
        return self.parent.irecv(buf, self.ranks[source], tag=tag)

    def sendrecv(self, sendbuf, dest, recvbuf, source, *, tag=0):
        self.parent.sendrecv(sendbuf, self.ranks[dest], recvbuf, self.ranks[source], tag=tag)

    def note_collective(self, name):
        self.parent.note_collective(name)

    @property
    def ring_segment_bytes(self):
        return self.parent.ring_segment_bytes

    # Buffers are the parent's kind (and its scratch space: one collective at a time).
    def empty(self, n, like):
        return self.parent.empty(n, like)

    def scratch(self, n, like):
        return self.parent.scratch(n, like)

    def copy(self, buf):
        return self.parent.copy(buf)

    def combine(self, dst, src, op="sum"):
        self.parent.combine(dst, src, op)

    def flat(self, buf):
        return self.parent.flat(buf)

    def itemsize(self, buf):
        return self.parent.itemsize(buf)

    def __repr__(self) -> str:
        return f"<SubComm of ranks {self.ranks} of {self.parent!r}, rank={self.rank}>"


class CountingComm(Comm):
    """A communicator that counts the bytes this rank sends through it: :attr:`bytes_sent`, :attr:`messages`,
    and the book's collectives it ran, by kind: :attr:`collectives`.

    ``CountingComm(comm)`` forwards every point-to-point call to ``comm``
    and adds the size of each buffer it sends, where the book's collectives
    (:mod:`distlib.engines.algorithms`) run: a ring all-reduce of ``n``
    bytes on ``p`` ranks then counts ``2 (p - 1) / p * n`` per rank, as
    :func:`distlib.collectives.cost_coefficients` says. Sub-communicators
    built on it (:class:`SubComm`) count into it too. Only buffers are
    counted: the engine's built-in collectives and the object calls
    (``barrier``, ``bcast_object``, ``allgather_object``) are forwarded
    uncounted, since what they send is the engine's business.

    Examples
    --------
    >>> def work(comm):
    ...     counted = CountingComm(comm)
    ...     from distlib.engines.algorithms import allgather, allreduce
    ...     allreduce(counted, np.ones(8))       # 8 float64 = 64 bytes, ring on 4 ranks
    ...     allgather(SubComm(counted, [0, 1] if comm.rank < 2 else [2, 3]), np.ones(0))
    ...     return counted.bytes_sent, counted.collectives
    >>> run_threads(work, 4)[0]                  # 2 (p - 1) / p * 64; an empty all-gather sends nothing
    (96, {'allreduce': 1, 'allgather': 1})
    """

    def __init__(self, comm: Comm):
        if not isinstance(comm, Comm):
            raise TypeError(f"comm must be a distlib.engines Comm, got {type(comm).__name__}")
        self.inner = comm
        self.rank, self.size, self.engine = comm.rank, comm.size, comm.engine
        self.bytes_sent = 0
        """Bytes of every buffer sent so far (``len * itemsize``)."""
        self.messages = 0
        """Non-empty messages sent so far."""
        self.collectives: dict[str, int] = {}
        """``{name: calls}`` of the book's collectives run through it (or a :class:`SubComm` of it) on more
        than one rank, named as :meth:`Comm.note_collective` names them."""

    def note_collective(self, name):
        self.collectives[name] = self.collectives.get(name, 0) + 1
        self.inner.note_collective(name)  # a counter around a counter: both count

    @property
    def ring_segment_bytes(self):
        return self.inner.ring_segment_bytes

    def _count(self, buf) -> None:
        if _nonempty(buf):
            self.bytes_sent += len(buf) * self.inner.itemsize(buf)
            self.messages += 1

    def send(self, buf, dest, *, tag=0):
        self._count(buf)
        self.inner.send(buf, dest, tag=tag)

    def recv(self, buf, source, *, tag=0):
        self.inner.recv(buf, source, tag=tag)

    def isend(self, buf, dest, *, tag=0):
        self._count(buf)
        return self.inner.isend(buf, dest, tag=tag)

    def irecv(self, buf, source, *, tag=0):
        return self.inner.irecv(buf, source, tag=tag)

    def sendrecv(self, sendbuf, dest, recvbuf, source, *, tag=0):
        self._count(sendbuf)
        self.inner.sendrecv(sendbuf, dest, recvbuf, source, tag=tag)

    def barrier(self):
        self.inner.barrier()

    def allreduce(self, buf, *, op="sum"):
        return self.inner.allreduce(buf, op=op)

    def bcast_object(self, obj, *, root=0):
        return self.inner.bcast_object(obj, root=root)

    def allgather_object(self, obj):
        return self.inner.allgather_object(obj)

    def builtin_reduce_scatter(self, buf, counts, *, op="sum"):
        return self.inner.builtin_reduce_scatter(buf, counts, op=op)

    def builtin_allgather(self, buf, counts):
        return self.inner.builtin_allgather(buf, counts)

    # Buffers are the inner communicator's kind, and so is its scratch space.
    def empty(self, n, like):
        return self.inner.empty(n, like)

    def scratch(self, n, like):
        return self.inner.scratch(n, like)

    def copy(self, buf):
        return self.inner.copy(buf)

    def combine(self, dst, src, op="sum"):
        self.inner.combine(dst, src, op)

    def flat(self, buf):
        return self.inner.flat(buf)

    def itemsize(self, buf):
        return self.inner.itemsize(buf)

    def wtime(self):
        return self.inner.wtime()

    def __repr__(self) -> str:
        return f"<CountingComm of {self.inner!r}, bytes_sent={self.bytes_sent}>"


def _nonempty(buf) -> bool:
    return buf is not None and len(buf) > 0


def check_op(op) -> str:
    """Check a reduction name (one of :data:`OPS`)."""
    return check_choice("op", op, OPS)


def check_rank(name: str, value, size: int) -> int:
    """Check a rank number against the communicator size."""
    return check_int(name, value, minimum=0, maximum=size - 1)


# ----------------------------------------------------------------------------
# Threads: p ranks inside one Python process
# ----------------------------------------------------------------------------


class DeadlockError(RuntimeError):
    """No progress within the time limit: the ranks wait on each other."""


class _World:
    def __init__(self, p: int, timeout: float):
        self.p = p
        self.timeout = timeout
        self.cond = threading.Condition()
        self.queues: dict[tuple[int, int, int], deque] = {}
        self.barrier = threading.Barrier(p)
        self.failed: BaseException | None = None
        self.slots: list = [None] * p

    def queue(self, src: int, dst: int, tag: int) -> deque:
        key = (src, dst, tag)
        if key not in self.queues:
            self.queues[key] = deque()
        return self.queues[key]

    def wait_for(self, predicate, what: str) -> None:
        deadline = time.monotonic() + self.timeout
        with self.cond:
            while not predicate():
                if self.failed is not None:
                    raise DeadlockError(f"another rank failed while this one waited to {what}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DeadlockError(
                        f"no progress for {self.timeout:g} s while waiting to {what}: "
                        "every rank is waiting on another (a deadlock)"
                    )
                self.cond.wait(min(left, 0.1))


class _Message:
    __slots__ = ("data", "taken")

    def __init__(self, data):
        self.data = data
        self.taken = False


class _ThreadSend(Request):
    def __init__(self, world: _World, msg: _Message, what: str):
        self.world, self.msg, self.what = world, msg, what

    def wait(self) -> None:
        self.world.wait_for(lambda: self.msg.taken, self.what)


class _ThreadRecv(Request):
    def __init__(self, comm: "ThreadComm", buf, source: int, tag: int):
        self.comm, self.buf, self.source, self.tag = comm, buf, source, tag

    def wait(self) -> None:
        self.comm.recv(self.buf, self.source, tag=self.tag)


class ThreadComm(Comm):
    """Rank ``rank`` of ``p`` threads that exchange NumPy arrays.

    Made by :func:`run_threads`; not meant to be built by hand. Sends copy
    the data, and a blocking :meth:`send` waits until the receiver has
    taken it (synchronous mode), so a schedule that needs buffering to make
    progress raises :class:`DeadlockError` after ``timeout`` seconds.
    """

    engine = "threads"

    def __init__(self, world: _World, rank: int):
        self._world = world
        self.rank = rank
        self.size = world.p

    def _post(self, buf, dest: int, tag: int) -> _Message:
        check_rank("dest", dest, self.size)
        msg = _Message(np.array(buf, copy=True))
        with self._world.cond:
            self._world.queue(self.rank, dest, tag).append(msg)
            self._world.cond.notify_all()
        return msg

    def send(self, buf, dest, *, tag=0):
        msg = self._post(buf, dest, tag)
        _ThreadSend(self._world, msg, f"send from rank {self.rank} to rank {dest}").wait()

    def isend(self, buf, dest, *, tag=0):
        msg = self._post(buf, dest, tag)
        return _ThreadSend(self._world, msg, f"finish a send from rank {self.rank} to rank {dest}")

    def recv(self, buf, source, *, tag=0):
        check_rank("source", source, self.size)
        q = self._world.queue(source, self.rank, tag)
        self._world.wait_for(lambda: len(q) > 0, f"receive on rank {self.rank} from rank {source}")
        with self._world.cond:
            msg = q.popleft()
            if msg.data.shape[0] != len(buf):
                raise ValueError(
                    f"message from rank {source} has {msg.data.shape[0]} elements; "
                    f"rank {self.rank} posted a receive for {len(buf)}"
                )
            buf[...] = msg.data
            msg.taken = True
            self._world.cond.notify_all()

    def irecv(self, buf, source, *, tag=0):
        check_rank("source", source, self.size)
        return _ThreadRecv(self, buf, source, tag)

    def barrier(self):
        try:
            self._world.barrier.wait(self._world.timeout)
        except threading.BrokenBarrierError:
            raise DeadlockError(f"rank {self.rank}: the barrier broke (a rank failed or never arrived)") from None

    def _exchange(self, obj) -> list:
        self._world.slots[self.rank] = obj
        self.barrier()
        out = list(self._world.slots)
        self.barrier()
        return out

    def allreduce(self, buf, *, op="sum"):
        check_op(op)
        x = self.flat(buf)
        pieces = self._exchange(np.array(x, copy=True))
        fn = {"sum": np.sum, "max": np.max, "min": np.min}[op]
        x[...] = fn(np.stack(pieces), axis=0).astype(x.dtype, copy=False) if x.size else x
        return buf

    def bcast_object(self, obj, *, root=0):
        return self._exchange(obj)[root]

    def allgather_object(self, obj):
        return self._exchange(obj)

    def builtin_reduce_scatter(self, buf, counts, *, op="sum"):
        full = self.allreduce(np.array(self.flat(buf), copy=True), op=op)
        start = int(sum(counts[: self.rank]))
        return full[start : start + counts[self.rank]].copy()

    def builtin_allgather(self, buf, counts):
        return np.concatenate(self._exchange(np.array(self.flat(buf), copy=True)))


def run_threads(fn, p: int, *args, timeout: float = 10.0, **kwargs) -> list:
    """Run ``fn(comm, *args, **kwargs)`` on ``p`` threads; results in rank order.

    Parameters
    ----------
    fn : callable
        Called once per rank with a :class:`ThreadComm` first.
    p : int
        Number of ranks, ``>= 1``.
    timeout : float
        Seconds a rank may wait without progress before the run is declared
        deadlocked.

    Returns
    -------
    list
        ``fn``'s return value on each rank, rank 0 first.

    Raises
    ------
    DeadlockError
        If the ranks stop making progress.
    Exception
        The first exception any rank raised.

    Examples
    --------
    >>> run_threads(lambda comm: comm.rank * 10, 3)
    [0, 10, 20]
    >>> out = run_threads(lambda comm: comm.allreduce(np.full(2, comm.rank + 1.0)), 4)
    >>> out[0].tolist()               # 1 + 2 + 3 + 4
    [10.0, 10.0]
    """
    p = check_int("p", p, minimum=1)
    timeout = check_real("timeout", timeout, minimum=0, strict_min=True)
    world = _World(p, timeout)
    results: list = [None] * p
    errors: list = [None] * p

    def body(rank: int) -> None:
        try:
            results[rank] = fn(ThreadComm(world, rank), *args, **kwargs)
        except BaseException as exc:  # re-raised below, in the caller's thread
            errors[rank] = exc
            with world.cond:
                if world.failed is None:
                    world.failed = exc
                world.cond.notify_all()
            world.barrier.abort()

    threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(p)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if world.failed is not None:
        raise world.failed
    return results
