"""The system JSON: collective algorithms per dimension, scheduling, chunking, the roofline and
memory models. Keys ASTRA-sim reads but does not model are reported, not silently dropped.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from simpy_astra.config.field_values import (
    INT32_MAX,
    as_c_float,
    json_choice,
    json_float,
    json_int,
    json_string,
    json_switch,
    require_mapping,
    show_value,
)
from simpy_astra.config.file_kinds import refuse_another_kind, register_keys
from simpy_astra.config.file_text import PathLike
from simpy_astra.config.json_reader import load_json_object
from simpy_astra.config.system_collectives import (
    COLLECTIVE_KEY_STEMS,
    collective_keys,
    group_implementations,
    per_node_custom,
)
from simpy_astra.config.unknown_keys import nearest_key
from simpy_astra.errors import InputError, non_ascii
from simpy_astra.infra import horizon

SCHEDULING_POLICIES = ("LIFO", "FIFO", "EXPLICIT")

#: chunks per collective beyond which chunks are a few bytes (or 0, which the reference inflates
#: to one byte per NPU) and a run crawls through them: 65536 splits of 1 MiB take 90 s where 4
#: take 0.2 s. 64 times the largest value in ASTRA-sim's examples (64).
MAX_DATASET_SPLITS = 4096


COLLECTIVE_OPTIMIZATIONS = ("baseline", "localBWAware")


@dataclass(frozen=True)
class NpuGroup:
    """NPUs with their own hardware (``npu-groups`` in a system JSON): a mixed cluster, or a
    job spanning two GPU generations. None keeps the system's scalar value."""

    npus: tuple[int, ...]
    peak_perf_tflops: float | None = None
    local_mem_bw_gbps: float | None = None
    memory_capacity_bytes: int | None = None


NPU_GROUP_KEYS = ("npus", "peak-perf", "local-mem-bw", "memory-capacity")


@dataclass(frozen=True, kw_only=True)
class SystemConfig:
    """The system layer's knobs (``Sys::initialize_sys``), with ASTRA-sim's defaults.

    ``scheduling_policy`` and ``collective_optimization`` are uninitialised members in
    ASTRA-sim when their keys are absent; in practice the memory holds 0, i.e. LIFO and
    baseline, so those are our defaults. ``preferred_dataset_splits`` has no usable default
    (ASTRA-sim divides by its 0), hence no default here.
    """

    preferred_dataset_splits: int
    scheduling_policy: str = "LIFO"
    collective_optimization: str = "baseline"
    endpoint_delay_ns: int = 10  # already multiplied by --injection-scale when the key is set
    active_chunks_per_dimension: int = 1
    #: collective kind ("all_reduce", ...) -> one native algorithm name per logical dimension
    implementations: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: collective kind -> custom-collective ET path prefix (files ``{prefix}.{pos}.et``)
    custom_implementations: dict[str, str] = field(default_factory=dict)
    #: collective kind -> the algorithm a communicator group that is a subset of the NPUs runs
    #: (``<stem>-group-implementation``, ours; without it the reference's rule: the list's one
    #: entry, else ring)
    group_implementations: dict[str, str] = field(default_factory=dict)
    #: workload node id -> custom-collective ET path prefix (highest priority)
    per_node_custom: dict[int, str] = field(default_factory=dict)
    per_node_custom_file: str | None = None
    local_reduction_delay: int = 1  # LogGP shared-bus model only
    # LogGP parameters of the shared-bus model, rounded to C float as ASTRA-sim stores them
    L: float = 0.0
    o: float = 0.0
    g: float = 0.0
    G: float = 0.0
    model_shared_bus: bool = False
    peak_perf_tflops: float = 0.0  # TFLOP/s, 1e12
    local_mem_bw_gbps: float = 0.0  # GB/s with GB = 1e9 bytes
    roofline_enabled: bool = False
    trace_enabled: bool = False
    replay_only: bool = False
    track_local_mem: bool = False
    local_mem_trace_filename: str = "local_mem_trace"
    source: str = "<system>"
    #: one warning line per key that is accepted (ASTRA-sim reads it) but changes nothing here,
    #: or whose value makes something free without a word (local-mem-bw: 0)
    ignored: tuple[str, ...] = ()
    #: NPUs whose hardware differs from the scalars above (physical NPU ids)
    npu_groups: tuple[NpuGroup, ...] = ()

    def group_of(self, npu: int) -> NpuGroup | None:
        """The ``npu-groups`` entry naming NPU ``npu``, if any."""
        return next((group for group in self.npu_groups if npu in group.npus), None)

    def hardware_of(self, npu: int) -> SystemConfig:
        """This config as NPU ``npu`` sees it: its group's peak-perf and local-mem-bw, if any
        (``self`` when no group names it)."""
        group = self.group_of(npu)
        if group is None:
            return self
        return replace(self, npu_groups=(), **{k: v for k, v in (
            ("peak_perf_tflops", group.peak_perf_tflops),
            ("local_mem_bw_gbps", group.local_mem_bw_gbps)) if v is not None})

    def memory_capacity_of(self, npu: int) -> int | None:
        """NPU ``npu``'s memory capacity in bytes, if its group gives one."""
        group = self.group_of(npu)
        return None if group is None else group.memory_capacity_bytes

    def check_npu_groups(self, total_npus: int) -> None:
        """Every ``npu-groups`` id names an NPU of the network (known once the network is read)."""
        for i, group in enumerate(self.npu_groups):
            for n in group.npus:
                if not 0 <= n < total_npus:
                    raise InputError.at(self.source, f"npu-groups[{i}].npus",
                                        f"names NPU {n}, but the network has NPUs 0..{total_npus - 1}")


