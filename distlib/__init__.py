"""distlib: the library behind the course book on distributed training.

The model layer (everything importable from here) is pure NumPy: no plotting
and no widgets. Drawings live in :mod:`distlib.plots`, interactive controls in
:mod:`distlib.widgets`, and real collectives over MPI or torch.distributed in
:mod:`distlib.engines`; import those explicitly.

:data:`CONTRACT` names what chapters, tests and outside checks call (keep
them, and what they mean); :data:`__all__` is everything exported here.
"""

# chapter 1: the ring
from .ring import Transfer, Step, RingTrace, chunk_bounds, simulate_ring_allreduce, ring_bytes_per_rank
from .cluster import StepTime, cluster_step, ring_allreduce_time, balance_tokens

# chapter 2: the three walls
from .walls import (RECIPES, ADAM_UPDATE_FLOPS_PER_PARAM, FLOPS_PER_PARAM_TOKEN, ZERO_STAGES, ZeroStage, zero_stage,
                    StateBytes, Walls, training_flops, model_state_bytes, zero_state_bytes_per_gpu, min_gpus_to_fit,
                    max_params_to_fit, training_time, gradient_bytes, gradient_comm_bytes_per_gpu, gradient_comm_time,
                    three_walls, optimizer_flops_share, round_to_bf16)
# Part IV: where the walls meet (chapters 10 and 13)
from .walls import (FP8_OVER_BF16, dense_peak, hsdp_state_bytes_per_gpu, hsdp_comm_bytes_per_gpu,
                    accumulation_comm_bytes_per_gpu, accumulation_grad_bytes_per_gpu, fsdp_compute_bound_tokens,
                    tp_compute_bound_hidden)

# chapter 3: accelerators and the roofline
from .hardware import Accelerator, accelerator, accelerators, accelerator_names
from .roofline import Roof, Operation, Placement, ridge_point, attainable_flops, place, example_operations
from .measure import Measurement, measure_matmul_flops, measure_memory_bandwidth, machine_roof

# chapter 4: topologies
from .topology import (TOPOLOGY_KINDS, H100_NVLINK_BANDWIDTH, NDR_NIC_BANDWIDTH, Topology, Metrics, Bisection,
                       RingLoads, topology, topology_closed_form, ring_order, crossing_ring_order, ring_link_loads)
from .topology import AlltoallOnTopology, alltoall_on_topology  # chapters 4 and 15: the all-to-all meets the bisection

# chapter 5: the alpha-beta model of collectives
from .collectives import (COLLECTIVES, ALGORITHMS, ALLREDUCE_ALGORITHMS, TWO_LEVEL_ALGORITHMS, p2p_time,
                          cost_coefficients, collective_time, bandwidth_lower_bound, fastest_algorithm, crossover_size,
                          Regime, regime, bus_factor, bus_bandwidth, algorithm_bandwidth, in_network_allreduce_time,
                          fit_alpha_beta, FitReport, fit_report, NcclTable, load_nccl_table, check_nccl_table,
                          canonical_collective, alpha_beta_time, COLLECTIVE_ALIASES, two_level_allreduce_time)
# chapter 15: the all-to-all (expert parallelism routes tokens with it)
from .collectives import (ALLTOALL_ALGORITHMS, bruck_blocks_per_round, alltoall_coefficients, alltoall_time,
                          fastest_alltoall, alltoall_crossover_size)

# chapters 2 and 7: a real GPU cluster and what NCCL does on it
from .gpu_cluster import (NETWORKS, NCCL_ALGORITHMS, NCCL_PROTOCOLS, Calibration, calibration, GpuCluster,
                          gpu_cluster, Candidate, Prediction, predict, predict_busbw, predict_time, predict_table,
                          step_allreduce_time, PublishedResult, published_results)

# chapter 8: communication hiding
from .overlap import (Event, OverlapTimeline, overlap_timeline, overlap_speedup_bound, layerwise_closed_form,
                      layerwise_exact_time, naive_layerwise_time, no_backup, Bucket, bucket_gradients, DDPStep,
                      ddp_step, BucketSweep, bucket_sweep, bucket_timeline, gradient_profile, cg_iteration_time,
                      DDP_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES)
from .overlap.measure import DDPComparison, compare_ddp, fit_allreduce, parse_json_line

