"""A cluster on one machine: namespaces, throttled links, real launchers across them, faults, the watchdog.

Everything that makes namespaces needs root (CI runs as root); those tests
skip with the reason elsewhere. The bench runs here use small iteration
counts; they check correctness, where the bytes went and ratios between
algorithms in one run, never an absolute time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distlib.collectives import two_level_allreduce_time
from distlib.engines.algorithms import allreduce, hierarchical_allreduce, node_groups
from distlib.engines.comm import run_threads
from distlib.minicluster import MiniCluster, MiniClusterUnavailable, leftovers, mini_cluster, minicluster_support

ROOT = Path(__file__).resolve().parents[1]
REASON = minicluster_support()
needs_cluster = pytest.mark.skipif(REASON is not None, reason=f"mini cluster unavailable: {REASON}")
RUN_ENV = {**os.environ, "PYTHONPATH": str(ROOT), "DISTLIB_STALL": "4"}


def _ours() -> list:
    return leftovers(owner=os.getpid())


def _marked(mark: str) -> list:
    """PIDs of live processes whose environment carries DISTLIB_TEST_MARK=mark."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                env = (entry / "environ").read_bytes().split(b"\0")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if f"DISTLIB_TEST_MARK={mark}".encode() in env and state != "Z":
                found.append((int(entry.name), env))
    return found


def _doing(pid: int, rank: int) -> str:
    """What rank ``rank`` (process ``pid``) last told the watchdog it was doing ("" if nothing yet)."""
    try:
        env = dict(item.split(b"=", 1) for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in item)
        return json.loads((Path(env[b"DISTLIB_PROGRESS_DIR"].decode()) / f"rank{rank}.json").read_text())["doing"]
    except (OSError, KeyError, ValueError):
        return ""


def _rank_pids(mark: str, *, rank_var: str) -> dict:
    """{rank: pid} of the ranks themselves, as each one's heartbeat names it.

    Not the processes that carry ``rank_var``: under ``run_mpi`` each rank
    runs under a guard (``distlib.engines._mpi_rank``) with the same command
    line and environment, and for a moment after start the guard is the only
    one. Stopping the guard instead of the rank stops nothing that matters,
    so the pid comes from the rank's own heartbeat file.
    """
    out = {}
    for pid, env in _marked(mark):
        if not any(item.startswith(rank_var.encode() + b"=") for item in env):
            continue
        folder = next((item.split(b"=", 1)[1].decode() for item in env if item.startswith(b"DISTLIB_PROGRESS_DIR=")), None)
        if folder is None:
            continue
        for beat in Path(folder).glob("rank*.json"):
            try:
                got = json.loads(beat.read_text())
            except (OSError, ValueError):
                continue  # being written
            if Path(f"/proc/{got['pid']}").exists():
                out[int(got["rank"])] = int(got["pid"])
    return out


# ----------------------------------------------------------------------------
# The hierarchical algorithm and its cost (no root needed)
# ----------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(nodes=st.integers(1, 3), per_node=st.integers(1, 3), n=st.integers(0, 40), interleave=st.booleans())
def test_hierarchical_allreduce_equals_the_sum(nodes, per_node, n, interleave):
    p = nodes * per_node
    label = (lambda r: f"n{r % nodes}") if interleave else (lambda r: f"n{r // per_node}")

    def work(comm):
        x = np.arange(n, dtype=np.int64) * (comm.rank + 1) + comm.rank
        return hierarchical_allreduce(comm, x, node=label(comm.rank))

    expect = sum(np.arange(n, dtype=np.int64) * (r + 1) + r for r in range(p))
    for out in run_threads(work, p):
        assert np.array_equal(out, expect)


def test_uneven_nodes_fall_back_to_the_ring():
    labels = ["a", "a", "a", "b"]
    groups = run_threads(lambda c: node_groups(c, node=labels[c.rank]), 4)[0]
    assert groups == [[0, 1, 2], [3]]
    out = run_threads(lambda c: hierarchical_allreduce(c, np.full(7, c.rank + 1.0), node=labels[c.rank]), 4)
    assert all(np.all(o == 10.0) for o in out)


