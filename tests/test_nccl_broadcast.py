"""NCCL's broadcast on a cluster preset (Megatron's ``get_batch`` broadcasts over tp), each
figure derived here by hand from the preset file and NCCL's constants (``src/graph/tuning.cc``,
2.18 to 2.30): the ring alone runs a broadcast; ``nsteps = nRanks``, so its algorithm bandwidth
is its bus bandwidth (each byte crosses each hop once, pipelined); its latency is the ring's
base plus one hop (NVLink's in a node, the network's across nodes: the graph's channels are
the same, ``sameChannels``). Its protocols: LL (half the bus, capped at 87.7 GB/s in an Ampere
node, 39 on two nodes), LL128 (0.92 of it), Simple; NCCL picks the least estimate. A forced
tree, NVLS or PAT leaves it no algorithm, and NCCL (2.24 on) stops: so does a run, naming it."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest
import yaml

from simpy_astra.config.cluster import load_cluster
from simpy_astra.errors import InputError
from tests.scenario_files import custom_ring

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A100 = os.path.join(ROOT, "simpy_astra", "config", "clusters", "dgx-a100-80gb.yaml")
GIB, MIB, KIB = 2**30, 2**20, 2**10
ARGS = ("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 "
        "--micro-batch-size 1 --global-batch-size 4 --bf16 --tensor-model-parallel-size ")


def _node() -> dict:
    with open(A100) as f:
        return yaml.safe_load(f)["node"]


def by_hand_ns(nodes: int, size_bytes: int) -> int:
    """The preset's time for a broadcast of ``size_bytes`` over 8 GPUs a node on ``nodes`` nodes."""
    node = _node()
    nvlink_gb_s = node["nvlink_gib_s"] * GIB / 1e9  # 231.7 GB/s
    rail_gb_s = node["inter_node_gbps"] / 8 / 8 * node["inter_node_efficiency"]  # 23.5 GB/s a NIC
    bus = nvlink_gb_s if nodes == 1 else min(nvlink_gb_s, 8 * rail_gb_s)  # 188 GB/s over 8 rails
    hop = {"LL": 0.6, "LL128": 1.9, "Simple": 3.4} if nodes == 1 else {"LL": 2.7, "LL128": 4.0, "Simple": 14.0}
    base = {"LL": 6.6, "LL128": 14.0, "Simple": 8.4}
    ll_max = 87.7 if nodes == 1 else 39.0
    bw = {"LL": min(0.5 * bus, ll_max), "LL128": min(0.92 * bus, 32 * 20.0), "Simple": bus}
    proto = min(bw, key=lambda p: base[p] + hop[p] + size_bytes / (bw[p] * 1e3))
    lat = base[proto] + hop[proto]
    eff = node["nccl_ring_efficiency"]
    if proto == "Simple":  # Simple's fitted fill, at most half the transfer
        transfer = size_bytes / (bus * eff * 1e3)
        lat += min((node["nccl_latency_scale"] - 1) * lat, 0.5 * transfer)
    elif proto == "LL":  # the cap binds before the efficiency; a node's LL runs at its fitted share
        transfer = size_bytes / (min(0.5 * bus * eff, ll_max) * 1e3)
        transfer /= node["nccl_node_ll_bandwidth_scale"] if nodes == 1 else 1.0
    else:
        raise AssertionError("no case here runs LL128")
    return int((node["nccl_launch_us"] + lat + transfer) * 1000)


