"""All-reduce of CUDA tensors with NCCL -- or an explanation of why not here.

::

    python -m distlib.examples.nccl_allreduce          # launches itself
    distlib.engines.run_torch("distlib.examples.nccl_allreduce:main", 2, backend="nccl")

NCCL runs one rank per GPU. What this example does depends on the machine:

* **No CUDA GPU** (or a CPU-only PyTorch): it says so and skips. Nothing
  else can stand in for NCCL; the gloo chapters cover CPU collectives.
* **Fewer GPUs than ranks** (e.g. one GPU, two ranks): NCCL refuses by
  default to put two ranks of one communicator on the same device -- up to
  2.29 its initialisation fails with ``Duplicate GPU detected``; 2.30 says
  "Multiple ranks detected using the same GPU" unless
  ``NCCL_MULTI_RANK_GPU_ENABLE=1`` (and then runs without NVLS) -- so the example explains that and
  runs the same all-reduce over **gloo on the CUDA tensors** (gloo copies
  them through host memory). ``--try-nccl`` attempts NCCL anyway and
  prints the error it gives.
* **One GPU per rank**: NCCL's own ``all_reduce`` and the book's ring
  (``distlib.engines.allreduce`` over NCCL send/recv) on a 64 MiB float32
  buffer, both checked and timed, bus bandwidth printed.

Rank 0 also hands back what ran, typed: one :class:`NcclRun` report line
(:mod:`distlib.engines.report`), which :func:`main` returns when it
launched the ranks (``None`` where nothing ran).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field

__all__ = ["NcclTiming", "NcclRun", "SKIP", "as_rank", "main"]

SKIP = "no CUDA GPU is visible to PyTorch: NCCL needs one GPU per rank, so the NCCL example is skipped"


@dataclass(frozen=True)
class NcclTiming:
    """One all-reduce timed on the GPUs: ``name`` (``"builtin"`` or ``"ring"``), median seconds, busbw (bytes/s)."""

    name: str
    device: str
    n_bytes: int
    seconds: float
    busbw: float
    correct: bool


@dataclass(frozen=True)
class NcclRun:
    """What ran: ``p`` ranks on ``gpus`` GPUs over ``backend`` (``"nccl"``, or ``"gloo"`` on too few GPUs).

    ``error`` is NCCL's refusal when ``--try-nccl`` forced it onto too few
    GPUs (then nothing was timed); ``small_sum`` the result of a small
    all-reduce of ``rank + 1`` (``expected``: ``p (p + 1) / 2``).
    """

    p: int
    gpus: int
    backend: str
    error: str | None = None
    small_sum: float | None = None
    expected: float | None = None
    timings: list[NcclTiming] = field(default_factory=list)


def _emit(rank: int, run: NcclRun) -> None:
    if rank == 0:
        from distlib.engines.report import emit

        emit(run)


def _gpus() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def as_rank(mib: float, try_nccl: bool) -> None:
    import torch
    import torch.distributed as dist

    from distlib.engines import algorithms, torch_dist
    from distlib.collectives import bus_bandwidth

    rank = int(os.environ["RANK"])
    p = int(os.environ["WORLD_SIZE"])
    gpus = _gpus()
    say = (lambda *a: print(*a, flush=True)) if rank == 0 else (lambda *a: None)
    if gpus == 0:
        say(SKIP)
        return
    backend = "nccl"
    if p > gpus and not try_nccl:
        backend = "gloo"
        say(
            f"{p} ranks but {gpus} GPU(s): NCCL refuses two ranks of one communicator on the same GPU by default "
            "('Duplicate GPU detected' up to NCCL 2.29; from 2.30 unless NCCL_MULTI_RANK_GPU_ENABLE=1), "
            "so this run uses gloo on the CUDA tensors instead."
        )
    device = torch.device("cuda", rank % gpus)
    torch.cuda.set_device(device)
    try:
        comm = torch_dist.init(backend)
        x = torch.full((4,), float(rank + 1), device=device)
        dist.all_reduce(x)
        torch.cuda.synchronize()
    except Exception as exc:  # the --try-nccl path on too few GPUs ends here
        say(f"NCCL failed as expected with {p} ranks on {gpus} GPU(s): {type(exc).__name__}: {str(exc)[:300]}")
        _emit(rank, NcclRun(p, gpus, backend, error=f"{type(exc).__name__}: {str(exc)[:300]}"))
        os._exit(0)
    say(f"{p} ranks on {gpus} GPU(s), backend {comm.engine}; small all-reduce gives {x[0].item():g} (expected {p * (p + 1) / 2:g})")

    count = int(mib * 2**20) // 4
    want = p * (p + 1) / 2
    timings = []
    for name in ("builtin", "ring"):
        buf = torch.full((count,), float(rank + 1), device=device)
        if name == "ring" and comm.engine != "nccl":
            buf = buf.cpu()  # gloo's send/recv move host tensors; stage once, outside the timing
        algorithms.allreduce(comm, buf, algorithm=name)  # warm-up and check
        ok = bool(torch.all(buf == want))
        times = []
        for _ in range(5):
            buf.fill_(float(rank + 1))
            comm.barrier()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            algorithms.allreduce(comm, buf, algorithm=name)
            torch.cuda.synchronize()  # NCCL returns once the work is queued: wait for the GPU
            times.append(time.perf_counter() - t0)
        seconds = sorted(times)[len(times) // 2]
        timings.append(NcclTiming(name, buf.device.type, count * 4, seconds,
                                  bus_bandwidth("allreduce", count * 4, p, seconds), ok))
        say(
            f"{name:>8} all-reduce of {mib:g} MiB ({buf.device.type}): {seconds * 1e3:.2f} ms, "
            f"busbw {bus_bandwidth('allreduce', count * 4, p, seconds) / 1e9:.1f} GB/s, correct: {ok}"
        )
        if not ok:
            sys.exit(1)
    _emit(rank, NcclRun(p, gpus, comm.engine, small_sum=float(x[0].item()), expected=want, timings=timings))


def main(argv=None) -> NcclRun | None:
    parser = argparse.ArgumentParser(prog="python -m distlib.examples.nccl_allreduce")
    parser.add_argument("-n", type=int, default=None, help="ranks when launching (default: one per GPU, at least 2)")
    parser.add_argument("--mib", type=float, default=64.0)
    parser.add_argument("--try-nccl", action="store_true", help="use NCCL even with more ranks than GPUs, to see its error")
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if "RANK" in os.environ:
        as_rank(ns.mib, ns.try_nccl)
        return None
    gpus = _gpus()
    if gpus == 0:
        print(SKIP, flush=True)
        return None
    from distlib.engines.launch import run_torch
    from distlib.engines.report import read, strip

    n = ns.n or max(2, gpus)
    args = ["--mib", str(ns.mib)] + (["--try-nccl"] if ns.try_nccl else [])
    result = run_torch("distlib.examples.nccl_allreduce:main", n, backend="nccl", args=args, timeout=180)
    print(strip(str(result)))
    return read(result, NcclRun)


if __name__ == "__main__":
    main()
