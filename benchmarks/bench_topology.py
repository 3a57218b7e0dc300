"""Topology metrics at about 4096 hosts: build, diameter, bisection, ring loads.

    python benchmarks/bench_topology.py [--full-bfs] [--check]

Target (from the issue): each metric of a ~4096-host network in <= 10 s.
``diameter`` uses the documented symmetry shortcut above 2048 hosts;
``--full-bfs`` also times a BFS from every host (the slow, assumption-free
method). ``--check`` exits 1 when a timed metric misses 10 s. Prints
figures; asserts nothing else.
"""

from __future__ import annotations

import argparse
import sys
import time

TARGET_S = 10.0

CASES = [
    ("torus", {"dims": (16, 16, 16)}),
    ("torus", {"dims": (64, 64)}),
    ("hypercube", {"d": 12}),
    ("fat_tree", {"k": 26}),
    ("dragonfly", {"a": 8, "p": 4, "h": 4}),
    ("dgx", {"nodes": 512}),
    ("ring", {"p": 4096}),
]


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def bench(full_bfs: bool = False) -> list[dict]:
    from distlib.topology import ring_link_loads, topology

    rows = []
    for kind, size in CASES:
        topo, t_build = _timed(lambda: topology(kind, **size))
        diam, t_diam = _timed(lambda: topo.diameter())
        bis, t_bis = _timed(lambda: topo.bisection())
        loads, t_loads = _timed(lambda: ring_link_loads(topo))
        row = {"case": f"{kind} {size}", "hosts": topo.n_hosts, "build": t_build, "diameter": t_diam,
               "bisection": t_bis, "ring_loads": t_loads, "diam": diam, "bis": bis.links,
               "bis_method": bis.method, "congestion": loads.max_load}
        if full_bfs:
            d2, row["diameter_bfs"] = _timed(lambda: topo.diameter(method="bfs"))
            assert d2 == diam, (d2, diam)
        rows.append(row)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full-bfs", action="store_true", help="also time a BFS from every host")
    ap.add_argument("--check", action="store_true", help="exit 1 if a metric takes more than 10 s")
    args = ap.parse_args(argv)
    rows = bench(full_bfs=args.full_bfs)
    cols = ["build", "diameter", "bisection", "ring_loads"] + (["diameter_bfs"] if args.full_bfs else [])
    print(f"{'topology':<40} {'hosts':>6} " + " ".join(f"{c + ' s':>13}" for c in cols)
          + "  diameter  bisection (method)  ring congestion")
    worst = 0.0
    for r in rows:
        worst = max(worst, *(r[c] for c in cols))
        print(f"{r['case']:<40} {r['hosts']:>6} " + " ".join(f"{r[c]:>13.3f}" for c in cols)
              + f"  {r['diam']:>8}  {r['bis']} ({r['bis_method']})  {r['congestion']:g}")
    print(f"slowest metric: {worst:.2f} s (target <= {TARGET_S:g} s)")
    return 1 if args.check and worst > TARGET_S else 0


if __name__ == "__main__":
    sys.exit(main())