def test_threads_on_one_host_are_one_node():
    out = run_threads(lambda c: allreduce(c, np.full(9, c.rank + 1.0), algorithm="hierarchical"), 3)
    assert all(np.all(o == 6.0) for o in out)


def test_two_level_cost_sends_fewer_bytes_over_the_slow_link():
    kw = dict(alpha_intra=0, bandwidth_intra=1e12, alpha_inter=0, bandwidth_inter=1e8)
    for nodes, per_node in [(2, 2), (4, 8), (2, 8)]:
        p = nodes * per_node
        ring = two_level_allreduce_time(1e8, nodes, per_node, algorithm="ring", **kw)
        hier = two_level_allreduce_time(1e8, nodes, per_node, **kw)
        # the slow link carries 2(p-1)/p of the buffer for the ring, 2(N-1)/N for the hierarchy
        assert ring / hier == pytest.approx(((p - 1) / p) / ((nodes - 1) / nodes), rel=1e-3)
    with pytest.raises(ValueError, match="ranks_per_node"):
        two_level_allreduce_time(1e6, 2, 0, **kw)


# ----------------------------------------------------------------------------
# The cluster itself
# ----------------------------------------------------------------------------


def test_bad_sizes_are_named():
    with pytest.raises(ValueError, match="nodes"):
        MiniCluster(0)
    with pytest.raises(ValueError, match="link_gbit"):
        MiniCluster(2, link_gbit=0)


@pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0, reason="needs root to drop to another user")
def test_not_root_gets_a_clear_error():
    code = "from distlib.minicluster import mini_cluster\nwith mini_cluster(2): pass"
    out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code],
                         capture_output=True, text=True, env=RUN_ENV, timeout=60)  # fmt: skip
    assert out.returncode != 0
    assert "MiniClusterUnavailable: a mini cluster needs root" in out.stderr


@needs_cluster
def test_nodes_have_names_addresses_and_a_throttled_link_and_leave_nothing():
    server = ("import socket; s = socket.socket(); s.bind(('0.0.0.0', 5001)); s.listen(); c, _ = s.accept(); n = 0\n"
              "while (b := c.recv(1 << 20)): n += len(b)\nprint(n)")  # fmt: skip
    client = "import socket; c = socket.create_connection(('node1', 5001)); c.sendall(b'x' * (8 << 20)); c.close()"
    with pytest.raises(RuntimeError, match="on purpose"):
        with mini_cluster(2, link_gbit=1) as cluster:
            assert [cluster.run(n, ["hostname"]).stdout.strip() for n in cluster.nodes] == ["node0", "node1"]
            srv = subprocess.Popen([*cluster.prefix(1), sys.executable, "-c", server], stdout=subprocess.PIPE, text=True)
            for _ in range(50):  # until the server listens
                if cluster.run(0, [sys.executable, "-c", client]).returncode == 0:
                    break
                time.sleep(0.1)
            assert int(srv.communicate(timeout=30)[0]) == 8 << 20
            sent = cluster.link_bytes(0).sent
            assert 8 << 20 <= sent < 1.2 * (8 << 20)  # every byte crossed node0's link, once, plus headers
            assert cluster.link_bytes(1).received == pytest.approx(sent, rel=0.01)
            assert cluster.health() is None
            raise RuntimeError("on purpose: the cluster must go away anyway")
    assert _ours() == []
    assert not any(Path("/etc/netns").glob(f"dlmc-{os.getpid()}-*"))


