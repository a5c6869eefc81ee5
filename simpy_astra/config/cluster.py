"""A scenario's ``cluster:``: a named machine (a preset) and a GPU count, instead of system,
network and backend inputs.

    cluster: {preset: dgx-a100-80gb, gpus: 1536, inter_node_gbit_s: 1600}

A preset is a YAML file (``simpy_astra/config/clusters/NAME.yaml``, or a path to a copy the
user edited) with the GPU's figures (:class:`~simpy_astra.workloads.megatron.kernels.Gpu`,
each with its datasheet or log in a comment) and the node: GPUs per node on NVSwitch, the
NVLink bandwidth and latency fitted by ``calibrate`` on an nccl-tests log, and the scale-out
NICs. Any ``node`` value may be overridden at the top level of ``cluster:``
(``inter_node_gbit_s``, ``gpus_per_node``...), any GPU value under ``gpu:``. Keys written
before units were spelled in names (``inter_node_gbps``, ``hbm_gbps``, ``l2_gbps``) are read
as their new names (:data:`~simpy_astra.config.cluster_fields.OLD_KEYS`); errors name a key as it was written.

The machine is a rail-optimised cluster: the GPUs of a node on NVSwitch, each GPU's NIC on its
own rail (its share of the node's scale-out bandwidth, at the efficiency NCCL sustains), the
rails' leaves joined by a spine of a stated ``oversubscription``. Every pair of GPUs is
charged on the route it takes (:mod:`simpy_astra.network.rails`, :meth:`Cluster.rails`);
:meth:`Cluster.dims` also writes both levels as ASTRA-sim dimensions in the job's rank order
so that folding applies. An all-reduce takes the time NCCL's tuning model predicts for its
group on these links (:mod:`simpy_astra.engine.nccl_collectives`: ring, tree or NVLS, NCCL's choice
unless ``nccl_algo`` forces one), and so do reduce-scatters and all-gathers (ring, NVLS in a
node or PAT at one GPU a node) and broadcasts (the ring alone), so the preset's NVLink and NIC latencies do not reach them
(NCCL's fitted latencies do); all-to-all
and point-to-point sends are played on the network, one chunk per collective and NCCL's fused
reduction (no separate local-memory pass); collectives of different NCCL streams run side by
side in a dimension's queue (``active-chunks-per-dimension``); compute nodes carry their own
times (no roofline).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from simpy_astra.config.cluster_fields import (
    CLUSTER_KEYS,
    GPU_RANGES,
    NODE_DEFAULTS,
    NODE_RANGES,
    OLD_KEYS,
    check_gpu_name,
    check_nccl_algo,
    gpu_count,
    no_empty_choice,
    node_value,
    positive,
    refuse_unknown,
    with_units,
)
from simpy_astra.config.cluster_presets import check_preset_blocks, preset_path
from simpy_astra.config.gpu_names import gpu_generation, no_multicast, nvls_of
from simpy_astra.config.gpu_overrides import check_gpu_generation, check_gpu_overrides
from simpy_astra.config.unknown_keys import nearest_key
from simpy_astra.config.yaml_reader import read_yaml_file
from simpy_astra.engine.nccl_collectives import NcclAllReduce
from simpy_astra.engine.nccl_names import NO_FORCED_ALGORITHM
from simpy_astra.engine.nccl_tuning import ALGORITHMS, Links
from simpy_astra.errors import InputError, InvalidConfigurationError, non_ascii
from simpy_astra.network.rails import Rails

# the GPU's figures live beside the kernels that use them; configs read them from here too
from simpy_astra.workloads.megatron.kernels import Gpu

#: collectives of different streams that run at once in one dimension's queue
STREAMS_AT_ONCE = 8
#: keys of the links between nodes: nothing on a one-node job
BETWEEN_NODES = {"inter_node_gbit_s", "inter_node_efficiency", "inter_node_latency_ns", "nodes_per_leaf",
                 "oversubscription"}
#: the keys only a node of two or more GPUs reads (its NVLink)
INSIDE_NODES = {"nvlink_gib_s", "nvlink_latency_ns", "nvls"}


@dataclass(frozen=True)
class Cluster:
    preset: str
    gpus: int
    gpu: dict[str, Any]  # the Gpu's fields
    node: dict[str, float]
    #: the algorithm forced for every collective that has it (``nccl_algo``, as NCCL_ALGO), None: NCCL's choice
    nccl_algo: str | None = None
    #: where it was written (``s.yaml: cluster``), for errors met while it runs
    where: str = field(default="cluster", compare=False)
    #: the nodes have NVSwitch-3 (NVLink SHARP: NCCL's NVLS): ``nvls`` as the scenario or the
    #: preset's node states it, else as the GPU's name implies (:func:`~simpy_astra.config.gpu_names.has_nvls`)
    nvls: bool = False
    #: why NVLS is off when only an unknown GPU name said so (a warning), else None
    nvls_note: str | None = field(default=None, compare=False)

    @property
    def gpus_per_node(self) -> int:
        """The GPUs a node holds (``node["gpus"]``, a preset's or ``gpus_per_node``)."""
        return int(self.node["gpus"])

    @property
    def nodes(self) -> int:
        return self.gpus // self.gpus_per_node

    def gpu_model(self) -> Gpu:
        return Gpu(**self.gpu)

    def idle_key_names(self, written: Iterable[str]) -> list[str]:
        """The keys ``written`` (by their current names) that change nothing at this size: the
        links between nodes of a one-node job, the spine under one leaf switch."""
        keys = {OLD_KEYS.get(k, k) for k in written}
        if self.gpus <= self.gpus_per_node:
            return sorted(keys & BETWEEN_NODES)
        idle = sorted(keys & INSIDE_NODES) if self.gpus_per_node == 1 else []
        if "oversubscription" in keys and self.nodes <= int(self.node["nodes_per_leaf"]):
            idle.append("oversubscription")
        if "nodes_per_leaf" in keys and self.rails().symmetric:
            idle.append("nodes_per_leaf")  # leaves differ only by the spine's share (rails.py)
        return idle

    def idle_keys(self, written: Iterable[str]) -> list[str]:
        """A line for each key ``written`` that changes nothing at this size
        (:meth:`idle_key_names`), with the size it applies from. Said, not refused: a sweep over
        ``gpus`` gives them to every point."""
        per_node, leaf = self.gpus_per_node, int(self.node["nodes_per_leaf"])
        if self.gpus <= per_node:
            return [f"{self.where}.{key} changes nothing here: the {self.gpus} GPUs sit in one node ({per_node} a "
                    f"node), so no message leaves it; it applies from {per_node + 1} GPUs"
                    for key in self.idle_key_names(written)]
        why = {"oversubscription": f"the {self.nodes} nodes sit under one leaf switch (nodes_per_leaf {leaf}), so "
                                   f"no message crosses the spine; it applies from {leaf + 1} nodes "
                                   f"({(leaf + 1) * per_node} GPUs)",
               "nodes_per_leaf": "with oversubscription 1 (a full fat tree) a message across the spine has the "
                                 "bandwidth and latency of one under a leaf (docs/megatron.md); it applies with "
                                 "oversubscription above 1"}
        # under a spine of 2:1 and more, the leaves' size decides which pairs cross it: not said
        # to change nothing while the job fits one leaf (its oversubscription is said so)
        said = [k for k in self.idle_key_names(written) if k != "nodes_per_leaf" or self.rails().oversubscription == 1]
        return [f"{self.where}.{key} changes nothing here: " + why.get(key, "each node holds one GPU (gpus_per_node "
                                                                          "1), so no message crosses NVLink; it "
                                                                          "applies from 2 GPUs a node")
                for key in said]

    def dims(self, blocks: list[int] | None = None) -> tuple[list[int], int]:
        """The network's dimensions (sizes, and how many of them are inside a node).

        Without ``blocks``: a node's GPUs on one NVSwitch dimension, all nodes on one more.
        ``blocks`` are the job's parallel dimensions in rank order, fastest first (Megatron:
        tp, cp, dp, pp): each becomes a dimension of its own where it falls inside a node or
        across whole nodes (one that straddles the node boundary is split there). In the
        congestion-unaware model both are the same machine (a message costs its route's NVLink
        and rail bandwidth and latency, :mod:`simpy_astra.network.rails`, whichever dimensions
        the pair differs in); the second lets folding see that GPUs of one role are alike."""
        per_node = self.gpus_per_node
        # one GPU a node: no dimension inside one (a dimension of one NPU is no network's)
        plain = ([per_node, self.nodes] if per_node > 1 else [self.nodes]) if self.nodes > 1 else [per_node], \
            int(per_node > 1)
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

    def rail_gib_s(self) -> float:
        """One GPU's NIC (its rail): its share of the node's scale-out line rate, at the
        efficiency NCCL sustains, in GiB/s as the network's bandwidths."""
        node = self.node
        return node["inter_node_gbit_s"] / node["gpus"] / 8 * 1e9 * node["inter_node_efficiency"] / 2**30

    def rail_link_gib_s(self) -> float:
        """:meth:`rail_gib_s` as the network's links carry it (their bandwidths keep 6 decimals)."""
        return round(self.rail_gib_s(), 6)

    def rails(self) -> Rails:
        """The machine's routes (:mod:`simpy_astra.network.rails`) that every pair is charged on."""
        node = self.node
        return Rails(int(node["gpus"]), node["nvlink_gib_s"], node["nvlink_latency_ns"], self.rail_link_gib_s(),
                     node["inter_node_latency_ns"], max(self.nodes, 1), int(node["nodes_per_leaf"]),
                     float(node["oversubscription"]))

    def nccl_all_reduce(self) -> NcclAllReduce:
        """The all-reduce as NCCL times it on this machine (:mod:`simpy_astra.engine.nccl_collectives`):
        NVLink and each NIC at the preset's sustained rates, in NCCL's GB/s, and NCCL's latencies
        scaled and the call's fixed cost added as ``calibrate --nccl-algo`` fitted them on the
        preset's log."""
        gb_s = 2**30 / 1e9
        node = self.node
        scale = float(node["nccl_latency_scale"])
        # the scale is of the algorithm its log range ran (nccl_latency_scale_algo), NCCL's own
        # latencies elsewhere; without the key, every algorithm's
        fitted_on = node.get("nccl_latency_scale_algo")
        # LL and LL128 on a node's NVLink as the preset's log shows them (a node's all-reduce is
        # a ring: NCCL's tree is a chain there)
        protocols = {"LL": (float(node["nccl_node_ll_bandwidth_scale"]), 1.0),
                     "LL128": (float(node["nccl_node_ll128_bandwidth_scale"]),
                               float(node["nccl_node_ll128_latency_scale"]))}
        links = Links(node["nvlink_gib_s"] * gb_s, self.rail_gib_s() * gb_s, self.nvls,
                      efficiency=tuple((algo, float(node[f"nccl_{algo}_efficiency"])) for algo in ALGORITHMS),
                      latency_scale=tuple((algo, scale if fitted_on in (None, algo) else 1.0) for algo in (*ALGORITHMS, "pat")),
                      launch_us=float(node["nccl_launch_us"]),
                      protocol_scale=tuple((f"ring {proto} in a node", bw, lat) for proto, (bw, lat) in protocols.items()),
                      generation=gpu_generation(str(self.gpu["name"])))
        return NcclAllReduce(self.rails(), links, self.nccl_algo, self.where)

    def network_mapping(self, blocks: list[int] | None = None) -> dict[str, Any]:
        sizes, inside = self.dims(blocks)
        nvlink = (self.node["nvlink_gib_s"], self.node["nvlink_latency_ns"])
        rail = (self.rail_link_gib_s(), self.node["inter_node_latency_ns"])
        links = [nvlink if d < inside else rail for d in range(len(sizes))]
        return {"topology": ["Switch"] * len(sizes), "npus_count": sizes,
                "bandwidth": [bw for bw, _ in links], "latency": [lat for _, lat in links]}

    def system_mapping(self, blocks: list[int] | None = None, dims: list[int] | None = None) -> dict[str, Any]:
        """The preset's system, an algorithm per dimension of its network (:meth:`dims`), or of
        ``dims``, a network of the scenario's own (its NPUs per dimension)."""
        dims = self.dims(blocks)[0] if dims is None else dims
        all_reduce = ["halvingDoubling" if n & (n - 1) == 0 else "ring" for n in dims]
        if self.nccl_algo == "ring":  # NCCL_ALGO=Ring: rings on every dimension and group
            all_reduce = ["ring"] * len(dims)
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
            # a group's all-to-all (expert parallelism) as NCCL sends it: each peer directly,
            # not the ring the reference's rule gives a subset group of a many-dimension network
            "all-to-all-group-implementation": "direct1",
        }