#: system-JSON keys ASTRA-sim reads that no model here uses, and why
_UNMODELLED_KEYS = {
    "L": "the LogGP shared-bus model is not simulated",
    "o": "the LogGP shared-bus model is not simulated",
    "g": "the LogGP shared-bus model is not simulated",
    "G": "the LogGP shared-bus model is not simulated",
    "model-shared-bus": "the LogGP shared-bus model is not simulated",
    "local-reduction-delay": "it only applies to the LogGP shared-bus model, which is not simulated",
    "trace-enabled": "it switches ASTRA-sim's debug logging; use --trace-out for a timeline",
}


#: keys in ASTRA-sim's example files that its ``Sys`` never parses, with the value that
#: matches what it does anyway (any other value suggests the user expects an effect)
_UNPARSED_KEYS = {"boost-mode": 0, "intra-dimension-scheduling": "FIFO", "inter-dimension-scheduling": "Ascending"}


#: every key a system JSON is read for (here or in ASTRA-sim)
_SYSTEM_KEYS = frozenset((
    "scheduling-policy", "collective-optimization", "local-reduction-delay", "active-chunks-per-dimension",
    "L", "o", "g", "G", "endpoint-delay", "model-shared-bus", "preferred-dataset-splits", "peak-perf",
    "local-mem-bw", "roofline-enabled", "trace-enabled", "replay-only", "track-local-mem",
    "local-mem-trace-filename", "per-node-custom-implementation", "npu-groups",
    *(f"{stem}-implementation{custom}" for stem in COLLECTIVE_KEY_STEMS.values() for custom in ("", "-custom")),
    *(f"{stem}-group-implementation" for stem in COLLECTIVE_KEY_STEMS.values()),
))


#: every key a system JSON may hold (read here, or known to ASTRA-sim)
KNOWN_SYSTEM_KEYS = _SYSTEM_KEYS | frozenset(_UNPARSED_KEYS) | frozenset(_UNMODELLED_KEYS)
register_keys("system JSON", KNOWN_SYSTEM_KEYS)


