"""Audit of issue 47 on the presets: numbers derived here by hand from the preset files and
NCCL's published constants, never from the code's formulas."""

from __future__ import annotations

import json

import pytest

from simpy_astra.report.csv_tables import read_nodes
from simpy_astra.simulation import Simulation
from tests.test_cluster_placement import GIB, ROOT, _node  # the presets' figures, read once


def _run_ns(tmp_path, body: dict) -> int:
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(body))
    sim = Simulation.from_scenario(str(path))
    return max(r.finished_cycles for r in sim.run())


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")


def _all_reduce_ns(tmp_path, gpus: int, size: int, algo: str | None) -> int:
    cluster = {"preset": "dgx-h100", "gpus": gpus, **({"nccl_algo": algo} if algo else {})}
    return _run_ns(tmp_path, {"workload": {"generate": "microbench", "collective": "all_reduce", "size": size},
                              "cluster": cluster})


def test_nvls_tree_past_two_nodes_runs_its_nics_at_their_rate(tmp_path):
    """1 GiB all-reduce forced to NVLS on four H100 nodes (32 GPUs). NCCL's estimate of its NVLS
    tree (tuning.cc, search.cc 2.29.7): 8 channels (a GPU each), bwIntra 42 GB/s (9 x 42 within
    NVLink's 397.3, 42 within a 47 GB/s rail), bwInter 45 (the fastest of NCCL's speeds within a
    rail); past two nodes a channel moves min(42 x 0.85 x 7/8 x 2, 45, the cap 45.5) = 45: its
    NICs, interior to a binary tree on every rail, bound it, not the switch. 8 x 45 x 32/62 x the
    preset's fitted 1.0216 = 189.8 GB/s: 5,657 us, about the NICs' own 2 S / (8 x 47 GB/s) =
    5,711 us (NCCL's speeds round a rail's 47 down to 45). (The model's older NVLS charged the fitted share on the NICs as well: 8.02
    ms.) Latency: NCCL's NVLS tree, 25 us + 2 log2(4) x 20.9 us, x the preset's
    nccl_latency_scale, plus its nccl_launch_us."""
    node = _node("dgx-h100")
    nic_gb_s = node["inter_node_gbps"] / 8 / 8 * node["inter_node_efficiency"]  # 47 GB/s
    assert 9 * 42 <= node["nvlink_gib_s"] * GIB / 1e9 < 9 * 45 and 45 <= nic_gb_s < 48
    transfer_us = GIB / (8 * min(42 * 0.85 * 7 / 8 * 2, 45, 45.5) * 32 / 62 * node["nccl_nvls_efficiency"] * 1e3)
    assert transfer_us == pytest.approx(5656.6, abs=0.1)
    latency_us = node["nccl_latency_scale"] * (25 + 2 * 2 * 20.9)
    by_hand_ns = 1000 * (node["nccl_launch_us"] + latency_us + transfer_us)
    took = _all_reduce_ns(tmp_path, 32, GIB, "nvls")
    assert took == pytest.approx(by_hand_ns, rel=0.001)
    # NCCL's choice there is NVLS (its estimate: 108.6 + 1 GiB / 185.8 GB/s = 5,887 us against the
    # ring's 396 + 1 GiB / (376 x 32/62 GB/s) = 5,930 us), though the ring, its latency NCCL's
    # own (the preset's fill is NVLS's alone), then runs 1.2% faster on the machine
    ring, tree = (_all_reduce_ns(tmp_path, 32, GIB, algo) for algo in ("ring", "tree"))
    assert _all_reduce_ns(tmp_path, 32, GIB, None) == took < tree
    assert ring == pytest.approx(1000 * (node["nccl_launch_us"] + 1.4 * (8.4 + 56 * 3.4 + 6 * 14))
                                 + GIB / (376 * 32 / 62), rel=0.001)


MAPPING = ("--num-layers 8 --hidden-size 4096 --num-attention-heads 32 --seq-length 2048 "
           "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 16 --fp16 --DDP-impl local "
           "--vocab-size 51200 --tensor-model-parallel-size 4 --pipeline-model-parallel-size 2")


