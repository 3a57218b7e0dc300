"""distlib: the library behind the course book on distributed training.

The model layer (everything importable from here) is pure NumPy: no plotting
and no widgets. Drawings live in :mod:`distlib.plots`, interactive controls in
:mod:`distlib.widgets`, and real collectives over MPI or torch.distributed in
:mod:`distlib.engines`; import those explicitly.
"""

from .ring import Transfer, RingTrace, chunk_bounds, simulate_ring_allreduce, ring_bytes_per_rank
from .cluster import StepTime, cluster_step, ring_allreduce_time, balance_tokens
from .fmt import Text, si, fmt_bytes, fmt_seconds, fmt_rate, fmt_flops
from .notebook import glue, in_colab
from .overlap import (Event, OverlapTimeline, overlap_timeline, overlap_speedup_bound, layerwise_closed_form,
                      layerwise_exact_time, no_backup, Bucket, bucket_gradients, DDPStep, ddp_step, BucketSweep,
                      bucket_sweep, gradient_profile, DDP_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES)
from .walls import (RECIPES, StateBytes, Walls, training_flops, model_state_bytes, zero_state_bytes_per_gpu,
                    min_gpus_to_fit, training_time, gradient_bytes, gradient_comm_bytes_per_gpu, gradient_comm_time,
                    three_walls)
from .hardware import Accelerator, accelerator, accelerators, accelerator_names
from .roofline import Roof, Operation, Placement, ridge_point, attainable_flops, place, example_operations
from .measure import Measurement, measure_matmul_flops, measure_memory_bandwidth, machine_roof

__version__ = "0.1.0"
