"""Slurm on the mini cluster: real slurmctld, slurmd and munge, real srun and sbatch (as root).

Each test makes its own cluster (Slurm comes up in a second or two here) and
checks that nothing of it is left. Skipped, with the reason, where a mini
cluster cannot be made (not root) or Slurm is not installed
(``bash scripts/install_system.sh`` installs it as root; CI runs as root).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from distlib.minicluster import leftovers, mini_cluster, minicluster_support
from distlib.minicluster.slurm import slurm_support

ROOT = Path(__file__).resolve().parents[1]
REASON = minicluster_support() or slurm_support()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"Slurm on a mini cluster unavailable: {REASON}")
PY = sys.executable
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
DAEMONS = ("slurmctld", "slurmd", "munged", "slurmstepd")


def _daemons_of(folder: str) -> list:
    """Slurm or munge processes still running for the cluster whose files were in ``folder``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if folder in cmd and state != "Z" and any(d in cmd for d in DAEMONS):
            found.append(f"{entry.name}: {cmd[:120]}")
    return found


def _nothing_left(cluster) -> None:
    folder = str(cluster.workdir)
    assert leftovers(owner=os.getpid()) == []
    assert _daemons_of(folder) == []
    assert not Path(folder).exists()  # the key, the spool, the state, the logs


def test_srun_places_two_tasks_on_each_node_and_gives_them_slurms_environment():
    with mini_cluster(2, link_gbit=1, slurm=True) as cluster:
        assert cluster.slurm.seconds_to_start < 20
        out = cluster.login(["sinfo", "-h", "-N", "-o", "%N %P %t %c"], timeout=30)
        assert sorted(out.stdout.split("\n")[:2]) == ["node0 mini* idle 2", "node1 mini* idle 2"], out.stdout
        out = cluster.login(["srun", "-N2", "-n4", "sh", "-c",
                             "echo $(hostname) $SLURM_PROCID $SLURM_NODEID $SLURM_LOCALID $SLURM_JOB_NODELIST"],
                            timeout=60)  # fmt: skip
        assert out.returncode == 0, out.stderr
        rows = sorted(line.split() for line in out.stdout.splitlines())
        assert rows == [["node0", "0", "0", "0", "node[0-1]"], ["node0", "1", "0", "1", "node[0-1]"],
                        ["node1", "2", "1", "0", "node[0-1]"], ["node1", "3", "1", "1", "node[0-1]"]]  # fmt: skip
        assert cluster.login(["hostname"]).stdout.strip() == "head"
    _nothing_left(cluster)


def test_srun_starts_mpi_ranks_through_pmi2_and_their_allreduce_is_exact():
    program = ("from mpi4py import MPI\nimport socket\nc = MPI.COMM_WORLD\n"
               "print(c.rank, c.size, socket.gethostname(), c.allreduce(c.rank + 1))")
    with mini_cluster(2, link_gbit=1, slurm=True) as cluster:
        out = cluster.login(["srun", "-N2", "--ntasks-per-node=2", "--mpi=pmi2", "--time=00:02:00", PY, "-m",
                             "mpi4py", "-c", program], timeout=150)  # fmt: skip
        assert out.returncode == 0, out.stderr[-3000:]
    rows = sorted(line.split() for line in out.stdout.splitlines())
    assert rows == [["0", "4", "node0", "10"], ["1", "4", "node0", "10"], ["2", "4", "node1", "10"],
                    ["3", "4", "node1", "10"]], out.stdout  # fmt: skip
    _nothing_left(cluster)


def test_the_bench_by_mpiexec_in_an_allocation_is_correct_and_the_hierarchy_beats_the_ring():
    # Hydra (the wheel's mpiexec) sees the allocation and starts its proxies with srun, one per node.
    with mini_cluster(2, link_gbit=1, slurm=True) as cluster:
        out = cluster.login(["salloc", "-N2", "--ntasks-per-node=2", "--time=00:04:00", str(Path(PY).parent / "mpiexec"),
                             "-n", "4", PY, "-m", "mpi4py", "-m", "distlib.bench", "allreduce", "--engine", "mpi",
                             "--algorithms", "ring,hierarchical", "-b", "16M", "-e", "16M", "-n", "3", "-w", "1",
                             "--json", "--quiet"], timeout=280, env={"PYTHONPATH": str(ROOT)})  # fmt: skip
        assert out.returncode == 0, out.stderr[-3000:]
        assert cluster.link_bytes(1).received > 16 << 20  # the bytes crossed the throttled link
    data = json.loads(out.stdout)
    assert data["p"] == 4
    transport = data["transport"]
    assert transport.startswith("Slurm job ") and "ranks on 2 nodes (node0, node1)" in transport, transport
    assert "TCP between nodes" in transport, transport
    results = data["rows"][-1]["results"]
    assert all(r["wrong"] == 0 for r in results.values())
    assert results["hierarchical"]["seconds"] < results["ring"]["seconds"], results
    _nothing_left(cluster)


