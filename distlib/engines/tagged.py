"""A second channel over the same ranks, and a thread that runs collectives on it while the rank computes.

To hide communication under computation a rank must have a collective in
flight while it computes. NCCL does it with a second CUDA stream; torch's
``async_op=True`` hands the collective to the process group's own threads.
The book's collectives (:mod:`distlib.engines.algorithms`) are Python over
point-to-point calls, so here a :class:`Background` thread runs them, one at
a time in the order they were started, and the rank waits for each only
when it needs the result. MPI and gloo both release Python's lock while
they move bytes, and NumPy while it multiplies large matrices, so the two
threads truly run at once.

The thread's messages must never meet the main thread's: both may talk to
the same peer at once (a data-parallel all-reduce beside a context-parallel
ring hop). :class:`TaggedComm` is the same communicator with every tag
shifted by a fixed offset, as ``MPI_Comm_dup`` gives a new matching
context: a message sent through it matches only a receive through it. It
keeps scratch space of its own, since the book's collectives reuse one
scratch buffer per communicator and two collectives run at once.

MPI must run with ``MPI_THREAD_MULTIPLE`` (mpi4py asks for it by default,
MPICH gives it); :func:`check_threads` says so in one line otherwise.
"""

from __future__ import annotations

import queue
import threading
import time

from .comm import Comm, SubComm

__all__ = ["TAG_OFFSET", "TaggedComm", "Handle", "Background", "check_threads"]

TAG_OFFSET = 1 << 24
"""Added to every tag of a :class:`TaggedComm`: above the trainer's pipeline tags, below MPICH's ``MPI_TAG_UB``
(``2**29 - 1``)."""


def check_threads(comm) -> None:
    """Raise ``RuntimeError`` if ``comm``'s engine cannot take calls from two threads at once (MPI below
    ``MPI_THREAD_MULTIPLE``)."""
    inner = comm
    while hasattr(inner, "inner") or hasattr(inner, "parent"):
        inner = getattr(inner, "inner", None) or inner.parent
    if getattr(inner, "engine", None) == "mpi":
        MPI = inner.MPI
        if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
            raise RuntimeError("--overlap needs MPI_THREAD_MULTIPLE (mpi4py.rc.thread_level = 'multiple'); this MPI "
                               "gave less")  # fmt: skip


class TaggedComm(SubComm):
    """``comm``'s ranks, its messages kept apart: every tag is ``tag + offset``.

    A :class:`~distlib.engines.comm.SubComm` of all of ``comm``'s ranks whose point-to-point calls shift the
    tag, with scratch space of its own.

    Examples
    --------
    Two messages with the same tag between the same ranks, one through each channel: each arrives where it
    was meant to.

    >>> import numpy as np
    >>> from distlib.engines.comm import run_threads
    >>> def both(comm):
    ...     other = TaggedComm(comm)
    ...     if comm.rank == 0:
    ...         first = other.isend(np.full(1, 2.0), 1)
    ...         comm.send(np.full(1, 1.0), 1)
    ...         first.wait()
    ...         return None
    ...     a, b = np.empty(1), np.empty(1)
    ...     comm.recv(a, 0)
    ...     other.recv(b, 0)
    ...     return float(a[0]), float(b[0])
    >>> run_threads(both, 2)[1]
    (1.0, 2.0)
    """

    def __init__(self, comm: Comm, offset: int = TAG_OFFSET):
        if not isinstance(comm, Comm):
            raise TypeError(f"comm must be a distlib.engines Comm, got {type(comm).__name__}")
        super().__init__(comm, range(comm.size))
        self.offset = int(offset)

    def send(self, buf, dest, *, tag=0):
        super().send(buf, dest, tag=tag + self.offset)

    def recv(self, buf, source, *, tag=0):
        super().recv(buf, source, tag=tag + self.offset)

    def isend(self, buf, dest, *, tag=0):
        return super().isend(buf, dest, tag=tag + self.offset)

    def irecv(self, buf, source, *, tag=0):
        return super().irecv(buf, source, tag=tag + self.offset)

    def sendrecv(self, sendbuf, dest, recvbuf, source, *, tag=0):
        super().sendrecv(sendbuf, dest, recvbuf, source, tag=tag + self.offset)

    # Its own scratch space: a collective may run on each channel at once.
    scratch = Comm.scratch
    free_scratch = Comm.free_scratch

    def wtime(self):
        return self.parent.wtime()

    def __repr__(self) -> str:
        return f"<TaggedComm (+{self.offset}) of {self.parent!r}>"


class Handle:
    """A collective started on a :class:`Background` thread: :meth:`wait` for its result."""

    __slots__ = ("_done", "_result", "_error", "what", "waited", "_owner")

    def __init__(self, what: str, owner=None):
        self._done = threading.Event()
        self._result = self._error = None
        self.what = what
        self.waited = 0.0
        """Seconds :meth:`wait` blocked: the part of the collective that computation did not hide."""
        self._owner = owner

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self):
        """Block until the collective has finished; its result (or its exception, raised here)."""
        if not self._done.is_set():
            start = time.perf_counter()
            self._done.wait()
            waited = time.perf_counter() - start
            self.waited += waited
            if self._owner is not None:
                self._owner.waited += waited
        if self._error is not None:
            raise self._error
        return self._result


class Background:
    """One thread that runs the collectives handed to it, in order, while the caller goes on.

    Every rank of a group must start the same collectives in the same order (as with blocking ones); the
    thread runs them first come, first served.

    Examples
    --------
    >>> import numpy as np
    >>> from distlib.engines.comm import run_threads
    >>> from distlib.engines.algorithms import allreduce
    >>> def summed(comm):
    ...     bg = Background()
    ...     h = bg.start(allreduce, TaggedComm(comm), np.ones(4) * (comm.rank + 1), what="allreduce")
    ...     out = h.wait().tolist()
    ...     bg.close()
    ...     return out
    >>> run_threads(summed, 2)[0]
    [3.0, 3.0, 3.0, 3.0]
    """

    def __init__(self, name: str = "distlib-comm"):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self.started = 0
        """Collectives started so far."""
        self.waited = 0.0
        """Seconds the caller has waited for them, in all (what computation did not hide)."""

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            handle, fn, args, kwargs = item
            try:
                handle._result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to whoever waits
                handle._error = exc
            handle._done.set()

    def start(self, fn, *args, what: str = "", **kwargs) -> Handle:
        """Queue ``fn(*args, **kwargs)`` (a collective over a :class:`TaggedComm`); its :class:`Handle`."""
        handle = Handle(what or getattr(fn, "__name__", "collective"), self)
        self.started += 1
        self._queue.put((handle, fn, args, kwargs))
        return handle

    def close(self) -> None:
        """Let the thread finish what it was given, then end it."""
        self._queue.put(None)
        self._thread.join()
