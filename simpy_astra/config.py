"""Typed, validated configuration read from ASTRA-sim's input files.

Each loader reads one file, checks it once, and returns a frozen dataclass whose field
names carry their units. Defaults live in the dataclass definitions and nowhere else.
Where ASTRA-sim would crash, hang or quietly misread a value we raise :class:`InputError`
with one line naming the file, the field and the fix; where it merely converts (a float in
an integer field is truncated, ``true`` counts as 1) we convert the same way, because the
reference figures were produced that way.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from simpy_astra.collectives import known_names as known_collective_names
from simpy_astra.collectives import resolve as resolve_collective
from simpy_astra.cost_model import CostPrices, CostSpecError, tiers_for
from simpy_astra.errors import InputError
from simpy_astra.plugins import PluginError
from simpy_astra.topologies import REGISTRY as TOPOLOGY_REGISTRY
from simpy_astra.topologies import GraphSpec, GraphSpecError
from simpy_astra.topologies import build as build_topology
from simpy_astra.topologies import lookup as lookup_topology

PathLike = str | os.PathLike[str]

TOPOLOGY_NAMES = tuple(TOPOLOGY_REGISTRY)  # ASTRA-sim's three building blocks, plus ours
SCHEDULING_POLICIES = ("LIFO", "FIFO", "EXPLICIT")
COLLECTIVE_OPTIMIZATIONS = ("baseline", "localBWAware")
MEMORY_TYPES = (
    "NO_MEMORY_EXPANSION",
    "PER_NODE_MEMORY_EXPANSION",
    "PER_NPU_MEMORY_EXPANSION",
    "MEMORY_POOL",
)
#: collective kind -> stem of its system-JSON keys (``<stem>-implementation[-custom]``)
COLLECTIVE_KEY_STEMS = {
    "all_reduce": "all-reduce",
    "reduce_scatter": "reduce-scatter",
    "all_gather": "all-gather",
    "all_to_all": "all-to-all",
}
#: ASTRA-sim ignores any comm-group path containing this substring (its "no groups" default)
NO_GROUPS_MARKER = "empty"

_INT32_MAX = 2**31 - 1
_UINT64_MAX = 2**64 - 1

# ---------------------------------------------------------------------------- dataclasses
@dataclass(frozen=True)
class NetworkConfig:
    """The physical network: one entry per dimension in every tuple (dimension 0 first)."""

    topology: tuple[str, ...]
    npus_count: tuple[int, ...]
    bandwidth_gbps: tuple[float, ...]  # per link and direction, GB = 2^30 bytes
    latency_ns: tuple[float, ...]  # per link (hop); may be fractional
    source: str = "<network>"
    #: per dimension: the parsed ``graph`` mapping of a Graph dimension, else None
    graph_specs: tuple[GraphSpec | None, ...] = ()
    #: the ``cost:`` block's prices and tiers (:mod:`simpy_astra.cost_model`), None: defaults
    cost: CostPrices | None = None
    #: packet backend only (``packet-size``, ``switch-buffer``); None: the backend's defaults
    packet_size_bytes: int | None = None
    switch_buffer_bytes: int | None = None

    @property
    def num_dims(self) -> int:
        return len(self.topology)

    @property
    def total_npus(self) -> int:
        return math.prod(self.npus_count)


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
    #: one line per key that is accepted (ASTRA-sim reads it) but changes nothing here
    ignored: tuple[str, ...] = ()


@dataclass(frozen=True)
class RemoteMemoryConfig:
    """The remote-memory backend (``AnalyticalRemoteMemory``).

    ``memory-type`` is uninitialised in ASTRA-sim when absent; we use NO_MEMORY_EXPANSION,
    which makes any MEM_LOAD/MEM_STORE an error rather than a guess.
    """

    memory_type: str = "NO_MEMORY_EXPANSION"
    latency_ns: int = 0
    bandwidth_bytes_per_ns: int = 0  # integer B/ns (= GB/s with GB = 1e9), truncated
    num_nodes: int = 0  # PER_NODE_MEMORY_EXPANSION only
    num_npus_per_node: int = 0  # PER_NODE_MEMORY_EXPANSION only
    source: str = "<remote memory>"

    def check_total_npus(self, total_npus: int) -> None:
        """Every NPU must map to a node (``npu // num_npus_per_node < num_nodes``).

        ASTRA-sim indexes a vector of ``num_nodes`` queues without a bounds check.
        """
        if self.memory_type != "PER_NODE_MEMORY_EXPANSION":
            return
        needed = (total_npus - 1) // self.num_npus_per_node + 1
        if needed > self.num_nodes:
            raise InputError.at(
                self.source,
                "num-nodes",
                f"is {self.num_nodes} but {total_npus} NPUs with num-npus-per-node "
                f"{self.num_npus_per_node} need {needed} nodes; raise num-nodes to {needed}",
            )


# ---------------------------------------------------------------------------- file reading
def _show(value: Any) -> str:
    """A value as the user wrote it (JSON spelling: true, null, "text")."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _read_text(src: str, what: str) -> str:
    path = Path(src)
    if not path.exists():
        raise InputError(f"{src}: {what} file does not exist (relative paths resolve from {os.getcwd()})")
    if path.is_dir():
        raise InputError(f"{src}: is a directory; expected the {what} file")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{src}: is not UTF-8 text (byte {exc.start}); expected the {what} file") from None
    except OSError as exc:
        raise InputError(f"{src}: cannot be read ({exc.strerror})") from None


class _NonFiniteNumber(Exception):
    pass


def _reject_constant(name: str) -> float:
    raise _NonFiniteNumber(name)


def _load_json(src: str, what: str) -> Any:
    text = _read_text(src, what)
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"{src}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except _NonFiniteNumber as exc:
        raise InputError(f"{src}: invalid JSON: {exc} is not a JSON number; write a finite number") from None


def _load_json_object(src: str, what: str) -> dict[str, Any]:
    data = _load_json(src, what)
    if not isinstance(data, dict):
        raise InputError(
            f"{src}: the top level must be a JSON object {{...}} (got {type(data).__name__}); "
            f"expected the {what}"
        )
    return data


class ConfigLoader(yaml.SafeLoader):
    """PyYAML's safe loader, reading scalars as ASTRA-sim's yaml-cpp does.

    yaml-cpp converts on demand, so ``5e1`` and ``1e-3`` are numbers where a number is read
    (YAML 1.1 wants a dot and a signed exponent and PyYAML leaves them strings), and
    ``2024-01-01`` stays the text the user wrote (PyYAML makes it a ``date``), so a
    misplaced date is reported as written.
    """


ConfigLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+.0123456789"),
)