def _step(tmp_path, args: str) -> tuple[dict, dict]:
    """(rank 0's breakdown, rank 0's send durations by name) of a Megatron step on two A100 nodes."""
    import csv
    import subprocess
    import sys

    path = tmp_path / "m.yaml"
    path.write_text(json.dumps({"workload": {"generate": "megatron", "args": args},
                                "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}}))
    out, csv_dir = tmp_path / "out.json", tmp_path / "csv"
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(path), "--json-out", str(out),
                           "--csv-out", str(csv_dir), "--quiet"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    with open(csv_dir / "nodes.csv") as f:
        sends = {r["name"]: int(r["duration_ns"]) for r in csv.DictReader(f)
                 if r["npu"] == "0" and r["type"].startswith("COMM_SEND")}
    return json.loads(out.read_text())["npus"]["0"]["breakdown_ns"], sends


def test_tp_pp_dp_mapping_puts_the_pipeline_inside_the_node(tmp_path):
    """--use-tp-pp-dp-mapping is Megatron's order 'tp-cp-ep-pp-dp' (training/initialize.py):
    with TP 4, PP 2 on 16 GPUs rank = t + 4 (p + 2 d), so stage 0's GPU 0 sends its
    activations to GPU 4 on its own node, and its data-parallel group is {0, 8}, one GPU on
    each node. By hand: a send of s b h / tp fp16 bytes (4 MiB, scattered over tp) costs
    2 x NVLink's latency + 4 MiB / NVLink's rate = 31,028 ns (the default order sends it to GPU
    8 over the rail: 188,481); the all-reduce of stage 0's gradients (at least its 4 layers'
    12 h^2 / 4 parameters, fp16) between the two nodes moves them once each way through GPU
    0's one NIC: at least 402.7 MB / 23.5 GB/s = 17.1 ms. The flag had been accepted as having
    no effect on the step: sends at 188,481 ns, comm.dp 6.8 ms (an in-node group)."""
    node = _node("dgx-a100-80gb")
    h, tp = 4096, 4
    act_bytes = 2048 * 1 * h * 2 // tp
    nvlink_bytes_per_ns = node["nvlink_gib_s"] * GIB / 1e9
    send_ns = 2 * node["nvlink_latency_ns"] + act_bytes / nvlink_bytes_per_ns
    assert send_ns == pytest.approx(31028, abs=1)
    grads = 2 * 4 * 12 * h * h / tp
    rail_bytes_per_ns = node["inter_node_gbps"] / 8 / 8 * node["inter_node_efficiency"]
    breakdown, sends = _step(tmp_path, MAPPING + " --use-tp-pp-dp-mapping")
    assert sends and all(t == pytest.approx(send_ns, abs=2) for t in sends.values())
    assert breakdown["comm.dp"] >= grads / rail_bytes_per_ns
    # the default order: stages on consecutive groups of tp x dp = 8 ranks, the other node
    breakdown, sends = _step(tmp_path, MAPPING)
    assert all(t == pytest.approx(2 * node["inter_node_latency_ns"] + act_bytes / rail_bytes_per_ns, abs=2)
               for t in sends.values())


def test_tp_pp_dp_mapping_refused_where_megatron_refuses_it(tmp_path):
    """Megatron (parallel_state.py) asserts that without pp last the experts' data-parallel size
    (world / (etp x ep x pp)) equals the layers' (world / (tp x cp x pp)): cp 2 with a pipeline
    is refused there, so here too, with one line naming the flag."""
    from simpy_astra.errors import InputError
    from simpy_astra.workloads.megatron.arguments import parse

    with pytest.raises(InputError, match=r"--use-tp-pp-dp-mapping with --pipeline-model-parallel-size 2: Megatron"):
        parse(MAPPING.replace("--DDP-impl local ", "") + " --context-parallel-size 2 --use-tp-pp-dp-mapping", 16)


@pytest.mark.parametrize("size", [2**20, 2**21, 2**24])
@pytest.mark.parametrize("src,dst", [(4, 8), (0, 8), (3, 14)])
def test_packet_backend_charges_a_cross_rail_pair_its_rail(tmp_path, size, src, dst):
    """The packet backend on a dgx-h100 preset (16 GPUs): GPU 4 -> 8 goes over NVLink to GPU 0,
    then GPU 0's rail (dimension order: the same route as PXN). Alone, its last byte arrives
    at the route's latencies + size / the rail's rate (+ one 4 KiB packet on each faster link,
    well under 1%). A message whose last byte left the source before its head reached the rail
    (1 and 2 MiB: NVLink sends them in 2.6 and 5.3 us, the head needs 5.5 us to reach GPU 0's
    NIC) had been delivered at NVLink's pace: 30,269 ns for 1 MiB against 49,830 by hand."""
    node = _node("dgx-h100")
    per = node["gpus"]
    rail = node["inter_node_gbps"] / 8 / per * node["inter_node_efficiency"]  # bytes/ns
    latency = 2 * node["inter_node_latency_ns"] + (2 * node["nvlink_latency_ns"] if src % per != dst % per else 0)
    path = tmp_path / "p.yaml"
    path.write_text(json.dumps({"backend": "packet", "cluster": {"preset": "dgx-h100", "gpus": 16},
                                "workload": {"generate": "microbench", "collective": "send_recv", "size": size,
                                             "src": src, "dst": dst}}))
    took = max(r.finished_cycles for r in Simulation.from_scenario(str(path)).run())
    assert took == pytest.approx(latency + size / rail, rel=0.01)


@pytest.mark.parametrize("backend", ["packet", "congestion_aware"])
def test_an_oversubscribed_spine_is_refused_where_the_backend_has_none(tmp_path, backend):
    """The message backends play a preset on its dimensions' links, which have no spine: GPU 0 -> 8
    under two leaves of a 2:1 spine took the full rail's time, 1,455,478 ns for 64 MiB on the
    packet backend against 2 x 11,008 + 64 MiB / (47 / 2 GB/s) = 2,877,713 by hand. Refused
    with one line naming the field, rather than a wrong success."""
    from simpy_astra.config.scenario import load_scenario
    from simpy_astra.errors import InputError

    path = tmp_path / "o.yaml"
    path.write_text(json.dumps({"cluster": {"preset": "dgx-h100", "gpus": 32, "nodes_per_leaf": 1,
                                            "oversubscription": 2},
                                "workload": {"generate": "microbench", "collective": "send_recv", "size": 2**26,
                                             "src": 0, "dst": 8}}))
    with pytest.raises(InputError, match=rf"o.yaml: cluster.oversubscription: .* the {backend} backend plays"):
        load_scenario(str(path), backend=backend)
    assert load_scenario(str(path)).network.rails.oversubscription == 2


def test_gpus_that_do_not_fill_nodes_are_refused_with_the_fix():
    """12 GPUs of 8-GPU nodes: one node and a half; the line names the counts that fill nodes."""
    from simpy_astra.config.cluster import load_cluster
    from simpy_astra.errors import InputError

    with pytest.raises(InputError, match=r"^s: cluster.gpus: 12 GPUs do not fill whole nodes of 8; use 8 or 16"):
        load_cluster({"preset": "dgx-a100-80gb", "gpus": 12}, "s: cluster")


@pytest.mark.parametrize("tp,per_node", [(2, 4), (1, 8)])
@pytest.mark.parametrize("gbit_s", [1600, 400])
def test_wider_data_parallel_groups_stay_at_or_above_their_nic_floor(tmp_path, tp, per_node, gbit_s):
    """TP 2 and TP 1 on two A100 nodes: data-parallel groups of 8 and 16, 4 and 8 members on
    each node. An all-reduce over two nodes moves each node's whole buffer out once through its
    members' NICs: at least 2 bytes x 12 l h^2 / tp (the layers alone) / (per_node x rail),
    17.1 ms at 1,600 Gb/s a node and 68.5 ms at 400."""
    node = _node("dgx-a100-80gb")
    grads = 2 * 12 * 8 * 4096 * 4096 / tp
    rail_bytes_per_ns = gbit_s / 8 / 8 * node["inter_node_efficiency"]
    floor = grads / (per_node * rail_bytes_per_ns)
    assert floor / 1e6 == pytest.approx(17.1 * 1600 / gbit_s, rel=0.01)
    path = tmp_path / "w.yaml"
    path.write_text(json.dumps({"workload": {"generate": "megatron",
                                             "args": MAPPING.replace("--tensor-model-parallel-size 4 "
                                                                     "--pipeline-model-parallel-size 2",
                                                                     f"--tensor-model-parallel-size {tp}")},
                                "cluster": {"preset": "dgx-a100-80gb", "gpus": 16, "inter_node_gbit_s": gbit_s}}))
    import subprocess
    import sys

    out = tmp_path / "w.json"
    subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(path), "--json-out", str(out), "--quiet"],
                   check=True, capture_output=True, cwd=ROOT)
    assert json.loads(out.read_text())["npus"]["0"]["breakdown_ns"]["comm.dp"] >= floor


def _nodes(tmp_path, args: str, cluster: dict) -> list[dict]:
    """Every node of every GPU of a Megatron step's run (nodes.csv's rows joined with npus.csv:
    a folded run lists each orbit's once, under the GPU simulated for it)."""
    import subprocess
    import sys

    path = tmp_path / "n.yaml"
    path.write_text(json.dumps({"workload": {"generate": "megatron", "args": args}, "cluster": cluster}))
    subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(path), "--csv-out", str(tmp_path / "csv"),
                    "--quiet"], check=True, capture_output=True, cwd=ROOT)
    return read_nodes(tmp_path / "csv")


