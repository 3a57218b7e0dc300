"""A real GPU cluster, and the bus bandwidth nccl-tests would print on it.

Chapter 2 and chapter 7 use this model. A cluster is ``nodes`` nodes of
``gpus_per_node`` GPUs. Inside a node the GPUs meet on their scale-up fabric
(NVLink through NVSwitch; on Hopper and later the switch can reduce in the
network: NVLink SHARP, "NVLS"). Each node has several NICs (rails) into a
scale-out network (InfiniBand, RoCE, EFA or TCP); ``nic_bandwidth`` is their
total, one direction. The scale-out switches may reduce too (SHARP, which NCCL
drives through its CollNet algorithms).

NCCL chooses, for every call, the algorithm and protocol its tuner predicts to
be fastest: ``time = latency + n_bytes / algbw``. This module follows NCCL's
tuner (``src/graph/tuning.cc`` in https://github.com/NVIDIA/nccl) in structure
and takes its constants from it as they stand in NCCL 2.23 to 2.27 (tags
``v2.23.4-1`` to ``v2.27.7-1``; 2.23 gave Tree/Simple the latencies used here),
but for NVLS's in-node bandwidth, which follows 2.28 (``v2.28.3-1`` to
``v2.30.7-1``: a bus rate per node, the same whatever the nodes, and a cap per
NVLS head on NVLSTree), because the published measurements behave so:

* algorithms: ``ring`` (one flat ring per channel, through every GPU and, across
  nodes, one NIC per ring), ``tree`` (chains in the node, double binary tree
  across nodes), ``nvls`` (NVLS in one node; across nodes only with SHARP),
  ``nvls_tree`` (NVLS in the node, a tree across nodes), ``collnet_direct``
  (each GPU to its own NIC inside the node, SHARP in the scale-out switches)
  and ``collnet_chain`` (a chain through the node's GPUs, SHARP across nodes;
  NCCL 2.28.3's release notes: "temporarily disables COLLNET_CHAIN for >8
  GPUs");
* protocols: ``LL`` (8-byte flag+data stores: lowest latency, half the
  bandwidth), ``LL128`` (128-byte lines, 120 of them data: 0.92 of the
  bandwidth) and ``Simple`` (full bandwidth, the most latency);
* latencies (microseconds): ``baseLat`` and ``hwLat`` tables, per algorithm,
  protocol and hop type (NVLink or network), and the way they add up over
  ``2 (p - 1)`` ring steps or ``2 log2(nodes)`` tree levels;
* bandwidth refinements: ring LL x 0.5 capped by ``llMaxBws``, ring LL128
  x 0.92, tree x 0.92 (LL / 3.8, LL128 x 120/128 across nodes or 7/9 in one),
  tree and CollNet algbw = half their bus rate (CollNet's bus rate is the
  NVLink one, the NICs capping algbw), NVLS and NVLSTree across nodes: the
  node's NVLS bus rate ``2 R (h - 1)/h`` over ``h`` heads turned into algbw
  like a ring's, ``p / (2 (p - 1))`` (2.28; ``R`` the one-node NVLS algbw),
  and the network side 5/6 of the NICs' rate (2.27), halved beyond two nodes
  for NVLSTree, whose bus rate NCCL caps at ``perChMaxNVLSTreeBws`` per head
  (2.28: Hopper 57.7 GB/s on two nodes, 45.5 on more); CollNet Direct x 0.85 on
  Hopper and Blackwell, and the Ampere busBw cap of 235 GB/s. That cap is older than the
  other constants: NCCL 2.7.5 to 2.17 applied ``min(busBw, 235)`` on compute
  capability 8.0 to every algorithm before the refinements above (2.17 also
  capped Hopper at 370), and 2.18 dropped it. It stays here because A100 nodes
  still measure about that much (232.5 GB/s, nccl-tests #175; "~230GB/s",
  sjeaugey in nccl-tests #149). The model applies it to the NVLink rate that
  the ring, the tree on up to two nodes and CollNet start from; the other
  algorithms start from the NICs' rate, which on A100 nodes is lower.

What NCCL learns from probing the machine (``bwIntra``, ``bwInter`` and the
number of channels of each graph) is replaced here by three efficiencies
calibrated on published figures (``distlib/data/nccl_published.csv``, rows
whose ``role`` is ``fit``; every other row is held out and compared in
``benchmarks/bench_cluster_model.py``):

* ``ring_efficiency``: the fraction of the NVLink line rate a ring's busbw
  reaches (370 of 450 GB/s on H100, NCCL's maintainer in nccl-tests #212);
* ``nvls_efficiency``: NVLS algbw over the NVLink line rate (275 of 450 GB/s,
  the same comment: busbw ~480 GB/s on 8 H100). It is Hopper's. On Blackwell
  the model scales it by the ratio of NCCL's own per-generation
  ``nvlsEfficiency`` (Blackwell 0.74 over Hopper 0.85, ``tuning.cc`` since
  v2.28.3-1): 0.53 of NVLink 5, about 478 of 900 GB/s. One held-out figure
  checks it, eight B300s measured by a user (nccl #2140), which have the same
  NVLink 5 and NVSwitch generation as the table's B200;
* ``nic_efficiency``: the fraction of a NIC's line rate NCCL moves (47 of
  50 GB/s for a 400 Gb/s NDR NIC, nccl-tests #290).

The ring's busbw across nodes is ``min(ring_efficiency * link_bandwidth,
nic_efficiency * nic_bandwidth)``: with one NIC per GPU each of the node's
rings leaves it through its own NIC, so all NICs work in parallel and the
node's *total* NIC bandwidth is what a ring sees, not one NIC's (a DGX A100's
8 x 200 Gb/s gives 192 GB/s, nccl #812). Numbers are SI: bytes, seconds,
bytes/s.

The EFA and TCP networks are not calibrated: they use InfiniBand's efficiency
and latency, which makes their predictions upper bounds.

In-network reduction across nodes (``sharp=True``). A NIC carries less
through SHARP than point to point: "~20 GB/s per NIC" of an HDR NIC's 25
(sjeaugey, NVIDIA, nccl #320), which the model applies to every NIC of every
algorithm that reduces in the scale-out switches (``_SHARP_NIC_SHARE``, a
maintainer's figure, not a fit). Three published figures with InfiniBand
SHARP are held out (``sharp`` rows of the table; the examples of
:func:`predict` compute the model's side):

* 12 x 8 H100, eight 400 Gb/s NICs a node, CollNet Chain forced (CoreWeave's
  nccl-tests README, NCCL 2.18): busbw 387 GB/s at 8 GiB; the model's
  CollNet Chain 366 (-5 %).
* 4 x 8 A100, four 200 Gb/s NICs a node, NCCL's choice (the same README, NCCL
  2.14): 160 GB/s; the model picks CollNet Chain at 155 (-3 %), its four NICs
  at 20 GB/s each (+14 % with a NIC's point-to-point 0.94).
* DGX A100, eight 200 Gb/s NICs: "~220 GB/s BusBw" (the same comment); the
  model 234 (+6 %), there held by NVLink, not the NICs.

NVLS across nodes. One node's NVLS bus rate is what nccl-tests prints on
more nodes too: 430 GB/s on one and on two nodes of 8 H100 (nccl #1221), the
model 479 and 460 (+11 % and +7 %: that machine's ring is as far below the
maintainers' 370). With SHARP the model, like NCCL's tuner, picks NVLS for
large buffers on H100 and H200: 479 GB/s busbw on the 12 x 8 H100 cluster
above. No published multi-node table of NVLS with SHARP was found, so read
that pick as the tuner's expectation, not as a checked prediction; it is
24 % above the CollNet Chain table the same cluster printed.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

import numpy as np

from ._check import check_choice, check_int, check_real
from .collectives import bus_factor, canonical_collective
from .hardware import Accelerator, accelerator as _accelerator
from .units import BITS_PER_BYTE, BITS_PER_GBIT, bytes_per_s_to_gbit

__all__ = [
    "NETWORKS",
    "NCCL_ALGORITHMS",
    "NCCL_PROTOCOLS",
    "Calibration",
    "calibration",
    "GpuCluster",
    "gpu_cluster",
    "Candidate",
    "Prediction",
    "predict",
    "predict_busbw",
    "predict_time",
    "predict_table",
    "step_allreduce_time",
    "PublishedResult",
    "published_results",
]

NETWORKS = ("infiniband", "roce", "efa", "tcp")
NCCL_ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain")
NCCL_PROTOCOLS = ("LL", "LL128", "Simple")

#: NVSwitch generations that reduce in the switch (NVLink SHARP): third
#: (HGX H100/H200) and fourth (HGX B200). Default of ``nvls``.
_NVLS_CAPABLE = frozenset({"H100", "H200", "B200"})
#: GPUs whose scale-up link NCCL drives (the tuner's GPU generations).
_GENERATION = {"A100": "ampere", "H100": "hopper", "H200": "hopper", "B200": "blackwell"}

US = 1e-6
GB = 1e9

# --- constants of NCCL's tuner, src/graph/tuning.cc (NCCL 2.23-2.27) ---------
# baseLat [algorithm][protocol], microseconds.
_BASE_LAT = {
    "tree": {"LL": 6.8, "LL128": 14.0, "Simple": 8.4},
    "ring": {"LL": 6.6, "LL128": 14.0, "Simple": 8.4},
    "collnet_direct": {"Simple": 0.0},
    "collnet_chain": {"Simple": 0.0},
    "nvls": {"Simple": 0.0},
    "nvls_tree": {"Simple": 0.0},
}
# hwLat [NVLink | network][algorithm][protocol], microseconds.
_HW_LAT = {
    "nvlink": {
        "tree": {"LL": 0.6, "LL128": 1.25, "Simple": 4.0},
        "ring": {"LL": 0.6, "LL128": 1.9, "Simple": 3.4},
        "collnet_direct": {"Simple": 3.7},
        "collnet_chain": {"Simple": 2.8},
        "nvls": {"Simple": 25.0},
        "nvls_tree": {"Simple": 25.0},
    },
    "net": {
        "tree": {"LL": 5.0, "LL128": 8.5, "Simple": 14.0},
        "ring": {"LL": 2.7, "LL128": 4.0, "Simple": 14.0},
        "collnet_direct": {"Simple": 31.0},
        "collnet_chain": {"Simple": 30.0},
        "nvls": {"Simple": 18.0},
        "nvls_tree": {"Simple": 14.0},
    },
}
# llMaxBws (GB/s): one node by GPU generation; several nodes by CPU (x86 Intel row).
# Blackwell's row is 2*141.0 in every release that has one (v2.25.1-1 on).
_LL_MAX_BW_ONE_NODE = {"ampere": 87.7, "hopper": 141.0, "blackwell": 282.0}
_LL_MAX_BW_NODES = {2: 39.0, "more": 20.4}
# getNetOverhead: 1 us per network post on x86 Intel, three times that for Simple.
_NET_OVERHEAD = 1.0
# nvlsEfficiency [generation], tuning.cc since v2.28.3-1 (HEAD lines 139-144): how much of NVLink
# NVLS reaches in NCCL's own model. Only the ratio to Hopper is used, as the model's NVLS
# efficiency is calibrated on H100.
_NVLS_EFFICIENCY = {"hopper": 0.85, "blackwell": 0.74}
# perChMaxNVLSTreeBws [generation][2 nodes | more] (GB/s per NVLS head), tuning.cc since v2.28.3-1: NCCL's
# cap on NVLSTree's bus bandwidth per channel.
_NVLS_TREE_MAX_BW_PER_HEAD = {"hopper": {2: 57.7, "more": 45.5}, "blackwell": {2: 96.0, "more": 80.0}}
# What a NIC carries through SHARP, of its line rate: "My rule of thumb is ~20 GB/s per NIC" on 25 GB/s HDR
# (sjeaugey, NVIDIA, https://github.com/NVIDIA/nccl/issues/320, 2023-01-03), below the 0.94 a NIC moves point
# to point. Applied to the network side of every algorithm that reduces in the scale-out switches.
_SHARP_NIC_SHARE = 20 / 25
# Ampere busBw cap (compCap80: min(busBw, 235 GB/s) for every algorithm), tuning.cc from
# commit 01afd20a77b5804e0ecf1042509dd9d20ebf9e93 (2.7.5) to 2.17.1; removed in 2.18.1.
_AMPERE_BUSBW_CAP = 235e9


@dataclass(frozen=True)
class PublishedResult:
    """One figure from ``distlib/data/nccl_published.csv`` (SI units)."""

    id: str
    role: str  # "fit" or "heldout"
    kind: str  # "table", "maintainer" or "user"
    accelerator: str
    nodes: int
    gpus_per_node: int
    nics: int
    nic_bits_per_s: float  # one NIC's line rate, bits/s
    network: str
    nvls: bool | None
    sharp: bool  # in-network reduction in the InfiniBand switches (SHARP, NCCL's CollNet)
    algorithm: str | None
    collective: str
    n_bytes: float
    busbw: float  # bytes/s (0 when the row is a latency)
    time: float | None  # seconds, when the row gives one
    source: str
    note: str

    @property
    def nic_bandwidth(self) -> float:
        """The node's total NIC bandwidth, bytes/s one direction."""
        return self.nics * self.nic_bits_per_s / BITS_PER_BYTE

    def cluster(self) -> "GpuCluster":
        """The :class:`GpuCluster` this row ran on."""
        return gpu_cluster(self.nodes, gpus_per_node=self.gpus_per_node, accelerator=self.accelerator,
                           nic_bandwidth=self.nic_bandwidth if self.nics else None, nvls=self.nvls,
                           network=self.network or "infiniband", nics=self.nics or None, sharp=self.sharp)


