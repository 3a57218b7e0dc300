"""Bring the loopback interface up, then become the given command.

Run by path, inside a new network namespace (see :mod:`distlib.engines._isolate`)::

    unshare --user --map-root-user --net python .../_netns_exec.py mpiexec -n 2 ...

It imports nothing from distlib, so starting it costs one bare interpreter.
"""

import fcntl
import os
import shutil
import socket
import struct
import sys

_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_IFREQ = "16sH22x"  # struct ifreq: a 16-byte name, then the flags (the union is 24 bytes)


def loopback_up() -> None:
    """Bring ``lo`` up (a new network namespace starts with it down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack(_IFREQ, fcntl.ioctl(s, _SIOCGIFFLAGS, struct.pack(_IFREQ, b"lo", 0)))[1]
        if not flags & _IFF_UP:
            fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP))


def main(argv) -> None:  # pragma: no cover - runs inside the namespace
    if not argv:
        raise SystemExit("usage: python _netns_exec.py COMMAND [ARGS...]")
    loopback_up()
    program = argv[0] if os.sep in argv[0] else (shutil.which(argv[0]) or argv[0])
    os.execv(program, argv)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
