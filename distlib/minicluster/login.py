"""Typing at the mini cluster's login node: one shell command line, run as a terminal would show it.

:meth:`distlib.minicluster.MiniCluster.shell_line` is the call::

    with mini_cluster(2, slurm=True) as cluster:
        print(cluster.shell_line("srun -N2 --ntasks-per-node=2 hostname"))

prints ``$ srun ...`` and then what the command printed, its standard output
and standard error merged in the order they were written, as in a terminal.
The command runs under ``bash`` on the head node, in the cluster's jobs
folder (:attr:`MiniCluster.jobs`, where ``sbatch`` writes its ``slurm-N.out``
files and where the chapter writes its batch scripts), with the login
environment of :meth:`MiniCluster.login_command`.

A command that outlives its ``timeout`` is stopped in bounded time: every
Slurm job on the cluster is cancelled first (an ``srun`` waiting for a job
step that cannot start would otherwise hold its tasks), then the command's
process group gets SIGTERM and, 2 s later, SIGKILL. The result says so
(``timed_out``, exit status 124 as from ``timeout(1)``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .._check import check_real
from ..engines._processes import STOP_GRACE, _kill_group

__all__ = ["ShellLine", "run_shell_line"]


@dataclass(frozen=True)
class ShellLine:
    """One command line typed at the login node, and what came of it.

    Attributes
    ----------
    command : str
        The line as typed.
    output : str
        Standard output and standard error, merged as a terminal shows them.
    returncode : int
        The command's exit status (124 if it ran past its timeout, 128 + N
        if signal N ended it).
    seconds : float
        Wall time from start to end.
    timed_out : bool
    """

    command: str
    output: str
    returncode: int
    seconds: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        """The command exited with status 0."""
        return self.returncode == 0

    def __str__(self) -> str:
        text = f"$ {self.command}\n{self.output.rstrip()}"
        if self.timed_out:
            text += f"\n[stopped after {self.seconds:.0f} s: the time allowed for this command]"
        return text.rstrip()


def run_shell_line(cluster, command: str, *, timeout: float = 120.0, env=None) -> ShellLine:
    """Run ``command`` with ``bash`` on ``cluster``'s head node, in its jobs folder; see the module's text.

    Parameters
    ----------
    cluster : MiniCluster
        Made with ``head=True`` or ``slurm=True``.
    command : str
        A bash command line (several lines allowed).
    timeout : float
        Seconds, more than 0 and at most :data:`distlib.limits.MAX_TIMEOUT`.
    env : dict, optional
        Added to the login environment.

    Raises
    ------
    TypeError
        ``command`` not a string.
    ValueError
        ``command`` empty or ``timeout`` out of range.
    """
    from .. import limits

    if not isinstance(command, str):
        raise TypeError(f"command must be a string (a bash command line), got {type(command).__name__}")
    if not command.strip():
        raise ValueError("command must not be empty")
    timeout = check_real("timeout", timeout, minimum=0.0, maximum=limits.MAX_TIMEOUT, strict_min=True)
    jobs = cluster.jobs
    argv, full_env = cluster.login_command(["bash", "-c", f"cd {jobs} || exit 1\nexec 2>&1\n{command}"], env)
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=full_env, start_new_session=True)  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout)
        return ShellLine(command, out.decode(errors="replace"), _status(proc.returncode), time.monotonic() - t0)
    except subprocess.TimeoutExpired:
        _cancel_jobs(cluster)
        out = _stop(proc)
        return ShellLine(command, out, 124, time.monotonic() - t0, timed_out=True)
    except BaseException:
        _cancel_jobs(cluster)
        _stop(proc)
        raise


def _status(code: int) -> int:
    return 128 - code if code < 0 else code


def _cancel_jobs(cluster) -> None:
    if getattr(cluster, "slurm", None) is None:
        return
    from .slurm import PARTITION

    try:
        cluster.login(["scancel", "--quiet", f"--partition={PARTITION}"], timeout=10)
    except (OSError, subprocess.SubprocessError):
        pass  # the process group below goes anyway


def _stop(proc: subprocess.Popen) -> str:
    """SIGTERM the command's group, SIGKILL after STOP_GRACE; what it printed until then."""
    _kill_group(proc.pid, signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=STOP_GRACE)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=10)
    _kill_group(proc.pid, signal.SIGKILL)  # anything of the group still there
    return (out or b"").decode(errors="replace")


def jobs_folder(workdir) -> Path:
    """The cluster's jobs folder (made on first use), inside its work folder: removed with the cluster."""
    path = Path(workdir) / "jobs"
    path.mkdir(exist_ok=True)
    os.chmod(path, 0o755)
    return path
