"""Communication hiding: all-reduces that run while the backward pass goes on.

The chapter "Communication hiding, modelled and measured" teaches this module.
One training step on one rank: a forward pass, then a backward pass that runs
the layers one after another (last layer first, so the order *given* here is
the backward order). As soon as the backward pass finishes a layer, that
layer's gradients are ready and their all-reduce may start. All-reduces share
one communication channel (one NCCL stream, one ring): they run one at a
time, first ready first served. So a message starts at

    start[i] = max(ready[i], end[i - 1]),   end[i] = start[i] + comm[i],

and the step ends when both the backward pass and the last all-reduce have
finished. This is a single-server first-in-first-out queue, and its finish
time has an exact closed form (a max-plus product): with ``b`` the backward
times and ``c`` the all-reduce times in backward order and ``F`` the forward,

    T_iter = F + max over k of ( b[0] + ... + b[k] + c[k] + ... + c[L-1] ),

the ``k`` that attains the maximum being the first message of the busy
period that ends the step (:func:`layerwise_exact_time`). Two terms of it are
lower bounds worth remembering: ``k = L-1`` gives ``F + B + c[L-1]``: the
*last* gradient's all-reduce can never hide (nothing is left to compute),
and ``k = 0`` gives ``F + b[0] + C``: the channel cannot start before the
first gradient exists. When every all-reduce fits inside the next layer's
backward (:func:`no_backup`), the first bound is the answer
(:func:`layerwise_closed_form`).

PyTorch's DistributedDataParallel does not send layer by layer: it packs
gradients into buckets (25 MiB by default) and all-reduces a bucket once all
its gradients are ready (:func:`bucket_gradients`, :func:`ddp_step`). Small
buckets start communicating early but pay the per-message latency ``alpha``
many times; one big bucket pays it once but cannot start until the backward
pass is over. :func:`bucket_sweep` maps the trade-off.

Units: seconds, bytes, bytes/s (one direction per link), as everywhere in
``distlib``.

Parts
-----
This module is the chapter's one import path; each concept lives in a part of
its own, and everything is re-exported here:

* :mod:`distlib.overlap.schedule`: the one-channel schedule of a step
  (:func:`overlap_timeline`, :class:`OverlapTimeline`, :class:`Event`);
* :mod:`distlib.overlap.formulas`: its closed forms and bounds (and
  :func:`cg_iteration_time`);
* :mod:`distlib.overlap.buckets`: per-layer gradient sizes and DDP's bucket
  packing;
* :mod:`distlib.overlap.ddp`: a DDP step, explicit bucket timelines, and the
  sweep over bucket capacities.
"""

from __future__ import annotations

from .buckets import (DDP_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES, EMBEDDING_FRACTION,  # noqa: F401
                              Bucket, bucket_gradients, gradient_profile)
from .ddp import BucketSweep, DDPStep, bucket_sweep, bucket_timeline, ddp_step
from .formulas import (cg_iteration_time, layerwise_closed_form, layerwise_exact_time, naive_layerwise_time,
                               no_backup, overlap_speedup_bound)
from .schedule import BACKWARD, COMM, FORWARD, Event, OverlapTimeline, overlap_timeline  # noqa: F401

__all__ = [
    "Event",
    "OverlapTimeline",
    "overlap_timeline",
    "overlap_speedup_bound",
    "layerwise_closed_form",
    "layerwise_exact_time",
    "naive_layerwise_time",
    "cg_iteration_time",
    "no_backup",
    "Bucket",
    "bucket_gradients",
    "DDPStep",
    "ddp_step",
    "bucket_timeline",
    "BucketSweep",
    "bucket_sweep",
    "gradient_profile",
    "DDP_BUCKET_BYTES",
    "DDP_FIRST_BUCKET_BYTES",
]
