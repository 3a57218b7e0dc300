"""The book's collectives against the engines' own, on this machine, in one run.

::

    python benchmarks/bench_engines.py            # about 2-4 minutes on 2 cores
    python benchmarks/bench_engines.py --quick    # fewer sizes and samples
    python benchmarks/bench_engines.py --out results.json

Three comparisons, all as ratios of medians (absolute times depend on the
machine and on whatever else it is running; the ratios are what the book
discusses):

1. **Ring over MPI vs the memory system** (p = 2, 1-64 MiB): the ring's
   bus bandwidth divided by the rate at which NumPy copies a large buffer.
   Target >= 0.5.
2. **auto vs MPICH's built-in MPI_Allreduce** (p = 2, 8 B - 256 MiB): time
   ratio auto / built-in. Target <= 1.5 at every size, < 1 from 16 MiB.
3. **Ring over gloo vs gloo's built-in all_reduce** (p = 2, 4 MiB and up):
   time ratio. Target <= 1.2.

The runs use ``python -m distlib.bench`` (``--json``), so every number here
can be reproduced with that command.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from distlib.engines import run_mpi, run_torch
from distlib.fmt import fmt_rate

MiB = 2**20


def bench_args(b, e, algorithms, iters, warmup, engine="mpi"):
    return ["allreduce", "--engine", engine, "-b", str(b), "-e", str(e), "-f", "2", "--algorithms", algorithms,
            "--iters", str(iters), "--warmup", str(warmup), "--json", "--quiet", "--recalibrate"]  # fmt: skip


def size_label(n: int) -> str:
    """Sizes as nccl-tests steps them: powers of two, so binary units."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def mark(ok: bool) -> str:
    return "yes" if ok else "MISS"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and samples")
    parser.add_argument("--out", help="also write the raw results to this JSON file")
    ns = parser.parse_args(argv)
    iters, warmup = (5, 1) if ns.quick else (9, 2)
    top = 64 * MiB if ns.quick else 256 * MiB
    started = time.monotonic()

    print(f"# 1+2. MPI, p = 2: distlib.bench with ring and auto, 8 B .. {size_label(top)}", file=sys.stderr, flush=True)
    mpi = run_mpi("distlib.bench", 2, args=bench_args(8, top, "ring,auto", iters, warmup), timeout=900)
    mpi = json.loads(mpi.stdout[0])
    print("# 3. gloo, p = 2: distlib.bench with ring, 4 MiB and up", file=sys.stderr, flush=True)
    gloo_top = 64 * MiB if ns.quick else 128 * MiB
    gloo = run_torch("distlib.bench:_torch_rank_main", 2, backend="gloo",
                     args=bench_args(4 * MiB, gloo_top, "ring", iters, warmup, engine="gloo"), timeout=900)  # fmt: skip
    gloo = json.loads(gloo.stdout[0])
    membw = mpi["memcpy_bandwidth"]

    gloo_rows = {row["n_bytes"]: row for row in gloo["rows"]}
    print(f"memory-copy reference (NumPy, 128 MiB, median): {fmt_rate(membw)}")
    cal = mpi["calibration"]
    fits = ", ".join(f"{a}: alpha {cal['alpha'][a] * 1e6:.1f} us, {cal['bandwidth'][a] / 1e9:.2f} GB/s" for a in cal["alpha"])
    print(f"auto's alpha-beta fit (p = 2): {fits}")
    print()
    print(f"{'size':>10} | {'MPI ring busbw':>14} {'/ memcpy':>8} {'>=0.5':>5} | {'auto/builtin':>12} {'choice':>16} "
          f"{'target':>6} | {'gloo ring/builtin':>17} {'<=1.2':>5}")  # fmt: skip
    misses = {"ring_vs_memcpy": [], "auto_vs_builtin": [], "gloo_ring_vs_builtin": []}
    for row in mpi["rows"]:
        n = row["n_bytes"]
        res = row["results"]
        cells = [f"{size_label(n):>10}"]
        if MiB <= n <= 64 * MiB:
            ratio = res["ring"]["busbw"] / membw
            ok = ratio >= 0.5
            cells.append(f"{fmt_rate(res['ring']['busbw']):>14} {ratio:>8.2f} {mark(ok):>5}")
            if not ok:
                misses["ring_vs_memcpy"].append((n, ratio))
        else:
            cells.append(f"{'':>14} {'':>8} {'':>5}")
        auto = res["auto"]["ratio"]
        limit = 1.0 if n >= 16 * MiB else 1.5
        ok = auto < limit if n >= 16 * MiB else auto <= limit
        cells.append(f"{auto:>12.2f} {res['auto']['choice']:>16} {('<1' if n >= 16 * MiB else '<=1.5'):>6}{'' if ok else ' MISS'}")
        if not ok:
            misses["auto_vs_builtin"].append((n, auto, res["auto"]["choice"]))
        if n in gloo_rows:
            g = gloo_rows[n]["results"]["ring"]["ratio"]
            ok = g <= 1.2
            cells.append(f"{g:>17.2f} {mark(ok):>5}")
            if not ok:
                misses["gloo_ring_vs_builtin"].append((n, g))
        print(" | ".join(cells))
    print()
    n_ring = sum(1 for r in mpi["rows"] if MiB <= r["n_bytes"] <= 64 * MiB)
    print(f"ring over MPI >= 0.5x memcpy: {n_ring - len(misses['ring_vs_memcpy'])}/{n_ring} sizes")
    print(f"auto within target of MPICH's built-in: {len(mpi['rows']) - len(misses['auto_vs_builtin'])}/{len(mpi['rows'])} sizes")
    print(f"ring over gloo <= 1.2x gloo's built-in: {len(gloo['rows']) - len(misses['gloo_ring_vs_builtin'])}/{len(gloo['rows'])} sizes")
    wrong = sum(r["wrong"] for res in (mpi, gloo) for row in res["rows"] for r in row["results"].values())
    print(f"wrong elements in all results: {wrong}")
    print(f"({time.monotonic() - started:.0f} s)")
    if ns.out:
        with open(ns.out, "w") as fh:
            json.dump({"mpi": mpi, "gloo": gloo, "misses": misses}, fh, indent=1)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