def test_an_sbatch_script_runs_on_both_nodes(tmp_path):
    script = tmp_path / "hello.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --job-name=hello\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n"
                      "#SBATCH --time=00:05:00\n"
                      f"#SBATCH --output={tmp_path}/hello-%j.out\n"
                      "srun hostname\necho job $SLURM_JOB_ID on $SLURM_JOB_NODELIST with $SLURM_NTASKS tasks\n")
    with mini_cluster(2, slurm=True) as cluster:
        out = cluster.login(["sbatch", "--wait", str(script)], timeout=120)
        assert out.returncode == 0, out.stderr
        job = re.search(r"Submitted batch job (\d+)", out.stdout).group(1)
        queue = cluster.login(["squeue", "-h"], timeout=30)
        assert queue.returncode == 0 and queue.stdout.strip() == ""  # done, nothing queued
    text = (tmp_path / f"hello-{job}.out").read_text()
    assert sorted(text.split()[:4]) == ["node0", "node0", "node1", "node1"], text
    assert f"job {job} on node[0-1] with 4 tasks" in text
    _nothing_left(cluster)


def test_ddp_under_srun_and_torchrun_equals_one_node():
    pytest.importorskip("torch")
    from distlib.engines import report, run_torch
    from distlib.examples.torch_ddp import DDPTraining

    one = report.read(run_torch("distlib.examples.torch_ddp:main", 2, args=["--steps", "5"], timeout=120),
                      DDPTraining)  # fmt: skip
    with mini_cluster(2, link_gbit=1, slurm=True) as cluster:
        out = cluster.login(["srun", "-N2", "--ntasks-per-node=1", PY, "-m", "torch.distributed.run", "--nnodes=2",
                             "--nproc-per-node=1", "--rdzv-backend=c10d", "--rdzv-endpoint=node0:29500",
                             "--rdzv-id=ddp", "-m", "distlib.examples.torch_ddp", "--steps", "5"],
                            timeout=240, env={"PYTHONPATH": str(ROOT)})  # fmt: skip
        assert out.returncode == 0, out.stderr[-3000:]
    two = report.parse(out.stdout, DDPTraining)
    assert two.p == 2 and len(set(two.hashes_after)) == 1
    assert two.hashes_after == one.hashes_after and two.last_loss == one.last_loss
    _nothing_left(cluster)


def test_a_failing_task_a_failing_rank_and_a_job_past_its_time_limit_end_with_slurms_words():
    """Chapter 9's three failures, typed at the login node as the chapter types them."""
    with mini_cluster(2, slurm=True) as cluster:
        late = cluster.shell_line("sbatch --time=1 --job-name=too-long --output=too-long.out --wrap 'sleep 600'")
        assert late.ok, late
        submitted = time.monotonic()
        # a task that exits 7 under srun -K: Slurm names it and ends the others at once (they would sleep 600 s)
        task = cluster.shell_line("srun -N2 --ntasks-per-node=1 -K bash -c '[ $SLURM_PROCID = 1 ] && exit 7; sleep 600'",
                                  timeout=60)  # fmt: skip
        assert task.returncode != 0 and not task.timed_out, task
        assert "srun: error: node1: task 1: Exited with exit code 7" in task.output, task
        assert task.seconds < 30, task.seconds
        # an MPI rank that raises inside an allocation: mpi4py's runner aborts, MPICH names the rank
        rank = cluster.shell_line(f"salloc -N2 --ntasks-per-node=1 {Path(PY).parent / 'mpiexec'} -n 2 {PY} -m mpi4py -c "
                                  "'from mpi4py import MPI\nif MPI.COMM_WORLD.rank == 1: raise SystemExit(7)\n"
                                  "MPI.COMM_WORLD.Barrier()'", timeout=90, env={"PYTHONPATH": str(ROOT)})  # fmt: skip
        assert rank.returncode != 0 and not rank.timed_out, rank
        assert "MPI_Abort(MPI_COMM_WORLD, 7)" in rank.output and "rank 1" in rank.output, rank
        # the batch job past its one-minute limit
        ended = cluster.shell_line("while squeue -h -n too-long | grep -q .; do sleep 1; done; cat too-long.out",
                                   timeout=200)  # fmt: skip
        assert ended.ok and "DUE TO TIME LIMIT" in ended.output, ended
        assert time.monotonic() - submitted < 150  # one minute, and the controller's next look
    _nothing_left(cluster)


