"""PyTorch's own context parallelism beside the book's ring attention (chapter 14; ``scripts/gpu_check.sh``).

::

    python -m distlib.examples.context_parallel_torch --device cuda      # on a machine with a CUDA GPU
    python -m distlib.examples.context_parallel_torch --device cpu       # says why it cannot run there

Two checks, each printing one line:

1. **sdpa**: one process. ``torch.nn.functional.scaled_dot_product_attention`` (causal, float64, on the CPU),
   forward and backward through autograd, beside :func:`distlib.context_parallel.ring_attention` on the same
   arrays over ``--cp`` simulated ranks (the zig-zag split): they agree to rounding. Runs wherever torch does.
2. **context_parallel**: ``--cp`` torch.distributed ranks on one device run
   ``torch.distributed.tensor.experimental.context_parallel``: it shards the query, key, value and output
   gradient along the sequence with its head-tail load balancer (Llama 3's zig-zag chunks), patches
   ``scaled_dot_product_attention`` into ring attention over the ranks, and
   ``context_parallel_unshard`` gathers the output and the gradients back; they are compared with the
   book's ring on the same arrays (NumPy, float64). On one GPU the ranks share it, over gloo; where that
   backend cannot move CUDA tensors, over NCCL with ``NCCL_MULTI_RANK_GPU_ENABLE=1`` (NCCL 2.30 and
   later); failing both, one rank (the context still patches SDPA, the ring has one block). On the CPU
   PyTorch has no sharding strategy for ``aten._scaled_dot_product_flash_attention_for_cpu``, so the
   check says so and exits 3.

Exit status: 0 both agree within the tolerance (float32 on CUDA: relative 1e-4; float64: 1e-10), 1 they
do not (or a run failed), 3 context parallelism cannot run on this device (the line says why).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

__all__ = ["NO_CP_ON_THIS_DEVICE", "TOLERANCE", "inputs", "book_reference", "relative_error", "sdpa_beside_book",
           "rank_main", "main"]

NO_CP_ON_THIS_DEVICE = 3
"""Exit status: torch's context parallelism does not run on this device."""
TOLERANCE = {"float32": 1e-4, "float64": 1e-10}
"""Largest relative difference accepted, by the torch side's dtype."""
_UNSUPPORTED = "does not have a sharding strategy registered"


def inputs(*, seq: int, heads: int, dim: int, seed: int = 0) -> tuple:
    """``(q, k, v, grad_output)``: float64 arrays ``(1, heads, seq, dim)`` drawn from ``seed``, the same everywhere.

    >>> [a.shape for a in inputs(seq=8, heads=2, dim=4)]
    [(1, 2, 8, 4), (1, 2, 8, 4), (1, 2, 8, 4), (1, 2, 8, 4)]
    """
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((1, heads, seq, dim)) for _ in range(4))


def book_reference(q, k, v, grad_output, *, cp: int) -> tuple:
    """``(out, dq, dk, dv)`` of the book's ring attention over ``cp`` simulated ranks (zig-zag), float64."""
    from ..context_parallel import ring_attention

    r = ring_attention(q, k, v, cp=cp, grad_output=grad_output)
    return r.output, r.dq, r.dk, r.dv


def relative_error(mine, reference) -> float:
    """``max |mine - reference| / max |reference|``.

    >>> relative_error(np.array([1.0, 2.0]), np.array([1.0, 4.0]))
    0.5
    """
    mine, reference = np.asarray(mine, dtype=float), np.asarray(reference, dtype=float)
    return float(np.max(np.abs(mine - reference)) / max(np.max(np.abs(reference)), 1e-300))


def sdpa_beside_book(*, cp: int = 4, seq: int = 64, heads: int = 2, dim: int = 8, seed: int = 0) -> dict:
    """torch's causal SDPA (float64, CPU, autograd) beside the book's ring: the relative errors, by name.

    Raises
    ------
    ImportError
        torch is not installed.
    """
    import torch
    import torch.nn.functional as F

    arrays = inputs(seq=seq, heads=heads, dim=dim, seed=seed)
    q, k, v = (torch.tensor(a, requires_grad=True) for a in arrays[:3])
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    out.backward(torch.tensor(arrays[3]))
    book = book_reference(*arrays, cp=cp)
    mine = (out.detach().numpy(), q.grad.numpy(), k.grad.numpy(), v.grad.numpy())
    return {name: relative_error(a, b) for name, a, b in zip(("out", "dq", "dk", "dv"), mine, book)}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m distlib.examples.context_parallel_torch",
                                     description="torch's context_parallel beside the book's ring attention")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--cp", type=int, default=2, help="context-parallel ranks (default 2)")
    parser.add_argument("--seq", type=int, default=256, help="tokens (a multiple of 2 x cp; default 256)")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--dim", type=int, default=32, help="head dimension (default 32)")
    parser.add_argument("--dtype", choices=tuple(TOLERANCE), default=None,
                        help="torch side's dtype (default float32 on CUDA, float64 on the CPU)")
    parser.add_argument("--timeout", type=float, default=300.0)
    return parser


