"""``python -m distlib.train``: the command line (its flags, and ``main``).

::

    python -m distlib.train --dp 2 --tp 2 --zero 1 --steps 5 --seed 0 --engine mpi --json
    python -m distlib.train --tp 2 --sp --steps 5 --json      # sequence parallelism

The layout's flags are :class:`distlib.layout.Layout`'s
(:meth:`~distlib.layout.Layout.add_arguments`, the definition the ranks
parse too); the model's size has flags of its own (``--hidden``,
``--layers``, ``--seq``, ``--heads``, ``--vocab``, ``--batch``; the book's
small model by default). It checks every flag before starting anything (a
bad one: one line naming it and its range, exit status 2), starts the
layout's ranks itself (:func:`distlib.train.launch.train`), shows rank 0's
progress on stderr, and with ``--json`` prints one JSON object:
``losses``, ``param_checksum``, ``state_bytes``, ``comm_bytes``,
``step_seconds`` (:meth:`distlib.train.results.TrainResult.to_json`); with
experts (``--experts E --top-k K [--capacity-factor F] [--ep P]``) also
``tokens_per_expert`` and ``dropped_tokens`` per step; with
pipeline stages (``--pp P --schedule gpipe|1f1b|interleaved --chunks V
--microbatches M``) also each stage's ``idle_seconds`` and ``busy_seconds``
and the measured and predicted bubble. ``--engine gloo`` runs the same
rank program on torch.distributed (:mod:`distlib.train.rank`), pipeline
stages included (their activations and gradients through
torch.distributed's point-to-point calls)::

    python -m distlib.train --pp 2 --schedule 1f1b --microbatches 4 --steps 5 --engine gloo --json
"""

from __future__ import annotations

import argparse
import json
import sys

from dataclasses import fields

from distlib.layout import Layout
from distlib.train.launch import ENGINES, train
from distlib.train.model import Config
from distlib.train.rank import add_config_arguments, config_flag

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
    Layout.add_arguments(parser)  # the layout's flags: the one definition the ranks parse too
    parser.add_argument("--steps", type=int, default=10, help="training steps (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the parameters and the data (default 0)")
    parser.add_argument("--engine", default="mpi",
                        help=f"one of {', '.join(ENGINES)} (default mpi; gloo: the same ranks on torch.distributed)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before the run is stopped (default 300)")
    parser.add_argument("--ranks", type=int, default=None,
                        help="the number of ranks, a check: it must equal the layout's (--dp times --tp times --pp)")
    add_config_arguments(parser, helps=True)  # the model's size (the book's small model by default), its experts
    # A cluster on one machine (distlib.minicluster; chapter "A cluster on one machine").
    parser.add_argument("--nodes", type=int, default=None,
                        help="run across a fresh mini cluster of this many nodes (root only); the ranks are spread "
                             "evenly in rank order, so a tensor-parallel group stays inside a node when it fits")
    parser.add_argument("--link-gbit", type=float, default=None,
                        help="with --nodes: each node's link rate in Gbit/s per direction (default: unthrottled)")
    parser.add_argument("--overlap", default="none",
                        help="communication run under computation: none (default), all (every kind the layout has), "
                             "or a comma-separated list of prefetch (ZeRO-3's all-gathers), buckets (gradients "
                             "reduced during the backward pass), tp (tensor parallelism's backward sums under the "
                             "weight gradients), pp (pipeline receives posted an op ahead)")
    parser.add_argument("--bucket-mb", type=float, default=None,
                        help="with --overlap buckets: DDP and ZeRO-1's bucket size in MiB (default 25, as PyTorch DDP)")
    parser.add_argument("--prefetch-depth", type=int, default=None,
                        help="with --overlap prefetch: units gathered ahead, 1 to 4 (default 1)")
    parser.add_argument("--checkpoint-dir", default=None,
                        help="write a sharded checkpoint into this folder (one step-N folder each, complete or absent)")
    parser.add_argument("--checkpoint-every", type=int, default=1,
                        help="with --checkpoint-dir: steps between checkpoints (default 1)")
    parser.add_argument("--checkpoint-async", action="store_true",
                        help="with --checkpoint-dir: each rank copies its state and a thread writes it while the next "
                             "steps run")
    parser.add_argument("--resume", action="store_true",
                        help="start from the newest complete checkpoint in --checkpoint-dir, written at any layout")
    parser.add_argument("--kill-rank", type=int, default=None,
                        help="with --kill-at-step: this rank SIGKILLs itself, as a failing node would (teaching)")
    parser.add_argument("--kill-at-step", type=int, default=None, help="the step (1-based) during which it does")
    parser.add_argument("--kill-during", default="step",
                        help="step (after its backward pass, default) or save (after writing its shard of that "
                             "step's checkpoint, before the commit: a torn save)")
    parser.add_argument("--max-restarts", type=int, default=0,
                        help="with --engine gloo and --checkpoint-dir: run under torchrun, which starts every rank "
                             "again after a failure, up to this many times (0 to 10); they resume from the newest "
                             "checkpoint")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    return parser


