"""A scenario's ``cluster:``: a named machine (a preset) and a GPU count, instead of system,
network and backend inputs.

    cluster: {preset: dgx-a100-80gb, gpus: 1536, inter_node_gbps: 1600}

A preset is a YAML file (``simpy_astra/config/clusters/NAME.yaml``, or a path to a copy the
user edited) with the GPU's figures (:class:`~simpy_astra.workloads.megatron.kernels.Gpu`,
each with its datasheet or log in a comment) and the node: GPUs per node on NVSwitch, the
NVLink bandwidth and latency fitted by ``calibrate`` on an nccl-tests log, and the scale-out
NICs. Any ``node`` value may be overridden at the top level of ``cluster:``
(``inter_node_gbps``, ``gpus_per_node``...), any GPU value under ``gpu:``.

The network is ASTRA-sim's view of a rail-optimised cluster: the GPUs of a node on NVSwitch,
then the nodes, each GPU on its own rail (its NIC's share of the node's scale-out bandwidth,
at the efficiency NCCL sustains); :meth:`Cluster.dims` writes both levels as dimensions in
the job's rank order so that folding applies. Collectives use what ``calibrate`` picks for such logs
(halving-doubling all-reduce on power-of-two dimensions, else ring; ring all-gather and
reduce-scatter; direct all-to-all), one chunk per collective and NCCL's fused reduction
(no separate local-memory pass); collectives of different NCCL streams run side by side in a
dimension's queue (``active-chunks-per-dimension``); compute nodes carry their own times (no
roofline).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields
from typing import Any

from simpy_astra.config.readers import read_yaml_file
from simpy_astra.errors import InputError

# the GPU's figures live beside the kernels that use them; configs read them from here too
from simpy_astra.workloads.megatron.kernels import Gpu

#: collectives of different streams that run at once in one dimension's queue
STREAMS_AT_ONCE = 8
PRESET_DIR = os.path.join(os.path.dirname(__file__), "clusters")
CLUSTER_KEYS = {"preset", "gpus", "gpu", "inter_node_gbps", "gpus_per_node", "nvlink_gib_s",
                "nvlink_latency_ns", "inter_node_efficiency", "inter_node_latency_ns"}
NODE_KEYS = ("gpus", "nvlink_gib_s", "nvlink_latency_ns", "inter_node_gbps", "inter_node_efficiency",
             "inter_node_latency_ns")


def presets() -> list[str]:
    return sorted(f[:-5] for f in os.listdir(PRESET_DIR) if f.endswith(".yaml"))


@dataclass(frozen=True)
class Cluster:
    preset: str
    gpus: int
    gpu: dict[str, Any]  # the Gpu's fields
    node: dict[str, float]

    @property
    def nodes(self) -> int:
        return self.gpus // int(self.node["gpus"])

    def gpu_model(self) -> Gpu:
        return Gpu(**self.gpu)

    def dims(self, blocks: list[int] | None = None) -> tuple[list[int], int]:
        """The network's dimensions (sizes, and how many of them are inside a node).

        Without ``blocks``: a node's GPUs on one NVSwitch dimension, all nodes on one more.
        ``blocks`` are the job's parallel dimensions in rank order, fastest first (Megatron:
        tp, cp, dp, pp): each becomes a dimension of its own where it falls inside a node or
        across whole nodes (one that straddles the node boundary is split there). In the
        congestion-unaware model both are the same machine (a message costs NVLink's or the
        rail's bandwidth and latency either way, and each parallel group's collectives stay in
        its dimensions); the second lets folding see that GPUs of one role are alike."""
        per_node = int(self.node["gpus"])
        plain = ([per_node, self.nodes] if self.nodes > 1 else [per_node]), 1
        if not blocks or math.prod(blocks) != self.gpus:
            return plain
        within: list[int] = []  # dimensions inside a node, then across nodes
        across: list[int] = []
        inside = 1
        for b in (b for b in blocks if b > 1):
            if inside < per_node:
                take = math.gcd(b, per_node // inside)
                if take != min(b, per_node // inside):
                    return plain  # a block that does not tile the node
                within += [take] if take > 1 else []
                inside *= take
                b //= take
            if b > 1:
                if inside < per_node:
                    return plain
                across.append(b)
        if inside != per_node:
            return plain
        return within + across, len(within)

    def network_mapping(self, blocks: list[int] | None = None) -> dict[str, Any]:
        per_node = int(self.node["gpus"])
        rail_gib_s = (self.node["inter_node_gbps"] / per_node / 8 * 1e9 * self.node["inter_node_efficiency"]
                      / 2**30)
        sizes, inside = self.dims(blocks)
        nvlink = (self.node["nvlink_gib_s"], self.node["nvlink_latency_ns"])
        rail = (round(rail_gib_s, 6), self.node["inter_node_latency_ns"])
        links = [nvlink if d < inside else rail for d in range(len(sizes))]
        return {"topology": ["Switch"] * len(sizes), "npus_count": sizes,
                "bandwidth": [bw for bw, _ in links], "latency": [lat for _, lat in links]}

    def system_mapping(self, blocks: list[int] | None = None) -> dict[str, Any]:
        dims = self.dims(blocks)[0]
        all_reduce = ["halvingDoubling" if n & (n - 1) == 0 else "ring" for n in dims]
        return {
            "scheduling-policy": "FIFO", "collective-optimization": "localBWAware", "endpoint-delay": 10,
            # a collective is one chunk; up to 8 collectives (one per NCCL stream) run at once in a
            # dimension's queue, as NCCL runs communicators side by side
            "active-chunks-per-dimension": STREAMS_AT_ONCE, "preferred-dataset-splits": 1,
            "local-mem-bw": 1000000,
            "peak-perf": self.gpu["tensor_tflops"], "roofline-enabled": 0,
            "all-reduce-implementation": all_reduce, "all-gather-implementation": ["ring"] * len(dims),
            "reduce-scatter-implementation": ["ring"] * len(dims),
            "all-to-all-implementation": ["direct1"] * len(dims),
        }


def _positive(where: str, key: str, value: Any, integer: bool = False) -> Any:
    ok = (not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value) and value > 0
          and (not integer or isinstance(value, int)))
    if not ok:
        kind = "a positive integer" if integer else "a positive number"
        raise InputError(f"{where}.{key}: must be {kind} (got {value!r})")
    return value


def load_cluster(value: Any, where: str, base_dir: str = ".") -> Cluster:
    """The cluster a scenario's ``cluster:`` mapping names; errors name ``where.key``."""
    if not isinstance(value, dict):
        raise InputError(f"{where}: must be a mapping {{preset: NAME, gpus: N}} (got {value!r})")
    unknown = sorted(set(value) - CLUSTER_KEYS)
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(sorted(CLUSTER_KEYS))}")
    name = value.get("preset")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}.preset: must name a preset, one of {', '.join(presets())}, or a YAML "
                         f"file (got {name!r})")
    path = os.path.join(PRESET_DIR, f"{name}.yaml")
    if not os.path.exists(path):
        path = name if os.path.isabs(name) else os.path.join(base_dir, name)
        if not (name.endswith((".yaml", ".yml")) and os.path.isfile(path)):
            raise InputError(f"{where}.preset: {name!r} is not a preset ({', '.join(presets())}) nor a "
                             f"YAML file")
    doc = read_yaml_file(path, "cluster preset")
    gpu_fields = [f.name for f in fields(Gpu)]
    if not isinstance(doc, dict) or not isinstance(doc.get("gpu"), dict) or not isinstance(doc.get("node"), dict):
        raise InputError(f"{path}: a cluster preset needs mappings 'gpu' and 'node'")
    gpu = dict(doc["gpu"])
    overrides = value.get("gpu", {})
    if not isinstance(overrides, dict):
        raise InputError(f"{where}.gpu: must be a mapping of GPU figures to override")
    gpu.update(overrides)
    missing = [f for f in gpu_fields if f not in gpu]
    extra = sorted(set(gpu) - set(gpu_fields))
    if missing or extra:
        raise InputError(f"{path}: gpu: {'missing ' + ', '.join(missing) if missing else 'unknown ' + extra[0]}"
                         f" (fields: {', '.join(gpu_fields)})")
    for key in gpu_fields:
        if key == "name":
            continue
        if key == "fp8_tflops" and gpu[key] == 0:
            continue
        _positive(f"{where}.gpu" if key in overrides else f"{path}: gpu", key, gpu[key], integer=key == "sms")
    node = {k: doc["node"].get(k) for k in NODE_KEYS}
    if "gpus_per_node" in value:
        node["gpus"] = value["gpus_per_node"]
    for key in NODE_KEYS[1:]:
        if key in value:
            node[key] = value[key]
    for key in NODE_KEYS:
        src = f"{where}" if key in value or (key == "gpus" and "gpus_per_node" in value) else f"{path}: node"
        _positive(src, key if key != "gpus" or src == f"{path}: node" else "gpus_per_node", node[key],
                  integer=key == "gpus")
    gpus = _positive(where, "gpus", value.get("gpus"), integer=True)
    if gpus < 2:
        raise InputError(f"{where}.gpus: must be 2 or more (a run simulates a network between GPUs)")
    if gpus % node["gpus"] and gpus > node["gpus"]:
        raise InputError(f"{where}.gpus: {gpus} GPUs do not fill whole nodes of {node['gpus']}")
    if gpus < node["gpus"]:
        node["gpus"] = gpus  # part of one node
    return Cluster(name, gpus, gpu, node)
