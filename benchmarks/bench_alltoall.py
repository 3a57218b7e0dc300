"""The all-to-all across two throttled mini-cluster nodes, measured beside its alpha-beta model (chapter 15).

::

    sudo .venv/bin/python benchmarks/bench_alltoall.py                     # 0.3 Gbit/s, 256 KiB to 4 MiB, ~30 s
    sudo .venv/bin/python benchmarks/bench_alltoall.py --link-gbit 1 --sizes 1M,4M,16M --repeats 3

:func:`distlib.minicluster.alltoall_measure.measure_alltoall` makes a two-node mini cluster whose link ``tc tbf``
throttles, runs ``python -m distlib.bench alltoall`` across it with one rank a node and then two (half of each
rank's foreign blocks stay in its node), and prints per size the model's time (the node-level pairwise exchange at
the link's rate, :func:`distlib.collectives.alltoall_time`) beside the book's pairwise exchange and MPICH's
``MPI_Alltoall``, each the least of the repeats' medians. Needs root; elsewhere it prints why and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distlib.bench.sweep import parse_size  # noqa: E402
from distlib.minicluster import minicluster_support  # noqa: E402
from distlib.minicluster.alltoall_measure import measure_alltoall  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--link-gbit", type=float, default=0.3, help="the link's rate, Gbit/s per direction")
    parser.add_argument("--sizes", default="256K,1M,4M", help="bytes each rank holds, powers of 4 apart")
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    ns = parser.parse_args(argv)
    reason = minicluster_support()
    if reason is not None:
        print(f"skipped: {reason}")
        return 0
    sizes = [parse_size(s) for s in ns.sizes.split(",")]
    points = measure_alltoall(link_gbit=ns.link_gbit, sizes=sizes, iters=ns.iters, repeats=ns.repeats)
    print(f"# all-to-all, 2 nodes, link {ns.link_gbit:g} Gbit/s per direction; seconds (least of {ns.repeats} medians)")
    print(f"{'ranks':>5} {'per node':>8} {'bytes':>10} {'model':>9} {'pairwise':>9} {'ratio':>6} {'builtin':>9} {'ratio':>6}")
    for p in points:
        print(f"{p.ranks:5d} {p.ranks_per_node:8d} {p.n_bytes:10d} {p.model:9.4f} {p.measured['pairwise']:9.4f} "
              f"{p.ratio('pairwise'):6.2f} {p.measured['builtin']:9.4f} {p.ratio('builtin'):6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
