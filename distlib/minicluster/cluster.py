"""A cluster on one machine: simulated nodes joined by a throttled network.

Each simulated node is a Linux network namespace with a hostname of its own
(a UTS namespace entered by every process started there). The nodes hang off
one bridge, the "switch", which sits in a namespace of its own, through a
veth pair per node; ``tc``'s token-bucket filter (``tbf``) throttles both
directions of each pair to ``link_gbit`` Gbit/s. So ranks on one node share
memory as on a real machine, and bytes between nodes cross a link of the rate
you set, and nothing else::

        node0 (10.99.0.1)        node1 (10.99.0.2)
           eth0 --tbf--+   +--tbf-- eth0
                        bridge (namespace "switch")

Everything lives in namespaces the cluster creates (named after this process's
PID, so runs beside each other never collide) and removes again: the private
addresses are reachable from nowhere else, and nothing is added to the
machine's own network. :func:`mini_cluster` is the one call::

    from distlib.minicluster import mini_cluster
    with mini_cluster(2, link_gbit=2) as cluster:
        print(cluster.run(cluster.nodes[1], ["hostname"]).stdout)   # node1

It removes everything on leaving the ``with`` block, also after an
exception, Ctrl-C (``KeyboardInterrupt``) or SIGTERM (turned into
``SystemExit`` while the cluster is up). A cluster left by a process killed
with SIGKILL is removed by the next one made on this machine (its name holds
the dead PID).

Needs root (``CAP_NET_ADMIN`` and ``CAP_SYS_ADMIN``), ``ip`` and ``tc``
(iproute2) and Linux; otherwise :class:`MiniClusterUnavailable` says what is
missing. The kernel here has no ``netem``, so links have a rate but no added
delay. The chapter "A cluster on one machine" uses it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .. import limits
from .._check import check_bool, check_int, check_real
from ..engines._processes import _pid_alive

__all__ = [
    "MiniClusterUnavailable",
    "Node",
    "LinkBytes",
    "MiniCluster",
    "mini_cluster",
    "minicluster_support",
    "leftovers",
]

_PREFIX = "dlmc"  # every namespace name starts dlmc-<pid>-<tag>-
_SUBNET = "10.99.0"  # private, and only inside this cluster's namespaces
_NODE_EXEC = Path(__file__).parents[1] / "engines" / "_node_exec.py"
_NETNS_DIR = Path("/run/netns")
_ETC_NETNS = Path("/etc/netns")


class MiniClusterUnavailable(RuntimeError):
    """This machine cannot host a mini cluster (not root, no ``ip``/``tc``, no namespaces)."""


@dataclass(frozen=True)
class Node:
    """One simulated node.

    Attributes
    ----------
    index : int
    hostname : str
        ``"node0"``, ``"node1"``, ... (what ``hostname`` says on the node).
    netns : str
        Its network namespace (``ip netns exec <netns> ...``).
    address : str
        Its private IPv4 address on the cluster's network.
    iface : str
        Its network interface (``"eth0"``), the one to give ``mpiexec -iface``,
        ``GLOO_SOCKET_IFNAME`` or ``NCCL_SOCKET_IFNAME``.
    port : str
        The switch's end of its link (in the switch namespace).
    """

    index: int
    hostname: str
    netns: str
    address: str
    iface: str = "eth0"
    port: str = ""


@dataclass(frozen=True)
class LinkBytes:
    """Bytes a node's link carried since the cluster was made (tc's counters)."""

    sent: int
    received: int

    @property
    def total(self) -> int:
        return self.sent + self.received


def minicluster_support() -> str | None:
    """``None`` where a mini cluster can be made here, else the reason it cannot (a sentence).

    ``DISTLIB_MINICLUSTER=0`` in the environment turns mini clusters off (a
    book build that must not touch the network configuration, say).
    """
    if os.environ.get("DISTLIB_MINICLUSTER", "1") == "0":
        return "mini clusters are turned off here (DISTLIB_MINICLUSTER=0)"
    if not sys.platform.startswith("linux"):
        return f"a mini cluster needs Linux network namespaces; this is {sys.platform}"
    if os.geteuid() != 0:
        return ("a mini cluster needs root (CAP_NET_ADMIN to make network namespaces and links, "
                "CAP_SYS_ADMIN for the nodes' hostnames); this process runs as uid " f"{os.geteuid()}")  # fmt: skip
    missing = _missing_capabilities()
    if missing:
        return (f"a mini cluster needs {' and '.join(missing)}, which this root process lacks (a container's root, "
                "as in Colab, has no CAP_NET_ADMIN)")  # fmt: skip
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists() and not Path(f"/sbin/{tool}").exists():
            return f"a mini cluster needs the `{tool}` command (Debian/Ubuntu: apt-get install iproute2)"
    return None


#: The capabilities a mini cluster needs (capabilities(7) numbers): links and addresses, then namespaces.
_CAPABILITIES = {"CAP_NET_ADMIN": 12, "CAP_SYS_ADMIN": 21}


def _missing_capabilities(status: str | None = None) -> list:
    """The capabilities of :data:`_CAPABILITIES` absent from this process's effective set (``CapEff`` of
    ``/proc/self/status``, or of ``status``); ``[]`` where it cannot be read.

    >>> _missing_capabilities("Name:\\tx\\nCapEff:\\t000001ffffffffff\\n")
    []
    >>> _missing_capabilities("CapEff:\\t00000000a80425fb\\n")   # Docker's default set: no NET_ADMIN, SYS_ADMIN
    ['CAP_NET_ADMIN', 'CAP_SYS_ADMIN']
    """
    try:
        text = Path("/proc/self/status").read_text() if status is None else status
        eff = int(next(line.split()[1] for line in text.splitlines() if line.startswith("CapEff:")), 16)
    except (OSError, StopIteration, ValueError, IndexError):
        return []
    return [name for name, bit in _CAPABILITIES.items() if not eff >> bit & 1]


def _tool(name: str) -> str:
    for path in (shutil.which(name), f"/usr/sbin/{name}", f"/sbin/{name}"):
        if path and Path(path).exists():
            return path
    raise MiniClusterUnavailable(f"a mini cluster needs the `{name}` command (Debian/Ubuntu: apt-get install iproute2)")


def leftovers(*, owner: int | None = None) -> list:
    """Names of mini-cluster namespaces present on this machine (of process ``owner`` only, if given)."""
    if not _NETNS_DIR.is_dir():
        return []
    out = []
    for entry in sorted(_NETNS_DIR.iterdir()):
        m = re.match(rf"{_PREFIX}-(\d+)-", entry.name)
        if m and (owner is None or int(m.group(1)) == owner):
            out.append(entry.name)
    return out


def _delete_netns(ip: str, name: str, *, patience: float = 5.0) -> None:
    """Kill what runs in namespace ``name``, wait for it to go, and delete the namespace.

    Processes still inside would keep the namespace (and its links) alive; and
    one that took a mount namespace of its own (Slurm's daemons, see
    :meth:`MiniCluster.enter`) holds a copy of ``/run/netns/<name>``'s mount,
    so the name cannot be removed until that process has exited: hence the
    wait, and the retries of the delete, both bounded by ``patience`` seconds.
    """
    deadline = time.monotonic() + patience
    while True:
        pids = subprocess.run([ip, "netns", "pids", name], capture_output=True, text=True).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError, PermissionError):
                pass
        late = time.monotonic() > deadline
        if not pids or late:  # late: delete anyway (what could not be killed keeps only the namespace itself)
            subprocess.run([ip, "netns", "delete", name], capture_output=True, text=True)
            if late or not (_NETNS_DIR / name).exists():
                break
        time.sleep(0.05)
    shutil.rmtree(_ETC_NETNS / name, ignore_errors=True)


def _sweep_dead_owners(ip: str) -> list:
    """Remove namespaces whose owning process is gone (a run killed by SIGKILL)."""
    removed = []
    for name in leftovers():
        pid = int(name.split("-")[1])
        if not _pid_alive(pid):
            _delete_netns(ip, name)
            removed.append(name)
    return removed


class MiniCluster:
    """``nodes`` simulated nodes joined by links of ``link_gbit`` Gbit/s per direction.

    Use :func:`mini_cluster` (a context manager); ``MiniCluster(...)`` with
    an explicit :meth:`close` works too.

    Parameters
    ----------
    nodes : int
        Number of nodes, 1 to 64.
    link_gbit : float or None
        Each node's link rate, Gbit/s (1e9 bit/s) in each direction, 0.01 to
        100; ``None`` leaves the links unthrottled (as fast as the kernel
        copies, about 1 GB/s measured here).
    head : bool
        Also make a head node (``"head"``, the login node of a real cluster):
        on the switch by an unthrottled link, holding no rank itself; the
        place where a Slurm controller runs and where commands are typed.

    Attributes
    ----------
    nodes : list of Node
        The compute nodes (the head is not one of them).
    head : Node or None
    link_gbit : float or None
    name : str
        The prefix of every namespace it made.
    """

    def __init__(self, nodes: int = 2, *, link_gbit: float | None = 2.0, head: bool = False, slurm: bool = False,
                 cpus_per_node: int = 2):
        self.n_nodes = check_int("nodes", nodes, minimum=1, maximum=limits.MAX_NODES)
        self.link_gbit = None if link_gbit is None else check_real("link_gbit", link_gbit, minimum=limits.LINK_GBIT[0],
                                                                   maximum=limits.LINK_GBIT[1])
        reason = minicluster_support()
        if reason:
            raise MiniClusterUnavailable(reason)
        self._ip, self._tc = _tool("ip"), _tool("tc")
        _sweep_dead_owners(self._ip)
        self.name = f"{_PREFIX}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.switch = f"{self.name}-sw"
        self.nodes = [
            Node(i, f"node{i}", f"{self.name}-n{i}", f"{_SUBNET}.{i + 1}", "eth0", f"p{i}") for i in range(self.n_nodes)
        ]
        slurm = check_bool("slurm", slurm)
        cpus_per_node = check_int("cpus_per_node", cpus_per_node, minimum=1, maximum=64)
        if slurm:
            from .slurm import slurm_support

            reason = slurm_support()
            if reason:
                raise MiniClusterUnavailable(reason)
        with_head = check_bool("head", head) or slurm
        self.head = Node(-1, "head", f"{self.name}-h", f"{_SUBNET}.254", "eth0", "ph") if with_head else None
        self.slurm = None
        self.workdir = Path(tempfile.mkdtemp(prefix=f"{self.name}-"))
        self._made: list = []
        self._closed = False
        self._lock = threading.Lock()
        self._traffic: dict = {}  # port -> [(time, packets from the node, packets to it)], for health()
        from ..engines._processes import _Reaper

        # If this process dies without close() (a SIGKILL), a reaper outside it removes the namespaces.
        self._reaper = _Reaper(self.name, self.workdir, netns=[self.switch, *(n.netns for n in self._all_nodes())],
                               etc_netns=_ETC_NETNS)  # fmt: skip
        try:
            self._build()
            if slurm:
                from .slurm import Slurm, SlurmUnavailable

                try:
                    self.slurm = Slurm(self, cpus_per_node=cpus_per_node)
                except SlurmUnavailable as exc:
                    raise MiniClusterUnavailable(str(exc)) from None
        except BaseException:
            self.close()
            raise

    # -- building and removing ----------------------------------------------
    def _sh(self, *argv, check: bool = True) -> str:
        out = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
        if check and out.returncode != 0:
            raise MiniClusterUnavailable(
                f"making the mini cluster failed at `{' '.join(argv)}`: {out.stderr.strip() or out.stdout.strip()} "
                "(a container without CAP_NET_ADMIN/CAP_SYS_ADMIN, or a kernel without veth/bridge support?)"
            )
        return out.stdout

    def _add_netns(self, name: str) -> None:
        self._sh(self._ip, "netns", "add", name)
        self._made.append(name)
        self._sh(self._ip, "-n", name, "link", "set", "lo", "up")

    def _tbf(self, netns: str, dev: str) -> None:
        if self.link_gbit is None:
            return
        rate = self.link_gbit * 1e9  # bit/s
        # The bucket holds 2 ms of traffic (at least 64 KiB, one GSO packet), so
        # bursts stay short against the rate; packets wait up to 50 ms in the queue.
        burst = max(65536, int(rate / 8 * 0.002))
        self._sh(self._tc, "-n", netns, "qdisc", "replace", "dev", dev, "root", "tbf",
                 "rate", f"{int(rate)}bit", "burst", str(burst), "latency", "50ms")  # fmt: skip

    def _build(self) -> None:
        ip = self._ip
        self._add_netns(self.switch)
        self._sh(ip, "-n", self.switch, "link", "add", "br0", "type", "bridge")
        self._sh(ip, "-n", self.switch, "link", "set", "br0", "up")
        hosts = "127.0.0.1 localhost\n" + "".join(f"{n.address} {n.hostname}\n" for n in self._all_nodes())
        for node in self._all_nodes():
            self._add_netns(node.netns)
            # `ip netns exec` shows /etc/netns/<name>/hosts as /etc/hosts: the nodes know each other by name.
            etc = _ETC_NETNS / node.netns
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(hosts)
            (etc / "hostname").write_text(node.hostname + "\n")
            self._sh(ip, "-n", self.switch, "link", "add", node.port, "type", "veth",
                     "peer", "name", node.iface, "netns", node.netns)  # fmt: skip
            self._sh(ip, "-n", self.switch, "link", "set", node.port, "master", "br0", "up")
            self._sh(ip, "-n", node.netns, "addr", "add", f"{node.address}/24", "dev", node.iface)
            self._sh(ip, "-n", node.netns, "link", "set", node.iface, "up")
            if node is not self.head:  # the head's link is not the one being studied: never throttled
                self._tbf(node.netns, node.iface)  # what the node sends
                self._tbf(self.switch, node.port)  # what it receives

    def _all_nodes(self) -> list:
        return [*self.nodes, *([self.head] if self.head else [])]

    def close(self) -> None:
        """Stop every process left on the nodes and remove the namespaces, links and files (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self.slurm is not None:
            try:
                self.slurm.stop()
            finally:  # the namespaces go whatever happened: what still runs in them is killed with them
                self.slurm = None
        for name in reversed(self._made):
            _delete_netns(self._ip, name)
        shutil.rmtree(self.workdir, ignore_errors=True)
        self._reaper.done()

    def __enter__(self) -> "MiniCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        rate = "unthrottled" if self.link_gbit is None else f"{self.link_gbit:g} Gbit/s per direction"
        return f"<MiniCluster {self.name}: {self.n_nodes} nodes, links {rate}>"

    # -- using it -------------------------------------------------------------
    def node(self, which) -> Node:
        """A node by index, hostname (``"head"`` too, if there is one) or :class:`Node`."""
        if isinstance(which, Node):
            return which
        if isinstance(which, str):
            for node in self._all_nodes():
                if node.hostname == which:
                    return node
            raise ValueError(f"node must be one of {[n.hostname for n in self._all_nodes()]}, got {which!r}")
        return self.nodes[check_int("node", which, minimum=0, maximum=self.n_nodes - 1)]

    def prefix(self, which) -> list:
        """The argv prefix that runs a command on a node (its network namespace and hostname)."""
        node = self.node(which)
        return [self._ip, "netns", "exec", node.netns, sys.executable, str(_NODE_EXEC), node.hostname]

    def enter(self, which) -> list:
        """Like :meth:`prefix`, but the machine's ``/sys`` stays (``slurmd`` needs ``/sys/fs/cgroup``).

        The command joins the node's network namespace directly and sees the
        cluster's host names in ``/etc/hosts`` (a private bind mount), as
        ``ip netns exec`` would show them.
        """
        node = self.node(which)
        return [sys.executable, str(_NODE_EXEC), "--netns", str(_NETNS_DIR / node.netns),
                "--hosts", str(_ETC_NETNS / node.netns / "hosts"), node.hostname]  # fmt: skip

    def run(self, which, argv, *, timeout: float = 30.0, env=None) -> subprocess.CompletedProcess:
        """Run ``argv`` on a node and wait for it (output captured as text)."""
        return subprocess.run([*self.prefix(which), *argv], capture_output=True, text=True, timeout=timeout,
                              env=None if env is None else {**os.environ, **env})  # fmt: skip

    def login_command(self, argv, env=None) -> tuple[list, dict]:
        """``(argv, environment)`` that run ``argv`` on the head node, as typed at a real cluster's login node.

        With Slurm up, the command finds it (``SLURM_CONF``) and MPICH sends
        between nodes over TCP (``UCX_TLS=tcp,self``); ``env`` is added on top.
        Needs ``head=True`` (or ``slurm=True``).
        """
        if self.head is None:
            raise ValueError("this mini cluster has no head node: make it with head=True (or slurm=True)")
        extra = {**(self.slurm.env if self.slurm is not None else {}), **(env or {})}
        return [*self.enter(self.head), *argv], {**os.environ, **extra}

    def login(self, argv, *, timeout: float | None = 60.0, check: bool = False,
              env=None) -> subprocess.CompletedProcess:
        """Run ``argv`` on the head node (:meth:`login_command`) and wait for it, its output captured as text."""
        command, full_env = self.login_command(argv, env)
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=check, env=full_env,
                              stdin=subprocess.DEVNULL)  # fmt: skip

    @property
    def jobs(self) -> Path:
        """The folder :meth:`shell_line` commands run in (batch scripts, ``slurm-N.out``); removed with the cluster."""
        from .login import jobs_folder

        return jobs_folder(self.workdir)

    def shell_line(self, command: str, *, timeout: float = 120.0, env=None):
        """Type ``command`` at the head node as in a terminal (:mod:`distlib.minicluster.login`).

        Returns a :class:`~distlib.minicluster.login.ShellLine` whose ``str``
        is the command after ``$ `` and its merged output; a command past
        ``timeout`` seconds is stopped (its Slurm jobs cancelled first).
        """
        from .login import run_shell_line

        return run_shell_line(self, command, timeout=timeout, env=env)

    def link_bytes(self, which) -> LinkBytes:
        """Bytes sent and received over a node's link so far (tc's ``tbf`` counters, so headers included)."""
        node = self.node(which)
        sent = self._qdisc_bytes(node.netns, node.iface)
        received = self._qdisc_bytes(self.switch, node.port)
        return LinkBytes(sent, received)

    def _qdisc_bytes(self, netns: str, dev: str) -> int:
        if self.link_gbit is not None:  # the tbf qdisc's own counter
            out = self._sh(self._tc, "-n", netns, "-s", "qdisc", "show", "dev", dev, "root", check=False)
            m = re.search(r"Sent (\d+) bytes", out)
            if m:
                return int(m.group(1))
        out = self._sh(self._ip, "-n", netns, "-s", "link", "show", dev, check=False)
        m = re.search(r"TX:.*?\n\s*(\d+)", out)
        return int(m.group(1)) if m else 0

    def cut(self, which) -> None:
        """Take a node's link down (the switch's end): the node is cut off from the others."""
        node = self.node(which)
        self._sh(self._ip, "-n", self.switch, "link", "set", node.port, "down")

    def health(self):
        """``None`` while every node is reachable, else a :class:`~distlib.engines.progress.Stall` naming the node
        that is not (``kind="node"``)."""
        from ..engines.progress import Stall

        if self._closed:
            return Stall("node", "the mini cluster has been removed")
        ports = self._switch_ports()
        for node in self.nodes:
            if not (_NETNS_DIR / node.netns).exists():
                return Stall("node", f"node {node.hostname} is gone (its network namespace {node.netns} was removed)",
                             node=node.hostname)  # fmt: skip
            state = ports.get(node.port, ("", 0, 0))[0]
            if not state or "state DOWN" in state or ",UP" not in state.replace("<UP", ",UP"):
                return Stall("node", f"node {node.hostname}'s link is down: it is cut off from the other nodes",
                             node=node.hostname)  # fmt: skip
            if " master " not in state:
                return Stall("node", f"node {node.hostname}'s link is up but joined to no switch: nothing it sends "
                             "reaches the other nodes", node=node.hostname)  # fmt: skip
        return self._traffic_check(ports)

    # How long a node may send with nothing coming back before its link counts as dead.
    TRAFFIC_WINDOW = 4.0
    TRAFFIC_PACKETS = 4

    def _switch_ports(self) -> dict:
        """``{port: (its line of `ip -o link`, packets from the node, packets to the node)}``, one ``ip`` call."""
        out = self._sh(self._ip, "-n", self.switch, "-s", "-o", "link", "show", check=False)
        ports = {}
        for line in out.splitlines():
            m = re.match(r"\d+: ([^:@\s]+)", line)
            rx = re.search(r"RX:[^\\]*\\\s+\d+\s+(\d+)", line)
            tx = re.search(r"TX:[^\\]*\\\s+\d+\s+(\d+)", line)
            if m:
                ports[m.group(1)] = (line, int(rx.group(1)) if rx else 0, int(tx.group(1)) if tx else 0)
        return ports

    def _traffic_check(self, ports: dict):
        """A link that is up but carries nothing *to* its node: by the switch port's packet counters.

        Over the last :attr:`TRAFFIC_WINDOW` seconds the node sent
        :attr:`TRAFFIC_PACKETS` or more packets (TCP retransmits, ARP requests)
        and got none back: in a cluster of two or more nodes that never
        happens on a working link (every peer answers, and the switch floods
        every multicast to every port).
        """
        from ..engines.progress import Stall

        if self.n_nodes < 2:
            return None
        now = time.monotonic()
        history = self._traffic
        for node in self.nodes:
            if node.port not in ports:
                continue
            _, sent, got = ports[node.port]
            samples = history.setdefault(node.port, [])
            samples.append((now, sent, got))
            while len(samples) > 2 and now - samples[1][0] >= self.TRAFFIC_WINDOW:
                samples.pop(0)
            t0, sent0, got0 = samples[0]
            if now - t0 >= self.TRAFFIC_WINDOW and sent - sent0 >= self.TRAFFIC_PACKETS and got == got0:
                return Stall("node", f"node {node.hostname}'s link is up but dead: in {now - t0:.1f} s it sent "
                             f"{sent - sent0} packets and received none", node=node.hostname)  # fmt: skip
        return None

    def node_of_pid(self, pid: int) -> str | None:
        """The hostname of the node a process runs on (by its network namespace), or ``None``."""
        try:
            mine = os.stat(f"/proc/{pid}/ns/net").st_ino
        except OSError:
            return None
        for node in self.nodes:
            try:
                if os.stat(_NETNS_DIR / node.netns).st_ino == mine:
                    return node.hostname
            except OSError:
                continue
        return None

    def hostfile(self, ranks_per_node: int) -> Path:
        """A Hydra host file: one ``hostname:ranks_per_node`` line per node."""
        ranks_per_node = check_int("ranks_per_node", ranks_per_node, minimum=1)
        path = self.workdir / "hosts"
        path.write_text("".join(f"{n.hostname}:{ranks_per_node}\n" for n in self.nodes))
        return path

    def launcher_exec(self) -> Path:
        """An ``ssh`` stand-in for Hydra (``mpiexec -launcher ssh -launcher-exec <this>``).

        Hydra calls it as ``<this> [ssh options] HOST COMMAND...``; it runs
        ``sh -c COMMAND`` on that node, as ``ssh`` would on a remote machine.
        """
        path = self.workdir / "node-ssh"
        table = {n.hostname: self.prefix(n) for n in self.nodes}
        table.update({n.address: self.prefix(n) for n in self.nodes})
        path.write_text(
            f"#!{sys.executable}\n"
            '"""ssh stand-in for Hydra: run the command on a simulated node of a distlib mini cluster."""\n'
            "import os, sys\n"
            f"NODES = {table!r}\n"
            "args = sys.argv[1:]\n"
            "while args and args[0].startswith('-'):\n"
            "    args = args[2:] if args[0] in ('-p', '-l', '-o', '-i') else args[1:]\n"
            "if not args or args[0] not in NODES:\n"
            "    sys.exit(f'node-ssh: unknown host {args[:1]}; known: {sorted(NODES)}')\n"
            "prefix = NODES[args[0]]\n"
            "os.execv(prefix[0], prefix + ['/bin/sh', '-c', ' '.join(args[1:])])\n"
        )
        path.chmod(0o755)
        return path


@contextmanager
def mini_cluster(nodes: int = 2, *, link_gbit: float | None = 2.0, head: bool = False, slurm: bool = False,
                 cpus_per_node: int = 2):
    """Make a :class:`MiniCluster`, yield it, and remove it however the block ends.

    SIGTERM, while the cluster is up in the main thread, raises
    ``SystemExit`` so the removal still runs (the previous handler comes back
    afterwards).

    Raises
    ------
    MiniClusterUnavailable
        Where the machine does not allow it (the message says why).
    ValueError
        ``nodes`` outside 1..64 or ``link_gbit`` outside 0.01..100.

    With ``slurm=True`` (which implies ``head=True``) Slurm runs on it
    (:mod:`distlib.minicluster.slurm`): ``cluster.login(["srun", ...])``.
    """
    cluster = MiniCluster(nodes, link_gbit=link_gbit, head=head, slurm=slurm, cpus_per_node=cpus_per_node)
    previous = None
    if threading.current_thread() is threading.main_thread():

        def on_term(signum, frame):
            raise SystemExit(128 + signum)

        previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield cluster
    finally:
        try:
            cluster.close()
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
