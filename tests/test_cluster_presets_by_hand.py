"""Issue 47's audit, round 2: the presets and fabrics round 1 left out (dgx-a100-40gb from one
node to 32, a user's own preset file with 4 GPUs a node, the NIC rate and the spine
overridden), each figure derived here by hand from the preset file and NCCL's published
constants (tuning.cc), never from the code's formulas."""

from __future__ import annotations

import json
import os

import pytest

from simpy_astra.simulation import Simulation
from tests.test_cluster_placement import GIB, PRESETS, _node

A100_40 = "dgx-a100-40gb"


@pytest.fixture(autouse=True)
def _quiet(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")


def _sim(tmp_path, body: dict) -> Simulation:
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(body))
    return Simulation.from_scenario(str(path))


def _run_ns(tmp_path, body: dict) -> int:
    return max(r.finished_cycles for r in _sim(tmp_path, body).run())


def _pair_ns(node: dict, src: int, dst: int, size: int, gbit_s: float | None = None) -> float:
    """latency + size / rate on the route: NVSwitch in a node, the rail across (PXN's NVSwitch
    too when the rails differ), a rail being one NIC's share of the node at NCCL's efficiency."""
    per = node["gpus"]
    if src // per == dst // per:
        return 2 * node["nvlink_latency_ns"] + size / (node["nvlink_gib_s"] * GIB / 1e9)
    rail = (gbit_s or node["inter_node_gbps"]) / 8 / per * node["inter_node_efficiency"]  # bytes/ns
    pxn = 2 * node["nvlink_latency_ns"] if src % per != dst % per else 0.0
    return 2 * node["inter_node_latency_ns"] + pxn + size / rail


def _microbench(kind: str, size: int, cluster: dict, **pair) -> dict:
    return {"workload": {"generate": "microbench", "collective": kind, "size": size, **pair}, "cluster": cluster}


@pytest.mark.parametrize("nodes,every", [(1, True), (2, True), (4, False), (8, False), (32, False)])
def test_a100_40gb_pairs_cost_their_route(tmp_path, nodes, every):
    """Every ordered pair on one and two nodes, and on 4, 8 and 32 a sample of each kind (same
    node, same rail, other rail, nodes 20 apart under other leaves of a 1:1 spine): 1 GiB
    within 1% and 1 KiB within a nanosecond. By hand: NVLink 215.822 GiB/s = 231.7 GB/s and
    2 x 6,464.47 ns; a rail 1,600 / 64 x 0.94 = 23.5 GB/s and 2 x 5,000 ns."""
    node = _node(A100_40)
    gpus = 8 * nodes
    net = _sim(tmp_path, _microbench("send_recv", GIB, {"preset": A100_40, "gpus": gpus}, src=0, dst=1)).network
    pairs = [(s, d) for s in range(gpus) for d in range(gpus) if s != d] if every else \
        [(0, 1), (7, 0), (0, 8), (4, 8), (3, 14), (gpus - 1, 0), (gpus - 2, 5), (9, gpus - 7)]
    if nodes == 32:
        pairs += [(0, 8 * 25), (8 * 19 + 3, 8 * 20 + 3), (8 * 31 + 6, 1)]
    for src, dst in pairs:
        assert net.delay_ns(src, dst, GIB) == pytest.approx(_pair_ns(node, src, dst, GIB), rel=0.01)
        assert net.delay_ns(src, dst, 1024) == pytest.approx(_pair_ns(node, src, dst, 1024), abs=1)
    assert _pair_ns(node, 4, 8, GIB) == pytest.approx(45_714_070, abs=1)  # the by-hand rule itself
    if nodes in (2, 8):  # and the run itself, a send and its receive
        for src, dst in pairs[:2] + pairs[-2:]:
            took = _run_ns(tmp_path, _microbench("send_recv", 2**26, {"preset": A100_40, "gpus": gpus},
                                                 src=src, dst=dst))
            assert took == pytest.approx(_pair_ns(node, src, dst, 2**26), rel=0.01)


