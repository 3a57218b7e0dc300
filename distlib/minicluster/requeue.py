"""Coming back under Slurm: a batch job loses a node, Slurm requeues it, and it resumes from its checkpoint.

:func:`requeue_after_node_loss` is the whole experiment, on a mini cluster of
its own (:mod:`distlib.minicluster.slurm`)::

    from distlib.minicluster.requeue import requeue_after_node_loss
    job = requeue_after_node_loss(steps=120, take_at=10)
    job.states        # ['PENDING', 'RUNNING', 'COMPLETING', 'PENDING', 'RUNNING', 'COMPLETED']
    job.runs          # where each run of the job ran, and from which step
    job.final.losses  # the resumed run's losses: the uninterrupted run's from its first step on

What happens, as on a real cluster:

1. ``sbatch --requeue`` submits a batch script (:func:`batch_script`) that
   runs the book's trainer under plain ``srun``, one torch.distributed (gloo)
   rank per node, writing a checkpoint every ``checkpoint_every`` steps into a
   folder every node sees (the mini cluster's nodes share one file system, as
   a cluster's nodes share a parallel one). Each task finds its rank in
   ``SLURM_PROCID`` and the world's size in ``SLURM_NTASKS``
   (:func:`distlib.engines.torch_dist.init`), and meets the others at
   ``MASTER_ADDR``, the job's first node, which the script exports: no MPI
   and no PMI between ``srun`` and the ranks;
2. once checkpoint ``take_at`` exists, one node of the job is taken away:
   ``how="stop"`` powers it off (its link goes down and every process on it,
   its ``slurmd`` and the job's rank among them, is killed at once: nothing it
   ran says goodbye), ``how="cut"`` only takes its link down (its processes
   run on, cut off; they are killed, *fenced*, once the job has ended);
3. the rank left on the other node waits in its collective: its time limit
   (``DISTLIB_TIMEOUT``, 120 s) is longer than Slurm takes to notice, so the
   job is requeued for the lost node rather than ended by a rank's error.
   ``slurmctld`` misses the node's answers for ``SlurmdTimeout`` seconds
   (10, plus its ping's own timeout, ``MessageTimeout`` = 5: about 20 s
   here), sets it ``DOWN``, ends the job's run on the other nodes (its log:
   "requeue job JobId=1 due to failure of node node1") and, since the job may
   be requeued, puts it back in the queue (``COMPLETING``, then
   ``PENDING``); a requeued job does not start again before its begin time,
   the job credential's lifetime plus a second later
   (``AuthInfo=cred_expire``, :data:`~distlib.minicluster.slurm.CRED_EXPIRE`
   = 10 s here, 120 s by Slurm's default), and then at the backfill
   scheduler's next look (every 2 s here);
4. the job runs again on the nodes left, its script from the top, with
   ``SLURM_RESTART_COUNT=1``; the trainer's ranks see it and resume from the
   newest complete checkpoint (:func:`distlib.train.rank._after_restart`),
   and the run ends as if it had never been stopped.

About half a minute from the loss to the job running again, here. The states
seen come from polling ``scontrol show job`` (a state that lasts less than
a poll, ``REQUEUED`` say, may be missed); the nodes and the
checkpoint each run started from are what the batch script itself printed;
the final run's numbers are its ranks' typed reports
(:class:`~distlib.train.results.RankReport`, folded into a
:class:`~distlib.train.results.TrainResult`). Every wait is bounded; a
failure raises :class:`RequeueError` with the states seen and slurmctld's
last log lines.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .._check import check_choice, check_int, check_real
from ..layout import Layout
from .cluster import _tool

__all__ = ["HOW", "JobRun", "RequeueResult", "RequeueError", "batch_script", "requeue_support",
           "requeue_after_node_loss"]

HOW = ("stop", "cut")
"""How a node is taken away: powered off (``"stop"``) or cut off from the network (``"cut"``)."""

_ROOT = Path(__file__).resolve().parents[2]
_JOB = "coming-back"
_RANK = "from distlib.train.rank import main; main()"
"""A trainer's rank as ``python -c`` runs it (``python -m distlib.train.rank`` works too, with a warning from
``runpy`` that the package imported the module first)."""
_PORT = 29500
"""torch.distributed's rendezvous port on the job's first node; each run of the job adds its restart count."""
_COLLECTIVE_TIMEOUT = 120
"""Seconds a rank waits in a collective (``DISTLIB_TIMEOUT``): longer than Slurm takes to notice a lost node."""
_RUN_LINE = re.compile(r"^run (\d+) nodes (\S+) checkpoint (\S+)$")


class RequeueError(RuntimeError):
    """The job did not come back as expected; the message says what was seen (states, slurmctld's last words)."""


@dataclass(frozen=True)
class JobRun:
    """One run of the batch job (Slurm starts the script again from the top on each requeue).

    Attributes
    ----------
    restart : int
        ``SLURM_RESTART_COUNT`` of the run: 0 for the first, 1 after one requeue.
    nodes : tuple of str
        The nodes it ran on.
    first_step : int
        The first training step it ran: 1, or the step after the checkpoint it resumed from.
    """

    restart: int
    nodes: tuple
    first_step: int


@dataclass(frozen=True)
class RequeueResult:
    """What :func:`requeue_after_node_loss` saw.

    Attributes
    ----------
    job_id : int
    states : list of str
        The job's states as polled, each change once (``RUNNING``, ``REQUEUED``, ``PENDING``, ...).
    runs : list of JobRun
        Each run of the job, in order.
    taken : str
        The node taken away.
    how : str
        How (``"stop"`` or ``"cut"``).
    checkpoint_at_loss : int
        The newest complete checkpoint's step when the node was taken.
    seconds_to_notice : float
        From taking the node to the first state other than ``RUNNING``.
    seconds_to_requeue : float
        From taking the node to the job running again.
    begin_delay : float
        Of those, the seconds the requeued job waited for its begin time (``scontrol``'s ``BeginTime`` less
        the moment it was seen pending; whole seconds).
    final : TrainResult
        The last run's result, read from its ranks' reports: losses from ``first_step``, the parameters'
        checksum.
    fenced : list of str
        The processes killed on the taken node (their command lines): at once with ``how="stop"``, after the
        job had ended with ``"cut"``. The job's rank there is one of them.
    strays : list of str
        Ranks of the job still alive after it ended and after the fencing (should be empty).
    log : str
        The job's output file (what the batch script and ``srun`` printed).
    cluster : str
        The mini cluster's name (the prefix of its namespaces, folders and every path its jobs saw), to check
        that nothing of it is left.
    controller : list of str
        slurmctld's log lines about the job or the taken node (its own account of the failure and the requeue).
    """

    job_id: int
    states: list
    runs: list
    taken: str
    how: str
    checkpoint_at_loss: int
    seconds_to_notice: float
    seconds_to_requeue: float
    begin_delay: float
    final: object
    fenced: list = field(default_factory=list)
    strays: list = field(default_factory=list)
    log: str = ""
    cluster: str = ""
    controller: list = field(default_factory=list)


def requeue_support() -> str | None:
    """``None`` where :func:`requeue_after_node_loss` can run here, else why not (a sentence): a mini cluster
    (root, Linux), Slurm and munge, and PyTorch for the ranks' gloo engine."""
    import importlib.util

    from . import minicluster_support
    from .slurm import slurm_support

    reason = minicluster_support() or slurm_support()
    if reason is None and importlib.util.find_spec("torch") is None:
        reason = "the job's ranks run on torch.distributed (gloo), and PyTorch is not installed: pip install torch"
    return reason


def batch_script(layout: Layout, *, steps: int, seed: int, checkpoints: Path, checkpoint_every: int, nodes: int,
                 minutes: int = 10, python: str = sys.executable) -> str:
    """The batch script: ``nodes`` nodes, ``layout.ranks / nodes`` ranks on each, requeued after a node failure.

    Each run prints one line, ``run R nodes A,B checkpoint C`` (``C`` the newest checkpoint's folder, or
    ``none``), and its ranks write ``runR-rankT.out`` (the report) and ``.err`` beside the script. ``python``
    is the interpreter the ranks run (this one by default; ``"python"`` for a page to show).

    >>> text = batch_script(Layout(dp=2), steps=5, seed=0, checkpoints=Path("/c"), checkpoint_every=2, nodes=2)
    >>> "#SBATCH --requeue" in text, "--checkpoint-dir /c" in text
    (True, True)
    """
    from ..train.rank import run_argv

    if layout.ranks % nodes:
        raise ValueError(f"the layout's {layout.ranks} ranks must fill the job's {nodes} nodes evenly")
    flags = " ".join(run_argv(layout, steps=steps, seed=seed, engine="gloo", checkpoint_dir=checkpoints,
                              checkpoint_every=checkpoint_every))  # fmt: skip
    return "\n".join([
        "#!/bin/bash",
        f"#SBATCH --job-name={_JOB}",
        f"#SBATCH --nodes={nodes}",
        f"#SBATCH --ntasks-per-node={layout.ranks // nodes}",
        f"#SBATCH --time={minutes}",
        "#SBATCH --requeue",  # may be requeued (after a node failure, here)
        "#SBATCH --open-mode=append",  # a requeued run adds to the output instead of truncating it
        f"#SBATCH --output={_JOB}.out",
        "# A requeued job runs this script again from the top; SLURM_RESTART_COUNT says which run this is,",
        "# and the trainer's ranks, seeing it above 0, resume from the newest complete checkpoint.",
        "run=${SLURM_RESTART_COUNT:-0}",
        f"newest=$(ls -d {checkpoints}/step-* 2>/dev/null | tail -n 1)",
        'echo "run $run nodes $(scontrol show hostnames "$SLURM_JOB_NODELIST" | paste -sd, -) '
        'checkpoint $(basename "${newest:-none}")"',
        "# torch.distributed over gloo: task 0 runs on the job's first node and holds the rendezvous there; every",
        "# task reads its rank and the world's size from SLURM_PROCID and SLURM_NTASKS. No MPI, so no PMI.",
        'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        f"export MASTER_PORT=$(({_PORT} + run))",
        "export GLOO_SOCKET_IFNAME=eth0",  # the node's link (a mini cluster's node has one: eth0)
        "# A rank whose peer's node is gone waits this long in its collective: longer than Slurm takes to notice",
        "# the node, so that Slurm ends the run and requeues the job, not the rank's own error.",
        f"export DISTLIB_TIMEOUT={_COLLECTIVE_TIMEOUT}",
        f"srun --output=run$run-rank%t.out --error=run$run-rank%t.err {python} -c '{_RANK}' {flags}",
        "",
    ])


def requeue_after_node_loss(layout: Layout | None = None, *, steps: int = 120, seed: int = 0,
                            checkpoint_every: int = 5, take_at: int = 10, how: str = "stop", job_nodes: int = 2,
                            nodes: int = 3, link_gbit: float | None = 2.0, timeout: float = 300.0,
                            say=None) -> RequeueResult:  # fmt: skip
    """Run a requeueable training job on a mini cluster with Slurm, take a node of it away, and watch it come back.

    Parameters
    ----------
    layout : Layout, optional
        The trainer's layout (``Layout(dp=2, zero=1)`` by default): its ranks spread evenly over the job's nodes.
    steps, seed : int
        The run's steps and seed.
    checkpoint_every : int
        Steps between checkpoints.
    take_at : int
        The node is taken away once the checkpoint of this step (or a later one) exists; below ``steps``.
    how : {"stop", "cut"}
        Power the node off (every process on it killed, its link down) or only cut its link (its processes are
        killed once the job has ended).
    job_nodes, nodes : int
        Nodes the job asks for, and nodes of the cluster (more: the job needs somewhere to come back to).
    link_gbit : float or None
        Each node's link, Gbit/s per direction (:func:`~distlib.minicluster.mini_cluster`).
    timeout : float
        Seconds for the whole experiment, every wait within it.
    say : callable, optional
        Called with a line at each thing that happens.

    Returns
    -------
    RequeueResult

    Raises
    ------
    MiniClusterUnavailable
        No mini cluster, no Slurm or no PyTorch here (not root, Slurm not installed): :func:`requeue_support`
        says which, without starting anything.
    RequeueError
        The job did not get to a checkpoint, was not requeued, did not run again or did not complete in time;
        the message has the states seen and slurmctld's last lines.
    ValueError
        A parameter out of its range (named).
    """
    from . import MiniClusterUnavailable, mini_cluster

    layout = Layout(dp=2, zero=1) if layout is None else layout
    if not isinstance(layout, Layout):
        raise TypeError(f"layout must be a distlib.layout.Layout, got {type(layout).__name__}")
    steps, seed = check_int("steps", steps, minimum=2), check_int("seed", seed, minimum=0)
    checkpoint_every = check_int("checkpoint_every", checkpoint_every, minimum=1, maximum=steps - 1)
    take_at = check_int("take_at", take_at, minimum=checkpoint_every, maximum=steps - 1)
    how = check_choice("how", how, HOW)
    job_nodes = check_int("job_nodes", job_nodes, minimum=1)
    nodes = check_int("nodes", nodes, minimum=job_nodes + 1)
    timeout = check_real("timeout", timeout, minimum=0.0, strict_min=True)
    say = say or (lambda line: None)
    reason = requeue_support()
    if reason is not None:
        raise MiniClusterUnavailable(reason)
    with mini_cluster(nodes, link_gbit=link_gbit, slurm=True) as cluster:
        say(f"{cluster}: Slurm up in {cluster.slurm.seconds_to_start:.1f} s")
        return _Experiment(cluster, time.monotonic() + timeout, say).run(
            layout, steps=steps, seed=seed, checkpoint_every=checkpoint_every, take_at=take_at, how=how,
            job_nodes=job_nodes)  # fmt: skip


# -- the experiment's steps ------------------------------------------------------------------------------


def _newest_step(folder: Path) -> int:
    from ..train.checkpoint import list_checkpoints

    found = list_checkpoints(folder)
    return found[-1][0] if found else 0


_TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED",
             "GONE"}  # fmt: skip