def _rows(name: str):
    text = resources.files("distlib.data").joinpath(name).read_text(encoding="utf-8")
    return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))


@lru_cache(maxsize=None)
def published_results() -> tuple:
    """Every published figure the model is compared with, as :class:`PublishedResult`.

    Examples
    --------
    >>> rows = published_results()
    >>> sorted({r.role for r in rows})
    ['fit', 'heldout']
    >>> all(r.source.startswith("http") for r in rows)
    True
    """
    out = []
    for r in _rows("nccl_published.csv"):
        out.append(PublishedResult(
            id=r["id"], role=r["role"], kind=r["kind"], accelerator=r["accelerator"], nodes=int(r["nodes"]),
            gpus_per_node=int(r["gpus_per_node"]), nics=int(r["nics"]),
            nic_bits_per_s=float(r["nic_gbit"]) * BITS_PER_GBIT,
            network=r["network"], nvls=None if r["nvls"] == "" else bool(int(r["nvls"])),
            sharp=bool(int(r["sharp"] or 0)),
            algorithm=r["algorithm"] or None, collective=r["collective"], n_bytes=float(r["n_bytes"]),
            busbw=float(r["busbw_GBps"]) * GB, time=float(r["time_us"]) * US if r["time_us"] else None,
            source=r["source"], note=r["note"]))
    return tuple(out)


