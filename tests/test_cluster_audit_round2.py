"""Issue 47, second independent audit: every shipped preset (and a user's with 4-GPU nodes) on
1 (part of a node) to 4 nodes, every ordered pair both ways, and groups of every shape Megatron
builds, each figure derived here by hand from the preset file and NCCL's published constants
(``src/graph/tuning.cc``): a pair costs latency + size / rate on its route (NVSwitch in a node,
its rail across, PXN's NVSwitch first between rails); a group's all-reduce NCCL's ring, tree
or NVLS on its members' links, never under the bytes its nodes must push through their NICs."""

from __future__ import annotations

import collections
import json
import math
import os
from dataclasses import replace

import pytest
import yaml

from simpy_astra.config.cluster import load_cluster
from simpy_astra.config.cluster_presets import presets
from simpy_astra.errors import InputError
from simpy_astra.simulation import Simulation
from tests.test_cluster_placement import GIB, PRESETS
from tests.test_nccl_gather_algorithms import ring_gather_by_hand

SHIPPED = ("dgx-a100-40gb", "dgx-a100-80gb", "dgx-h100")


@pytest.fixture(autouse=True)
def _quiet(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")


def _node(preset: str) -> dict:
    path = preset if preset.endswith(".yaml") else os.path.join(PRESETS, f"{preset}.yaml")
    with open(path) as f:
        return yaml.safe_load(f)["node"]


def _four_per_node(tmp_path) -> str:
    """A user's copy of dgx-h100 with 4 GPUs a node and 1,600 Gb/s of NICs: a rail is still
    1,600 / 8 / 4 x 0.94 = 47 GB/s, NVLink 370 GiB/s."""
    with open(os.path.join(PRESETS, "dgx-h100.yaml")) as f:
        text = f.read()
    for old, new in (("gpus: 8", "gpus: 4"), ("inter_node_gbps: 3200", "inter_node_gbps: 1600")):
        assert text.count(old) == 1
        text = text.replace(old, new)
    path = tmp_path / "four.yaml"
    path.write_text(text)
    return str(path)


# ------------------------------------------------------------------ closed forms
def _rates(node: dict) -> tuple[float, float]:
    """(NVLink, one rail) in bytes/ns = GB/s: NVLink's GiB/s; a NIC's share of the node's Gb/s."""
    return node["nvlink_gib_s"] * GIB / 1e9, node["inter_node_gbps"] / 8 / node["gpus"] * node["inter_node_efficiency"]


def _pair_ns(node: dict, src: int, dst: int, size: int, spine: float = 1.0) -> float:
    per = node["gpus"]
    nvlink, rail = _rates(node)
    if src // per == dst // per:
        return 2 * node["nvlink_latency_ns"] + size / nvlink
    pxn = 2 * node["nvlink_latency_ns"] if src % per != dst % per else 0.0
    return 2 * node["inter_node_latency_ns"] + pxn + size / (rail * spine)


def _layout(node: dict, members) -> tuple[int, int, int]:
    """(n GPUs, m nodes, k = the fewest members any node has: the NICs each node's share leaves by)."""
    per = node["gpus"]
    on: dict[int, int] = collections.Counter(g // per for g in members)
    return len(members), len(on), min(on.values())


def _floor_ns(node: dict, kind: str, members, size: int, spine: float = 1.0) -> float:
    """The NIC floor by hand: each node's bytes out over its own members' rails, the slowest node."""
    per = node["gpus"]
    rail = _rates(node)[1] * spine
    on = collections.Counter(g // per for g in members)
    n, m = len(members), len(on)
    if m < 2:
        return 0.0
    worst = 0.0
    for k in on.values():
        out = {"all_reduce": 2 * (m - 1) / m * size, "reduce_scatter": (n - k) / n * size,
               "all_gather": (n - k) * size, "all_to_all": k * (n - k) / n * size,
               "broadcast": size}[kind]  # a broadcast: every node but the root's takes the buffer in
        worst = max(worst, out / (k * rail))
    return worst


def _nvls_gb_s(nvlink: float, rail: float, n: int, m: int, k: int, spine: float = 1.0) -> float:
    """NCCL 2.29.7's NVLS estimate, GB/s of the buffer, by hand (search.cc, tuning.cc): one
    channel per GPU of a node; bwIntra the fastest search speed s (one node 60, 50, 40, 30, ...;
    across nodes 48, 45, 42, 40, 30, ...) with (k + 1) s within NVLink and, across nodes, s within
    a rail; bwInter from there up the speeds while under 2 bwIntra and within a rail; a channel
    moves min(bwIntra x 0.85 x (k - 1) / k x 2, bwInter (x 2 on two nodes, the rail at the
    spine's share), the NVLS tree's 57.7 on two nodes / 45.5 past); k channels, x n / (2 (n - 1))."""
    speeds = (60, 50, 40, 30, 24, 20, 15, 12) if m == 1 else (48, 45, 42, 40, 30, 24, 22, 20)
    nic = math.inf if m == 1 else rail
    i = next(i for i, s in enumerate(speeds) if (k + 1) * s <= nvlink and s <= nic)
    intra = inter = speeds[i]
    while i and inter < 2 * intra and speeds[i - 1] <= nic:
        i -= 1
        inter = speeds[i]
    if m > 1:
        inter *= (2 if m == 2 else 1) * spine
    cap = math.inf if m == 1 else 57.7 if m == 2 else 45.5
    return k * min(intra * 0.85 * (k - 1) / k * 2, inter, cap) * n / (2 * (n - 1))


def _simple_us(node: dict, members, algo: str, size: int, spine: float = 1.0) -> tuple[float, float]:
    """(NCCL's estimate, the time on the machine) of an all-reduce of ``size`` bytes with Simple,
    in us. tuning.cc: base 8.4 us (ring, tree), per hop 3.4 / 4.0 / 25 on NVLink and 14 / 14 /
    20.9 on the network (ring / tree / NVLS), at least 3 us an NVLink step of a ring across
    nodes, whose latency is x 1.4 (the plateau). Bandwidths: the ring n / (2 (n - 1)) of
    min(NVLink, k rails); the tree 0.92 / 2 of min(NVLink, k rails x 2 on two nodes, once past),
    x 0.85 at one GPU a node (its graph's pattern is then the simple tree);
    NVLS NCCL's own estimate (:func:`_nvls_gb_s`). The machine's time adds the preset's call
    cost, its efficiencies (NVLS's of NCCL's whole estimate) and Simple's fill ((scale - 1) x
    latency, at most half the transfer)."""
    nvlink, rail = _rates(node)
    n, m, k = _layout(node, members)
    net = k * rail * spine
    across = math.inf if m == 1 else net * (2 if m == 2 else 1)
    if algo == "ring":
        steps = 2 * (m - 1)
        lat = 8.4 + (2 * (n - 1) - steps) * (3.4 if m == 1 else max(3.4, 3.0)) + steps * 14
        lat *= 1.4 if m > 1 else 1.0
        bw = n / (2 * (n - 1)) * (nvlink if m == 1 else min(nvlink, net))
    elif algo == "tree":
        lat = 8.4 + 2 * ((n // m - 1) * 4.0 + int(math.log2(m)) * 14)
        bw = 0.46 * min(nvlink, across) * (0.85 if n == m else 1.0)  # one GPU a node: the simple tree
    else:
        lat = 25 + (2 * int(math.log2(m)) * 20.9 if m > 1 else 0)
        bw = _nvls_gb_s(nvlink, rail, n, m, k, spine)
    nominal_bw = bw if spine == 1 else None
    bw *= node.get(f"nccl_{algo}_efficiency", 1.0)
    transfer = size / (bw * 1e3)
    scale = node.get("nccl_latency_scale", 1.0) if node.get("nccl_latency_scale_algo", algo) == algo else 1.0
    fill = min((scale - 1) * lat, 0.5 * transfer)
    estimate = lat + size / (nominal_bw * 1e3) if nominal_bw else math.nan
    return estimate, node.get("nccl_launch_us", 0.0) + lat + fill + transfer


def _at_or_above(took: int, floor: float) -> bool:
    """``took`` not under ``floor`` but for whole ns and the rail's rate kept to 6 decimals of GiB/s."""
    return took >= floor * (1 - 1e-7) - 1


def _all_reduce_ns(node: dict, members, algo: str, size: int, spine: float = 1.0) -> float:
    return max(1000 * _simple_us(node, members, algo, size, spine)[1], _floor_ns(node, "all_reduce", members, size,
                                                                                  spine))


def _ring_gather(node: dict, members, kind: str, size: int) -> tuple[str, float]:
    """A reduce-scatter (``size`` the whole buffer) or all-gather (``size`` each piece) as NCCL's
    ring (tests/test_nccl_gather_algorithms.py): the protocol of least estimate, and the time of
    Simple on the machine, ns (not under the NIC floor)."""
    n, m, k = _layout(node, members)
    estimates, simple_us = ring_gather_by_hand(node, n, m, k, size * n if kind == "all_gather" else size)
    return min(estimates, key=estimates.get), max(1000 * simple_us, _floor_ns(node, kind, members, size))


def _ring_gather_ns(node: dict, members, kind: str, size: int) -> float:
    """:func:`_ring_gather`'s time where NCCL picks Simple (the sizes these audits check)."""
    proto, took = _ring_gather(node, members, kind, size)
    assert proto == "Simple", (members, kind, size)
    return took


def _run(tmp_path, body: dict) -> Simulation:
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(body))
    sim = Simulation.from_scenario(str(path))
    sim.run()
    return sim


def _microbench(kind: str, size: int, cluster: dict, **pair) -> dict:
    return {"workload": {"generate": "microbench", "collective": kind, "size": size, **pair}, "cluster": cluster}


def _finish_ns(sim: Simulation) -> int:
    return max(npu.ended_ns[nid] for npu in sim.npus for nid in npu.ended_ns)


def test_the_audit_covers_every_shipped_preset():
    """A preset added later must join this audit's table (and its by-hand checks)."""
    assert tuple(presets()) == SHIPPED


# ------------------------------------------------------------------ pairs
@pytest.mark.parametrize("preset", SHIPPED)
@pytest.mark.parametrize("nodes", [2, 3, 4])
def test_every_ordered_pair_on_2_3_and_4_nodes(tmp_path, preset, nodes):
    """Every ordered pair of GPUs, 1 KiB (the route's latencies: within 1 ns), 1 MiB and 1 GiB
    (within 1%), on every shipped preset."""
    node = _node(preset)
    gpus = nodes * node["gpus"]
    path = tmp_path / "p.yaml"
    path.write_text(json.dumps(_microbench("send_recv", 1024, {"preset": preset, "gpus": gpus}, src=0, dst=1)))
    net = Simulation.from_scenario(str(path)).network
    for src in range(gpus):
        for dst in range(gpus):
            if src == dst:
                continue
            assert net.delay_ns(src, dst, 1024) == pytest.approx(_pair_ns(node, src, dst, 1024), abs=1)
            for size in (2**20, GIB):
                assert net.delay_ns(src, dst, size) == pytest.approx(_pair_ns(node, src, dst, size), rel=0.01)


@pytest.mark.parametrize("preset", SHIPPED)
@pytest.mark.parametrize("a,b", [(1, 6), (2, 18), (5, 17), (7, 8)])
def test_send_recv_both_ways_on_three_nodes(tmp_path, preset, a, b):
    """64 MiB run both ways on 24 GPUs: in a node, same rail two nodes apart, other rails (PXN)."""
    node = _node(preset)
    for src, dst in ((a, b), (b, a)):
        sim = _run(tmp_path, _microbench("send_recv", 2**26, {"preset": preset, "gpus": 24}, src=src, dst=dst))
        assert _finish_ns(sim) == pytest.approx(_pair_ns(node, src, dst, 2**26), rel=0.01)


@pytest.mark.parametrize("preset", SHIPPED)
@pytest.mark.parametrize("gpus", [2, 3, 5, 6, 7])
def test_part_of_a_node_is_nvlink_and_its_in_node_algorithms(tmp_path, preset, gpus):
    """Fewer GPUs than a node: every pair over the NVSwitch, and the all-reduce of 1 GiB forced to
    each algorithm NCCL has in a node (ring; tree, a chain there; NVLS on NVSwitch-3) by hand."""
    node = _node(preset)
    cluster = {"preset": preset, "gpus": gpus}
    sim = _run(tmp_path, _microbench("send_recv", GIB, cluster, src=gpus - 1, dst=0))
    for src in range(gpus):
        for dst in range(gpus):
            if src != dst:
                assert sim.network.delay_ns(src, dst, GIB) == pytest.approx(_pair_ns(node, src, dst, GIB), rel=0.01)
    algos = ("ring", "tree", "nvls") if node["nvls"] else ("ring", "tree")
    for algo in algos:
        took = _finish_ns(_run(tmp_path, _microbench("all_reduce", GIB, {**cluster, "nccl_algo": algo})))
        assert took == pytest.approx(_all_reduce_ns(node, range(gpus), algo, GIB), rel=0.005), algo


@pytest.mark.parametrize("gpus", [2, 3, 8, 12])
def test_a_users_preset_of_four_gpus_a_node(tmp_path, gpus):
    """The 4-GPU copy on part of a node, two nodes and three: every ordered pair, and send_recv
    run both ways between nodes on other rails."""
    preset = _four_per_node(tmp_path)
    node = _node(preset)
    assert _rates(node)[1] == pytest.approx(47.0)
    sim = _run(tmp_path, _microbench("send_recv", GIB, {"preset": preset, "gpus": gpus}, src=0, dst=1))
    for src in range(gpus):
        for dst in range(gpus):
            if src != dst:
                assert sim.network.delay_ns(src, dst, GIB) == pytest.approx(_pair_ns(node, src, dst, GIB), rel=0.01)
    if gpus > 4:
        for src, dst in ((1, gpus - 2), (gpus - 2, 1)):
            took = _finish_ns(_run(tmp_path, _microbench("send_recv", 2**26, {"preset": preset, "gpus": gpus},
                                                         src=src, dst=dst)))
            assert took == pytest.approx(_pair_ns(node, src, dst, 2**26), rel=0.01)


@pytest.mark.parametrize("preset", [*SHIPPED, "four"])
@pytest.mark.parametrize("backend", ["packet", "congestion_aware"])
def test_message_backends_price_pairs_both_ways_on_three_nodes(tmp_path, preset, backend):
    """64 MiB alone, both ways, on three nodes: packet pipelines its packets (the route's
    latencies + size / its slowest link, within 1%); congestion_aware stores and forwards whole
    messages, each link's latency and the bytes once a link: NVLink twice in a node, the rail
    twice across nodes on one rail, NVLink's twice and the rail's twice between rails (PXN)."""
    preset = _four_per_node(tmp_path) if preset == "four" else preset
    node = _node(preset)
    per, size = node["gpus"], 2**26
    nvlink, rail = _rates(node)
    for a, b in ((1, per - 2), (1, 2 * per + 1), (per - 1, 2 * per)):
        for src, dst in ((a, b), (b, a)):
            if backend == "packet":
                by_hand = _pair_ns(node, src, dst, size)
            else:
                nvlink_hops = 2 if src // per == dst // per or src % per != dst % per else 0
                rail_hops = 0 if src // per == dst // per else 2
                by_hand = (nvlink_hops * (size / nvlink + node["nvlink_latency_ns"])
                           + rail_hops * (size / rail + node["inter_node_latency_ns"]))
            sim = _run(tmp_path, {"backend": backend, **_microbench("send_recv", size, {"preset": preset, "gpus": 3 * per},
                                                                    src=src, dst=dst)})
            assert _finish_ns(sim) == pytest.approx(by_hand, rel=0.01), (src, dst)


def test_gpus_past_a_node_that_do_not_fill_nodes_are_refused_on_a_users_preset(tmp_path):
    from simpy_astra.errors import InputError

    with pytest.raises(InputError, match=r"gpus: 6 GPUs do not fill whole nodes of 4; use 4 or 8"):
        load_cluster({"preset": _four_per_node(tmp_path), "gpus": 6}, "s: cluster")


# ------------------------------------------------------------------ groups, by their members
#: (GPUs, members): the groups Megatron builds (tests/test_megatron_rank_groups.py): data-parallel
#: groups under tp 4 and tp 2 (strided), tp 16 across two nodes, a context-parallel or
#: --use-tp-pp-dp-mapping data-parallel pair {0, 8} (one GPU a node, one rail), tp 8's
#: data-parallel group on four nodes, tp 3's uneven one (3, 3, 2 a node), two a node on three
#: nodes, and an expert group of 4 in a node
GROUPS = [(16, (0, 4, 8, 12)), (16, tuple(range(0, 16, 2))), (32, tuple(range(16))), (16, (0, 8)),
          (32, (0, 8, 16, 24)), (24, tuple(range(0, 24, 3))), (24, (0, 1, 8, 9, 16, 17)), (16, (4, 5, 6, 7))]


def _timing(preset: str, gpus: int, **extra):
    return load_cluster({"preset": preset, "gpus": gpus, **extra}, "s: cluster").nccl_all_reduce()


def _algorithms(node: dict, members) -> list[str]:
    n, m, _k = _layout(node, members)
    return ["ring", "tree"] + (["nvls"] if node["nvls"] and n // m > 1 else [])


@pytest.mark.parametrize("preset", SHIPPED)
@pytest.mark.parametrize("gpus,members", GROUPS)
def test_every_group_shape_forced_and_chosen_by_hand(preset, gpus, members):
    """1 GiB all-reduce on each group, each algorithm forced (NCCL_ALGO), by hand; left out, the
    algorithm of least NCCL estimate (constants on the preset's nominal rates, nothing fitted)."""
    node = _node(preset)
    times, estimates = {}, {}
    for algo in _algorithms(node, members):
        times[algo] = _timing(preset, gpus, nccl_algo=algo).duration_ns(members, GIB)
        assert times[algo] == pytest.approx(_all_reduce_ns(node, members, algo, GIB), rel=0.005), algo
        assert _at_or_above(times[algo], _floor_ns(node, "all_reduce", members, GIB))
        estimates[algo] = _simple_us(node, members, algo, GIB)[0]
    chosen = min(estimates, key=estimates.get)
    assert _timing(preset, gpus).duration_ns(members, GIB) == times[chosen]


@pytest.mark.parametrize("preset", SHIPPED)
@pytest.mark.parametrize("gpus,members", GROUPS)
@pytest.mark.parametrize("kind", ["reduce_scatter", "all_gather"])
def test_reduce_scatter_and_all_gather_of_every_group_shape(preset, gpus, members, kind):
    """NCCL's ring, chosen or forced: a reduce-scatter of a 1 GiB buffer, an all-gather of
    256 MiB pieces; never under the bytes a node's members pull in or push out over their NICs.
    The tree runs all-reduces only: forced, NCCL (2.24 on) stops, and so does the run."""
    node = _node(preset)
    size = GIB if kind == "reduce_scatter" else 2**28
    for algo in (None, "ring"):
        took = _timing(preset, gpus, **({"nccl_algo": algo} if algo else {})).duration_ns(members, size, kind)
        assert took == pytest.approx(_ring_gather_ns(node, members, kind, size), rel=0.005)
        assert _at_or_above(took, _floor_ns(node, kind, members, size))
    with pytest.raises(InputError, match=r"s: cluster\.nccl_algo: tree: NCCL's tree runs all-reduces only"):
        _timing(preset, gpus, nccl_algo="tree").duration_ns(members, size, kind)


@pytest.mark.parametrize("preset", SHIPPED)
@pytest.mark.parametrize("gpus", [4, 16, 24])
def test_microbench_collectives_on_every_preset(tmp_path, preset, gpus):
    """generate: microbench over every GPU, part of a node to three nodes: the all-reduce of 1 GiB
    as NCCL's choice by hand, the reduce-scatter (1 GiB buffer) and all-gather (1 GiB a rank) as
    NCCL's ring, the all-to-all (1 GiB a rank, played as messages) at or above its NIC floor."""
    node = _node(preset)
    members = tuple(range(gpus))
    cluster = {"preset": preset, "gpus": gpus}
    estimates = {algo: _simple_us(node, members, algo, GIB)[0] for algo in _algorithms(node, members)}
    chosen = min(estimates, key=estimates.get)
    expect = {"all_reduce": _all_reduce_ns(node, members, chosen, GIB),
              "reduce_scatter": _ring_gather_ns(node, members, "reduce_scatter", GIB),
              "all_gather": _ring_gather_ns(node, members, "all_gather", GIB)}
    for kind, by_hand in expect.items():
        took = _finish_ns(_run(tmp_path, _microbench(kind, GIB, cluster)))
        assert took == pytest.approx(by_hand, rel=0.005), kind
    sim = _run(tmp_path, _microbench("all_to_all", GIB, cluster))
    assert not sim.warnings
    assert _finish_ns(sim) >= _floor_ns(node, "all_to_all", members, GIB)


@pytest.mark.parametrize("algo", ["ring", "tree", "nvls"])
@pytest.mark.parametrize("leaf,ratio", [(1, 2), (2, 4), (4, 4)])
def test_a_strided_group_across_leaves_runs_at_the_spines_share(algo, leaf, ratio):
    """tp 4's data-parallel group on four H100 nodes, {0, 4, ..., 28} (2 a node), with one or
    two nodes a leaf (its ring crosses the spine: each NIC at rail / ratio) or four (one leaf:
    no spine); NCCL's choice is still made on the NICs' own rate."""
    node = _node("dgx-h100")
    members = tuple(range(0, 32, 4))
    spine = 1 / ratio if leaf < 4 else 1.0
    timing = _timing("dgx-h100", 32, nccl_algo=algo, nodes_per_leaf=leaf, oversubscription=ratio)
    assert timing.duration_ns(members, GIB) == pytest.approx(_all_reduce_ns(node, members, algo, GIB, spine),
                                                             rel=0.005)
    assert _at_or_above(timing.duration_ns(members, GIB), _floor_ns(node, "all_reduce", members, GIB, spine))


def test_the_channel_count_reaches_no_preset_figure(tmp_path):
    """NCCL's channels come from its topology search (one a NIC at the NIC's speed, doubled:
    src/graph/search.cc, connect.cc), so 4-GPU nodes with 4 NICs get fewer than the 32 the
    model keeps. Down to 16 they change nothing: a tree's halved chunks cost nothing on a preset
    (``tree_chunk_us`` 0, fitted only by calibrate), the ring's plateau is never on a size where
    Simple beats LL, and NCCL's caps per channel (tuning.cc: Hopper's tree 38.7 / 41.4 / 36.0
    GB/s on one node, two, more; LL128 36.7 and 29.0) are under no 16 channels' bus bandwidth.
    On 8 they bind: the tree on two such nodes is 8 x 41.4 = 331.2 GB/s of bus bandwidth, under
    its 0.92 x min(NVLink, 4 rails x 2 = 376) = 345.9, so 1 GiB takes launch + latency + fill +
    2^30 / (331.2 / 2) bytes/us (latency 8.4 + 2 (3 x 4.0 + 14) = 60.4 us; no fill: the preset's
    is NVLS's, nccl_latency_scale_algo)."""
    from simpy_astra.engine.nccl_tuning import ALGORITHMS, Shape, available, choose, predict_us

    links = load_cluster({"preset": _four_per_node(tmp_path), "gpus": 16}, "c").nccl_all_reduce().links
    assert links.tree_chunk_us == 0
    fewer = replace(links, channels=16)
    for shape in (Shape(4, 1, 4), Shape(8, 2, 4), Shape(16, 4, 4), Shape(4, 4, 1), Shape(8, 4, 2)):
        for size in (2**e for e in range(3, 31)):
            assert choose(fewer, shape, size) == choose(links, shape, size)
            for algo in (a for a in ALGORITHMS if available(links, shape, a)):
                assert predict_us(fewer, shape, algo, size) == predict_us(links, shape, algo, size)
    lat = 8.4 + 2 * (3 * 4.0 + 14)
    by_hand = 3.675 + lat + 2**30 / (8 * 41.4 / 2 * 1e3)
    assert predict_us(links, Shape(8, 2, 4), "tree", 2**30)[0] < by_hand * 0.96
    assert predict_us(replace(links, channels=8), Shape(8, 2, 4), "tree", 2**30)[0] == pytest.approx(by_hand, rel=1e-6)


# ------------------------------------------------------------------ groups in Megatron steps
BASE = ("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --max-position-embeddings 1024 "
        "--micro-batch-size 1 --global-batch-size 16 --bf16 --vocab-size 51200 ")


def _args(extra: str) -> str:
    """BASE with ``extra``'s flags added or replacing BASE's (no flag given twice)."""
    words, flags = (BASE + extra).split(), {}
    while words:
        flag = words.pop(0)
        flags[flag] = words.pop(0) if words and not words[0].startswith("--") else None
    return " ".join(flag if value is None else f"{flag} {value}" for flag, value in flags.items())


def _step(tmp_path, monkeypatch, args: str, cluster: dict) -> tuple[Simulation, dict]:
    """A Megatron step run unfolded, and every NCCL-timed collective it ran: (members, bytes,
    kind) -> ns, as NCCL's model timed it."""
    from simpy_astra.engine import nccl_collectives

    seen: dict = {}
    timed = nccl_collectives.NcclAllReduce._duration_ns

    def record(self, members, size, kind, name=""):
        seen[(members, size, kind)] = took = timed(self, members, size, kind, name)
        return took

    monkeypatch.setattr(nccl_collectives.NcclAllReduce, "_duration_ns", record)
    monkeypatch.setenv("SIMPY_ASTRA_FOLD", "0")
    sim = _run(tmp_path, {"workload": {"generate": "megatron", "args": _args(args)}, "cluster": cluster})
    return sim, seen


def _groups(seen: dict) -> set[tuple[int, ...]]:
    return {members for members, _size, _kind in seen}


def _blocks(gpus: int, size: int, stride: int = 1) -> set[tuple[int, ...]]:
    """Groups of ``size`` GPUs ``stride`` apart, tiling ``gpus``."""
    span = size * stride
    return {tuple(range(base + off, base + span, stride)) for base in range(0, gpus, span) for off in range(stride)}


STEPS = [
    # strided data-parallel groups: tp 4 on two nodes
    ("dgx-a100-80gb", 16, "--tensor-model-parallel-size 4 --DDP-impl local", _blocks(16, 4) | _blocks(16, 4, 4)),
    # tp 2 x cp 2: context-parallel pairs 2 apart; gradients and parameters over dp x cp, 2 apart
    ("dgx-h100", 16, "--tensor-model-parallel-size 2 --context-parallel-size 2 --use-distributed-optimizer",
     _blocks(16, 2) | _blocks(16, 2, 2) | _blocks(16, 8, 2)),
    # tensor parallelism spanning two nodes; data parallelism 16 apart
    ("dgx-h100", 32, "--tensor-model-parallel-size 16 --DDP-impl local", _blocks(32, 16) | _blocks(32, 2, 16)),
    # tp 8 x cp 2: each context-parallel pair one GPU on each node, one rail
    ("dgx-a100-40gb", 16, "--tensor-model-parallel-size 8 --context-parallel-size 2 --seq-length 2048 "
     "--max-position-embeddings 2048", _blocks(16, 8) | _blocks(16, 2, 8)),
    # Megatron's tp-cp-ep-pp-dp order: the data-parallel pair 8 apart, the pipeline in a node (its
    # first and last stages' tied embeddings synced 4 apart)
    ("dgx-a100-80gb", 16, "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --use-tp-pp-dp-mapping "
     "--DDP-impl local", _blocks(16, 4) | _blocks(16, 2, 8) | _blocks(16, 2, 4)),
    # experts over ep 4 (tp 1): each expert's data-parallel group {r, r + 4, r + 8, r + 12}, two a node,
    # beside the dense layers' all 16
    ("dgx-h100", 16, "--num-experts 8 --expert-model-parallel-size 4 --moe-router-topk 2 --disable-bias-linear "
     "--moe-token-dispatcher-type alltoall --DDP-impl local", _blocks(16, 16) | _blocks(16, 4, 4)),
    # tp 8 x pp 2: the pipeline's neighbours (and the embeddings' pairs) on two nodes; no data parallelism
    ("dgx-h100", 16, "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 2", _blocks(16, 8) | _blocks(16, 2, 8)),
]


@pytest.mark.parametrize("preset,gpus,args,groups", STEPS)
def test_megatron_groups_are_megatrons_and_each_collective_holds_its_floor(tmp_path, monkeypatch, preset, gpus,
                                                                           args, groups):
    """Every NCCL-timed collective of the step runs on one of Megatron's groups (by hand), at
    or above its NIC floor; forced to the ring, each of 64 MiB and more is NCCL's ring (Simple,
    where NCCL's estimate picks it) on its members' links by hand; and no collective is below
    its link-bandwidth floor."""
    node = _node(preset)
    for algo in (None, "ring"):
        sim, seen = _step(tmp_path, monkeypatch, args,
                          {"preset": preset, "gpus": gpus, **({"nccl_algo": algo} if algo else {})})
        assert _groups(seen) == groups
        assert not sim.warnings
        for (members, size, kind), took in seen.items():
            assert _at_or_above(took, _floor_ns(node, kind, members, size)), (members, size, kind)
            if algo == "ring" and size >= 2**26:
                proto, by_hand = (("Simple", _all_reduce_ns(node, members, "ring", size)) if kind == "all_reduce"
                                  else _ring_gather(node, members, kind, size))
                if proto == "Simple":
                    assert took == pytest.approx(by_hand, rel=0.005), (members, size, kind)


# ------------------------------------------------------------------ NCCL's constants by GPU
def _renamed(tmp_path, name: str, nvls: bool | None) -> str:
    """dgx-h100 with another GPU name, its node's nvls key set or left out."""
    with open(os.path.join(PRESETS, "dgx-h100.yaml")) as f:
        text = f.read().replace("name: H100-SXM5-80GB", f"name: {name}")
    nvls_line = next(line for line in text.splitlines() if line.strip().startswith("nvls:"))
    text = text.replace(nvls_line, "" if nvls is None else f"  nvls: {str(nvls).lower()}")
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("how", ["nvls off", "PCIe by name", "NVLS on"])
def test_lls_ceiling_in_a_node_is_the_gpus_not_nvlss(tmp_path, how):
    """NCCL caps LL's bus bandwidth on one node by the GPUs' generation (tuning.cc llMaxBws,
    indexed by compute capability: Ampere 87.7 GB/s, Hopper 141), whatever NVLS does. A 1 MiB
    all-reduce on 8 H100s is NCCL's ring with LL whether the nodes have NVLS or not (NVLS is
    chosen from 2 MiB): 6.6 + 14 x 0.6 us of latency, 1 MiB / (141 x 8/14 GB/s) = 13.0 us, and
    the preset's 3.675 us a call: 31.69 us. With NVLS off (cluster nvls: false, as
    NCCL_NVLS_ENABLE=0) or on an H100 PCIe copy it took 39.60 us: the ceiling was picked by
    NVLS, so an H100 without it got Ampere's."""
    cluster = {"nvls off": {"preset": "dgx-h100", "gpus": 8, "nvls": False},
               "PCIe by name": {"preset": _renamed(tmp_path, "H100-PCIe-80GB", None), "gpus": 8},
               "NVLS on": {"preset": "dgx-h100", "gpus": 8}}[how]
    by_hand_us = 3.675 + 6.6 + 14 * 0.6 + 2**20 / (141 * 8 / 14 * 1e3)
    took = _finish_ns(_run(tmp_path, _microbench("all_reduce", 2**20, cluster)))
    assert took == pytest.approx(1000 * by_hand_us, rel=0.001)


def test_blackwells_ll_ceiling_in_a_node_is_twice_hoppers(tmp_path):
    """tuning.cc: Blackwell's llMaxBws on one node is 2 x 141 GB/s. A B200 copy of dgx-h100 (its
    NVLink kept, 397.3 GB/s): LL's half of it, 198.7 GB/s, is under 282, so a 1 MiB ring LL
    moves at 198.7 x 8/14 GB/s: 3.675 + 15.0 + 9.24 us; capped at Hopper's 141 it took 31.69."""
    nvlink = _rates(_node("dgx-h100"))[0]
    by_hand_us = 3.675 + 6.6 + 14 * 0.6 + 2**20 / (min(0.5 * nvlink, 282) * 8 / 14 * 1e3)
    cluster = {"preset": _renamed(tmp_path, "B200-SXM-192GB", True), "gpus": 8}
    took = _finish_ns(_run(tmp_path, _microbench("all_reduce", 2**20, cluster)))
    assert took == pytest.approx(1000 * by_hand_us, rel=0.001)


@pytest.mark.parametrize("name,generation", [
    ("H100-SXM5-80GB", "hopper"), ("GH200-480GB", "hopper"), ("H20", "hopper"), ("H800-PCIe", "hopper"),
    ("GB200-NVL72", "blackwell"), ("B300", "blackwell"), ("A100-SXM4-40GB", "ampere"), ("A10G", "ampere"),
    ("L40S", "ampere"), ("V100-SXM2-32GB", "volta"), ("T4", "volta"), ("MI300X", "")])
def test_a_gpus_generation_by_its_name(name, generation):
    """NCCL's constants per generation (compute capability: Ada counts as Ampere, Turing as
    Volta); a name known neither way is "" (then NVLS decides, as before)."""
    from simpy_astra.config.gpu_names import gpu_generation

    assert gpu_generation(name) == generation


def _cli(tmp_path, body: dict, *flags: str) -> None:
    import subprocess
    import sys

    from tests.test_cluster_placement import ROOT

    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(body))
    env = {**os.environ, "SIMPY_ASTRA_CACHE": str(tmp_path / "cache"), "SIMPY_ASTRA_PROGRESS": "0"}
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(path), "--quiet", *flags],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("preset", [*SHIPPED, "four"])
def test_tp4_data_parallel_sync_at_or_above_its_floor_on_every_preset(tmp_path, preset):
    """TP 4 on 16 GPUs, --DDP-impl local: the gradients' all-reduce after the backward, exposed,
    on data-parallel groups {0, 4, 8, 12} (2 a node on 8-GPU nodes; 1 on each of 4 nodes of the
    4-GPU copy). Its bytes are at least the layers' 12 l h^2 / tp and the embedding's V h / tp
    parameters in fp32 (bf16 reduces in fp32): 77.6 MB; each node sends 2 (m - 1) / m of them
    through its k NICs. At a quarter of the NICs' rate the sync takes over 3x as long."""
    preset = _four_per_node(tmp_path) if preset == "four" else preset
    node = _node(preset)
    grads = 4 * (12 * 2 * 1024 * 1024 + 51200 * 1024) / 4
    assert grads / 1e6 == pytest.approx(77.6, abs=0.05)
    seen = {}
    for scale in (1, 4):
        gbit_s = node["inter_node_gbps"] / scale
        out = tmp_path / f"{scale}.json"
        _cli(tmp_path, {"workload": {"generate": "megatron", "args": _args("--tensor-model-parallel-size 4 "
                                                                            "--DDP-impl local")},
                        "cluster": {"preset": preset, "gpus": 16, "inter_node_gbit_s": gbit_s}}, "--json-out", str(out))
        dp_ns = json.loads(out.read_text())["npus"]["0"]["breakdown_ns"]["comm.dp"]
        floor = _floor_ns({**node, "inter_node_gbps": gbit_s}, "all_reduce", (0, 4, 8, 12), grads)
        assert dp_ns >= floor
        seen[scale] = dp_ns
    assert seen[4] > 3 * seen[1]


@pytest.mark.parametrize("preset", [*SHIPPED, "four"])
def test_pipeline_neighbours_pay_their_route_on_every_preset(tmp_path, preset):
    """TP 2 x PP 4 on 16 GPUs: stage p on ranks 4p to 4p + 3, each sending its whole activation
    (s b h in bf16, 2 MiB: today's Megatron) to the rank 4 ahead and its gradient 4 back: in a
    node, or (8-GPU nodes: 5 -> 9) across nodes on another rail, PXN; on the 4-GPU copy across
    nodes on one rail. Every send by hand."""
    import csv

    preset = _four_per_node(tmp_path) if preset == "four" else preset
    node = _node(preset)
    args = _args("--num-layers 4 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 4")
    _cli(tmp_path, {"workload": {"generate": "megatron", "args": args}, "cluster": {"preset": preset, "gpus": 16}},
         "--csv-out", str(tmp_path / "csv"))
    with open(tmp_path / "csv" / "nodes.csv") as f:
        sends = [r for r in csv.DictReader(f) if r["type"].startswith("COMM_SEND")]
    kinds = set()
    for r in sends:
        src = int(r["npu"])
        dst = src + 4 if r["name"].endswith("send_activation") else src - 4
        kinds.add((src // node["gpus"] == dst // node["gpus"], src % node["gpus"] == dst % node["gpus"]))
        assert int(r["duration_ns"]) == pytest.approx(_pair_ns(node, src, dst, 2**21), abs=2), r["name"]
    # (same node, same rail): 4-GPU nodes hold a stage each, so every send crosses nodes on its rail
    assert kinds == ({(False, True)} if node["gpus"] == 4 else {(True, False), (False, False)})


A2A_STEPS = [
    # experts over ep 4 with etp = tp = 4: groups {0, 4, 8, 12}, 2 a node on two nodes
    ("--tensor-model-parallel-size 4 --sequence-parallel --num-experts 4 --expert-model-parallel-size 4 "
     "--moe-router-topk 2 --disable-bias-linear --moe-token-dispatcher-type alltoall", _blocks(16, 4, 4)),
    # ep 16: every GPU, 8 a node
    ("--num-experts 16 --expert-model-parallel-size 16 --moe-router-topk 2 --disable-bias-linear "
     "--moe-token-dispatcher-type alltoall", {tuple(range(16))}),
    # context parallelism by all-to-all (Ulysses) over {r, r + 8}: one GPU a node, one rail
    ("--tensor-model-parallel-size 8 --context-parallel-size 2 --cp-comm-type a2a --seq-length 2048 "
     "--max-position-embeddings 2048", _blocks(16, 2, 8)),
]


@pytest.mark.parametrize("preset", SHIPPED)
@pytest.mark.parametrize("args,groups", A2A_STEPS)
def test_all_to_alls_across_nodes_hold_the_floor_the_check_states(tmp_path, monkeypatch, preset, args, groups):
    """All-to-alls are played as messages, each member's buffer B split among its group. The bound
    check states each one's floor by hand: the slowest node's k (n - k) / n x B out through its
    k members' rails (B / 2 / rail on two nodes); every all-to-all takes at least that, and the
    run warns of none."""
    monkeypatch.setenv("SIMPY_ASTRA_FOLD", "0")
    node = _node(preset)
    sim = _run(tmp_path, {"workload": {"generate": "megatron", "args": _args(args)},
                          "cluster": {"preset": preset, "gpus": 16}})
    assert not sim.warnings
    seen = set()
    for npu in sim.npus:
        for nid, kind, size, plan, involved, _stream, start in npu.collective_log:
            reached = {npu.npu_id}  # the grid's lines through this GPU, one after another
            for dim in plan.dims:
                reached = {x + m - npu.npu_id for x in reached for m in dim.members}
            members = tuple(sorted(reached))
            assert kind == "all_to_all" and members in groups
            floor = sim.floor_check.floor_ns(kind, size, plan, involved)
            assert floor == pytest.approx(_floor_ns(node, kind, members, size), abs=1)
            assert npu.ended_ns[nid] - start >= floor > 0
            seen.add(members)
    assert seen == groups