class _Experiment:
    """One job watched through its life: its states as polled, with the moment each was first seen."""

    def __init__(self, cluster, deadline: float, say):
        self.cluster, self.deadline, self.say = cluster, deadline, say
        self.jobs = cluster.jobs
        self.job_id = None
        self.seen: list = []  # [(monotonic time, state, restarts)], one entry per change
        self.fields: dict = {}
        self.begin = None  # (wall clock when first seen pending again, its BeginTime as a wall clock)

    # -- polling --------------------------------------------------------------
    def poll(self) -> dict:
        """The job's ``scontrol show job`` fields now (``JobState=GONE`` once Slurm has forgotten it)."""
        out = self.cluster.login(["scontrol", "-o", "show", "job", str(self.job_id)], timeout=30)
        if out.returncode != 0:
            fields = {"JobState": "GONE"} if "Invalid job id" in out.stderr else dict(self.fields)
        else:
            fields = dict(re.findall(r"(\w+)=(\S*)", out.stdout))
        state, restarts = fields.get("JobState", "?"), int(fields.get("Restarts", 0) or 0)
        if not self.seen or self.seen[-1][1:] != (state, restarts):
            self.seen.append((time.monotonic(), state, restarts))
            waiting = f", waiting for {fields.get('Reason')} (start {fields.get('StartTime')})"
            self.say(f"job {self.job_id}: {state}" + (f" (run {restarts + 1})" if restarts else "")
                     + (waiting if state == "PENDING" else ""))  # fmt: skip
        if state == "PENDING" and restarts and self.begin is None:  # the requeued job's begin time, as given
            self.begin = (time.time(), _epoch(fields.get("StartTime", "")))  # a pending job's: its begin time
        self.fields = fields
        return fields

    @property
    def states(self) -> list:
        """The states seen, each change once (a state left and entered again appears twice)."""
        out = []
        for _, state, _ in self.seen:
            if not out or out[-1] != state:
                out.append(state)
        return out

    def wait(self, what: str, done, *, every: float = 0.5, check=None) -> None:
        """Poll until ``done(fields)``; ``check(fields)`` may name a state that ends the wait as a failure."""
        while True:
            fields = self.poll()
            if done(fields):
                return
            problem = check(fields) if check else None
            if problem:
                raise self.error(f"{problem} while waiting for {what}")
            if time.monotonic() > self.deadline:
                raise self.error(f"timed out waiting for {what}")
            time.sleep(every)

    def error(self, message: str) -> RequeueError:
        slurm = self.cluster.slurm
        words = slurm.last_words("slurmctld", 12) if slurm is not None else "(Slurm is gone)"
        out = self.jobs / f"{_JOB}.out"
        log = "\n".join(out.read_text(errors="replace").splitlines()[-8:]) if out.exists() else "(no output yet)"
        ranks = "".join(f"\n--- {path.name}:\n" + "\n".join(path.read_text(errors="replace").splitlines()[-12:])
                        for path in sorted(self.jobs.glob("run*-rank*.err")))  # fmt: skip
        return RequeueError(f"job {self.job_id}: {message}; states seen: {' -> '.join(self.states) or 'none'} "
                            f"(last: {_brief(self.fields)})\n--- slurmctld's last lines:\n{words}\n"
                            f"--- the job's output:\n{log}{ranks}")  # fmt: skip

    # -- the experiment -------------------------------------------------------
    def run(self, layout: Layout, *, steps, seed, checkpoint_every, take_at, how, job_nodes) -> RequeueResult:
        cluster, jobs = self.cluster, self.jobs
        checkpoints = jobs / "checkpoints"
        script = jobs / f"{_JOB}.sbatch"
        script.write_text(batch_script(layout, steps=steps, seed=seed, checkpoints=checkpoints,
                                       checkpoint_every=checkpoint_every, nodes=job_nodes))  # fmt: skip
        out = cluster.login(["sbatch", "--parsable", f"--chdir={jobs}", str(script)], timeout=30,
                            env={"PYTHONPATH": str(_ROOT)})  # fmt: skip
        if out.returncode != 0:
            raise RequeueError(f"sbatch refused the job: {out.stderr.strip()}")
        self.job_id = int(out.stdout.strip().split(";")[0])
        self.wait("the job to run", lambda f: f.get("JobState") == "RUNNING", check=_ended)
        victim = self._nodes(self.fields.get("NodeList", ""))[-1]
        at_loss = self._wait_for_checkpoint(checkpoints, take_at)
        taken = time.monotonic()
        fenced = _take_away(cluster, victim, how)
        self.say(f"node {victim} taken away ({'powered off' if how == 'stop' else 'link cut'}) after checkpoint "
                 f"{at_loss}")  # fmt: skip
        self.wait("Slurm to notice the lost node", lambda f: f.get("JobState") != "RUNNING", every=0.25,
                  check=lambda f: f.get("JobState") in _TERMINAL and f"the job ended {f.get('JobState')}")
        noticed = time.monotonic()
        self.wait("the job to run again", lambda f: f.get("JobState") == "RUNNING" and int(f.get("Restarts", 0)) > 0,
                  every=0.25, check=_ended)  # fmt: skip
        back = time.monotonic()
        begin_delay = self._begin_delay()
        self.wait("the job to end", lambda f: f.get("JobState") in _TERMINAL, every=0.5)
        if self.fields.get("JobState") not in ("COMPLETED", "GONE"):
            raise self.error(f"the requeued job ended {self.fields.get('JobState')}")
        if how == "cut":
            fenced = _take_away(cluster, victim, "stop")  # fencing: what the cut node still ran is killed
        strays = _job_ranks(self.job_id, str(cluster.slurm.conf), patience=max(1.0, min(15.0, self._left())))
        return self._result(layout, seed, victim=victim, how=how, at_loss=at_loss, fenced=fenced, strays=strays,
                            noticed=noticed - taken, back=back - taken, begin_delay=begin_delay)  # fmt: skip

    def _left(self) -> float:
        return self.deadline - time.monotonic()

    def _nodes(self, nodelist: str) -> list:
        out = self.cluster.login(["scontrol", "show", "hostnames", nodelist], timeout=30)
        names = out.stdout.split()
        if out.returncode != 0 or not names:
            raise self.error(f"could not read the job's nodes from NodeList={nodelist!r}: {out.stderr.strip()}")
        return names

    def _wait_for_checkpoint(self, checkpoints: Path, take_at: int) -> int:
        """Watch the checkpoint folder closely (the node goes as soon as the step is there); the job now and then."""
        polled = time.monotonic()
        while True:
            step = _newest_step(checkpoints)
            if step >= take_at:
                return step
            now = time.monotonic()
            if now - polled > 1.0:
                polled = now
                problem = _ended(self.poll())
                if problem:
                    raise self.error(f"{problem} before checkpoint {take_at} (newest: {step or 'none'})")
            if now > self.deadline:
                raise self.error(f"timed out waiting for checkpoint {take_at} (newest: {step or 'none'})")
            time.sleep(0.05)

    def _begin_delay(self) -> float:
        """Seconds from the job seen pending again to the ``BeginTime`` Slurm gave it (whole seconds; NaN if the
        pending state was missed)."""
        if self.begin is None or self.begin[1] is None:
            return float("nan")
        return max(0.0, self.begin[1] - self.begin[0])

    def _result(self, layout, seed, *, victim, how, at_loss, fenced, strays, noticed, back,
                begin_delay) -> RequeueResult:  # fmt: skip
        from ..engines.report import parse
        from ..train.results import RankReport, TrainResult

        text = (self.jobs / f"{_JOB}.out").read_text(errors="replace")
        runs = []
        for line in text.splitlines():
            m = _RUN_LINE.match(line.strip())
            if m:
                restart, names, newest = int(m.group(1)), tuple(m.group(2).split(",")), m.group(3)
                runs.append(JobRun(restart, names, 1 if newest == "none" else int(newest.split("-")[1]) + 1))
        if not runs:
            raise self.error("the job's output has no 'run R nodes ... checkpoint ...' line")
        last = runs[-1].restart
        reports = []
        for rank in range(layout.ranks):
            path = self.jobs / f"run{last}-rank{rank}.out"
            body = path.read_text(errors="replace") if path.exists() else ""
            reports.append(parse(body, RankReport, source=f"rank {rank} of run {last + 1}"))
        err = self.jobs / f"run{last}-rank0.err"
        final = TrainResult.from_ranks(reports, layout=layout, seed=seed,
                                       log=err.read_text(errors="replace") if err.exists() else "")  # fmt: skip
        return RequeueResult(job_id=self.job_id, states=self.states, runs=runs, taken=victim, how=how,
                             checkpoint_at_loss=at_loss, seconds_to_notice=noticed, seconds_to_requeue=back,
                             begin_delay=begin_delay, final=final, fenced=fenced, strays=strays, log=text,
                             cluster=self.cluster.name, controller=self._controller_lines(victim))  # fmt: skip

    def _controller_lines(self, node: str) -> list:
        path = self.cluster.slurm.folder / "slurmctld.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        marks = (f"JobId={self.job_id} ", f"JobId={self.job_id}\n", f" {node} ", f" {node}\n", f"={node} ")
        return [line for line in text.splitlines() if any(m in line + "\n" for m in marks)]