def test_pipeline_neighbours_on_other_nodes_and_rails_pay_the_route(tmp_path):
    """TP 4 x PP 4 on two A100 nodes: stage 1 (GPUs 4-7, node 0) sends to stage 2 (GPUs 8-11,
    node 1), GPU 4 -> GPU 8: other node, other rail. By hand (PXN): 2 x 5,000 + 2 x 6,464.47
    + 4 MiB (s b h / tp in fp16) / 23.5 GB/s = 201,410 ns; stage 0 -> 1 (GPU 3 -> 7, both on
    node 0): 2 x 6,464.47 + 4 MiB / 231.74 GB/s = 31,028 ns."""
    node = _node("dgx-a100-80gb")
    act = 2048 * 4096 * 2 // 4
    rail = node["inter_node_gbps"] / 8 / 8 * node["inter_node_efficiency"]
    nvlink = node["nvlink_gib_s"] * GIB / 1e9
    cross = 2 * node["inter_node_latency_ns"] + 2 * node["nvlink_latency_ns"] + act / rail
    inside = 2 * node["nvlink_latency_ns"] + act / nvlink
    assert (round(cross), round(inside)) == (201410, 31028)
    rows = _nodes(tmp_path, MAPPING.replace("--pipeline-model-parallel-size 2", "--pipeline-model-parallel-size 4"),
                  {"preset": "dgx-a100-80gb", "gpus": 16})
    sends = {(r["npu"], r["name"].split(".")[-1]): int(r["duration_ns"]) for r in rows
             if r["type"].startswith("COMM_SEND")}
    assert sends[("4", "send_activation")] == pytest.approx(cross, abs=2)
    assert sends[("3", "send_activation")] == pytest.approx(inside, abs=2)


