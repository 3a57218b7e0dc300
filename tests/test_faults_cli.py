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

from conftest import ROOT, needs_cluster

from distlib.engines.launch import EXIT_STATUS, stray_processes

pytestmark = pytest.mark.slow
TMP = Path(os.environ.get("TMPDIR", "/tmp"))
SHM = Path("/dev/shm")
# A stopped rank is named after 4 s without a heartbeat (a stopped process cannot look healthy); a rank its peers
# wait on, after 8 s: a healthy rank starting up on a machine busy with the suite's other workers has taken 4.
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "DISTLIB_STALL": "4", "DISTLIB_BEHIND": "8"}
BENCH = ["allreduce", "--ranks", "3", "-b", "8", "-e", "64K", "-n", "3000", "-w", "1", "--timeout", "120"]


def _mapped() -> set:
    """The /dev/shm files some live process has mapped (read from every /proc/PID/maps)."""
    held = set()
    for maps in Path("/proc").glob("[0-9]*/maps"):
        try:
            held |= {line.split()[-1] for line in maps.read_text().splitlines() if "/dev/shm/" in line}
        except OSError:
            continue
    return held


def unheld_segments(before: set, settle: float = 10.0) -> list:
    """MPICH segments made since ``before`` that no live process holds, and still there ``settle`` seconds on: left
    behind by a run that is over. (Tests run side by side: a segment another run holds now is not this run's
    leftover, nor is one of a run that has just ended, which its own launcher removes a moment later.)"""
    deadline = time.monotonic() + settle
    while True:
        new = {p.name for p in SHM.iterdir() if p.name.startswith("mpich")} - before if SHM.is_dir() else set()
        held = _mapped() if new else set()
        left = sorted(n for n in new if f"/dev/shm/{n}" not in held and (SHM / n).exists())
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


#: How the launcher's output can be taken: pipes a caller reads as they come (a test harness, a CI step),
#: pipes it reads only once the command has ended (a caller that polls), files, and a terminal.
CAPTURES = ("pipes", "unread pipes", "files", "terminal")


class Bench:
    """``python -m distlib.bench`` in a session of its own, its output taken as ``capture`` says."""

    def __init__(self, engine: str, nodes: int | None = None, capture: str = "pipes", folder: Path | None = None,
                 env: dict | None = None):
        self.shm_before = {p.name for p in SHM.iterdir()} if SHM.is_dir() else set()
        where = [] if nodes is None else ["--nodes", str(nodes), "--ranks", str(2 * nodes), "--link-gbit", "1"]
        self.capture, self.err, self.out = capture, [], []
        streams = {"pipes": (subprocess.PIPE,) * 2, "unread pipes": (subprocess.PIPE,) * 2}.get(capture)
        if capture == "files":
            self.files = [open(folder / name, "w+") for name in ("out.txt", "err.txt")]
            streams = tuple(self.files)
        elif capture == "terminal":
            import pty

            self.master, slave = pty.openpty()
            streams = (slave, slave)
        import uuid

        self.tag = uuid.uuid4().hex  # every process of the command inherits it
        self.proc = subprocess.Popen([sys.executable, "-m", "distlib.bench", *BENCH, "--engine", engine, *where],
                                     env={**(env or ENV), "FAULT_TEST_TAG": self.tag}, cwd=ROOT, stdout=streams[0], stderr=streams[1], text=True,
                                     start_new_session=True)  # fmt: skip
        if capture == "terminal":
            os.close(slave)
            threading.Thread(target=self._read_terminal, daemon=True).start()
        elif capture == "pipes":
            for stream, sink in ((self.proc.stderr, self.err), (self.proc.stdout, self.out)):
                threading.Thread(target=lambda s=stream, k=sink: k.extend(iter(s.readline, "")), daemon=True).start()

    def _read_terminal(self):
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # the terminal closed with the command
                return
            if not data:
                return
            self.err.append(data.decode(errors="replace").replace("\r\n", "\n"))

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
        seconds = time.monotonic() - t0
        if self.capture == "unread pipes":  # read only now, as a caller that polls would
            out, err = self.proc.communicate(timeout=30)
            self.out, self.err = [out], [err]
        elif self.capture == "files":
            for f, sink in zip(self.files, (self.out, self.err)):
                f.seek(0)
                sink.append(f.read())
        time.sleep(0.3)  # the reader threads drain the pipes
        return code, "".join(self.err), seconds

    def starting(self, rank: int = 1, timeout: float = 30):
        """Rank ``rank``'s own process as soon as it exists, before its first heartbeat: the deepest process of
        this command whose environment gives that rank (under ``run_mpi`` a guard runs it with the same command
        line and environment)."""
        import psutil

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = {}
            for proc in psutil.process_iter(["pid"]):
                try:
                    env = proc.environ()
                except (psutil.Error, OSError):
                    continue
                if env.get("FAULT_TEST_TAG") == self.tag and env.get("PMI_RANK", env.get("RANK")) == str(rank):
                    found[proc.pid] = proc
            leaves = [p for p in found.values() if not any(c.pid in found for c in p.children())]
            if leaves:
                return leaves[0]
            assert self.proc.poll() is None, "".join(self.err)
            time.sleep(0.05)
        raise AssertionError(f"rank {rank} never started")

    def leftovers(self, run_id: str) -> list:
        left = [f"process {pid}" for pid in stray_processes(run_id)]
        left += [str(p) for p in TMP.glob(f"distlib-*-{self.proc.pid}-*")]
        left += [f"/dev/shm/{n}" for n in unheld_segments(self.shm_before)]
        if Path("/run/netns").is_dir():
            left += [f"namespace {p.name}" for p in Path("/run/netns").glob(f"dlmc-{self.proc.pid}-*")]
        return left

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


