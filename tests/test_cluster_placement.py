"""Cluster presets as the machine: every GPU pair and every group paid on the links it crosses.

Expected figures come from the preset files' datasheet values and closed forms written here:
inside a node through the NVSwitch (two links of NVLink's latency, bytes / NVLink's rate);
across nodes through the rail's switch (two links of its latency) at the rail's rate,
``inter_node_gbps / 8 bits / 8 GPUs x inter_node_efficiency`` bytes/s, plus the NVSwitch's
latency when the two GPUs sit on different rails (PXN, docs/megatron.md).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest
import yaml

from simpy_astra.config.cluster import load_cluster
from simpy_astra.config.scenario import load_scenario
from simpy_astra.engine.bandwidth_floor import nic_floor_ns
from simpy_astra.errors import InputError
from simpy_astra.simulation import Simulation

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESETS = os.path.join(ROOT, "simpy_astra", "config", "clusters")
GIB = 2**30


def _node(preset: str) -> dict:
    with open(os.path.join(PRESETS, f"{preset}.yaml")) as f:
        return yaml.safe_load(f)["node"]


def _by_hand_ns(node: dict, src: int, dst: int, size: int) -> float:
    per = node["gpus"]
    nvlink_bytes_per_ns = node["nvlink_gib_s"] * GIB / 1e9
    rail_bytes_per_ns = node["inter_node_gbps"] / 8 / per * node["inter_node_efficiency"]  # Gb/s -> B/ns
    if src // per == dst // per:
        return 2 * node["nvlink_latency_ns"] + size / nvlink_bytes_per_ns
    pxn = 2 * node["nvlink_latency_ns"] if src % per != dst % per else 0.0
    return 2 * node["inter_node_latency_ns"] + pxn + size / rail_bytes_per_ns


def _scenario(tmp_path, body: dict) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps(body))
    return str(path)


def _run_json(path: str, tmp_path) -> dict:
    out = tmp_path / "out.json"
    env = {**os.environ, "SIMPY_ASTRA_CACHE": str(tmp_path / "cache"), "SIMPY_ASTRA_PROGRESS": "0"}
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", path, "--json-out", str(out), "--quiet"],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("preset", ["dgx-a100-80gb", "dgx-h100"])
@pytest.mark.parametrize("nodes", [2, 4])
def test_every_ordered_pair_costs_its_route(tmp_path, preset, nodes):
    node = _node(preset)
    gpus = nodes * node["gpus"]
    path = _scenario(tmp_path, {"workload": {"generate": "microbench", "collective": "send_recv", "size": GIB,
                                             "num_npus": gpus, "src": 0, "dst": 1},
                                "cluster": {"preset": preset, "gpus": gpus}})
    net = Simulation.from_scenario(path).network
    for src in range(gpus):
        for dst in range(gpus):
            if src != dst:
                assert net.delay_ns(src, dst, GIB) == pytest.approx(_by_hand_ns(node, src, dst, GIB), rel=0.01)
                # 1 KiB: the latencies of the route (PXN's NVSwitch and the rail's switch) dominate
                assert net.delay_ns(src, dst, 1024) == pytest.approx(_by_hand_ns(node, src, dst, 1024), abs=1)


@pytest.mark.parametrize("preset,src,dst", [("dgx-h100", 0, 8), ("dgx-h100", 4, 8), ("dgx-h100", 4, 5),
                                            ("dgx-a100-80gb", 4, 13), ("dgx-a100-80gb", 7, 31)])
def test_send_recv_on_a_preset_takes_the_route(tmp_path, preset, src, dst):
    """The issue's case: 1 GiB from GPU 4 to GPU 8 crosses a node (other rail) and took NVLink's time."""
    gpus = 32
    path = _scenario(tmp_path, {"workload": {"generate": "microbench", "collective": "send_recv", "size": GIB,
                                             "num_npus": gpus, "src": src, "dst": dst},
                                "cluster": {"preset": preset, "gpus": gpus}})
    took = _run_json(path, tmp_path)["iteration_time_ns"]
    assert took == pytest.approx(_by_hand_ns(_node(preset), src, dst, GIB), rel=0.01)


def test_oversubscribed_spine_slows_pairs_under_other_leaves():
    c = load_cluster({"preset": "dgx-h100", "gpus": 64, "nodes_per_leaf": 4, "oversubscription": 2}, "s: cluster")
    rails = c.rails()
    rail_gib_s = 3200 / 8 / 8 * 0.94 * 1e9 / GIB
    assert rails.profile(0, 24)[1] == pytest.approx(rail_gib_s)  # nodes 0 and 3: one leaf
    assert rails.profile(0, 32)[1] == pytest.approx(rail_gib_s / 2)  # nodes 0 and 4: over the spine
    assert not rails.symmetric  # folding is turned off for such a run
    assert load_cluster({"preset": "dgx-h100", "gpus": 64}, "s: cluster").rails().symmetric


# ------------------------------------------------------------------ groups across nodes
TP4 = ("--num-layers 8 --hidden-size 4096 --num-attention-heads 32 --seq-length 2048 "
       "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 16 "
       "--tensor-model-parallel-size 4 --fp16 --DDP-impl local --vocab-size 51200")


def test_strided_data_parallel_group_pays_the_nics(tmp_path):
    """TP 4 on two DGX A100 nodes: data-parallel groups {0, 4, 8, 12}, two GPUs on each node.
    Each node's half of the group must send 2 (m - 1) / m = 1 copy of the gradients out
    through its two members' NICs: at least S / (2 x 25 GB/s) with S the fp16 gradients of a
    quarter of the model (the paper's parameter count, 12 l h^2 (1 + 13/12h + (V + s)/12lh))."""
    l_, h, v, s = 8, 4096, 51200, 2048
    params = 12 * l_ * h * h * (1 + 13 / (12 * h) + (v + s) / (12 * l_ * h))
    grads_bytes = 2 * params / 4
    assert grads_bytes / 1e9 == pytest.approx(0.91, abs=0.01)
    seen, floor = {}, {}
    for gbps in (1600, 800, 400):
        path = _scenario(tmp_path, {"workload": {"generate": "megatron", "args": TP4},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 16, "inter_node_gbps": gbps}})
        dp_ns = _run_json(path, tmp_path)["npus"]["0"]["breakdown_ns"]["comm.dp"]
        nic_bytes_per_ns = gbps / 8 / 8  # one 200 (100, 50) Gb/s NIC per GPU, at line rate
        floor[gbps] = grads_bytes / (2 * nic_bytes_per_ns)
        assert dp_ns >= floor[gbps]
        seen[gbps] = dp_ns
    # the NICs, not NVLink, set the time: at 1/r of their rate the bytes they carry take (r - 1)
    # times their floor longer at least, and nothing else grows (the issue: 6.08 ms at either rate)
    for gbps, r in ((800, 2), (400, 4)):
        assert (r - 1) * floor[1600] <= seen[gbps] - seen[1600] <= (r - 1) * seen[1600], gbps