# Part IV: parallel training
from .pipeline_schedule import (PIPELINE_SCHEDULES, SIMULATED_SCHEDULES, ClosedForm, PipelineEvent, PipelineSchedule,
                                bubble_closed_forms, measured_stage_times, message_time_for_bubble, peak_held,
                                pipeline_schedule)
from .activations import RECOMPUTE_MODES, activation_bytes_per_layer, logits_bytes
from .planner.model import Transformer, transformer
from .planner import (LAYOUT_SCHEDULES, ATTENTION_KERNELS, BREAKDOWN_TERMS, MIN_CP_TOKENS, PlannerConstants,
                     planner_constants, LayoutStep, layout_step, plan_layouts)
from .planner.published import PublishedLayout, published_layouts

# Part V: long sequences (context parallelism)
from .context_parallel import (SPLITS, cp_chunks, cp_positions, softmax_attention, softmax_attention_backward,
                               block_attention, block_attention_backward, merge_partials, online_softmax_attention,
                               RingHop, RingAttention, ring_attention, causal_pairs, chunk_pairs, work_imbalance,
                               CPComm, cp_comm, cp_collectives, RingTimeline, ring_timeline, ring_work, RingSchedule,
                               ring_schedule, ring_overlap_tokens, ring_step_saving, CPLayer, cp_layer,
                               cp_activation_bytes_per_layer)

# chapter 15: expert parallelism (parameters, routing, capacity, balance, node limits, the all-to-all)
from .experts_model import (ROUTER_GATES, BALANCING_RULES, MoeParams, moe_params, gqa_attention_params,
                            mla_attention_params, MOE_MODELS, moe_model, Routes, route, capacity, keep_mask,
                            DispatchStats, dispatch_stats, switch_aux_loss, aux_loss_gradient, bias_update,
                            router_logits, BalanceRun, balance_simulation, node_limited_route, NodeTraffic,
                            node_traffic, MoeAlltoall, moe_alltoall, expert_ranks, dispatch_matrix)

# chapter 16: when a node dies (failures, checkpoints, goodput)
from .goodput import (EVENT_KINDS, job_mtbf, young_interval, daly_interval, optimal_interval, goodput,
                      expected_goodput, GoodputCurve, goodput_curve, FailureRun, simulate_failures, Interruption,
                      Llama3Interruptions, llama3_interruptions)

# units, shown numbers and notebook helpers
from .units import gbit_to_bytes_per_s, bytes_per_s_to_gbit
from .fmt import Text, si, fmt_bytes, fmt_seconds, fmt_rate, fmt_flops, fmt_share
from .notebook import glue, in_colab

