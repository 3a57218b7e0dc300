"""torch.distributed runs: one fresh interpreter per rank (:func:`run_torch`), or PyTorch's own ``torchrun``."""

from __future__ import annotations

import math
import os
import re
import signal
import socket
import sys

from ..._check import check_choice, check_int, check_real
from .._isolate import network_prefix
from ..placement import check_placement
from ..progress import DEFAULT_STALL
from .plan import _base_env, _cluster_words, _Ended, _execute, _new_run, _Plan, _ranks_per_node, _Start
from .results import Outcome, PrivateNetworkUnavailable, RunError, RunResult, RunTimeout, _attempt, _tail

__all__ = ["run_torch", "try_torch", "run_torchrun"]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torch(
    target,
    n: int,
    *,
    backend: str = "gloo",
    args=(),
    timeout: float = 60.0,
    collective_timeout: float | None = None,
    env=None,
    check: bool = True,
    echo: bool = False,
    cluster=None,
    stall: float | None = DEFAULT_STALL,
    behind: float | None = None,
) -> RunResult:
    """Run ``target`` on ``n`` torch.distributed ranks and return what each printed.

    Each rank is a fresh interpreter (``python -m distlib.engines._torch_worker``;
    no ``fork``), in a session of its own, with ``RANK``, ``WORLD_SIZE``,
    ``LOCAL_RANK``, ``MASTER_ADDR``/``MASTER_PORT`` and a ``file://``
    rendezvous (``DISTLIB_INIT_METHOD``) in its environment;
    :func:`distlib.engines.torch_dist.init` reads them. The launcher stops
    every rank as soon as one fails, and the progress watchdog names a rank
    that stops (``stall``). With ``cluster`` the ranks are spread over its
    nodes (``n / nodes`` each, ``GLOO_SOCKET_IFNAME`` its link), so gloo's
    bytes between nodes cross the throttled links; the rendezvous file sits
    on the file system the nodes share.

    Parameters
    ----------
    target : str
        ``"package.module:function"`` (the function is called with no
        arguments; ``sys.argv[1:]`` holds ``args``, as for a console
        script), ``"package.module"`` (run as ``__main__``) or a script path.
    n : int
        Number of ranks, ``>= 1``.
    backend : {"gloo", "nccl"}
        Passed to the ranks as ``DISTLIB_BACKEND``.
    args : sequence of str
    timeout : float
        Seconds before the whole run is killed.
    collective_timeout : float, optional
        The ranks' ``init_process_group(timeout=...)``; default half of
        ``timeout``, so a rank stuck in a collective fails with an error
        message before the launcher has to kill it.
    env : dict, optional
    check : bool
    echo : bool
        Also copy rank 0's output, line by line as it comes, to this
        process's stdout and stderr (for long runs in a terminal).
    cluster : MiniCluster, optional
    stall : float or None
        As :func:`run_mpi`.

    Returns
    -------
    RunResult

    Raises
    ------
    RunStalled, RunTimeout, RunError
        As :func:`run_mpi`.
    """
    n = check_int("n", n, minimum=1)
    backend = check_choice("backend", backend, ["gloo", "nccl"])
    timeout = check_real("timeout", timeout, minimum=0, strict_min=True)
    if collective_timeout is None:
        collective_timeout = max(1.0, timeout / 2)
    collective_timeout = check_real("collective_timeout", collective_timeout, minimum=0, strict_min=True)
    target = _torch_target(target)
    cluster = check_placement(cluster) if cluster is not None else None
    plan = _torch_plan(target, n, backend, args, timeout, collective_timeout, env, echo, cluster, stall, behind)
    return _execute(plan, check=check)