def test_nic_floor_of_groups_by_hand():
    rails = load_cluster({"preset": "dgx-a100-80gb", "gpus": 16}, "c").rails()
    rail_bytes_per_ns = 1600 / 8 / 8 * 0.94 * 1e9 / GIB * GIB / 1e9
    s = 10**9
    # all-reduce over {0, 4, 8, 12}: 2 nodes, S out of each through 2 NICs
    assert nic_floor_ns(rails, "all_reduce", s, (0, 4, 8, 12)) == pytest.approx(s / (2 * rail_bytes_per_ns), rel=1e-6)
    # tensor parallelism across both nodes (16 GPUs): S over 8 NICs
    assert nic_floor_ns(rails, "all_reduce", s, tuple(range(16))) == pytest.approx(s / (8 * rail_bytes_per_ns),
                                                                                   rel=1e-6)
    # all-gather of S per member over {0, 8}: the other's S comes in through one NIC
    assert nic_floor_ns(rails, "all_gather", s, (0, 8)) == pytest.approx(s / rail_bytes_per_ns, rel=1e-6)
    assert nic_floor_ns(rails, "all_reduce", s, (0, 1, 2, 3)) == 0  # one node: NVLink's, not the NICs'


# ------------------------------------------------------------------ values and who is blamed
@pytest.mark.parametrize("key,value", [("tensor_efficiency", 5), ("memory_efficiency", 3), ("tensor_efficiency", 0),
                                       ("attention_efficiency", 2), ("attention_efficiency", 0),
                                       ("fp8_efficiency", 0), ("fp8_efficiency", 1.5)])
