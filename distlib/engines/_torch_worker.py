"""Entry point of one torch.distributed rank started by :func:`distlib.engines.run_torch`.

``python -m distlib.engines._torch_worker TARGET [ARGS...]`` where TARGET is
``package.module:function``, ``package.module`` or ``path/to/script.py``.
An uncaught exception prints its traceback and ends the process with status
1 at once (``os._exit``), without waiting in interpreter shutdown for peers
that may be gone; the launcher then stops the other ranks. A rank that ends
well meets its peers at a barrier, takes the process group down and leaves
the same way, with status 0.
"""

from __future__ import annotations

import importlib
import os
import runpy
import sys
import traceback


def _run(target: str, args: list) -> None:
    sys.argv = [target, *args]
    if target.endswith(".py"):
        runpy.run_path(target, run_name="__main__")
    elif ":" in target:
        module, _, name = target.partition(":")
        fn = getattr(importlib.import_module(module), name)
        fn()
    else:
        runpy.run_module(target, run_name="__main__", alter_sys=True)


def _shutdown() -> None:
    """Every rank at the end together, then the process group taken down (a rank that tore it down while a peer
    still sent to it left that peer's gloo threads to die with the process)."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        try:
            dist.barrier()
        except RuntimeError:  # a peer is gone: nothing to wait for
            pass
        dist.destroy_process_group()


def main() -> None:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)
    target, args = sys.argv[1], sys.argv[2:]
    rank = os.environ.get("RANK", "?")
    try:
        _run(target, args)
        _shutdown()
        # Done, the report written: leave without the interpreter's finalization, in which threads of torch's
        # (gloo's, and a CUDA build's) could still be joined or torn down and abort the process ("terminate
        # called without an active exception", seen on Colab's Python 3.12 with PyPI's torch).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    except SystemExit as exc:
        # sys.exit() inside the target: leave at once with that status. Normal
        # interpreter shutdown could block in the process group's teardown
        # while the other ranks are still inside a collective.
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    except BaseException:
        sys.stdout.flush()
        print(f"[rank {rank}] uncaught exception in {target}:", file=sys.stderr)
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)


if __name__ == "__main__":
    main()
