"""The planner's predicted utilization beside each published run's printed figure, with the error and its cause.

Run: ``python benchmarks/bench_planner.py``. For every row of
``distlib/data/published_layouts.csv``, smallest model first, it prints the
printed figure (MFU or HFU, as the source counts it), the planner's prediction
of the same metric for the same layout (what the source leaves unprinted, the
planner picks), the relative error, the largest term of the predicted step
beside compute, and what the planner leaves out there
(``distlib.planner.step.published_residuals``). Rows marked ``fit`` are the
ones the constants are computed from; every other row is a prediction. Then:
the held-out median and worst (issue 35's bounds: worst under 25 %, median
under 8 %), the constants and what each is fitted on, what the old fit of the
data-parallel exposure did to the small models of Megatron-LM 2021's Table 1,
the plain data-parallel 175B layout that does not fit, Llama 3 at 8K with and
without its lighter end stages, MFU and HFU side by side, 16 and 18 bytes a
parameter, and the ZeRO-3 against TP+PP comparison of Megatron-LM 2021's
Table 2.

What changed, and why the small models of Table 1 were a third low:

* ``dp_exposure`` was fitted on the absolute step of Korthikanti et al.'s 530B
  run at 8-way data parallelism, so it absorbed the planner's own error on that
  step (+4 %) and came out near 9; the paper prints that step beside the same
  run without data parallelism (section 6.3), so the constant is now fitted on
  the difference of the two, and comes out near 4.5. The small models, with 32
  data-parallel replicas and no pipeline, were the rows where that term was
  largest beside compute.
* Selective recomputation runs the attention core's forward again, so its
  element-wise traffic twice; counted once, the fit on the 22B run pushed the
  traffic constant up (13.1 bytes moved per byte kept), and the small models,
  whose step is half memory-bound work, paid for it. Counted, it is 10.4.
* ZeRO-3 gathers module by module, each gather a collective over every
  data-parallel rank with its latency; priced as one buffer, the rows with the
  most GPUs needed the inflated exposure to come out right.
* Llama 3 kept its 8K sequences without activation checkpointing by taking a
  layer off its first and last stages; counted with every chunk of the first
  stage full, the memory model forced full recomputation.
* Megatron-LM 2021's Table 2 TP+PP rows are now timed at the layouts the paper
  ran (T = 8), not at the planner's own split.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

import distlib as dl
from distlib.planner import planner_constants, published_cluster, published_model, published_step
from distlib.planner.published import published_layouts
from distlib.planner.step import exposure_fitted_on_the_step, published_residuals


def _table(res) -> list:
    head = f"{'run':34s} {'params':>7s} {'metric':6s} {'printed':>7s} {'planner':>7s} {'error':>7s}  {'largest term':17s} cause"
    print(head)
    print("-" * 150)
    errors = []
    for r in res:
        tag = " (fit)" if r.row.role == "fit" else ""
        print(f"{r.row.id + tag:34s} {published_model(r.row).params / 1e9:6.1f}B {r.row.metric:6s} {r.row.printed:7.1%} "
              f"{r.predicted:7.1%} {r.error:+7.1%}  {r.term:12s} {r.share:4.0%} {r.cause}")
        if r.row.role != "fit":
            errors.append(abs(r.error))
    return errors


def main() -> None:
    c = planner_constants()
    print("Fitted constants (everything else is predicted):")
    for name in ("matmul_efficiency", "memory_traffic", "dp_exposure"):
        print(f"  {name:18s} {getattr(c, name):7.3f}   on {', '.join(c.sources[name])}")
    print()
    errors = _table(published_residuals())
    print(f"\nHeld-out rows: {len(errors)}, median |error| {statistics.median(errors):.1%}, largest {max(errors):.1%} "
          f"(issue 35: under 8% and 25%)")
    rows = {r.id: r for r in published_layouts()}
    old = replace(c, dp_exposure=exposure_fitted_on_the_step())
    print(f"\nThe exposure fitted on the 530B DP 8 step itself would be {old.dp_exposure:.2f}, not {c.dp_exposure:.2f}; "
          "with it the small models of Table 1 come out:")
    for n in ("1.7b", "3.6b", "7.5b", "18.4b"):
        r = rows[f"megatron2021_t1_{n}"]
        now, then = (published_step(r, constants=k).hfu / r.printed - 1 for k in (c, old))
        print(f"  {r.id:24s} {then:+6.1%} instead of {now:+6.1%}")
    gpt3 = dl.transformer(96, 12288, 96, seq=2048, vocab=51200)
    selene = published_cluster(rows["megatron2021_t2_ptd_174.6b_1536"])
    plain = dl.layout_step(gpt3, selene, global_batch=1536, dp=1536, tp=1, pp=1, recompute="full")
    print(f"\nGPT-3 175B, plain data parallelism on 1536 A100 80GB: {plain.memory_bytes / 1e9:.0f} GB a GPU, "
          f"fits={plain.fits}")
    llama = rows["llama3_405b_8k_8192"]
    for ends in (True, False):
        s = dl.layout_step(published_model(llama), published_cluster(llama), global_batch=llama.global_batch,
                           dp=llama.layout.dp, tp=8, pp=16, zero=2, recompute="none", schedule="interleaved",
                           chunks=4, attention="flash", recipe=llama.recipe, lighter_ends=ends)
        print(f"Llama 3 405B at 8K on 8192 H100s, no recomputation, {'a layer off the end stages' if ends else 'every chunk full':26s}: "
              f"MFU {s.mfu:.1%} (printed {llama.printed:.0%}), {s.memory_bytes / 1e9:.1f} GB a GPU, fits={s.fits}")
    print("\nMFU and HFU kept apart (Korthikanti et al. 2022, Table 5: selective recomputation):")
    for r in (x for x in published_layouts() if x.printed_hfu is not None):
        step = published_step(r)
        print(f"  {r.id:24s} MFU printed {r.printed:.1%} planner {step.mfu:.1%}; HFU printed {r.printed_hfu:.1%} "
              f"planner {step.hfu:.1%} (HFU/MFU printed {r.printed_hfu / r.printed:.3f}, ours {step.hfu / step.mfu:.3f})")
    print("  (their ratio, 'approximately 1 + s/6h' (section 6.3), charges selective recomputation 12 s h per layer")
    print("  per token; ours charges the 4 s h of the two attention products it repeats)")
    k530 = rows["korthikanti2022_530b_dp8"]
    for recipe in ("mixed_precision_adam", "fp32_grads_adam"):
        s = published_step(replace(k530, recipe=recipe))
        state = sum(s.memory[k] for k in ("weights", "grads", "optimizer", "master"))
        print(f"530B at DP 8 with {dl.RECIPES[recipe].bytes_per_param:g} bytes a parameter ({recipe}): state "
              f"{state / 1e9:.1f} GB a GPU, dp_comm {s.breakdown['dp_comm']:.2f} s, MFU {s.mfu:.1%}")
    print("\nMegatron-LM 2021 Table 2, TFLOP/s per GPU (their count, with recomputation): printed, planner")
    for size in ("174.6b", "529.6b"):
        for kind in ("zero3", "ptd"):
            for r in (x for x in published_layouts() if x.id.startswith(f"megatron2021_t2_{kind}_{size}")):
                step = published_step(r)
                print(f"  {kind:5s} {size:7s} {r.nodes * 8:5d} GPUs: {r.printed * 312:5.0f} {step.hfu * 312:5.0f}"
                      f"   dp_comm {step.breakdown['dp_comm'] / step.step_time:4.0%} of the step ({step.name})")


if __name__ == "__main__":
    main()
