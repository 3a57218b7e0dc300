"""The bounds every launcher checks a run's flags against: one table, read by every command.

``python -m distlib.bench``, ``python -m distlib.run`` (and so ``python -m
distlib.minicluster run``) and :class:`distlib.minicluster.MiniCluster` check
the same flags before anything starts. The numbers live here so that a reader
gets the same range from each, and a change is made once.

>>> launch_problem(timeout=0.0)
'--timeout must be more than 0 and at most 604800 seconds, got 0'
>>> launch_problem(timeout=60.0, nodes=65)
'--nodes must be between 1 and 64, got 65'
>>> launch_problem(timeout=60.0, nodes=2, link_gbit=1.0) is None
True
"""

from __future__ import annotations

import math

__all__ = ["LINK_GBIT", "MAX_NODES", "MAX_TIMEOUT", "WATCH_SECONDS", "cluster_problem", "launch_problem"]

MAX_NODES = 64
"""The most simulated nodes a mini cluster makes (each is a network namespace and a veth pair)."""

LINK_GBIT = (0.01, 100.0)
"""A mini-cluster link's rate, Gbit/s per direction (a flag's unit): 10 Mbit/s to 100 Gbit/s, what ``tc tbf`` holds."""

MAX_TIMEOUT = 7 * 24 * 3600.0
"""A whole run's limit, seconds: a week."""

WATCH_SECONDS = (2.0, MAX_TIMEOUT)
"""``--stall`` and ``--behind``, seconds: under 2 s a busy machine's scheduling alone would name healthy ranks."""


def _finite_in(value: float, low: float, high: float) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and low <= value <= high


def _nodes_problem(nodes: int | None) -> str | None:
    if nodes is not None and not 1 <= nodes <= MAX_NODES:
        return f"--nodes must be between 1 and {MAX_NODES}, got {nodes}"
    return None


def _link_problem(link_gbit: float | None) -> str | None:
    if link_gbit is not None and not _finite_in(link_gbit, *LINK_GBIT):
        return (f"--link-gbit must be between {LINK_GBIT[0]:g} and {LINK_GBIT[1]:g} (Gbit/s per direction), "
                f"got {link_gbit:g}")
    return None


def launch_problem(*, timeout: float, nodes: int | None = None, link_gbit: float | None = None,
                   stall: float | None = None, behind: float | None = None) -> str | None:
    """The first of these flags out of its range, as one line naming it and the range; ``None`` if all fit."""
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
        return f"--timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds, got {timeout:g}"
    for name, value in (("stall", stall), ("behind", behind)):
        if value is not None and not _finite_in(value, *WATCH_SECONDS):
            return f"--{name} must be between {WATCH_SECONDS[0]:g} and {WATCH_SECONDS[1]:g} seconds, got {value:g}"
    return _nodes_problem(nodes) or _link_problem(link_gbit)


def cluster_problem(*, ranks: int, nodes: int, link_gbit: float | None, engine: str,
                    ranks_flag: str = "--ranks") -> str | None:
    """The first flag of a run across a mini cluster out of range, as one line; ``None`` if all fit.

    >>> cluster_problem(ranks=3, nodes=2, link_gbit=None, engine="mpi", ranks_flag="-n/--ranks")
    '-n/--ranks must be a positive multiple of --nodes (2), got 3'
    >>> cluster_problem(ranks=4, nodes=2, link_gbit=1.0, engine="nccl")
    '--nodes: the mini cluster runs the CPU engines (--engine mpi or gloo); NCCL needs GPUs'
    """
    problem = _nodes_problem(nodes)
    if problem is None and (ranks < nodes or ranks % nodes):
        problem = f"{ranks_flag} must be a positive multiple of --nodes ({nodes}), got {ranks}"
    problem = problem or _link_problem(link_gbit)
    if problem is None and engine == "nccl":
        problem = "--nodes: the mini cluster runs the CPU engines (--engine mpi or gloo); NCCL needs GPUs"
    return problem
