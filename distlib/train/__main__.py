"""``python -m distlib.train``: the command line (its flags, and ``main``).

::

    python -m distlib.train --dp 2 --tp 2 --zero 1 --steps 5 --seed 0 --engine mpi --json

It checks every flag before starting anything (a bad one: one line naming
it and its range, exit status 2), starts ``dp * tp`` ranks itself
(:func:`distlib.train.launch.train`), shows rank 0's progress on stderr,
and with ``--json`` prints one JSON object: ``losses``, ``param_checksum``,
``state_bytes``, ``comm_bytes``, ``step_seconds``
(:meth:`distlib.train.results.TrainResult.to_json`). ``--engine gloo`` runs
the same ranks on torch.distributed (:mod:`distlib.train.gloo`). ``--pp``
above 1 is not built yet and says so.
"""

from __future__ import annotations

import argparse
import json
import sys

from distlib.train.launch import ENGINES, train

__all__ = ["main"]

PROG = "python -m distlib.train"
_ENGINE_WORDS = {"mpi": "MPI", "gloo": "torch.distributed (gloo)"}


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad flag is one line (the flag and what it wants) and status 2, without the usage text."""

    def error(self, message):
        print(f"{PROG}: {message}", file=sys.stderr)
        sys.exit(2)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Train the book's small transformer with a parallel layout on real ranks.")
    parser.add_argument("--dp", type=int, default=1, help="data-parallel ranks (default 1)")
    parser.add_argument("--tp", type=int, default=1, help="tensor-parallel ranks (default 1)")
    parser.add_argument("--pp", type=int, default=1, help="pipeline stages: 1 only (pipelines are not yet built)")
    parser.add_argument("--zero", type=int, default=0, help="ZeRO stage 0 (DDP), 1, 2 or 3 (default 0)")
    parser.add_argument("--steps", type=int, default=10, help="training steps (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the parameters and the data (default 0)")
    parser.add_argument("--engine", default="mpi",
                        help=f"one of {', '.join(ENGINES)} (default mpi; gloo: the same ranks on torch.distributed)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before the run is stopped (default 300)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    return parser


def _table(result) -> str:
    lines = [f"dp {result.dp} x tp {result.tp}, zero {result.zero}, seed {result.seed}: "
             f"{len(result.state_bytes)} ranks"]  # fmt: skip
    lines += [f"step {i + 1}: loss {loss:.6f}, {sec * 1e3:.1f} ms (slowest rank)"
              for i, (loss, sec) in enumerate(zip(result.losses, result.step_seconds))]  # fmt: skip
    lines.append(f"param_checksum {result.param_checksum:.12g}")
    lines.append(f"state_bytes per rank {result.state_bytes}")
    lines.append(f"comm_bytes per rank {result.comm_bytes}")
    return "\n".join(lines)


def main(argv=None) -> int:
    """Command line entry point; returns the exit status (:data:`distlib.engines.launch.EXIT_STATUS`)."""
    from distlib.engines.launch import RunError, exit_status, failure_report
    from distlib.engines.report import ReportError, strip

    ns = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    flags = dict(dp=ns.dp, tp=ns.tp, pp=ns.pp, zero=ns.zero, steps=ns.steps, seed=ns.seed, engine=ns.engine,
                 timeout=ns.timeout)  # fmt: skip
    try:
        from distlib.train.launch import check_layout

        check_layout(**flags)
        print(f"{PROG}: starting {ns.dp * ns.tp} {_ENGINE_WORDS[ns.engine]} ranks (dp {ns.dp} x tp {ns.tp}, "
              f"zero {ns.zero}), {ns.steps} steps", file=sys.stderr, flush=True)  # fmt: skip
        result = train(**flags)
    except ValueError as exc:
        if isinstance(exc, ReportError):  # the ranks ran, but one handed back no report
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 1
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except (RunError, KeyboardInterrupt) as exc:
        print(failure_report(exc, PROG), file=sys.stderr, flush=True)
        return exit_status(exc)
    sys.stderr.write(strip(result.log))
    print(json.dumps(result.to_json()) if ns.json else _table(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
