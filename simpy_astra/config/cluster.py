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
as their new names (:data:`OLD_KEYS`); errors name a key as it was written.

The machine is a rail-optimised cluster: the GPUs of a node on NVSwitch, each GPU's NIC on its
own rail (its share of the node's scale-out bandwidth, at the efficiency NCCL sustains), the
rails' leaves joined by a spine of a stated ``oversubscription``. Every pair of GPUs is
charged on the route it takes (:mod:`simpy_astra.network.rails`, :meth:`Cluster.rails`);
:meth:`Cluster.dims` also writes both levels as ASTRA-sim dimensions in the job's rank order
so that folding applies. An all-reduce takes the time NCCL's tuning model predicts for its
group on these links (:mod:`simpy_astra.engine.nccl_collectives`: ring, tree or NVLS, NCCL's choice
unless ``nccl_algo`` forces one), and so do reduce-scatters and all-gathers (ring, NVLS in a
node or PAT at one GPU a node), so the preset's NVLink and NIC latencies do not reach them
(NCCL's fitted latencies do); all-to-all
and point-to-point sends are played on the network, one chunk per collective and NCCL's fused
reduction (no separate local-memory pass); collectives of different NCCL streams run side by
side in a dimension's queue (``active-chunks-per-dimension``); compute nodes carry their own
times (no roofline).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from simpy_astra.config.readers import nearest_key, read_yaml_file, show_value
from simpy_astra.engine.nccl_collectives import NcclAllReduce
from simpy_astra.engine.nccl_tuning import ALGORITHMS, Links
from simpy_astra.errors import InputError, integer_fix, non_ascii
from simpy_astra.infra import files
from simpy_astra.network.rails import Rails

# the GPU's figures live beside the kernels that use them; configs read them from here too
from simpy_astra.workloads.megatron.kernels import Gpu

#: collectives of different streams that run at once in one dimension's queue
STREAMS_AT_ONCE = 8
PRESET_DIR = os.path.join(os.path.dirname(__file__), "clusters")
#: keys written before units were spelled in names (simpy_astra/infra/units.py), read as their new names
#: keys of the links between nodes: nothing on a one-node job
BETWEEN_NODES = {"inter_node_gbit_s", "inter_node_efficiency", "inter_node_latency_ns", "nodes_per_leaf",
                 "oversubscription"}
OLD_KEYS = {"inter_node_gbps": "inter_node_gbit_s", "hbm_gbps": "hbm_gb_s", "l2_gbps": "l2_gb_s"}
CLUSTER_KEYS = {"preset", "gpus", "gpu", "inter_node_gbit_s", "gpus_per_node", "nvlink_gib_s",
                "nvlink_latency_ns", "inter_node_efficiency", "inter_node_latency_ns", "nodes_per_leaf",
                "oversubscription", "nccl_algo", "nccl_latency_scale", "nccl_latency_scale_algo", "nccl_launch_us",
                "nccl_node_ll_bandwidth_scale", "nccl_node_ll128_bandwidth_scale",
                "nccl_node_ll128_latency_scale", "nccl_ring_efficiency", "nccl_tree_efficiency",
                "nccl_nvls_efficiency", "nvls"}


def presets() -> list[str]:
    return sorted(f[:-5] for f in os.listdir(PRESET_DIR) if f.endswith(".yaml"))


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
    #: preset's node states it, else as the GPU's name implies (:func:`has_nvls`)
    nvls: bool = False
    #: why NVLS is off when only an unknown GPU name said so (a warning), else None
    nvls_note: str | None = field(default=None, compare=False)

    @property
    def nodes(self) -> int:
        return self.gpus // int(self.node["gpus"])

    def gpu_model(self) -> Gpu:
        return Gpu(**self.gpu)

    def idle_key_names(self, written: Iterable[str]) -> list[str]:
        """The keys ``written`` (by their current names) that change nothing at this size: the
        links between nodes of a one-node job, the spine under one leaf switch."""
        keys = {OLD_KEYS.get(k, k) for k in written}
        if self.gpus <= int(self.node["gpus"]):
            return sorted(keys & BETWEEN_NODES)
        if "oversubscription" in keys and self.nodes <= int(self.node["nodes_per_leaf"]):
            return ["oversubscription"]
        return []

    def idle_keys(self, written: Iterable[str]) -> list[str]:
        """A line for each key ``written`` that changes nothing at this size
        (:meth:`idle_key_names`), with the size it applies from. Said, not refused: a sweep over
        ``gpus`` gives them to every point."""
        per_node, leaf = int(self.node["gpus"]), int(self.node["nodes_per_leaf"])
        if self.gpus <= per_node:
            return [f"{self.where}.{key} changes nothing here: the {self.gpus} GPUs sit in one node ({per_node} a "
                    f"node), so no message leaves it; it applies from {per_node + 1} GPUs"
                    for key in self.idle_key_names(written)]
        return [f"{self.where}.oversubscription changes nothing here: the {self.nodes} nodes sit under one leaf "
                f"switch (nodes_per_leaf {leaf}), so no message crosses the spine; it applies from {leaf + 1} "
                f"nodes ({(leaf + 1) * per_node} GPUs)" for _ in self.idle_key_names(written)]

    def dims(self, blocks: list[int] | None = None) -> tuple[list[int], int]:
        """The network's dimensions (sizes, and how many of them are inside a node).

        Without ``blocks``: a node's GPUs on one NVSwitch dimension, all nodes on one more.
        ``blocks`` are the job's parallel dimensions in rank order, fastest first (Megatron:
        tp, cp, dp, pp): each becomes a dimension of its own where it falls inside a node or
        across whole nodes (one that straddles the node boundary is split there). In the
        congestion-unaware model both are the same machine (a message costs its route's NVLink
        and rail bandwidth and latency, :mod:`simpy_astra.network.rails`, whichever dimensions
        the pair differs in); the second lets folding see that GPUs of one role are alike."""
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

    def system_mapping(self, blocks: list[int] | None = None) -> dict[str, Any]:
        dims = self.dims(blocks)[0]
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


#: every physical value a cluster may state: (smallest, largest, unit); a value outside is a typo
#: or a unit slip (Gb/s for GB/s), refused naming the file and key it came from
NODE_RANGES: dict[str, tuple[float, float, str]] = {
    "gpus": (1, 1024, "GPUs per node"),
    # NVLink 5 moves 900 GB/s a GPU, 9e11 B/s: B/s given for GiB/s (1e11 and up) is refused, while
    # 1e9 GiB/s stays, the "instant" link a study times a step without its transfers by
    "nvlink_gib_s": (1e-3, 1e9, "GiB/s per GPU and direction, not B/s"),
    "nvlink_latency_ns": (0, 1e12, "ns"),
    "inter_node_gbit_s": (1e-3, 1e7, "Gb/s per node, not bit/s"),
    "inter_node_efficiency": (0, 1, "a fraction of the NICs' line rate"),
    "inter_node_latency_ns": (0, 1e12, "ns"),
    "nodes_per_leaf": (1, 1_000_000, "nodes under one leaf switch of each rail"),
    "oversubscription": (1, 64, "leaf down-links per spine up-link, 1 = a full fat tree"),
    "nccl_latency_scale": (0, 1000, "NCCL's Simple latency x this, as calibrate --nccl-algo fits it"),
    "nccl_launch_us": (0, 1e6, "microseconds, one NCCL call's fixed cost, as calibrate --nccl-algo fits it"),
    "nccl_ring_efficiency": (1e-3, 10, "the share of the links NCCL's ring sustains, as calibrate --nccl-algo fits it"),
    "nccl_tree_efficiency": (1e-3, 10, "the share of the links NCCL's tree sustains, as calibrate --nccl-algo fits it"),
    "nccl_nvls_efficiency": (1e-3, 10, "the share of NCCL's own NVLS estimate the machine sustains, "
                                       "as calibrate --nccl-algo fits it"),
    "nccl_node_ll_bandwidth_scale": (1e-3, 1000, "LL's bandwidth in a node over NCCL's, as calibrate --nccl-algo fits it"),
    "nccl_node_ll128_bandwidth_scale": (1e-3, 1000,
                                        "LL128's bandwidth in a node over NCCL's, as calibrate --nccl-algo fits it"),
    "nccl_node_ll128_latency_scale": (1e-3, 1000,
                                      "LL128's latency in a node over NCCL's, as calibrate --nccl-algo fits it"),
}
#: node keys that may be 0 (a cost a machine can be without)
NODE_MAY_BE_ZERO = frozenset({"nccl_launch_us"})
#: node values a preset may leave out, and what they are then
NODE_DEFAULTS = {"nodes_per_leaf": 32, "oversubscription": 1, "nccl_latency_scale": 1, "nccl_launch_us": 0,
                 "nccl_ring_efficiency": 1, "nccl_tree_efficiency": 1, "nccl_nvls_efficiency": 1,
                 "nccl_node_ll_bandwidth_scale": 1, "nccl_node_ll128_bandwidth_scale": 1,
                 "nccl_node_ll128_latency_scale": 1}
#: every GPU figure's (smallest, largest, unit): wide of any GPU made, so that what is outside is
#: a typo or a unit slip (a tensor rate of 1e-300 TFLOP/s would give kernels no trace can hold)
GPU_RANGES: dict[str, tuple[float, float, str]] = {
    "sms": (1, 100_000, "streaming multiprocessors"),
    "tensor_tflops": (1e-3, 1e6, "dense fp16/bf16 TFLOP/s"),
    "fp8_tflops": (1e-3, 1e7, "dense fp8 TFLOP/s, or 0 for none"),
    "hbm_gb_s": (1e-3, 1e8, "GB/s"),
    "hbm_gib": (1e-3, 1e7, "GiB"),
    "l2_gb_s": (1e-3, 1e9, "GB/s"),
    "launch_us": (1e-6, 1e6, "microseconds between back-to-back kernels"),
    "tensor_efficiency": (0, 1, "a fraction of the tensor-core peak"),
    "fp8_efficiency": (0, 1, "a fraction of the FP8 tensor-core peak, or 0 for a GPU without FP8"),
    "memory_efficiency": (0, 1, "a fraction of the HBM bandwidth"),
    "attention_efficiency": (0, 1, "a fraction of the tensor-core peak a fused attention kernel sustains"),
}
#: the most GPUs a cluster may have (2^18), the largest any workload builds: a Megatron job's
#: rank layout and communicator groups hold a few entries per GPU, and per-GPU tables of a
#: larger run outgrow a machine's memory; one bound, so a count this states is not then refused
MAX_GPUS = 1 << 18
#: the cluster fields that count things, which take whole numbers (``gpu.sms``: a GPU's field)
INTEGER_FIELDS = ("gpus", "gpus_per_node", "nodes_per_leaf", "gpu.sms")
#: NCCL's all-reduce algorithms a scenario may name (``NCCL_ALGO``); absent: NCCL's choice
NCCL_ALGOS = ("ring", "tree", "nvls")
#: GPUs whose boards put them on NVSwitch-3 (NVLink SHARP, NCCL's NVLS): Hopper's and later
#: (H20 and H800 are Hopper's export boards, B300 and GB300 Blackwell Ultra's)
NVLS_GPUS = ("H100", "H200", "H800", "H20", "GH200", "B100", "B200", "GB200", "B300", "GB300")


#: GPUs whose boards have no NVSwitch-3: their name turns NVLS off without a word
NO_NVLS_GPUS = ("A100", "A800", "A30", "A40", "A10", "V100", "P100", "L40", "L4", "T4")
#: a PCIe card (H100 PCIe, H100 NVL: NVLink bridges between two or four cards at most) sits on
#: no NVSwitch, whatever its chip; NVL72 and NVL36 are racks of NVSwitches
_NO_SWITCH = re.compile(r"PCIE|NVL(?![\dI])")


#: GPU generations as NCCL indexes its constants (by compute capability: Ada counts as Ampere,
#: Turing and Pascal as Volta), each by the chips' names; "GB200" holds "B200", "GH200" "H200"
GENERATIONS = (("blackwell", ("B100", "B200", "B300")), ("hopper", ("H100", "H200", "H800", "H20")),
               ("ampere", ("A100", "A800", "A30", "A40", "A10", "L40", "L4")), ("volta", ("V100", "P100", "T4")))


def gpu_generation(gpu_name: str) -> str:
    """The GPU's generation by its name (a key of NCCL's per-generation constants), "" if not known."""
    name = gpu_name.upper()
    return next((gen for gen, chips in GENERATIONS if any(chip in name for chip in chips)), "")


def has_nvls(gpu_name: str) -> bool:
    """Whether a node of these GPUs has NVLink SHARP (NVLS), by the GPU's name."""
    name = gpu_name.upper()
    return not _NO_SWITCH.search(name) and any(chip in name for chip in NVLS_GPUS)


def _nvls(value: dict, preset_node: dict, gpu_name: str, where: str, path: str) -> tuple[bool, str, str | None]:
    """(whether the nodes have NVLS, what said so, a warning or None). ``cluster.nvls``, else
    the preset's ``node.nvls``, else the GPU's name: a name known neither way (a copy of a preset
    for a newer GPU, a name edited) turned NVLS off in silence; now it says so and how to turn it on."""
    for given, source in ((value.get("nvls"), f"{where}.nvls"), (preset_node.get("nvls"), f"{path}: node.nvls")):
        if given is None:
            continue
        if not isinstance(given, bool):
            raise InputError(f"{source}: must be true or false (whether the nodes have NVSwitch-3, NCCL's NVLS; "
                             f"got {given!r})")
        return given, f"{source} is {str(given).lower()}", None
    if has_nvls(gpu_name):
        return True, f"the GPU {gpu_name} has it", None
    if _NO_SWITCH.search(gpu_name.upper()):
        return False, f"the GPU {gpu_name} is a PCIe card, on no NVSwitch", None
    said = f"the GPU {gpu_name} has none (NVLS GPUs: {', '.join(NVLS_GPUS)})"
    if any(name in gpu_name.upper() for name in NO_NVLS_GPUS):
        return False, said, None
    return False, said, (f"{where}: NVLS off: GPU name {gpu_name!r} is none of {', '.join(NVLS_GPUS)} and no nvls "
                         f"key says; set nvls: true (cluster or the preset's node) if its nodes have NVSwitch-3, "
                         f"false to say they do not")


def _positive(where: str, key: str, value: Any, integer: bool = False,
              bounds: tuple[float, float, str] | None = None) -> Any:
    number = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
    kind = "a positive integer" if integer else "a positive number"
    fix = integer_fix(value, 1, int(bounds[1]) if bounds is not None else None) if integer else ""
    if number and bounds is not None and not fix:  # 0, 5 and 1e6 SMs alike: the range, no integer to write
        low, high, unit = bounds
        if not ((0 < value <= high) if low == 0 else (low <= value <= high)):
            span = f"in (0, {high:g}]" if low == 0 else f"between {low:g} and {high:g}"
            raise InputError(f"{where}.{key}: must be {span} ({unit}; got {value!r})")
    if not (number and value > 0 and (not integer or isinstance(value, int))):
        raise InputError(f"{where}.{key}: must be {kind} (got {value!r}){fix}")
    return value


def _with_units(mapping: dict, where: str) -> tuple[dict, dict[str, str]]:
    """``mapping`` under the names with units (:data:`OLD_KEYS` renamed), and each name -> the
    name as written. An older name beside its new one is one field given twice, refused as YAML
    refuses a key written twice (the later silently won); a sweep's axis in one name over a base
    in the other replaces the base's (:func:`simpy_astra.sweep.base_scenario.set_path`)."""
    renamed: dict[Any, Any] = {}
    written: dict[str, str] = {}
    for key, value in mapping.items():
        new = OLD_KEYS.get(key, key)
        if new in renamed:
            older = key if key in OLD_KEYS else written[new]
            raise InputError(f"{where}: {written[new]} and {key} are one field ({older} is the older name of "
                             f"{new}); keep one")
        renamed[new] = value
        written[new] = key
    return renamed, written


def _preset_path(name: Any, where: str, base_dir: str) -> str:
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}.preset: must name a preset, one of {', '.join(presets())}, or a YAML "
                         f"file (got {name!r})")
    path = os.path.join(PRESET_DIR, f"{name}.yaml")
    if not os.path.exists(path):
        path = os.path.normpath(name if os.path.isabs(name) else os.path.join(base_dir, name))
        if name.endswith((".yaml", ".yml")) and not os.path.isfile(path):
            _unreadable_preset(name, path, where, base_dir)
        if os.path.lexists(path) and not name.endswith((".yaml", ".yml")):  # my.YAML, ./my-cluster, a folder
            if os.path.isfile(path):
                return path  # a file named as a path is the user's copy, whatever its suffix
            _unreadable_preset(name, path, where, base_dir)
        if not (name.endswith((".yaml", ".yml")) and os.path.isfile(path)):
            hint = _nearest_presets(name)
            raise InputError(f"{where}.preset: {name!r}{non_ascii(name)} is not a preset ({', '.join(presets())}) "
                             f"nor a YAML file{hint}")
    return path


