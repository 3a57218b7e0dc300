"""What a run leaves and how it fails: the result, the errors, the outcome, and what a command says then."""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field

__all__ = [
    "RunResult",
    "RunError",
    "RunTimeout",
    "RunStalled",
    "RunInterrupted",
    "PrivateNetworkUnavailable",
    "Outcome",
    "EXIT_STATUS",
    "exit_status",
    "failure_report",
]


@dataclass
class RunResult:
    """What every rank printed, in rank order.

    Attributes
    ----------
    stdout, stderr : list of str
        Rank ``r``'s standard output and error.
    launcher : str
        What the launcher itself printed (``mpiexec``'s messages).
    returncodes : list of int or None
        Each rank's exit status where known (``None`` for MPI ranks, whose
        status ``mpiexec`` folds into its own).
    returncode : int
        The launcher's exit status (0 on success).
    seconds : float
        Wall-clock time of the whole run.
    command : list of str
        What was started (for one rank, in the torch case).
    run_id : str
        The ``DISTLIB_RUN_ID`` its processes carried.
    pids : dict
        Rank -> process id (torch runs; MPI ranks are ``mpiexec``'s children).
    network : str
        ``"private"`` (an MPI run in its own loopback-only network
        namespace), ``"host"``, or ``"mini cluster"`` (ranks on the nodes of
        a :class:`distlib.minicluster.MiniCluster`).
    nodes : dict
        Rank -> the node it ran on, where its heartbeat said.
    ended : dict
        Rank -> how it failed, as the rank itself wrote before it aborted
        (MPI runs): its traceback, or ``"exit status N"``; the first to fail
        comes first. Empty if none failed.
    """

    stdout: list
    stderr: list
    launcher: str
    returncodes: list
    returncode: int
    seconds: float
    command: list
    run_id: str
    pids: dict = field(default_factory=dict)
    network: str = "host"
    nodes: dict = field(default_factory=dict)
    """Rank -> hostname of the node it ran on (runs with a heartbeat; see :mod:`~distlib.engines.progress`)."""
    ended: dict = field(default_factory=dict)
    """Rank -> how it failed, in its own words (MPI runs), first failure first: a traceback or ``"exit status N"``."""
    gone: list = field(default_factory=list)
    """Ranks whose processes had already exited when the launcher saw the run fail (MPI runs, by their heartbeats):
    who died first, where no rank left a note (a ``SIGKILL``)."""

    @property
    def p(self) -> int:
        return len(self.stdout)

    def lines(self, rank: int) -> list:
        """Rank ``rank``'s output lines."""
        return self.stdout[rank].splitlines()

    def text(self, *, stderr: bool = False) -> str:
        """Every rank's output, rank 0 first, each line prefixed ``[r]``."""
        streams = self.stderr if stderr else self.stdout
        out = []
        for r, text in enumerate(streams):
            out.extend(f"[{r}] {line}" for line in text.splitlines())
        return "\n".join(out)

    def __str__(self) -> str:
        return self.text()


class RunError(RuntimeError):
    """A rank failed (exited with an error, was killed, or raised).

    ``.result`` holds what every rank printed up to then; ``.rank`` the
    failing rank where known.
    """

    def __init__(self, message: str, result: RunResult, rank: int | None = None):
        super().__init__(message)
        self.result = result
        self.rank = rank


class PrivateNetworkUnavailable(RuntimeError):
    """This machine cannot start a run in a loopback-only network namespace (see :func:`run_torchrun`)."""


class RunTimeout(RunError):
    """The run did not finish in time: a deadlock or a hung rank. Everything was killed."""


class RunStalled(RunTimeout):
    """A rank stopped making progress (the watchdog), or a node was cut off; the run was ended early.

    ``.rank`` and ``.node`` name it where known.
    """

    def __init__(self, message: str, result: RunResult, rank: int | None = None, node: str | None = None,
                 kind: str = "stopped"):  # fmt: skip
        super().__init__(message, result, rank)
        self.node = node
        self.kind = kind
        """``"stopped"`` (a rank's process stopped), ``"behind"`` (its peers waited on it) or ``"node"`` (lost)."""