@dataclass(frozen=True)
class Calibration:
    """The three efficiencies the model takes from published figures.

    Attributes
    ----------
    ring_efficiency : float
        Ring busbw over the NVLink line rate (one direction).
    nvls_efficiency : float
        NVLS algbw over the NVLink line rate.
    nic_efficiency : float
        Bytes/s NCCL moves through a NIC over its line rate.
    sources : dict
        Efficiency name -> the published row id it was computed from.
    """

    ring_efficiency: float
    nvls_efficiency: float
    nic_efficiency: float
    sources: dict = field(repr=False, hash=False, compare=False)


@lru_cache(maxsize=None)
def calibration() -> Calibration:
    """Compute the model's efficiencies from the ``fit`` rows of the published table.

    Examples
    --------
    >>> c = calibration()
    >>> round(c.ring_efficiency, 3), round(c.nvls_efficiency, 3), round(c.nic_efficiency, 2)
    (0.822, 0.61, 0.94)
    """
    fit = {r.id: r for r in published_results() if r.role == "fit"}
    ring, nvls, nic = fit["h100_1x8_ring"], fit["h100_1x8_nvls"], fit["nic_ndr"]
    link = _accelerator(ring.accelerator).link_bandwidth
    p = nvls.nodes * nvls.gpus_per_node
    return Calibration(
        ring_efficiency=ring.busbw / link,
        nvls_efficiency=nvls.busbw / bus_factor("allreduce", p) / _accelerator(nvls.accelerator).link_bandwidth,
        nic_efficiency=nic.busbw / nic.nic_bandwidth,
        sources={"ring_efficiency": ring.id, "nvls_efficiency": nvls.id, "nic_efficiency": nic.id},
    )