def _table(result) -> str:
    lay = result.layout
    pp = f" x pp {lay.pp}" if lay.is_pipeline else ""
    cp = f" x cp {lay.cp} ({lay.cp_kind})" if lay.cp > 1 else ""
    lines = [f"dp {lay.dp}{pp}{cp} x tp {lay.tp}, zero {lay.zero}, seed {result.seed}: {len(result.state_bytes)} ranks"]
    lines += [f"step {i + result.first_step}: loss {loss:.6f}, {sec * 1e3:.1f} ms (slowest rank)"
              for i, (loss, sec) in enumerate(zip(result.losses, result.step_seconds))]  # fmt: skip
    lines.append(f"param_checksum {result.param_checksum:.12g}")
    lines.append(f"state_bytes per rank {result.state_bytes}")
    lines.append(f"comm_bytes per rank {result.comm_bytes}")
    lines.append(f"activation_bytes per rank {result.activation_bytes}")
    if result.tokens_per_expert is not None:
        lines += [f"step {i + result.first_step}: tokens per expert {counts}, dropped {dropped}"
                  for i, (counts, dropped) in enumerate(zip(result.tokens_per_expert, result.dropped_tokens))]
    lines += _stage_lines(result)
    if result.overlap:
        lines.append(f"overlap {'+'.join(result.overlap)}: waited for background collectives "
                     + ", ".join(f"{w * 1e3:.1f}" for w in result.overlap_wait_seconds) + " ms per step (slowest rank)")
    lines += _link_lines(result)
    return "\n".join(lines)


def _steps_words(ns) -> str:
    """``10 steps``, or where a resumed run starts: ``steps 4 to 6, resumed from <folder>``."""
    if not ns.resume:
        return f"{ns.steps} steps"
    from distlib.train.checkpoint import newest_checkpoint, read_meta

    path = newest_checkpoint(ns.checkpoint_dir)
    return f"steps {read_meta(path)['step'] + 1} to {ns.steps}, resumed from {path}"


def _where_words(layout: Layout, nodes, link_gbit) -> str:
    """Where the ranks run, for the starting line: nothing on one machine; the nodes and links of a mini cluster."""
    from distlib.engines.launch import link_words
    from distlib.train.launch import cluster_nodes

    nodes = cluster_nodes(nodes, link_gbit)
    if nodes is None:
        return ""
    per = layout.ranks // nodes
    return (f", across a mini cluster of {nodes} node{'' if nodes == 1 else 's'} "
            f"({per} rank{'' if per == 1 else 's'} each, {link_words(link_gbit)})")


def _link_lines(result) -> list:
    """What each node's link carried (a run across a mini cluster only)."""
    if result.nodes is None:
        return []
    return [f"link of {node}: {n:,} bytes sent and received" for node, n in result.link_bytes.items()]


def _stage_lines(result) -> list:
    """Per stage, the measured idle and busy seconds; the measured and predicted bubble (pipelines only)."""
    if result.idle_seconds is None:
        return []
    lines = [f"stage {s}: idle {idle * 1e3:.2f} ms (predicted {want * 1e3:.2f} ms), busy {busy * 1e3:.2f} ms per step"
             for s, (idle, want, busy) in enumerate(zip(result.idle_seconds, result.predicted_idle_seconds,
                                                        result.busy_seconds))]  # fmt: skip
    lines.append(f"bubble: measured {result.measured_bubble:.3f}, predicted {result.predicted_bubble:.3f} "
                 "(dl.pipeline_schedule with the measured forward and backward times)")  # fmt: skip
    return lines


def _config(ns) -> Config:
    """The model's size from its flags; a bad one is ``ValueError`` naming its flag."""
    try:
        return Config(**{f.name: getattr(ns, f"config_{f.name}") for f in fields(Config)})
    except (TypeError, ValueError) as exc:
        name, _, rest = str(exc).partition(" ")  # Config names its field: say its flag (top_k: --top-k)
        raise ValueError(f"{config_flag(name)} {rest}") from None


def main(argv=None) -> int:
    """Command line entry point; returns the exit status (:data:`distlib.engines.launch.EXIT_STATUS`)."""
    from distlib.engines.launch import RunError, exit_status, failure_report
    from distlib.engines.report import ReportError, strip
    from distlib.train.launch import check_run, overlap_of

    ns = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    degrees = {f.name: getattr(ns, f.name) for f in fields(Layout)}
    if degrees["microbatches"] is None:
        degrees["microbatches"] = ns.pp
    run = dict(steps=ns.steps, seed=ns.seed, engine=ns.engine, timeout=ns.timeout, ranks=ns.ranks, nodes=ns.nodes,
               link_gbit=ns.link_gbit, overlap=ns.overlap, bucket_mb=ns.bucket_mb, prefetch_depth=ns.prefetch_depth,
               checkpoint_dir=ns.checkpoint_dir, checkpoint_every=ns.checkpoint_every, resume=ns.resume,
               checkpoint_async=ns.checkpoint_async, max_restarts=ns.max_restarts,
               kill_rank=ns.kill_rank, kill_at_step=ns.kill_at_step, kill_during=ns.kill_during)
    try:
        config = _config(ns)
        layout = check_run(**degrees, **run, config=config)
        hides = overlap_of(layout, ns.overlap, bucket_mb=ns.bucket_mb, prefetch_depth=ns.prefetch_depth)
        print(f"{PROG}: starting {layout.ranks} {_ENGINE_WORDS[ns.engine]} ranks ({layout.words()}"
              f"{'' if not hides.kinds else ', ' + hides.words()}), {_steps_words(ns)}"
              f"{_where_words(layout, ns.nodes, ns.link_gbit)}", file=sys.stderr, flush=True)
        result = train(layout, **run, config=config)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, ReportError) else 2  # a report missing: the ranks ran; else a bad flag
    except (RunError, KeyboardInterrupt) as exc:
        print(failure_report(exc, PROG), file=sys.stderr, flush=True)
        return exit_status(exc)
    sys.stderr.write(strip(result.log))
    print(json.dumps(result.to_json()) if ns.json else _table(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