def _ignored_keys(src: str, j: dict) -> list[str]:
    """A warning per key that is accepted but changes nothing (zero/false values say nothing),
    and per key nobody reads (a misspelt ``peak-pref`` would silently keep the default)."""
    out = []
    for key, why in _UNMODELLED_KEYS.items():
        if key in j and j[key] not in (0, 0.0, False, "0", "false"):
            out.append(f"{src}: field '{key}' is accepted but changes nothing here: {why}")
    for key, default in _UNPARSED_KEYS.items():
        if key in j and j[key] != default:
            out.append(f"{src}: field '{key}' is accepted but changes nothing: ASTRA-sim does not read "
                       f"it either (it behaves as {key}: {show_value(default)})")
    for key in j:
        if key not in _SYSTEM_KEYS and key not in _UNPARSED_KEYS:
            near = nearest_key(str(key), _SYSTEM_KEYS)
            hint = f"; did you mean '{near}'?" if near else ""
            out.append(f"{src}: field '{key}'{non_ascii(key)} is not a system setting and is ignored (as in "
                       f"ASTRA-sim){hint}")
    return out


def load_system_json(path: PathLike, injection_scale: float = 1.0) -> SystemConfig:
    """Read a system JSON (``Sys::initialize_sys``); unknown keys are ignored, as there.

    ``injection_scale`` (``--injection-scale``) multiplies ``endpoint-delay`` only when that
    key is present; the product is truncated to an integer as in ASTRA-sim's ``int`` member.
    """
    src = os.fspath(path)
    return system_from_mapping(load_json_object(src, "system JSON"), src, injection_scale)


def _endpoint_delay(src: str, key: str, value: Any, injection_scale: float) -> int:
    delay = json_int(src, key, value, minimum=0)
    scaled = delay * injection_scale
    if not math.isfinite(scaled) or scaled < 0 or scaled > INT32_MAX:
        raise InputError.at(
            src,
            key,
            f"times the injection scale {injection_scale:.10g} (--injection-scale, or a scenario's "
            f"injection_scale) gives {f'{scaled:,.0f}' if scaled < 1e15 else f'{scaled:.3g}'} ns, past the int "
            f"ASTRA-sim keeps it in "
            f"({INT32_MAX:,} ns); use an injection scale of at most {INT32_MAX / delay:.10g}",
        )
    return int(scaled)


def _shared_bus(src: str, key: str, value: Any, injection_scale: float) -> bool:
    bus = json_int(src, key, value, minimum=0)
    if bus > 1:
        raise InputError.at(
            src,
            key,
            f"must be 0 or 1 (got {show_value(value)}); ASTRA-sim switches the bus model on only for 1",
        )
    return bus == 1


def _splits(src: str, key: str, value: Any, injection_scale: float) -> int:
    return json_int(src, key, value, minimum=1, maximum=MAX_DATASET_SPLITS,
                    hint="; set it to the number of chunks per collective (ASTRA-sim divides by it)")


def _c_float(src: str, key: str, value: Any, injection_scale: float) -> float:
    return as_c_float(src, key, json_float(src, key, value))


def _switch(src: str, key: str, value: Any, injection_scale: float) -> bool:
    return json_switch(src, key, value)


#: a system JSON's keys read on their own: key -> (SystemConfig field, reader(src, key, value,
#: injection_scale)), in the order they are checked (the first problem is the one reported)
_KEYS: dict[str, tuple[str, Callable[[str, str, Any, float], Any]]] = {
    "scheduling-policy": ("scheduling_policy", lambda s, k, v, _: json_choice(s, k, v, SCHEDULING_POLICIES)),
    "collective-optimization": ("collective_optimization",
                                lambda s, k, v, _: json_choice(s, k, v, COLLECTIVE_OPTIMIZATIONS)),
    "local-reduction-delay": ("local_reduction_delay", lambda s, k, v, _: json_int(s, k, v, minimum=0)),
    "active-chunks-per-dimension": ("active_chunks_per_dimension", lambda s, k, v, _: json_int(
        s, k, v, minimum=1, hint="; it is how many chunks of a dimension run at once (with 0 none would start)")),
    **{key: (key, _c_float) for key in ("L", "o", "g", "G")},
    "endpoint-delay": ("endpoint_delay_ns", _endpoint_delay),
    "model-shared-bus": ("model_shared_bus", _shared_bus),
    "preferred-dataset-splits": ("preferred_dataset_splits", _splits),
    "peak-perf": ("peak_perf_tflops", lambda s, k, v, _: json_float(s, k, v)),
    "local-mem-bw": ("local_mem_bw_gbps", lambda s, k, v, _: json_float(s, k, v)),
    "roofline-enabled": ("roofline_enabled", _switch),
    "trace-enabled": ("trace_enabled", _switch),
    "replay-only": ("replay_only", _switch),
    "track-local-mem": ("track_local_mem", _switch),
}
#: keys a system JSON must have, and what to set them to
REQUIRED_KEYS = {"preferred-dataset-splits": "is missing; set it to the number of chunks per collective, e.g. 4 "
                                         "(ASTRA-sim divides by it; custom collectives need 1)"}