@needs_cluster
@pytest.mark.parametrize("fault", ["detached", "silent"])
def test_a_link_that_stays_up_but_carries_nothing_is_named(fault):
    """A node's link whose interfaces stay up: its switch port taken off the bridge, or the bridge left
    forwarding nothing to it (no flooding, no learned address). Link state says UP either way; health()
    names the node, by bridge membership or by traffic (it sends, nothing comes back)."""
    talker = ("import socket, time\nwhile True:\n    s = socket.socket(); s.settimeout(0.5)\n"
              "    try: s.connect(('node0', 9))\n    except OSError: pass\n    time.sleep(0.2)\n")  # fmt: skip
    with mini_cluster(2, link_gbit=1) as cluster:
        proc = subprocess.Popen([*cluster.prefix(1), sys.executable, "-c", talker])
        try:
            time.sleep(1)
            assert cluster.health() is None
            port = cluster.nodes[1].port
            change = (["nomaster"] if fault == "detached" else
                      ["type", "bridge_slave", "learning", "off", "flood", "off", "mcast_flood", "off",
                       "bcast_flood", "off", "fdb_flush"])  # fmt: skip
            subprocess.run(["ip", "-n", cluster.switch, "link", "set", "dev", port, *change], check=True)
            assert "state UP" in subprocess.run(["ip", "-n", cluster.switch, "-o", "link", "show", port],
                                                capture_output=True, text=True).stdout  # fmt: skip
            t0, found = time.monotonic(), None
            while time.monotonic() - t0 < 30 and found is None:
                found = cluster.health()
                time.sleep(0.5)
            assert found is not None, "a dead link that stays up went unnoticed for 30 s"
            assert (found.kind, found.node) == ("node", "node1"), found
            assert ("joined to no switch" if fault == "detached" else "sent") in str(found), found
        finally:
            proc.kill()
            proc.wait(timeout=10)


@needs_cluster
def test_sigterm_removes_the_cluster():
    code = ("import os, time, sys\nfrom distlib.minicluster import mini_cluster\n"
            "with mini_cluster(2):\n    print('up', flush=True)\n    time.sleep(60)\n")  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=RUN_ENV)
    assert proc.stdout.readline().strip() == "up"
    assert leftovers(owner=proc.pid)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert leftovers(owner=proc.pid) == []


# ----------------------------------------------------------------------------
# The book's programs across nodes, with the real launchers
# ----------------------------------------------------------------------------


def _bench(*args, timeout=240, env=None):
    cmd = [sys.executable, "-m", "distlib.bench", "allreduce", *args, "--json", "--quiet"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**RUN_ENV, **(env or {})}, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@needs_cluster
def test_mpi_bench_across_two_nodes_correct_link_bound_and_hierarchy_wins():
    gbit = 0.5
    data = _bench("--engine", "mpi", "--nodes", "2", "--ranks", "4", "--link-gbit", str(gbit),
                  "--algorithms", "ring,hierarchical", "-b", "64K", "-e", "16M", "-f", "256", "-n", "3", "-w", "1")  # fmt: skip
    assert data["p"] == 4 and data["nodes"] == 2
    # what the ranks saw: two host names, TCP between them (the launcher's UCX_TLS), on a throttled cluster
    assert "ranks on 2 nodes (node0, node1)" in data["transport"], data["transport"]
    assert "TCP between nodes" in data["transport"] and f"{gbit:g} Gbit/s" in data["transport"], data["transport"]
    assert all(r["wrong"] == 0 for row in data["rows"] for r in row["results"].values())
    big = data["rows"][-1]
    assert big["n_bytes"] == 16 << 20
    ring, hier = big["results"]["ring"], big["results"]["hierarchical"]
    # Bytes between nodes cross the throttled link (UCX held to TCP): at least what the ring alone moves there.
    crossed = data["link_bytes"]["node0"]["sent"]
    assert crossed > 1.5 * big["n_bytes"] * 3
    # The flat ring's bus bandwidth cannot beat the link: every step sends n/p over it.
    assert ring["busbw"] <= 1.05 * gbit * 1e9 / 8
    # The hierarchy sends n instead of 1.5 n over the link (2 nodes x 2 ranks).
    assert hier["seconds"] < ring["seconds"]


