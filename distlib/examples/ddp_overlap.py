"""PyTorch DDP with and without communication overlap, measured on this machine.

Every rank trains the same small MLP (``--layers`` linear layers of
``--width`` x ``--width``, ReLU between them) on its own batch, and rank 0
hands back a :class:`distlib.overlap.measure.DDPReport` (one report line,
:mod:`distlib.engines.report`) with everything the chapter "Communication
hiding, modelled and measured" compares against the model
:func:`distlib.ddp_step`:

1. **Per-layer backward times.** The plain model (no DDP) runs its backward
   pass with a hook on every parameter that records when its gradient is
   accumulated; the gaps between the layers' "ready" times are the layers'
   backward times, in backward order. The forward pass is timed too.
2. **All-reduce times** of one flat float32 buffer for every size a bucket
   takes in the sweep (and a few small sizes to pin down the latency), with
   no compute running.
3. **The sweep.** For each ``bucket_cap_mb``, three kinds of step, taken in
   turn so that drifts in the machine's load hit all three alike:
   ``compute`` (forward and backward under ``no_sync()``: no communication),
   ``overlap`` (ordinary DDP: buckets all-reduced during the backward pass)
   and ``no_overlap`` (backward under ``no_sync()``, then one all-reduce of
   all gradients, flattened into one buffer). Each time is the slowest
   rank's; the report holds the medians and every sample, and also the CPU
   time each kind of step used (``time.process_time``: every thread of the
   rank, gloo's communication threads included).
4. **Checks.** A few SGD steps from the same initial weights with overlap on
   and with overlap off, and a single-process run on the concatenated batch:
   the ranks' parameters must match each other and the three runs must agree
   (up to float32 rounding).

Launch it from Python (a notebook never becomes a rank itself)::

    from distlib.examples import ddp_overlap
    report = ddp_overlap.launch(p=2)          # a DDPReport

or from a shell::

    python -c "import distlib.engines as de; print(de.run_torch('distlib.examples.ddp_overlap:main', 2))"

:func:`copy_compute_overlap` is the GPU counterpart: matrix products on one
CUDA stream, a host-to-device copy on another, timed one after the other and
concurrently. Without a GPU it says so and returns at once.

torch is imported inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

from distlib.overlap.measure import AllreduceTimes, Bucket, DDPChecks, DDPReport, SweepRow

__all__ = [
    "DEFAULTS",
    "build_model",
    "main",
    "launch",
    "copy_compute_overlap",
]

#: Default sizes: 16 layers of 256 x 256 (257 KiB of float32 gradients each,
#: 4.0 MiB in all), 64 samples per rank. On a 2-core machine the backward
#: pass and the all-reduce of all gradients then take about the same time,
#: and the four capacities give 16, 4, 2 and 1 buckets.
DEFAULTS = {
    "width": 256,
    "layers": 16,
    "batch": 64,
    "caps": (0.25, 1.0, 2.0, 4.0),
    "iters": 6,
    "layer_iters": 20,
    "warmup": 1,
    "check_steps": 3,
    "seed": 0,
    "threads": 1,
}

# The small sizes (bytes) timed in addition to the buckets, for the latency.
_SMALL_SIZES = (4096, 65536)


def _torch():
    from distlib.engines.torch_dist import import_torch

    return import_torch()


def build_model(width: int, layers: int, *, seed: int = 0):
    """``layers`` Linear(width, width) layers with ReLU between, initialised from ``seed``."""
    torch, _ = _torch()
    nn = torch.nn
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    mods = []
    for i in range(layers):
        mods.append(nn.Linear(width, width))
        if i < layers - 1:
            mods.append(nn.ReLU())
    model = nn.Sequential(*mods)
    torch.random.set_rng_state(gen_state)
    return model


def _linears(model):
    torch, _ = _torch()
    return [m for m in model if isinstance(m, torch.nn.Linear)]


def _batch(width, batch, *, seed, rank, step=0):
    """The batch of ``rank`` at ``step``: the same on every run, different on every rank."""
    torch, _ = _torch()
    g = torch.Generator().manual_seed(1_000_003 * seed + 1009 * rank + step)
    x = torch.randn(batch, width, generator=g)
    y = torch.randn(batch, width, generator=g)
    return x, y


def _median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def _slowest(dist, torch, values):
    """Element-wise maximum over ranks (a step ends when its slowest rank ends)."""
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


# ---------------------------------------------------------------------------
# 1. compute: forward time and per-layer backward times


def measure_layer_times(model, x, y, *, iters, warmup, dist, torch):
    """Forward time and per-layer backward times (backward order), medians of the slowest rank."""
    lins = _linears(model)
    L = len(lins)
    stamps = {}

    def hook_for(layer):
        def hook(param):
            stamps[layer] = time.perf_counter()  # the last of the layer's params wins

        return hook

    handles = [p.register_post_accumulate_grad_hook(hook_for(i)) for i, lin in enumerate(lins)
               for p in lin.parameters()]
    loss_fn = torch.nn.functional.mse_loss
    fwd, bwd = [], []
    try:
        for it in range(warmup + iters):
            model.zero_grad(set_to_none=True)
            stamps.clear()
            dist.barrier()
            t0 = time.perf_counter()
            loss = loss_fn(model(x), y)
            t1 = time.perf_counter()
            loss.backward()
            if it < warmup:
                continue
            ready = [stamps[L - 1 - k] for k in range(L)]  # backward order: last layer first
            fwd.append(t1 - t0)
            bwd.append([ready[0] - t1] + [ready[k] - ready[k - 1] for k in range(1, L)])
    finally:
        for h in handles:
            h.remove()
    model.zero_grad(set_to_none=True)
    fwd = _slowest(dist, torch, fwd)
    flat = _slowest(dist, torch, [v for row in bwd for v in row])
    bwd = [flat[i * L:(i + 1) * L] for i in range(len(bwd))]
    return _median(fwd), [_median([row[k] for row in bwd]) for k in range(L)]


# ---------------------------------------------------------------------------
# 2. communication: one all-reduce of a flat buffer, several sizes


def measure_allreduce(sizes, *, iters, warmup, dist, torch):
    """Median time of one all-reduce of each size (bytes, float32), slowest rank."""
    out = []
    for n_bytes in sizes:
        buf = torch.ones(max(int(n_bytes) // 4, 1), dtype=torch.float32)
        times = []
        for it in range(warmup + iters):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(buf)
            if it >= warmup:
                times.append(time.perf_counter() - t0)
        out.append(_median(_slowest(dist, torch, times)))
    return out


# ---------------------------------------------------------------------------
# 3. the sweep


def _flat_allreduce(params, dist, torch, p):
    """All-reduce every gradient as one flat buffer, then average: the no-overlap step's communication."""
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

    grads = [q.grad for q in params]
    flat = _flatten_dense_tensors(grads)
    dist.all_reduce(flat)
    flat.div_(p)
    for g, v in zip(grads, _unflatten_dense_tensors(flat, grads)):
        g.copy_(v)