# The contract: what chapters, tests and outside checks call through `import distlib as dl`.
# Keep every name and its meaning; where one moves, re-export it here under the same name.
# It is ../shared/API.md's names and every `dl.X` and `from distlib import X` of the chapters (their code and prose),
# the book's pages and scripts/gpu_check.sh.
# tests/test_layers.py checks that each is exported and that the chapters use no other.
CONTRACT = (
    # ../shared/API.md
    "simulate_ring_allreduce", "ring_bytes_per_rank", "collective_time", "bus_bandwidth", "fit_alpha_beta",
    "training_flops", "model_state_bytes", "accelerator", "topology", "overlap_timeline", "gpu_cluster",
    "predict_busbw", "pipeline_schedule", "activation_bytes_per_layer", "transformer", "layout_step", "plan_layouts",
    # the chapters, in the order they first call them
    "glue", "ring_allreduce_time", "fmt_seconds", "cluster_step", "fmt_flops", "fmt_rate", "fmt_bytes",
    "balance_tokens",
    "optimizer_flops_share", "ADAM_UPDATE_FLOPS_PER_PARAM", "Text", "training_time", "RECIPES", "round_to_bf16",
    "zero_state_bytes_per_gpu", "three_walls", "gradient_bytes", "walls", "max_params_to_fit", "min_gpus_to_fit",
    "accelerators", "gradient_comm_bytes_per_gpu", "predict_time",
    "ridge_point", "example_operations", "place", "measure_matmul_flops", "measure_memory_bandwidth",
    "machine_roof", "attainable_flops", "roofline",
    "topology_closed_form", "NDR_NIC_BANDWIDTH", "cost_coefficients", "crossing_ring_order", "ring_link_loads",
    "p2p_time", "COLLECTIVES", "ALGORITHMS", "regime", "crossover_size", "DDP_BUCKET_BYTES", "bus_factor",
    "in_network_allreduce_time", "algorithm_bandwidth", "published_results", "bandwidth_lower_bound", "predict",
    "load_nccl_table", "check_nccl_table", "fit_report", "fastest_algorithm",
    "fmt_share", "ALLREDUCE_ALGORITHMS",
    "predict_table",
    "overlap_speedup_bound", "no_backup", "layerwise_closed_form", "naive_layerwise_time", "layerwise_exact_time",
    "bucket_gradients", "ddp_step", "gradient_profile", "bucket_sweep", "DDP_FIRST_BUCKET_BYTES", "compare_ddp",
    "cg_iteration_time",
    "collectives",
    # Part IV: what chapters 10 to 13 add (the threshold, HSDP, accumulation, logits, schedules, peaks)
    "fsdp_compute_bound_tokens", "hsdp_state_bytes_per_gpu", "hsdp_comm_bytes_per_gpu",
    "accumulation_comm_bytes_per_gpu", "accumulation_grad_bytes_per_gpu", "logits_bytes", "tp_compute_bound_hidden",
    "measured_stage_times", "message_time_for_bubble", "bubble_closed_forms", "peak_held", "dense_peak",
    # chapter 14: context parallelism
    "online_softmax_attention", "softmax_attention", "softmax_attention_backward", "merge_partials",
    "ring_attention", "causal_pairs", "work_imbalance", "ring_work", "ring_schedule", "ring_timeline",
    "ring_overlap_tokens", "ring_step_saving", "cp_comm", "cp_layer", "cp_activation_bytes_per_layer",
    "cp_positions", "cp_collectives", "published_layouts",
    # chapter 15: expert parallelism
    "moe_model", "route", "capacity", "balance_simulation", "router_logits", "dispatch_matrix", "moe_alltoall",
    "alltoall_crossover_size", "alltoall_on_topology", "node_limited_route", "node_traffic",
    # chapter 16: when a node dies
    "expected_goodput", "optimal_interval", "simulate_failures",
)