def _own_preset(tmp_path) -> str:
    """A copy of dgx-a100-40gb for a machine of its own: 4 GPUs a node, NVLink 100 GiB/s and
    3,000 ns, 800 Gb/s of NICs a node at 0.9, 4,000 ns a switch link."""
    with open(os.path.join(PRESETS, f"{A100_40}.yaml")) as f:
        text = f.read()
    for old, new in (("gpus: 8", "gpus: 4"), ("nvlink_gib_s: 215.822", "nvlink_gib_s: 100"),
                     ("nvlink_latency_ns: 6464.47", "nvlink_latency_ns: 3000"),
                     ("inter_node_gbps: 1600", "inter_node_gbps: 800"),
                     ("inter_node_efficiency: 0.94", "inter_node_efficiency: 0.9"),
                     ("inter_node_latency_ns: 5000", "inter_node_latency_ns: 4000")):
        assert text.count(old) == 1
        text = text.replace(old, new)
    (tmp_path / "mine.yaml").write_text(text)
    return "./mine.yaml"


def test_a_users_preset_file_prices_pairs_and_groups_from_its_own_numbers(tmp_path):
    """16 GPUs of the copy: 4 nodes of 4. Pairs: in a node 2 x 3,000 + S / 107.4 GB/s; across,
    a rail of 800 / 8 / 4 x 0.9 = 22.5 GB/s (PXN: + 2 x 3,000 ns between rails). The forced
    all-reduces of 1 GiB (NCCL's Simple constants; the copy keeps the A100 fits: the ring's
    latency x 1.6087, 19.93 us a call, the ring's share 1.0116):
    ring: 1.4 x (8.4 + (30 - 6) x 3.4 + 6 x 14) us, bandwidth 30/16 of the buffer over
    min(107.4, 4 NICs x 22.5 = 90) x 1.0116 GB/s; tree: 8.4 + 2 (3 x 4.0 + 2 x 14) us, NCCL's
    own (the fill is the ring's: nccl_latency_scale_algo), 0.46 x min(107.4, 4 x 22.5 once:
    past two nodes a node is interior) GB/s."""
    node = {"gpus": 4, "nvlink_gib_s": 100, "nvlink_latency_ns": 3000, "inter_node_gbps": 800,
            "inter_node_efficiency": 0.9, "inter_node_latency_ns": 4000}
    cluster = {"preset": _own_preset(tmp_path), "gpus": 16}
    net = _sim(tmp_path, _microbench("send_recv", GIB, cluster, src=0, dst=1)).network
    for src in range(16):
        for dst in range(16):
            if src != dst:
                assert net.delay_ns(src, dst, GIB) == pytest.approx(_pair_ns(node, src, dst, GIB), rel=0.01)
    assert _run_ns(tmp_path, _microbench("send_recv", GIB, cluster, src=1, dst=4)) == pytest.approx(
        14_000 + GIB / 22.5, rel=0.01)
    ring_us = 19.93 + 1.4 * (8.4 + 24 * 3.4 + 6 * 14) * 1.6087 + GIB * 30 / 16 / (90 * 1.0116 * 1e3)
    tree_us = 19.93 + (8.4 + 2 * (3 * 4.0 + 2 * 14)) + GIB / (0.46 * 90 * 1e3)
    for algo, by_hand_us in (("ring", ring_us), ("tree", tree_us)):
        took = _run_ns(tmp_path, _microbench("all_reduce", GIB, {**cluster, "nccl_algo": algo}))
        assert took == pytest.approx(1000 * by_hand_us, rel=0.005), algo


