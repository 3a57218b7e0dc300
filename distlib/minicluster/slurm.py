"""Slurm on the mini cluster: a controller on the head node, a node daemon on every node, munge between them.

:func:`distlib.minicluster.mini_cluster` with ``slurm=True`` makes this; a
reader does not call it directly::

    from distlib.minicluster import mini_cluster
    with mini_cluster(2, link_gbit=1, slurm=True) as cluster:
        print(cluster.login(["srun", "-N2", "-n4", "hostname"]).stdout)

What it starts, each inside the cluster's namespaces and files, and removes
again (:meth:`Slurm.stop`; the cluster's reaper does it if this process is
killed):

* ``munged`` with a fresh 1 KiB key and its own socket (Slurm's daemons and
  commands sign every message with it, as on a real cluster);
* ``slurmctld`` on the head (``SlurmctldHost=head``);
* ``slurmd`` on every node, entered with ``setns`` rather than ``ip netns
  exec`` (which hides ``/sys/fs/cgroup``, and slurmd stops on that);
* a ``slurm.conf`` written for this cluster: the nodes ``node0``,
  ``node1``, ... with ``cpus_per_node`` CPUs each (2 by default, so ``srun -N2
  -n4`` puts two tasks on each node however many cores the machine has), one
  partition ``mini``, process tracking by ``/proc`` and no task binding (no
  cgroups needed), PMI-2 as the MPI plugin the ``mpich`` wheel speaks.

Commands typed at the login node (:meth:`MiniCluster.login`) get
``SLURM_CONF`` pointing at that file, and :data:`MPI_OVER_SLURM`:
``UCX_TLS=tcp,self`` so that MPICH sends bytes between nodes over the
network, not through shared memory (which the simulated nodes, on one
machine, would otherwise share), and three settings that keep the address
exchange at ``MPI_Init`` short enough for Slurm's PMI-2 server.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

from ..engines._processes import _kill_group

__all__ = ["CRED_EXPIRE", "MESSAGE_TIMEOUT", "MPI_OVER_SLURM", "PARTITION", "Slurm", "SlurmUnavailable",
           "slurm_support"]

PARTITION = "mini"
"""The one partition, holding every node (the default for ``srun`` and ``sbatch``)."""

MPI_OVER_SLURM = {
    # TCP between the simulated nodes, not the shared memory they (on one machine) could use
    "UCX_TLS": "tcp,self",
    # Small addresses through PMI. Slurm 22.05's PMI-2 server garbles the long, segmented values the mpich
    # wheel publishes at MPI_Init now and then (2 of 5 runs here on a busy machine: "mpi/pmi2: invalid
    # client request", then UCX "failed to unpack address"). With one device (eth0: lo is no use between
    # nodes), UCX's compact address format and only one rank per node publishing, 0 of 10 failed.
    "UCX_NET_DEVICES": "eth0",
    "UCX_ADDRESS_VERSION": "v2",
    "MPIR_CVAR_CH4_ROOTS_ONLY_PMI": "1",
}
"""The environment commands typed at the login node get for MPI: what each setting is for, beside it."""

CRED_EXPIRE = 10
"""Seconds a job credential lives (``AuthInfo=cred_expire``; Slurm's default is 120): also how long a requeued
job waits before it may start again, which a job that lost a node does (:mod:`distlib.minicluster.requeue`)."""
MESSAGE_TIMEOUT = 5
"""Seconds a message between Slurm's daemons may take (``MessageTimeout``; Slurm's default is 10): also how long
the controller's ping waits for a node that is gone before it counts it as not responding."""

_PROGRAMS = ("slurmctld", "slurmd", "munged", "srun", "sbatch", "sinfo", "squeue", "scancel")


class SlurmUnavailable(RuntimeError):
    """Slurm (or munge) is not installed, or its daemons did not come up; the message says which and why."""


def slurm_support() -> str | None:
    """``None`` if Slurm and munge are installed here, else what is missing and how to install it."""
    missing = [p for p in _PROGRAMS if shutil.which(p) is None and not Path(f"/usr/sbin/{p}").exists()]
    if missing:
        return (f"Slurm is not installed ({', '.join(missing)} not found): as root, apt-get install -y "
                "--no-install-recommends slurm-wlm munge (bash scripts/install_system.sh does it)")
    return None


