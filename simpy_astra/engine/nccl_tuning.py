"""NCCL's all-reduce algorithms on a cluster preset (and its reduce-scatter's, all-gather's and
broadcast's): NCCL's choice between them, made as NCCL's own tuning model makes it, and the
time the chosen one then takes (cluster presets only; ASTRA-sim inputs never use it).

NCCL (``src/graph/tuning.cc``) predicts each algorithm and protocol's time as
``latency + bytes / bandwidth`` and runs the fastest; ``NCCL_ALGO`` forces one. This module
keeps that model's structure and constants (base latencies, per-hop latencies on NVLink and
on the network, the protocols' bandwidth shares and LL's cap, the caps per channel, the tree's
size correction, the ring's plateau, NVLS's efficiency), with each link's rate from the preset
instead of NCCL's topology search (the machine has no GPUs to probe; NVLS's graph is NCCL's
search worked out on those rates, :func:`nvls_graph`):

* ring: a ring through every member, its channels spread over the members' NICs, so its
  bus bandwidth is NVLink's inside a node and the slower of NVLink and the group's NICs
  together across nodes; ``2 (n - 1)`` steps, ``2 (m - 1)`` of them over the network;
* tree: NCCL's double binary tree across nodes and a chain inside each node: a node's NICs
  carry the whole buffer once each way on two nodes, twice when it is interior to a tree
  (more nodes), a chain link carries it once each way; ``2 (k - 1)`` NVLink hops and
  ``2 log2 m`` network hops; at one GPU a node NCCL's simple tree, at 0.85 of that;
* nvls: NVLink SHARP on NVSwitch-3 nodes (H100): the switch reduces; across nodes NCCL's NVLS
  tree (NVLS inside, the tree's network part across). Its bandwidth is NCCL's own estimate
  (:func:`_nvls_gb_s`, NCCL 2.29.7 as 2.28.9 on: one channel a GPU of the node, each at a speed
  of NCCL's topology search, less the channel's own GPU's share), whose channels are few on
  part of a node: a 4-GPU group's NVLS is 160 GB/s against the ring's 265, so NCCL runs the
  ring there, and so does this.

Two questions are kept apart, as they are in NCCL:

* **which algorithm and protocol** (:func:`choose`, :func:`protocol`): NCCL's estimate
  (:func:`nccl_estimate_us`) on the links' nominal rates, with NCCL's constants and nothing
  fitted: NCCL decides by its model, not by what the links then achieve. On two A100 nodes
  it believes the tree only a few percent faster than the ring, so its 0.9 correction keeps
  the ring up to 256 MiB, whereas the tree then runs 1.4x the ring;
* **how long it takes** (:func:`predict_us`): the same terms for the chosen protocol with
  what the machine achieves, fitted on nccl-tests logs (:mod:`~simpy_astra.engine.nccl_fit`,
  ``calibrate --nccl-algo``): a fixed cost per call (kernel launch and the host), each
  algorithm's share of the links' bandwidth (NCCL's graph search finds a bandwidth per
  algorithm that the link rates alone do not give), Simple's latency scale (its large
  chunks fill a pipeline NCCL's latency constants do not count) and what LL and LL128
  achieve against NCCL's constants for them (:func:`~simpy_astra.engine.nccl_fit.fit_protocol`:
  one A100 node's LL runs at 0.65 of what NCCL reckons).

Bandwidths here are 10^9 B/s (``_gb_s``), NCCL's unit; latencies microseconds as NCCL's
tables (converted to ns at the interface).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simpy_astra.collectives.base import ALL_REDUCE
from simpy_astra.engine.nccl_names import ALGORITHMS as ALGORITHMS  # the model's callers read it here
from simpy_astra.engine.nccl_names import BROADCAST, COLLECTIVE_ALGORITHMS

PROTOCOLS = ("LL", "LL128", "Simple")
#: tuning.cc baseLatencies (us): per algorithm, per protocol (NVLS has none)
BASE_LATENCY_US = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "nvls": (0.0, 0.0, 0.0),
                   "pat": (8.0, 8.0, 8.0)}
#: tuning.cc hwLatencies (us) on NVLink and on the network (NVLS: NVLS on one node, NVLS tree past it)
NVLINK_HOP_US = {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "nvls": (0.0, 0.0, 25.0),
                 "pat": (0.0, 0.0, 4.0)}
NET_HOP_US = {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "nvls": (0.0, 0.0, 20.9),
              "pat": (0.0, 0.0, 14.0)}
#: tuning.cc: PAT's share of its (tree) graph's bandwidth, and its latency's terms: the network
#: hop over this a doubling step, this a rank
PAT_SHARE = 0.75
PAT_HOP_DIVISOR = 3.5
PAT_RANK_US = 2.8
#: tuning.cc: a multi-node ring's per-step overhead of the network proxy (x86 Intel, 3x on Simple)
NET_OVERHEAD_US = 1.0
#: tuning.cc: a multi-node Simple ring's latency grows by this once it carries data (the plateau)
RING_PLATEAU = 1.4
#: tuning.cc protocol shares of the bus bandwidth: LL moves 8 of 16 bytes on a ring (the tree's
#: LL 1 / 3.8); LL128 0.92 on a ring, 120 of 128 on a tree across nodes, 7 / 9 on one node
LL_SHARE = {"ring": 0.5, "tree": 1 / 3.8}
LL128_SHARE = {"ring": 0.92, "tree": 120 / 128}
LL128_TREE_ONE_NODE = 7 / 9
#: tuning.cc llMaxBws (GB/s of bus bandwidth): LL's ceiling by the host (x86 Intel) on two nodes
#: and on more, and on one node by the GPUs' generation (NCCL's compute-capability index: Volta
#: and Turing, Ampere and Ada, Hopper, Blackwell), whether or not the nodes have NVLS
LL_MAX_GB_S = {"two nodes": 39.0, "more nodes": 20.4}
LL_MAX_ONE_NODE_GB_S = {"volta": 39.0, "ampere": 87.7, "hopper": 141.0, "blackwell": 2 * 141.0}
#: tuning.cc: the tree's all-reduce bandwidth factor
TREE_SHARE = 0.92
#: tuning.cc (2.18.3 on): the tree's bandwidth, every protocol, caps included, when its graph's
#: pattern is the simple tree (NCCL_TOPO_PATTERN_TREE), which search.cc forces at one GPU a node
SIMPLE_TREE_SHARE = 0.85
#: tuning.cc per-channel caps (GB/s of bus bandwidth a channel) on one node, two, more (N1/N2/N4),
#: by generation: the ring's LL128, the tree (every protocol), the tree's LL128, the NVLS tree
PER_CHANNEL_MAX_GB_S = {
    "ring LL128": {"volta": (20.0,) * 3, "ampere": (20.0,) * 3, "hopper": (36.7,) * 3, "blackwell": (40.0,) * 3},
    "tree": {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (38.7, 41.4, 36.0),
             "blackwell": (70.0, 42.8, 24.0)},
    "tree LL128": {"volta": (20.0,) * 3, "ampere": (20.0,) * 3, "hopper": (36.7, 36.7, 29.0),
                   "blackwell": (55.6, 31.67, 20.0)},
    "nvls tree": {"hopper": (math.inf, 57.7, 45.5), "blackwell": (math.inf, 96.0, 43.8)},
}
#: tuning.cc nvlsEfficiency: the share of an NVLS channel's NVLink bandwidth the switch reduces at
NVLS_EFFICIENCY = {"hopper": 0.85, "blackwell": 0.74}
#: search.cc: the per-channel bandwidths (GB/s) NCCL's topology search tries, fastest first, on
#: one node (sm90SpeedArrayIntra, sm100...) and across nodes (...Inter); device.h: NVLS's most heads
NVLS_SPEEDS_GB_S = {
    ("hopper", "one node"): (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
    ("hopper", "across nodes"): (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0,
                                 2.4, 1.2, 0.24, 0.12),
    ("blackwell", "one node"): (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0),
    ("blackwell", "across nodes"): (96.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0,
                                    12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
}
NVLS_MAX_ARITY = 32
#: Simple's pipeline fill (its fitted latency over NCCL's) is at most this share of the transfer:
#: NCCL shrinks its chunks for small buffers so that each channel keeps several in flight
FILL_SHARE = 0.5
#: enqueue.cc: a tree's Simple chunk is one step of NCCL's 4 MiB buffer (8 steps) at most, halved
#: (down to 128, 64, 32 KiB) while a channel would get fewer than 8, 4, 1 x the tree's depth chunks
TREE_CHUNK_MAX = 512 * 1024
TREE_CHUNK_STEPS = ((8, 128 * 1024), (4, 64 * 1024), (1, 32 * 1024))
#: enqueue.cc (topoGetAlgoInfo): the threads a channel runs each protocol with at most (device.h's
#: NCCL_LL_MAX_NTHREADS, NCCL_LL128_MAX_NTHREADS, NCCL_SIMPLE_MAX_NTHREADS), and the bytes each
#: thread must have before NCCL adds a channel or a thread (comm.h's *_THREAD_THRESHOLD; the
#: ring's LL one x the ranks, tuning.cc)
MAX_THREADS = {"LL": 512, "LL128": 640, "Simple": 512}
THREAD_THRESHOLD = {"LL": 8, "LL128": 8, "Simple": 64}
#: enqueue.cc: NVLS runs on NCCL's NVLS channels (16 by default) whatever the size, with all of
#: a block's threads (NCCL_MAX_NTHREADS); a warp has 32
NVLS_CHANNELS = 16
BLOCK_THREADS = 640
WARP = 32
#: tuning.cc treeCorrectionFactor[protocol][log2(bytes / 64)], 64 B to 256 MiB: NCCL applies it
#: below 512 MiB only (``logSize < 23`` in every release since 2.8)
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9),
)


@dataclass(frozen=True)
class Links:
    """What a group's all-reduce runs on: each GPU's NVLink, each NIC (its rail), NVLS; and what
    the machine achieves on them (fitted; NCCL's choice never reads those)."""

    nvlink_gb_s: float  # per GPU and direction
    rail_gb_s: float  # one NIC
    nvls: bool  # NVSwitch-3 (NVLink SHARP): H100 nodes
    #: per algorithm, the share of the links' bandwidth its channels sustain (NCCL's graph
    #: search finds one bandwidth per algorithm; ``calibrate`` fits it on nccl-tests logs); NVLS's
    #: is the share of NCCL's own NVLS estimate
    efficiency: tuple[tuple[str, float], ...] = ()
    #: per algorithm, its Simple latency over NCCL's constants (large chunks fill a pipeline
    #: NCCL's constants do not count; fitted with the efficiency)
    latency_scale: tuple[tuple[str, float], ...] = ()
    #: the fixed cost of one call (kernel launch, host), us: on top of every algorithm's time
    launch_us: float = 0.0
    #: NCCL's channels (rings, and both trees of the double binary tree): 32 on 8-GPU NVSwitch
    #: nodes with 8 or more NICs (MAXCHANNELS); a small buffer runs on fewer (:func:`channels`);
    #: NCCL's caps per channel multiply it (no cap binds on 16 or more)
    channels: int = 32
    #: what each tree chunk smaller than NCCL's full one costs a channel, us (fitted): the full
    #: chunks hide their per-chunk work behind the transfer, the halved ones do not
    tree_chunk_us: float = 0.0
    #: the algorithms NCCL runs with LL128 across nodes: those whose channels reach the NICs
    #: through PCIe switches (tuning.cc: ``typeInter <= PATH_PXB``; through PXN too on Hopper)
    ll128_across_nodes: tuple[str, ...] = ("ring", "tree")
    #: per algorithm, protocol (LL and LL128 only) and span (:func:`protocol_key`: ``"ring LL in
    #: a node"``): (bandwidth, latency) the machine achieves over NCCL's constants (fitted; 1 and
    #: 1 where not: a factor measured inside a node says nothing of the NICs, nor one of a tree
    #: of a ring)
    protocol_scale: tuple[tuple[str, float, float], ...] = ()
    #: the GPUs' generation, a key of NCCL's tables by GPU (:data:`LL_MAX_ONE_NODE_GB_S`,
    #: :data:`PER_CHANNEL_MAX_GB_S`, NVLS's); "" (not known): Hopper's
    #: where the nodes have NVLS, else Ampere's
    generation: str = ""

    def protocol_factors(self, shape: Shape, algo: str, proto: str) -> tuple[float, float]:
        """(bandwidth factor, latency factor) of ``algo`` run with ``proto`` on ``shape``."""
        key = protocol_key(shape, algo, proto)
        return next(((bw, lat) for k, bw, lat in self.protocol_scale if k == key), (1.0, 1.0))

    def scaled(self, algo: str) -> tuple[float, float]:
        """(bandwidth factor, latency factor) of ``algo``: its fitted ones, else the geometric
        mean of those fitted for the machine's other algorithms (its links), else 1."""
        out = []
        for table in (self.efficiency, self.latency_scale):
            given = dict(table)
            if algo in given:
                out.append(given[algo])
            else:
                out.append(math.prod(given.values()) ** (1 / len(given)) if given else 1.0)
        return out[0], out[1]


@dataclass(frozen=True)
class Shape:
    """A group: ``ranks`` GPUs on ``nodes`` nodes, ``nics`` NICs in use per node."""

    ranks: int
    nodes: int
    nics: int

    @property
    def per_node(self) -> int:
        return self.ranks // self.nodes


def protocol_key(shape: Shape, algo: str, proto: str) -> str:
    """``"ring LL128 in a node"``, ``"tree LL across nodes"``: what a protocol factor is of."""
    return f"{algo} {proto} {'in a node' if shape.nodes == 1 else 'across nodes'}"


def _ratio(shape: Shape, algo: str, kind: str = ALL_REDUCE) -> float:
    """NCCL's bus-to-algorithm bandwidth ratio, the ranks over the steps: an all-reduce's ``n /
    (2 (n - 1))`` for ring and NVLS, 1/2 for the tree; a reduce-scatter's or all-gather's ``n /
    (n - 1)`` for the ring and none for NVLS and PAT (tuning.cc converts only the ring's); a
    broadcast's 1 (``nsteps = nRanks``: its ring pipelines the buffer, each byte crossing each
    hop once, so its algorithm bandwidth is the bus bandwidth)."""
    if kind == BROADCAST:
        return 1.0
    if kind != ALL_REDUCE:
        return shape.ranks / (shape.ranks - 1) if algo == "ring" else 1.0
    return 0.5 if algo == "tree" else shape.ranks / (2 * (shape.ranks - 1))


def _generation(links: Links) -> str:
    """The GPUs' generation (a key of NCCL's tables by GPU): as given, else Hopper's
    where the nodes have NVLS, else Ampere's."""
    return links.generation or ("hopper" if links.nvls else "ampere")


def _span(shape: Shape) -> int:
    """tuning.cc's column of its per-node-count tables: one node, two, more (N1/N2/N4)."""
    return min(shape.nodes, 3) - 1


def nvls_graph(links: Links, shape: Shape) -> tuple[int, float, float]:
    """(channels, bwIntra, bwInter) of NCCL's NVLS graph on the links' rates, as search.cc
    (2.29.7) finds it: ncclTopoCompute lets NVLS have one head a GPU, at most 32 and, on one
    node, exactly that many (all GPUs pull evenly); ncclTopoSearchTryNvls charges each channel
    ``s`` on every GPU's path to and from the NVSwitch and ``2 s`` on its head's, so ``k``
    channels need ``(k + 1) s`` of each GPU's NVLink (across nodes, each head's NIC carries its
    channel); the first pass steps down NCCL's speeds until the channels fit (bwIntra), the
    second raises bwInter alone, one speed at a time, while the raise held and bwInter is under
    twice bwIntra (only the NICs can stop it: on one node it reaches the fastest speed)."""
    speeds = NVLS_SPEEDS_GB_S[(_nvls_generation(links), "one node" if shape.nodes == 1 else "across nodes")]
    nch = min(shape.per_node, NVLS_MAX_ARITY)
    nic_gb_s = math.inf if shape.nodes == 1 else links.rail_gb_s * shape.nics / nch
    i = next((i for i, s in enumerate(speeds) if (nch + 1) * s <= links.nvlink_gb_s and s <= nic_gb_s),
             len(speeds) - 1)
    intra = inter = speeds[i]
    while i > 0 and inter < 2 * intra and speeds[i - 1] <= nic_gb_s:
        i -= 1
        inter = speeds[i]
    return nch, intra, inter


def _nvls_generation(links: Links) -> str:
    """The key of NCCL's NVLS tables: Blackwell's, else Hopper's (NVLS is on no earlier GPU)."""
    return "blackwell" if _generation(links) == "blackwell" else "hopper"


def _nvls_gb_s(links: Links, shape: Shape, share: float, spine: float, kind: str = ALL_REDUCE) -> float:
    """NVLS's algorithm bandwidth as ncclTopoTuneModel (tuning.cc, 2.29.7; 2.28.9 on) estimates
    it, at ``share`` of it: a channel's NVSwitch side is bwIntra x nvlsEfficiency (Hopper 0.85,
    Blackwell 0.74) x (nch - 1) / nch (its own GPU's share does not cross the switch), doubled
    for an all-reduce (NVLS pipelines its two operations); its network side bwInter, doubled for
    the NVLS tree on two nodes (the NICs at ``spine`` of their rate); the NVLS tree also has a
    cap per channel (perChMaxNVLSTreeBws: Hopper 57.7 GB/s on two nodes, 45.5 past). The least
    of these times the channels is the bus bandwidth, and ``n / (2 (n - 1))`` of it the
    algorithm's, as for the ring. (Across nodes without CollNet, enqueue.cc's cost table skips
    NVLS itself: NCCL's NVLS there is the NVLS tree.) A reduce-scatter or all-gather (one node:
    across nodes it needs CollNet) is one operation, so the switch's side is not doubled but
    takes ``(k - 1) / k`` (the GPU's own share), and the bus bandwidth is the algorithm's."""
    nch, intra_gb_s, inter_gb_s = nvls_graph(links, shape)
    gen = _nvls_generation(links)
    switch_gb_s = intra_gb_s * NVLS_EFFICIENCY[gen] * (nch - 1) / nch
    switch_gb_s *= 2 if kind == ALL_REDUCE else (shape.per_node - 1) / shape.per_node
    if shape.nodes > 1:
        inter_gb_s *= (2 if shape.nodes == 2 else 1) * spine
    channel_gb_s = min(switch_gb_s, inter_gb_s, PER_CHANNEL_MAX_GB_S["nvls tree"][gen][_span(shape)])
    return share * nch * channel_gb_s * _ratio(shape, "nvls", kind)


def _cap_gb_s(links: Links, shape: Shape, key: str) -> float:
    """NCCL's cap ``key`` of :data:`PER_CHANNEL_MAX_GB_S` on the bus bandwidth, times the channels
    (NCCL's graph's; :attr:`Links.channels` here, which the logs do not print)."""
    return links.channels * PER_CHANNEL_MAX_GB_S[key][_generation(links)][_span(shape)]


def _bus_gb_s(links: Links, shape: Shape, algo: str, share: float = 1.0, spine: float = 1.0,
              kind: str = ALL_REDUCE) -> float:
    """The algorithm's bandwidth in bytes of the buffer per second (NCCL's bus bandwidth after
    its ratio), on the links' rates, at ``share`` of them (the NICs at ``spine`` of their rate:
    :func:`predict_us`); NVLS as NCCL's own estimate (:func:`_nvls_gb_s`); PAT 0.75 of its
    graph's (NCCL's tree graph: one GPU a node, so its NIC, twice it on two nodes as the tree's)."""
    m = shape.nodes
    net_gb_s = shape.nics * links.rail_gb_s * spine
    # NVLink bounds a path only where a node holds two or more of the group's ranks: at one a
    # node each hop is GPU, NIC, NIC, GPU (NCCL's ring graph then has bwIntra = bwInter, the NIC's)
    nvlink_gb_s = links.nvlink_gb_s if shape.per_node > 1 else math.inf
    if algo == "ring":  # 2 (n-1)/n of the buffer (an all-reduce's) over the slowest link of the ring
        return share * _ratio(shape, algo, kind) * (nvlink_gb_s if m == 1 else min(nvlink_gb_s, net_gb_s))
    # the tree's graph (PAT runs on it too): across nodes once each way on two nodes (tuning.cc
    # reads its bwIntra, which search.cc's second pass raises to twice bwInter while the GPU-to-GPU
    # paths hold it: at one GPU a node there are none, docs/megatron.md), twice past them (bwInter)
    tree_graph_gb_s = min(nvlink_gb_s, math.inf if m == 1 else net_gb_s * (2 if m == 2 else 1))
    if algo == "pat":
        return share * PAT_SHARE * tree_graph_gb_s
    if algo == "tree":
        bus = min(TREE_SHARE * tree_graph_gb_s, _cap_gb_s(links, shape, "tree"))
        return share * _ratio(shape, algo) * bus
    return _nvls_gb_s(links, shape, share, spine, kind)


def _ll_max_gb_s(links: Links, shape: Shape) -> float:
    if shape.nodes == 1:
        return LL_MAX_ONE_NODE_GB_S[_generation(links)]
    return LL_MAX_GB_S["two nodes" if shape.nodes == 2 else "more nodes"]


def protocol_gb_s(links: Links, shape: Shape, algo: str, p: int, size_bytes: int, share: float,
                   spine: float = 1.0, kind: str = ALL_REDUCE) -> float:
    """Protocol ``p``'s bandwidth for ``algo`` running ``kind`` on ``size_bytes``, at ``share`` of
    the links' rates (the NICs at ``spine`` of theirs)."""
    bw = _bus_gb_s(links, shape, algo, share, spine, kind)
    proto = PROTOCOLS[p]
    if proto == "LL":  # LL's ceiling is on the bus bandwidth, before NCCL's ratio
        bw = min(bw * LL_SHARE[algo], _ll_max_gb_s(links, shape) * _ratio(shape, algo, kind))
    elif proto == "LL128":  # and NCCL's cap per channel on it
        bw = min(bw * (LL128_TREE_ONE_NODE if algo == "tree" and shape.nodes == 1 else LL128_SHARE[algo]),
                 share * _ratio(shape, algo, kind) * _cap_gb_s(links, shape, f"{algo} LL128"))
    log_size = int(math.log2(size_bytes >> 6)) if size_bytes >= 64 else -1
    if algo == "tree" and 0 <= log_size < len(TREE_CORRECTION[p]):
        bw *= TREE_CORRECTION[p][log_size]
    if algo == "tree" and _simple_tree(shape):
        bw *= SIMPLE_TREE_SHARE
    return bw


def _simple_tree(shape: Shape) -> bool:
    """Whether NCCL's tree graph has the simple tree's pattern: search.cc sets it where the
    node holds one GPU of the group (``ngpus == 1``). Past that NCCL searches a balanced tree
    and, on Hopper, falls back to the simple one when that search times out short of its best,
    which only the machine's own search decides: those keep the balanced tree's bandwidth."""
    return shape.per_node == 1


def latency_us(shape: Shape, algo: str, p: int, kind: str = ALL_REDUCE) -> float:
    """NCCL's latency of ``algo`` running ``kind`` with protocol ``p`` (the all-reduce ring's
    plateau on Simple across nodes included). A broadcast's ring (tuning.cc) adds one hop's
    latency to its base, the hardware's of the ring (NVLink in a node, the network across nodes,
    the ring's own even at one GPU a node), where its graph's channels are all the same
    (``sameChannels``, which NCCL's ring search tries first and keeps when it reaches the
    target: on NVSwitch nodes, where every GPU reaches the others alike, it does); a pipeline's
    fill past that is what Simple's fitted latency scale adds (:func:`predict_us`)."""
    n, m, k = shape.ranks, shape.nodes, shape.per_node
    # tuning.cc (2.23 on): at one GPU a node the latencies are fully exposed, so every
    # algorithm's network hop is the tree's (the ring's LL 5.0 and LL128 8.5 us, not 2.7 and 4.0)
    intra, inter = NVLINK_HOP_US[algo][p], NET_HOP_US["tree" if k == 1 else algo][p]
    base = BASE_LATENCY_US[algo][p]
    if kind == BROADCAST:  # the ring's: one hop, NVLink's in a node, the network's past it
        return base + (intra if m == 1 else NET_HOP_US[algo][p])  # the ring's own network hop even at k == 1
    steps = 2 * (n - 1) if kind == ALL_REDUCE else n - 1
    if algo == "ring":
        if m > 1:
            intra = max(intra, NET_OVERHEAD_US * (3 if PROTOCOLS[p] == "Simple" else 1))
        net_steps = (m - 1) * steps // (n - 1)
        lat = base + (steps - net_steps) * intra + net_steps * inter
        return lat * (RING_PLATEAU if PROTOCOLS[p] == "Simple" and m > 1 and kind == ALL_REDUCE else 1.0)
    if algo == "tree":
        return base + 2 * ((k - 1) * intra + int(math.log2(m)) * inter)
    if algo == "pat":  # doubling steps across nodes, and a part linear in the ranks
        return base + int(math.log2(m)) * inter / PAT_HOP_DIVISOR + n * PAT_RANK_US
    return intra + (2 * int(math.log2(m)) * inter if m > 1 else 0.0)  # nvls


def channels(links: Links, shape: Shape, algo: str, proto: str, size_bytes: int) -> tuple[int, int]:
    """(channels, threads per channel) NCCL runs ``algo`` with ``proto`` on for ``size_bytes``
    (enqueue.cc, ``topoGetAlgoInfo``): while a thread of every channel would get fewer bytes than
    the protocol's threshold, a channel is dropped, down to one, then that channel's threads
    halved while a multiple of 128 (so a small buffer runs on few SMs, each thread busy); Simple
    then gets an extra warp on a ring and four on a tree, at least three warps run, and a tree
    always runs a whole block. NVLS runs on its own channels, all threads, at any size."""
    if algo == "nvls":
        return NVLS_CHANNELS, BLOCK_THREADS
    nc, nt = links.channels, MAX_THREADS[proto]
    threshold = THREAD_THRESHOLD[proto] * (shape.ranks if algo == "ring" and proto == "LL" else 1)
    while size_bytes < nc * nt * threshold and nc >= 2:
        nc -= 1
    while size_bytes < nc * nt * threshold and nt % 128 == 0:
        nt //= 2
    if proto == "Simple" and algo != "pat":
        nt += WARP if algo == "ring" else 4 * WARP
    nt = max(nt, 3 * WARP)
    return nc, BLOCK_THREADS if algo in ("tree", "pat") else nt


def tree_chunk_bytes(links: Links, shape: Shape, size_bytes: int, nc: int | None = None) -> int:
    """The chunk NCCL's tree moves ``size_bytes`` in with Simple (enqueue.cc) on the ``nc``
    channels it runs (:func:`channels`, when not given), its depth being ``k - 1 + log2 m``
    (connect.cc)."""
    depth = shape.per_node - 1 + int(math.log2(shape.nodes))
    if nc is None:
        nc = channels(links, shape, "tree", "Simple", size_bytes)[0]
    chunk = TREE_CHUNK_MAX
    for per_depth, floor in TREE_CHUNK_STEPS:
        while size_bytes // (nc * chunk) < depth * per_depth and chunk > floor:
            chunk //= 2
    return chunk


def halved_chunks(links: Links, shape: Shape, algo: str, proto: str, size_bytes: int) -> float:
    """How many more chunks a channel moves than it would in full chunks (the tree's Simple
    across nodes; 0 otherwise)."""
    if algo != "tree" or proto != "Simple" or shape.nodes < 2:
        return 0.0
    nc = channels(links, shape, algo, proto, size_bytes)[0]
    per_channel = size_bytes / nc
    return per_channel / tree_chunk_bytes(links, shape, size_bytes, nc) - per_channel / TREE_CHUNK_MAX


def available(links: Links, shape: Shape, algo: str, kind: str = ALL_REDUCE) -> bool:
    """Whether NCCL can run ``algo`` for ``kind`` here (tuning.cc, enqueue.cc): each only for
    its collectives (:data:`COLLECTIVE_ALGORITHMS`); NVLS needs NVSwitch-3 and several GPUs a
    node, and a reduce-scatter's or all-gather's one node (across nodes, CollNet) of at most
    NCCL_MAX_NVLS_ARITY GPUs; PAT one GPU a node."""
    if algo not in COLLECTIVE_ALGORITHMS[kind] or shape.ranks < 2:
        return False
    if algo == "nvls":
        return links.nvls and shape.per_node > 1 and (
            kind == ALL_REDUCE or (shape.nodes == 1 and shape.per_node <= NVLS_MAX_ARITY))
    return algo != "pat" or shape.per_node == 1


def _protocols(links: Links, shape: Shape, algo: str) -> tuple[int, ...]:
    """The protocols NCCL may run ``algo`` with here (NVLS and PAT: Simple only)."""
    if algo in ("nvls", "pat"):
        return (PROTOCOLS.index("Simple"),)
    if shape.nodes > 1 and algo not in links.ll128_across_nodes:
        return (PROTOCOLS.index("LL"), PROTOCOLS.index("Simple"))
    return tuple(range(len(PROTOCOLS)))


def nccl_estimate_us(links: Links, shape: Shape, algo: str, proto: str, size_bytes: int,
                     kind: str = ALL_REDUCE) -> float:
    """NCCL's own estimate of ``algo`` with ``proto`` (``ncclTopoGetAlgoTime``): its constants on
    the links' rates, nothing fitted. NCCL chooses by this. ``size_bytes``: the whole buffer
    (a reduce-scatter's input, an all-gather's output), NCCL's ``nBytes``."""
    p = PROTOCOLS.index(proto)
    bw = protocol_gb_s(links, shape, algo, p, size_bytes, 1.0, kind=kind)
    return latency_us(shape, algo, p, kind) + size_bytes / (1000 * bw)


def protocol(links: Links, shape: Shape, algo: str, size_bytes: int, kind: str = ALL_REDUCE) -> str:
    """The protocol NCCL runs ``algo`` with on ``size_bytes``: the one of least estimate."""
    return min((PROTOCOLS[p] for p in _protocols(links, shape, algo)),
               key=lambda proto: nccl_estimate_us(links, shape, algo, proto, size_bytes, kind))


def choose(links: Links, shape: Shape, size_bytes: int, kind: str = ALL_REDUCE) -> str:
    """NCCL's choice for ``kind``: the algorithm whose best protocol has the least estimate."""
    def estimate(algo: str) -> float:
        return nccl_estimate_us(links, shape, algo, protocol(links, shape, algo, size_bytes, kind), size_bytes, kind)
    return min((a for a in COLLECTIVE_ALGORITHMS[kind] if available(links, shape, a, kind)), key=estimate)


def predict_us(links: Links, shape: Shape, algo: str, size_bytes: int, spine: float = 1.0,
               kind: str = ALL_REDUCE) -> tuple[float, str]:
    """(time us, protocol) of ``algo`` running ``kind`` on ``size_bytes`` (the whole buffer, as
    :func:`nccl_estimate_us`): the protocol NCCL picks for it, timed
    with what the machine achieves (the call's fixed cost, the algorithm's fitted bandwidth
    share, Simple's fitted latency scale). ``spine``: the share of each NIC's rate the fabric
    leaves the group (1 / oversubscription when its nodes sit under several leaves): its
    hops between nodes run at that, while NCCL's choice (of algorithm and protocol) is made
    on the NICs' own rate, the only one NCCL's topology search sees."""
    proto = protocol(links, shape, algo, size_bytes, kind)
    p = PROTOCOLS.index(proto)
    eff, lat_scale = links.scaled(algo)
    lat = latency_us(shape, algo, p, kind)
    transfer = size_bytes / (1000 * protocol_gb_s(links, shape, algo, p, size_bytes, eff, spine, kind))
    if proto == "Simple":  # the pipeline's fill: shorter for buffers too small for NCCL's full chunks
        fill = (lat_scale - 1) * lat
        lat += fill if fill < 0 else min(fill, FILL_SHARE * transfer)
    else:
        bw_factor, lat_factor = links.protocol_factors(shape, algo, proto)
        lat, transfer = lat * lat_factor, transfer / bw_factor
    chunks = links.tree_chunk_us * halved_chunks(links, shape, algo, proto, size_bytes)
    return links.launch_us + lat + transfer + chunks, proto