def test_gpu_efficiencies_must_be_fractions(key, value):
    """Each efficiency is a fraction of a peak; an H100 has FP8, so its FP8 efficiency cannot
    be 0 (the A100's is: it has no FP8 units)."""
    with pytest.raises(InputError, match=rf"s.yaml: cluster.gpu.{key}: must be"):
        load_cluster({"preset": "dgx-h100", "gpus": 16, "gpu": {key: value}}, "s.yaml: cluster")
    assert load_cluster({"preset": "dgx-a100-80gb", "gpus": 16}, "s").gpu["fp8_efficiency"] == 0


@pytest.mark.parametrize("key,value", [("hbm_gbps", 1e-300), ("sms", 10**8), ("launch_us", 1e300),
                                       ("tensor_tflops", 1e300), ("hbm_gib", 1e-300), ("l2_gbps", 0.0001)])
def test_gpu_figures_outside_any_gpu_made_are_refused(key, value):
    """Typo guards: a figure no GPU has (a tensor rate of 1e-300 TFLOP/s would give kernels past
    the time a run can hold) is refused naming the key as written."""
    with pytest.raises(InputError, match=rf"s.yaml: cluster.gpu.{key}: must be between"):
        load_cluster({"preset": "dgx-h100", "gpus": 16, "gpu": {key: value}}, "s.yaml: cluster")


def test_bad_node_values_are_blamed_where_they_were_written(tmp_path):
    with pytest.raises(InputError, match=r"s.yaml: cluster.inter_node_efficiency: must be in \(0, 1\]"):
        load_cluster({"preset": "dgx-h100", "gpus": 16, "inter_node_efficiency": 7}, "s.yaml: cluster")
    # each in range, their product a NIC no link can be: refused naming both, not the network it builds
    with pytest.raises(InputError, match=r"s.yaml: cluster: inter_node_gbit_s 0.001 x inter_node_efficiency 1e-09 "
                                         r"over 8 GPUs leaves each NIC .* raise either"):
        load_cluster({"preset": "dgx-h100", "gpus": 16, "inter_node_gbit_s": 0.001, "inter_node_efficiency": 1e-9},
                     "s.yaml: cluster")
    with pytest.raises(InputError, match=r"s.yaml: cluster.inter_node_gbps: must be between"):
        load_cluster({"preset": "dgx-h100", "gpus": 16, "inter_node_gbps": 1e-300}, "s.yaml: cluster")
    with pytest.raises(InputError, match=r"s.yaml: cluster.gpu: unknown key 'tensor_eff'"):
        load_cluster({"preset": "dgx-h100", "gpus": 16, "gpu": {"tensor_eff": 0.5}}, "s.yaml: cluster")
    with pytest.raises(InputError, match=r"s.yaml: cluster.nccl_algo: must be one of ring, tree, nvls"):
        load_cluster({"preset": "dgx-h100", "gpus": 16, "nccl_algo": "collnet"}, "s.yaml: cluster")
    copy = yaml.safe_load(open(os.path.join(PRESETS, "dgx-h100.yaml")))
    copy["node"]["gpus"] = 8.0
    mine = tmp_path / "my.yaml"
    mine.write_text(yaml.safe_dump(copy))
    with pytest.raises(InputError, match=rf"{mine}: node.gpus: must be a positive integer \(got 8.0\)"):
        load_cluster({"preset": str(mine), "gpus": 16}, "s.yaml: cluster")


def test_absurd_bandwidth_is_refused_as_the_cluster_key(tmp_path):
    path = _scenario(tmp_path, {"workload": {"generate": "microbench", "collective": "send_recv", "size": 1,
                                             "num_npus": 16, "src": 0, "dst": 8},
                                "cluster": {"preset": "dgx-h100", "gpus": 16, "inter_node_gbps": 1e-300}})
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", path], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {path}: cluster.inter_node_gbps: must be between")
    assert "bandwidth[" not in done.stderr