def test_shell_line_shows_what_a_terminal_shows_and_stops_a_command_past_its_time():
    with mini_cluster(2, slurm=True) as cluster:
        line = cluster.shell_line("echo out; echo err >&2; pwd")
        assert line.ok and line.output.splitlines() == ["out", "err", str(cluster.jobs)], line
        assert str(line).splitlines()[0] == "$ echo out; echo err >&2; pwd"
        t0 = time.monotonic()
        stuck = cluster.shell_line("srun -N1 -n1 sleep 600", timeout=3)
        assert stuck.timed_out and stuck.returncode == 124 and "stopped after" in str(stuck), stuck
        assert time.monotonic() - t0 < 20
        assert cluster.login(["squeue", "-h"], timeout=30).stdout.strip() == ""  # its job was cancelled
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any("sleep" in " ".join(t) for t in _slurm_tasks(os.getpid())):
            time.sleep(0.2)
        assert not any("sleep" in " ".join(t) for t in _slurm_tasks(os.getpid()))
    _nothing_left(cluster)


@pytest.mark.parametrize(("command", "timeout", "error", "words"), [
    ("", 10, ValueError, "command must not be empty"),
    ("true", 0, ValueError, "timeout must be"),
    (["true"], 10, TypeError, "command must be a string"),
])  # fmt: skip
def test_shell_line_refuses_bad_input_before_it_starts_anything(command, timeout, error, words):
    from distlib.minicluster.login import run_shell_line

    with pytest.raises(error, match=words):
        run_shell_line(None, command, timeout=timeout)  # checked before the cluster is touched


# -- the command line --------------------------------------------------------------------------------


def _cli(*argv, timeout=180, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "distlib.minicluster", *argv], capture_output=True, text=True, env=ENV,
                          cwd=ROOT, timeout=timeout, **kw)  # fmt: skip


