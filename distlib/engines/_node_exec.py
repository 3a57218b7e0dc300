"""Become a process on one simulated node: own hostname, then the given command.

Run by path inside the node's network namespace (see :mod:`distlib.minicluster`)::

    ip netns exec NETNS python .../_node_exec.py HOSTNAME COMMAND [ARGS...]

It moves into a new UTS namespace (so ``hostname`` and ``socket.gethostname()``
say ``HOSTNAME``, as on a real machine) and replaces itself with the command.

The Slurm daemons enter a node another way, with ``--netns`` (and
``--hosts``)::

    python .../_node_exec.py --netns /run/netns/NETNS --hosts FILE HOSTNAME COMMAND [ARGS...]

This joins the network namespace itself (``setns``) instead of through ``ip
netns exec``, which mounts a fresh ``/sys`` and so hides ``/sys/fs/cgroup``
(``slurmd`` stops on an empty one); it then takes a private mount namespace
and binds ``FILE`` over ``/etc/hosts``, so the node resolves the cluster's
names. It imports nothing from distlib, so starting it costs one bare
interpreter.
"""

import ctypes
import ctypes.util
import os
import shutil
import sys

_CLONE_NEWUTS = 0x04000000
_CLONE_NEWNS = 0x00020000
_CLONE_NEWNET = 0x40000000
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _check(ok: bool, what: str) -> None:
    if not ok:
        err = ctypes.get_errno()
        raise OSError(err, f"{what} failed: {os.strerror(err)}")


def become(hostname: str) -> None:
    """A private hostname for this process and its children (needs CAP_SYS_ADMIN)."""
    libc = _libc()
    _check(libc.unshare(_CLONE_NEWUTS) == 0, "unshare(CLONE_NEWUTS)")
    name = hostname.encode()
    _check(libc.sethostname(name, len(name)) == 0, f"sethostname({hostname!r})")


def enter(netns_path: str, hosts: str | None) -> None:
    """Join the network namespace at ``netns_path``; in a private mount namespace, ``hosts`` over /etc/hosts."""
    libc = _libc()
    fd = os.open(netns_path, os.O_RDONLY)
    try:
        _check(libc.setns(fd, _CLONE_NEWNET) == 0, f"setns({netns_path})")
    finally:
        os.close(fd)
    if hosts:
        _check(libc.unshare(_CLONE_NEWNS) == 0, "unshare(CLONE_NEWNS)")
        # nothing mounted here reaches the machine's own mount table
        _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None) == 0, "mount --make-rprivate /")
        _check(libc.mount(hosts.encode(), b"/etc/hosts", None, _MS_BIND, None) == 0, f"mount --bind {hosts}")


def main(argv) -> None:  # pragma: no cover - runs inside the namespace
    netns = hosts = None
    while argv[:1] in (["--netns"], ["--hosts"]):
        if argv[0] == "--netns":
            netns = argv[1]
        else:
            hosts = argv[1]
        argv = argv[2:]
    if len(argv) < 2:
        raise SystemExit("usage: python _node_exec.py [--netns PATH [--hosts FILE]] HOSTNAME COMMAND [ARGS...]")
    hostname, command = argv[0], argv[1:]
    if netns:
        enter(netns, hosts)
    become(hostname)
    program = command[0] if os.sep in command[0] else (shutil.which(command[0]) or command[0])
    try:
        os.execv(program, command)
    except OSError as exc:  # as a shell says it, with a shell's status
        print(f"{hostname}: {command[0]}: {exc.strerror}", file=sys.stderr)
        sys.exit(127 if isinstance(exc, FileNotFoundError) else 126)


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
