"""Keep a local MPI run off the network, and let ranks copy each other's memory once.

Two things :func:`distlib.engines.run_mpi` arranges when the machine allows
them, each found out by a quick probe and remembered for the session:

**A private network.** MPICH's launcher, Hydra, listens for its helper
processes on a TCP port bound to every interface (``0.0.0.0``); no option
or environment variable changes that (its socket code binds
``INADDR_ANY``). When unprivileged user namespaces are available (Linux,
``unshare`` from util-linux), the whole run starts inside a network
namespace of its own, which holds nothing but a loopback interface: the
port is then reachable from this run's processes only. Shared memory,
files and signals work as before, so the ranks notice nothing.

**Single-copy transfers (CMA).** By default MPICH moves a large message
between two processes on one machine through a shared bounce buffer: the
sender copies in, the receiver copies out, two copies per byte. With
``MPIR_CVAR_CH4_CMA_ENABLE=1`` the receiver reads the sender's buffer
directly with ``process_vm_readv`` (Linux "cross-memory attach"), one
copy. The kernel allows that between processes of the same user unless
Yama's ``ptrace_scope`` forbids it (MPICH then turns CMA off by itself) or
a seccomp filter blocks the call, which the probe here checks. The single
copy starts with a handshake, so small messages still go the two-copy way
(:func:`~distlib.engines.run_mpi` sets the switch-over to 16 KiB).

The small program that starts inside the new namespace is
``_netns_exec.py`` next to this file, run by path: it brings the loopback
interface up and replaces itself with the real command::

    unshare --user --map-root-user --net python .../_netns_exec.py mpiexec ...
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["network_prefix", "cma_available"]

_EXEC = Path(__file__).with_name("_netns_exec.py")


@functools.lru_cache(maxsize=1)
def network_prefix() -> tuple:
    """The argv prefix that runs a command in a loopback-only network namespace, or ``()``.

    ``()`` when the machine does not allow it (no ``unshare``, user
    namespaces disabled, not Linux) or when ``DISTLIB_MPI_NETNS=0``. The
    probe starts one short process and checks that, inside, ``lo`` is the
    only interface and is up.
    """
    if os.environ.get("DISTLIB_MPI_NETNS", "1") == "0" or not sys.platform.startswith("linux"):
        return ()
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    prefix = (unshare, "--user", "--map-root-user", "--net", sys.executable, str(_EXEC))
    probe = [sys.executable, "-c",  # lo must be the only interface, and up: a loopback connection works
             "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
             "socket.create_connection(s.getsockname(), timeout=5); "
             "print(sorted(n for _, n in socket.if_nameindex()))"]  # fmt: skip
    try:
        out = subprocess.run([*prefix, *probe], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return ()
    if out.returncode != 0 or out.stdout.strip() != "['lo']":
        return ()
    return prefix


@functools.lru_cache(maxsize=1)
def cma_available() -> bool:
    """Whether ``process_vm_readv`` works here (so MPICH may use single-copy transfers).

    False when Yama restricts ptrace (``/proc/sys/kernel/yama/ptrace_scope``
    not 0; MPICH would turn CMA off anyway), when the call is missing or
    blocked (a seccomp filter in some containers), or when
    ``DISTLIB_MPI_CMA=0``.
    """
    if os.environ.get("DISTLIB_MPI_CMA", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as fh:
            if fh.read(1) != "0":
                return False
    except OSError:
        pass  # no Yama: ordinary same-user rules apply
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    if not hasattr(libc, "process_vm_readv"):
        return False

    class IOVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    src = ctypes.create_string_buffer(b"distlib", 8)
    dst = ctypes.create_string_buffer(8)
    local, remote = IOVec(ctypes.addressof(dst), 8), IOVec(ctypes.addressof(src), 8)
    libc.process_vm_readv.restype = ctypes.c_ssize_t
    n = libc.process_vm_readv(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    return n == 8 and dst.raw == src.raw
