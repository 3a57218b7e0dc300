"""A run, planned and executed: the one path every launcher shares.

A launcher (:mod:`~distlib.engines.launch.mpi`, :mod:`~distlib.engines.launch.torch`) builds a :class:`_Plan`
(what to start, with which environment, for how long, and how to read and judge what it left);
:func:`_execute` starts it, waits with the watchdog and the cluster's health as its checks, stops every process
however the run ends, and raises what the plan's judge says.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .._processes import RUN_ID_VAR, _Leftovers, _Processes, _Reaper, _Signalled, _stop_on_signals
from ..progress import LAUNCHER_VAR, Stall, Watchdog, launcher_tag
from .results import RunError, RunInterrupted, RunResult, RunStalled

__all__ = ["link_words"]


# Environment both engines get unless the caller sets it: one BLAS/OpenMP
# thread per rank (ranks already fill the cores) and unbuffered output.
_QUIET_THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@contextmanager
def _launching(procs, what: str, workdir=None):
    """The frame of every run: signals handled, and on every path all processes stopped and leftovers swept;
    and a reaper outside the run that does the same if this process dies before it can (a ``SIGKILL``)."""
    leftovers = _Leftovers()
    reaper = _Reaper(procs.run_id, workdir, before=leftovers.before)
    try:
        with _stop_on_signals():
            yield
    except _Signalled as exc:
        name = signal.Signals(exc.signum).name
        raise RunInterrupted(f"{what} was interrupted by {name}; every process of the run was stopped.", None,
                             exc.signum) from None  # fmt: skip
    finally:
        procs.stop()
        leftovers.sweep()
        reaper.done()


def _watch(watchdog, cluster):
    """The check run while waiting (a :class:`~distlib.engines.progress.Stall` or ``None``): a stopped rank or
    one its peers wait on first, then a node cut off or gone; ``None`` when there is nothing to watch."""
    checks = [c for c in (watchdog.check if watchdog is not None else None,
                          cluster.health if cluster is not None else None) if c is not None]  # fmt: skip
    if not checks:
        return None

    def check():
        for c in checks:
            found = c()
            if found:
                return found
        return None

    return check


def _stalled(what: str, stall: Stall, result: RunResult) -> RunStalled:
    return RunStalled(f"{what} ended early: {stall}; every process of the run was stopped.", result, stall.rank,
                      stall.node, stall.kind)  # fmt: skip


@dataclass
class _Start:
    """One process a plan starts: its argv and environment; ``merge`` folds stderr into stdout; ``echo``
    copies its output here as it comes."""

    argv: list
    env: dict
    merge: bool = False
    echo: bool = False


@dataclass
class _Ended:
    """How the processes of a run ended, as the one execution loop saw it, for the plan to read its results."""

    procs: _Processes
    failed: int | None
    timed_out: bool
    stalled: Stall | None
    beats: list
    gone: list
    seconds: float


@dataclass
class _Plan:
    """A run, planned: what to start, for how long, what to watch, and how to read and judge what it left.

    The three launchers only build plans (:func:`_mpi_plan`, :func:`_torch_plan`, :func:`_torchrun_plan`);
    :func:`_execute` runs every one of them the same way.
    """

    what: str
    run_id: str
    workdir: Path
    starts: list
    timeout: float
    watchdog: Watchdog | None
    cluster: object | None
    collect: object
    """``collect(ended) -> RunResult``: read the ranks' output, after every process has stopped."""
    judge: object
    """``judge(result, ended) -> RunError | None``: the failure to raise, if the run did not succeed."""


def _execute(plan: _Plan, *, check: bool) -> RunResult:
    """Start a plan's processes, wait, stop them all however the run ends, read and judge the result."""
    procs = _Processes(plan.run_id)
    start = time.monotonic()
    try:
        with _launching(procs, plan.what, plan.workdir):
            for one in plan.starts:
                procs.start(one.argv, one.env, merge=one.merge, echo=one.echo)
            failed, timed_out, stalled = procs.wait(plan.timeout, watch=_watch(plan.watchdog, plan.cluster))
            watchdog = plan.watchdog
            beats = watchdog.beats() if watchdog is not None else []
            # Seen now, before the clean-up stops the rest: the ranks whose processes had already gone.
            gone = [b.rank for b in watchdog.gone()] if watchdog is not None and failed is not None else []
        ended = _Ended(procs, failed, timed_out, stalled, beats, gone, time.monotonic() - start)
        result = plan.collect(ended)
    finally:
        shutil.rmtree(plan.workdir, ignore_errors=True)
    if stalled and stalled.kind == "gone":  # a rank failed; its engine's launcher did not end the run
        result.returncode = result.returncode or 1
        error = RunError(f"{plan.what} failed: {stalled}; every process of the run was stopped.", result,
                         stalled.rank)  # fmt: skip
    elif stalled:
        result.returncode = 124
        error = _stalled(plan.what, stalled, result)
    else:
        error = plan.judge(result, ended)
    if error is not None and check:
        raise error
    return result


def _new_run(kind: str, stall, behind, ranks: int, gone_grace: float | None = None) -> tuple:
    """``(run id, work folder, watchdog or None)`` for a new run of ``ranks`` ranks; the folder's name carries this
    process's pid, so a later run can sweep it if this launcher dies without cleaning up."""
    workdir = Path(tempfile.mkdtemp(prefix=f"distlib-{kind}-{os.getpid()}-"))
    watchdog = (Watchdog(workdir / "progress", stall=stall, behind=behind, ranks=ranks, gone_grace=gone_grace)
                if stall is not None else None)  # fmt: skip
    return uuid.uuid4().hex, workdir, watchdog


def _ranks_per_node(n: int, cluster) -> int:
    if n % cluster.n_nodes:
        raise ValueError(f"n must be a multiple of the cluster's {cluster.n_nodes} nodes (ranks are spread evenly), got {n}")
    return n // cluster.n_nodes


def _base_env(run_id: str, env) -> dict:
    out = dict(os.environ)
    for key, value in _QUIET_THREADS.items():
        out.setdefault(key, value)
    out["PYTHONUNBUFFERED"] = "1"
    out[RUN_ID_VAR] = run_id
    out[LAUNCHER_VAR] = launcher_tag()  # each rank ends itself when this process is gone
    # The ranks import distlib from wherever this process does.
    root = str(Path(__file__).resolve().parents[3])
    out["PYTHONPATH"] = root + (os.pathsep + out["PYTHONPATH"] if out.get("PYTHONPATH") else "")
    if env:
        out.update({str(k): str(v) for k, v in env.items()})
    return out


def link_words(link_gbit) -> str:
    """A mini cluster's links in words, as every starting line says them: throttled or not, and the rate."""
    return "unthrottled links" if link_gbit is None else f"links of {link_gbit:g} Gbit/s per direction"


def _cluster_words(cluster) -> str:
    return f"{cluster.n_nodes} simulated nodes, {link_words(cluster.link_gbit)}"
