"""``python -m distlib.train``: the command line (its flags, and ``main``).

::

    python -m distlib.train --dp 2 --tp 2 --zero 1 --steps 5 --seed 0 --engine mpi --json
    python -m distlib.train --tp 2 --sp --steps 5 --json      # sequence parallelism

It checks every flag before starting anything (a bad one: one line naming
it and its range, exit status 2), starts ``dp * tp * pp`` ranks itself
(:func:`distlib.train.launch.train`), shows rank 0's progress on stderr,
and with ``--json`` prints one JSON object: ``losses``, ``param_checksum``,
``state_bytes``, ``comm_bytes``, ``step_seconds``
(:meth:`distlib.train.results.TrainResult.to_json`); with pipeline stages
(``--pp P --schedule gpipe|1f1b|interleaved --chunks V --microbatches M``)
also each stage's ``idle_seconds`` and ``busy_seconds`` and the measured
and predicted bubble (:class:`distlib.train.pipeline_results.PipelineResult`).
``--engine gloo`` runs the same ranks on torch.distributed
(:mod:`distlib.train.gloo`), pipeline stages included (their activations
and gradients through torch.distributed's point-to-point calls)::

    python -m distlib.train --pp 2 --schedule 1f1b --microbatches 4 --steps 5 --engine gloo --json
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
    parser.add_argument("--pp", type=int, default=1, help="pipeline stages (default 1)")
    parser.add_argument("--schedule", default="1f1b",
                        help="pipeline schedule: gpipe, 1f1b or interleaved (default 1f1b)")
    parser.add_argument("--chunks", type=int, default=1, help="model chunks per stage, interleaved only (default 1)")
    parser.add_argument("--microbatches", type=int, default=None,
                        help="microbatches per replica and step (default: --pp)")
    parser.add_argument("--sp", action="store_true",
                        help="sequence parallelism over the --tp ranks (Megatron-LM's --sequence-parallel): the "
                             "norms and residuals cut along the sequence, all-gathers and reduce-scatters in place "
                             "of tensor parallelism's all-reduces; --tp above 1")
    parser.add_argument("--zero", type=int, default=0, help="ZeRO stage 0 (DDP), 1, 2 or 3 (default 0)")
    parser.add_argument("--steps", type=int, default=10, help="training steps (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the parameters and the data (default 0)")
    parser.add_argument("--engine", default="mpi",
                        help=f"one of {', '.join(ENGINES)} (default mpi; gloo: the same ranks on torch.distributed)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before the run is stopped (default 300)")
    parser.add_argument("--ranks", type=int, default=None,
                        help="the number of ranks, a check: it must equal --dp times --tp times --pp")
    # A cluster on one machine (distlib.minicluster; chapter "A cluster on one machine").
    parser.add_argument("--nodes", type=int, default=None,
                        help="run across a fresh mini cluster of this many nodes (root only); the ranks are spread "
                             "evenly in rank order, so a tensor-parallel group stays inside a node when it fits")
    parser.add_argument("--link-gbit", type=float, default=None,
                        help="with --nodes: each node's link rate in Gbit/s per direction (default: unthrottled)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    return parser


def _table(result) -> str:
    pp = f" x pp {result.pp}" if hasattr(result, "pp") else ""
    lines = [f"dp {result.dp}{pp} x tp {result.tp}, zero {result.zero}, seed {result.seed}: "
             f"{len(result.state_bytes)} ranks"]  # fmt: skip
    lines += [f"step {i + 1}: loss {loss:.6f}, {sec * 1e3:.1f} ms (slowest rank)"
              for i, (loss, sec) in enumerate(zip(result.losses, result.step_seconds))]  # fmt: skip
    lines.append(f"param_checksum {result.param_checksum:.12g}")
    lines.append(f"state_bytes per rank {result.state_bytes}")
    lines.append(f"comm_bytes per rank {result.comm_bytes}")
    lines += _stage_lines(result)
    lines += _link_lines(result)
    return "\n".join(lines)


def _pipeline_flags(ns) -> dict:
    """The pipeline's flags as :func:`~distlib.train.launch.train` takes them (``--microbatches``: ``--pp``)."""
    microbatches = ns.pp if ns.microbatches is None else ns.microbatches
    return dict(schedule=ns.schedule, chunks=ns.chunks, microbatches=microbatches)


