"""The fields a ``cluster:`` (and a preset's ``gpu`` and ``node`` blocks) may state: their names,
old and new, the range of each physical value (outside it is a typo or a unit slip), and the
check of one value alone, which a sweep's axis is held to before any point runs."""

from __future__ import annotations

import math
from typing import Any

from simpy_astra.config.cluster_presets import preset_path
from simpy_astra.config.unknown_keys import nearest_key
from simpy_astra.engine.nccl_names import ALGORITHMS, FORCEABLE
from simpy_astra.errors import InputError, digit_groups_fix, integer_fix, non_ascii

#: keys written before units were spelled in names (simpy_astra/infra/units.py), read as their new names
OLD_KEYS = {"inter_node_gbps": "inter_node_gbit_s", "hbm_gbps": "hbm_gb_s", "l2_gbps": "l2_gb_s"}


CLUSTER_KEYS = {"preset", "gpus", "gpu", "inter_node_gbit_s", "gpus_per_node", "nvlink_gib_s",
                "nvlink_latency_ns", "inter_node_efficiency", "inter_node_latency_ns", "nodes_per_leaf",
                "oversubscription", "nccl_algo", "nccl_latency_scale", "nccl_latency_scale_algo", "nccl_launch_us",
                "nccl_node_ll_bandwidth_scale", "nccl_node_ll128_bandwidth_scale",
                "nccl_node_ll128_latency_scale", "nccl_ring_efficiency", "nccl_tree_efficiency",
                "nccl_nvls_efficiency", "nvls"}


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


#: NCCL's algorithms a scenario may name (``NCCL_ALGO``); absent: NCCL's choice
NCCL_ALGOS = FORCEABLE


def positive(where: str, key: str, value: Any, integer: bool = False,
              bounds: tuple[float, float, str] | None = None) -> Any:
    numeric = not isinstance(value, bool) and isinstance(value, int | float)
    number = numeric and math.isfinite(value)
    kind = "a positive integer" if integer else "a positive number"
    fix = integer_fix(value, 1, int(bounds[1]) if bounds is not None else None) if integer else digit_groups_fix(value)
    # 0, 5 and 1e6 SMs alike: the range, no integer to write; YAML's .inf and .nan are numbers
    # outside it too (inf is positive: 'must be a positive number' named no fix)
    if numeric and bounds is not None and not fix:
        low, high, unit = bounds
        if not ((0 < value <= high) if low == 0 else (low <= value <= high)):
            span = f"in (0, {high:g}]" if low == 0 else f"between {low:g} and {high:g}"
            raise InputError(f"{where}.{key}: must be {span} ({unit}; got {value!r})")
    if not (number and value > 0 and (not integer or isinstance(value, int))):
        raise InputError(f"{where}.{key}: must be {kind} (got {value!r}){fix}")
    return value


def with_units(mapping: dict, where: str) -> tuple[dict, dict[str, str]]:
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


def refuse_unknown(given: dict, known: list[str], source: str) -> None:
    """Refuse a key of a ``gpu``/``node`` block no reader uses, naming the known key it most
    likely misspells (every key only when none is near)."""
    extra = sorted(str(k) for k in set(given) - set(known))
    if extra:
        near = nearest_key(extra[0], known)
        hint = f"; did you mean {near!r}?" if near else f" (keys: {', '.join(known)})"
        raise InputError(f"{source}: unknown key {extra[0]!r}{non_ascii(extra[0])}{hint}")


#: keys whose absence is a choice of its own, and what leaving one out means
LEFT_OUT = {"nccl_algo": "NCCL's choice of ring, tree, NVLS or PAT",
            "nvls": "NVLS as the GPU's name implies",
            # null scaled every algorithm, not the one the preset's fit names, as leaving it out does
            "nccl_latency_scale_algo": "the preset's (every algorithm where it names none)"}


