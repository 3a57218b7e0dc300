"""distlib: the library behind the course book on distributed training.

The model layer (everything importable from here) is pure NumPy: no plotting
and no widgets. Drawings live in :mod:`distlib.plots`, interactive controls in
:mod:`distlib.widgets`, and real collectives over MPI or torch.distributed in
:mod:`distlib.engines`; import those explicitly.
"""

# chapter 1: the ring
from .ring import Transfer, Step, RingTrace, chunk_bounds, simulate_ring_allreduce, ring_bytes_per_rank
from .cluster import StepTime, cluster_step, ring_allreduce_time, balance_tokens

# chapter 2: the three walls
from .walls import (RECIPES, ADAM_UPDATE_FLOPS_PER_PARAM, StateBytes, Walls, training_flops, model_state_bytes,
                    zero_state_bytes_per_gpu, min_gpus_to_fit, max_params_to_fit, training_time, gradient_bytes,
                    gradient_comm_bytes_per_gpu, gradient_comm_time, three_walls, optimizer_flops_share,
                    round_to_bf16)

# chapter 3: accelerators and the roofline
from .hardware import Accelerator, accelerator, accelerators, accelerator_names
from .roofline import Roof, Operation, Placement, ridge_point, attainable_flops, place, example_operations
from .measure import Measurement, measure_matmul_flops, measure_memory_bandwidth, machine_roof

# chapter 4: topologies
from .topology import (TOPOLOGY_KINDS, H100_NVLINK_BANDWIDTH, NDR_NIC_BANDWIDTH, Topology, Metrics, Bisection,
                       RingLoads, topology, topology_closed_form, ring_order, crossing_ring_order, ring_link_loads)

# chapter 5: the alpha-beta model of collectives
from .collectives import (COLLECTIVES, ALGORITHMS, ALLREDUCE_ALGORITHMS, p2p_time, cost_coefficients, collective_time,
                          bandwidth_lower_bound, fastest_algorithm, crossover_size, Regime, regime, bus_factor,
                          bus_bandwidth, algorithm_bandwidth, in_network_allreduce_time, fit_alpha_beta, FitReport,
                          fit_report, NcclTable, load_nccl_table, check_nccl_table, canonical_collective,
                          alpha_beta_time, COLLECTIVE_ALIASES, two_level_allreduce_time)

# chapters 2 and 7: a real GPU cluster and what NCCL does on it
from .gpu_cluster import (NETWORKS, NCCL_ALGORITHMS, NCCL_PROTOCOLS, Calibration, calibration, GpuCluster,
                          gpu_cluster, Candidate, Prediction, predict, predict_busbw, predict_time, predict_table,
                          step_allreduce_time, PublishedResult, published_results)

# chapter 8: communication hiding
from .overlap import (Event, OverlapTimeline, overlap_timeline, overlap_speedup_bound, layerwise_closed_form,
                      layerwise_exact_time, naive_layerwise_time, no_backup, Bucket, bucket_gradients, DDPStep,
                      ddp_step, BucketSweep, bucket_sweep, bucket_timeline, gradient_profile, cg_iteration_time,
                      DDP_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES)
from .measure_overlap import DDPComparison, compare_ddp, fit_allreduce, parse_json_line

# shown numbers and notebook helpers
from .fmt import Text, si, fmt_bytes, fmt_seconds, fmt_rate, fmt_flops, fmt_share
from .notebook import glue, in_colab

__version__ = "0.1.0"