def _nearest_presets(name: str) -> str:
    """'; did you mean ...?' naming every preset whose name holds ``name`` in any case, ``_`` for
    ``-`` (``dgx-a100``: both A100s; ``H100``), else nothing: the closest spelling would send
    ``dgx-h200`` to the H100, another GPU."""
    folded = name.strip().lower().replace("_", "-")
    near = [p for p in presets() if len(folded) >= 3 and folded in p]
    return f"; did you mean {' or '.join(near)}?" if near else ""


def _unreadable_preset(name: str, path: str, where: str, base_dir: str) -> None:
    """A preset file named but not there (or not a file): where it was looked for, or what it
    is, rather than 'is not a preset nor a YAML file' of a name that is plainly a YAML file's."""
    if not os.path.lexists(path):
        stem = os.path.basename(name).rsplit(".", 1)[0]
        if stem in presets() and os.path.dirname(name) in ("", "."):  # a preset's name with its file's suffix
            raise InputError(f"{where}.preset: {name!r} is no file here; the preset is named {stem} (without "
                             f".yaml; a file name is a copy of your own)")
        whence = "" if os.path.isabs(name) else f" (a relative path resolves from {files.show(os.path.abspath(base_dir))})"
        raise InputError(f"{where}.preset: {name!r} is {files.show(os.path.abspath(path))}, which does not "
                         f"exist{whence}")
    try:
        files.check_input(path, "cluster preset YAML")
    except InputError as exc:
        raise InputError(f"{where}.preset: {exc.message}") from None