def no_empty_choice(mapping: dict, written: dict[str, str], where: str) -> None:
    """Refuse ``nccl_algo:``, ``nvls:`` or ``nccl_latency_scale_algo:`` written empty (YAML null): it ran as if left out,
    while every other cluster field refuses null; a value meant and never typed is told so."""
    for key, meaning in LEFT_OUT.items():
        if key in mapping and mapping[key] is None:
            values = {"nccl_algo": "ring, tree, nvls or pat", "nvls": "true or false"}.get(key, "ring, tree or nvls")
            raise InputError(f"{where}.{written.get(key, key)}: is empty (null); write {values}, or leave "
                             f"the key out for {meaning}")


def check_gpu_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not name.strip() or not name.isprintable():
        raise InputError(f"{where}: must be the GPU's name on one line, e.g. H100-SXM5-80GB (it picks NVLS for "
                         f"H100 and later; got {name!r})")


def check_nccl_algo(algo: Any, where: str, what: str = "NCCL_ALGO", absent: str = "for NCCL's choice",
                    names: tuple[str, ...] = NCCL_ALGOS) -> None:
    if algo is not None and algo not in names:
        raise InputError(f"{where}: must be one of {', '.join(names)} ({what}), or left out {absent} "
                         f"(got {algo!r})")


def gpu_count(gpus: Any, where: str, key: str) -> int:
    if gpus is None:  # left out (or null): 'must be a positive integer (got None)' named no fix
        raise InputError(f"{where}.{key}: is missing; give the job's GPU count ({key}: 16, a whole number of "
                         f"nodes, or fewer than a node's GPUs)")
    gpus = positive(where, key, gpus, integer=True)
    if gpus < 2:
        raise InputError(f"{where}.{key}: must be 2 or more (a run simulates a network between GPUs)")
    if gpus > MAX_GPUS:
        raise InputError(f"{where}.{key}: {gpus:,} is past the largest cluster a run builds ({MAX_GPUS:,} GPUs, "
                         f"its rank tables alone would not fit in memory); simulate fewer")
    return gpus


def node_value(key: str, raw: Any, source: str, label: str) -> Any:
    """A node figure (``NODE_RANGES``), 0 where a machine may be without it."""
    if key in NODE_MAY_BE_ZERO and raw == 0 and not isinstance(raw, bool):
        return 0.0
    if key in NODE_MAY_BE_ZERO and isinstance(raw, int | float) and not isinstance(raw, bool) \
            and not 0 <= raw <= NODE_RANGES[key][1]:  # 'in (0, ...]' told a key that takes 0 it could not
        high, unit = NODE_RANGES[key][1:]
        raise InputError(f"{source}.{label}: must be from 0 to {high:g} ({unit}; got {raw!r})")
    return positive(source, label, raw, integer=key in ("gpus", "nodes_per_leaf"), bounds=NODE_RANGES[key])


def check_field(dotted: str, value: Any, where: str, base_dir: str) -> None:
    """One ``cluster.KEY`` (or ``cluster.gpu.FIELD``) value alone, as :func:`~simpy_astra.config.cluster.load_cluster` checks
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
        preset_path(value, where.rsplit(".", 1)[0], base_dir)
    elif len(parts) == 1 and key == "nccl_algo":
        check_nccl_algo(value, where)
    elif len(parts) == 1 and key == "nccl_latency_scale_algo":
        check_nccl_algo(value, where, "the algorithm nccl_latency_scale was fitted on", "for every algorithm",
                        ALGORITHMS)
    elif len(parts) == 1 and key == "nvls" and not isinstance(value, bool):
        raise InputError(f"{where}: must be true or false (whether the nodes have NVSwitch-3, NCCL's NVLS; got "
                         f"{value!r})")
    elif len(parts) == 1 and key == "gpus":
        gpu_count(value, *where.rsplit(".", 1))
    elif len(parts) == 1 and (key in NODE_RANGES or key == "gpus_per_node"):
        node_value("gpus" if key == "gpus_per_node" else key, value, *where.rsplit(".", 1))
    elif len(parts) == 2 and key == "gpu":
        field = OLD_KEYS.get(parts[1], parts[1])
        if field == "name":
            check_gpu_name(value, where)
        if field in GPU_RANGES and not (field.startswith("fp8_") and value == 0 and not isinstance(value, bool)):
            head, name = where.rsplit(".", 1)
            positive(head, name, value, integer=field == "sms", bounds=GPU_RANGES[field])
