"""Chapter 1 figures: ring simulation speed and widget update latency.

    .venv/bin/python benchmarks/bench_ring.py [--big]

Prints figures; asserts nothing (machines here are noisy). ``--big`` adds
the issue's reference case, p = 1024 ranks of 2**20 float32 values (8 GiB of
memory for input and state).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _timing import HEADER, row, time_calls  # noqa: E402

import distlib as dl  # noqa: E402


def bench_simulation(cases):
    print("ring simulation (float32; time includes recording every transfer)")
    print(f"{'p':>6} {'n':>9} {'steps':>6} {'transfers':>10} {'seconds':>8} {'elements moved/s':>17}")
    for p, n in cases:
        x = np.ones((p, n), dtype=np.float32)
        t0 = time.perf_counter()
        trace = dl.simulate_ring_allreduce(x)
        dt = time.perf_counter() - t0
        assert trace.result[0, 0] == p
        moved = 2 * (p - 1) * n
        print(f"{p:>6} {n:>9} {len(trace.steps):>6} {len(trace.steps) * p:>10} {dt:>8.2f} {moved / dt:>17.3g}")
        del trace, x


def bench_widgets():
    from distlib.widgets.ring import ClusterWidget, RingWidget

    print("\nwidget updates: set a control's value -> model + redraw + PNG (target median <= 50 ms)")
    print(HEADER)
    for p in (4, 8, 12):
        w = RingWidget(p=p)
        first = list(range(1, 2 * (p - 1) + 1))
        again = list(range(2 * (p - 1) - 1, -1, -1))
        set_step = lambda v: setattr(w.step_slider, "value", v)  # noqa: E731
        print(row(f"RingWidget(p={p}) step, first visit", time_calls(set_step, first), 50))
        print(row(f"RingWidget(p={p}) step, frame seen before", time_calls(set_step, again), 50))
    w = RingWidget(p=4)
    print(row("RingWidget p slider (re-simulate, rebuild)", time_calls(lambda v: setattr(w.p_slider, "value", v),
                                                                    [5, 6, 7, 8, 9, 10, 11, 12, 3, 4] * 2), 50))
    c = ClusterWidget()
    controls = {
        "p": (c.p_slider, [2 ** k for k in range(1, 15)]),
        "parameters": (c.params_slider, [10 ** (8 + 0.25 * k) for k in range(17)]),
        "gradient dtype": (c.dtype_buttons, [4, 2] * 6),
        "link bandwidth": (c.link_slider, [10 ** (0.2 * k) for k in range(16)]),
        "peak TFLOP/s": (c.tflops_slider, [10 ** (1 + 0.2 * k) for k in range(16)]),
        "MFU": (c.mfu_slider, [0.1 + 0.05 * k for k in range(18)]),
        "tokens per GPU": (c.tokens_slider, [2 ** k for k in range(9, 21)]),
    }
    for name, (ctl, values) in controls.items():
        print(row(f"ClusterWidget {name}", time_calls(lambda v, ctl=ctl: setattr(ctl, "value", v), values), 50))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--big", action="store_true", help="also run p=1024, n=2**20 (8 GiB)")
    args = parser.parse_args()
    cases = [(8, 2**20), (64, 2**20), (256, 2**16)]
    if args.big:
        cases.append((1024, 2**20))
    bench_simulation(cases)
    bench_widgets()


if __name__ == "__main__":
    main()