def load_cluster(value: Any, where: str, base_dir: str = ".") -> Cluster:
    """The cluster a scenario's ``cluster:`` mapping names. A value is blamed where it was
    written: ``where.key`` for the scenario's, ``<preset file>: node.key`` / ``gpu.key`` for
    the preset's."""
    if not isinstance(value, dict):
        raise InputError(f"{where}: must be a mapping {{preset: NAME, gpus: N}} (got {value!r})")
    value, written = with_units(value, where)
    unknown = sorted(set(value) - CLUSTER_KEYS)
    if unknown:
        near = nearest_key(str(unknown[0]), CLUSTER_KEYS)
        hint = f"did you mean {near!r}?" if near else f"known: {', '.join(sorted(CLUSTER_KEYS))}"
        raise InputError(f"{where}: unknown key {unknown[0]!r}{non_ascii(unknown[0])}; {hint}")
    no_empty_choice(value, written, where)
    name = value.get("preset")
    path = preset_path(name, where, base_dir)
    doc = read_yaml_file(path, "cluster preset")
    gpu_fields = [f.name for f in fields(Gpu)]
    check_preset_blocks(doc, path)
    overrides = value.get("gpu", {})
    preset_gpu, preset_gpu_names = with_units(doc["gpu"], f"{path}: gpu")
    check_gpu_overrides(overrides, preset_gpu, where, path)
    overrides, override_names = with_units(overrides, f"{where}.gpu")
    for source, given in ((f"{path}: gpu", preset_gpu), (f"{where}.gpu", overrides)):
        refuse_unknown(given, gpu_fields, source)
    check_gpu_generation(overrides, preset_gpu, where, path)
    gpu = {**preset_gpu, **overrides}
    missing = [f for f in gpu_fields if f not in gpu]
    if missing:
        raise InputError(f"{path}: gpu: missing {', '.join(missing)} (fields: {', '.join(gpu_fields)})")
    check_gpu_name(gpu["name"], f"{where}.gpu.name" if "name" in overrides else f"{path}: gpu.name")
    for key in gpu_fields:
        if key == "name" or (key in ("fp8_tflops", "fp8_efficiency") and gpu[key] == 0 == gpu["fp8_tflops"]):
            continue
        source, names = (f"{where}.gpu", override_names) if key in overrides else (f"{path}: gpu", preset_gpu_names)
        if key == "fp8_efficiency" and gpu[key] == 0 and key not in overrides and "fp8_tflops" in overrides:
            label = override_names["fp8_tflops"]  # the scenario gave FP8 to a preset GPU without it
            raise InputError(f"{where}.gpu.{label}: {gpu['fp8_tflops']!r} on a GPU without FP8 ({path}: "
                             f"gpu.fp8_efficiency is 0); give cluster.gpu.fp8_efficiency too (a fraction of "
                             f"the FP8 peak), or leave fp8_tflops out")
        positive(source, names.get(key, key), gpu[key], integer=key == "sms", bounds=GPU_RANGES.get(key))
    preset_node, node_names = with_units(doc["node"], f"{path}: node")
    no_empty_choice(preset_node, node_names, f"{path}: node")
    nvls, why_nvls, nvls_note = nvls_of(value, preset_node, str(gpu["name"]), where, path)
    refuse_unknown(preset_node, [*NODE_RANGES, "nvls", "nccl_latency_scale_algo"], f"{path}: node")
    node: dict[str, Any] = {}
    for key in NODE_RANGES:
        given = "gpus_per_node" if key == "gpus" else key
        if given in value:
            source, label, raw = where, written[given], value[given]
        elif key in preset_node:
            source, label, raw = f"{path}: node", node_names[key], preset_node[key]
        elif key in NODE_DEFAULTS:
            source, label, raw = f"{path}: node", key, NODE_DEFAULTS[key]
        else:
            needed = [k for k in NODE_RANGES if k not in NODE_DEFAULTS]  # the rest have defaults: not to be listed as due
            raise InputError(f"{path}: node: missing {key} (each node states {', '.join(needed)}; the nccl_* "
                             f"fits, nvls, nodes_per_leaf and oversubscription may be left out)")
        node[key] = node_value(key, raw, source, label)
    for source, scoped in ((f"{path}: node", preset_node), (where, value)):
        if "nccl_latency_scale_algo" in scoped:
            check_nccl_algo(scoped["nccl_latency_scale_algo"], f"{source}.nccl_latency_scale_algo", "the algorithm "
                            "nccl_latency_scale was fitted on", "for every algorithm", ALGORITHMS)
            node["nccl_latency_scale_algo"] = scoped["nccl_latency_scale_algo"]
    if "nccl_latency_scale_algo" in node and "nccl_latency_scale" not in value and "nccl_latency_scale" not in preset_node:
        # the scale is then NODE_DEFAULTS' 1, NCCL's own latencies, whatever algorithm it names
        source = where if "nccl_latency_scale_algo" in value else f"{path}: node"
        raise InputError(f"{source}.nccl_latency_scale_algo: names the algorithm nccl_latency_scale was fitted on, "
                         f"but no nccl_latency_scale is given (1: NCCL's own latencies), so it would change "
                         f"nothing; give nccl_latency_scale or remove nccl_latency_scale_algo")
    algo = value.get("nccl_algo")
    check_nccl_algo(algo, f"{where}.nccl_algo")
    if algo == "nvls" and not nvls:  # NCCL stops at its first collective, as at an all-reduce of one GPU a node
        why_not = no_multicast(str(gpu["name"]), str(name))
        said = (f"nvls, but {why_not}; use ring or tree, or an H100 preset (preset: dgx-h100)" if why_not else
                f"nvls needs NVSwitch-3 (NVLink SHARP) in the nodes, and {why_nvls}; use ring or tree (or nvls: true, "
                f"for nodes that have it)")
        raise InvalidConfigurationError(f"{where}.nccl_algo: {said}", NO_FORCED_ALGORITHM)
    gpus = gpu_count(value.get("gpus"), where, "gpus")
    if gpus % node["gpus"] and gpus > node["gpus"]:
        per = node["gpus"]
        raise InputError(f"{where}.gpus: {gpus} GPUs do not fill whole nodes of {per}; use "
                         f"{gpus // per * per} or {(gpus // per + 1) * per} (or fewer than {per}: part of one node)")
    if gpus < node["gpus"]:
        node["gpus"] = gpus  # part of one node
    cluster = Cluster(name, gpus, gpu, node, algo, where, nvls, nvls_note)
    if cluster.rail_link_gib_s() <= 0:
        raise InputError(f"{where}: {written.get('inter_node_gbit_s', 'inter_node_gbit_s')} "
                         f"{node['inter_node_gbit_s']:g} x inter_node_efficiency "
                         f"{node['inter_node_efficiency']:g} over {node['gpus']} GPUs leaves each NIC "
                         f"{cluster.rail_gib_s():.3g} GiB/s, under the 1e-6 GiB/s a network link may have; "
                         f"raise either")
    return cluster