@pytest.fixture
def bench(request):
    made = []

    def start(engine, nodes=None, **kwargs):
        made.append(Bench(engine, nodes, **kwargs))
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


@pytest.mark.parametrize("capture", CAPTURES)
@pytest.mark.parametrize("engine", ENGINES)
def test_a_rank_stopped_while_it_starts_is_named_however_the_output_is_taken(bench, engine, capture, tmp_path):
    """A rank stopped before its first heartbeat (issue 40's trial: 3 s after the command starts) is named from
    its process, within the stall limit, and the run ends leaving nothing, whether the launcher's output goes to
    pipes read as it comes or only at the end, to files or to a terminal."""
    b = bench(engine, capture=capture, folder=tmp_path)
    victim = b.starting(rank=1)
    run_id = b.run_id(victim.pid)
    victim.send_signal(signal.SIGSTOP)
    code, err, seconds = b.wait(timeout=60)
    assert code == EXIT_STATUS["rank stalled"], err
    assert seconds < 30, seconds
    assert re.search(r"rank 1 stopped before its first heartbeat: its process \(pid \d+\) has been stopped", err), err
    assert "Traceback" not in err
    assert not _gone(b, run_id), b.leftovers(run_id)


@pytest.mark.parametrize("capture", ["unread pipes", "terminal"])
def test_a_rank_stopped_mid_run_is_named_with_unread_pipes_or_a_terminal(bench, capture, tmp_path):
    b = bench("mpi", capture=capture, folder=tmp_path)
    beat = b.running()
    run_id = b.run_id(beat["pid"])
    os.kill(beat["pid"], signal.SIGSTOP)
    code, err, seconds = b.wait(timeout=60)
    assert code == EXIT_STATUS["rank stalled"] and seconds < 30, (code, seconds, err)
    assert re.search(r"rank 1 on node \S+ stopped making progress", err), err
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
    if signal.getsignal(sig) == signal.SIG_IGN:
        # A shell without job control starts a background command (`cmd &`) with SIGINT ignored, and the
        # launcher it starts inherits that, as a background job should: Ctrl-C is not for it.
        pytest.skip(f"{signal.Signals(sig).name} is ignored in this test process (started in the background)")
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
    # No clean-up code of the launcher ran: its ranks end themselves (their launcher is gone), and the run's
    # reaper, a process outside the run, removes the work folder and MPICH's segments.
    assert not _gone(b, run_id, timeout=15), b.leftovers(run_id)


def test_the_next_run_sweeps_what_a_sigkilled_launcher_left(bench):
    b = bench("mpi")
    b.running()
    os.kill(b.proc.pid, signal.SIGKILL)
    b.proc.wait(timeout=10)
    time.sleep(2)
    subprocess.run([sys.executable, "-m", "distlib.bench", "allreduce", "--engine", "mpi", "--ranks", "2", "-b", "8",
                    "-e", "8", "-n", "1", "-w", "0"], env=ENV, cwd=ROOT, capture_output=True, timeout=120, check=True)
    assert not list(TMP.glob(f"distlib-*-{b.proc.pid}-*"))


# -- python -m distlib.run: any rank program, the examples' faults -----------------------------------------