def test_gpt3_shape_on_1024_gpus_tp4_syncs_at_or_above_its_nic_floor(tmp_path):
    """GPT-3's layer (h 12288) with tp 4, pp 8 on 1,024 A100s: data-parallel groups of 32, two
    members on each of 16 nodes. Stage 0 holds 2 layers' 12 h^2 (1 + 13/12h) / 4 parameters at
    least (its embedding only adds): 2 (m - 1) / m of their fp16 gradients leave each node
    through the two members' 200 Gb/s NICs."""
    h, layers_per_stage = 12288, 2
    grads_bytes = 2 * layers_per_stage * 12 * h * h * (1 + 13 / (12 * h)) / 4
    floor_ns = 2 * 15 / 16 * grads_bytes / (2 * 1600 / 8 / 8)
    args = ("--num-layers 16 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 "
            "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 64 "
            "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 8 --fp16 --DDP-impl local "
            "--vocab-size 51200 --checkpoint-activations")
    path = _scenario(tmp_path, {"workload": {"generate": "megatron", "args": args},
                                "cluster": {"preset": "dgx-a100-80gb", "gpus": 1024}})
    dp_ns = _run_json(path, tmp_path)["npus"]["0"]["breakdown_ns"]["comm.dp"]
    assert dp_ns >= floor_ns


def test_nccl_algo_forces_ring_tree_nvls(tmp_path):
    """1 GiB all-reduce on two H100 nodes (16 GPUs, 8 NICs a node), each algorithm forced
    (NCCL_ALGO), timed by hand from NCCL's tuning.cc constants (Simple protocol, us) and the
    preset's links: ring 2 (n - 1)/n of the buffer over min(NVLink, 8 NICs), latency 1.4 x
    (8.4 + 28 x max(3.4, 3 x 1.0) + 2 x 14); tree half of 0.92 x min(NVLink, 2 x 8 NICs),
    latency 8.4 + 2 x (7 x 4.0 + 14); NVLS NCCL's estimate (tuning.cc, search.cc 2.29.7): 8
    channels (a GPU each) of min(42 x 0.85 x 7/8 x 2, 2 x 45, 57.7) GB/s (42 the fastest of
    NCCL's speeds with 9 x 42 within NVLink's 397.3 and within a 47 GB/s rail, 45 bwInter, 57.7
    the NVLS tree's cap on two nodes) = 461.6 of bus bandwidth, x 16/30, latency 25 + 2 x 20.9;
    each bandwidth times the preset's nccl_ALGO_efficiency, NVLS's latency times its
    nccl_latency_scale (fitted on NVLS: nccl_latency_scale_algo), plus its nccl_launch_us.
    None is under the NIC floor (the buffer once each way through the node's 8 NICs); NCCL's
    choice is the fastest. NVLS is refused on A100 nodes (no NVSwitch-3)."""
    node = _node("dgx-h100")
    size = 2**30
    nvlink = node["nvlink_gib_s"] * 2**30 / 1e9  # GB/s
    rail = node["inter_node_gbps"] / 8 / 8 * node["inter_node_efficiency"]  # GB/s, one NIC
    # the preset's calibrated factor on NCCL's Simple latencies, of the algorithm it was fitted on
    scale = {algo: node["nccl_latency_scale"] if node["nccl_latency_scale_algo"] == algo else 1.0
             for algo in ("ring", "tree", "nvls")}
    launch = node["nccl_launch_us"]  # one call's fixed cost
    # the fitted shares the preset states (1 where it states none)
    eff = {algo: node.get(f"nccl_{algo}_efficiency", 1.0) for algo in ("ring", "tree", "nvls")}
    hand_us = {
        "ring": launch + scale["ring"] * 1.4 * (8.4 + 28 * 3.4 + 2 * 14)
        + size / (1000 * eff["ring"] * 16 / 30 * min(nvlink, 8 * rail)),
        "tree": launch + scale["tree"] * (8.4 + 2 * (7 * 4.0 + 14)) + size / (1000 * eff["tree"] * 0.46 * min(nvlink, 16 * rail)),
        "nvls": launch + scale["nvls"] * (25 + 2 * 20.9) + size / (1000 * eff["nvls"] * 8 * 57.7 * 16 / 30),
    }
    took = {}
    for algo in (None, "ring", "tree", "nvls"):
        cluster = {"preset": "dgx-h100", "gpus": 16, **({"nccl_algo": algo} if algo else {})}
        path = _scenario(tmp_path, {"workload": {"generate": "microbench", "collective": "all_reduce",
                                                 "size": size, "num_npus": 16}, "cluster": cluster})
        took[algo] = _run_json(path, tmp_path)["iteration_time_ns"]
    floor_ns = size / (8 * rail)
    for algo, us in hand_us.items():
        assert took[algo] == pytest.approx(us * 1000, rel=0.01), algo
        assert took[algo] >= floor_ns
    assert took[None] == min(took[a] for a in hand_us)
    with pytest.raises(InputError, match=r"s: cluster.nccl_algo: nvls, but .* 2nd-generation NVSwitch, without the "
                                         r"multicast .* of NVSwitch-3"):
        load_cluster({"preset": "dgx-a100-80gb", "gpus": 16, "nccl_algo": "nvls"}, "s: cluster")