@pytest.mark.parametrize("gbit_s", [800, 3200])
def test_inter_node_override_sets_the_rails(tmp_path, gbit_s):
    """cluster.inter_node_gbit_s on dgx-a100-40gb, 2 nodes: a rail is gbit_s / 64 x 0.94 GB/s
    (11.75 and 47), for a pair across nodes and for the forced ring's NICs (8 of them: 94 and
    376 GB/s, the ring's bandwidth min(NVLink 231.7, that) x 1.0116)."""
    node = _node(A100_40)
    cluster = {"preset": A100_40, "gpus": 16, "inter_node_gbit_s": gbit_s}
    for src, dst in ((0, 8), (4, 9)):
        took = _run_ns(tmp_path, _microbench("send_recv", GIB, cluster, src=src, dst=dst))
        assert took == pytest.approx(_pair_ns(node, src, dst, GIB, gbit_s), rel=0.01)
    nvlink = node["nvlink_gib_s"] * GIB / 1e9
    ring_gb_s = min(nvlink, 8 * gbit_s / 64 * 0.94) * 1.0116
    by_hand_us = 19.93 + 1.4 * (8.4 + (30 - 2) * 3.4 + 2 * 14) * 1.6087 + GIB * 30 / 16 / (ring_gb_s * 1e3)
    took = _run_ns(tmp_path, _microbench("all_reduce", GIB, {**cluster, "nccl_algo": "ring"}))
    assert took == pytest.approx(1000 * by_hand_us, rel=0.005)


@pytest.mark.parametrize("algo", ["ring", "tree"])
@pytest.mark.parametrize("leaf,ratio", [(1, 2), (2, 2), (1, 4), (4, 2)])
def test_groups_across_leaves_slow_by_the_spines_ratio(tmp_path, algo, leaf, ratio):
    """1 GiB all-reduce on four H100 nodes (32 GPUs), nodes_per_leaf 1 or 2 (several leaves:
    NCCL's ring and tree, built over the nodes in rank order, cross the spine) or 4 (one leaf:
    no spine). By hand, NCCL's Simple constants (the preset's fill is NVLS's) plus its 3.675 us a call,
    and the NICs at 47 GB/s / ratio across leaves (docs/megatron.md: 'runs at that share'):
    ring 1.4 x (8.4 + 56 x 3.4 + 6 x 14) us + 62/32 x 1 GiB / min(397.3, 8 NICs);
    tree 8.4 + 2 (7 x 4.0 + 2 x 14) us + 1 GiB / (0.46 x min(397.3, 8 NICs once)).
    Every such all-reduce had run at the NICs' full rate and been held only at its NIC floor
    (1.5 x 1 GiB / 8 NICs): 8.57 ms at 2:1 for both, 1.26x and 1.30x the 1:1 times, not 2x."""
    node = _node("dgx-h100")
    nics = 8 * node["inter_node_gbps"] / 64 * node["inter_node_efficiency"] / (ratio if leaf < 4 else 1)
    nvlink = node["nvlink_gib_s"] * GIB / 1e9
    if algo == "ring":
        by_hand_us = 1.4 * (8.4 + 56 * 3.4 + 6 * 14) + GIB * 62 / 32 / (min(nvlink, nics) * 1e3)
    else:
        by_hand_us = (8.4 + 2 * (7 * 4.0 + 2 * 14)) + GIB / (0.46 * min(nvlink, nics) * 1e3)
    took = _run_ns(tmp_path, _microbench("all_reduce", GIB, {"preset": "dgx-h100", "gpus": 32, "nccl_algo": algo,
                                                            "nodes_per_leaf": leaf, "oversubscription": ratio}))
    assert took == pytest.approx(1000 * (3.675 + by_hand_us), rel=0.005)