def _which(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def slurm_conf(cluster, folder: Path, *, cpus_per_node: int, munge_socket: Path) -> str:
    """The ``slurm.conf`` for ``cluster``: its head as controller, its nodes by name and address."""
    nodes = cluster.nodes
    names = ",".join(n.hostname for n in nodes)
    addresses = ",".join(n.address for n in nodes)
    return "\n".join([
        "# Written by distlib.minicluster.slurm for one mini cluster; removed with it.",
        f"ClusterName=mini{os.getpid()}",
        f"SlurmctldHost=head({cluster.head.address})",
        # cred_expire: a job credential's lifetime, 120 s by default; "this also controls how long a requeued
        # job must wait before starting again" (slurm.conf(5)): 10 s lets a requeued job come back in seconds
        "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={munge_socket},cred_expire={CRED_EXPIRE}",
        "SlurmUser=root", "SlurmdUser=root",
        f"StateSaveLocation={folder / 'state'}",
        f"SlurmdSpoolDir={folder / 'spool' / '%n'}",
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}", f"SlurmdPidFile={folder / 'slurmd.%n.pid'}",
        f"SlurmctldLogFile={folder / 'slurmctld.log'}", f"SlurmdLogFile={folder / 'slurmd.%n.log'}",
        "SlurmctldPort=6817", "SlurmdPort=6818",
        "MailProg=/bin/true",
        # no cgroups needed: processes tracked through /proc, tasks not bound to cores
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
        "MpiDefault=none",
        # the backfill scheduler looks at pending jobs every 2 s, not 30: a requeued job starts once its begin time
        # is past, without waiting up to half a minute more for the next look ("bf_interval", slurm.conf(5))
        "ReturnToService=2", "SchedulerType=sched/backfill", "SchedulerParameters=bf_interval=2",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
        # the nodes say they have cpus_per_node CPUs whatever this machine has
        "SlurmdParameters=config_overrides",
        # a job past its --time is ended at once, and the controller notices a dead node in seconds
        "KillWait=2", "OverTimeLimit=0", "SlurmdTimeout=10", "InactiveLimit=0", "MinJobAge=30",
        # a ping to a node that is gone fails after 5 s, not 10: the node is set DOWN 15 to 25 s after it went
        # (SlurmdTimeout plus the failed ping), instead of 20 to 30
        f"MessageTimeout={MESSAGE_TIMEOUT}",
        f"NodeName={names} NodeAddr={addresses} CPUs={cpus_per_node} State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes={names} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


class Slurm:
    """Slurm's daemons on a :class:`~distlib.minicluster.MiniCluster` that has a head node.

    Parameters
    ----------
    cluster : MiniCluster
        Made with ``head=True``.
    cpus_per_node : int
        CPUs each node declares (1 to 64): how many tasks Slurm places on it.
    timeout : float
        Seconds the daemons have to come up (every node ``idle``), else
        :class:`SlurmUnavailable` with the log of the daemon that did not.

    Attributes
    ----------
    folder : Path
        Its files: ``slurm.conf``, the munge key, state, spool and logs.
    conf : Path
    seconds_to_start : float
        How long the daemons took to come up.
    cpus_per_node : int
    """

    def __init__(self, cluster, *, cpus_per_node: int = 2, timeout: float = 20.0):
        reason = slurm_support()
        if reason:
            raise SlurmUnavailable(reason)
        if cluster.head is None:
            raise ValueError("Slurm needs a head node for its controller: make the cluster with head=True")
        self.cluster = cluster
        self.folder = Path(cluster.workdir) / "slurm"
        self.conf = self.folder / "slurm.conf"
        self._daemons: dict[str, subprocess.Popen] = {}
        self.seconds_to_start = 0.0
        self.cpus_per_node = cpus_per_node
        try:
            self._start(cpus_per_node, timeout)
        except BaseException:  # a daemon that did not come up: the others go too, now
            self.stop()
            raise

    # -- starting ---------------------------------------------------------------
    def _start(self, cpus_per_node: int, timeout: float) -> None:
        t0 = time.monotonic()
        folder, cluster = self.folder, self.cluster
        for sub in ("state", "munge", *(f"spool/{n.hostname}" for n in cluster.nodes)):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(folder / "munge", 0o755)  # munged refuses a socket folder others may write to
        key = folder / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o600)
        socket = folder / "munge" / "munge.socket.2"
        self.conf.write_text(slurm_conf(cluster, folder, cpus_per_node=cpus_per_node, munge_socket=socket))
        head = cluster.enter(cluster.head)
        # munged on the head too: killed with the head's namespace if this process dies (the cluster's reaper)
        self._spawn("munged", head + [_which("munged"), "-F", "-f", f"--key-file={key}", f"--socket={socket}",
                                      f"--pid-file={folder / 'munged.pid'}", f"--log-file={folder / 'munged.log'}",
                                      f"--seed-file={folder / 'munged.seed'}"])  # fmt: skip
        self._wait_for(socket.exists, "munged", timeout, t0)
        self._spawn("slurmctld", head + [_which("slurmctld"), "-D", "-i", "-f", str(self.conf)])
        for node in cluster.nodes:
            self._spawn(f"slurmd on {node.hostname}",
                        cluster.enter(node) + [_which("slurmd"), "-D", "-N", node.hostname, "-f", str(self.conf)])
        self._wait_for(self._all_idle, "the nodes to register", timeout, t0)
        self.seconds_to_start = time.monotonic() - t0

    def _spawn(self, name: str, argv: list) -> None:
        log = open(self.folder / f"{name.replace(' ', '-')}.out", "wb")
        try:
            self._daemons[name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                                   env={**os.environ, "SLURM_CONF": str(self.conf)},
                                                   start_new_session=True)  # fmt: skip
        finally:
            log.close()

    def _wait_for(self, ready, what: str, timeout: float, t0: float) -> None:
        while time.monotonic() - t0 < timeout:
            dead = self.dead()
            if dead:
                raise SlurmUnavailable(f"{dead} stopped while Slurm was starting:\n{self.last_words(dead)}")
            if ready():
                return
            time.sleep(0.1)
        logs = "\n".join(f"--- {name}:\n{self.last_words(name, 6)}" for name in self._daemons)
        raise SlurmUnavailable(f"Slurm did not come up in {timeout:g} s (waiting for {what}); the daemons' "
                               f"last words:\n{logs}")  # fmt: skip

    def _all_idle(self) -> bool:
        out = self.cluster.login(["sinfo", "-h", "-N", "-o", "%N %t"], timeout=10, env=self.env)
        states = dict(line.split() for line in out.stdout.splitlines() if len(line.split()) == 2)
        return len(states) == len(self.cluster.nodes) and all(s == "idle" for s in states.values())

    def last_words(self, name: str, lines: int = 15) -> str:
        """The last lines daemon ``name`` wrote (``"slurmd on node1"``): its log file, then what it printed."""
        log = name.replace("slurmd on ", "slurmd.")  # "slurmd on node1" logs to slurmd.node1.log
        text = ""
        for path in (self.folder / f"{log}.log", self.folder / f"{name.replace(' ', '-')}.out"):
            try:
                text += path.read_text(errors="replace")
            except OSError:
                continue
        return "\n".join(text.strip().splitlines()[-lines:]) or "(nothing logged)"

    # -- watching ---------------------------------------------------------------
    def dead(self) -> str | None:
        """The first daemon that has stopped (``"slurmd on node1"``), or ``None`` while all run."""
        for name, proc in self._daemons.items():
            if proc.poll() is not None:
                return name
        return None

    @property
    def env(self) -> dict:
        """What a command typed at the login node needs: ``SLURM_CONF``, and TCP between nodes for MPICH."""
        return {"SLURM_CONF": str(self.conf), **MPI_OVER_SLURM}

    # -- stopping ---------------------------------------------------------------
    def stop(self) -> None:
        """Cancel every job, stop every daemon (SIGTERM, then SIGKILL after 5 s), remove the files (idempotent)."""
        if not self._daemons:
            return
        if "slurmctld" in self._daemons and self._daemons["slurmctld"].poll() is None:
            self.cluster.login(["scancel", "--quiet", f"--partition={PARTITION}"], timeout=10, env=self.env)
        order = [n for n in self._daemons if n.startswith("slurmd")] + ["slurmctld", "munged"]
        for name in order:
            proc = self._daemons.get(name)
            if proc is not None and proc.poll() is None:
                _kill_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for name in order:
            proc = self._daemons.get(name)
            if proc is None:
                continue
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _kill_group(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
            _kill_group(proc.pid, signal.SIGKILL)  # a slurmstepd left in the daemon's session
        self._daemons = {}
        shutil.rmtree(self.folder, ignore_errors=True)