def system_from_mapping(j: Any, src: str, injection_scale: float = 1.0) -> SystemConfig:
    """A system JSON's object (from a file, or inline in a scenario); errors name ``src``."""
    j = require_mapping(j, src, "system config", "preferred-dataset-splits: 4")
    kw: dict[str, Any] = {"source": src}
    for key, (attr, read) in _KEYS.items():
        if key in j:
            kw[attr] = read(src, key, j[key], injection_scale)
        elif key in REQUIRED_KEYS:
            refuse_another_kind(j, src, "system JSON")
            raise InputError.at(src, key, REQUIRED_KEYS[key])
    _rates_fit_horizon(src, "", kw.get("peak_perf_tflops"), kw.get("local_mem_bw_gbps"))
    if kw.get("roofline_enabled"):  # the roofline model divides by both
        for key, attr in (("peak-perf", "peak_perf_tflops"), ("local-mem-bw", "local_mem_bw_gbps")):
            if kw.get(attr, 0.0) <= 0:
                got = f"got {show_value(j[key])}" if key in j else "it is missing"
                raise InputError.at(src, key, f"must be a number > 0 when roofline-enabled is 1 ({got}); "
                                              f"the roofline model divides by it")
    if "local-mem-trace-filename" in j:
        kw["local_mem_trace_filename"] = json_string(
            src, "local-mem-trace-filename", j["local-mem-trace-filename"], "the trace file prefix"
        )

    if "npu-groups" in j:
        kw["npu_groups"] = _npu_groups(src, j["npu-groups"], bool(kw.get("roofline_enabled")))
    kw["ignored"] = tuple(_ignored_keys(src, j)) + _unread_group_keys(src, kw) + tuple(
        _free_reductions(src, key) for key, bw in (("local-mem-bw", kw.get("local_mem_bw_gbps")), *(
            (f"npu-groups[{i}].local-mem-bw", g.local_mem_bw_gbps) for i, g in enumerate(kw.get("npu_groups", ()))))
        if bw == 0)
    kw["implementations"], kw["custom_implementations"] = collective_keys(src, j)
    kw["group_implementations"] = group_implementations(src, j)
    if "per-node-custom-implementation" in j:
        kw["per_node_custom_file"], kw["per_node_custom"] = per_node_custom(src, j)
    return SystemConfig(**kw)


def _unread_group_keys(src: str, kw: dict[str, Any]) -> tuple[str, ...]:
    """The warnings for an NPU group's key the run never reads: its memory-capacity without
    track-local-mem, its peak-perf without roofline-enabled (compute nodes keep their own
    durations then, as in ASTRA-sim)."""
    unread = []
    for i, group in enumerate(kw.get("npu_groups", ())):
        if group.memory_capacity_bytes is not None and not kw.get("track_local_mem"):
            unread.append(f"{src}: field 'npu-groups[{i}].memory-capacity' changes nothing here: only a run with "
                          f"track-local-mem: 1 measures the memory it is checked against")
        if group.peak_perf_tflops is not None and not kw.get("roofline_enabled"):
            unread.append(f"{src}: field 'npu-groups[{i}].peak-perf' changes nothing here: only a run with "
                          f"roofline-enabled: 1 times compute by peak-perf (else each node keeps its duration)")
    return tuple(unread)