@dataclass(frozen=True)
class GpuCluster:
    """Nodes of GPUs on a scale-up fabric, joined by NICs into a network.

    Build one with :func:`gpu_cluster`. All bandwidths are bytes/s, one direction.
    """

    nodes: int
    gpus_per_node: int
    accelerator: Accelerator
    nic_bandwidth: float | None
    nics: int
    nvls: bool
    sharp: bool
    network: str

    @property
    def p(self) -> int:
        """GPUs (ranks) in all."""
        return self.nodes * self.gpus_per_node

    @property
    def link_bandwidth(self) -> float:
        """One GPU's scale-up line rate (NVLink), bytes/s one direction."""
        return self.accelerator.link_bandwidth

    @property
    def nic_bandwidth_per_gpu(self) -> float:
        """The node's NIC bandwidth shared by its GPUs, bytes/s one direction (0 on one node)."""
        return (self.nic_bandwidth or 0.0) / self.gpus_per_node

    def describe(self) -> str:
        """One line naming the cluster, e.g. for a table caption."""
        text = f"{self.nodes} x {self.gpus_per_node} {self.accelerator.name}"
        if self.nodes > 1:
            nics = f"{self.nics} NIC" + ("s" if self.nics > 1 else "")
            text += f", {nics} = {bytes_per_s_to_gbit(self.nic_bandwidth):.0f} Gb/s per node ({self.network})"
        return text + (", NVLS" if self.nvls else "") + (", SHARP" if self.sharp else "")