FOLD = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --max-position-embeddings 512 "
        "--micro-batch-size 1 --global-batch-size 16 --tensor-model-parallel-size 4 "
        "--pipeline-model-parallel-size 2 --fp16 --DDP-impl local --vocab-size 5120")


@pytest.mark.parametrize("fabric", [{}, {"nodes_per_leaf": 2, "oversubscription": 4}])
def test_folded_runs_equal_full_ones_on_the_routes(tmp_path, fabric):
    """Strided groups and PXN routes keep folding exact (every pair's delay is kept by the
    rank grid's translations); an oversubscribed spine under few leaves is not folded."""
    times = {}
    for fold in (True, False):
        path = _scenario(tmp_path, {"workload": {"generate": "megatron", "args": FOLD}, "fold_symmetry": fold,
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 64, **fabric}})
        out = _run_json(path, tmp_path)
        times[fold] = (out["iteration_time_ns"], out["npus"]["0"]["breakdown_ns"])
    assert times[True] == times[False]



@pytest.mark.parametrize("tp, pp", [(16, 2), (4, 2), (8, 1)])
def test_groups_timed_as_nccl_times_them_fold_as_sets_and_keep_every_figure(tmp_path, monkeypatch, tp, pp):
    """A cluster preset times a group's all-reduces, reduce-scatters and all-gathers by who is
    in it (NCCL's shape: GPUs, nodes, NICs), so folding compares those groups as sets: a
    tensor-parallel group over two nodes is the same set from each of its GPUs (the nodes'
    eight in-node offsets, one node either way) where in ring order each GPU of a node sees
    the node boundary elsewhere, and a 32-GPU tp 16 run simulated 16 NPUs a stage. Now one NPU
    a stage (every group here is a coset of the rank grid's translations), with every NPU's
    figures those of the run that simulates all 32."""
    from simpy_astra.config.scenario import load_scenario

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    args = FOLD.replace("--tensor-model-parallel-size 4", f"--tensor-model-parallel-size {tp}").replace(
        "--pipeline-model-parallel-size 2", f"--pipeline-model-parallel-size {pp}")
    path = _scenario(tmp_path, {"workload": {"generate": "megatron", "args": args},
                                "cluster": {"preset": "dgx-h100", "gpus": 32}})
    folded_sim = Simulation(load_scenario(path))
    assert len(folded_sim.npus) == pp
    folded = sorted(folded_sim.run(), key=lambda r: r.npu_id)
    full = sorted(Simulation(dataclasses.replace(load_scenario(path), fold_symmetry=False)).run(),
                  key=lambda r: r.npu_id)
    assert len(full) == 32 and folded == full


MODERN = ("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings "
          "2048 --micro-batch-size 1 --global-batch-size 16 --bf16 --vocab-size 5120 --use-distributed-optimizer "
          "--overlap-grad-reduce")


@pytest.mark.parametrize("extra", [
    "--tensor-model-parallel-size 4 --num-experts 8 --expert-model-parallel-size 8 --moe-router-topk 2 "
    "--moe-token-dispatcher-type alltoall --disable-bias-linear --sequence-parallel",
    "--tensor-model-parallel-size 2 --context-parallel-size 8 --cp-comm-type a2a",
    "--tensor-model-parallel-size 2 --context-parallel-size 8 --cp-comm-type p2p --sequence-parallel"])