def _layout_words(flags: dict) -> str:
    """The layout, for the starting line.

    >>> _layout_words(dict(dp=1, tp=2, zero=0, pp=1, microbatches=1, sp=True))
    'dp 1 x tp 2 with sequence parallelism, zero 0'
    """
    sp = " with sequence parallelism" if flags.get("sp") else ""
    words = f"dp {flags['dp']} x tp {flags['tp']}{sp}, zero {flags['zero']}"
    if flags["pp"] > 1 or flags["microbatches"] != 1:
        words = (f"dp {flags['dp']} x pp {flags['pp']} x tp {flags['tp']}{sp}, zero {flags['zero']}, "
                 f"{flags['schedule']}, {flags['microbatches']} microbatches")  # fmt: skip
        words += f", {flags['chunks']} chunks" if flags["schedule"] == "interleaved" else ""
    return words


def _where_words(flags: dict) -> str:
    """Where the ranks run, for the starting line: nothing on one machine; the nodes and links of a mini cluster."""
    from distlib.engines.launch import link_words
    from distlib.train.launch import cluster_nodes

    nodes = cluster_nodes(flags["nodes"], flags["link_gbit"])
    if nodes is None:
        return ""
    rate = link_words(flags["link_gbit"])
    per = flags["dp"] * flags["tp"] * flags["pp"] // nodes
    return (f", across a mini cluster of {nodes} node{'' if nodes == 1 else 's'} "
            f"({per} rank{'' if per == 1 else 's'} each, {rate})")


def _link_lines(result) -> list:
    """What each node's link carried (a run across a mini cluster only)."""
    if result.nodes is None:
        return []
    return [f"link of {node}: {n:,} bytes sent and received" for node, n in result.link_bytes.items()]


def _stage_lines(result) -> list:
    """Per stage, the measured idle and busy seconds; the measured and predicted bubble (pipelines only)."""
    if not hasattr(result, "idle_seconds"):
        return []
    lines = [f"stage {s}: idle {idle * 1e3:.2f} ms (predicted {want * 1e3:.2f} ms), busy {busy * 1e3:.2f} ms per step"
             for s, (idle, want, busy) in enumerate(zip(result.idle_seconds, result.predicted_idle_seconds,
                                                        result.busy_seconds))]  # fmt: skip
    lines.append(f"bubble: measured {result.measured_bubble:.3f}, predicted {result.predicted_bubble:.3f} "
                 "(dl.pipeline_schedule with the measured forward and backward times)")  # fmt: skip
    return lines


def main(argv=None) -> int:
    """Command line entry point; returns the exit status (:data:`distlib.engines.launch.EXIT_STATUS`)."""
    from distlib.engines.launch import RunError, exit_status, failure_report
    from distlib.engines.report import ReportError, strip

    ns = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    flags = dict(dp=ns.dp, tp=ns.tp, pp=ns.pp, zero=ns.zero, steps=ns.steps, seed=ns.seed, engine=ns.engine,
                 timeout=ns.timeout, ranks=ns.ranks, nodes=ns.nodes, link_gbit=ns.link_gbit, sp=ns.sp)  # fmt: skip
    flags.update(_pipeline_flags(ns))
    try:
        from distlib.train.launch import check_layout

        check_layout(**flags)
        print(f"{PROG}: starting {ns.dp * ns.tp * ns.pp} {_ENGINE_WORDS[ns.engine]} ranks ({_layout_words(flags)}), "
              f"{ns.steps} steps{_where_words(flags)}", file=sys.stderr, flush=True)  # fmt: skip
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