def gpu_cluster(nodes, *, gpus_per_node=8, accelerator="H100", nic_bandwidth=None, nvls=None, sharp=False,
                network="infiniband", nics=None) -> GpuCluster:
    """Describe a GPU cluster for :func:`predict_busbw`.

    Parameters
    ----------
    nodes : int
        Number of nodes (>= 1).
    gpus_per_node : int
        GPUs per node on one scale-up fabric (1 to 72).
    accelerator : str or Accelerator
        A GPU of the hardware table (:func:`distlib.accelerator`); its
        ``link_bandwidth`` is the scale-up rate.
    nic_bandwidth : float, optional
        The node's total scale-out bandwidth over all its NICs, bytes/s one
        direction (8 x 400 Gb/s = 400e9). Required when ``nodes > 1``.
    nvls : bool, optional
        Whether the scale-up switch reduces in the network (NVLink SHARP).
        Default: what the GPU's NVSwitch supports (H100, H200, B200: yes).
    sharp : bool
        In-network reduction in the scale-out switches (InfiniBand SHARP:
        enables CollNet Direct, CollNet Chain and, on NVLS GPUs, NVLS across
        nodes). Checked against few published figures; see the module's
        notes on SHARP.
    network : str
        ``"infiniband"``, ``"roce"``, ``"efa"`` or ``"tcp"`` (the last two
        uncalibrated: predictions are upper bounds).
    nics : int, optional
        NICs per node (default: one per GPU). Only the latency of a ring with
        one GPU per node depends on it.

    Returns
    -------
    GpuCluster

    Raises
    ------
    ValueError
        Naming the argument out of range, ``nic_bandwidth`` missing on more
        than one node, or ``nvls=True`` on a GPU whose switch cannot reduce.

    Examples
    --------
    >>> c = gpu_cluster(128, nic_bandwidth=8 * 400e9 / 8)
    >>> c.p, c.nvls, c.nic_bandwidth_per_gpu / 1e9
    (1024, True, 50.0)
    >>> gpu_cluster(2)
    Traceback (most recent call last):
    ...
    ValueError: nic_bandwidth: give the node's total NIC bandwidth in bytes/s (e.g. 400e9 for 8 x 400 Gb/s) when nodes > 1
    """
    nodes = check_int("nodes", nodes, minimum=1)
    gpus_per_node = check_int("gpus_per_node", gpus_per_node, minimum=1, maximum=72)
    acc = accelerator if isinstance(accelerator, Accelerator) else _accelerator(accelerator)
    network = check_choice("network", network, NETWORKS)
    if not isinstance(sharp, (bool, np.bool_)):
        raise TypeError(f"sharp must be True or False, got {sharp!r}")
    if nic_bandwidth is None:
        if nodes > 1:
            raise ValueError("nic_bandwidth: give the node's total NIC bandwidth in bytes/s "
                             "(e.g. 400e9 for 8 x 400 Gb/s) when nodes > 1")
    else:
        nic_bandwidth = check_real("nic_bandwidth", nic_bandwidth, minimum=0, strict_min=True)
    nics = gpus_per_node if nics is None else check_int("nics", nics, minimum=1)
    capable = acc.name in _NVLS_CAPABLE and gpus_per_node > 1
    if nvls is None:
        nvls = capable
    elif not isinstance(nvls, (bool, np.bool_)):
        raise TypeError(f"nvls must be True, False or None, got {nvls!r}")
    elif nvls and not capable:
        raise ValueError(f"nvls: {acc.name} nodes of {gpus_per_node} GPU(s) have no NVLink SHARP "
                         f"(supported: {', '.join(sorted(_NVLS_CAPABLE))}, 2 or more GPUs per node)")
    if sharp and nodes == 1:
        sharp = False  # nothing to reduce in the scale-out network
    return GpuCluster(nodes=nodes, gpus_per_node=gpus_per_node, accelerator=acc, nic_bandwidth=nic_bandwidth,
                      nics=nics, nvls=bool(nvls), sharp=bool(sharp), network=network)


@dataclass(frozen=True)
class Candidate:
    """One algorithm/protocol pair as NCCL's tuner scores it."""

    algorithm: str
    protocol: str
    latency: float  # s
    algbw: float  # bytes/s

    def time(self, n_bytes) -> float:
        """Predicted seconds for ``n_bytes``."""
        return self.latency + n_bytes / self.algbw


@dataclass(frozen=True)
class Prediction:
    """What nccl-tests would print for one size, and why."""

    collective: str
    n_bytes: float
    p: int
    time: float  # s
    algbw: float  # bytes/s
    busbw: float  # bytes/s
    algorithm: str
    protocol: str
    candidates: tuple = field(repr=False)


def _intra_bandwidth(c: GpuCluster, cal: Calibration) -> float:
    """A ring's bus bandwidth on the scale-up fabric, bytes/s (Ampere: at most the 235 GB/s cap)."""
    bw = cal.ring_efficiency * c.link_bandwidth
    if _GENERATION.get(c.accelerator.name) == "ampere":
        bw = min(bw, _AMPERE_BUSBW_CAP)
    return bw


@dataclass(frozen=True)
class _Fabric:
    """What NCCL's tuner reads off a cluster before it scores the candidates (bytes/s)."""

    p: int
    nodes: int
    ppn: int  # GPUs per node
    intra: float  # a ring's bus bandwidth on the scale-up fabric
    inter: float  # the NICs' rate NCCL reaches (inf on one node)
    gen: str  # the GPU generation
    nvls_alg: float  # NVLS algorithm bandwidth
    ll_max: float  # the LL protocol's cap
    log_nodes: int


def _fabric(c: GpuCluster, cal: Calibration) -> _Fabric:
    n_nodes = c.nodes
    intra = _intra_bandwidth(c, cal)
    inter = cal.nic_efficiency * c.nic_bandwidth if n_nodes > 1 else math.inf
    gen = _GENERATION.get(c.accelerator.name, "hopper")
    nvls_alg = (cal.nvls_efficiency * _NVLS_EFFICIENCY.get(gen, _NVLS_EFFICIENCY["hopper"])
                / _NVLS_EFFICIENCY["hopper"] * c.link_bandwidth)
    ll_max = _LL_MAX_BW_ONE_NODE[gen] if n_nodes == 1 else _LL_MAX_BW_NODES[2 if n_nodes == 2 else "more"]
    ll_max *= GB
    log_nodes = int(math.log2(n_nodes)) if n_nodes > 1 else 0
    return _Fabric(c.p, n_nodes, c.gpus_per_node, intra, inter, gen, nvls_alg, ll_max, log_nodes)


#: The scale-up fabric's name in the latency tables.
_INTRA_HW = "nvlink"


