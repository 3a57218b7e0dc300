"""How long Slurm takes to come up on the mini cluster, beside the cluster alone.

::

    sudo .venv/bin/python benchmarks/bench_slurm.py            # 2 nodes, 5 rounds
    sudo .venv/bin/python benchmarks/bench_slurm.py --nodes 4 --rounds 3

Each round makes a mini cluster with a head node and removes it, then the same
with Slurm (munged, slurmctld on the head, a slurmd per node, every node
``idle`` in ``sinfo``) and a first job (``srun -N<nodes> hostname``). It
prints the median of each, and their ratio, from one run: the absolute
numbers depend on the machine, the ratio says what Slurm adds to a cluster.

Needs root and Slurm (``bash scripts/install_system.sh``); elsewhere it says
why and exits with status 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distlib.minicluster import mini_cluster, minicluster_support  # noqa: E402
from distlib.minicluster_slurm import slurm_support  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    ns = parser.parse_args(argv)
    reason = minicluster_support() or slurm_support()
    if reason:
        print(f"skipped: {reason}")
        return 0
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
