"""Faults told to the person at the keyboard: ``python -m distlib.bench`` run from the command line, with a
rank or the launcher itself signalled from outside, as a reader would do by hand.

Each case checks that the command ends in bounded time, names the rank on stderr, exits with the status of
its kind (``distlib.engines.launch.EXIT_STATUS``), and leaves no process of the run, no MPICH segment in
``/dev/shm`` and no work folder behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT

from distlib.engines.launch import EXIT_STATUS, stray_processes

pytestmark = pytest.mark.slow
TMP = Path(os.environ.get("TMPDIR", "/tmp"))
SHM = Path("/dev/shm")
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "DISTLIB_STALL": "4", "DISTLIB_BEHIND": "4"}
BENCH = ["allreduce", "--ranks", "3", "-b", "8", "-e", "64K", "-n", "3000", "-w", "1", "--timeout", "120"]


class Bench:
    """``python -m distlib.bench`` in a session of its own, its stderr collected as it comes."""

    def __init__(self, engine: str):
        self.shm_before = {p.name for p in SHM.iterdir()} if SHM.is_dir() else set()
        self.proc = subprocess.Popen([sys.executable, "-m", "distlib.bench", *BENCH, "--engine", engine], env=ENV,
                                     cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)  # fmt: skip
        self.err: list = []
        self.out: list = []
        for stream, sink in ((self.proc.stderr, self.err), (self.proc.stdout, self.out)):
            threading.Thread(target=lambda s=stream, k=sink: k.extend(iter(s.readline, "")), daemon=True).start()

    def beat(self, rank: int) -> dict | None:
        for path in TMP.glob(f"distlib-*-{self.proc.pid}-*/progress/rank{rank}.json"):
            try:
                return json.loads(path.read_text())
            except (OSError, ValueError):
                return None
        return None

    def running(self, rank: int = 1, calls: int = 50, timeout: float = 90) -> dict:
        """Rank ``rank``'s heartbeat once it is well into the sweep."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            beat = self.beat(rank)
            if beat and beat["comm_call"] >= calls:
                return beat
            assert self.proc.poll() is None, "".join(self.err)
            time.sleep(0.2)
        raise AssertionError(f"rank {rank} never got going: {''.join(self.err)}")

    def run_id(self, pid: int) -> str:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        return next(e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"DISTLIB_RUN_ID="))

    def wait(self, timeout: float = 60) -> tuple:
        t0 = time.monotonic()
        code = self.proc.wait(timeout=timeout)
        time.sleep(0.3)  # the reader threads drain the pipes
        return code, "".join(self.err), time.monotonic() - t0

    def leftovers(self, run_id: str) -> list:
        left = [f"process {pid}" for pid in stray_processes(run_id)]
        left += [str(p) for p in TMP.glob(f"distlib-*-{self.proc.pid}-*")]
        now = {p.name for p in SHM.iterdir()} if SHM.is_dir() else set()
        left += [f"/dev/shm/{n}" for n in now - self.shm_before if n.startswith("mpich")]
        return left

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


@pytest.fixture
def bench(request):
    made = []

    def start(engine):
        made.append(Bench(engine))
        return made[-1]

    yield start
    for b in made:
        b.kill()


def _gone(bench, run_id, timeout=15.0) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = bench.leftovers(run_id)
        if not left:
            return []
        time.sleep(0.2)
    return bench.leftovers(run_id)


ENGINES = ["mpi", "gloo"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_stopped_rank_is_named_on_stderr(bench, engine):
    b = bench(engine)
    beat = b.running()
    run_id = b.run_id(beat["pid"])
    os.kill(beat["pid"], signal.SIGSTOP)
    code, err, seconds = b.wait(timeout=60)
    assert code == EXIT_STATUS["rank stalled"], err
    assert seconds < 30, seconds
    first = err.strip().splitlines()[-1] if "ended early" not in err else next(
        line for line in err.splitlines() if "ended early" in line)
    assert re.search(r"rank 1 on node \S+ stopped making progress", first), err
    assert "SIGSTOP" in first, first
    assert not _gone(b, run_id), b.leftovers(run_id)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_killed_rank_is_named_on_stderr(bench, engine):
    b = bench(engine)
    beat = b.running()
    run_id = b.run_id(beat["pid"])
    os.kill(beat["pid"], signal.SIGKILL)
    code, err, seconds = b.wait(timeout=60)
    assert code == EXIT_STATUS["rank failed"], err
    assert seconds < 30, seconds
    assert re.search(r"rank 1\b.*(killed by signal 9|signal 9)", err), err
    assert not _gone(b, run_id), b.leftovers(run_id)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_signalling_the_launcher_stops_the_run_and_says_so_in_one_line(bench, engine, sig):
    b = bench(engine)
    beat = b.running()
    run_id = b.run_id(beat["pid"])
    os.kill(b.proc.pid, sig)
    code, err, seconds = b.wait(timeout=30)
    assert code == 128 + sig, err
    lines = [line for line in err.splitlines() if line.startswith("python -m distlib.bench:")]
    assert len(lines) == 1, err
    assert "Traceback" not in err, err
    name = "Ctrl-C" if sig == signal.SIGINT else signal.Signals(sig).name
    assert name in lines[0] and "stopped" in lines[0], lines
    assert not _gone(b, run_id), b.leftovers(run_id)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_sigkilled_launcher_takes_its_ranks_with_it(bench, engine):
    b = bench(engine)
    beat = b.running()
    run_id = b.run_id(beat["pid"])
    os.kill(b.proc.pid, signal.SIGKILL)  # no clean-up code of the launcher runs
    b.proc.wait(timeout=10)
    left = _gone(b, run_id, timeout=15)
    # The work folder of a SIGKILLed launcher is swept by the next run (test below); processes must go at once.
    assert not [x for x in left if x.startswith("process")], left


def test_the_next_run_sweeps_what_a_sigkilled_launcher_left(bench):
    b = bench("mpi")
    b.running()
    os.kill(b.proc.pid, signal.SIGKILL)
    b.proc.wait(timeout=10)
    time.sleep(2)
    subprocess.run([sys.executable, "-m", "distlib.bench", "allreduce", "--engine", "mpi", "--ranks", "2", "-b", "8",
                    "-e", "8", "-n", "1", "-w", "0"], env=ENV, cwd=ROOT, capture_output=True, timeout=120, check=True)
    assert not list(TMP.glob(f"distlib-*-{b.proc.pid}-*"))