def _candidates(collective: str, c: GpuCluster, cal: Calibration, *, algorithm=None, protocol=None) -> list:
    """Every algorithm/protocol pair NCCL would consider for ``collective`` on ``c``: the ring for
    every collective; for an all-reduce on two or more GPUs also the tree and the in-network ones."""
    f = _fabric(c, cal)
    out = _ring_candidates(collective, f)
    if collective == "allreduce" and f.p != 1:
        out += _tree_candidates(f)
        out += _in_network_candidates(c, f)
    return _filter(out, algorithm, protocol)


def _ring_steps(collective: str, p: int, n_nodes: int) -> tuple:
    """``(steps, steps that cross the network)`` of NCCL's ring for ``collective``."""
    if collective == "allreduce":
        return 2 * (p - 1), (2 * (n_nodes - 1) if n_nodes > 1 else 0)
    if collective in ("allgather", "reduce_scatter"):
        return p - 1, (n_nodes - 1 if n_nodes > 1 else 0)
    return p, (n_nodes if n_nodes > 1 else 0)  # broadcast, reduce


def _net_latency(a: str, proto: str, ppn: int) -> float:
    """One network step's latency, us. With one GPU per node latencies are fully exposed: NCCL uses
    the tree's network latency for the ring."""
    return _HW_LAT["net"]["tree" if ppn == 1 and a == "ring" else a][proto]


def _ring_candidates(collective: str, f: _Fabric) -> list:
    """The ring, every protocol: every collective."""
    p, n_nodes = f.p, f.nodes
    nsteps, n_inter = _ring_steps(collective, p, n_nodes)
    out = []
    ring_bus = min(f.intra, f.inter)
    for proto in NCCL_PROTOCOLS:
        bus = ring_bus
        if proto == "LL":
            bus = min(f.ll_max, bus * 0.5)
        elif proto == "LL128":
            bus = bus * 0.92
        ratio = p / nsteps if collective in ("allreduce", "allgather", "reduce_scatter") else 1.0
        algbw = bus * ratio
        intra_lat = _HW_LAT[_INTRA_HW]["ring"][proto]
        if collective in ("broadcast", "reduce"):
            latency = _BASE_LAT["ring"][proto] + nsteps * (_HW_LAT["net" if n_nodes > 1 else _INTRA_HW]
                                                           ["tree" if proto == "Simple" else "ring"][proto])
        else:
            if n_nodes > 1:
                intra_lat = max(intra_lat, _NET_OVERHEAD * (3 if proto == "Simple" else 1))
            latency = (_BASE_LAT["ring"][proto] + (nsteps - n_inter) * intra_lat
                       + n_inter * _net_latency("ring", proto, f.ppn))
        out.append(Candidate("ring", proto, latency * US, algbw))
    return out


def _tree_candidates(f: _Fabric) -> list:
    """The tree, every protocol (all-reduce): chains in each node, a double binary tree across nodes."""
    n_nodes, ppn = f.nodes, f.ppn
    out = []
    tree_bus = 0.92 * (f.intra if n_nodes <= 2 else f.inter)
    for proto in NCCL_PROTOCOLS:
        bus = tree_bus
        if proto == "LL":
            bus = min(bus / 3.8, f.ll_max)
        elif proto == "LL128":
            bus = bus * (7 / 9 if n_nodes == 1 else 120 / 128)
        algbw = 0.5 * bus
        if n_nodes == 2:
            # Each half of the buffer crosses the network once each way: no faster than the NICs.
            algbw = min(algbw, f.inter)
        latency = _BASE_LAT["tree"][proto] + 2 * ((ppn - 1) * _HW_LAT[_INTRA_HW]["tree"][proto]
                                                  + f.log_nodes * _HW_LAT["net"]["tree"][proto])
        out.append(Candidate("tree", proto, latency * US, algbw))
    return out


def _nvls_nodes_algbw(c: GpuCluster, f: _Fabric) -> float:
    """The algbw NVLS's in-node part allows across nodes: the node's NVLS bus rate, shared by all ``p`` ranks.

    NCCL 2.28's tuner (``tuning.cc`` since v2.28.3-1) models NVLS as a bus rate per node, ``2 R (h - 1)/h`` over
    ``h`` heads (``R`` the algbw NVLS reaches in one node of ``h`` GPUs), turned into algbw by ``p / (2 (p - 1))``
    like a ring's: the bus bandwidth nccl-tests prints stays that of one node however many nodes join. One
    published pair shows it: 8 x H100 over RoCE, 430 GB/s busbw with NVLS on one node and on two (nccl #1221),
    where a constant algbw would have printed 461 on two.
    """
    heads = min(f.ppn, c.nics)
    return 2 * f.nvls_alg * (heads - 1) / heads * f.p / (2 * (f.p - 1))


def _in_network_candidates(c: GpuCluster, f: _Fabric) -> list:
    """The algorithms that reduce in a switch (all-reduce, Simple protocol): NVLS, NVLSTree and CollNet."""
    return _nvls_candidates(c, f) + (_collnet_candidates(c, f) if c.sharp and f.nodes > 1 else [])