def load_cluster(value: Any, where: str, base_dir: str = ".") -> Cluster:
    """The cluster a scenario's ``cluster:`` mapping names. A value is blamed where it was
    written: ``where.key`` for the scenario's, ``<preset file>: node.key`` / ``gpu.key`` for
    the preset's."""
    if not isinstance(value, dict):
        raise InputError(f"{where}: must be a mapping {{preset: NAME, gpus: N}} (got {value!r})")
    value, written = _with_units(value, where)
    unknown = sorted(set(value) - CLUSTER_KEYS)
    if unknown:
        near = nearest_key(str(unknown[0]), CLUSTER_KEYS)
        hint = f"did you mean {near!r}?" if near else f"known: {', '.join(sorted(CLUSTER_KEYS))}"
        raise InputError(f"{where}: unknown key {unknown[0]!r}{non_ascii(unknown[0])}; {hint}")
    _no_empty_choice(value, written, where)
    name = value.get("preset")
    path = _preset_path(name, where, base_dir)
    doc = read_yaml_file(path, "cluster preset")
    gpu_fields = [f.name for f in fields(Gpu)]
    _preset_blocks(doc, path)
    overrides = value.get("gpu", {})
    if not isinstance(overrides, dict):
        raise InputError(f"{where}.gpu: must be a mapping of GPU figures to override")
    preset_gpu, preset_gpu_names = _with_units(doc["gpu"], f"{path}: gpu")
    overrides, override_names = _with_units(overrides, f"{where}.gpu")
    for source, given in ((f"{path}: gpu", preset_gpu), (f"{where}.gpu", overrides)):
        _refuse_unknown(given, gpu_fields, source)
    gpu = {**preset_gpu, **overrides}
    missing = [f for f in gpu_fields if f not in gpu]
    if missing:
        raise InputError(f"{path}: gpu: missing {', '.join(missing)} (fields: {', '.join(gpu_fields)})")
    _gpu_name(gpu["name"], f"{where}.gpu.name" if "name" in overrides else f"{path}: gpu.name")
    for key in gpu_fields:
        if key == "name" or (key in ("fp8_tflops", "fp8_efficiency") and gpu[key] == 0 == gpu["fp8_tflops"]):
            continue
        source, names = (f"{where}.gpu", override_names) if key in overrides else (f"{path}: gpu", preset_gpu_names)
        if key == "fp8_efficiency" and gpu[key] == 0 and key not in overrides and "fp8_tflops" in overrides:
            label = override_names["fp8_tflops"]  # the scenario gave FP8 to a preset GPU without it
            raise InputError(f"{where}.gpu.{label}: {gpu['fp8_tflops']!r} on a GPU without FP8 ({path}: "
                             f"gpu.fp8_efficiency is 0); give cluster.gpu.fp8_efficiency too (a fraction of "
                             f"the FP8 peak), or leave fp8_tflops out")
        _positive(source, names.get(key, key), gpu[key], integer=key == "sms", bounds=GPU_RANGES.get(key))
    preset_node, node_names = _with_units(doc["node"], f"{path}: node")
    _no_empty_choice(preset_node, node_names, f"{path}: node")
    nvls, why_nvls, nvls_note = _nvls(value, preset_node, str(gpu["name"]), where, path)
    _refuse_unknown(preset_node, [*NODE_RANGES, "nvls", "nccl_latency_scale_algo"], f"{path}: node")
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
        node[key] = _node_value(key, raw, source, label)
    for source, scoped in ((f"{path}: node", preset_node), (where, value)):
        if "nccl_latency_scale_algo" in scoped:
            _nccl_algo(scoped["nccl_latency_scale_algo"], f"{source}.nccl_latency_scale_algo", "the algorithm "
                       "nccl_latency_scale was fitted on", "for every algorithm")
            node["nccl_latency_scale_algo"] = scoped["nccl_latency_scale_algo"]
    algo = value.get("nccl_algo")
    _nccl_algo(algo, f"{where}.nccl_algo")
    if algo == "nvls" and not nvls:
        raise InputError(f"{where}.nccl_algo: nvls needs NVSwitch-3 (NVLink SHARP) in the nodes, and {why_nvls}; "
                         f"use ring or tree (or nvls: true, for nodes that have it)")
    gpus = _gpu_count(value.get("gpus"), where, "gpus")
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