@pytest.mark.parametrize(("nodes", "size", "proto_ns"), [
    (1, 16 * KIB, 27_419),  # 19.93 + 7.2 + 16,384 / 87.7 GB/s / 0.6452
    (1, 64 * MIB, None),  # Simple: 19.93 + 11.8 + its fill + 64 MiB / (231.7 x 1.0116 GB/s)
    (2, 16 * KIB, 29_650),  # LL across nodes: 19.93 + 9.3 + 16,384 / 39 GB/s
    (2, 64 * MIB, None),  # Simple over 8 rails of 23.5 GB/s: 19.93 + 22.4 + its fill + 64 MiB / 190.2 GB/s
])
def test_broadcast_by_hand_in_a_node_and_over_rails(nodes, size, proto_ns):
    timing = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8 * nodes}, "s: cluster").nccl_all_reduce()
    members = tuple(range(8 * nodes))
    expected = by_hand_ns(nodes, size)
    if proto_ns is not None:
        assert expected == pytest.approx(proto_ns, abs=2)
    assert timing.duration_ns(members, size, "broadcast") == pytest.approx(expected, abs=2)
    # not the ring all-gather of size x n / (n - 1) it was written as: n - 1 hops of latency
    gather = timing.duration_ns(members, -(-size // (8 * nodes - 1)), "all_gather")
    assert gather > timing.duration_ns(members, size, "broadcast")


@pytest.mark.parametrize("algo", ["tree", "pat", "nvls"])
def test_a_forced_algorithm_other_than_the_ring_stops_at_a_broadcast(algo):
    preset = "dgx-h100" if algo == "nvls" else "dgx-a100-80gb"
    timing = load_cluster({"preset": preset, "gpus": 16, "nccl_algo": algo}, "s: cluster").nccl_all_reduce()
    with pytest.raises(InputError, match=rf"^s: cluster\.nccl_algo: {algo}: NCCL runs broadcasts by its ring alone "
                                         r"\(tuning\.cc\), and this job issues a broadcast, and NCCL_ALGO="
                                         rf"{algo.upper()} stops NCCL there \(2\.24 on\); .*, or force ring$"):
        timing.duration_ns(tuple(range(16)), MIB, "broadcast")
    assert load_cluster({"preset": preset, "gpus": 16, "nccl_algo": "ring"}, "s: cluster").nccl_all_reduce() \
        .duration_ns(tuple(range(16)), MIB, "broadcast") > 0


def _run(tmp_path, tp: int, cluster: dict, extra: dict | None = None) -> subprocess.CompletedProcess:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(json.dumps({"workload": {"generate": "megatron", "args": ARGS + str(tp)},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": tp, **cluster}, **(extra or {})}))
    env = {**os.environ, "SIMPY_ASTRA_CACHE": str(tmp_path / "cache"), "SIMPY_ASTRA_PROGRESS": "0"}
    return subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(scenario), "--csv-out",
                           str(tmp_path / "csv"), "--quiet"], capture_output=True, text=True, env=env, cwd=ROOT)


@pytest.mark.parametrize("tp", [8, 16])
def test_megatrons_batch_broadcasts_are_timed_as_nccls_broadcast(tmp_path, tp):
    """get_batch broadcasts each micro-batch's tokens (2,048 int64: 16 KiB) over tp as a
    BROADCAST node, timed as NCCL's LL ring broadcast (27,419 ns in a node, 29,650 over 2)."""
    done = _run(tmp_path, tp, {})
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "csv" / "nodes.csv") as f:
        casts = [r for r in csv.DictReader(f) if r["npu"] == "0" and r["name"].endswith(".batch.tokens.broadcast")]
    assert casts and {r["type"] for r in casts} == {"COMM_COLL"}
    assert {int(r["duration_ns"]) for r in casts} == {by_hand_ns(tp // 8, 16 * KIB)}


def test_a_forced_tree_stops_a_tp_job_at_its_batch_broadcast_naming_it(tmp_path):
    # NCCL 2.24 on: "no algorithm/protocol available for function Broadcast ... NCCL_ALGO was
    # set to Tree" (enqueue.cc), an error, not a fall back to the ring
    done = _run(tmp_path, 2, {"nccl_algo": "tree"})
    err = done.stderr.strip()
    assert done.returncode == 2 and "\n" not in err and "Traceback" not in err
    assert ("cluster.nccl_algo: tree: NCCL runs broadcasts by its ring alone (tuning.cc), and this job issues a "
            "broadcast (node 'F0.c0.1.batch.tokens.broadcast', over a group of 2 GPUs), and NCCL_ALGO=TREE stops "
            "NCCL there") in err
    assert "all-gather" not in err and err.endswith("leave nccl_algo out for NCCL's choice, or force ring")


def test_a_backend_that_plays_messages_replays_the_broadcast_for_its_recorded_duration(tmp_path):
    """Where NCCL's model does not time collectives, a BROADCAST is replayed, as ASTRA-sim
    replays one: for the duration the trace records, its bytes once over the tp ring's link
    (32 x 2,048 int64 tokens = 512 KiB at 215.822 GiB/s: 2.26 us, written as 2)."""
    scenario = tmp_path / "s.yaml"
    args = ARGS.replace("--micro-batch-size 1 --global-batch-size 4", "--micro-batch-size 32 --global-batch-size 32")
    scenario.write_text(json.dumps({"workload": {"generate": "megatron", "args": args + "8"},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}))
    env = {**os.environ, "SIMPY_ASTRA_CACHE": str(tmp_path / "cache"), "SIMPY_ASTRA_PROGRESS": "0"}
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(scenario), "--network-backend",
                           "congestion_aware", "--csv-out", str(tmp_path / "csv"), "--quiet"],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    with open(tmp_path / "csv" / "nodes.csv") as f:
        casts = [r for r in csv.DictReader(f) if r["npu"] == "0" and r["name"].endswith(".batch.tokens.broadcast")]
    recorded_us = round(32 * 2048 * 8 / (_node()["nvlink_gib_s"] * GIB / 1e9 * 1e3))
    assert recorded_us == 2 and casts and {int(r["duration_ns"]) for r in casts} == {recorded_us * 1000}


def test_a_custom_all_gather_leaves_the_broadcast_timed_as_nccls_ring(tmp_path):
    # before: a system's custom all-gather (all-gather-implementation-custom) sent every
    # broadcast back to its recorded duration (1 us), though NCCL runs a broadcast by its own
    # ring whatever the all-gathers run: the same 27,419 ns as the preset's own system
    system = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "cluster").system_mapping()
    system["all-gather-implementation-custom"] = [custom_ring(tmp_path, 8)]
    done = _run(tmp_path, 8, {}, {"system": system})
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "csv" / "nodes.csv") as f:
        casts = [r for r in csv.DictReader(f) if r["npu"] == "0" and r["name"].endswith(".batch.tokens.broadcast")]
    assert casts and {int(r["duration_ns"]) for r in casts} == {by_hand_ns(1, 16 * KIB)} == {27_419}


def test_a_broadcasts_short_involved_dim_is_refused_naming_the_broadcast(tmp_path):
    # before: "this all-gather runs over 2", of a broadcast node on a two-node preset
    from simpy_astra.workloads.chakra.types import BROADCAST, COMM_COLL_NODE
    from simpy_astra.workloads.chakra.writer import make_node, write_et

    for rank in range(16):
        write_et(str(tmp_path / f"bc.{rank}.et"), [make_node(1, "bc", COMM_COLL_NODE, attrs={
            "comm_type": BROADCAST, "comm_size": MIB, "involved_dim": [True]})])
    scenario = tmp_path / "s.yaml"
    scenario.write_text(json.dumps({"workload": "bc", "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}}))
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(scenario), "--quiet"],
                          capture_output=True, text=True, cwd=tmp_path)
    err = done.stderr.strip()
    assert done.returncode == 2 and "\n" not in err and "all-gather runs" not in err, err
    assert err.startswith(f"error: {tmp_path / 'bc.0.et'}: node 1: involved_dim lists 1 dimension(s), but this "
                          f"broadcast runs over 2 "), err
    assert err.endswith("give one entry per dimension"), err


def test_a_broadcast_whose_all_gather_has_no_plan_says_so_in_one_line(tmp_path):
    # a system giving all-gathers a custom collective alone (no all-gather-implementation): the
    # broadcast, timed on the NPUs its group's all-gather runs over, has none to run on. Before,
    # it was replayed for the duration it records (none here: 1 ns)
    from simpy_astra.workloads.chakra.types import BROADCAST, COMM_COLL_NODE
    from simpy_astra.workloads.chakra.writer import make_node, write_et

    for rank in range(8):
        write_et(str(tmp_path / f"bc.{rank}.et"), [make_node(1, "bc", COMM_COLL_NODE, attrs={
            "comm_type": BROADCAST, "comm_size": MIB})])
    system = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "cluster").system_mapping()
    system["all-gather-implementation-custom"] = [custom_ring(tmp_path, 8)]
    del system["all-gather-implementation"]
    scenario = tmp_path / "s.yaml"
    scenario.write_text(json.dumps({"workload": "bc", "cluster": {"preset": "dgx-a100-80gb", "gpus": 8},
                                    "system": system}))
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(scenario), "--quiet"],
                          capture_output=True, text=True, cwd=tmp_path)
    err = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert err.startswith(f"error: {tmp_path / 'bc.0.et'}: node 1: this broadcast runs on the NPUs its group's "
                          f"all-gather runs over, which has no plan here: {scenario}: system: field "
                          f"'all-gather-implementation' is missing"), err