def test_a_group_uneven_over_its_nodes_runs_at_its_thinnest_nodes_nics(tmp_path):
    """TP 3 on three A100 nodes (24 GPUs, --DDP-impl local): each data-parallel group, ranks
    3 apart ({0, 3, ..., 21}), has 3, 3 and 2 members on its nodes, so the third node's
    share of any ring or tree leaves through 2 NICs. By hand the ring moves 2 (8 - 1) / 8 of
    the gradients (at least 8 layers' 12 h^2 / 3 in fp16) through them: 1.75 x 604 MB /
    (2 x 23.5 GB/s) = 22.5 ms, and NCCL's tree at best half that. The group had been
    priced with 8 NICs, one for each rail any member used (the step's comm.dp 6.9 ms, now 26.8)."""
    import subprocess
    import sys

    from tests.test_cluster_placement import ROOT

    h = 3072
    grads = 2 * 8 * 12 * h * h / 3
    rail = 1600 / 64 * 0.94  # GB/s = bytes/ns
    floor = 2 * 7 / 8 * grads / (2 * rail) / 2  # the tree's half: NCCL may choose it
    assert floor / 1e6 == pytest.approx(11.25, rel=0.01)
    args = (f"--num-layers 8 --hidden-size {h} --num-attention-heads 24 --seq-length 2048 "
            "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 16 --fp16 --DDP-impl local "
            "--vocab-size 51201 --tensor-model-parallel-size 3")
    path = tmp_path / "u.yaml"
    path.write_text(json.dumps({"workload": {"generate": "megatron", "args": args},
                                "cluster": {"preset": A100_40, "gpus": 24}}))
    out = tmp_path / "u.json"
    subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(path), "--json-out", str(out), "--quiet"],
                   check=True, capture_output=True, cwd=ROOT)
    assert json.loads(out.read_text())["npus"]["0"]["breakdown_ns"]["comm.dp"] >= floor


def test_experts_of_tp_1_under_tp_4_exchange_tokens_over_nvlink(tmp_path):
    """TP 4, EP 8 with --expert-tensor-parallel-size 1 on eight H100 nodes: Megatron's ep
    groups are 8 consecutive ranks, one node (tests/test_megatron_rank_groups.py). Each GPU's
    all-to-all buffer is its s / tp = 1,024 tokens x top-2 x h 4,096 in bf16 = 16 MiB, an
    eighth to each peer, sent one peer after another over the NVSwitch: 7 x (2 x 2,752 ns +
    2 MiB / 397.3 GB/s) = 75,480 ns. The groups had been {0, 4, ..., 28}, on four nodes, their
    peers on other nodes reached at the NICs' 47 GB/s."""
    import csv
    import subprocess
    import sys

    from tests.test_cluster_placement import ROOT

    node = _node("dgx-h100")
    piece = 1024 * 2 * 4096 * 2 // 8
    by_hand = 7 * (2 * node["nvlink_latency_ns"] + piece / (node["nvlink_gib_s"] * GIB / 1e9))
    assert by_hand == pytest.approx(75_480, abs=1)
    args = ("--num-layers 2 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --max-position-embeddings "
            "4096 --micro-batch-size 1 --global-batch-size 16 --bf16 --vocab-size 51200 --tensor-model-parallel-size 4 "
            "--num-experts 8 --expert-model-parallel-size 8 --expert-tensor-parallel-size 1 --moe-router-topk 2 "
            "--moe-token-dispatcher-type alltoall --disable-bias-linear --sequence-parallel")
    path = tmp_path / "e.yaml"
    path.write_text(json.dumps({"workload": {"generate": "megatron", "args": args},
                                "cluster": {"preset": "dgx-h100", "gpus": 64}}))
    subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(path), "--csv-out", str(tmp_path / "csv"),
                    "--quiet"], check=True, capture_output=True, cwd=ROOT)
    with open(tmp_path / "csv" / "nodes.csv") as f:
        times = [int(r["duration_ns"]) for r in csv.DictReader(f) if r["name"].endswith("alltoall")]
    assert times and all(t == pytest.approx(by_hand, rel=0.01) for t in times)