def distlib_run(*argv, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "distlib.run", *argv], env=ENV, cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def test_distlib_run_shows_the_ranks_prose_and_not_their_report_lines():
    out = distlib_run("--engine", "mpi", "-n", "2", "distlib.examples.mpi_train", "--steps", "5")
    assert out.returncode == 0, out.stderr
    assert "parameters identical on all ranks: True" in out.stdout
    assert "@@distlib-report" not in out.stdout + out.stderr  # for launching code (distlib.engines.report)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_rank_that_raises_is_named_with_its_last_words(engine):
    out = distlib_run("--engine", engine, "-n", "3", "distlib.examples.faulty_rank", "--engine", engine,
                      "--mode", "raise")  # fmt: skip
    assert out.returncode == EXIT_STATUS["rank failed"], out.stderr
    report = out.stderr[out.stderr.index("python -m distlib.run:"):]
    assert re.search(r"rank 1\b", report.splitlines()[0]), report
    assert "rank failed on purpose" in report, report  # the rank's own last words


@pytest.mark.parametrize("engine", ENGINES)
def test_a_rank_stuck_in_python_is_named_as_behind_within_30_s(engine):
    t0 = time.monotonic()
    out = distlib_run("--engine", engine, "-n", "3", "--behind", "4", "distlib.examples.faulty_rank",
                      "--engine", engine, "--mode", "spin")  # fmt: skip
    seconds = time.monotonic() - t0
    assert out.returncode == EXIT_STATUS["rank stalled"], out.stderr
    assert seconds < 30, seconds
    line = next(line for line in out.stderr.splitlines() if line.startswith("python -m distlib.run:"))
    assert re.search(r"rank 1 on node \S+ fell behind: rank\(s\) [02, ]+ waited", line), line
    assert "in no communication call" in line, line


BAD_RUN_FLAGS = [
    (["-n", "0", "distlib.examples.mpi_hello"], "-n/--ranks must be between 1 and"),
    (["-n", "100000", "distlib.examples.mpi_hello"], "-n/--ranks must be between 1 and"),
    (["--timeout", "0", "distlib.examples.mpi_hello"], "--timeout must be more than 0"),
    (["--stall", "1", "distlib.examples.mpi_hello"], "--stall must be between 2 and"),
    (["--behind", "nan", "distlib.examples.mpi_hello"], "--behind must be between 2 and"),
    (["--link-gbit", "1", "distlib.examples.mpi_hello"], "--link-gbit needs --nodes"),
    (["--nodes", "2", "-n", "3", "distlib.examples.mpi_hello"], "must be a positive multiple of --nodes (2), got 3"),
    (["--nodes", "0", "distlib.examples.mpi_hello"], "--nodes must be between 1 and 64, got 0"),
    (["--nodes", "2", "--engine", "nccl", "distlib.examples.mpi_hello"], "NCCL needs GPUs"),
    (["work.py"], "module must be a dotted module name"),
]


@pytest.mark.parametrize("argv, message", BAD_RUN_FLAGS)
def test_distlib_run_refuses_bad_flags_in_one_line_before_starting_anything(argv, message):
    from distlib.run import main

    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 2, err.getvalue()
    assert err.getvalue().count("\n") == 1 and message in err.getvalue(), err.getvalue()


def _needs_cluster():
    from distlib.minicluster import minicluster_support

    return minicluster_support()


