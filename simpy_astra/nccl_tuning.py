"""NCCL's all-reduce algorithms on a cluster preset, timed as NCCL's own tuning model times
them, and NCCL's choice between them (cluster presets only; ASTRA-sim inputs never use it).

NCCL (``src/graph/tuning.cc``) predicts each algorithm and protocol's time as
``latency + bytes / bandwidth`` and runs the fastest; ``NCCL_ALGO`` forces one. This module
does the same with the same structure and constants (base latencies, per-hop latencies on
NVLink and on the network, protocol efficiencies, the tree's size correction, NVLS's
efficiency on Hopper), but with each link's bandwidth from the preset instead of NCCL's
topology search (the machine has no GPUs to probe):

* ring: a ring through every member, its channels spread over the members' NICs, so its
  bus bandwidth is NVLink's inside a node and the slower of NVLink and the group's NICs
  together across nodes; ``2 (n - 1)`` steps, ``2 (m - 1)`` of them over the network;
* tree: NCCL's double binary tree across nodes and a chain inside each node: a node's NICs
  carry the whole buffer once each way on two nodes, twice when it is interior to a tree
  (more nodes), a chain link carries it once each way; ``2 (k - 1)`` NVLink hops and
  ``2 log2 m`` network hops;
* nvls: NVLink SHARP on NVSwitch-3 nodes (H100): the switch reduces, so each GPU sends and
  receives the buffer once at NCCL's NVLS efficiency; across nodes NCCL's NVLS tree (NVLS
  inside, the tree's network part across).

NCCL's choice is the algorithm of least predicted time (:func:`choose`). Each algorithm's
bandwidth share and latency scale are fitted on nccl-tests logs (:func:`fit`,
``calibrate --nccl-algo``): NCCL's graph search finds a bandwidth per algorithm that
the link rates alone do not give, and Simple's large chunks fill a pipeline its latency
constants do not count.

Bandwidths here are 10^9 B/s (``_gb_s``), NCCL's unit; latencies microseconds as NCCL's
tables (converted to ns at the interface).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ALGORITHMS = ("ring", "tree", "nvls")
PROTOCOLS = ("LL", "LL128", "Simple")
#: tuning.cc baseLatencies (us): per algorithm, per protocol (NVLS has none)
BASE_LATENCY_US = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "nvls": (0.0, 0.0, 0.0)}
#: tuning.cc hwLatencies (us) on NVLink and on the network (NVLS: NVLS on one node, NVLS tree past it)
NVLINK_HOP_US = {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "nvls": (0.0, 0.0, 25.0)}
NET_HOP_US = {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "nvls": (0.0, 0.0, 20.9)}
#: tuning.cc: a multi-node ring's per-step overhead of the network proxy (x86 Intel, 3x on Simple)
NET_OVERHEAD_US = 1.0
#: tuning.cc: a multi-node Simple ring's latency grows by this once it carries data (the plateau)
RING_PLATEAU = 1.4
#: tuning.cc protocol efficiencies: LL moves 8 of 16 bytes, LL128 120 of 128
LL_SHARE = {"ring": 0.5, "tree": 1 / 3.8}
LL128_SHARE = 120 / 128
#: tuning.cc: the tree's all-reduce bandwidth factor, and NVLS's efficiency on Hopper
TREE_SHARE = 0.92
NVLS_SHARE = 0.85
#: tuning.cc treeCorrectionFactor[protocol][log2(bytes / 64)]
TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)


@dataclass(frozen=True)
class Links:
    """What a group's all-reduce runs on: each GPU's NVLink, each NIC (its rail), NVLS."""

    nvlink_gb_s: float  # per GPU and direction, sustained
    rail_gb_s: float  # one NIC, sustained
    nvls: bool  # NVSwitch-3 (NVLink SHARP): H100 nodes
    #: LL's sustained bus bandwidth (tuning.cc llMaxBws: Ampere/Hopper one node, x86 on more)
    ll_max_gb_s: float = 87.7
    #: per algorithm, the share of the links' bandwidth its channels sustain (NCCL's graph
    #: search finds one bandwidth per algorithm; ``calibrate`` fits it on nccl-tests logs)
    efficiency: tuple[tuple[str, float], ...] = ()
    #: per algorithm, its latency over NCCL's constants (large chunks fill a pipeline NCCL's
    #: constants do not count; fitted with the efficiency)
    latency_scale: tuple[tuple[str, float], ...] = ()

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


def _bus_gb_s(links: Links, shape: Shape, algo: str) -> float:
    """The algorithm's bandwidth in bytes of the buffer per second (NCCL's bus bandwidth after
    its ratio: ``n / (2 (n - 1))`` for ring and NVLS, 1/2 for the tree)."""
    n, m = shape.ranks, shape.nodes
    net_gb_s = shape.nics * links.rail_gb_s
    ring_ratio = n / (2 * (n - 1))
    if algo == "ring":  # 2 (n-1)/n of the buffer over the slowest link of the ring
        return ring_ratio * (links.nvlink_gb_s if m == 1 else min(links.nvlink_gb_s, net_gb_s))
    # a tree crosses the network once each way on two nodes (NCCL: interBw x 2), twice past them
    across = math.inf if m == 1 else net_gb_s * (2 if m == 2 else 1)
    if algo == "tree":
        return TREE_SHARE * 0.5 * min(links.nvlink_gb_s, across)
    # nvls: the switch reduces, so a GPU sends and receives the buffer once over NVLink; across
    # nodes NCCL's NVLS tree, whose network part moves as the tree's
    return min(NVLS_SHARE * links.nvlink_gb_s, 0.5 * across)


def _latency_us(links: Links, shape: Shape, algo: str, p: int) -> float:
    n, m, k = shape.ranks, shape.nodes, shape.per_node
    intra, inter = NVLINK_HOP_US[algo][p], NET_HOP_US[algo][p]
    base = BASE_LATENCY_US[algo][p]
    if algo == "ring":
        if m > 1:
            intra = max(intra, NET_OVERHEAD_US * (3 if PROTOCOLS[p] == "Simple" else 1))
        net_steps = 2 * (m - 1)
        return base + (2 * (n - 1) - net_steps) * intra + net_steps * inter
    if algo == "tree":
        return base + 2 * ((k - 1) * intra + int(math.log2(m)) * inter)
    return intra + (2 * int(math.log2(m)) * inter if m > 1 else 0.0)  # nvls


def available(links: Links, shape: Shape, algo: str) -> bool:
    """Whether NCCL can run ``algo`` here (NVLS needs NVSwitch-3 and several GPUs per node)."""
    if algo == "nvls":
        return links.nvls and shape.per_node > 1
    return shape.ranks > 1


def predict_us(links: Links, shape: Shape, algo: str, size_bytes: int) -> tuple[float, str]:
    """(time us, protocol) of ``algo`` on ``size_bytes``: its fastest protocol, as NCCL times it."""
    best = (math.inf, "")
    eff, lat_scale = links.scaled(algo)
    bus = eff * _bus_gb_s(links, shape, algo)
    log_size = int(math.log2(size_bytes >> 6)) if size_bytes >= 64 else -1
    for p, proto in enumerate(PROTOCOLS):
        if algo == "nvls" and proto != "Simple":
            continue
        bw = bus
        if proto == "LL":
            bw = min(bw * LL_SHARE[algo], links.ll_max_gb_s)
        elif proto == "LL128":
            bw *= LL128_SHARE
        if algo == "tree" and 0 <= log_size < len(TREE_CORRECTION[p]):
            bw *= TREE_CORRECTION[p][log_size]
        lat = _latency_us(links, shape, algo, p) * lat_scale
        if algo == "ring" and proto == "Simple" and shape.nodes > 1:
            lat *= RING_PLATEAU
        time = lat + size_bytes / (1000 * bw)
        if time < best[0]:
            best = (time, proto)
    return best


def choose(links: Links, shape: Shape, size_bytes: int) -> str:
    """NCCL's choice: the algorithm of lowest predicted time."""
    return min((a for a in ALGORITHMS if available(links, shape, a)),
               key=lambda a: predict_us(links, shape, a, size_bytes)[0])