def test_the_nic_floor_of_a_group_uneven_over_its_nodes_is_its_thinnest_nodes():
    """{0, 3, ..., 21} on three A100 nodes: 3, 3 and 2 members. All-reduce of 1 GB: every
    node sends 2 (3 - 1) / 3 of it, the third through 2 NICs of 23.5 GB/s: 28.37 ms.
    All-gather of 1 GB pieces: the third node takes in the other 6 pieces through its 2
    NICs (3 GB each), the others 5 through 3 (1.67 GB each): 127.7 ms. Such a group had no
    floor at all (0: the bound check said nothing of it)."""
    from simpy_astra.config.cluster import load_cluster
    from simpy_astra.engine.bandwidth_floor import nic_floor_ns

    rails = load_cluster({"preset": A100_40, "gpus": 24}, "c").rails()
    group = tuple(range(0, 24, 3))
    rail = 1600 / 64 * 0.94  # bytes/ns
    assert nic_floor_ns(rails, "all_reduce", 10**9, group) == pytest.approx(4 / 3 * 1e9 / (2 * rail), rel=1e-6)
    assert nic_floor_ns(rails, "all_gather", 10**9, group) == pytest.approx(6e9 / (2 * rail), rel=1e-6)


@pytest.mark.parametrize("src,dst", [(1, 2), (0, 8), (4, 8), (3, 14)])
@pytest.mark.parametrize("backend", ["packet", "congestion_aware"])
def test_message_backends_on_a100_40gb_pay_what_the_docs_say(tmp_path, backend, src, dst):
    """64 MiB alone on two dgx-a100-40gb nodes. packet pipelines its packets: the route's
    latencies + size / its slowest link, as the analytical model (within 1%);
    congestion_aware stores and forwards whole messages at each switch (ASTRA-sim's): each
    link's latency and the bytes once per link, NVLink's twice in a node (2 x 289.6 us),
    NVLink's twice and the rail's twice across rails (docs/megatron.md)."""
    node = _node(A100_40)
    size = 2**26
    nvlink_ns = size / (node["nvlink_gib_s"] * GIB / 1e9)
    rail_ns = size / (node["inter_node_gbps"] / 64 * node["inter_node_efficiency"])
    if backend == "packet":
        by_hand = _pair_ns(node, src, dst, size)
    else:
        nvlink_hops = 2 if src // 8 == dst // 8 or src % 8 != dst % 8 else 0
        rail_hops = 0 if src // 8 == dst // 8 else 2
        by_hand = (nvlink_hops * (nvlink_ns + node["nvlink_latency_ns"])
                   + rail_hops * (rail_ns + node["inter_node_latency_ns"]))
    took = _run_ns(tmp_path, {"backend": backend, **_microbench("send_recv", size, {"preset": A100_40, "gpus": 16},
                                                                src=src, dst=dst)})
    assert took == pytest.approx(by_hand, rel=0.01)


