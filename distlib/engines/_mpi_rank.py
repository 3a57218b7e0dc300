"""One MPI rank of :func:`distlib.engines.run_mpi`: the target, plus a note of how it failed.

``run_mpi`` starts every rank as ``python -m mpi4py -m distlib.engines._mpi_rank
<target> [args]``. This runs the target exactly as ``python -m mpi4py`` would
(``mpi4py.run.run_command_line``). If the target ends with an exception or a
non-zero exit status, the rank first writes what happened to
``$DISTLIB_RANK_NOTES/ended.<rank>``, then lets ``mpi4py`` call ``MPI_Abort``
as before.

Why: a rank's stderr reaches ``run_mpi`` through ``mpiexec``'s forwarding,
and ``MPI_Abort`` tears that down. Now and then the failing rank's last
words ("rank 1 in comm 0 ... MPI_Abort") were lost on the way, and the
error could not say which rank failed. A file the rank writes itself,
before it aborts, cannot be lost that way.
"""

from __future__ import annotations

import os
import sys
import time
import traceback

NOTES_VAR = "DISTLIB_RANK_NOTES"


def _note(exc: BaseException) -> str | None:
    """What to record for ``exc``, or None for a clean exit."""
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None or code == 0:
            return None
        return f"exit status {code}" if isinstance(code, int) else f"exit status 1 ({code})"
    tb = exc.__traceback__
    while tb is not None and _ours(tb.tb_frame.f_code.co_filename):  # start at the target's own frames
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb)).rstrip()


def _ours(filename: str) -> bool:
    """A frame of this wrapper, of mpi4py's runner or of runpy, not of the target."""
    return (os.path.abspath(filename) == os.path.abspath(__file__) or "runpy" in filename
            or filename.replace(os.sep, "/").endswith("mpi4py/run.py"))


def _write(folder: str, text: str, when: int | None = None, rank: int | None = None) -> None:
    """Leave the note ``ended.<rank>`` in ``folder``, its modification time ``when`` (ns since the epoch, now).

    The launcher reads the notes oldest first, and names the first rank to
    end. A file system stamps files with a coarse clock (a tick of a few
    milliseconds), so two ranks that end within one tick would tie: the note
    is stamped with the nanosecond clock read when the rank ended instead.
    ``rank`` (else read from the environment) lets the guard write at once,
    before Hydra's clean-up, started by the peers that saw the rank go, kills it.
    """
    when = time.time_ns() if when is None else when
    if rank is None:
        from .progress import _rank_from_env  # the heartbeat's own answer to "which rank am I"

        rank = _rank_from_env()
    if rank is None:
        return
    tmp = os.path.join(folder, f".ended.{rank}.{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(text + "\n")
    os.utime(tmp, ns=(when, when))
    os.replace(tmp, os.path.join(folder, f"ended.{rank}"))  # whole, or not there at all


_FORWARDED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def _guard(child: int, folder: str) -> None:
    """The rank's guard: wait for the rank (``child``), and if a signal killed it, say so in its note.

    A rank killed by ``SIGKILL`` (an out-of-memory kill, ``kill -9``) writes
    nothing, and Hydra then kills the others the same way and names none
    reliably. Its guard, the process Hydra started, sees it die first and
    writes ``killed by signal 9``; the others' guards are killed by Hydra's
    clean-up before they can, so the one note names the rank that died.
    Signals sent to the guard (Hydra's, Ctrl-C's) go on to the rank.
    """
    import signal

    from .progress import _rank_from_env

    rank = _rank_from_env()  # now, not after the rank died: then every millisecond counts

    def forward(sig, _frame):
        try:
            os.kill(child, sig)
        except ProcessLookupError:  # the rank is gone already (killed by the same clean-up): nothing to pass on
            pass

    for name in _FORWARDED:
        sig = getattr(signal, name, None)
        if sig is not None:
            signal.signal(sig, forward)
    while True:
        try:
            _, status = os.waitpid(child, 0)
            ended = time.time_ns()  # before anything else: the note's time says which rank ended first
            break
        except ChildProcessError:  # pragma: no cover - reaped elsewhere
            os._exit(1)
        except InterruptedError:  # pragma: no cover - PEP 475 retries; kept for clarity
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        try:
            _write(folder, f"killed by signal {sig} ({name})", ended, rank)
        except OSError:
            pass
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else os.WEXITSTATUS(status))


def main(argv: list) -> None:
    folder = os.environ.get(NOTES_VAR)
    if folder and hasattr(os, "fork") and os.environ.get("DISTLIB_RANK_GUARD", "1") != "0":
        # Before MPI is loaded (mpi4py's runner loads it only if the target does), so the rank alone holds it.
        child = os.fork()
        if child:
            _guard(child, folder)  # never returns
        from .progress import tie_to_parent

        tie_to_parent()  # the guard killed (by Hydra's clean-up): the rank goes with it
    from mpi4py.run import run_command_line

    try:
        run_command_line(argv)
    except BaseException as exc:
        folder = os.environ.get(NOTES_VAR)
        text = _note(exc)
        if folder and text is not None:
            try:
                _write(folder, text)
            except OSError:
                pass  # the note is a help, never a reason to fail differently
        raise


if __name__ == "__main__":
    main(sys.argv[1:])