def parse_yaml(text: str) -> Any:
    """YAML text as config files are read (:class:`ConfigLoader`); raises yaml.YAMLError."""
    return yaml.load(text, Loader=ConfigLoader)  # noqa: S506 - a SafeLoader subclass


def _load_yaml(src: str, what: str) -> Any:
    text = _read_text(src, what)
    try:
        return parse_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        if mark is not None:
            raise InputError(
                f"{src}: invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
            ) from None
        raise InputError(f"{src}: invalid YAML: {problem}") from None


def read_yaml_file(src: str, what: str) -> Any:
    """A YAML file's data as config files are read; every failure is one InputError line."""
    return _load_yaml(src, what)


def _load_yaml_mapping(src: str, what: str, example: str) -> dict[Any, Any]:
    data = _load_yaml(src, what)
    if not isinstance(data, dict):
        got = "an empty file" if data is None else type(data).__name__
        raise InputError(
            f"{src}: the top level must be a mapping like '{example}' (got {got}); expected the {what}"
        )
    return data


# ---------------------------------------------------------------------------- value checks
# nlohmann::json converts numbers the C++ way: a float assigned to an integer is truncated
# toward zero and a boolean counts as 0/1. Anything else (string, null, list) throws there.
def _json_int(
    src: str, key: str, value: Any, *, minimum: int, maximum: int = _INT32_MAX, hint: str = ""
) -> int:
    if isinstance(value, bool):
        number = int(value)
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value):
        number = int(value)  # truncation toward zero, like static_cast
    else:
        raise InputError.at(src, key, f"must be an integer >= {minimum} (got {_show(value)}){hint}")
    if number < minimum:
        raise InputError.at(src, key, f"must be an integer >= {minimum} (got {_show(value)}){hint}")
    if number > maximum:
        raise InputError.at(src, key, f"must be at most {maximum} (got {_show(value)})")
    return number


