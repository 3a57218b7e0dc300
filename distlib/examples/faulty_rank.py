"""A rank that fails in the middle of a collective, to show how a run ends.

Every rank does one all-reduce; then rank ``--rank`` misbehaves while the
others enter a second all-reduce that can never complete::

    kill     SIGKILL itself (as the kernel's out-of-memory killer would)
    raise    raise an exception
    exit0    leave quietly with status 0
    exit1    leave with status 1
    hang     sleep forever (a stuck data loader, a livelock)
    spin     loop forever in Python (a rank stuck in its own code: its
             heartbeat thread still beats, but it never reaches the next
             collective)
    stop     SIGSTOP itself (as a debugger or ``kill -STOP`` would)
    none     behave (the run completes)

Under MPI (``python -m mpi4py`` turns the exception into ``MPI_Abort``;
``MPIEXEC_TIMEOUT`` catches the hang and the quiet exit)::

    mpiexec -n 3 python -m mpi4py -m distlib.examples.faulty_rank --mode raise

With torch (``init_process_group(timeout=...)`` plus the launcher's watchdog)::

    distlib.engines.run_torch("distlib.examples.faulty_rank:main", 3,
                              args=["--engine", "gloo", "--mode", "kill"])
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

import numpy as np

MODES = ("kill", "raise", "exit0", "exit1", "hang", "spin", "stop", "none")


def misbehave(mode: str) -> None:
    print(f"misbehaving: {mode}", flush=True)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "raise":
        raise RuntimeError("rank failed on purpose (faulty_rank --mode raise)")
    elif mode == "exit0":
        sys.exit(0)
    elif mode == "exit1":
        sys.exit(1)
    elif mode == "hang":
        while True:
            time.sleep(1)
    elif mode == "spin":
        n = 0
        while True:
            n += 1
    elif mode == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m distlib.examples.faulty_rank", description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=["mpi", "gloo", "nccl"], default="mpi")
    parser.add_argument("--mode", choices=MODES, default="raise")
    parser.add_argument("--rank", type=int, default=1, help="which rank misbehaves")
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from distlib.engines.selftest import make_comm

    comm = make_comm(ns.engine)
    x = comm.from_numpy(np.ones(1024))
    comm.allreduce(x)
    print(f"rank {comm.rank}: first all-reduce done ({comm.to_numpy(x)[0]:g})", flush=True)
    if comm.rank == ns.rank % comm.size and ns.mode != "none":
        misbehave(ns.mode)
    comm.allreduce(x)
    print(f"rank {comm.rank}: second all-reduce done ({comm.to_numpy(x)[0]:g})", flush=True)


if __name__ == "__main__":
    main()
