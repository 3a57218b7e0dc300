"""Measure your own machine: its matrix-multiply rate and its memory bandwidth.

The roofline chapter ends by putting the reader's own computer under its
roof. Two small benchmarks give the two numbers a roofline needs:

* :func:`measure_matmul_flops` times an ``n x n`` matrix product
  (``2 n^3`` FLOP) and reports FLOP/s;
* :func:`measure_memory_bandwidth` times a copy of a large array (read once,
  written once: ``2 * n_bytes`` of traffic) and reports bytes/s.

On the CPU they use NumPy (whose BLAS runs the product on every core); on an
NVIDIA GPU, when PyTorch is installed and ``torch.cuda.is_available()``,
they use torch (imported only then). Each takes the **median** of
``repeats`` timed runs after one untimed warm-up, so one slow run (another
process, a frequency change) does not decide the answer. The numbers are
what this machine did just now, not a peak: compare them with the roofline,
never assert them in a test.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ._check import check_choice, check_int, check_real
from .roofline import Roof

__all__ = ["Measurement", "measure_matmul_flops", "measure_memory_bandwidth", "machine_roof",
           "describe_cpu", "gpu_available"]


@dataclass(frozen=True)
class Measurement:
    """One benchmark's result.

    Attributes
    ----------
    value : float
        The median rate: FLOP/s for a matmul, bytes/s for a copy.
    unit : str
        ``"FLOP/s"`` or ``"B/s"``.
    device : str
        What ran it, e.g. ``"CPU: AMD EPYC 7B13 (2 logical cores)"`` or
        ``"GPU: NVIDIA H200"``.
    method : str
        How it was measured (library, operation, size, dtype, repeats).
    seconds : tuple of float
        Every timed run.
    work : float
        FLOP (matmul) or bytes moved (copy) per run.
    details : dict
        Extras: BLAS library and threads where known, dtype, size.
    """

    value: float
    unit: str
    device: str
    method: str
    seconds: tuple
    work: float
    details: dict = field(default_factory=dict)

    @property
    def median_seconds(self) -> float:
        return statistics.median(self.seconds)

    @property
    def intensity(self) -> float:
        """FLOP per byte of ideal memory traffic of the benchmarked operation.

        A matmul of ``n x n`` matrices reads two and writes one:
        ``2 n^3 / (3 n^2 * itemsize)``. A copy does no arithmetic: 0.
        """
        if self.unit != "FLOP/s":
            return 0.0
        n = self.details["n"]
        itemsize = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2}[self.details["dtype"]]
        return 2.0 * n**3 / (3.0 * n * n * itemsize)

    @property
    def best(self) -> float:
        """The rate of the fastest run (an optimistic estimate)."""
        return self.work / min(self.seconds)

    def __str__(self) -> str:
        from .fmt import si

        return f"{si(self.value, self.unit)} on {self.device} ({self.method})"


def gpu_available() -> bool:
    """True when PyTorch is importable and sees a CUDA device.

    On Linux without an NVIDIA driver (no ``/proc/driver/nvidia``) this
    answers False without importing torch, which takes seconds.
    """
    if (sys.platform.startswith("linux") and "torch" not in sys.modules
            and not os.path.exists("/proc/driver/nvidia")):
        return False
    try:
        import torch
    except ImportError:
        return False
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # a broken driver install
        return False


def describe_cpu() -> str:
    """A short description of this machine's CPU."""
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    model = model or platform.processor() or platform.machine() or "unknown CPU"
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"CPU: {model} ({n} logical {'core' if n == 1 else 'cores'} available)"