def _json_float(src: str, key: str, value: Any, *, minimum: float = 0.0) -> float:
    if isinstance(value, bool):
        number = float(value)
    elif isinstance(value, int | float):
        number = float(value)
    else:
        raise InputError.at(src, key, f"must be a number >= {minimum:g} (got {_show(value)})")
    if not math.isfinite(number) or number < minimum:
        raise InputError.at(src, key, f"must be a finite number >= {minimum:g} (got {_show(value)})")
    return number


def _as_c_float(src: str, key: str, value: float) -> float:
    """Round to IEEE single precision: ASTRA-sim keeps L, o, g, G in C ``float`` members."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        raise InputError.at(src, key, f"is too large for a C float (got {value:g})") from None


def _json_choice(src: str, key: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InputError.at(
            src, key, f"must be one of {', '.join(choices)} (case-sensitive; got {_show(value)})"
        )
    return value


def _json_string(src: str, key: str, value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError.at(src, key, f"must be a non-empty string, {what} (got {_show(value)})")
    return value


def _json_switch(src: str, key: str, value: Any) -> bool:
    """ASTRA-sim's ``j[key] != 0``: on for any non-zero number, and for ANY non-number.

    That makes ``false`` switch the feature on, so we accept numbers only.
    """
    if isinstance(value, bool):
        raise InputError.at(
            src,
            key,
            f"must be 0 or 1 (got {_show(value)}); use 0 or 1 (ASTRA-sim treats both true and false as on)",
        )
    if not isinstance(value, int | float):
        raise InputError.at(
            src,
            key,
            f"must be 0 or 1 (got {_show(value)}); use 0 or 1 (ASTRA-sim treats any non-number as on)",
        )
    return value != 0


# ---------------------------------------------------------------------------- network YAML
_NETWORK_KEYS = ("topology", "npus_count", "bandwidth", "latency")


def load_network_yaml(path: PathLike) -> NetworkConfig:
    """Read a network YAML (``NetworkParser``): four equal-length lists, one entry per dim."""
    src = os.fspath(path)
    return network_from_mapping(_load_yaml_mapping(src, "network YAML", "topology: [ Ring ]"), src)


def _require_mapping(data: Any, src: str, what: str, example: str) -> dict[Any, Any]:
    """``data`` if it is a mapping (an inline block of a scenario), else an error naming ``src``."""
    if not isinstance(data, dict):
        raise InputError(f"{src}: must be a mapping like '{example}' (got {_show(data)}); expected the {what}")
    return data


def network_from_mapping(data: Any, src: str) -> NetworkConfig:
    """A network YAML's mapping (from a file, or inline in a scenario); errors name ``src``."""
    data = _require_mapping(data, src, "network", "topology: [ Ring ]")
    lists: dict[str, list[Any]] = {}
    for key in _NETWORK_KEYS:
        if key not in data:
            raise InputError.at(
                src,
                key,
                "is missing; a network YAML needs topology, npus_count, bandwidth and "
                "latency lists with one entry per dimension",
            )
        value = data[key]
        if not isinstance(value, list) or not value:
            raise InputError.at(
                src,
                key,
                f"must be a non-empty list with one entry per dimension, e.g. [ 8 ] (got {_show(value)})",
            )
        lists[key] = value
    dims = len(lists["topology"])
    for key in _NETWORK_KEYS[1:]:
        if len(lists[key]) != dims:
            raise InputError.at(
                src,
                key,
                f"has {len(lists[key])} entries but topology has {dims}; all four lists "
                f"need one entry per dimension",
            )

    topology: list[str] = []
    for i, name in enumerate(lists["topology"]):
        try:
            known = isinstance(name, str) and lookup_topology(name) is not None
        except PluginError as exc:
            raise InputError.at(src, f"topology[{i}]", f"is {name}: {exc}") from None
        if not known:
            fix = ""
            if isinstance(name, str):
                fix = next(
                    (f"; did you mean '{t}'?" for t in TOPOLOGY_NAMES if t.lower() == name.lower()), ""
                )
            raise InputError.at(
                src,
                f"topology[{i}]",
                f"must be one of {', '.join(TOPOLOGY_NAMES)} (case-sensitive; got {_show(name)}){fix}",
            )
        topology.append(name)

    npus: list[int] = []
    for i, n in enumerate(lists["npus_count"]):
        if isinstance(n, bool) or not isinstance(n, int) or n <= 1:
            raise InputError.at(src, f"npus_count[{i}]", f"must be an integer > 1 (got {_show(n)})")
        npus.append(n)

    def numbers(key: str, minimum: float, strict: bool, unit: str) -> tuple[float, ...]:
        out = []
        for i, v in enumerate(lists[key]):
            ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            if not ok or (v <= minimum if strict else v < minimum):
                rule = f"> {minimum:g}" if strict else f">= {minimum:g}"
                raise InputError.at(src, f"{key}[{i}]", f"must be a number {rule} ({unit}; got {_show(v)})")
            out.append(float(v))
        return tuple(out)

    bandwidth = numbers("bandwidth", 0.0, True, "GB/s per link")
    latency = numbers("latency", 0.0, False, "ns per link")
    for i, (bw, lat) in enumerate(zip(bandwidth, latency, strict=True)):
        # times are 64-bit cycle counts (ns) in ASTRA-sim: a byte or a hop must fit
        if lat > _UINT64_MAX:
            raise InputError.at(src, f"latency[{i}]", f"is {lat:g} ns, beyond the 64-bit cycle counter "
                                                      f"(at most {_UINT64_MAX} ns)")
        if 1e9 / (bw * 2**30) > _UINT64_MAX:
            raise InputError.at(src, f"bandwidth[{i}]", f"is {bw:g} GB/s: one byte would take more "
                                                        f"ns than a 64-bit cycle counter holds")
    if "graph" in data and "Graph" not in topology:
        raise InputError.at(src, "graph", "is only read for a 'Graph' dimension; add Graph to topology "
                                          "or remove the graph mapping")
    specs: list[GraphSpec | None] = []
    for i, name in enumerate(topology):
        if name != "Graph":
            specs.append(None)
            continue
        try:
            spec = GraphSpec.parse(data.get("graph"), npus[i]) if "graph" in data else None
            build_topology(name, npus[i], bandwidth[i], latency[i], spec)  # connectivity check
        except GraphSpecError as exc:
            raise InputError.at(src, exc.field, exc.problem) from None
        specs.append(spec)
    def byte_count(key: str) -> int | None:
        """``packet-size`` / ``switch-buffer``: a whole number of bytes > 0, or absent."""
        if key not in data:
            return None
        v = data[key]
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise InputError.at(src, key, f"must be a whole number of bytes > 0 (got {_show(v)})")
        return v

    packet_size, switch_buffer = byte_count("packet-size"), byte_count("switch-buffer")
    if packet_size is not None and switch_buffer is not None and switch_buffer < packet_size:
        raise InputError.at(src, "switch-buffer", f"must hold at least one packet ({packet_size} bytes; "
                                                  f"got {switch_buffer})")
    net = NetworkConfig(
        topology=tuple(topology),
        npus_count=tuple(npus),
        bandwidth_gbps=bandwidth,
        latency_ns=latency,
        source=src,
        graph_specs=tuple(specs) if any(specs) else (),
        packet_size_bytes=packet_size,
        switch_buffer_bytes=switch_buffer,
    )
    if "cost" in data:  # beyond ASTRA-sim: prices for the network cost model
        net = with_cost(net, data["cost"], src)
    return net


