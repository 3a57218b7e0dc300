"""Update latency of the communication-hiding widget, per control.

Sets each control of :class:`distlib.widgets.overlap.OverlapWidget` to a
series of values across its range, headless, and times how long the
assignment takes (it recomputes the model and redraws the PNG synchronously).
Prints the median and 95th percentile per control; the target is a median of
at most 50 ms.

    python benchmarks/bench_widgets_overlap.py [--repeats 30] [--check]

``--check`` exits with status 1 when a control's median misses the target.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import control_values  # noqa: E402

TARGET_MS = 50.0


def bench(repeats: int = 30) -> list[dict]:
    from distlib.widgets.overlap import OverlapWidget

    t0 = time.perf_counter()
    wdg = OverlapWidget()
    init_ms = (time.perf_counter() - t0) * 1e3
    rows = []
    for control in wdg.controls:
        defaults = control.value
        samples = []
        for v in control_values(control, repeats):
            if v == control.value:
                continue
            t = time.perf_counter()
            control.value = v
            samples.append((time.perf_counter() - t) * 1e3)
        control.value = defaults
        s = np.array(samples)
        rows.append({"control": control.description or "overlap toggle", "n": len(s),
                     "median_ms": float(np.median(s)), "p95_ms": float(np.percentile(s, 95))})
    rows.append({"control": "(construction)", "n": 1, "median_ms": init_ms, "p95_ms": init_ms})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="values per control (default 30)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a median misses the target")
    args = parser.parse_args(argv)
    rows = bench(args.repeats)
    width = max(len(r["control"]) for r in rows)
    print(f"{'control':<{width}}  {'n':>3}  {'median ms':>9}  {'p95 ms':>7}")
    missed = []
    for r in rows:
        flag = ""
        if r["control"] != "(construction)" and r["median_ms"] > TARGET_MS:
            flag = "  > target"
            missed.append(r["control"])
        print(f"{r['control']:<{width}}  {r['n']:>3}  {r['median_ms']:>9.1f}  {r['p95_ms']:>7.1f}{flag}")
    print(f"target: median <= {TARGET_MS:g} ms per update; "
          + ("all met" if not missed else f"missed by {', '.join(missed)}"))
    return 1 if (args.check and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