def _blas_details() -> dict:
    """BLAS library and thread count: from threadpoolctl if installed, else NumPy's build info."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        threadpool_info = None
    if threadpool_info is not None:
        pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
        if pools:
            p = pools[0]
            return {"blas": f"{p.get('internal_api')} {p.get('version') or ''}".strip(),
                    "blas_threads": p.get("num_threads")}
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        name = f"{blas.get('name', '')} {blas.get('version', '')}".strip()
        return {"blas": name or "unknown"} if name else {}
    except Exception:
        return {}


def _resolve_device(device) -> str:
    if device is None:
        return "cuda" if gpu_available() else "cpu"
    device = check_choice("device", device, ["cpu", "cuda"])
    if device == "cuda" and not gpu_available():
        raise RuntimeError("device='cuda' needs PyTorch with a CUDA GPU (pip install torch); none was found")
    return device


def _time_runs(fn, repeats, sync=None) -> list[float]:
    fn()  # warm-up: first-touch page faults, BLAS thread start-up, CUDA kernels
    if sync:
        sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append(time.perf_counter() - t0)
    return times


def measure_matmul_flops(n=None, repeats=5, device=None, *, dtype=None) -> Measurement:
    """FLOP/s of an ``n x n`` by ``n x n`` matrix product on this machine.

    Parameters
    ----------
    n : int, optional
        Matrix size (>= 16). Default 512 on the CPU (about 270 MFLOP a run,
        a few milliseconds on two cores), 8192 on a GPU.
    repeats : int
        Timed runs (>= 1); the median is reported.
    device : {None, "cpu", "cuda"}
        ``None`` picks the GPU when torch sees one, else the CPU.
    dtype : str, optional
        ``"float32"`` (CPU default; NumPy has no bfloat16) or, on a GPU,
        ``"bfloat16"`` (GPU default), ``"float16"``, ``"float32"``.

    Returns
    -------
    Measurement
        ``value`` in FLOP/s (``2 n^3`` per run over the median time).
    """
    device = _resolve_device(device)
    repeats = check_int("repeats", repeats, minimum=1)
    if device == "cpu":
        n = check_int("n", 512 if n is None else n, minimum=16)
        dtype = check_choice("dtype", dtype or "float32", ["float32", "float64"])
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n)).astype(dtype)
        b = rng.standard_normal((n, n)).astype(dtype)
        out = np.empty((n, n), dtype=dtype)
        times = _time_runs(lambda: np.matmul(a, b, out=out), repeats)
        details = {"n": n, "dtype": dtype, **_blas_details()}
        blas = details.get("blas", "NumPy BLAS")
        method = f"numpy.matmul {n}x{n} {dtype} ({blas}), median of {repeats}"
        dev = describe_cpu()
    else:
        import torch

        n = check_int("n", 8192 if n is None else n, minimum=16)
        dtype = check_choice("dtype", dtype or "bfloat16", ["bfloat16", "float16", "float32"])
        tdtype = getattr(torch, dtype)
        a = torch.randn(n, n, device="cuda", dtype=tdtype)
        b = torch.randn(n, n, device="cuda", dtype=tdtype)
        out = torch.empty(n, n, device="cuda", dtype=tdtype)
        times = _time_runs(lambda: torch.matmul(a, b, out=out), repeats, sync=torch.cuda.synchronize)
        details = {"n": n, "dtype": dtype, "torch": torch.__version__}
        method = f"torch.matmul {n}x{n} {dtype} on CUDA, median of {repeats}"
        dev = f"GPU: {torch.cuda.get_device_name()}"
    work = 2.0 * n**3
    return Measurement(work / statistics.median(times), "FLOP/s", dev, method, tuple(times), work, details)


def measure_memory_bandwidth(n_bytes=None, repeats=5, device=None) -> Measurement:
    """Bytes/s of copying an ``n_bytes`` array into another (read + write).

    Parameters
    ----------
    n_bytes : int, optional
        Size of the array copied (>= 1 MiB), rounded down to whole float32s.
        Default 32 MiB on the CPU (larger than most caches), 1 GiB on a GPU.
    repeats : int
        Timed runs (>= 1); the median is reported.
    device : {None, "cpu", "cuda"}
        ``None`` picks the GPU when torch sees one, else the CPU.

    Returns
    -------
    Measurement
        ``value`` in bytes/s, counting ``2 * n_bytes`` per copy (each byte is
        read once and written once; a CPU's write-allocate reads that are
        not counted make this a slight underestimate of the bus traffic).
    """
    device = _resolve_device(device)
    repeats = check_int("repeats", repeats, minimum=1)
    default = 32 * 2**20 if device == "cpu" else 2**30
    n_bytes = int(check_real("n_bytes", default if n_bytes is None else n_bytes, minimum=2**20))
    count = n_bytes // 4
    n_bytes = count * 4
    if device == "cpu":
        src = np.ones(count, dtype=np.float32)
        dst = np.zeros_like(src)
        times = _time_runs(lambda: np.copyto(dst, src), repeats)
        method = f"numpy.copyto of {n_bytes / 2**20:.0f} MiB float32, median of {repeats}"
        dev = describe_cpu()
        details = {"n_bytes": n_bytes}
    else:
        import torch

        src = torch.ones(count, device="cuda", dtype=torch.float32)
        dst = torch.empty_like(src)
        times = _time_runs(lambda: dst.copy_(src), repeats, sync=torch.cuda.synchronize)
        method = f"torch copy_ of {n_bytes / 2**20:.0f} MiB float32 on CUDA, median of {repeats}"
        dev = f"GPU: {torch.cuda.get_device_name()}"
        details = {"n_bytes": n_bytes, "torch": torch.__version__}
    work = 2.0 * n_bytes
    return Measurement(work / statistics.median(times), "B/s", dev, method, tuple(times), work, details)


def machine_roof(flops: Measurement, bandwidth: Measurement, *, name=None) -> Roof:
    """A :class:`~distlib.roofline.Roof` from two measurements, to plot next to the vendors' roofs."""
    if flops.unit != "FLOP/s" or bandwidth.unit != "B/s":
        raise ValueError("machine_roof needs a FLOP/s measurement and a B/s measurement, in that order")
    return Roof(name or f"this machine ({flops.device})", flops.value, bandwidth.value)