def with_cost(net: NetworkConfig, block: Any, src: str) -> NetworkConfig:
    """``net`` with a ``cost:`` block laid over the one it has; errors name ``src``."""
    import dataclasses

    try:
        prices = CostPrices.parse(block).over(net.cost)
        tiers_for(net, prices)
    except CostSpecError as exc:
        raise InputError.at(src, exc.field, exc.problem) from None
    return dataclasses.replace(net, cost=prices)


# ---------------------------------------------------------------------------- system JSON
def parse_implementation(name: str) -> tuple[str, int | None]:
    """(name without its window, window) of an accepted algorithm name: ``direct4`` ->
    ("direct", 4). Names are resolved by :func:`collectives.resolve`, so algorithms
    registered in ``collectives/`` are accepted too. Raises ValueError otherwise."""
    try:
        choice = resolve_collective(name) if isinstance(name, str) else None
    except PluginError as exc:
        raise ValueError(str(exc)) from None
    if choice is None:
        raise ValueError(f"unknown collective implementation {_show(name)}; valid: "
                         f"{', '.join(known_collective_names())} (K = window of 1-5 digits > 0, e.g. direct4)")
    return (name if choice.window is None else name.rstrip("0123456789")), choice.window


def _implementation_list(src: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise InputError.at(
            src,
            key,
            f"must be a non-empty list with one algorithm per logical dimension, e.g. "
            f'["ring"] (got {_show(value)})',
        )
    for i, name in enumerate(value):
        try:
            parse_implementation(name)
        except ValueError as exc:
            raise InputError.at(src, f"{key}[{i}]", f"is invalid: {exc}") from None
    return tuple(value)


def _custom_path(src: str, key: str, value: Any) -> str:
    if not isinstance(value, list) or len(value) != 1 or not isinstance(value[0], str) or not value[0]:
        raise InputError.at(
            src,
            key,
            f"must be a list with exactly one custom-collective ET path prefix, e.g. "
            f'["dir/custom_allreduce"] (got {_show(value)}); one ET covers all dimensions',
        )
    return value[0]


def load_per_node_custom_yaml(path: PathLike) -> dict[int, str]:
    """Read a per-node custom-collective YAML: ``{workload node id: ET path prefix}``."""
    src = os.fspath(path)
    data = _load_yaml_mapping(src, "per-node custom-collective YAML", "7: path/to/custom_allreduce")
    result: dict[int, str] = {}
    for key, prefix in data.items():
        node_id: int | None = None
        if isinstance(key, int) and not isinstance(key, bool):
            node_id = key
        elif isinstance(key, str) and re.fullmatch(r"[0-9]+", key):
            node_id = int(key)
        if node_id is None or not 0 <= node_id <= _INT32_MAX:
            raise InputError.at(src, _show(key), "is not a workload node id (an integer >= 0)", kind="key")
        if not isinstance(prefix, str) or not prefix:
            raise InputError.at(
                src,
                node_id,
                f"must map to a custom-collective ET path prefix string (got {_show(prefix)})",
                kind="node",
            )
        result[node_id] = prefix
    return result


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
    "local-mem-trace-filename", "per-node-custom-implementation",
    *(f"{stem}-implementation{custom}" for stem in COLLECTIVE_KEY_STEMS.values() for custom in ("", "-custom")),
))


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
                       f"it either (it behaves as {key}: {_show(default)})")
    for key in j:
        if key not in _SYSTEM_KEYS and key not in _UNPARSED_KEYS:
            close = [k for k in sorted(_SYSTEM_KEYS) if _similar(str(key), k)]
            hint = f"; did you mean '{close[0]}'?" if close else ""
            out.append(f"{src}: field '{key}' is not a system setting and is ignored (as in ASTRA-sim){hint}")
    return out


