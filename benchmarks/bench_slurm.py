"""How long Slurm takes to come up on the mini cluster, beside the cluster alone.

::

    sudo .venv/bin/python benchmarks/bench_slurm.py            # 2 nodes, 5 rounds
    sudo .venv/bin/python benchmarks/bench_slurm.py --nodes 4 --rounds 3
    sudo .venv/bin/python benchmarks/bench_slurm.py --exercise [--write]

Each round makes a mini cluster with a head node and removes it, then the same
with Slurm (munged, slurmctld on the head, a slurmd per node, every node
``idle`` in ``sinfo``) and a first job (``srun -N<nodes> hostname``). It
prints the median of each, and their ratio, from one run: the absolute
numbers depend on the machine, the ratio says what Slurm adds to a cluster.

``--exercise`` instead types the instructor guide's Slurm exercise at the
login node of a fresh 2-node cluster, step by step as a participant would
(:data:`EXERCISE`), and prints each step's time; ``--write`` stores them in
``book/slurm_exercise_timings.json``, which the guide reads. It also counts
how often ``srun --mpi=pmi2`` starts the training example (chapter 9
explains why it sometimes does not) against ``mpiexec`` in an allocation.

Needs root and Slurm (``bash scripts/install_system.sh``); elsewhere it says
why and exits with status 0.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distlib.minicluster import mini_cluster, minicluster_support  # noqa: E402
from distlib.minicluster.slurm import slurm_support  # noqa: E402


ROOT = Path(__file__).resolve().parents[1]
TRAIN = "python -m mpi4py -m distlib.examples.mpi_train --steps 100"
JOB = (
    "#!/bin/bash\n#SBATCH --job-name=train\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n"
    "#SBATCH --time=00:05:00\n#SBATCH --output=train-%j.out\n"
    f"mpiexec -n $SLURM_NTASKS {TRAIN}\n"
)
#: The guide's exercise: (what the participant does, the command line typed at the login node).
EXERCISE = [
    ("look at the cluster", "sinfo"),
    ("four tasks, default placement", "srun -N2 -n4 hostname | sort | uniq -c"),
    ("two tasks per node", "srun -N2 --ntasks-per-node=2 hostname | sort | uniq -c"),
    ("what each task is told", "srun -N2 --ntasks-per-node=2 -l bash -c 'echo $SLURM_PROCID $SLURM_NODEID "
                               "$SLURM_LOCALID $SLURM_JOB_NODELIST' | sort"),
    ("queue a job past its time", "sbatch --time=1 --job-name=too-long --output=too-long.out --wrap 'sleep 600'"),
    ("write and submit a batch job, wait for it", f"cat > job.sh <<'EOF'\n{JOB}EOF\n"
                                                  "sbatch --wait job.sh && grep -c '^step' train-*.out"),
    ("queue and cancel a job", "j=$(sbatch --parsable --wrap 'sleep 600'); squeue; scancel $j; squeue"),
    ("a failing task under srun -K", "srun -N2 --ntasks-per-node=1 -K bash -c '[ $SLURM_PROCID = 1 ] && exit 7; "
                                     "sleep 600'"),
    ("wait for the time limit", "while squeue -h -n too-long | grep -q .; do sleep 1; done; cat too-long.out"),
]


def exercise(write: bool, tries: int) -> int:
    """Type EXERCISE at a fresh cluster's login node; print (and with ``write`` store) each step's seconds."""
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    t0 = time.perf_counter()
    steps = []
    with mini_cluster(2, link_gbit=1, slurm=True, cpus_per_node=4) as cluster:
        up = time.perf_counter() - t0
        print(f"{'cluster and Slurm up':<44} {up:6.1f} s")
        for what, line in EXERCISE:
            typed = cluster.shell_line(line, timeout=240, env=env)
            ok = typed.ok or "exit 7" in line  # the failing task is meant to fail
            print(f"{what:<44} {typed.seconds:6.1f} s{'' if ok else '  FAILED:'}")
            if not ok:
                print(typed)
                return 1
            steps.append({"step": what, "command": line, "seconds": round(typed.seconds, 1)})
        starts = {"srun --mpi=pmi2": 0, "mpiexec in salloc": 0}
        for _ in range(tries):
            for name, line in (("srun --mpi=pmi2", f"srun -N2 --ntasks-per-node=2 --mpi=pmi2 -K {TRAIN}"),
                               ("mpiexec in salloc", f"salloc -N2 --ntasks-per-node=2 mpiexec -n 4 {TRAIN}")):
                starts[name] += cluster.shell_line(line, timeout=60, env=env).ok
        for name, n in starts.items():
            print(f"training example started by {name:<18} {n} of {tries} times")
    total = up + sum(s["seconds"] for s in steps)
    print(f"{'the whole exercise, typed without pauses':<44} {total:6.1f} s")
    if write:
        out = ROOT / "book" / "slurm_exercise_timings.json"
        out.write_text(json.dumps({
            "machine": f"a {os.cpu_count()}-core {platform.machine()} Linux machine, Python {platform.python_version()}",
            "date": datetime.date.today().isoformat(),
            "how": "benchmarks/bench_slurm.py --exercise --write: each step typed at a fresh cluster's login node",
            "cluster_up_seconds": round(up, 1), "steps": steps,
            "pmi2_starts": {"tries": tries, **starts},
        }, indent=1) + "\n")
        print(f"wrote {out}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--exercise", action="store_true", help="time the instructor guide's Slurm exercise")
    parser.add_argument("--write", action="store_true", help="with --exercise: store book/slurm_exercise_timings.json")
    parser.add_argument("--tries", type=int, default=10, help="with --exercise: starts of each MPI launcher to count")
    ns = parser.parse_args(argv)
    reason = minicluster_support() or slurm_support()
    if reason:
        print(f"skipped: {reason}")
        return 0
    if ns.exercise:
        return exercise(ns.write, ns.tries)
    plain, slurm, first_job, up = [], [], [], []
    for _ in range(ns.rounds):
        t0 = time.perf_counter()
        with mini_cluster(ns.nodes, head=True):
            pass
        plain.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with mini_cluster(ns.nodes, slurm=True) as cluster:
            up.append(cluster.slurm.seconds_to_start)
            t1 = time.perf_counter()
            out = cluster.login(["srun", f"-N{ns.nodes}", "hostname"], timeout=60)
            first_job.append(time.perf_counter() - t1)
            assert out.returncode == 0, out.stderr
        slurm.append(time.perf_counter() - t0)
    med = statistics.median
    print(f"{ns.nodes} nodes, {ns.rounds} rounds, medians:")
    print(f"  cluster made and removed          {med(plain):6.2f} s")
    print(f"  with Slurm, made and removed      {med(slurm):6.2f} s   ({med(slurm) / med(plain):.1f}x the cluster alone)")
    print(f"    of which Slurm coming up        {med(up):6.2f} s")
    print(f"    first job (srun hostname)       {med(first_job):6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
