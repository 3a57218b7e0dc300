"""Start ``p`` real processes, collect what each rank printed, and clean up.

Notebooks cannot be MPI ranks themselves, so the chapters launch worker
modules (files in :mod:`distlib.examples`, never functions defined in a
cell, never ``fork``) through these functions:

* :func:`run_mpi` -- ``mpiexec -n P python -m mpi4py <script or -m module>``;
* :func:`run_torch` -- ``P`` Python processes joined by ``torch.distributed``
  (gloo or NCCL), started as fresh interpreters;
* :func:`try_mpi` / :func:`try_torch` -- the same, but a deadlock or a
  failure comes back as an :class:`Outcome` to print instead of an exception.

Every run is bounded and leaves nothing behind:

* a wall-clock ``timeout`` (MPICH's ``MPIEXEC_TIMEOUT`` for mpiexec, and a
  watchdog here for both engines);
* ``python -m mpi4py`` turns an uncaught exception on any rank into
  ``MPI_Abort``, so the others stop at once; torch ranks get a collective
  ``timeout`` (``init_process_group(timeout=...)``), and the watchdog stops
  every rank as soon as one exits with an error;
* each run tags its processes with a unique ``DISTLIB_RUN_ID`` in their
  environment and, at the end, kills any process still carrying it (MPICH's
  process manager puts each rank in a session of its own, so killing
  ``mpiexec``'s process group alone would not reach them).

* each rank keeps a heartbeat (:mod:`distlib.engines.progress`), and a rank
  that stops beating for ``stall`` seconds (15 by default, ``$DISTLIB_STALL``)
  ends the run with :class:`RunStalled`, naming the rank, its node and what
  it was doing; long runs stay allowed, since a rank waiting in a collective
  keeps beating.

All three launchers also run across a :class:`distlib.minicluster.MiniCluster`
(``cluster=``): ``mpiexec`` with a host file and a launcher command that
enters each node, one ``torchrun`` agent per node with the static rendezvous,
or one process per rank placed on its node. They share one path for
starting, waiting on and stopping processes (``_Processes``).

Local runs stay on this machine: ``mpiexec -host localhost``, ranks talking
through shared memory only (``UCX_TLS=self,sm``: MPICH's network layer opens
no socket), torch ranks meeting through a ``file://`` rendezvous with gloo
bound to ``lo`` (``GLOO_SOCKET_IFNAME=lo``). MPICH's launcher, Hydra,
listens for its own helper processes on a port bound to all interfaces
and has no option to change that, so where Linux allows unprivileged user
namespaces the whole MPI run starts in a network namespace of its own that
holds only a loopback interface (:mod:`distlib.engines._isolate`;
``RunResult.network`` says which way a run went). Elsewhere that one
port stays open on every interface for the length of the run; nothing the
ranks send goes through it.

Where the kernel allows it, MPI runs also get MPICH's single-copy
transfers between ranks (``MPIR_CVAR_CH4_CMA_ENABLE=1``; see
:mod:`distlib.engines._isolate`). ``DISTLIB_MPI_NETNS=0`` and
``DISTLIB_MPI_CMA=0`` turn either off.

The package, by what each part does:

* :mod:`~distlib.engines.launch.results` -- what a run leaves (:class:`RunResult`, :class:`Outcome`), how it
  fails (:class:`RunError` and its kinds) and what a command says and returns then (:data:`EXIT_STATUS`,
  :func:`exit_status`, :func:`failure_report`);
* :mod:`~distlib.engines.launch.plan` -- a run planned (``_Plan``) and executed the one way every launcher
  shares (``_execute``): signals, the watchdog, the clean-up;
* :mod:`~distlib.engines.launch.mpi` -- :func:`find_mpiexec`, :func:`run_mpi`, :func:`try_mpi` and what MPI's
  failures are called;
* :mod:`~distlib.engines.launch.torch` -- :func:`run_torch`, :func:`try_torch` and :func:`run_torchrun`.

Callers name the functions here, on this package (``from distlib.engines.launch import run_mpi``), so that a
test that replaces one here replaces it for every caller.
"""

from __future__ import annotations

from .._processes import RUN_ID_VAR, stray_processes
from ..progress import DEFAULT_STALL
from .mpi import find_mpiexec, run_mpi, try_mpi
from .plan import link_words
from .results import (
    EXIT_STATUS,
    Outcome,
    PrivateNetworkUnavailable,
    RunError,
    RunInterrupted,
    RunResult,
    RunStalled,
    RunTimeout,
    exit_status,
    failure_report,
)
from .torch import run_torch, run_torchrun, try_torch

__all__ = [
    "RunResult",
    "RunError",
    "RunTimeout",
    "RunStalled",
    "Outcome",
    "run_mpi",
    "run_torch",
    "try_mpi",
    "try_torch",
    "run_torchrun",
    "PrivateNetworkUnavailable",
    "find_mpiexec",
    "stray_processes",
    "RunInterrupted",
    "EXIT_STATUS",
    "exit_status",
    "failure_report",
    "link_words",
    "RUN_ID_VAR",
    "DEFAULT_STALL",
]
