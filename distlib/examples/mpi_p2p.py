"""Point-to-point messages: blocking, synchronous and non-blocking, timed.

Ranks pair up (0 with 1, 2 with 3, ...; an odd last rank sits out)::

    mpiexec -n 2 python -m mpi4py -m distlib.examples.mpi_p2p

Three experiments, printed by rank 0, which also hands the figures back
typed: one :class:`P2PTiming` report line (:mod:`distlib.engines.report`)::

    result = de.run_mpi("distlib.examples.mpi_p2p", 2)
    timing = report.read(result, P2PTiming)

The experiments:

1. **Ping-pong.** Latency of an 8-byte message and bandwidth of a large one
   (half the round trip).
2. **When does ``Send`` return?** The partner waits 0.2 s before it posts
   its receive. A small ``Send`` returns at once (MPICH copies it into a
   buffer: the *eager* protocol); ``Ssend`` waits for the receive, and so
   does a large ``Send`` (the *rendezvous* protocol). This is why "everyone
   sends first" works with small messages and deadlocks with large ones.
3. **Overlap.** Exchange a large buffer with ``Isend``/``Irecv`` while
   computing, and compare with doing one after the other. MPI
   moves a large message only while some MPI call runs on each side, so the
   overlap is measured twice: computing without touching MPI until
   ``Waitall``, and computing in slices with a ``Testall`` between them.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["P2PTiming", "RECEIVER_WAIT", "PAIRS", "main"]


@dataclass(frozen=True)
class P2PTiming:
    """What rank 0 of :func:`main` measured (seconds, bytes, bytes/s).

    Attributes
    ----------
    latency : float
        One way, an 8-byte message: half the median ping-pong.
    n_bytes : int
        The large message.
    one_way : float
        One way, the large message (half the median ping-pong).
    bandwidth : float
        ``n_bytes / one_way``.
    send_small, ssend_small, send_big : float
        How long ``Send`` of 8 B, ``Ssend`` of 8 B and ``Send`` of the large
        message took to return while the receiver waited ``receiver_wait``
        before posting its receive.
    receiver_wait : float
    slices : int
        Compute slices chosen to last about as long as the transfer.
    times : dict
        Median seconds of each variant of the overlap experiment (the
        slowest rank's): ``"transfer"``, ``"compute"``, ``"send, then
        compute"``, ``"Isend, compute, Wait"``, ``"exchange, then compute"``,
        ``"Isend/Irecv, compute, Waitall"``.
    hidden_one_way, hidden_exchange : float
        Share of the shorter of transfer and compute that overlapping hid
        (negative: the overlapped version was slower).
    buffers_match : bool
        The received large buffer equals what was sent.
    """

    latency: float
    n_bytes: int
    one_way: float
    bandwidth: float
    send_small: float
    ssend_small: float
    send_big: float
    receiver_wait: float
    slices: int
    times: dict[str, float]
    hidden_one_way: float
    hidden_exchange: float
    buffers_match: bool


#: Seconds the receiver waits before it posts its receive, in the experiment "when does Send return?".
RECEIVER_WAIT = 0.2

#: The overlap experiment's pairs: (one after the other, overlapped), as P2PTiming.times names them.
PAIRS = (("send, then compute", "Isend, compute, Wait"), ("exchange, then compute", "Isend/Irecv, compute, Waitall"))


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


@dataclass(frozen=True)
class _Pair:
    """This rank's side of its pair: the pairs' communicator, its partner, whether it goes first, rank 0's print."""

    comm: object
    partner: int
    first: bool
    say: Callable


def main(argv=None) -> None:
    """Every paired rank runs the three experiments; rank 0 prints them and emits a :class:`P2PTiming`."""
    from mpi4py import MPI

    ns = _parse_args(argv)
    comm = _pairs_comm(MPI)
    if comm is None:
        return
    rank = comm.Get_rank()
    say = (lambda *a: print(*a, flush=True)) if rank == 0 else (lambda *a: None)
    pair = _Pair(comm, partner=rank ^ 1, first=rank % 2 == 0, say=say)
    n_big = int(ns.mbytes * 2**20) // 8
    small, big = np.zeros(1), np.zeros(n_big)
    small_in, big_in = np.empty_like(small), np.empty_like(big)
    lat, one_way = _ping_pong(pair, small, small_in, big, big_in, repeats=ns.repeats)
    returned = _when_send_returns(pair, small, small_in, big, big_in, mbytes=ns.mbytes)
    k, t, hidden = _overlap(MPI, pair, big, big_in, rank=rank, mbytes=ns.mbytes, repeats=ns.repeats)
    comm.Barrier()
    ok = bool(comm.allreduce(np.array_equal(big_in, big), op=MPI.LAND))
    if rank == 0:
        from distlib.engines.report import emit

        emit(P2PTiming(latency=lat, n_bytes=int(big.nbytes), one_way=one_way, bandwidth=big.nbytes / one_way,
                       send_small=returned[0], ssend_small=returned[1], send_big=returned[2], receiver_wait=RECEIVER_WAIT,
                       slices=k, times=t, hidden_one_way=hidden[PAIRS[0][0]], hidden_exchange=hidden[PAIRS[1][0]],
                       buffers_match=ok))  # fmt: skip
    if not ok:
        sys.exit(1)
    say("received buffers match what was sent: True")


def _parse_args(argv):
    """The command line: the large message's size and the repeats."""
    parser = argparse.ArgumentParser(prog="python -m distlib.examples.mpi_p2p")
    parser.add_argument("--mbytes", type=float, default=16.0, help="large message size in MiB (default 16)")
    parser.add_argument("--repeats", type=int, default=5)
    return parser.parse_args(sys.argv[1:] if argv is None else argv)


def _pairs_comm(MPI):
    """The communicator of the paired ranks; None on an odd last rank, which says it sits out."""
    world = MPI.COMM_WORLD
    if world.Get_size() < 2:
        print("mpi_p2p needs at least 2 ranks: mpiexec -n 2 ...", flush=True)
        sys.exit(1)
    # An odd last rank has no partner: it leaves a communicator of the others.
    paired = (world.Get_rank() ^ 1) < world.Get_size()
    comm = world.Split(0 if paired else MPI.UNDEFINED, world.Get_rank())
    if not paired:
        print(f"rank {world.Get_rank()}: no partner, sitting out", flush=True)
        return None
    return comm


def _ping_pong(pair: _Pair, small, small_in, big, big_in, *, repeats: int) -> tuple:
    """Experiment 1: ``(latency, one_way)``, half the median round trip of 8 bytes and of the large message."""
    comm, partner, say = pair.comm, pair.partner, pair.say

    def pingpong(out, inp):
        if pair.first:
            comm.Send(out, dest=partner)
            comm.Recv(inp, source=partner)
        else:
            comm.Recv(inp, source=partner)
            comm.Send(out, dest=partner)

    pingpong(small, small_in)
    pingpong(big, big_in)
    lat = _median_time(lambda: pingpong(small, small_in), 50) / 2
    one_way = _median_time(lambda: pingpong(big, big_in), repeats) / 2
    say(f"ping-pong: 8 B one way {lat * 1e6:.1f} us; {big.nbytes / 2**20:g} MiB one way "
        f"{one_way * 1e3:.2f} ms = {big.nbytes / one_way / 1e9:.2f} GB/s")
    comm.Barrier()
    return lat, one_way


def _when_send_returns(pair: _Pair, small, small_in, big, big_in, *, mbytes: float) -> list:
    """Experiment 2: how long ``Send`` 8 B, ``Ssend`` 8 B and ``Send`` of the large message take to return."""
    comm, partner, say = pair.comm, pair.partner, pair.say
    returned = []
    for name, buf, inbuf in (("Send 8 B", small, small_in), ("Ssend 8 B", small, small_in), (f"Send {mbytes:g} MiB", big, big_in)):
        comm.Barrier()
        if pair.first:
            t0 = time.perf_counter()
            (comm.Ssend if name.startswith("Ssend") else comm.Send)(buf, dest=partner)
            took = time.perf_counter() - t0
            returned.append(took)
            say(f"{name:>14} returned after {took * 1e3:7.2f} ms (the receiver waited {RECEIVER_WAIT * 1e3:.0f} ms before posting its receive)")
        else:
            time.sleep(RECEIVER_WAIT)
            comm.Recv(inbuf, source=partner)
    comm.Barrier()
    return returned


def _overlap_steps(MPI, pair: _Pair, big, big_in, *, rank: int) -> tuple:
    """Experiment 3's pieces: ``(work, compute(k), one_way_send(overlap, k), exchange(overlap, k))``."""
    comm, partner = pair.comm, pair.partner
    # The work is element-wise NumPy on a cache-sized array (no
    # BLAS threads, no memory traffic to compete with the copy).
    a = np.random.default_rng(rank).random(32_768)
    out = np.empty_like(a)

    def work():
        np.sin(a, out=out)

    def compute(k):
        for _ in range(k):
            work()

    def one_way_send(overlap: bool, k: int):
        # The sender computes; its partner only receives. MPICH moves a large
        # message on one machine by having the *receiver* copy it straight out
        # of the sender's memory, so the sender's CPU is free meanwhile.
        if not pair.first:
            comm.Recv(big_in, source=partner)
            return
        if overlap:
            req = comm.Isend(big, dest=partner)
            compute(k)
            req.Wait()
        else:
            comm.Send(big, dest=partner)
            compute(k)

    def exchange(overlap: bool, k: int):
        # Both ranks send and both compute: each CPU must also copy its
        # incoming message, so there is no idle engine to hide it behind.
        reqs = [comm.Isend(big, dest=partner), comm.Irecv(big_in, source=partner)]
        if overlap:
            for _ in range(k):
                work()
                MPI.Request.Testall(reqs)  # give MPI a chance to move data
            MPI.Request.Waitall(reqs)
        else:
            MPI.Request.Waitall(reqs)
            compute(k)

    return work, compute, one_way_send, exchange


def _overlap(MPI, pair: _Pair, big, big_in, *, rank: int, mbytes: float, repeats: int) -> tuple:
    """Experiment 3: ``(slices, median times, hidden shares)`` of each variant, one after the other and overlapped."""
    comm, say = pair.comm, pair.say
    work, compute, one_way_send, exchange = _overlap_steps(MPI, pair, big, big_in, rank=rank)
    t_one = _median_time(work, 50)
    one_way_send(False, 0)
    t_msg = comm.allreduce(_median_time(lambda: one_way_send(False, 0), repeats), op=MPI.MAX)
    k = max(1, int(round(comm.bcast(t_msg / t_one))))  # compute about as long as the transfer

    # Take the variants in turn, many times, so that a busy moment on a
    # shared machine hits them all alike; report medians of the slowest rank.
    variants = {
        "transfer": lambda: one_way_send(False, 0),
        "compute": lambda: compute(k),
        "send, then compute": lambda: one_way_send(False, k),
        "Isend, compute, Wait": lambda: one_way_send(True, k),
        "exchange, then compute": lambda: exchange(False, k),
        "Isend/Irecv, compute, Waitall": lambda: exchange(True, k),
    }
    samples = {name: [] for name in variants}
    for _ in range(max(repeats, 3) * 2 + 1):
        for name, fn in variants.items():
            comm.Barrier()
            t0 = time.perf_counter()
            fn()
            samples[name].append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    t = {name: float(np.median(v)) for name, v in samples.items()}
    say(f"one-way {mbytes:g} MiB transfer {t['transfer'] * 1e3:.2f} ms; compute ({k} slices) {t['compute'] * 1e3:.2f} ms")
    hidden = {}
    for seq, ov in PAIRS:
        hidden[seq] = (t[seq] - t[ov]) / min(t["transfer"], t["compute"])
        say(f"  {seq:<24} {t[seq] * 1e3:7.2f} ms   {ov:<30} {t[ov] * 1e3:7.2f} ms   "
            f"hidden: {100 * hidden[seq]:.0f}% of the shorter part")
    return k, t, hidden


if __name__ == "__main__":
    main()
