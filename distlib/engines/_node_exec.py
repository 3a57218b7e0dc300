"""Become a process on one simulated node: own hostname, then the given command.

Run by path inside the node's network namespace (see :mod:`distlib.minicluster`)::

    ip netns exec NETNS python .../_node_exec.py HOSTNAME COMMAND [ARGS...]

It moves into a new UTS namespace (so ``hostname`` and ``socket.gethostname()``
say ``HOSTNAME``, as on a real machine) and replaces itself with the command. It imports nothing from distlib, so
starting it costs one bare interpreter.
"""

import ctypes
import ctypes.util
import os
import shutil
import sys

_CLONE_NEWUTS = 0x04000000


def become(hostname: str) -> None:
    """A private hostname for this process and its children (needs CAP_SYS_ADMIN)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    if libc.unshare(_CLONE_NEWUTS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUTS) failed")
    name = hostname.encode()
    if libc.sethostname(name, len(name)) != 0:
        raise OSError(ctypes.get_errno(), f"sethostname({hostname!r}) failed")


def main(argv) -> None:  # pragma: no cover - runs inside the namespace
    if len(argv) < 2:
        raise SystemExit("usage: python _node_exec.py HOSTNAME COMMAND [ARGS...]")
    hostname, command = argv[0], argv[1:]
    become(hostname)
    program = command[0] if os.sep in command[0] else (shutil.which(command[0]) or command[0])
    os.execv(program, command)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