def fit(links: Links, shape: Shape, algo: str, points: list[tuple[int, float]]) -> Links:
    """``links`` with ``algo``'s efficiency and Simple latency scale fitted to measured
    (bytes, us) points of its Simple regime: time = scale x latency + bytes / (eff x bw) is
    linear in (scale, 1 / eff), so least squares on relative error solves it directly."""
    lat0 = _latency_us(links, shape, algo, PROTOCOLS.index("Simple"))
    if algo == "ring" and shape.nodes > 1:
        lat0 *= RING_PLATEAU
    inv_bw0 = 1 / (1000 * _bus_gb_s(links, shape, algo))  # us per byte at efficiency 1
    # minimise sum((a x lat0 + b x size x inv_bw0) / t - 1)^2 over (a, b)
    rows = [(lat0 / t, size * inv_bw0 / t) for size, t in points]
    s_aa = sum(x * x for x, _ in rows)
    s_bb = sum(y * y for _, y in rows)
    s_ab = sum(x * y for x, y in rows)
    s_a, s_b = sum(x for x, _ in rows), sum(y for _, y in rows)
    det = s_aa * s_bb - s_ab * s_ab
    if len(points) < 2 or det <= 0:
        raise ValueError("fit needs two or more sizes of different per-byte share")
    a = (s_a * s_bb - s_b * s_ab) / det
    b = (s_aa * s_b - s_ab * s_a) / det
    if a < 0 or b <= 0:  # latency not resolved by these sizes: bandwidth alone
        a, b = 0.0, s_b / s_bb
    eff = dict(links.efficiency) | {algo: round(1 / b, 4)}
    scale = dict(links.latency_scale) | {algo: round(a, 4)}
    return Links(links.nvlink_gb_s, links.rail_gb_s, links.nvls, links.ll_max_gb_s,
                 tuple(sorted(eff.items())), tuple(sorted(scale.items())))