def _free_reductions(src: str, key: str) -> str:
    """The warning for a local-mem-bw of 0: ASTRA-sim divides by it and every reduction then
    takes no time; we keep its figures, but a user who typed 0 for "unknown" learns it."""
    return (f"{src}: field '{key}' is 0, so every reduction (all-reduce, reduce-scatter) takes no time, "
            f"as in ASTRA-sim; give the NPUs' local memory bandwidth in GB/s (e.g. {key.rsplit('.', 1)[-1]}: "
            f"1600) to time them")


def _rates_fit_horizon(src: str, prefix: str, peak_tflops: float | None, mem_gbps: float | None) -> None:
    """A peak-perf or local-mem-bw so low that one FLOP (1e-3 / TFLOP/s ns) or one reduced byte
    (three passes of 1 / GB/s ns) takes past the horizon: else a run of it ended on an internal
    error (a time too large for a float), or blamed the network's speeds."""
    for key, rate, unit_ns, what in (("peak-perf", peak_tflops, 1e-3, "FLOP"), ("local-mem-bw", mem_gbps, 3.0, "byte")):
        if rate is not None and rate > 0 and not horizon.within(unit_ns / rate):
            raise InputError.at(src, prefix + key, f"is so low that 1 {what} would take past the horizon "
                                                   f"({horizon.HORIZON_TEXT}); raise it")


def _npu_groups(src: str, value: Any, roofline: bool) -> tuple[NpuGroup, ...]:
    """``npu-groups``: a list of {npus: [ids], peak-perf, local-mem-bw, memory-capacity}; an
    NPU may be in one group only (two would leave its hardware ambiguous)."""
    if not isinstance(value, list) or not value:
        raise InputError.at(src, "npu-groups", f"must be a non-empty list of {{npus: [ids], peak-perf, "
                                               f"local-mem-bw, memory-capacity}} (got {show_value(value)})")
    groups = []
    seen: dict[int, int] = {}
    for i, item in enumerate(value):
        key = f"npu-groups[{i}]"
        if not isinstance(item, dict):
            raise InputError.at(src, key, f"must be a mapping with npus and hardware keys (got {show_value(item)})")
        for k in item:
            if k not in NPU_GROUP_KEYS:
                raise InputError.at(src, f"{key}.{k}", f"is not an npu-groups key; use {', '.join(NPU_GROUP_KEYS)}")
        ids = item.get("npus")
        if not isinstance(ids, list) or not ids or not all(
                isinstance(n, int) and not isinstance(n, bool) for n in ids):
            raise InputError.at(src, f"{key}.npus", f"must be a non-empty list of NPU ids (got {show_value(ids)})")
        for n in ids:
            if seen.get(n) == i:  # this group's own list
                raise InputError.at(src, f"{key}.npus", f"names NPU {n} twice; list each NPU once")
            if n in seen:
                raise InputError.at(src, f"{key}.npus", f"names NPU {n}, which npu-groups[{seen[n]}] "
                                                        f"also names; an NPU is in one group")
            seen[n] = i
        perf = bw = cap = None
        if "peak-perf" in item:
            perf = json_float(src, f"{key}.peak-perf", item["peak-perf"])
        if "local-mem-bw" in item:
            bw = json_float(src, f"{key}.local-mem-bw", item["local-mem-bw"])
        _rates_fit_horizon(src, f"{key}.", perf, bw)
        if roofline:
            for k, v in (("peak-perf", perf), ("local-mem-bw", bw)):
                if v is not None and v <= 0:
                    raise InputError.at(src, f"{key}.{k}", "must be a number > 0 when roofline-enabled is 1")
        if "memory-capacity" in item:
            cap = int(json_float(src, f"{key}.memory-capacity", item["memory-capacity"]))
        if perf is None and bw is None and cap is None:  # ran as if the group were not there
            raise InputError.at(src, key, "gives npus only, so its NPUs keep the system's own hardware and it "
                                          "changes nothing; give peak-perf, local-mem-bw or memory-capacity, or "
                                          "remove the group")
        groups.append(NpuGroup(tuple(ids), perf, bw, cap))
    return tuple(groups)