def _context_parallel_run(torch, arrays, mesh, dtype, device) -> list:
    """Shard, run causal SDPA forward and backward under ``context_parallel``, unshard: NumPy float64 arrays."""
    import torch.nn.functional as F
    from torch.distributed.tensor.experimental import context_parallel
    from torch.distributed.tensor.experimental._attention import context_parallel_unshard

    q, k, v, g = (torch.tensor(a, dtype=dtype, device=device) for a in arrays)
    with context_parallel(mesh, buffers=[q, k, v, g], buffer_seq_dims=[2, 2, 2, 2], no_restore_buffers={q, k, v, g}):
        leaves = [x.detach().clone().requires_grad_() for x in (q, k, v)]
        out = F.scaled_dot_product_attention(*leaves, is_causal=True)
        out.backward(g)
    whole = context_parallel_unshard(mesh, [out.detach(), *(x.grad for x in leaves)], [2, 2, 2, 2])
    return [x.double().cpu().numpy() for x in whole]


def rank_main() -> None:
    """One rank of the context_parallel check (started by :func:`main` through :func:`distlib.engines.run_torch`)."""
    ns = _parser().parse_args(sys.argv[1:])
    from ..engines.torch_dist import init

    comm = init()
    import torch
    from torch.distributed.device_mesh import init_device_mesh

    device = torch.device("cuda", 0) if ns.device == "cuda" else torch.device("cpu")
    if ns.device == "cuda":
        torch.cuda.set_device(0)
    dtype = getattr(torch, ns.dtype or ("float32" if ns.device == "cuda" else "float64"))
    arrays = inputs(seq=ns.seq, heads=ns.heads, dim=ns.dim)
    mesh = init_device_mesh(ns.device, (comm.size,))
    try:
        got = _context_parallel_run(torch, arrays, mesh, dtype, device)
    except Exception as exc:  # noqa: BLE001 - the one known limit is reported, anything else re-raised
        if _UNSUPPORTED in str(exc):
            line = str(exc).strip().splitlines()[0]
            print(f"context_parallel cannot run on {ns.device}: {line[:160]}", flush=True)
            sys.stdout.flush()
            os._exit(NO_CP_ON_THIS_DEVICE)
        raise
    if comm.rank == 0:
        book = book_reference(*arrays, cp=ns.cp)
        errors = {name: relative_error(a, b) for name, a, b in zip(("out", "dq", "dk", "dv"), got, book)}
        worst = max(errors.values())
        ok = worst <= TOLERANCE[str(dtype).split(".")[-1]]
        words = ", ".join(f"{k} {e:.1e}" for k, e in errors.items())
        print(f"context_parallel on {comm.size} {ns.device} rank(s) ({comm.engine}, {str(dtype).split('.')[-1]}) "
              f"beside the book's ring at cp {ns.cp}: relative differences {words}: "
              f"{'equal to rounding' if ok else 'NOT EQUAL'}", flush=True)
        if not ok:
            sys.stdout.flush()
            os._exit(1)


def _attempts(ns) -> list:
    """``(ranks, backend, env, words)`` to try in turn: the ranks sharing one device over gloo, then NCCL."""
    if ns.device == "cpu":
        return [(ns.cp, "gloo", {}, "gloo")]
    return [(ns.cp, "gloo", {}, "gloo on CUDA tensors"),
            (ns.cp, "nccl", {"NCCL_MULTI_RANK_GPU_ENABLE": "1"}, "NCCL, several ranks on one GPU"),
            (1, "nccl", {}, "NCCL, one rank")]


def main(argv=None) -> int:
    """Run both checks; the exit status as the module's docstring says."""
    ns = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        errors = sdpa_beside_book(cp=ns.cp, seq=ns.seq, heads=ns.heads, dim=ns.dim)
    except ImportError as exc:
        print(f"sdpa: torch is not installed ({exc}); pip install torch")
        return 1
    words = ", ".join(f"{k} {e:.1e}" for k, e in errors.items())
    print(f"sdpa: torch's scaled_dot_product_attention (float64, CPU) beside the book's ring at cp {ns.cp}: {words}")
    if max(errors.values()) > TOLERANCE["float64"]:
        return 1
    from ..engines.launch import run_torch

    args = [a for a in (sys.argv[1:] if argv is None else argv)]
    failures = []
    for ranks, backend, env, words in _attempts(ns):
        result = run_torch("distlib.examples.context_parallel_torch:rank_main", ranks, backend=backend, args=args,
                           timeout=ns.timeout, env=env, check=False)
        lines = [line for out in result.stdout for line in out.splitlines() if line.strip()]
        if all(rc == NO_CP_ON_THIS_DEVICE for rc in result.returncodes):
            print(lines[0] if lines else f"context_parallel cannot run on {ns.device}")
            return NO_CP_ON_THIS_DEVICE
        if all(rc == 0 for rc in result.returncodes):
            print(lines[-1] if lines else "context_parallel: no output")
            return 0
        last = (result.stderr[0].strip().splitlines() or ["no message"])[-1] if result.stderr else "no message"
        failures.append(f"{words}: exit {sorted(set(result.returncodes))}, {last[:160]}")
        if any(rc == 1 for rc in result.returncodes) and lines and "NOT EQUAL" in lines[-1]:
            print(lines[-1])
            return 1
    print("context_parallel: every way failed: " + "; ".join(failures))
    return 1


if __name__ == "__main__":
    sys.exit(main())