@pytest.mark.skipif(_needs_cluster() is not None, reason=f"mini cluster unavailable: {_needs_cluster()}")
@pytest.mark.parametrize("engine", ENGINES)
def test_a_link_cut_while_it_stays_up_is_named_from_the_command_line(engine):
    """Across the mini cluster: node1's switch port taken off the bridge mid-run, its link left up."""
    args = ["--engine", engine, "-n", "4", "--nodes", "2", "--link-gbit", "1", "--timeout", "120",
            "distlib.bench", "allreduce", "--engine", engine, "-b", "8", "-e", "64K", "-n", "3000", "-w", "1",
            "--quiet"]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "distlib.run", *args], env=ENV, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    try:
        switch = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and switch is None:
            names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
            switch = next((n for n in names if n.startswith(f"dlmc-{proc.pid}-") and n.endswith("-sw")), None)
            time.sleep(0.2)
        assert switch, "no mini cluster appeared"
        time.sleep(8)  # the ranks are well into the sweep (the cluster takes about a second to make)
        assert proc.poll() is None, proc.communicate()[1]
        subprocess.run(["ip", "-n", switch, "link", "set", "dev", "p1", "nomaster"], check=True)
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=60)
        assert time.monotonic() - t0 < 30
        assert proc.returncode == EXIT_STATUS["node lost"], err
        line = next(line for line in err.splitlines() if line.startswith("python -m distlib.run:"))
        assert "node node1" in line and "link" in line, line
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert f"dlmc-{proc.pid}-" not in names  # the cluster went with the run
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def test_the_reviewers_table_of_bad_command_lines_has_one_clear_line_each():
    """tools/bad_inputs.py prints the table of bad inputs and their messages; every command line in it exits 2
    with one line on stderr that names a flag."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import bad_inputs
    finally:
        sys.path.remove(str(ROOT / "tools"))
    rows = bad_inputs.cli_rows()
    assert len(rows) >= 30
    for call, message in rows:
        assert message.startswith("exit 2: python -m distlib."), (call, message)
        assert " / " not in message and "Traceback" not in message, (call, message)
        assert re.search(r"(-[a-z]\b|--[a-z-]+|module|argument)", message), (call, message)


# -- the same faults across the mini cluster (two simulated nodes, root only) ------------------------------


@needs_cluster
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fault", ["SIGSTOP rank", "SIGKILL rank", "SIGTERM launcher", "SIGKILL launcher"])
def test_faults_across_the_mini_cluster_are_named_and_leave_nothing(bench, engine, fault):
    b = bench(engine, nodes=2)
    beat = b.running(rank=3)  # on node1
    run_id = b.run_id(beat["pid"])
    sig, victim = fault.split()
    os.kill(beat["pid"] if victim == "rank" else b.proc.pid, getattr(signal, sig))
    if fault == "SIGKILL launcher":
        b.proc.wait(timeout=10)
        assert not _gone(b, run_id, timeout=20), b.leftovers(run_id)  # namespaces included: the reapers
        return
    code, err, seconds = b.wait(timeout=60)
    assert seconds < 30, seconds
    line = next(line for line in err.splitlines() if line.startswith("python -m distlib.bench:"))
    if fault == "SIGSTOP rank":
        assert code == EXIT_STATUS["rank stalled"], err
        assert re.search(r"rank 3 on node node1 stopped making progress", line), line
    elif fault == "SIGKILL rank":
        assert code == EXIT_STATUS["rank failed"], err
        assert re.search(r"rank 3\b.*node1.*signal 9|rank 3 on node node1 .*killed", line), line
    else:
        assert code == 128 + signal.SIGTERM and "SIGTERM" in line, err
    assert not _gone(b, run_id, timeout=20), b.leftovers(run_id)


def test_a_rank_stopped_under_a_notebook_cells_capture_is_named(tmp_path):
    """A chapter's cell runs the bench through ``run_bench`` (its output captured by the library, the cell's by
    the kernel): rank 1 stopped as it starts is named in the cell's error within 30 s, and nothing is left."""
    import nbformat
    from nbclient import NotebookClient

    shm_before = {p.name for p in SHM.iterdir()} if SHM.is_dir() else set()
    cell = '''
import os, signal, threading, time, uuid
import psutil
from distlib.bench import run_bench

tag = uuid.uuid4().hex
os.environ["FAULT_TEST_TAG"] = tag

def stop_rank_1():
    while True:
        for proc in psutil.process_iter(["pid"]):
            try:
                env = proc.environ()
            except psutil.Error:
                continue
            if env.get("FAULT_TEST_TAG") == tag and env.get("PMI_RANK") == "1" and not proc.children():
                proc.send_signal(signal.SIGSTOP)
                return
        time.sleep(0.05)

threading.Thread(target=stop_rank_1, daemon=True).start()
start = time.monotonic()
try:
    run_bench(engine="mpi", ranks=2, min_bytes=8, max_bytes="64K", iters=3000, timeout=120)
    print("NOT STOPPED")
except RuntimeError as exc:
    print(f"after {time.monotonic() - start:.1f} s: {exc}")
deadline = time.monotonic() + 15
def tagged():
    out = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get("FAULT_TEST_TAG") == tag and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc.pid)
        except psutil.Error:
            pass
    return out
while tagged() and time.monotonic() < deadline:
    time.sleep(0.2)
print(f"left behind: {tagged()}")
'''
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    env_before = dict(os.environ)
    os.environ.update({k: v for k, v in ENV.items() if k.startswith("DISTLIB_") or k == "PYTHONPATH"})
    try:
        NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(env_before)
    printed = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    seconds = float(re.search(r"after ([\d.]+) s", printed).group(1))
    assert seconds < 30 and "rank 1 stopped before its first heartbeat" in printed, printed
    assert "left behind: []" in printed, printed
    assert not unheld_segments(shm_before)
