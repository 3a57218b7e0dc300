"""Update latency of the walls and roofline widgets, per control.

For every control, set ``.value`` back and forth between valid values and
time each assignment (model + redraw + PNG encoding, all synchronous). Prints
the median and 95th percentile per control. Target: median <= 50 ms.

    python benchmarks/bench_widgets_walls_roofline.py [--repeats 30]

Timings depend on the machine and its load; the script prints the load
average and, per control, the median CPU time the process used, so a slow
run on a busy machine can be told apart from a slow widget.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time

import numpy as np

TARGET_MS = 50.0


def _bench(widget, control, values, repeats):
    cycle = itertools.cycle(values)
    control.value = next(cycle)  # warm: first use of a value may fill caches
    times, cpu = [], []
    for _ in range(repeats):
        v = next(cycle)
        c0 = time.process_time()
        t0 = time.perf_counter()
        control.value = v
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return (1e3 * statistics.median(times), 1e3 * float(np.percentile(times, 95)), 1e3 * statistics.median(cpu))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="timed updates per control (default 30)")
    args = parser.parse_args(argv)

    from distlib.widgets.roofline import RooflineWidget
    from distlib.widgets.walls import WallsWidget

    walls = WallsWidget()
    roof = RooflineWidget()
    cases = [
        ("WallsWidget", "parameters", walls, walls.params_slider, [7e9, 7e10, 1e9, 4e11]),
        ("WallsWidget", "training tokens", walls, walls.tokens_slider, [1e12, 3e11, 1e13]),
        ("WallsWidget", "recipe", walls, walls.recipe_dropdown, ["bf16_adam", "mixed_precision_adam", "fp32_adam"]),
        ("WallsWidget", "accelerator", walls, walls.accelerator_dropdown, ["H100", "MI300X", "TPU v5p", "A100"]),
        ("WallsWidget", "MFU", walls, walls.mfu_slider, [0.4, 0.6, 0.25]),
        ("WallsWidget", "chips", walls, walls.chips_dropdown, [8, 1024, 64, 1]),
        ("WallsWidget", "ZeRO stage", walls, walls.stage_buttons, [0, 1, 2, 3]),
        ("RooflineWidget", "accelerator", roof, roof.accelerator_dropdown, ["H100", "B200", "TPU v4", "Gaudi 3"]),
        ("RooflineWidget", "operation", roof, roof.operation_dropdown,
         ["matmul (n x n x n)", "attention, untiled (seq n)", "GELU (n x n elements)", "attention, tiled (seq n)"]),
        ("RooflineWidget", "size n", roof, roof.size_slider, [1024, 64, 16384, 256]),
    ]
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"# python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
          f"{'n/a' if load is None else ', '.join(f'{x:.2f}' for x in load)}; {args.repeats} updates per control")
    print(f"{'widget':<16}{'control':<18}{'median ms':>10}{'p95 ms':>10}{'CPU ms':>9}")
    medians, cpus = [], []
    for wname, cname, widget, control, values in cases:
        med, p95, cpu = _bench(widget, control, values, args.repeats)
        medians.append(med)
        cpus.append(cpu)
        flag = "" if med <= TARGET_MS else "  > target"
        print(f"{wname:<16}{cname:<18}{med:>10.1f}{p95:>10.1f}{cpu:>9.1f}{flag}")
    print(f"# worst median {max(medians):.1f} ms wall clock (target <= {TARGET_MS:.0f} ms); "
          f"worst median CPU time of this process {max(cpus):.1f} ms")
    print("# (wall clock includes waiting for the CPU when other processes compete; "
          "CPU time is what an otherwise idle machine would take, roughly)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