def _buckets_of(ddp, n_layers):
    """DDP's buckets after its rebuild: (bytes, layers in backward order) each, or None."""
    try:
        data = ddp._get_ddp_logging_data()  # private, but the only place DDP reports them
        sizes = [int(s) for s in str(data["rebuilt_bucket_sizes"]).split(",")]
        groups = [[int(i) for i in g.split()] for g in str(data["rebuilt_per_bucket_param_indices"]).split(",")]
    except Exception:  # noqa: BLE001 - an older or newer torch: report nothing
        return None
    layers = []
    for g in groups:  # parameter j belongs to layer j // 2 (weight, bias); backward position L-1-layer
        layers.append(sorted({n_layers - 1 - j // 2 for j in g}))
    return [Bucket(s, ls) for s, ls in zip(sizes, layers)]


def run_sweep(ns, *, dist, torch, x, y):
    """Median step times (compute / overlap / no_overlap) for every bucket capacity."""
    p = dist.get_world_size()
    loss_fn = torch.nn.functional.mse_loss
    rows = []
    modes = ("compute", "overlap", "no_overlap")
    for cap in ns.caps:
        t_cap = time.perf_counter()
        model = build_model(ns.width, ns.layers, seed=ns.seed)
        ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cap)
        params = list(ddp.parameters())

        def step(mode):
            if mode == "overlap":
                loss_fn(ddp(x), y).backward()  # returns once every bucket is all-reduced
                return
            with ddp.no_sync():
                loss_fn(ddp(x), y).backward()
            if mode == "no_overlap":
                _flat_allreduce(params, dist, torch, p)

        for _ in range(ns.warmup):  # the first synced step also rebuilds DDP's buckets
            for mode in modes:
                ddp.zero_grad(set_to_none=True)
                step(mode)
        t_warm = time.perf_counter()
        samples = {m: [] for m in modes}
        cpu = {m: [] for m in modes}
        for it in range(ns.iters):
            order = modes[it % 3:] + modes[:it % 3]  # rotate, so no mode always runs first
            for mode in order:
                ddp.zero_grad(set_to_none=True)
                dist.barrier()
                c0, t0 = time.process_time(), time.perf_counter()
                step(mode)
                samples[mode].append(time.perf_counter() - t0)
                cpu[mode].append(time.process_time() - c0)  # all threads of this rank, gloo's too
        row = {"bucket_cap_mb": cap, "buckets": _buckets_of(ddp, ns.layers),
               "setup_seconds": t_warm - t_cap, "timed_seconds": time.perf_counter() - t_warm}
        for mode in modes:
            s = _slowest(dist, torch, samples[mode])
            row[mode] = _median(s)
            row[f"{mode}_samples"] = s
            row[f"{mode}_cpu"] = _median(_slowest(dist, torch, cpu[mode]))
        rows.append(SweepRow(**row))
        del ddp
    return rows


# ---------------------------------------------------------------------------
# 4. checks: the same training with overlap on, off, and on one process


def _flat_params(model, torch):
    return torch.cat([q.detach().reshape(-1) for q in model.parameters()])


def run_checks(ns, *, dist, torch):
    """Max differences between ranks, between overlap on/off, and against one process."""
    p, rank = dist.get_world_size(), dist.get_rank()
    loss_fn = torch.nn.functional.mse_loss
    lr = 0.05
    results = {}
    for mode in ("overlap", "no_overlap"):
        model = build_model(ns.width, ns.layers, seed=ns.seed)
        ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=min(ns.caps))
        opt = torch.optim.SGD(ddp.parameters(), lr=lr)
        for s in range(ns.check_steps):
            x, y = _batch(ns.width, ns.batch, seed=ns.seed, rank=rank, step=s)
            opt.zero_grad(set_to_none=True)
            if mode == "overlap":
                loss_fn(ddp(x), y).backward()
            else:
                with ddp.no_sync():
                    loss_fn(ddp(x), y).backward()
                _flat_allreduce(list(ddp.parameters()), dist, torch, p)
            opt.step()
        results[mode] = _flat_params(model, torch)
    # one process, the whole batch: what data parallelism must reproduce
    ref = build_model(ns.width, ns.layers, seed=ns.seed)
    opt = torch.optim.SGD(ref.parameters(), lr=lr)
    for s in range(ns.check_steps):
        xs, ys = zip(*(_batch(ns.width, ns.batch, seed=ns.seed, rank=r, step=s) for r in range(p)))
        opt.zero_grad(set_to_none=True)
        loss_fn(ref(torch.cat(xs)), torch.cat(ys)).backward()
        opt.step()
    reference = _flat_params(ref, torch)
    init = _flat_params(build_model(ns.width, ns.layers, seed=ns.seed), torch)

    def across_ranks(vec):
        root = vec.clone()
        dist.broadcast(root, 0)
        return (vec - root).abs().max().item()

    local = [
        across_ranks(results["overlap"]),
        across_ranks(results["no_overlap"]),
        (results["overlap"] - results["no_overlap"]).abs().max().item(),
        (results["overlap"] - reference).abs().max().item(),
        (results["no_overlap"] - reference).abs().max().item(),
        (reference - init).abs().max().item(),
    ]
    worst = _slowest(dist, torch, local)
    keys = ["max_rank_diff_overlap", "max_rank_diff_no_overlap", "max_diff_overlap_vs_no_overlap",
            "max_diff_overlap_vs_single_process", "max_diff_no_overlap_vs_single_process", "max_update"]
    return DDPChecks(steps=ns.check_steps, lr=lr, **dict(zip(keys, worst)))


# ---------------------------------------------------------------------------
# the program


def _parser():
    d = DEFAULTS
    ap = argparse.ArgumentParser(prog="distlib.examples.ddp_overlap", description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=d["width"])
    ap.add_argument("--layers", type=int, default=d["layers"])
    ap.add_argument("--batch", type=int, default=d["batch"], help="samples per rank")
    ap.add_argument("--caps", type=lambda s: tuple(float(v) for v in s.split(",")), default=d["caps"],
                    help="bucket_cap_mb values, comma-separated (MiB)")
    ap.add_argument("--iters", type=int, default=d["iters"], help="timed iterations per measurement")
    ap.add_argument("--layer-iters", type=int, default=d["layer_iters"],
                    help="timed iterations of the per-layer backward measurement (cheap: no communication)")
    ap.add_argument("--warmup", type=int, default=d["warmup"])
    ap.add_argument("--check-steps", type=int, default=d["check_steps"],
                    help="SGD steps of the parameter check (0: skip it)")
    ap.add_argument("--seed", type=int, default=d["seed"])
    ap.add_argument("--threads", type=int, default=d["threads"], help="torch intra-op threads per rank")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: layers,allreduce,sweep")
    return ap


def main(argv=None) -> None:
    """One rank of the measurement; rank 0 hands back the :class:`~distlib.overlap.measure.DDPReport`."""
    ns = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    for name in ("width", "layers", "batch", "iters", "layer_iters"):
        if getattr(ns, name) < 1:
            raise SystemExit(f"--{name} must be >= 1, got {getattr(ns, name)}")
    if any(c <= 0 for c in ns.caps):
        raise SystemExit(f"--caps must all be > 0 MiB, got {ns.caps}")
    skip = {s for s in ns.skip.split(",") if s}
    torch, dist = _torch()
    torch.set_num_threads(ns.threads)
    from distlib.engines import torch_dist

    torch_dist.init()  # reads RANK/WORLD_SIZE/rendezvous; collectives time out
    rank, p = dist.get_rank(), dist.get_world_size()
    x, y = _batch(ns.width, ns.batch, seed=ns.seed, rank=rank)
    layer_bytes = 4 * (ns.width * ns.width + ns.width)  # float32 weight + bias
    out = {
        "p": p,
        "backend": str(dist.get_backend()),
        "torch": torch.__version__,
        "threads": ns.threads,
        "cpu_count": os.cpu_count(),
        "model": {"width": ns.width, "layers": ns.layers, "batch": ns.batch},
        "grad_bytes": [layer_bytes] * ns.layers,  # backward order (all equal here)
    }
    t_start = time.perf_counter()
    phases = out["phase_seconds"] = {}
    if "layers" not in skip:
        model = build_model(ns.width, ns.layers, seed=ns.seed)
        out["forward_time"], out["backward_times"] = measure_layer_times(
            model, x, y, iters=ns.layer_iters, warmup=ns.warmup, dist=dist, torch=torch)
        phases["layers"] = time.perf_counter() - t_start
    if "sweep" not in skip:
        t0 = time.perf_counter()
        out["sweep"] = run_sweep(ns, dist=dist, torch=torch, x=x, y=y)
        phases["sweep"] = time.perf_counter() - t0
    if "allreduce" not in skip:
        sizes = set(_SMALL_SIZES) | {layer_bytes * ns.layers}
        for row in out.get("sweep", []):
            sizes |= {b.n_bytes for b in row.buckets or []}
        sizes = sorted(sizes)
        t0 = time.perf_counter()
        out["allreduce"] = AllreduceTimes(sizes, measure_allreduce(sizes, iters=ns.iters, warmup=ns.warmup,
                                                                   dist=dist, torch=torch))
        phases["allreduce"] = time.perf_counter() - t0
    if ns.check_steps > 0:
        t0 = time.perf_counter()
        out["checks"] = run_checks(ns, dist=dist, torch=torch)
        phases["checks"] = time.perf_counter() - t0
    out["seconds"] = time.perf_counter() - t_start
    dist.barrier()
    if rank == 0:
        from distlib.engines.report import emit

        emit(DDPReport(**out))


def launch(p: int = 2, *, timeout: float = 120.0, **options) -> DDPReport:
    """Run :func:`main` on ``p`` gloo ranks and return rank 0's :class:`~distlib.overlap.measure.DDPReport`.

    ``options`` are the command-line flags as keywords (``width=256``,
    ``caps=(0.25, 1, 4)``, ``check_steps=0``, ...). The run is bounded by
    ``timeout`` seconds; every process of it is stopped however it ends.
    """
    from distlib._check import check_int, check_real
    from distlib.engines import run_torch
    from distlib.engines.report import read

    p = check_int("p", p, minimum=1, maximum=8)
    timeout = check_real("timeout", timeout, minimum=0, strict_min=True)
    args = []
    known = {a.dest for a in _parser()._actions}
    for key, value in options.items():
        if key not in known:
            raise TypeError(f"unknown option {key!r}; choose from {sorted(known - {'help'})}")
        if isinstance(value, (tuple, list)):
            value = ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
        args += [f"--{key.replace('_', '-')}", str(value)]
    result = run_torch("distlib.examples.ddp_overlap:main", p, backend="gloo", args=args, timeout=timeout)
    return dataclasses.replace(read(result, DDPReport), launch_seconds=result.seconds)


# ---------------------------------------------------------------------------
# the GPU counterpart: compute on one stream, a copy on another


def _gpu_device_files() -> bool:
    """True if this machine shows an NVIDIA or AMD GPU device file (cheap, no torch import)."""
    import glob

    if not sys.platform.startswith("linux"):
        return True  # no cheap test elsewhere: ask torch
    return bool(glob.glob("/dev/nvidia[0-9]*") or os.path.exists("/dev/kfd"))


def copy_compute_overlap(*, n_bytes: int = 256 * 2**20, matmul_n: int = 4096, repeats: int = 5,
                         device=None, verbose: bool = True) -> dict:
    """Time matrix products and a host-to-device copy, one after the other and concurrently.

    The copy reads a pinned (page-locked) host buffer, so the GPU's copy
    engine moves it asynchronously while the streaming multiprocessors run
    the products on another CUDA stream. The number of products is chosen
    so that they take about as long as the copy: then overlap can at best
    halve the time (:func:`distlib.overlap_speedup_bound`).

    Without a CUDA device nothing is run: the result says so
    (``{"skipped": True, "device": "cpu", ...}``) and, with ``verbose``, a
    line "no GPU: skipped" is printed.

    Returns
    -------
    dict
        ``device`` (its name), ``compute``, ``copy``, ``serial`` and
        ``concurrent`` (seconds, medians), ``speedup`` (serial /
        concurrent), ``bound`` ((compute + copy) / max(compute, copy)),
        ``copy_bandwidth`` (bytes/s, host to device), ``matmuls``.
    """
    from distlib._check import check_int

    n_bytes = check_int("n_bytes", n_bytes, minimum=1)
    matmul_n = check_int("matmul_n", matmul_n, minimum=1)
    repeats = check_int("repeats", repeats, minimum=1)
    reason = _no_cuda_reason(device)
    if reason is not None:
        msg = f"no GPU: skipped ({reason}); nothing ran, device: cpu"
        if verbose:
            print(msg)
        return {"skipped": True, "device": "cpu", "message": msg}
    torch, _ = _torch()
    dev = torch.device(device or "cuda")
    name = torch.cuda.get_device_name(dev)
    k, t_compute, t_copy, t_serial, t_concurrent = _time_copy_and_compute(torch, dev, n_bytes=n_bytes,
                                                                          matmul_n=matmul_n, repeats=repeats)
    out = {
        "skipped": False,
        "device": name,
        "matmuls": k,
        "compute": t_compute,
        "copy": t_copy,
        "serial": t_serial,
        "concurrent": t_concurrent,
        "speedup": t_serial / t_concurrent,
        "bound": (t_compute + t_copy) / max(t_compute, t_copy),
        "copy_bandwidth": n_bytes / t_copy,
        "n_bytes": n_bytes,
    }
    if verbose:
        print(f"device: {name}; {k} bf16 matmuls of {matmul_n}x{matmul_n} vs a {n_bytes / 1e6:.0f} MB "
              f"pinned host-to-device copy")
    return out


def _no_cuda_reason(device):
    """Why :func:`copy_compute_overlap` cannot run on ``device`` (a phrase), or None when a CUDA device is there."""
    if device is not None and not str(device).startswith("cuda"):
        return f"device={device!r} is not a CUDA device"
    if not _gpu_device_files():
        return "no /dev/nvidia* or /dev/kfd"  # spares importing torch
    torch, _ = _torch()
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return None


def _cuda_timer(torch, dev, repeats: int):
    """``timed(fn)``: median seconds of ``repeats`` runs of ``fn``, the device synchronised around each."""

    def timed(fn):
        ts = []
        for _ in range(repeats + 1):  # the first run warms up
            torch.cuda.synchronize(dev)
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize(dev)
            ts.append(time.perf_counter() - t0)
        return _median(ts[1:])

    return timed


def _time_copy_and_compute(torch, dev, *, n_bytes: int, matmul_n: int, repeats: int) -> tuple:
    """``(matmuls, compute, copy, serial, concurrent)``: products sized to last as long as the copy, then timed."""
    a = torch.randn(matmul_n, matmul_n, device=dev, dtype=torch.bfloat16)
    c = torch.empty_like(a)
    host = torch.empty(n_bytes, dtype=torch.uint8, pin_memory=True)
    dst = torch.empty(n_bytes, dtype=torch.uint8, device=dev)
    s_compute, s_copy = torch.cuda.Stream(dev), torch.cuda.Stream(dev)
    timed = _cuda_timer(torch, dev, repeats)

    def compute(k):
        for _ in range(k):
            torch.matmul(a, a, out=c)

    def copy():
        dst.copy_(host, non_blocking=True)

    def on(stream, fn):
        def run():
            with torch.cuda.stream(stream):
                fn()
        return run

    t_copy = timed(on(s_copy, copy))
    t_one = timed(on(s_compute, lambda: compute(1)))
    k = max(1, round(t_copy / t_one))
    t_compute = timed(on(s_compute, lambda: compute(k)))

    def serial():
        with torch.cuda.stream(s_compute):
            compute(k)
            copy()

    def concurrent():
        with torch.cuda.stream(s_compute):
            compute(k)
        with torch.cuda.stream(s_copy):
            copy()

    return k, t_compute, t_copy, timed(serial), timed(concurrent)


if __name__ == "__main__":
    main()