@pytest.mark.parametrize("gbit_s", [3200, 800])
def test_expert_parallel_all_to_all_across_nodes_at_or_above_its_nic_floor(tmp_path, gbit_s):
    """EP 16 over two H100 nodes, alltoall dispatcher, top-2 of 4,096 tokens of h 4,096 in bf16:
    each GPU's buffer B = 4,096 x 2 x 4,096 x 2 bytes, half of it for the other node's 8 GPUs,
    through the GPU's own rail: at least (B / 2) / (gbit_s / 64 x 0.94 GB/s) per all-to-all,
    714 us at 3,200 Gb/s a node and 2.86 ms at 800."""
    node = _node("dgx-h100")
    buffer = 4096 * 2 * 4096 * 2
    floor = buffer / 2 / (gbit_s / 8 / 8 * node["inter_node_efficiency"])
    args = ("--num-layers 2 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 "
            "--max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 16 --bf16 --vocab-size 51200 "
            "--num-experts 16 --expert-model-parallel-size 16 --moe-router-topk 2 --disable-bias-linear "
            "--moe-token-dispatcher-type alltoall")
    rows = _nodes(tmp_path, args, {"preset": "dgx-h100", "gpus": 16, "inter_node_gbit_s": gbit_s})
    times = [int(r["duration_ns"]) for r in rows if r["name"].endswith("alltoall")]
    assert times and min(times) >= floor