def _similar(a: str, b: str) -> bool:
    """Spellings one edit apart, or equal ignoring case and '-'/'_' (a likely typo)."""
    if a.lower().replace("_", "-") == b:
        return True
    if abs(len(a) - len(b)) > 1:
        return False
    import difflib

    return difflib.SequenceMatcher(None, a, b).ratio() >= 0.85


def load_system_json(path: PathLike, injection_scale: float = 1.0) -> SystemConfig:
    """Read a system JSON (``Sys::initialize_sys``); unknown keys are ignored, as there.

    ``injection_scale`` (``--injection-scale``) multiplies ``endpoint-delay`` only when that
    key is present; the product is truncated to an integer as in ASTRA-sim's ``int`` member.
    """
    src = os.fspath(path)
    return system_from_mapping(_load_json_object(src, "system JSON"), src, injection_scale)


def system_from_mapping(j: Any, src: str, injection_scale: float = 1.0) -> SystemConfig:
    """A system JSON's object (from a file, or inline in a scenario); errors name ``src``."""
    j = _require_mapping(j, src, "system config", "preferred-dataset-splits: 4")
    kw: dict[str, Any] = {"source": src}

    if "scheduling-policy" in j:
        kw["scheduling_policy"] = _json_choice(
            src, "scheduling-policy", j["scheduling-policy"], SCHEDULING_POLICIES
        )
    if "collective-optimization" in j:
        kw["collective_optimization"] = _json_choice(
            src, "collective-optimization", j["collective-optimization"], COLLECTIVE_OPTIMIZATIONS
        )
    if "local-reduction-delay" in j:
        kw["local_reduction_delay"] = _json_int(
            src, "local-reduction-delay", j["local-reduction-delay"], minimum=0
        )
    if "active-chunks-per-dimension" in j:
        kw["active_chunks_per_dimension"] = _json_int(
            src,
            "active-chunks-per-dimension",
            j["active-chunks-per-dimension"],
            minimum=1,
            hint="; with 0 no chunk would ever start",
        )
    for key in ("L", "o", "g", "G"):
        if key in j:
            kw[key] = _as_c_float(src, key, _json_float(src, key, j[key]))
    if "endpoint-delay" in j:
        delay = _json_int(src, "endpoint-delay", j["endpoint-delay"], minimum=0)
        scaled = delay * injection_scale
        if not math.isfinite(scaled) or scaled < 0 or scaled > _INT32_MAX:
            raise InputError.at(
                src,
                "endpoint-delay",
                f"times --injection-scale {injection_scale:g} gives {scaled:g}, not a valid "
                f"delay in ns; use an injection scale >= 0",
            )
        kw["endpoint_delay_ns"] = int(scaled)
    if "model-shared-bus" in j:
        raw = j["model-shared-bus"]
        bus = _json_int(src, "model-shared-bus", raw, minimum=0)
        if bus > 1:
            raise InputError.at(
                src,
                "model-shared-bus",
                f"must be 0 or 1 (got {_show(raw)}); ASTRA-sim switches the bus model on only for 1",
            )
        kw["model_shared_bus"] = bus == 1
    if "preferred-dataset-splits" not in j:
        raise InputError.at(
            src,
            "preferred-dataset-splits",
            "is missing; set it to the number of chunks per collective, e.g. 4 (ASTRA-sim "
            "divides by it; custom collectives need 1)",
        )
    kw["preferred_dataset_splits"] = _json_int(
        src,
        "preferred-dataset-splits",
        j["preferred-dataset-splits"],
        minimum=1,
        hint="; set it to the number of chunks per collective (ASTRA-sim divides by it)",
    )
    if "peak-perf" in j:
        kw["peak_perf_tflops"] = _json_float(src, "peak-perf", j["peak-perf"])
    if "local-mem-bw" in j:
        kw["local_mem_bw_gbps"] = _json_float(src, "local-mem-bw", j["local-mem-bw"])
    for key, attr in (
        ("roofline-enabled", "roofline_enabled"),
        ("trace-enabled", "trace_enabled"),
        ("replay-only", "replay_only"),
        ("track-local-mem", "track_local_mem"),
    ):
        if key in j:
            kw[attr] = _json_switch(src, key, j[key])
    if kw.get("roofline_enabled"):  # the roofline model divides by both
        for key, attr in (("peak-perf", "peak_perf_tflops"), ("local-mem-bw", "local_mem_bw_gbps")):
            if kw.get(attr, 0.0) <= 0:
                got = f"got {_show(j[key])}" if key in j else "it is missing"
                raise InputError.at(src, key, f"must be a number > 0 when roofline-enabled is 1 ({got}); "
                                              f"the roofline model divides by it")
    if "local-mem-trace-filename" in j:
        kw["local_mem_trace_filename"] = _json_string(
            src, "local-mem-trace-filename", j["local-mem-trace-filename"], "the trace file prefix"
        )

    kw["ignored"] = tuple(_ignored_keys(src, j))
    implementations: dict[str, tuple[str, ...]] = {}
    custom: dict[str, str] = {}
    for kind, stem in COLLECTIVE_KEY_STEMS.items():
        key = f"{stem}-implementation"
        if key in j:
            implementations[kind] = _implementation_list(src, key, j[key])
        if key + "-custom" in j:
            custom[kind] = _custom_path(src, key + "-custom", j[key + "-custom"])
    kw["implementations"] = implementations
    kw["custom_implementations"] = custom

    if "per-node-custom-implementation" in j:
        key = "per-node-custom-implementation"
        yaml_path = _json_string(src, key, j[key], "the path of a YAML file {node_id: path_prefix}")
        if not Path(yaml_path).is_file():
            raise InputError.at(
                src,
                key,
                f"names {yaml_path}, which does not exist (relative paths resolve from {os.getcwd()})",
            )
        kw["per_node_custom"] = load_per_node_custom_yaml(yaml_path)
        kw["per_node_custom_file"] = yaml_path

    return SystemConfig(**kw)