def _nvls_candidates(c: GpuCluster, f: _Fabric) -> list:
    """NVLS in one node (and across nodes only with SHARP, as CollNet+NVLS), and NVLSTree across nodes."""
    if not c.nvls:
        return []
    out = []
    if f.nodes == 1 or c.sharp:
        algbw = f.nvls_alg if f.nodes == 1 else min(_nvls_nodes_algbw(c, f), 5 / 6 * _sharp_inter(c))
        latency = _HW_LAT[_INTRA_HW]["nvls"]["Simple"] + (_HW_LAT["net"]["nvls"]["Simple"] if f.nodes > 1 else 0)
        out.append(Candidate("nvls", "Simple", latency * US, algbw))
    if f.nodes > 1:  # NVLSTree: the network's rate halves beyond two nodes, and NCCL caps the bus rate per head
        heads = min(f.ppn, c.nics)
        per_head = _NVLS_TREE_MAX_BW_PER_HEAD.get(f.gen, _NVLS_TREE_MAX_BW_PER_HEAD["hopper"])[
            2 if f.nodes <= 2 else "more"]
        cap = heads * per_head * GB * f.p / (2 * (f.p - 1))
        algbw = min(_nvls_nodes_algbw(c, f), 5 / 6 * (f.inter if f.nodes <= 2 else f.inter / 2), cap)
        latency = _HW_LAT[_INTRA_HW]["nvls_tree"]["Simple"] + 2 * f.log_nodes * _HW_LAT["net"]["nvls_tree"]["Simple"]
        out.append(Candidate("nvls_tree", "Simple", latency * US, algbw))
    return out


def _sharp_inter(c: GpuCluster) -> float:
    """What the node's NICs carry through SHARP, bytes/s: :data:`_SHARP_NIC_SHARE` of their line rate."""
    return _SHARP_NIC_SHARE * c.nic_bandwidth


def _collnet_candidates(c: GpuCluster, f: _Fabric) -> list:
    """CollNet Direct and CollNet Chain: SHARP in the scale-out switches."""
    ppn, intra_hw = f.ppn, _INTRA_HW
    # CollNet Direct: each GPU to its own NIC (it needs one NIC per GPU to run at full rate).
    bus = f.intra / max(1.0, ppn / c.nics - (ppn / c.nics - 1) / 2)
    if f.gen in ("hopper", "blackwell"):
        bus *= 0.85
    latency = (2 * (min(1, ppn - 1) * _HW_LAT[intra_hw]["collnet_direct"]["Simple"] + (ppn - 1) * 0.4)
               + _HW_LAT["net"]["collnet_direct"]["Simple"])
    out = [Candidate("collnet_direct", "Simple", latency * US, min(0.5 * bus, _sharp_inter(c)))]
    # CollNet Chain: a chain through the node's GPUs to one NIC per channel. NCCL's busBw is the chain's NVLink
    # rate; every byte goes up and down the chain (algbw = half), and leaves the node once through the NICs.
    latency = (2 * (ppn - 1) * _HW_LAT[intra_hw]["collnet_chain"]["Simple"]
               + _HW_LAT["net"]["tree" if ppn == 1 else "collnet_chain"]["Simple"])
    out.append(Candidate("collnet_chain", "Simple", latency * US, min(0.5 * f.intra, _sharp_inter(c))))
    return out


def _filter(cands, algorithm, protocol):
    if algorithm is not None:
        cands = [k for k in cands if k.algorithm == algorithm]
    if protocol is not None:
        cands = [k for k in cands if k.protocol == protocol]
    return cands