def test_set_folding_keeps_every_figure_beside_groups_played_as_messages(tmp_path, monkeypatch, extra):
    """Expert all-to-alls and context-parallel exchanges are played as messages (their group
    compared in ring order), beside data- and tensor-parallel groups compared as sets: the
    folded run's every NPU equals the full run's."""
    from simpy_astra.config.scenario import load_scenario

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    path = _scenario(tmp_path, {"workload": {"generate": "megatron", "args": f"{MODERN} {extra}"},
                                "cluster": {"preset": "dgx-h100", "gpus": 32}})
    folded_sim = Simulation(load_scenario(path))
    assert len(folded_sim.npus) < 32
    folded = sorted(folded_sim.run(), key=lambda r: r.npu_id)
    full = sorted(Simulation(dataclasses.replace(load_scenario(path), fold_symmetry=False)).run(),
                  key=lambda r: r.npu_id)
    assert folded == full

def test_a_billion_gpus_is_refused_at_once():
    with pytest.raises(InputError, match=r"s: cluster.gpus: 1,000,000,000 is past the largest cluster"):
        load_cluster({"preset": "dgx-h100", "gpus": 10**9}, "s: cluster")
    with pytest.raises(InputError, match=r"s: cluster.gpus: 9,223,372,036,854,775,808 is past"):
        load_cluster({"preset": "dgx-h100", "gpus": 2**63}, "s: cluster")


def test_a_network_given_beside_the_preset_keeps_its_own_rules(tmp_path):
    """``network:`` in the scenario overrides what the preset builds, routes included: ASTRA-sim's
    rule (the lowest differing dimension) charges GPU 4 -> 8 on dimension 0, 100 GiB/s."""
    path = _scenario(tmp_path, {"workload": {"generate": "microbench", "collective": "send_recv", "size": GIB,
                                             "num_npus": 16, "src": 4, "dst": 8},
                                "cluster": {"preset": "dgx-h100", "gpus": 16},
                                "network": {"topology": ["Switch", "Switch"], "npus_count": [8, 2],
                                            "bandwidth": [100, 1], "latency": [1, 1]}})
    assert Simulation.from_scenario(path).network.delay_ns(4, 8, GIB) == int(2 + GIB / (100 * GIB / 1e9))


def test_nccl_algo_tree_refused_with_a_network_of_ones_own(tmp_path):
    """A scenario's own network plays collectives on it, so a forced tree or NVLS could not apply."""
    path = _scenario(tmp_path, {"workload": {"generate": "microbench", "collective": "all_reduce", "size": 2**20,
                                             "num_npus": 16},
                                "cluster": {"preset": "dgx-h100", "gpus": 16, "nccl_algo": "tree"},
                                "network": {"topology": ["Switch"], "npus_count": [16], "bandwidth": [100],
                                            "latency": [500]}})
    with pytest.raises(InputError, match=r"cluster.nccl_algo: tree runs on the preset's machine"):
        load_scenario(str(path))


def test_nccl_algo_tree_refused_on_a_message_backend(tmp_path):
    """The congestion-aware backends play an all-reduce as messages (contention included), so
    only the analytical one can run a forced tree or NVLS."""
    path = _scenario(tmp_path, {"workload": {"generate": "microbench", "collective": "all_reduce", "size": 2**20,
                                             "num_npus": 16},
                                "cluster": {"preset": "dgx-h100", "gpus": 16, "nccl_algo": "nvls"}})
    with pytest.raises(InputError, match=r"cluster.nccl_algo: nvls is timed by the congestion_unaware backend only"):
        load_scenario(path, backend="congestion_aware")
    assert load_scenario(path).network.nccl is not None