# ---------------------------------------------------------------------------- remote memory
def load_remote_memory_json(path: PathLike) -> RemoteMemoryConfig:
    """Read a remote-memory JSON (``AnalyticalRemoteMemory``).

    ``num-nodes``/``num-npus-per-node`` are read for PER_NODE_MEMORY_EXPANSION only, as in
    ASTRA-sim. ``remote-mem-bw`` is an unsigned integer there (fractions truncate) and is a
    divisor, so it must be >= 1 for every type that performs accesses.
    """
    src = os.fspath(path)
    return remote_memory_from_mapping(_load_json_object(src, "remote-memory JSON"), src)


def remote_memory_from_mapping(j: Any, src: str) -> RemoteMemoryConfig:
    """A remote-memory JSON's object (from a file, or inline in a scenario); errors name ``src``."""
    j = _require_mapping(j, src, "remote-memory config", "memory-type: NO_MEMORY_EXPANSION")
    kw: dict[str, Any] = {"source": src}
    memory_type = RemoteMemoryConfig.memory_type
    if "memory-type" in j:
        memory_type = _json_choice(src, "memory-type", j["memory-type"], MEMORY_TYPES)
        kw["memory_type"] = memory_type
    if memory_type == "PER_NODE_MEMORY_EXPANSION":
        for key, attr in (("num-nodes", "num_nodes"), ("num-npus-per-node", "num_npus_per_node")):
            if key not in j:
                raise InputError.at(
                    src, key, "is missing; PER_NODE_MEMORY_EXPANSION needs num-nodes and num-npus-per-node"
                )
            kw[attr] = _json_int(
                src, key, j[key], minimum=1, hint="; PER_NODE_MEMORY_EXPANSION divides NPUs into nodes"
            )
    if "remote-mem-latency" in j:
        kw["latency_ns"] = _json_int(
            src, "remote-mem-latency", j["remote-mem-latency"], minimum=0, maximum=_UINT64_MAX
        )
    if "remote-mem-bw" in j:
        kw["bandwidth_bytes_per_ns"] = _json_int(
            src, "remote-mem-bw", j["remote-mem-bw"], minimum=0, maximum=_UINT64_MAX
        )
    if memory_type != "NO_MEMORY_EXPANSION" and kw.get("bandwidth_bytes_per_ns", 0) == 0:
        got = _show(j["remote-mem-bw"]) if "remote-mem-bw" in j else "absent"
        raise InputError.at(
            src,
            "remote-mem-bw",
            f"must be at least 1 B/ns for {memory_type} (got {got}); it is an integer "
            f"divisor, fractions are truncated",
        )
    return RemoteMemoryConfig(**kw)