def _preset_blocks(doc: Any, path: str) -> None:
    """Refuse a preset file that is not the two mappings ``gpu`` and ``node``, naming the block
    misspelt (``nodes``), missing or not a mapping: our own format, so a key no reader uses is a typo."""
    if not isinstance(doc, dict):
        raise InputError(f"{path}: must be a mapping with blocks 'gpu' and 'node' (got {show_value(doc)})")
    extra = sorted(str(k) for k in set(doc) - {"gpu", "node"})
    if extra:
        near = nearest_key(extra[0], ["gpu", "node"])
        raise InputError(f"{path}: unknown key {extra[0]!r}{non_ascii(extra[0])}" + (
            f"; did you mean {near!r}?" if near else " (a preset has blocks gpu and node only)"))
    for block, what, first in (("gpu", "GPU", "name, sms"), ("node", "node", "gpus, nvlink_gib_s")):
        if block not in doc:
            raise InputError(f"{path}: missing block '{block}' (a mapping of the {what}'s figures: {first}, ...)")
        if not isinstance(doc[block], dict):
            raise InputError(f"{path}: {block}: must be a mapping of the {what}'s figures ({first}, ...); got "
                             f"{show_value(doc[block])}")


def _refuse_unknown(given: dict, known: list[str], source: str) -> None:
    """Refuse a key of a ``gpu``/``node`` block no reader uses, naming the known key it most
    likely misspells (every key only when none is near)."""
    extra = sorted(str(k) for k in set(given) - set(known))
    if extra:
        near = nearest_key(extra[0], known)
        hint = f"; did you mean {near!r}?" if near else f" (keys: {', '.join(known)})"
        raise InputError(f"{source}: unknown key {extra[0]!r}{non_ascii(extra[0])}{hint}")


