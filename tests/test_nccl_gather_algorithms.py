"""NCCL's reduce-scatter and all-gather on a cluster preset: its own algorithms for them and its
choice between them (``src/graph/tuning.cc``, ``src/enqueue.cc`` of NCCL 2.30), each figure
derived here by hand from the preset file and NCCL's published constants.

What NCCL offers them: the ring (``n - 1`` steps, ``m - 1`` over the network, NCCL's bus
bandwidth times ``n / (n - 1)``); NVLS inside one node (across nodes only with CollNet), its
switch side ``bwIntra x 0.85 x (k - 1) / k`` a channel, not doubled and not converted; PAT at
one GPU a node (2.23 on), 0.75 of its graph's bandwidth, latency ``8 + log2 m x 14 / 3.5 +
2.8 n``; each hop at its algorithm's own network latency (NCCL takes the tree's at one GPU a
node; not kept, as for the all-reduce: docs/megatron.md). Never the tree: it runs all-reduces only, so ``NCCL_ALGO=TREE`` leaves an all-gather
no algorithm and NCCL (2.24 on: no fall back to the ring) stops; so does a run.
"""

from __future__ import annotations

import json
import math
import os

import pytest
import yaml

from simpy_astra.calibration.nccl_log import parse_log
from simpy_astra.cli.main import main
from simpy_astra.config.cluster import load_cluster
from simpy_astra.engine.nccl_tuning import (
    Links,
    Shape,
    available,
    choose,
    nccl_estimate_us,
    predict_us,
    protocol,
)
from simpy_astra.errors import InputError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H100 = os.path.join(ROOT, "simpy_astra", "config", "clusters", "dgx-h100.yaml")
LOGS = os.path.join(ROOT, "tests", "data", "nccl", "dgx-a100-superbench")
GIB, MIB = 2**30, 2**20
RS, AG = "reduce_scatter", "all_gather"


def _node() -> dict:
    with open(H100) as f:
        return yaml.safe_load(f)["node"]


def _timing(gpus: int, **extra):
    return load_cluster({"preset": "dgx-h100", "gpus": gpus, **extra}, "s: cluster").nccl_all_reduce()


def _rates(node: dict) -> tuple[float, float]:
    """(NVLink, one rail) in GB/s: 370 GiB/s = 397.3 GB/s; 3,200 Gb/s / 8 / 8 x 0.94 = 47 GB/s."""
    return node["nvlink_gib_s"] * GIB / 1e9, node["inter_node_gbps"] / 8 / node["gpus"] * node["inter_node_efficiency"]


def _on_machine_us(node: dict, lat_us: float, buffer: int, bw_gb_s: float, algo: str = "ring") -> float:
    """NCCL's Simple terms as the preset times them: its call cost, the latency, Simple's fill
    ((scale - 1) x latency, at most half the transfer) where ``algo`` is the algorithm the scale
    was fitted on (``nccl_latency_scale_algo``; the H100's: NVLS), the transfer."""
    transfer = buffer / (bw_gb_s * 1e3)
    scale = node.get("nccl_latency_scale", 1.0) if node.get("nccl_latency_scale_algo", algo) == algo else 1.0
    fill = min((scale - 1) * lat_us, 0.5 * transfer)
    return node.get("nccl_launch_us", 0.0) + lat_us + fill + transfer