@needs_cluster
def test_gloo_bench_across_two_nodes_is_correct_and_crosses_the_link():
    data = _bench("--engine", "gloo", "--nodes", "2", "--ranks", "4", "--link-gbit", "2",
                  "--algorithms", "ring,hierarchical", "-b", "1M", "-e", "1M", "-n", "2", "-w", "1")  # fmt: skip
    assert data["engine"] == "gloo" and data["p"] == 4
    assert all(r["wrong"] == 0 for row in data["rows"] for r in row["results"].values())
    assert data["link_bytes"]["node1"]["received"] > 3 * (1 << 20)


@needs_cluster
def test_ddp_under_torchrun_on_two_nodes_equals_one_node():
    pytest.importorskip("torch")
    from distlib.engines import run_torch, run_torchrun

    args = ["--steps", "5"]
    one = run_torch("distlib.examples.torch_ddp:main", 2, args=args, timeout=120)
    with mini_cluster(2, link_gbit=1) as cluster:
        two = run_torchrun("distlib.examples.torch_ddp", 2, args=args, timeout=120, cluster=cluster)
        assert cluster.link_bytes(1).received > 0
    assert two.network == "mini cluster" and two.nodes == {0: "node0", 1: "node1"}

    def final(result):
        return [line for line in result.stdout[0].splitlines() if line.startswith("parameter hashes")][-1]

    assert "parameters identical on all ranks: True" in two.stdout[0]
    assert final(two) == final(one)
    assert _ours() == []


# ----------------------------------------------------------------------------
# Faults and the watchdog
# ----------------------------------------------------------------------------


def _start(fn):
    box = {}

    def body():
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, box