def _torch_plan(target, n, backend, args, timeout, collective_timeout, env, echo, cluster, stall, behind) -> _Plan:
    """One process per rank, here or on its node of ``cluster``, meeting through a ``file://`` rendezvous."""
    per_node = _ranks_per_node(n, cluster) if cluster is not None else n
    run_id, workdir, watchdog = _new_run("torch", stall, behind, n)
    iface = "lo" if cluster is None else cluster.nodes[0].iface
    base = _base_env(run_id, None)
    base.update(
        {
            "WORLD_SIZE": str(n),
            "LOCAL_WORLD_SIZE": str(per_node),
            "MASTER_ADDR": "127.0.0.1" if cluster is None else cluster.nodes[0].address,
            "MASTER_PORT": str(_free_port()),
            "DISTLIB_INIT_METHOD": (workdir / "rendezvous").as_uri(),
            "DISTLIB_BACKEND": backend,
            "DISTLIB_TIMEOUT": repr(collective_timeout),
            "GLOO_SOCKET_IFNAME": iface,
            "NCCL_SOCKET_IFNAME": iface,
            **(watchdog.env if watchdog is not None else {}),
            **({"DISTLIB_CLUSTER": _cluster_words(cluster)} if cluster is not None else {}),
        }
    )
    if env:
        base.update({str(k): str(v) for k, v in env.items()})
    command = [sys.executable, "-m", "distlib.engines._torch_worker", target, *map(str, args)]
    starts = [_Start([*([] if cluster is None else cluster.prefix(r // per_node)), *command],
                     dict(base, RANK=str(r), LOCAL_RANK=str(r % per_node)), echo=echo and r == 0)
              for r in range(n)]  # fmt: skip
    what = f"torch run of {target!r} on {n} ranks ({backend})"

    def collect(ended: _Ended) -> RunResult:
        codes, failed = ended.procs.codes, ended.failed
        bad = ended.timed_out or ended.stalled
        return RunResult(
            stdout=[ended.procs.text(r) for r in range(n)],
            stderr=[ended.procs.text(r, stderr=True) for r in range(n)],
            launcher="",
            returncodes=codes,
            returncode=124 if bad else (0 if failed is None else (codes[failed] or 1)),
            seconds=ended.seconds,
            command=command,
            run_id=run_id,
            pids={r: p.pid for r, p in enumerate(ended.procs.procs)},
            network="host" if cluster is None else "mini cluster",
            nodes={b.rank: b.node for b in ended.beats},
        )

    def judge(result: RunResult, ended: _Ended) -> RunError | None:
        if ended.timed_out:
            return RunTimeout(f"{what} did not finish within {timeout:g} s (a deadlock or a hung rank); "
                              "every process of the run was killed.", result)  # fmt: skip
        if ended.failed is None:
            return None
        return RunError(_torch_failure_message(what, result, ended.failed, cluster, per_node), result, ended.failed)

    return _Plan(what, run_id, workdir, starts, timeout, watchdog, cluster, collect, judge)


def _torch_failure_message(what: str, result: RunResult, failed: int, cluster, per_node: int) -> str:
    code = result.returncodes[failed]
    how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    if code == -signal.SIGKILL:
        how += " (SIGKILL comes from another process or from the kernel's out-of-memory killer)"
    node = result.nodes.get(failed) or (cluster.nodes[failed // per_node].hostname if cluster is not None else None)
    on = f" on node {node}" if node and cluster is not None else ""
    # Every rank that ended by itself with status 0 (the launcher only killed ranks still running).
    # Not only those seen to end before the failed one: a rank that leaves early closes its
    # connections as it exits, and the peer that fails on that can be seen first (1 run in 5
    # with both cores busy).
    left = [r for r in range(result.p) if r != failed and result.returncodes[r] == 0]
    msg = [f"{what} failed: rank {failed}{on} {how}; every process of the run was stopped."]
    if left:
        msg.append(f"rank(s) {left} exited with status 0 before the run was stopped "
                   "(a rank that leaves early stalls the others).")  # fmt: skip
    if result.stderr[failed].strip():
        msg.append(f"rank {failed} stderr:\n{_tail(result.stderr[failed])}")
    return "\n".join(msg)


def _torch_target(target) -> str:
    if not isinstance(target, (str, os.PathLike)):
        raise TypeError(f"target must be 'module:function', a module name or a script path, got {type(target).__name__}")
    target = os.fspath(target)
    if target.endswith(".py") and not os.path.exists(target):
        raise FileNotFoundError(f"target script {target!r} does not exist")
    return os.path.abspath(target) if target.endswith(".py") else target


def run_torchrun(module: str, n: int, *, args=(), timeout: float = 120.0, env=None, check: bool = True, cluster=None,
                 stall: float | None = DEFAULT_STALL, behind: float | None = None,
                 max_restarts: int = 0) -> RunResult:  # fmt: skip
    """Run ``python -m module`` on ``n`` ranks started by PyTorch's own launcher, ``torchrun``.

    This is how the module would start on a cluster: one ``torchrun`` agent
    per node (``torchrun --nnodes N --node-rank i --nproc-per-node L
    --master-addr ADDR --master-port PORT -m module``); the agents meet in
    torch's *static* rendezvous on the first node's address, start the
    ranks with ``RANK``, ``WORLD_SIZE`` and ``MASTER_ADDR``/``MASTER_PORT``
    in their environment, and stop them all if one fails; with
    ``max_restarts`` above 0 they then start every rank again, up to that
    many times (``TORCHELASTIC_RESTART_COUNT`` in the ranks' environment
    counts the restarts: a rank program resumes from its checkpoint when it
    is above 0), and a rank's process gone is torchrun's to deal with, not
    the watchdog's. Each rank's output is kept in torchrun's
    per-rank log files (``--redirects 3``) and returned in rank order.

    Without ``cluster`` it is one node (``--standalone``). torchrun's
    rendezvous store listens on every network interface, so this then runs
    only inside a loopback-only network namespace (see
    :mod:`distlib.engines._isolate`); where the machine allows none it
    raises :class:`PrivateNetworkUnavailable` and the book uses
    :func:`run_torch`, whose ranks meet through a file instead. With
    ``cluster`` (a :class:`distlib.minicluster.MiniCluster`) agent ``i``
    runs on node ``i`` with ``GLOO_SOCKET_IFNAME`` its link. (torch's
    default c10d rendezvous would need the node's hostname to resolve to
    the address the store listens on; the static one takes the address.)

    Parameters
    ----------
    module : str
        A module name (run as ``python -m module``), e.g.
        ``"distlib.examples.torch_ddp"``.
    n : int
        Ranks, ``>= 1`` (with ``cluster``: a multiple of its nodes).
    args : sequence of str
    timeout : float
        Seconds before every process of the run is killed.
    env : dict, optional
    check : bool
        Raise :class:`RunError` / :class:`RunTimeout` on failure.
    cluster : MiniCluster, optional
    stall : float or None
        As :func:`run_mpi`.
    max_restarts : int
        torchrun's ``--max-restarts``: 0 (default) to 10.

    Returns
    -------
    RunResult
        ``.launcher`` holds torchrun's own messages (every agent's); ``.stdout`` and ``.stderr`` each rank's,
        from its last attempt.
    """
    n = check_int("n", n, minimum=1)
    timeout = check_real("timeout", timeout, minimum=0, strict_min=True)
    if not isinstance(module, str) or module.endswith(".py") or not re.fullmatch(r"[A-Za-z_][\w.]*", module):
        raise ValueError(f"module must be a dotted module name such as 'distlib.examples.torch_ddp', got {module!r}")
    cluster = check_placement(cluster) if cluster is not None else None
    max_restarts = check_int("max_restarts", max_restarts, minimum=0, maximum=10)
    prefix = list(network_prefix()) if cluster is None else []
    if cluster is None and not prefix:
        raise PrivateNetworkUnavailable(
            "torchrun's rendezvous store listens on every network interface, and this machine allows no "
            "private network namespace (unprivileged user namespaces) to keep it in, so the book does not "
            "start it here. run_torch starts the same ranks with a file:// rendezvous instead."
        )
    return _execute(_torchrun_plan(module, n, args, timeout, env, cluster, prefix, stall, behind, max_restarts),
                    check=check)  # fmt: skip


def _torchrun_plan(module, n, args, timeout, env, cluster, prefix, stall, behind, max_restarts=0) -> _Plan:
    """One ``torchrun`` agent per node (``--standalone`` in a loopback-only namespace here)."""
    per_node, n_nodes = (n, 1) if cluster is None else (_ranks_per_node(n, cluster), cluster.n_nodes)
    run_id, workdir, watchdog = _new_run("torchrun", stall, behind, n, gone_grace=math.inf if max_restarts else None)
    iface = "lo" if cluster is None else cluster.nodes[0].iface
    full_env = _base_env(run_id, None)
    full_env.update({"GLOO_SOCKET_IFNAME": iface, "NCCL_SOCKET_IFNAME": iface, "DISTLIB_TIMEOUT": repr(max(1.0, timeout / 2)),
                     "TORCH_CPP_LOG_LEVEL": "ERROR"})  # fmt: skip  # (no reverse DNS inside the namespace: c10d warns)
    if watchdog is not None:
        full_env.update(watchdog.env)
    if cluster is not None:
        full_env["DISTLIB_CLUSTER"] = _cluster_words(cluster)
    if env:
        full_env.update({str(k): str(v) for k, v in env.items()})
    port = str(_free_port())
    commands = []
    for i in range(n_nodes):
        if cluster is None:
            where, node_prefix = ["--standalone"], prefix
        else:
            where = [f"--nnodes={n_nodes}", f"--node-rank={i}", "--rdzv-backend=static",
                     f"--master-addr={cluster.nodes[0].address}", f"--master-port={port}"]  # fmt: skip
            node_prefix = cluster.prefix(i)
        commands.append([
            *node_prefix, sys.executable, "-m", "torch.distributed.run", *where, f"--nproc-per-node={per_node}",
            f"--max-restarts={max_restarts}", "--log-dir", str(workdir / f"node{i}"), "--redirects", "3",
            # each rank through the book's rank entry point, as run_torch's: a rank that ends well leaves with
            # os._exit after a barrier, not through the interpreter's finalization, where torch's threads
            # aborted 4 of 8 torchrun runs of the DDP example on Colab's Python 3.12 with PyPI's torch
            "-m", "distlib.engines._torch_worker", module, *map(str, args),
        ])  # fmt: skip
    what = f"torchrun of {module!r} on {n} ranks" + ("" if cluster is None else f" over {n_nodes} nodes")

    def rank_log(r: int, name: str) -> str:
        found = sorted(workdir.glob(f"node{r // per_node}/*/attempt_*/{r % per_node}/{name}.log"))
        return found[-1].read_text(errors="replace") if found else ""

    def collect(ended: _Ended) -> RunResult:
        codes, failed = ended.procs.codes, ended.failed
        return RunResult(
            stdout=[rank_log(r, "stdout") for r in range(n)],
            stderr=[rank_log(r, "stderr") for r in range(n)],
            launcher="".join(ended.procs.text(i) for i in range(len(commands))),
            returncodes=[None] * n,
            returncode=124 if (ended.timed_out or ended.stalled) else (codes[failed] if failed is not None else 0),
            seconds=ended.seconds,
            command=commands[0],
            run_id=run_id,
            network="private" if cluster is None else "mini cluster",
            nodes={b.rank: b.node for b in ended.beats},
        )

    def judge(result: RunResult, ended: _Ended) -> RunError | None:
        if ended.timed_out:
            return RunTimeout(f"{what} did not finish within {timeout:g} s; every process of the run was killed.",
                              result)  # fmt: skip
        if result.returncode == 0:
            return None
        bad = next((r for r in range(n) if "Traceback" in result.stderr[r]), None)
        detail = _tail(result.stderr[bad]) if bad is not None else _tail(result.launcher)
        on = f" (the agent on node {cluster.nodes[ended.failed].hostname} failed first)" if cluster is not None else ""
        return RunError(f"{what} failed (exit status {result.returncode}){on}; torchrun stopped every rank.\n{detail}",
                        result, bad)  # fmt: skip

    return _Plan(what, run_id, workdir, [_Start(c, full_env, merge=True) for c in commands], timeout, watchdog, cluster,
                 collect, judge)  # fmt: skip


def try_torch(target, n: int, *, backend: str = "gloo", args=(), timeout: float = 30.0, env=None) -> Outcome:
    """Run like :func:`run_torch`, but report a deadlock or failure as an :class:`Outcome`."""
    return _attempt(lambda: run_torch(target, n, backend=backend, args=args, timeout=timeout, env=env), timeout)