def ring_gather_by_hand(node: dict, n: int, m: int, k: int, buffer: int) -> tuple[dict[str, float], float]:
    """NCCL's estimates of the ring's reduce-scatter/all-gather of ``buffer`` bytes on ``n`` GPUs
    over ``m`` nodes (``k`` NICs each), by protocol, and the Simple one's time on the machine, us:
    ``n - 1`` steps, ``m - 1`` of them on the network (14 / 4.0 / 2.7 us for Simple / LL128 / LL),
    the others on NVLink (3.4 / 1.9 / 0.6, at
    least 3 / 1 / 1 us across nodes); bus bandwidth min(NVLink, k rails), LL128 0.92 of it (cap
    32 x 36.7 on Hopper, 32 x 20 before), LL half (cap 20.4 GB/s past two nodes, 39 on two, 141
    in a Hopper node, 87.7 in an Ampere one); x n / (n - 1). No plateau: that is the all-reduce's.
    At one GPU a node (``n == m``) each network hop is the tree's (tuning.cc 2.23 on: 14 / 8.5 /
    5.0 us)."""
    nvlink, rail = _rates(node)
    tree_net = n == m
    bus = nvlink if m == 1 else min(nvlink, k * rail)
    hopper = node.get("nvls", False)
    ll_max = (141.0 if hopper else 87.7) if m == 1 else 39.0 if m == 2 else 20.4
    terms = {"Simple": (8.4, 3.4, 3.0, 14.0, bus),
             "LL128": (14.0, 1.9, 1.0, 8.5 if tree_net else 4.0, min(0.92 * bus, 32 * (36.7 if hopper else 20.0))),
             "LL": (6.6, 0.6, 1.0, 5.0 if tree_net else 2.7, min(0.5 * bus, ll_max))}
    estimates, simple_lat = {}, 0.0
    for proto, (base, nvl, overhead, net, bw) in terms.items():
        lat = base + (n - 1 - (m - 1)) * (max(nvl, overhead) if m > 1 else nvl) + (m - 1) * net
        simple_lat = simple_lat or lat
        estimates[proto] = lat + buffer / (bw * n / (n - 1) * 1e3)
    efficiency = node.get("nccl_ring_efficiency", 1.0)
    return estimates, _on_machine_us(node, simple_lat, buffer, bus * n / (n - 1) * efficiency)