# Everything exported: the names imported above, and the model modules the chapters reach as
# attributes (`dl.walls.NODE_NIC_BANDWIDTH`, `from distlib import roofline`).
__all__ = [
    "CONTRACT",
    # modules
    "walls", "roofline", "collectives",
    # ring, cluster
    "Transfer", "Step", "RingTrace", "chunk_bounds", "simulate_ring_allreduce", "ring_bytes_per_rank",
    "StepTime", "cluster_step", "ring_allreduce_time", "balance_tokens",
    # walls
    "RECIPES", "ADAM_UPDATE_FLOPS_PER_PARAM", "FLOPS_PER_PARAM_TOKEN", "ZERO_STAGES", "ZeroStage", "zero_stage",
    "FP8_OVER_BF16", "dense_peak", "hsdp_state_bytes_per_gpu", "hsdp_comm_bytes_per_gpu",
    "accumulation_comm_bytes_per_gpu", "accumulation_grad_bytes_per_gpu", "fsdp_compute_bound_tokens",
    "tp_compute_bound_hidden",
    "StateBytes", "Walls", "training_flops", "model_state_bytes", "zero_state_bytes_per_gpu", "min_gpus_to_fit",
    "max_params_to_fit", "training_time", "gradient_bytes", "gradient_comm_bytes_per_gpu", "gradient_comm_time",
    "three_walls", "optimizer_flops_share", "round_to_bf16",
    # hardware, roofline, measure
    "Accelerator", "accelerator", "accelerators", "accelerator_names",
    "Roof", "Operation", "Placement", "ridge_point", "attainable_flops", "place", "example_operations",
    "Measurement", "measure_matmul_flops", "measure_memory_bandwidth", "machine_roof",
    # topology
    "TOPOLOGY_KINDS", "H100_NVLINK_BANDWIDTH", "NDR_NIC_BANDWIDTH", "Topology", "Metrics", "Bisection", "RingLoads",
    "topology", "topology_closed_form", "ring_order", "crossing_ring_order", "ring_link_loads",
    "AlltoallOnTopology", "alltoall_on_topology",
    # collectives
    "COLLECTIVES", "ALGORITHMS", "ALLREDUCE_ALGORITHMS", "TWO_LEVEL_ALGORITHMS", "p2p_time", "cost_coefficients",
    "collective_time", "bandwidth_lower_bound", "fastest_algorithm", "crossover_size", "Regime", "regime",
    "bus_factor", "bus_bandwidth", "algorithm_bandwidth", "in_network_allreduce_time", "fit_alpha_beta", "FitReport",
    "fit_report", "NcclTable", "load_nccl_table", "check_nccl_table", "canonical_collective", "alpha_beta_time",
    "COLLECTIVE_ALIASES", "two_level_allreduce_time",
    "ALLTOALL_ALGORITHMS", "bruck_blocks_per_round", "alltoall_coefficients", "alltoall_time", "fastest_alltoall",
    "alltoall_crossover_size",
    # gpu_cluster
    "NETWORKS", "NCCL_ALGORITHMS", "NCCL_PROTOCOLS", "Calibration", "calibration", "GpuCluster", "gpu_cluster",
    "Candidate", "Prediction", "predict", "predict_busbw", "predict_time", "predict_table", "step_allreduce_time",
    "PublishedResult", "published_results",
    # overlap, measure_overlap
    "Event", "OverlapTimeline", "overlap_timeline", "overlap_speedup_bound", "layerwise_closed_form",
    "layerwise_exact_time", "naive_layerwise_time", "no_backup", "Bucket", "bucket_gradients", "DDPStep", "ddp_step",
    "BucketSweep", "bucket_sweep", "bucket_timeline", "gradient_profile", "cg_iteration_time", "DDP_BUCKET_BYTES",
    "DDP_FIRST_BUCKET_BYTES",
    "DDPComparison", "compare_ddp", "fit_allreduce", "parse_json_line",
    # pipeline_schedule
    "PIPELINE_SCHEDULES", "PipelineEvent", "PipelineSchedule", "pipeline_schedule", "peak_held", "SIMULATED_SCHEDULES",
    "ClosedForm", "bubble_closed_forms", "measured_stage_times", "message_time_for_bubble",
    # activations
    "RECOMPUTE_MODES", "activation_bytes_per_layer", "logits_bytes",
    # transformer_model, layout, layout_published
    "Transformer", "transformer", "LAYOUT_SCHEDULES", "ATTENTION_KERNELS", "BREAKDOWN_TERMS", "MIN_CP_TOKENS",
    "PlannerConstants", "planner_constants", "LayoutStep", "layout_step", "plan_layouts", "PublishedLayout", "published_layouts",
    # context parallelism
    "SPLITS", "cp_chunks", "cp_positions", "softmax_attention", "softmax_attention_backward", "block_attention",
    "block_attention_backward", "merge_partials", "online_softmax_attention", "RingHop", "RingAttention",
    "ring_attention", "causal_pairs", "chunk_pairs", "work_imbalance", "CPComm", "cp_comm", "cp_collectives",
    "RingTimeline", "ring_timeline", "ring_work", "RingSchedule", "ring_schedule", "ring_overlap_tokens",
    "ring_step_saving", "CPLayer", "cp_layer", "cp_activation_bytes_per_layer",
    # expert parallelism
    "ROUTER_GATES", "BALANCING_RULES", "MoeParams", "moe_params", "gqa_attention_params", "mla_attention_params",
    "MOE_MODELS", "moe_model", "Routes", "route", "capacity", "keep_mask", "DispatchStats", "dispatch_stats",
    "switch_aux_loss", "aux_loss_gradient", "bias_update", "router_logits", "BalanceRun", "balance_simulation",
    "node_limited_route", "NodeTraffic", "node_traffic", "MoeAlltoall", "moe_alltoall", "expert_ranks",
    "dispatch_matrix",
    # goodput
    "EVENT_KINDS", "job_mtbf", "young_interval", "daly_interval", "optimal_interval", "goodput", "expected_goodput",
    "GoodputCurve", "goodput_curve", "FailureRun", "simulate_failures", "Interruption", "Llama3Interruptions",
    "llama3_interruptions",
    # units, fmt, notebook
    "gbit_to_bytes_per_s", "bytes_per_s_to_gbit",
    "Text", "si", "fmt_bytes", "fmt_seconds", "fmt_rate", "fmt_flops", "fmt_share",
    "glue", "in_colab",
]

__version__ = "0.1.0"