def predict(collective, n_bytes, cluster: GpuCluster, *, algorithm=None, protocol=None) -> Prediction:
    """Predict one nccl-tests row: time, algbw, busbw, and NCCL's choice.

    Parameters
    ----------
    collective : str
        ``"allreduce"``, ``"allgather"``, ``"reduce_scatter"``, ``"broadcast"``
        or ``"reduce"`` (nccl-tests / torch spellings such as ``"all_reduce"``
        are accepted).
    n_bytes : float
        Buffer size as nccl-tests counts it (>= 0).
    cluster : GpuCluster
    algorithm, protocol : str, optional
        Force one, as ``NCCL_ALGO`` / ``NCCL_PROTO`` do (``algorithm`` one of
        :data:`NCCL_ALGORITHMS`, ``protocol`` one of :data:`NCCL_PROTOCOLS`).

    Returns
    -------
    Prediction

    Examples
    --------
    One H100 node: NVLS wins at 8 GiB, the ring's LL protocol at 8 bytes.

    >>> c = gpu_cluster(1)
    >>> big, small = predict("all_reduce", 2**33, c), predict("allreduce", 8, c)
    >>> big.algorithm, round(big.busbw / 1e9), small.protocol
    ('nvls', 480, 'LL')

    With SHARP on 12 nodes of 8 H100 (eight 400 Gb/s NICs each), NCCL's pick
    at 8 GiB, the CollNet Chain that CoreWeave's published run forced, and the
    ring without SHARP (busbw, GB/s; see the module's notes on SHARP):

    >>> sharp = gpu_cluster(12, nic_bandwidth=400e9, sharp=True)
    >>> pick, chain = predict("allreduce", 2**33, sharp), predict("allreduce", 2**33, sharp, algorithm="collnet_chain")
    >>> ring = predict("allreduce", 2**33, gpu_cluster(12, nic_bandwidth=400e9))
    >>> pick.algorithm, round(pick.busbw / 1e9), round(chain.busbw / 1e9), ring.algorithm, round(ring.busbw / 1e9)
    ('nvls', 479, 366, 'ring', 363)
    """
    collective = canonical_collective(collective)
    if collective not in ("allreduce", "allgather", "reduce_scatter", "broadcast", "reduce"):
        raise ValueError(f"collective must be one of allreduce, allgather, reduce_scatter, broadcast, reduce; "
                         f"got {collective!r}")
    n_bytes = check_real("n_bytes", n_bytes, minimum=0)
    if not isinstance(cluster, GpuCluster):
        raise TypeError(f"cluster must be a GpuCluster from distlib.gpu_cluster(...), got {type(cluster).__name__}")
    if algorithm is not None:
        algorithm = check_choice("algorithm", algorithm, NCCL_ALGORITHMS)
    if protocol is not None:
        protocol = check_choice("protocol", protocol, NCCL_PROTOCOLS)
    p = cluster.p
    if p == 1:
        return Prediction(collective, n_bytes, 1, 0.0, math.inf, 0.0, "none", "none", ())
    cands = _candidates(collective, cluster, calibration(), algorithm=algorithm, protocol=protocol)
    if not cands:
        raise ValueError(f"algorithm/protocol: {algorithm or 'any'}/{protocol or 'any'} is not available for "
                         f"{collective} on {cluster.describe()}")
    best = min(cands, key=lambda k: k.time(n_bytes))
    t = best.time(n_bytes)
    algbw = n_bytes / t if t > 0 else 0.0
    return Prediction(collective, n_bytes, p, t, algbw, algbw * bus_factor(collective, p), best.algorithm,
                      best.protocol, tuple(cands))


def predict_busbw(collective, n_bytes, cluster: GpuCluster) -> float:
    """The bus bandwidth (bytes/s) nccl-tests would print, NCCL choosing algorithm and protocol.

    Examples
    --------
    Eight H100s: NVLS reaches about 480 GB/s busbw, a ring about 370.

    >>> round(predict_busbw("allreduce", 2**33, gpu_cluster(1)) / 1e9)
    480
    >>> round(predict_busbw("allreduce", 2**33, gpu_cluster(1, nvls=False)) / 1e9)   # latency keeps it under 370
    369
    """
    return predict(collective, n_bytes, cluster).busbw


def predict_time(collective, n_bytes, cluster: GpuCluster, *, algorithm=None, protocol=None) -> float:
    """Seconds one collective of ``n_bytes`` takes on ``cluster`` (see :func:`predict`)."""
    return predict(collective, n_bytes, cluster, algorithm=algorithm, protocol=protocol).time


def predict_table(cluster: GpuCluster, *, collective="allreduce", min_bytes=8, max_bytes=2**33, factor=2) -> list:
    """Predicted rows of ``all_reduce_perf -b min -e max -f factor``: a list of :class:`Prediction`.

    Examples
    --------
    >>> rows = predict_table(gpu_cluster(1), min_bytes=8, max_bytes=64)
    >>> [r.n_bytes for r in rows]
    [8.0, 16.0, 32.0, 64.0]
    """
    min_bytes = check_real("min_bytes", min_bytes, minimum=1)
    max_bytes = check_real("max_bytes", max_bytes, minimum=min_bytes)
    factor = check_real("factor", factor, minimum=1, strict_min=True)
    rows, n = [], float(min_bytes)
    while n <= max_bytes * (1 + 1e-12):
        rows.append(predict(collective, n, cluster))
        n *= factor
    return rows


def step_allreduce_time(grad_bytes, cluster: GpuCluster, *, bucket_bytes=None) -> float:
    """Seconds a data-parallel step spends all-reducing ``grad_bytes`` of gradients.

    Gradients go out in buckets of ``bucket_bytes`` (PyTorch DDP's default is
    25 MiB; ``None``: one buffer), each an all-reduce NCCL times as in
    :func:`predict`. Overlap with compute is not counted here.

    Examples
    --------
    A 7B model's bf16 gradients on 128 nodes of 8 H100s with 8 x 400 Gb/s:

    >>> c = gpu_cluster(128, nic_bandwidth=400e9)
    >>> round(step_allreduce_time(14e9, c), 3)
    0.081
    """
    grad_bytes = check_real("grad_bytes", grad_bytes, minimum=0)
    if bucket_bytes is None or grad_bytes <= 0:
        return predict("allreduce", grad_bytes, cluster).time
    bucket_bytes = check_real("bucket_bytes", bucket_bytes, minimum=0, strict_min=True)
    full, rest = divmod(grad_bytes, bucket_bytes)
    t = full * predict("allreduce", bucket_bytes, cluster).time
    return t + (predict("allreduce", rest, cluster).time if rest > 0 else 0.0)