@pytest.mark.parametrize("preset,nodes,algo,by_hand_us", [
    # H100, 3 nodes (24 GPUs), ring: 2 (n - 1) / n of 1 GiB over min(NVLink 397.3, 8 NICs x 47) =
    # 376 GB/s -> 5,473.4 us; NCCL's Simple latency 1.4 x (8.4 + (46 - 4) x 3.4 + 4 x 14) = 290.1 us
    # as NCCL's own (the preset's fill is NVLS's: nccl_latency_scale_algo); + 3.675 us launch
    ("dgx-h100", 3, "ring", 3.675 + 290.08 + 2**30 * 46 / 24 / 376e3),
    # H100, 3 nodes, tree: 0.92 / 2 x min(NVLink, 8 NICs once: past two nodes a node is interior)
    # = 172.96 GB/s; latency 8.4 + 2 (7 x 4.0 + log2(3)=1 x 14) = 92.4 us, NCCL's own
    ("dgx-h100", 3, "tree", 3.675 + 92.4 + 2**30 / (0.46 * 376e3)),
    # A100, 5 nodes (40 GPUs), ring: 8 NICs x 23.5 = 188 GB/s under NVLink's 231.7, x the preset's
    # ring share 1.0116; latency 1.4 x (8.4 + (78 - 8) x 3.4 + 8 x 14) x 1.6087; + 19.93 us launch
    ("dgx-a100-80gb", 5, "ring", 19.93 + 1.4 * 358.4 * 1.6087 + 2**30 * 78 / 40 / (1.0116 * 188e3)),
])
def test_forced_ring_and_tree_on_odd_node_counts(tmp_path, preset, nodes, algo, by_hand_us):
    """1 GiB all-reduce on 3 and 5 nodes, the algorithm forced; NCCL's tuning.cc constants (Simple)
    and the preset's links and fitted factors, written out here."""
    took = _run_ns(tmp_path, {"workload": {"generate": "microbench", "collective": "all_reduce", "size": GIB},
                              "cluster": {"preset": preset, "gpus": 8 * nodes, "nccl_algo": algo}})
    assert took == pytest.approx(1000 * by_hand_us, rel=0.005)


@pytest.mark.parametrize("preset", ["dgx-a100-80gb", "dgx-h100"])
@pytest.mark.parametrize("src,dst", [(4, 8), (0, 8), (3, 26), (9, 1), (12, 13)])
@pytest.mark.parametrize("size", [1024, 2**20, GIB])
def test_pairs_over_an_oversubscribed_spine(tmp_path, preset, src, dst, size):
    """Four nodes, one a leaf (nodes_per_leaf 1), spine 2:1: a pair on other nodes crosses the
    spine at half the rail's rate, on its destination's rail (PXN first when the GPUs' rails
    differ: both latencies), at two link latencies as under one leaf (the fitted latency is each
    end's share of a message's cost, docs/megatron.md; four would be 1 KiB's time nearly
    doubled); a pair in a node takes the NVSwitch. Every figure from the preset file: latency +
    size / rate, within 1%."""
    node = _node(preset)
    per = node["gpus"]
    rail = node["inter_node_gbps"] / 8 / per * node["inter_node_efficiency"]  # bytes/ns
    if src // per == dst // per:
        by_hand = 2 * node["nvlink_latency_ns"] + size / (node["nvlink_gib_s"] * GIB / 1e9)
    else:
        pxn = 2 * node["nvlink_latency_ns"] if src % per != dst % per else 0
        by_hand = 2 * node["inter_node_latency_ns"] + pxn + size / (rail / 2)
    took = _run_ns(tmp_path, {"workload": {"generate": "microbench", "collective": "send_recv", "size": size,
                                           "src": src, "dst": dst},
                              "cluster": {"preset": preset, "gpus": 32, "nodes_per_leaf": 1, "oversubscription": 2}})
    assert took == pytest.approx(by_hand, rel=0.01)