# ---------------------------------------------------------------------------- comm groups
def load_comm_groups_json(path: PathLike | None, total_npus: int) -> dict[int, tuple[int, ...]]:
    """Read a communicator-group JSON: ``{"<group id>": [npu, ...], ...}``.

    Member order is kept as written (native rings follow it). Like ASTRA-sim, a path that is
    None or contains the substring "empty" anywhere (directories included) means "no groups"
    and is not opened.
    """
    if path is None or NO_GROUPS_MARKER in os.fspath(path):
        return {}
    src = os.fspath(path)
    return comm_groups_from_mapping(_load_json_object(src, "communicator-group JSON"), src, total_npus)


def ignored_comm_groups_warning(path: PathLike | None) -> str | None:
    """The warning for a comm-group file ASTRA-sim (and so we) would not open, else None.

    Any path containing "empty" means "no groups" there; only the literal default ``empty``
    says so on purpose, so a real file such as ``groups_nonempty.json`` gets a warning.
    """
    if path is None or NO_GROUPS_MARKER not in os.fspath(path) or os.fspath(path) == NO_GROUPS_MARKER:
        return None
    return (f"{os.fspath(path)}: comm-group file ignored: ASTRA-sim reads any path containing "
            f"'{NO_GROUPS_MARKER}' as 'no groups'; rename it (or its folder) to use its groups")