#: keys whose absence is a choice of its own, and what leaving one out means
LEFT_OUT = {"nccl_algo": "NCCL's choice of ring, tree or NVLS",
            "nvls": "NVLS as the GPU's name implies"}


def _no_empty_choice(mapping: dict, written: dict[str, str], where: str) -> None:
    """Refuse ``nccl_algo:`` or ``nvls:`` written empty (YAML null): it ran as if left out,
    while every other cluster field refuses null; a value meant and never typed is told so."""
    for key, meaning in LEFT_OUT.items():
        if key in mapping and mapping[key] is None:
            values = "ring, tree or nvls" if key == "nccl_algo" else "true or false"
            raise InputError(f"{where}.{written.get(key, key)}: is empty (null); write {values}, or leave "
                             f"the key out for {meaning}")


def _gpu_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not name.strip() or not name.isprintable():
        raise InputError(f"{where}: must be the GPU's name on one line, e.g. H100-SXM5-80GB (it picks NVLS for "
                         f"H100 and later; got {name!r})")


def _nccl_algo(algo: Any, where: str, what: str = "NCCL_ALGO", absent: str = "for NCCL's choice") -> None:
    if algo is not None and algo not in NCCL_ALGOS:
        raise InputError(f"{where}: must be one of {', '.join(NCCL_ALGOS)} ({what}), or left out {absent} "
                         f"(got {algo!r})")


