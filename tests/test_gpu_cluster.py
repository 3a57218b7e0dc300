"""Laws of the GPU-cluster model (distlib.gpu_cluster) and its published calibration."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import distlib as dl

SIZES = 2.0 ** np.arange(3, 35)
IB8 = 8 * 400e9 / 8  # eight 400 Gb/s NICs, one direction, bytes/s


def clusters():
    return [dl.gpu_cluster(1), dl.gpu_cluster(1, nvls=False), dl.gpu_cluster(1, accelerator="A100"),
            dl.gpu_cluster(2, nic_bandwidth=IB8), dl.gpu_cluster(16, nic_bandwidth=IB8),
            dl.gpu_cluster(16, nic_bandwidth=IB8, sharp=True), dl.gpu_cluster(128, nic_bandwidth=50e9),
            dl.gpu_cluster(4, gpus_per_node=1, nic_bandwidth=50e9, accelerator="B200")]


@pytest.mark.parametrize("cluster", clusters(), ids=lambda c: c.describe())
def test_time_grows_and_busbw_stays_under_the_physical_ceiling(cluster):
    preds = [dl.predict("allreduce", n, cluster) for n in SIZES]
    times = np.array([p.time for p in preds])
    assert np.all(np.diff(times) > 0)  # more bytes never take less time
    busbw = np.array([p.busbw for p in preds])
    # Without in-switch reduction busbw cannot pass the line rates; with NVLS or SHARP it can pass
    # NVLink's, but each GPU still sends its buffer at least once: algbw <= line rate.
    ceiling = cluster.link_bandwidth
    if cluster.nodes > 1:
        ceiling = min(ceiling, cluster.nic_bandwidth * (2 if cluster.nodes == 2 or cluster.sharp else 1))
    if not (cluster.nvls or cluster.sharp or cluster.nodes == 2):
        assert busbw.max() <= ceiling * 1.0001
    algbw = np.array([p.algbw for p in preds])
    assert algbw.max() <= cluster.link_bandwidth


def test_calibration_reproduces_the_rows_it_was_fitted_on():
    fit = {r.id: r for r in dl.published_results() if r.role == "fit"}
    one = dl.gpu_cluster(1)
    assert dl.predict_busbw("allreduce", 2**33, one) == pytest.approx(fit["h100_1x8_nvls"].busbw, rel=0.01)
    ring = dl.predict("allreduce", 2**33, one, algorithm="ring")
    assert ring.busbw == pytest.approx(fit["h100_1x8_ring"].busbw, rel=0.01)
    assert dl.calibration().nic_efficiency == pytest.approx(47 / 50)


def test_heldout_rows_median_error_within_ten_percent():
    errs = []
    for r in dl.published_results():
        if r.role != "heldout":
            continue
        p = dl.predict(r.collective, r.n_bytes, r.cluster(), algorithm=r.algorithm)
        errs.append(abs(p.time / r.time - 1) if r.time else abs(p.busbw / r.busbw - 1))
    assert len(errs) >= 10
    assert np.median(errs) <= 0.10


def test_every_published_row_names_a_source_url():
    for r in dl.published_results():
        assert r.source.startswith("https://"), r.id


def test_single_node_beats_multi_node_and_more_nics_help():
    one = dl.predict_busbw("allreduce", 2**32, dl.gpu_cluster(1, nvls=False))
    many = dl.predict_busbw("allreduce", 2**32, dl.gpu_cluster(16, nic_bandwidth=IB8, nvls=False))
    one_nic = dl.predict_busbw("allreduce", 2**32, dl.gpu_cluster(16, nic_bandwidth=IB8 / 8, nvls=False))
    assert one > many > one_nic
    # With one 400 Gb/s NIC per node the ring runs at that NIC's rate: about 47 GB/s.
    assert one_nic == pytest.approx(47e9, rel=0.02)


def test_nvls_raises_single_node_busbw_and_sharp_cuts_latency_at_scale():
    on = dl.predict_busbw("allreduce", 2**33, dl.gpu_cluster(1, nvls=True))
    off = dl.predict_busbw("allreduce", 2**33, dl.gpu_cluster(1, nvls=False))
    assert on > 1.2 * off
    plain = dl.gpu_cluster(256, nic_bandwidth=IB8)
    sharp = dl.gpu_cluster(256, nic_bandwidth=IB8, sharp=True)
    assert dl.predict_time("allreduce", 8, sharp) < dl.predict_time("allreduce", 8, plain)
    assert dl.predict("allreduce", 8, sharp).algorithm in ("collnet_direct", "nvls")


def test_blackwell_nvls_takes_nccls_lower_efficiency_and_meets_the_b300_figure():
    h100 = dl.predict("allreduce", 2**33, dl.gpu_cluster(1), algorithm="nvls")
    b200 = dl.predict("allreduce", 2**33, dl.gpu_cluster(1, accelerator="B200"), algorithm="nvls")
    # NVLink 5 runs at twice NVLink 4's rate; NCCL's tuner gives Blackwell's NVLS 0.74 of it where Hopper's gets 0.85.
    assert b200.algbw / h100.algbw == pytest.approx(2 * 0.74 / 0.85, rel=0.01)
    b300 = {r.id: r for r in dl.published_results()}["b300_1x8_nvls_2140"]
    assert b200.busbw == pytest.approx(b300.busbw, rel=0.05)
    # NCCL's one-node LL cap on Blackwell is 2 * 141 GB/s (llMaxBws), not Hopper's 141.
    ll = dl.predict("allreduce", 2**33, dl.gpu_cluster(1, accelerator="B200"), algorithm="ring", protocol="LL")
    assert ll.busbw == pytest.approx(282e9, rel=0.01)


def test_collnet_chain_runs_at_half_the_nvlink_ring_rate_and_never_past_the_nics():
    # Every byte goes up the chain and back down it: algbw is half the chain's NVLink busbw.
    sharp = dl.gpu_cluster(12, nic_bandwidth=IB8, sharp=True)
    chain = dl.predict("allreduce", 2**33, sharp, algorithm="collnet_chain")
    ring_one_node = dl.predict("allreduce", 2**33, dl.gpu_cluster(1, nvls=False), algorithm="ring").busbw
    assert chain.algbw == pytest.approx(ring_one_node / 2, rel=0.01)
    # SHARP sends each node's sum once through its NICs: a node of few NICs is held to their rate.
    thin = dl.gpu_cluster(12, nic_bandwidth=IB8 / 8, nics=1, sharp=True)
    assert dl.predict("allreduce", 2**33, thin, algorithm="collnet_chain").algbw <= 0.8 * IB8 / 8 * 1.0001
    # The published run it is checked on (CoreWeave, CollNet Chain forced) is within 10 %.
    cw = {r.id: r for r in dl.published_results()}["h100_12x8_sharp_cw"]
    assert cw.sharp and cw.algorithm == "collnet_chain"
    assert dl.predict(cw.collective, cw.n_bytes, cw.cluster(), algorithm=cw.algorithm).busbw == pytest.approx(
        cw.busbw, rel=0.10)
    with pytest.raises(ValueError, match="algorithm"):
        dl.predict("allreduce", 2**33, dl.gpu_cluster(12, nic_bandwidth=IB8), algorithm="collnet_chain")


def test_small_messages_pick_low_latency_protocols_and_large_ones_simple():
    c = dl.gpu_cluster(16, nic_bandwidth=IB8)
    assert dl.predict("allreduce", 8, c).protocol == "LL"
    assert dl.predict("allreduce", 2**33, c).protocol == "Simple"


def test_training_step_time_splits_into_buckets():
    c = dl.gpu_cluster(16, nic_bandwidth=IB8)
    whole = dl.step_allreduce_time(1e9, c)
    buckets = dl.step_allreduce_time(1e9, c, bucket_bytes=25 * 2**20)
    assert buckets > whole  # each bucket pays the latency again
    assert buckets < 38 * whole  # at most one whole-buffer time per bucket (1e9 / 25 MiB = 38 buckets)


@settings(max_examples=40, deadline=None)
@given(nodes=st.integers(1, 512), gpn=st.sampled_from([1, 2, 4, 8]), n=st.floats(0, 1e11))
def test_prediction_is_finite_and_positive(nodes, gpn, n):
    c = dl.gpu_cluster(nodes, gpus_per_node=gpn, nic_bandwidth=IB8 if nodes > 1 else None)
    p = dl.predict("all_reduce", n, c)
    if c.p == 1:
        assert p.time == 0.0
    else:
        assert math.isfinite(p.time) and p.time > 0 and p.busbw >= 0


@pytest.mark.parametrize("kwargs, match", [
    (dict(nodes=0), "nodes"),
    (dict(nodes=2), "nic_bandwidth"),
    (dict(nodes=2, nic_bandwidth=-1.0), "nic_bandwidth"),
    (dict(nodes=1, gpus_per_node=0), "gpus_per_node"),
    (dict(nodes=1, accelerator="A100", nvls=True), "nvls"),
    (dict(nodes=1, network="carrier pigeon"), "network"),
    (dict(nodes=1, accelerator="H900"), "H900"),
])
def test_bad_cluster_arguments_name_the_argument(kwargs, match):
    nodes = kwargs.pop("nodes")
    with pytest.raises((ValueError, KeyError), match=match):
        dl.gpu_cluster(nodes, **kwargs)


def test_bad_prediction_arguments():
    c = dl.gpu_cluster(1)
    with pytest.raises(ValueError, match="collective"):
        dl.predict_busbw("alltoall", 8, c)
    with pytest.raises(ValueError, match="n_bytes"):
        dl.predict_busbw("allreduce", -1, c)
    with pytest.raises(TypeError, match="cluster"):
        dl.predict_busbw("allreduce", 8, "8xH100")
    with pytest.raises(ValueError, match="algorithm"):
        dl.predict("allreduce", 8, c, algorithm="nvls_tree")  # needs two nodes
    with pytest.raises(ValueError, match="protocol"):
        dl.predict("allreduce", 8, c, protocol="LL64")


def test_collective_names_accept_torch_and_nccl_tests_spellings():
    assert dl.canonical_collective("all_reduce") == "allreduce"
    assert dl.collective_time("all_gather", 1e6, 8, alpha=0, bandwidth=1e9) == dl.collective_time(
        "allgather", 1e6, 8, alpha=0, bandwidth=1e9)
    assert dl.bus_factor("reduce-scatter", 8) == pytest.approx(7 / 8)


def _error(r) -> float:
    p = dl.predict(r.collective, r.n_bytes, r.cluster(), algorithm=r.algorithm)
    return p.time / r.time - 1 if r.time else p.busbw / r.busbw - 1


def test_every_published_sharp_and_nvls_row_within_fifteen_percent():
    """In-network reduction predicted as closely as the ring and tree rows (issue 35): every held-out row run with
    NVLS on or with SHARP. Before NVLS kept its node's bus rate across nodes and SHARP its 20 GB/s per HDR NIC,
    the two-node NVLSTree row was 19 % high and the A100 SHARP table 14 %."""
    rows = [r for r in dl.published_results() if r.role == "heldout" and (r.nvls or r.sharp)]
    assert len(rows) >= 7
    errors = {r.id: _error(r) for r in rows}
    assert max(abs(e) for e in errors.values()) < 0.15, errors


def test_nvls_keeps_one_nodes_bus_bandwidth_across_nodes():
    """NCCL 2.28's model: NVLS's bus rate is a node's, so nccl-tests' busbw does not grow with the nodes (nccl #1221
    measured 430 GB/s on one and on two nodes of 8 H100)."""
    one = dl.predict("allreduce", 2**33, dl.gpu_cluster(1), algorithm="nvls")
    for nodes in (2, 4, 16):
        fat = dl.gpu_cluster(nodes, nic_bandwidth=4 * IB8, sharp=True)  # NICs no bottleneck
        for algorithm in ("nvls", "nvls_tree"):
            assert dl.predict("allreduce", 2**33, fat, algorithm=algorithm).busbw <= one.busbw * 1.0001


def test_sharp_moves_at_most_its_share_of_the_nics_line_rate():
    for gpn, nics in ((8, 8), (8, 4), (4, 4)):
        c = dl.gpu_cluster(8, gpus_per_node=gpn, accelerator="A100", nic_bandwidth=nics * 25e9, nics=nics, sharp=True)
        for algorithm in ("collnet_direct", "collnet_chain"):
            assert dl.predict("allreduce", 2**33, c, algorithm=algorithm).algbw <= 20 / 25 * c.nic_bandwidth * 1.0001