def test_an_expert_parallel_all_to_all_in_a_node_sends_each_peer_directly(tmp_path):
    """An ep 8 group inside a node of a two-node DGX H100 job: NCCL's all-to-all sends each of
    the 7 peers its eighth of the buffer over NVLink, here one after another (window 1, as on
    one node, whose all-to-all the A100 log checks), so it takes 7 x (2 NVLink latencies +
    S/8 / NVLink's rate) by hand. The reference's rule for a group that is a subset of a
    many-dimension network ran it as a ring, four times as long (745,622 ns at S = 64 MiB)."""
    import csv

    node = _node("dgx-h100")
    args = ("--num-layers 1 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 "
            "--max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 16 --bf16 "
            "--num-experts 8 --expert-model-parallel-size 8 --moe-router-topk 2 --disable-bias-linear "
            "--moe-token-dispatcher-type alltoall")
    path = _scenario(tmp_path, {"cluster": {"preset": "dgx-h100", "gpus": 16},
                                "workload": {"generate": "megatron", "args": args}})
    env = {**os.environ, "SIMPY_ASTRA_CACHE": str(tmp_path / "cache"), "SIMPY_ASTRA_PROGRESS": "0"}
    subprocess.run([sys.executable, "-m", "simpy_astra", "run", path, "--csv-out", str(tmp_path / "csv"), "--quiet"],
                   check=True, capture_output=True, env=env, cwd=ROOT)
    with open(tmp_path / "csv" / "nodes.csv") as f:
        times = {int(r["duration_ns"]) for r in csv.DictReader(f) if r["name"].endswith(".moe.dispatch.alltoall")}
    size = 4096 * 2 * 4096 * 2  # top-2 copies of 4,096 tokens of h 4,096, bf16
    by_hand = 7 * (2 * node["nvlink_latency_ns"] + size / 8 / (node["nvlink_gib_s"] * GIB / 1e9))
    assert len(times) == 1 and times.pop() == pytest.approx(by_hand, rel=0.001)


def test_a_group_implementation_that_is_no_algorithm_is_refused(tmp_path):
    from simpy_astra.config.system import system_from_mapping

    assert system_from_mapping({"preferred-dataset-splits": 1, "all-to-all-group-implementation": "direct4"},
                               "s.json").group_implementations == {
        "all_to_all": "direct4"}
    for value in (["direct1"], "nosuch", 3):
        with pytest.raises(InputError, match=r"s\.json: field 'all-to-all-group-implementation' is invalid"):
            system_from_mapping({"preferred-dataset-splits": 1, "all-to-all-group-implementation": value}, "s.json")


def test_a_microbench_beside_a_cluster_takes_its_gpu_count(tmp_path):
    """As a new user writes it (issue 47): no num_npus beside cluster: {preset, gpus}; the
    cluster's 16 GPUs are the microbenchmark's NPUs, and 1 GiB from GPU 4 to GPU 8 (another
    node, another rail) costs the route by hand."""
    path = _scenario(tmp_path, {"cluster": {"preset": "dgx-h100", "gpus": 16},
                                "workload": {"generate": "microbench", "collective": "send_recv",
                                             "size": GIB, "src": 4, "dst": 8}})
    data = _run_json(path, tmp_path)
    assert data["iteration_time_ns"] == pytest.approx(_by_hand_ns(_node("dgx-h100"), 4, 8, GIB), rel=0.01)
    assert len(data["npus"]) == 16


def test_groups_straddling_nodes_fold_only_by_whole_nodes(tmp_path, monkeypatch):
    """TP 3 on three A100 nodes: tensor-parallel groups {0, 1, 2} in a node and {6, 7, 8}
    across two. Rank ids shifted by 3 map one onto the other and had been taken as alike
    (their offsets match), as had the pair 6 -> 8 (PXN and the rail) and 9 -> 11 (NVLink):
    3 NPUs simulated for 24, the step 45.9 ms against the full run's 58.2. A preset's routes
    and its groups' nodes are kept by shifts of whole nodes only; the folded run now equals
    the full one on every NPU."""
    from simpy_astra.config.scenario import load_scenario

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    args = ("--num-layers 2 --hidden-size 3072 --num-attention-heads 24 --seq-length 2048 --max-position-embeddings "
            "2048 --micro-batch-size 1 --global-batch-size 16 --fp16 --DDP-impl local --vocab-size 51201 "
            "--tensor-model-parallel-size 3")
    path = _scenario(tmp_path, {"workload": {"generate": "megatron", "args": args},
                                "cluster": {"preset": "dgx-a100-40gb", "gpus": 24}})
    folded = sorted(Simulation(load_scenario(path)).run(), key=lambda r: r.npu_id)
    full = sorted(Simulation(dataclasses.replace(load_scenario(path), fold_symmetry=False)).run(),
                  key=lambda r: r.npu_id)
    assert len(full) == 24 and folded == full
