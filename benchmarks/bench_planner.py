"""The planner's predicted utilization beside each published run's printed figure, with the error.

Run: ``python benchmarks/bench_planner.py``. For every row of
``distlib/data/published_layouts.csv`` it prints the printed figure (MFU or
HFU, as the source counts it), the planner's prediction of the same metric
for the same layout (what the source leaves unprinted, the planner picks),
the relative error, whether the layout fits the planner's memory model, and
the step's largest terms. Rows marked ``fit`` are the three the constants are
computed from (they agree by construction); every other row is a prediction.
It then shows the plain data-parallel 175B layout that does not fit, and
the ZeRO-3 against TP+PP comparison of Megatron-LM 2021's Table 2.
"""

from __future__ import annotations

import statistics

import distlib as dl
from distlib.layout import planner_constants, published_cluster, published_step
from distlib.layout_published import published_layouts


def _row(r) -> tuple:
    step = published_step(r)
    predicted = step.mfu if r.metric == "mfu" else step.hfu
    error = predicted / r.printed - 1
    top = sorted(step.breakdown.items(), key=lambda kv: -kv[1])[:3]
    terms = ", ".join(f"{k} {v / step.step_time:.0%}" for k, v in top)
    return step, predicted, error, terms


def main() -> None:
    c = planner_constants()
    print("Fitted constants:")
    for name in ("matmul_efficiency", "memory_traffic", "dp_exposure"):
        print(f"  {name:18s} {getattr(c, name):7.3f}   on {', '.join(c.sources[name])}")
    print()
    head = f"{'run':38s} {'metric':6s} {'printed':>7s} {'planner':>7s} {'error':>7s} {'fits':>5s} {'GB':>5s}  layout / largest terms"
    print(head)
    print("-" * len(head))
    errors = []
    for r in published_layouts():
        step, predicted, error, terms = _row(r)
        if r.role != "fit":
            errors.append(abs(error))
        tag = " (fit)" if r.role == "fit" else ""
        print(f"{r.id + tag:38s} {r.metric:6s} {r.printed:7.1%} {predicted:7.1%} {error:+7.1%} {str(step.fits):>5s} "
              f"{step.memory_bytes / 1e9:5.1f}  {step.layout}; {terms}")
    print(f"\nHeld-out rows: {len(errors)}, median |error| {statistics.median(errors):.1%}, "
          f"largest {max(errors):.1%}")
    gpt3 = dl.transformer(96, 12288, 96, seq=2048, vocab=51200)
    rows = {r.id: r for r in published_layouts()}
    selene = published_cluster(rows["megatron2021_t2_ptd_174.6b_1536"])
    plain = dl.layout_step(gpt3, selene, global_batch=1536, dp=1536, tp=1, pp=1, recompute="full")
    print(f"\nGPT-3 175B, plain data parallelism on 1536 A100 80GB: {plain.memory_bytes / 1e9:.0f} GB a GPU, "
          f"fits={plain.fits}")
    print("\nMegatron-LM 2021 Table 2, TFLOP/s per GPU (their count, with recomputation): printed, planner")
    for size in ("174.6b", "529.6b"):
        for kind in ("zero3", "ptd"):
            for r in (x for x in published_layouts() if x.id.startswith(f"megatron2021_t2_{kind}_{size}")):
                step = published_step(r)
                print(f"  {kind:5s} {size:7s} {r.nodes * 8:5d} GPUs: {r.printed * 312:5.0f} {step.hfu * 312:5.0f}"
                      f"   dp_comm {step.breakdown['dp_comm'] / step.step_time:4.0%} of the step ({step.layout})")


if __name__ == "__main__":
    main()