def _epoch(text: str) -> float | None:
    """Slurm's local ``2026-01-31T12:00:00`` as seconds since the epoch, or ``None``."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def _ended(fields: dict) -> str | None:
    state = fields.get("JobState")
    return f"the job ended {state}" if state in _TERMINAL else None


def _brief(fields: dict) -> str:
    keys = ("JobState", "Reason", "Restarts", "NodeList", "BeginTime", "ExitCode")
    return " ".join(f"{k}={fields[k]}" for k in keys if k in fields) or "nothing polled"


def _take_away(cluster, node: str, how: str) -> list:
    """Cut ``node``'s link; with ``how="stop"`` also kill every process on it (bounded: 5 s). What was killed."""
    cluster.cut(node)
    if how != "stop":
        return []
    netns = cluster.node(node).netns
    killed, deadline = [], time.monotonic() + 5.0
    while time.monotonic() < deadline:
        pids = subprocess.run([_tool("ip"), "netns", "pids", netns], capture_output=True, text=True).stdout.split()
        if not pids:
            break
        for pid in pids:
            name = _cmdline(pid)
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError, PermissionError):
                continue
            if name and name not in killed:
                killed.append(name)
        time.sleep(0.05)
    return killed


def _cmdline(pid) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:160]
    except OSError:
        return ""


def _job_ranks(job_id: int, conf: str, *, patience: float) -> list:
    """The job's rank processes still alive (``SLURM_JOB_ID`` and this cluster's ``SLURM_CONF`` in their
    environment), after waiting up to ``patience`` seconds for them to go."""
    marks = (f"SLURM_JOB_ID={job_id}".encode(), f"SLURM_CONF={conf}".encode())
    deadline = time.monotonic() + patience
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                env = (entry / "environ").read_bytes().split(b"\0")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z" and all(m in env for m in marks) and "distlib.train.rank" in _cmdline(entry.name):
                found.append(f"{entry.name}: {_cmdline(entry.name)}")
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)