def _wait_for(predicate, limit=60.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out waiting")


LONG = ["allreduce", "--engine", "mpi", "-b", "4M", "-e", "4M", "-n", "100000", "-w", "1", "--quiet"]


@pytest.mark.parametrize("engine", ["mpi", "gloo"])
def test_watchdog_names_a_stopped_rank(engine):
    if engine == "gloo":
        pytest.importorskip("torch")
    from distlib.engines import RunStalled, run_mpi, run_torch, stray_processes

    mark = uuid.uuid4().hex
    args = [a if a != "mpi" else engine for a in LONG]
    if engine == "mpi":
        fn = lambda: run_mpi("distlib.bench", 2, args=args, timeout=300, stall=4, env={"DISTLIB_TEST_MARK": mark})  # noqa: E731
        rank_var = "PMI_RANK"
    else:
        fn = lambda: run_torch("distlib.bench:_torch_rank_main", 2, args=args, timeout=300, stall=4,  # noqa: E731
                               env={"DISTLIB_TEST_MARK": mark})
        rank_var = "RANK"
    t, box = _start(fn)
    pids = _wait_for(lambda: (lambda d: d if len(d) == 2 else None)(_rank_pids(mark, rank_var=rank_var)))
    _wait_for(lambda: "allreduce" in _doing(pids[1], 1))  # into the timed loop
    os.kill(pids[1], signal.SIGSTOP)
    stopped = time.monotonic()
    t.join(60)
    assert not t.is_alive()
    assert time.monotonic() - stopped < 30
    err = box.get("error")
    assert isinstance(err, RunStalled), box
    assert err.rank == 1 and "rank 1 on node" in str(err) and "allreduce" in str(err) and "SIGSTOP" in str(err)
    assert stray_processes(err.result.run_id) == [] and _marked(mark) == []


@needs_cluster
@pytest.mark.parametrize("fault", ["kill", "cut"])
def test_losing_a_node_ends_the_run_and_names_it(fault):
    from distlib.engines import RunError, run_mpi, stray_processes

    mark = uuid.uuid4().hex
    with mini_cluster(2, link_gbit=1) as cluster:
        fn = lambda: run_mpi("distlib.bench", 4, args=LONG, timeout=300, stall=4, cluster=cluster,  # noqa: E731
                             env={"DISTLIB_TEST_MARK": mark})
        t, box = _start(fn)
        pids = _wait_for(lambda: (lambda d: d if len(d) == 4 else None)(_rank_pids(mark, rank_var="PMI_RANK")))
        _wait_for(lambda: "allreduce" in _doing(pids[3], 3))
        start = time.monotonic()
        if fault == "kill":
            for rank in (2, 3):  # every rank of node1
                os.kill(pids[rank], signal.SIGKILL)
        else:
            cluster.cut(1)
        t.join(60)
        assert not t.is_alive() and time.monotonic() - start < 30
    err = box.get("error")
    assert isinstance(err, RunError), box
    assert "node1" in str(err)
    assert stray_processes(err.result.run_id) == [] and _marked(mark) == []
    assert _ours() == []


def test_switched_off_gets_a_clear_error(monkeypatch):
    monkeypatch.setenv("DISTLIB_MINICLUSTER", "0")
    assert "DISTLIB_MINICLUSTER=0" in minicluster_support()
    with pytest.raises(MiniClusterUnavailable, match="turned off"):
        MiniCluster(2)


def test_two_level_widget_follows_its_controls():
    pytest.importorskip("ipywidgets")
    from distlib.widgets.minicluster import TwoLevelWidget

    widget = TwoLevelWidget(nodes=2, ranks_per_node=2, link_bandwidth=1e9 / 8, intra_bandwidth=1e12,
                            alpha_inter=1e-7, alpha_intra=1e-7, n_bytes=1e9)  # fmt: skip
    assert widget.result.gain == pytest.approx(1.5, rel=0.02)  # link-bound: 1.5 n against n over the link
    assert widget.fig.image.value[:4] == b"\x89PNG"
    widget.ranks_slider.value = 8
    assert widget.result.gain == pytest.approx(15 / 8 / 1.0, rel=0.03)
    widget.size_slider.value = 1e3  # tiny buffers: latency decides, and the hierarchy takes fewer slow steps
    assert widget.result.seconds["hierarchical"] < widget.result.seconds["ring"]
    assert "x" in widget.summary.value


def _fake_races():
    from distlib.collectives.measured import Race, RaceRow

    def one(gbit, ring, hier):
        row = RaceRow(16 << 20, {"ring": 1.0, "hierarchical": 0.7}, {"ring": ring, "hierarchical": hier}, {})
        return Race(2, 4, gbit, "mpi", ("ring", "hierarchical"), [row], {}, 3e9, "veth")

    return [one(1, 1.0e8, 1.5e8), one(4, 3.6e8, 4.2e8)]


def test_race_plot_fits_a_phone_with_its_legend_under_the_bars():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from distlib.plots.pictures import NARROW, render_pair
    from distlib.plots.minicluster import plot_race

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    plot_race(ax, _fake_races())
    ax.set_title("2 nodes x 2 ranks, 16 MiB per rank")
    fig.tight_layout()
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    assert ax.get_legend().get_window_extent(r).y1 < ax.xaxis.label.get_window_extent(r).y0
    wide, narrow = render_pair(fig)  # raises if the phone drawing is wider than NARROW
    assert narrow.width <= NARROW and narrow.height > wide.height  # one legend column on a phone
    plt.close(fig)


def test_two_level_widget_reads_mb_per_s_below_a_gb_per_s_and_keeps_its_legend_off_the_curves():
    pytest.importorskip("ipywidgets")
    from distlib.static.mode import frames_mode
    from distlib.widgets.minicluster import TwoLevelWidget

    for phone in (False, True):
        with frames_mode(None, narrow=phone):
            widget = TwoLevelWidget(nodes=2, ranks_per_node=2, link_bandwidth=1e9 / 8)
        ax = widget.fig.ax
        assert widget.fig.narrow == phone
        assert ax.get_ylabel() == "bus bandwidth (MB/s)"
        fig = widget.fig.figure
        r = fig.canvas.get_renderer()
        legend = ax.get_legend().get_window_extent(r)
        assert legend.y1 < ax.get_window_extent(r).y0  # under the axes
        assert legend.x0 >= 0 and legend.x1 <= fig.bbox.x1
        widget.link_slider.value = 100e9 / 8
        assert ax.get_ylabel() == "bus bandwidth (GB/s)"