def test_minicluster_run_slurm_runs_the_command_on_the_head_and_removes_everything():
    proc = subprocess.Popen([PY, "-m", "distlib.minicluster", "run", "--nodes", "2", "--link-gbit", "1", "--slurm",
                             "--", "sh", "-c", "hostname; sinfo -h -o '%D %t'; srun -N2 -n4 hostname | sort | uniq -c "
                             "| tr -s ' '; exit 3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=ENV, cwd=ROOT)  # fmt: skip
    stdout, stderr = proc.communicate(timeout=180)
    out = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert out.returncode == 3, out.stderr  # the command's own status
    lines = out.stdout.split("\n")
    assert lines[0] == "head" and lines[1] == "2 idle", out.stdout
    assert lines[2:4] == [" 2 node0", " 2 node1"], out.stdout
    assert "Slurm up in" in out.stderr and "links 1 Gbit/s per direction" in out.stderr
    # this command's cluster only (its namespaces carry its pid): other tests may run clusters beside it
    assert leftovers(owner=proc.pid) == [] and not _daemons_of(f"dlmc-{proc.pid}-")


def test_minicluster_run_sigterm_stops_the_command_and_removes_the_cluster():
    proc = subprocess.Popen([PY, "-m", "distlib.minicluster", "run", "--nodes", "2", "--slurm", "--",
                             "srun", "-N2", "-n2", "sleep", "600"], env=ENV, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any("sleep 600" in " ".join(p) for p in _slurm_tasks(proc.pid)):
            time.sleep(0.2)
        assert any("sleep 600" in " ".join(p) for p in _slurm_tasks(proc.pid)), (
            proc.stderr.read() if proc.poll() else "")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    ours = [line for line in err.splitlines() if line.startswith("python -m distlib.minicluster:")]
    assert len(ours) == 2 and "stopped by SIGTERM" in ours[-1], err  # what it made, then one line
    assert leftovers(owner=proc.pid) == [] and not _slurm_tasks(proc.pid)
    assert not _daemons_of(f"dlmc-{proc.pid}-")


def _slurm_tasks(owner: int | None = None) -> list:
    """Command lines of processes that a slurmstepd started (the tasks of a job), as lists; with ``owner``, only
    those of the clusters that process made (their ``SLURM_CONF`` lies in a folder named after its pid: other
    tests may run clusters beside this one)."""
    out, mark = [], f"/dlmc-{owner}-".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            pcmd = Path(f"/proc/{parent}/cmdline").read_bytes()
            env = (entry / "environ").read_bytes() if owner is not None else b""
        except OSError:
            continue
        if pcmd.startswith(b"slurmstepd") and (owner is None or mark in env):
            out.append([c.decode(errors="replace") for c in cmd if c])
    return out


def test_a_slurm_daemon_that_dies_ends_the_command_and_is_named():
    proc = subprocess.Popen([PY, "-m", "distlib.minicluster", "run", "--nodes", "2", "--slurm", "--",
                             "sleep", "600"], env=ENV, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        first = proc.stderr.readline()  # what it made: Slurm is up (every node idle)
        assert "Slurm up in" in first, first
        deadline, victim = time.monotonic() + 60, None
        while time.monotonic() < deadline and victim is None:
            for entry in Path("/proc").iterdir():
                try:
                    cmd = (entry / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if cmd[0].endswith(b"slurmd") and b"node1" in cmd and f"dlmc-{proc.pid}-".encode() in b" ".join(cmd):
                    victim = int(entry.name)
            time.sleep(0.2)
        assert victim, "slurmd on node1 never started"
        os.kill(victim, signal.SIGKILL)
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 5, err
    assert "slurmd on node1 stopped" in err, err
    assert took < 10
    assert leftovers(owner=proc.pid) == [] and not _daemons_of(f"dlmc-{proc.pid}-")


@pytest.mark.parametrize("argv, message", [
    (["run", "--nodes", "2"], "run needs a command after --"),
    (["run", "--nodes", "0", "--", "true"], "--nodes must be between 1 and 64, got 0"),
    (["run", "--nodes", "2", "--link-gbit", "1000", "--", "true"], "--link-gbit must be between 0.01 and 100"),
    (["run", "--nodes", "2", "--timeout", "0", "--", "true"], "--timeout must be more than 0"),
    (["run", "--cpus-per-node", "0", "--", "true"], "--cpus-per-node must be between 1 and 64, got 0"),
    (["run", "--nodes", "2", "hostname"], "put -- before the command"),
    (["shell", "--", "ls"], "shell takes no command"),
])
def test_bad_flags_get_one_line_and_start_nothing(argv, message):
    out = _cli(*argv, timeout=30)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and message in out.stderr, out.stderr


def test_as_a_plain_user_a_clear_message_and_nothing_left():
    if not Path("/usr/bin/setpriv").exists():
        pytest.skip("setpriv (util-linux) is needed to drop root")
    proc = subprocess.Popen(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", PY, "-m",
                             "distlib.minicluster", "run", "--nodes", "2", "--slurm", "--", "true"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/", env=ENV)  # fmt: skip
    stdout, stderr = proc.communicate(timeout=60)
    out = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert out.returncode == 2, out.stderr
    assert "cannot make a mini cluster here" in out.stderr and "root" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert leftovers(owner=proc.pid) == []  # it made nothing (setpriv runs the command as itself: the same pid)


def test_minicluster_shell_is_a_login_node_to_type_on():
    typed = "hostname\nsrun -N2 -n2 hostname < /dev/null | sort\nexit 4\n"  # srun would read the rest of stdin
    proc = subprocess.Popen([PY, "-m", "distlib.minicluster", "shell", "--nodes", "2", "--slurm"], env=ENV,
                            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    out, err = proc.communicate(typed, timeout=120)
    assert proc.returncode == 4, err  # the shell's own exit status
    assert out.split() == ["head", "node0", "node1"], out
    assert "type exit (or Ctrl-D) to leave" in err
    assert leftovers(owner=proc.pid) == [] and not _daemons_of(f"dlmc-{proc.pid}-")