@pytest.mark.parametrize("nodes,algo,by_hand_us", [
    # one node: 14 NVLink steps of Simple, (8.4 + 14 x 3.4) us x 1.6087; NVLink's 231.7 GB/s
    # x the ring share 1.0116
    (1, "ring", 19.93 + (8.4 + 14 * 3.4) * 1.6087 + GIB * 14 / 8 / (231.7371 * 1.0116e3)),
    # ring over 8 nodes (64 GPUs): 2 (n - 1) = 126 steps, 14 over the network; NCCL's Simple
    # latency 1.4 x (8.4 + 112 x 3.4 + 14 x 14) us x the preset's 1.6087; its bandwidth
    # min(NVLink 231.7, 8 NICs x 23.5 = 188) x its ring share 1.0116; + 19.93 us a call
    (8, "ring", 19.93 + 1.4 * (8.4 + 112 * 3.4 + 14 * 14) * 1.6087 + GIB * 126 / 64 / (188 * 1.0116e3)),
    # 32 nodes (256 GPUs, two leaves of 20 at 1:1: no slower hop): 510 steps, 62 over the
    # network, where NCCL runs the ring with LL128: its estimate 14 + 448 x 1.9 + 62 x 4.0 =
    # 1,113 us + 1 GiB x 510/256 / (0.92 x 188) = 13,481 us beats Simple's 1.4 x (8.4 + 448 x
    # 3.4 + 62 x 14) = 3,359 us + 11,378 = 14,738; LL128's latency is NCCL's own (the fitted
    # scale is Simple's)
    (32, "ring", 19.93 + 14 + 448 * 1.9 + 62 * 4.0 + GIB * 510 / 256 / (0.92 * 188 * 1.0116e3)),
    # tree: 8.4 + 2 (7 x 4.0 + log2(m) x 14) us, NCCL's own (the preset's fill is the ring's:
    # nccl_latency_scale_algo), 0.46 x min(231.7, 188: past two nodes once)
    (8, "tree", 19.93 + (8.4 + 2 * (7 * 4.0 + 3 * 14)) + GIB / (0.46 * 188e3)),
    (32, "tree", 19.93 + (8.4 + 2 * (7 * 4.0 + 5 * 14)) + GIB / (0.46 * 188e3)),
])
def test_a100_40gb_forced_all_reduce_on_8_and_32_nodes(tmp_path, nodes, algo, by_hand_us):
    """1 GiB over every GPU, the algorithm forced."""
    took = _run_ns(tmp_path, _microbench("all_reduce", GIB, {"preset": A100_40, "gpus": 8 * nodes, "nccl_algo": algo}))
    assert took == pytest.approx(1000 * by_hand_us, rel=0.005)


def test_tp_16_across_two_h100_nodes_runs_nccls_nvls_tree(tmp_path):
    """TP 16 on two H100 nodes: each layer's all-reduce of s x b x h bf16 = 32 MiB spans both
    nodes, all 8 NICs of each. NCCL's NVLS tree by hand (tuning.cc 2.29.7): 8 channels of
    min(42 x 0.85 x 7/8 x 2, 2 x 45, 57.7) = 57.7 GB/s (the NVLS tree's cap on two nodes),
    x 16/30, x the preset's 1.0216 = 251.5 GB/s; latency
    25 + 2 x 20.9 us, plus Simple's fill (x 3.1671, at most half the transfer) and 3.675 us a
    call: 270.6 us, over the NICs' floor of 32 MiB / (8 x 47 GB/s) = 89.2 us."""
    import csv
    import subprocess
    import sys

    from tests.test_cluster_placement import ROOT

    node = _node("dgx-h100")
    size = 4096 * 4096 * 2
    transfer = size / (8 * 57.7 * 16 / 30 * node["nccl_nvls_efficiency"] * 1e3)
    latency = 25 + 2 * 20.9
    by_hand_us = 3.675 + latency + min((3.1671 - 1) * latency, transfer / 2) + transfer
    floor_us = size / (8 * 47e3)
    args = ("--num-layers 2 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --max-position-embeddings "
            "4096 --micro-batch-size 1 --global-batch-size 8 --bf16 --vocab-size 51200 --tensor-model-parallel-size 16")
    path = tmp_path / "t.yaml"
    path.write_text(json.dumps({"workload": {"generate": "megatron", "args": args},
                                "cluster": {"preset": "dgx-h100", "gpus": 16}}))
    subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(path), "--csv-out", str(tmp_path / "csv"),
                    "--quiet"], check=True, capture_output=True, cwd=ROOT)
    with open(tmp_path / "csv" / "nodes.csv") as f:
        times = [int(r["duration_ns"]) for r in csv.DictReader(f) if r["name"].endswith("allreduce")]
    layers = max(set(times), key=times.count)  # the activations' (the rest are small buffers)
    assert layers == pytest.approx(1000 * by_hand_us, rel=0.001) and layers >= 1000 * floor_us