def _ring_estimates_us(node: dict, n: int, m: int, buffer: int) -> dict[str, float]:
    return ring_gather_by_hand(node, n, m, n // m, buffer)[0]


@pytest.mark.parametrize("nodes", [2, 4])
@pytest.mark.parametrize("kind", [RS, AG])
def test_ring_on_2_and_4_h100_nodes_by_hand(nodes, kind):
    """A 1 GiB buffer over every GPU of 2 and 4 nodes: NCCL's choice is the ring (NVLS is not
    offered across nodes without CollNet, PAT not at 8 GPUs a node) with Simple, whose estimate
    is below LL128's and LL's; timed 8.4 + (n - m) x 3.4 + (m - 1) x 14 us of latency (70.0 and
    145.6 us), min(397.3, 8 x 47) x n / (n - 1) GB/s, with the preset's call cost and fill. The
    all-gather is given as each rank's share (1 GiB / n), as traces give it."""
    node = _node()
    n, m = 8 * nodes, nodes
    nvlink, rail = _rates(node)
    lat = 8.4 + (n - m) * 3.4 + (m - 1) * 14
    assert lat == pytest.approx({2: 70.0, 4: 145.6}[nodes])
    estimates, on_machine_us = ring_gather_by_hand(node, n, m, 8, GIB)
    assert min(estimates, key=estimates.get) == "Simple"
    assert on_machine_us == pytest.approx(_on_machine_us(node, lat, GIB, min(nvlink, 8 * rail) * n / (n - 1)))
    by_hand_ns = 1000 * on_machine_us
    timing, members = _timing(n), tuple(range(n))
    assert choose(timing.links, timing.shape(members), GIB, kind) == "ring"
    assert protocol(timing.links, timing.shape(members), "ring", GIB, kind) == "Simple"
    took = timing.duration_ns(members, GIB if kind == RS else GIB // n, kind)
    assert took == pytest.approx(by_hand_ns, rel=1e-3)
    # never under the bytes each node's 8 NICs must carry: (n - 8) / n of the buffer
    assert took >= (n - 8) / n * GIB / (8 * rail)


@pytest.mark.parametrize("nodes", [2, 4])
@pytest.mark.parametrize("kind", [RS, AG])
def test_nvls_in_a_node_of_2_and_4_h100_nodes_by_hand(nodes, kind):
    """A node's 8 GPUs (a tensor-parallel group) of a 2- or 4-node job, ``nccl_algo: nvls``: 8
    channels at 40 GB/s (9 x 40 within NVLink's 397.3, 9 x 50 not), each 40 x 0.85 x 7/8 x 7/8
    of the switch, 208.25 GB/s of the buffer (no ratio), at the preset's NVLS share; latency
    25 us. NCCL's choice there is the ring: its estimate is lower at every size (4 KiB: LL's
    10.8 us against NVLS's 25; 1 GiB: 397.3 x 8/7 GB/s against 208.25). Across the nodes NCCL
    has no NVLS reduce-scatter or all-gather without CollNet, and a forced one is refused."""
    node = _node()
    nvlink, _ = _rates(node)
    speed = next(s for s in (60, 50, 40, 30) if 9 * s <= nvlink)
    nvls_gb_s = 8 * speed * 0.85 * 7 / 8 * 7 / 8
    assert (speed, nvls_gb_s) == (40, pytest.approx(208.25))
    members, gpus = tuple(range(8)), 8 * nodes
    forced = _timing(gpus, nccl_algo="nvls")
    took = forced.duration_ns(members, GIB if kind == RS else GIB // 8, kind)
    assert took == pytest.approx(1000 * _on_machine_us(node, 25.0, GIB, nvls_gb_s * node["nccl_nvls_efficiency"], "nvls"),
                                 rel=1e-3)
    chosen = _timing(gpus)
    for size in (4096, GIB):
        ring = _ring_estimates_us(node, 8, 1, size)
        assert min(ring.values()) < 25.0 + size / (nvls_gb_s * 1e3)
        assert choose(chosen.links, chosen.shape(members), size, kind) == "ring"
    assert chosen.duration_ns(members, GIB, RS) == pytest.approx(
        1000 * _on_machine_us(node, 8.4 + 7 * 3.4, GIB, nvlink * 8 / 7), rel=1e-3)
    with pytest.raises(InputError, match=r"^s: cluster\.nccl_algo: nvls: NCCL's NVLS .* runs in one node "
                                         r"\(across nodes it needs CollNet\)[^\n]*force ring$"):
        forced.duration_ns(tuple(range(gpus)), GIB, kind)


def test_nccl_choice_pat_small_ring_large_at_one_gpu_a_node():
    """The data-parallel group of tp 8 on 48 H100 nodes (one GPU a node; Megatron-Core's 32B
    row). At one GPU a node NCCL's estimate (tuning.cc, 2.23 on) takes the tree's network hop
    for every algorithm: the ring's LL 6.6 + 47 x 5.0 = 241.6 us, LL128 14 + 47 x 8.5 = 413.5,
    Simple 8.4 + 47 x 14 = 666.4, PAT 8 + 5 x 14 / 3.5 + 48 x 2.8 = 162.4 us at 0.75 x 47 GB/s
    (its tree graph's bwInter past two nodes). So PAT from the smallest buffers (64 KiB: 164.3
    us against LL's 244.7), the ring's LL128 at 64 MiB (1,933 us against PAT's 2,066 and
    Simple's 2,064), Simple at 1 GiB. Timed with the preset's call cost and fill and, PAT being
    in no log, the mean of the machine's fitted shares. ``nccl_algo: ring`` runs the ring's LL
    at 4 MiB (241.6 + 201.3 us, against LL128's 508.5)."""
    node = _node()
    _, rail = _rates(node)
    members = tuple(range(0, 384, 8))
    timing = _timing(384)
    share = (node["nccl_nvls_efficiency"]) ** (1 / 3)  # ring 1, tree 1, nvls 1.0216
    for size, expect in ((64 * 1024, ("pat", "Simple")), (4 * MIB, ("pat", "Simple")),
                         (64 * MIB, ("ring", "LL128")), (GIB, ("ring", "Simple"))):
        ring = ring_gather_by_hand(node, 48, 48, 1, size)[0]
        pat = 8 + 5 * 14 / 3.5 + 48 * 2.8 + size / (0.75 * rail * 1e3)
        assert min([(("pat", "Simple"), pat)] + [(("ring", p), t) for p, t in ring.items()],
                   key=lambda e: e[1])[0] == expect
        for kind in (RS, AG):
            algo = choose(timing.links, timing.shape(members), size, kind)
            assert (algo, protocol(timing.links, timing.shape(members), algo, size, kind)) == expect
    assert timing.duration_ns(members, 4 * MIB, RS) == pytest.approx(
        1000 * _on_machine_us(node, 162.4, 4 * MIB, 0.75 * rail * share, "pat"), rel=1e-3)
    assert timing.duration_ns(members, GIB // 48, AG) == pytest.approx(
        1000 * ring_gather_by_hand(node, 48, 48, 1, GIB // 48 * 48)[1], rel=1e-3)
    ring_ll = 1000 * (node["nccl_launch_us"] + 241.6 + 4 * MIB / (20.4 * 48 / 47 * 1e3))
    assert _timing(384, nccl_algo="ring").duration_ns(members, 4 * MIB, RS) == pytest.approx(ring_ll, rel=1e-3)


def test_pat_bandwidth_by_group_shape():
    """PAT runs on NCCL's tree graph (init.cc), whose bandwidth tuning.cc reads as bwIntra on two
    nodes and bwInter past them; at one GPU a node its paths (NIC to GPU to NIC) are charged
    bwInter alone, so search.cc's second pass raises bwIntra a speed at a time until it is twice
    bwInter (H100, 400 Gb/s NIC on PCIe Gen5: two channels at 24, bwIntra 48). So PAT's
    estimate of a 64 MiB all-gather on 2 H100 nodes is 8 + 1 x 14 / 3.5 + 2 x 2.8 = 17.6 us +
    64 MiB / (0.75 x 2 x 47 GB/s), and on 4 nodes 8 + 2 x 14 / 3.5 + 4 x 2.8 = 27.2 us + 64 MiB
    / (0.75 x 47 GB/s). Forced (``nccl_algo:
    pat``), a reduce-scatter of it takes the same terms at the mean of the machine's shares,
    with the call's cost."""
    node = _node()
    _, rail = _rates(node)
    timing, forced = _timing(32), _timing(32, nccl_algo="pat")
    share = (node["nccl_nvls_efficiency"]) ** (1 / 3)  # ring 1, tree 1, nvls 1.0216
    for nodes, lat, graph_gb_s in ((2, 17.6, 2 * rail), (4, 27.2, rail)):
        members = tuple(range(0, 8 * nodes, 8))
        shape = timing.shape(members)
        assert (shape.nodes, shape.per_node) == (nodes, 1)
        assert 8 + int(math.log2(nodes)) * 14 / 3.5 + nodes * 2.8 == pytest.approx(lat)
        want = lat + 64 * MIB / (0.75 * graph_gb_s * 1e3)
        assert nccl_estimate_us(timing.links, shape, "pat", "Simple", 64 * MIB, AG) == pytest.approx(want, rel=1e-9)
        assert forced.duration_ns(members, 64 * MIB, RS) == pytest.approx(
            1000 * _on_machine_us(node, lat, 64 * MIB, 0.75 * graph_gb_s * share, "pat"), rel=1e-3)


def _microbench(tmp_path, kind: str, algo: str) -> tuple[int, str]:
    path = tmp_path / f"{kind}.yaml"
    path.write_text(json.dumps({"workload": {"generate": "microbench", "collective": kind, "size": MIB},
                                "cluster": {"preset": "dgx-h100", "gpus": 16, "nccl_algo": algo}}))
    return main(["run", str(path), "--quiet", "--json-out", str(tmp_path / f"{kind}.json")]), str(path)


def test_nccl_algo_tree_on_an_all_gather_stops_as_nccl_does(tmp_path, capsys, monkeypatch):
    """``NCCL_ALGO=Tree`` leaves an all-gather (or a reduce-scatter) no algorithm, and NCCL 2.24
    on stops ('No algorithm/protocol available ... NCCL_ALGO was set to Tree') rather than fall
    back to the ring: the run stops with one line naming the field and the fix. The same
    cluster's all-reduce runs the tree. The error names the trace's node it stopped at (it named
    a broadcast's alone)."""
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")
    assert _microbench(tmp_path, "all_reduce", "tree")[0] == 0
    capsys.readouterr()
    for kind, what in ((AG, "an all-gather"), (RS, "a reduce-scatter")):
        code, path = _microbench(tmp_path, kind, "tree")
        err = capsys.readouterr().err.strip()
        assert code == 2 and "\n" not in err and "Traceback" not in err
        assert (f"cluster.nccl_algo: tree: NCCL's tree runs all-reduces only, and this job issues {what} (node "
                f"'{kind}_16npus_1MB', over a group of 16 GPUs), and NCCL_ALGO=TREE stops NCCL there") in err
        assert err.endswith("leave nccl_algo out for NCCL's choice, or force ring")


def test_nccl_algo_pat_forces_pat_where_nccl_has_it_and_stops_elsewhere(tmp_path, capsys, monkeypatch):
    """``NCCL_ALGO=PAT`` (NCCL 2.23 on: "PAT" is one of ``ncclAlgoStr``) forces PAT on every
    reduce-scatter and all-gather that can run it: at one GPU a node (``ncclPatEnable``). The
    data-parallel group of tp 8 on 48 H100 nodes at 1 GiB, where NCCL's choice is the ring's
    Simple: forced, 8 + 5 x 14 / 3.5 + 48 x 2.8 = 162.4 us at 0.75 x 47 GB/s (x the mean of the
    fitted shares, PAT being in no log) with the preset's call cost, about 30.4 ms against the
    ring's 23.0. A node's 8 GPUs have no PAT, nor has an all-reduce (tuning.cc skips PAT for it):
    NCCL stops there ('No algorithm/protocol available ... NCCL_ALGO was set to PAT'), and so
    does a run, naming the field and the fix."""
    node = _node()
    _, rail = _rates(node)
    members = tuple(range(0, 384, 8))
    share = (node["nccl_nvls_efficiency"]) ** (1 / 3)
    pat_ns = 1000 * _on_machine_us(node, 8 + 5 * 14 / 3.5 + 48 * 2.8, GIB, 0.75 * rail * share, "pat")
    ring_ns = 1000 * ring_gather_by_hand(node, 48, 48, 1, GIB)[1]
    assert (pat_ns / 1e6, ring_ns / 1e6) == (pytest.approx(30.41, abs=0.005), pytest.approx(23.04, abs=0.005))
    forced, chosen = _timing(384, nccl_algo="pat"), _timing(384)
    for kind, size in ((RS, GIB), (AG, GIB // 48)):
        assert forced.duration_ns(members, size, kind) == pytest.approx(pat_ns, rel=1e-3)
        assert chosen.duration_ns(members, size, kind) == pytest.approx(ring_ns, rel=1e-3)
    with pytest.raises(InputError, match=r"^s: cluster\.nccl_algo: pat: NCCL's PAT runs on one GPU a node .*, and "
                                         r"this reduce-scatter has 8 on each of its 1 node, .*force ring$"):
        forced.duration_ns(tuple(range(8)), GIB, RS)
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")
    code, _path = _microbench(tmp_path, "all_reduce", "pat")
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "Traceback" not in err
    assert "cluster.nccl_algo: pat: NCCL's PAT runs reduce-scatters and all-gathers only, and this job issues " \
           "an all-reduce (node 'all_reduce_16npus_1MB', over a group of 16 GPUs), and NCCL_ALGO=PAT" in err
    assert err.endswith("leave nccl_algo out for NCCL's choice, or force ring or tree")


def test_dgx_a100_reduce_scatter_and_all_gather_logs_where_nccl_runs_the_ring():
    """One DGX A100 node's nccl-tests logs (no NVLS on A100, PAT at one GPU a node only: NCCL
    runs the ring at every size), held out: the preset's figures were fitted on its all-reduce
    log alone. From 256 MiB (where the all-reduce's ring was fitted) the reduce-scatter is
    within 5% (3.2-4.3%); the all-gather in place (Megatron's distributed optimizer gathers in
    place) within 5% from 1 GiB and 6.8% from 256 MiB; out of place NCCL also copies each
    rank's own piece (docs/calibration.md), 4.5-9.9% more than this model, which has no copy."""
    links = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "c").nccl_all_reduce().links
    shape = Shape(8, 1, 8)
    worst = {}
    for name, column in ((RS, "time_us"), (AG, "inplace_time_us")):
        for row in parse_log(os.path.join(LOGS, f"{name}.log")).rows:
            if row.size_bytes >= 256 * MIB:
                assert choose(links, shape, row.size_bytes, name) == "ring"
                error = predict_us(links, shape, "ring", row.size_bytes, kind=name)[0] / getattr(row, column) - 1
                worst[(name, row.size_bytes >= GIB)] = max(worst.get((name, row.size_bytes >= GIB), 0), abs(error))
    assert max(worst[(RS, False)], worst[(RS, True)]) <= 0.05
    assert worst[(AG, True)] <= 0.05 and worst[(AG, False)] <= 0.07


def test_which_collective_has_which_algorithm():
    """tuning.cc and enqueue.cc: the tree for all-reduces only, PAT for the other two at one GPU a
    node only, NVLS for those two inside one node of at most 32 GPUs (NCCL_MAX_NVLS_ARITY; the
    all-reduce's NVLS has no such bound) on NVSwitch-3 nodes."""
    nvls = Links(400.0, 50.0, True)
    for kind in (RS, AG):
        assert not available(nvls, Shape(16, 2, 8), "tree", kind)
        assert available(nvls, Shape(4, 4, 1), "pat", kind) and not available(nvls, Shape(8, 4, 2), "pat", kind)
        assert available(nvls, Shape(32, 1, 32), "nvls", kind) and not available(nvls, Shape(64, 1, 64), "nvls", kind)
        assert not available(nvls, Shape(16, 2, 8), "nvls", kind)
        assert not available(Links(400.0, 50.0, False), Shape(8, 1, 8), "nvls", kind)
    assert available(nvls, Shape(64, 1, 64), "nvls", "all_reduce") and available(nvls, Shape(16, 2, 8), "tree", "all_reduce")
    assert not available(nvls, Shape(4, 4, 1), "pat", "all_reduce")


def test_the_h100_fill_is_nvls_where_it_was_fitted():
    """The H100 preset's Simple latency scale (3.1671) was fitted on its log's NVLS tree (two
    nodes, 128 MiB to 16 GiB); NCCL's own estimate has no such term (tuning.cc: latency + bytes /
    bandwidth, and the ring's plateau on an all-reduce), so the ring keeps NCCL's latency. The
    32B row's gradient reduce-scatter (308,396,032 B on 48 nodes, one GPU each): NCCL's ring with
    Simple (its estimate 7,091 us under LL128's 7,186), 8.4 + 47 x 14 = 666.4 us, 47 x 48 / 47
    GB/s, 3.675 us a call: 7,095 us (8,539 with NVLS's fill, 7,182 as half an LL128 all-reduce).
    Moved to the ring (``nccl_latency_scale_algo: ring``) the fill is back; a name NCCL has not
    is refused in one line."""
    node = _node()
    _, rail = _rates(node)
    members, size = tuple(range(0, 384, 8)), 308_396_032
    timing = _timing(384)
    assert (choose(timing.links, timing.shape(members), size, RS), protocol(timing.links, timing.shape(members),
                                                                            "ring", size, RS)) == ("ring", "Simple")
    transfer = size / (rail * 48 / 47 * 1e3)
    assert timing.duration_ns(members, size, RS) == pytest.approx(1000 * (3.675 + 666.4 + transfer), rel=1e-4)
    on_ring = _timing(384, nccl_latency_scale_algo="ring")
    fill = (3.1671 - 1) * 666.4
    assert on_ring.duration_ns(members, size, RS) == pytest.approx(1000 * (3.675 + 666.4 + fill + transfer), rel=1e-4)
    with pytest.raises(InputError, match=r"^s: cluster.nccl_latency_scale_algo: must be one of ring, tree, nvls "
                                         r"\(the algorithm nccl_latency_scale was fitted on\)"):
        _timing(384, nccl_latency_scale_algo="RING")