def comm_groups_from_mapping(j: Any, src: str, total_npus: int) -> dict[int, tuple[int, ...]]:
    """A comm-group JSON's object (from a file, or inline in a scenario); errors name ``src``."""
    j = _require_mapping(j, src, "communicator groups", '"1": [0, 1]')
    groups: dict[int, tuple[int, ...]] = {}
    for key, members in j.items():
        if isinstance(key, int) and not isinstance(key, bool):  # a YAML key written as a number
            key = str(key)
        if not isinstance(key, str):
            raise InputError.at(src, _show(key), "is not a group id; keys must be decimal integers > 0",
                                kind="group")
        if not re.fullmatch(r"[1-9][0-9]*", key) or int(key) > _INT32_MAX:
            raise InputError.at(
                src,
                key,
                "is not a group id; keys must be decimal integers > 0 (0 means all NPUs)",
                kind="group",
            )
        if not isinstance(members, list) or not members:
            raise InputError.at(
                src, key, f"must be a non-empty list of NPU ids (got {_show(members)})", kind="group"
            )
        seen: set[int] = set()
        for npu in members:
            if isinstance(npu, bool) or not isinstance(npu, int) or not 0 <= npu < total_npus:
                raise InputError.at(
                    src,
                    key,
                    f"lists {_show(npu)}, which is not an NPU id; the network has {total_npus} "
                    f"NPUs (0..{total_npus - 1})",
                    kind="group",
                )
            if npu in seen:
                raise InputError.at(src, key, f"lists NPU {npu} twice", kind="group")
            seen.add(npu)
        groups[int(key)] = tuple(members)
    return groups
