"""The alpha-beta model of collectives: times, bus bandwidth, and fits to measurements.

The chapter "the alpha-beta model of collectives" teaches this module. Sending
one message of ``n`` bytes costs ``alpha + n * beta``: a fixed latency
``alpha`` (seconds) plus ``beta = 1 / bandwidth`` seconds per byte, with
``bandwidth`` the per-link rate in bytes/s **in one direction**. Every
collective costs

    T = A(p) * alpha + B(p) * n_bytes * beta

for an algorithm-specific number of sequential message steps ``A(p)`` and
bytes factor ``B(p)`` (:func:`cost_coefficients`; the table of every
collective and algorithm is in :mod:`distlib.collectives.costs`).

Parts
-----
This module is the one import path of the chapters, the engines and the
tests; each concept lives in a part of its own, and everything is re-exported
here:

* :mod:`distlib.collectives.names`: the registry of collective and algorithm
  names (``COLLECTIVES``, ``ALGORITHMS``, ``ALLREDUCE_ALGORITHMS``, ...) and
  :func:`canonical_collective`;
* :mod:`distlib.collectives.costs`: the alpha-beta cost of each algorithm
  (:func:`cost_coefficients`, :func:`collective_time`, bounds, crossovers,
  regimes, the two-level all-reduce);
* :mod:`distlib.collectives.alltoall`: the all-to-all by pairwise exchange
  and by Bruck's algorithm (:func:`alltoall_time`, :func:`fastest_alltoall`,
  :func:`alltoall_crossover_size`);
* :mod:`distlib.collectives.busbw`: nccl-tests' algorithm and bus bandwidth;
* :mod:`distlib.collectives.fit`: fitting ``alpha`` and ``bandwidth`` to
  measured times (:func:`fit_alpha_beta`, :func:`fit_report`);
* :mod:`distlib.collectives.nccl_tables`: the nccl-tests tables shipped with the library.
"""

from __future__ import annotations

from .alltoall import (alltoall_coefficients, alltoall_crossover_size, alltoall_time, bruck_blocks_per_round,
                       fastest_alltoall)
from .busbw import algorithm_bandwidth, bus_bandwidth, bus_factor
from .costs import (Regime, alpha_beta_time, bandwidth_lower_bound, collective_time, cost_coefficients,
                               crossover_size, fastest_algorithm, in_network_allreduce_time, p2p_time, regime,
                               two_level_allreduce_time)
from .fit import FitReport, fit_alpha_beta, fit_report
from .names import (ALGORITHMS, ALLREDUCE_ALGORITHMS, ALLTOALL_ALGORITHMS, BUS_FACTOR_COLLECTIVES, COLLECTIVE_ALIASES,
                               COLLECTIVES, ENGINE_ALLREDUCE_ALGORITHMS, ENGINE_SCATTER_GATHER_ALGORITHMS,
                               OWN_ALLREDUCE_ALGORITHMS, TWO_LEVEL_ALGORITHMS, canonical_collective)
from .nccl_tables import NcclTable, check_nccl_table, load_nccl_table

__all__ = [
    "COLLECTIVES",
    "ALGORITHMS",
    "ALLREDUCE_ALGORITHMS",
    "TWO_LEVEL_ALGORITHMS",
    "OWN_ALLREDUCE_ALGORITHMS",
    "ENGINE_ALLREDUCE_ALGORITHMS",
    "ENGINE_SCATTER_GATHER_ALGORITHMS",
    "BUS_FACTOR_COLLECTIVES",
    "COLLECTIVE_ALIASES",
    "canonical_collective",
    "alpha_beta_time",
    "p2p_time",
    "cost_coefficients",
    "collective_time",
    "bandwidth_lower_bound",
    "in_network_allreduce_time",
    "fastest_algorithm",
    "crossover_size",
    "Regime",
    "regime",
    "bus_factor",
    "bus_bandwidth",
    "algorithm_bandwidth",
    "fit_alpha_beta",
    "FitReport",
    "fit_report",
    "NcclTable",
    "load_nccl_table",
    "check_nccl_table",
    "two_level_allreduce_time",
    "ALLTOALL_ALGORITHMS",
    "bruck_blocks_per_round",
    "alltoall_coefficients",
    "alltoall_time",
    "fastest_alltoall",
    "alltoall_crossover_size",
]