class RunInterrupted(RunError):
    """The launcher was told to stop (SIGTERM, SIGHUP, SIGQUIT); every process of the run was stopped first.

    ``.signal`` is the signal's number. (Ctrl-C stays ``KeyboardInterrupt``, after the same clean-up.)
    """

    def __init__(self, message: str, result: RunResult | None, signum: int):
        super().__init__(message, result)
        self.signal = signum


EXIT_STATUS = {
    "ok": 0,
    "bad input": 2,
    "rank failed": 3,
    "rank stalled": 4,
    "node lost": 5,
    "timed out": 124,
    "interrupted": 130,
}
"""The exit status of the library's commands (``python -m distlib.bench``, ``python -m distlib.run``) by how a
run ended. ``interrupted`` is 128 + the signal's number: 130 for Ctrl-C (SIGINT), 143 for SIGTERM, 129 for
SIGHUP, 131 for SIGQUIT."""


def exit_status(exc: BaseException) -> int:
    """The command-line exit status for how a run ended (:data:`EXIT_STATUS`)."""
    if isinstance(exc, RunInterrupted):
        return 128 + exc.signal
    if isinstance(exc, KeyboardInterrupt):
        return 128 + signal.SIGINT
    if isinstance(exc, RunStalled):
        return EXIT_STATUS["node lost"] if exc.kind == "node" else EXIT_STATUS["rank stalled"]
    if isinstance(exc, RunTimeout):
        return EXIT_STATUS["timed out"]
    if isinstance(exc, RunError):
        return EXIT_STATUS["rank failed"]
    if isinstance(exc, (ValueError, TypeError)):
        return EXIT_STATUS["bad input"]
    return 1


def failure_report(exc: BaseException, prog: str) -> str:
    """What a command prints on stderr when a run failed: the launcher's diagnosis, and the rank's last words.

    The first line names what happened (which rank, which node, doing what);
    what follows is the failed rank's own last lines where the message does
    not hold them already.
    """
    if isinstance(exc, KeyboardInterrupt):
        return f"{prog}: interrupted (Ctrl-C); every process of the run was stopped"
    text = str(exc).strip()
    result = getattr(exc, "result", None)
    rank = getattr(exc, "rank", None)
    if result is not None and rank is not None and 0 <= rank < result.p:
        last = result.ended.get(rank) or result.stderr[rank]
        if last.strip() and _tail(last) not in text:
            text += f"\nrank {rank}'s last words (stderr):\n{_tail(last)}"
    return f"{prog}: {text}"


@dataclass
class Outcome:
    """How a run ended: ``status`` is ``"completed"``, ``"deadlocked"`` or ``"failed"``."""

    status: str
    seconds: float
    result: RunResult
    error: str = ""
    details: dict = field(default_factory=dict)

    def __str__(self) -> str:
        if self.status == "completed":
            return f"completed in {self.seconds:.2f} s"
        if self.status == "deadlocked":
            limit = self.details.get("timeout", self.seconds)
            return f"deadlocked: the ranks did not finish within the {limit:g} s limit; all processes were killed"
        return f"failed: {self.error}"


def _attempt(run, timeout: float) -> Outcome:
    """Call ``run()`` (a launch that raises on failure) and say how it ended: completed, deadlocked or failed."""
    start = time.monotonic()
    try:
        result = run()
    except RunTimeout as exc:
        return Outcome("deadlocked", time.monotonic() - start, exc.result, str(exc), {"timeout": timeout})
    except RunError as exc:
        return Outcome("failed", time.monotonic() - start, exc.result, str(exc), {"rank": exc.rank})
    return Outcome("completed", time.monotonic() - start, result)


def _tail(text: str, n: int = 12) -> str:
    lines = text.strip().splitlines()
    return "\n".join(lines[-n:])
