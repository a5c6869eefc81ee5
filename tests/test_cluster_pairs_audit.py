"""Audit of issue 47 on the presets: numbers derived here by hand from the preset files and
NCCL's published constants, never from the code's formulas."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from simpy_astra.simulation import Simulation

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESETS = os.path.join(ROOT, "simpy_astra", "config", "clusters")
GIB = 2**30


def _node(preset: str) -> dict:
    with open(os.path.join(PRESETS, f"{preset}.yaml")) as f:
        return yaml.safe_load(f)["node"]


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
    """1 GiB all-reduce forced to NVLS on four H100 nodes (32 GPUs). Past two nodes NCCL's NVLS
    tree is interior to a binary tree on every rail: each node's 8 NICs carry the buffer twice
    each way, 2 S / (8 x 47 GB/s) = 5.71 ms, more than NVLS's own part in the node (S over
    0.85 x NVLink x the preset's fitted NVLS share, 4.27 ms). The fitted share is NVSwitch's
    (NCCL's nvlsEfficiency scales bwIntra only); it had been charged on the NICs as well:
    8.02 ms, 40% over the NICs' time. Latency: NCCL's NVLS tree, 25 us + 2 log2(4) x 20.9 us,
    x the preset's nccl_latency_scale, plus its nccl_launch_us."""
    node = _node("dgx-h100")
    nic_gb_s = node["inter_node_gbps"] / 8 / 8 * node["inter_node_efficiency"]  # 47 GB/s
    nvlink_gb_s = node["nvlink_gib_s"] * GIB / 1e9
    nics_us = 2 * GIB / (8 * nic_gb_s * 1e3)
    in_node_us = GIB / (node["nccl_nvls_efficiency"] * 0.85 * nvlink_gb_s * 1e3)
    assert nics_us == pytest.approx(5711.4, abs=0.1) and in_node_us < nics_us
    latency_us = node["nccl_latency_scale"] * (25 + 2 * 2 * 20.9)
    by_hand_ns = 1000 * (node["nccl_launch_us"] + latency_us + nics_us)
    took = _all_reduce_ns(tmp_path, 32, GIB, "nvls")
    assert took == pytest.approx(by_hand_ns, rel=0.01)