def _gpu_count(gpus: Any, where: str, key: str) -> int:
    gpus = _positive(where, key, gpus, integer=True)
    if gpus < 2:
        raise InputError(f"{where}.{key}: must be 2 or more (a run simulates a network between GPUs)")
    if gpus > MAX_GPUS:
        raise InputError(f"{where}.{key}: {gpus:,} is past the largest cluster a run builds ({MAX_GPUS:,} GPUs, "
                         f"its rank tables alone would not fit in memory); simulate fewer")
    return gpus


def _node_value(key: str, raw: Any, source: str, label: str) -> Any:
    """A node figure (``NODE_RANGES``), 0 where a machine may be without it."""
    if key in NODE_MAY_BE_ZERO and raw == 0 and not isinstance(raw, bool):
        return 0.0
    return _positive(source, label, raw, integer=key in ("gpus", "nodes_per_leaf"), bounds=NODE_RANGES[key])


def check_field(dotted: str, value: Any, where: str, base_dir: str) -> None:
    """One ``cluster.KEY`` (or ``cluster.gpu.FIELD``) value alone, as :func:`load_cluster` checks
    it, ``where`` naming it: a sweep's axis value every point with it would fail on (a misspelt
    preset, ``RING``, an efficiency of 1.5) is refused before any point runs. A value valid only
    beside others (a GPU count and the node's, nvls and the GPU's name, FP8's two figures) is
    left to the point's own load."""
    parts = dotted.split(".")[1:]
    key = OLD_KEYS.get(parts[0], parts[0]) if parts else ""
    if value is None:  # null on a cluster axis leaves the field out: the preset's value, NCCL's choice
        if len(parts) == 1 and key in ("preset", "gpus"):
            raise InputError(f"{where}: null leaves cluster.{key} out, and every cluster needs one; give "
                             f"{'a preset name or file' if key == 'preset' else 'a GPU count'} instead")
        return
    if len(parts) == 1 and key == "preset":
        _preset_path(value, where.rsplit(".", 1)[0], base_dir)
    elif len(parts) == 1 and key == "nccl_algo":
        _nccl_algo(value, where)
    elif len(parts) == 1 and key == "nccl_latency_scale_algo":
        _nccl_algo(value, where, "the algorithm nccl_latency_scale was fitted on", "for every algorithm")
    elif len(parts) == 1 and key == "nvls" and not isinstance(value, bool):
        raise InputError(f"{where}: must be true or false (whether the nodes have NVSwitch-3, NCCL's NVLS; got "
                         f"{value!r})")
    elif len(parts) == 1 and key == "gpus":
        _gpu_count(value, *where.rsplit(".", 1))
    elif len(parts) == 1 and (key in NODE_RANGES or key == "gpus_per_node"):
        _node_value("gpus" if key == "gpus_per_node" else key, value, *where.rsplit(".", 1))
    elif len(parts) == 2 and key == "gpu":
        field = OLD_KEYS.get(parts[1], parts[1])
        if field == "name":
            _gpu_name(value, where)
        if field in GPU_RANGES and not (field.startswith("fp8_") and value == 0 and not isinstance(value, bool)):
            head, name = where.rsplit(".", 1)
            _positive(head, name, value, integer=field == "sms", bounds=GPU_RANGES[field])
