"""The network YAML (ASTRA-sim's ``NetworkParser``): one entry per dimension, plus our extensions
(Graph dimensions, packet-backend sizes, the cost block).
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import math
import os
from dataclasses import dataclass, field
from typing import Any

from simpy_astra.config.field_values import require_mapping, show_value
from simpy_astra.config.file_kinds import refuse_another_kind, register_keys
from simpy_astra.config.file_text import PathLike
from simpy_astra.config.unknown_keys import unknown_key_warnings
from simpy_astra.config.yaml_reader import load_yaml_mapping
from simpy_astra.engine.collective_timer import CollectiveTimer
from simpy_astra.errors import InputError, digit_groups_fix, integer_fix
from simpy_astra.infra import horizon
from simpy_astra.infra.stopping import requested
from simpy_astra.infra.units import network_gbps_to_bytes_per_ns
from simpy_astra.network.cost_model import CostPrices, CostSpecError, tiers_for
from simpy_astra.plugins import NOT_LOADED_HINT, PluginError, import_object, user_code_problem, users_entry
from simpy_astra.topologies import REGISTRY as TOPOLOGY_REGISTRY
from simpy_astra.topologies import GraphSpec, GraphSpecError, networkx_dimension_values, spec_from_networkx
from simpy_astra.topologies import build as build_topology
from simpy_astra.topologies import lookup as lookup_topology
from simpy_astra.topologies import refusal as topology_refusal

TOPOLOGY_NAMES = tuple(TOPOLOGY_REGISTRY)  # ASTRA-sim's three building blocks, plus ours


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
    #: the ``cost:`` block's prices and tiers (:mod:`simpy_astra.network.cost_model`), None: defaults
    cost: CostPrices | None = None
    #: packet backend only (``packet-size``, ``switch-buffer``); None: the backend's defaults
    packet_size_bytes: int | None = None
    switch_buffer_bytes: int | None = None
    #: one line per key no reader uses (a misspelt ``bandwith``), printed with the run's warnings
    warnings: tuple[str, ...] = field(default=(), compare=False)
    #: congestion-aware backend only (``link-model``, ``switch-model``): the element classes
    #: (:mod:`simpy_astra.network.models`) by the names the YAML gives; None: the built-in ones
    link_model: str | None = None
    switch_model: str | None = None
    #: their keyword arguments (``link-model: {class: NAME, key: value}``), as (key, value) pairs
    link_params: tuple[tuple[str, Any], ...] = ()
    switch_params: tuple[tuple[str, Any], ...] = ()
    #: the models handed in from Python (``"link_model"``, ``"switch_model"``), whose messages
    #: name the keyword given, not a YAML field the scenario does not have
    models_from_python: tuple[str, ...] = field(default=(), compare=False)
    #: a cluster preset's machine (:class:`~simpy_astra.network.rails.Rails`): the
    #: congestion-unaware backend charges each pair its route through NVSwitch and the rails;
    #: None (every ASTRA-sim input): the reference's lowest-differing-dimension rule
    rails: Any = None
    #: the collectives timed in closed form, a cluster preset's as NCCL times them
    #: (:class:`~simpy_astra.engine.nccl_collectives.NcclAllReduce`); None: played on the network
    nccl: CollectiveTimer | None = None

    def model_field(self, key: str) -> str:
        """The input that chose the ``key`` (``"switch_model"``) element model, as messages name it."""
        if key in self.models_from_python:
            return f"{key}="
        return f"{self.source}: field '{key.replace('_', '-')}'"

    def topology_field(self, dim: int) -> str:
        """The input that chose dimension ``dim``'s topology, as its errors name it."""
        return f"{self.source}: field 'topology[{dim}]'"

    @property
    def num_dims(self) -> int:
        return len(self.topology)

    @property
    def total_npus(self) -> int:
        return math.prod(self.npus_count)


_NETWORK_KEYS = ("topology", "npus_count", "bandwidth", "latency")
#: a one-dimension value of each, for the error that asks for a list (that of ASTRA-sim's Ring_8npus.yml)
_EXAMPLES = {"topology": "[ Ring ]", "npus_count": "[ 8 ]", "bandwidth": "[ 50.0 ]", "latency": "[ 500.0 ]"}
#: every key a network YAML is read for: ASTRA-sim's four lists, then our extensions
KNOWN_NETWORK_KEYS = (*_NETWORK_KEYS, "graph", "packet-size", "switch-buffer", "cost", "link-model", "switch-model")
register_keys("network YAML", KNOWN_NETWORK_KEYS)


def load_network_yaml(path: PathLike) -> NetworkConfig:
    """Read a network YAML (``NetworkParser``): four equal-length lists, one entry per dim."""
    src = os.fspath(path)
    return network_from_mapping(load_yaml_mapping(src, "network YAML", "topology: [ Ring ]"), src)


def network_from_mapping(data: Any, src: str) -> NetworkConfig:
    """A network YAML's mapping (from a file, or inline in a scenario); errors name ``src``."""
    data = require_mapping(data, src, "network", "topology: [ Ring ]")
    if isinstance(data.get("topology"), dict) and "networkx" in data["topology"]:
        topology, npus, bandwidth, latency, specs = _networkx_dimension(data, src)
    else:
        topology, npus, bandwidth, latency, specs = _listed_dimensions(data, src)
    return _with_extensions(data, src, topology, npus, bandwidth, latency, specs)


def _four_lists(data: dict, src: str) -> dict[str, list[Any]]:
    """topology, npus_count, bandwidth and latency: each a list, one entry per dimension."""
    lists: dict[str, list[Any]] = {}
    if not any(key in data for key in _NETWORK_KEYS) and "network" in data and "workload" in data:
        raise InputError(f"{src}: is a scenario (it has workload: and network:), not a network YAML; give its "
                         f"network: block as a file of its own, or run the scenario: simpy-astra run {src}")
    for key in _NETWORK_KEYS:
        if key not in data:
            refuse_another_kind(data, src, "network YAML")
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
                f"must be a non-empty list with one entry per dimension, e.g. {_EXAMPLES[key]} (got {show_value(value)})"
                + ("; or {networkx: package.module:function}" if key == "topology" and isinstance(value, dict)
                   else ""),
            )
        lists[key] = value
    dims = len(lists["topology"])
    for key in _NETWORK_KEYS[1:]:
        if len(lists[key]) != dims:
            raise InputError.at(
                src,
                key,
                f"has {len(lists[key])} entr{'y' if len(lists[key]) == 1 else 'ies'} but topology has {dims}; all four lists "
                f"need one entry per dimension",
            )
    return lists


def _listed_dimensions(data: dict, src: str) -> tuple[list[str], list[int], tuple[float, ...],
                                                      tuple[float, ...], list[GraphSpec | None]]:
    """ASTRA-sim's four lists (and a Graph dimension's ``graph`` mapping), one entry per dimension."""
    lists = _four_lists(data, src)
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
                    (f"; did you mean '{t}'?" for t in TOPOLOGY_NAMES if t.lower() == name.lower()),
                    f"; or package.module:Class; {NOT_LOADED_HINT}" if name.isidentifier() else "",
                )
            elif isinstance(name, dict):  # a class with parameters, as link-model: {class: ...} takes them
                fix = ("; a topology class of your own is named as 'package.module:Class' and takes "
                       "npus_count, bandwidth and latency alone; a fabric with parameters of its own is a "
                       "function: topology: {networkx: package.module:function, KEY: value}")
            raise InputError.at(
                src,
                f"topology[{i}]",
                f"must be one of {', '.join(TOPOLOGY_NAMES)} (case-sensitive; got {show_value(name)}){fix}",
            )
        topology.append(name)

    npus: list[int] = []
    for i, n in enumerate(lists["npus_count"]):
        if isinstance(n, bool) or not isinstance(n, int) or n <= 1:
            raise InputError.at(src, f"npus_count[{i}]", f"must be an integer > 1 (got {show_value(n)}){integer_fix(n, 2)}")
        npus.append(n)

    def numbers(key: str, minimum: float, strict: bool, unit: str) -> tuple[float, ...]:
        out = []
        for i, v in enumerate(lists[key]):
            ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            if not ok or (v <= minimum if strict else v < minimum):
                rule = f"> {minimum:g}" if strict else f">= {minimum:g}"
                raise InputError.at(src, f"{key}[{i}]", f"must be a number {rule} ({unit}; got {show_value(v)})"
                                                        f"{digit_groups_fix(v)}")
            out.append(float(v))
        return tuple(out)

    bandwidth = numbers("bandwidth", 0.0, True, "GB/s per link")
    latency = numbers("latency", 0.0, False, "ns per link")
    for i, (bw, lat) in enumerate(zip(bandwidth, latency, strict=True)):
        # simulated time must fit the horizon (2^63 ns): a hop, and a byte, must
        horizon.check_ns(lat, src, f"latency[{i}]", " per hop")
        horizon.check_bandwidth(network_gbps_to_bytes_per_ns(bw), src, f"bandwidth[{i}]")
    if "graph" in data and "Graph" not in topology:
        raise InputError.at(src, "graph", "is only read for a 'Graph' dimension; add Graph to topology "
                                          "or remove the graph mapping")
    specs: list[GraphSpec | None] = []
    for i, name in enumerate(topology):
        if name != "Graph":
            refused = topology_refusal(name, npus[i], bandwidth[i], latency[i])
            if refused:  # a class of the user's own that cannot take these values says why
                raise InputError.at(src, f"topology[{i}]", f"({name}) {refused}")
            specs.append(None)
            continue
        try:
            spec = GraphSpec.parse(data.get("graph"), npus[i]) if "graph" in data else None
            build_topology(name, npus[i], bandwidth[i], latency[i], spec)  # connectivity check
        except GraphSpecError as exc:
            raise InputError.at(src, exc.field, exc.problem) from None
        _graph_links_within_horizon(data.get("graph"), src)
        specs.append(spec)
    return topology, npus, bandwidth, latency, specs


def _graph_links_within_horizon(graph: Any, src: str) -> None:
    """A graph link's own latency and bandwidth (parsed: finite and positive) within the
    horizon, as a dimension's are: a link of 1e300 ns stopped an aware or packet run as a
    simpy-astra bug, and one of 1e-300 GB/s hung the packet backend."""
    for i, item in enumerate(graph.get("links") or [] if isinstance(graph, dict) else []):
        if isinstance(item, dict) and "latency" in item:
            horizon.check_ns(float(item["latency"]), src, f"graph.links[{i}].latency", " per hop")
        if isinstance(item, dict) and "bandwidth" in item:
            horizon.check_bandwidth(network_gbps_to_bytes_per_ns(float(item["bandwidth"])), src,
                                    f"graph.links[{i}].bandwidth")


#: the keys of ``topology: {networkx: pkg.mod:build, ...}``
NETWORKX_KEYS = ("networkx", "routing", "routes")


def _networkx_dimension(data: dict, src: str) -> tuple[list[str], list[int], tuple[float, ...],
                                                       tuple[float, ...], list[GraphSpec | None]]:
    """``topology: {networkx: pkg.mod:build}``: one Graph dimension from the DiGraph the user's
    function returns. Its nodes and edges give the NPU count and every link's speed, so the
    four lists are not read; anything wrong is one line naming the function and the culprit."""
    block = data["topology"]
    for key in ("npus_count", "bandwidth", "latency", "graph"):
        if key in data:
            raise InputError.at(src, key, "is not read with topology: {networkx: ...}: the graph's nodes "
                                          "and edges give the NPUs and every link's speed; remove it")
    name = block.get("networkx")
    if not isinstance(name, str) or ":" not in name:
        raise InputError.at(src, "topology.networkx", f"must name a function as package.module:function "
                                                      f"returning a networkx.DiGraph (got {show_value(name)})")
    try:
        build = import_object(name)
    except PluginError as exc:
        raise InputError.at(src, "topology.networkx", str(exc)) from None
    if not callable(build):
        raise InputError.at(src, "topology.networkx", f"names {name}, a {type(build).__name__}; it must be a "
                                                      f"function returning a networkx.DiGraph")
    params = {key: value for key, value in block.items() if key not in NETWORKX_KEYS}
    problem = _builder_params_problem(build, params)
    if problem:
        raise InputError.at(src, "topology", f"{name} {problem}")
    try:
        graph = build(**params)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - the user's function failed
        if isinstance(exc, KeyboardInterrupt) and requested() is not None:
            raise  # the user's Ctrl-C, not the function's error
        error = InputError.at(src, "topology.networkx", user_code_problem(f"function '{name}'", exc))
        error.original = exc  # type: ignore[attr-defined]  # --debug prints its traceback
        raise error from None
    try:
        n, spec = graph_spec(graph, block.get("routing"), block.get("routes"))
    except GraphSpecError as exc:
        if exc.field.startswith(("routing", "routes")) and exc.field.partition("[")[0] in block:
            raise InputError.at(src, f"topology.{exc.field}", exc.problem) from None
        raise InputError.at(src, "topology.networkx", f"{name} returned {graph_problem(exc)}") from None
    bandwidth, latency = networkx_dimension_values(spec)
    horizon.check_ns(latency, src, "topology.networkx", " per hop")
    horizon.check_bandwidth(network_gbps_to_bytes_per_ns(bandwidth), src, "topology.networkx")
    return ["Graph"], [n], (bandwidth,), (latency,), [spec]


def _builder_params_problem(build: Any, params: dict[str, Any]) -> str | None:
    """Why ``build(**params)`` cannot be called, in words: the keys of ``topology:`` beside
    ``networkx``, ``routing`` and ``routes`` are the function's keyword arguments (a sweep
    axis ``network.topology.KEY`` varies one), so a misspelt one is named with the nearest."""
    try:
        signature = inspect.signature(build)
    except (TypeError, ValueError):
        return None  # not introspectable: the call itself will tell
    fields = signature.parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in fields):
        return None
    names = [p.name for p in fields if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for key in params:
        if key not in names:
            close = difflib.get_close_matches(str(key), [*names, *NETWORKX_KEYS], n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            takes = ", ".join(names) or "none"
            return (f"takes no parameter '{key}' ({hint}the keys beside networkx, routing and routes are its "
                    f"keyword arguments; it takes: {takes})")
    try:
        signature.bind(**params)
    except TypeError as exc:
        return f"cannot be called with {', '.join(params) or 'no parameters'}: {exc}"
    return None


def graph_spec(graph: Any, routing: Any = None, routes: Any = None) -> tuple[int, GraphSpec]:
    """(NPUs, spec) of a networkx graph handed in (:func:`spec_from_networkx`); a graph of
    one NPU is refused as ``npus_count: [1]`` is."""
    n, spec = spec_from_networkx(graph, routing, routes)
    if n < 2:
        raise GraphSpecError("graph", f"has {n} NPU; a network needs at least 2")
    return n, spec


def graph_problem(exc: GraphSpecError) -> str:
    """What is wrong with a graph handed in, after "returned" / "got"."""
    if exc.field in ("graph", "value"):
        return f"a {exc.field} that {exc.problem}"
    return f"a graph whose {exc.field} {exc.problem}"


def _packet_fits_buffer(src: str, packet_size: int | None, switch_buffer: int | None) -> None:
    """A switch buffer holds a packet, the one unset taken at its default (1 MiB buffers, 4 KiB
    packets): else the packet backend's own check ended the run as a bug report."""
    if packet_size is None and switch_buffer is None:
        return
    from simpy_astra.network.packet.trains import DEFAULT_PACKET_SIZE_BYTES, DEFAULT_SWITCH_BUFFER_BYTES

    packet = DEFAULT_PACKET_SIZE_BYTES if packet_size is None else packet_size
    buffer = DEFAULT_SWITCH_BUFFER_BYTES if switch_buffer is None else switch_buffer
    if buffer >= packet:
        return
    if switch_buffer is None:
        raise InputError.at(src, "packet-size", f"must fit a switch buffer ({buffer} bytes, switch-buffer's default; "
                                                f"set switch-buffer to hold larger packets; got {packet})")
    which = "" if packet_size is not None else ", packet-size's default; set packet-size to send smaller ones"
    raise InputError.at(src, "switch-buffer", f"must hold at least one packet ({packet} bytes{which}; got {buffer})")


def _with_extensions(data: dict, src: str, topology: list[str], npus: list[int], bandwidth: tuple[float, ...],
                     latency: tuple[float, ...], specs: list[GraphSpec | None]) -> NetworkConfig:
    """The config of the dimensions read, with our extension keys (packet sizes, models, cost)."""
    def byte_count(key: str) -> int | None:
        """``packet-size`` / ``switch-buffer``: a whole number of bytes > 0, or absent."""
        if key not in data:
            return None
        v = data[key]
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise InputError.at(src, key, f"must be a whole number of bytes > 0 (got {show_value(v)}){integer_fix(v, 1)}")
        return v

    packet_size, switch_buffer = byte_count("packet-size"), byte_count("switch-buffer")
    _packet_fits_buffer(src, packet_size, switch_buffer)

    def model(key: str) -> tuple[str | None, tuple[tuple[str, Any], ...]]:
        """``link-model`` / ``switch-model``: a name that resolves to a class, or ``{class:
        name, param: value, ...}`` whose parameters the class's ``__init__`` takes; or absent."""
        if key not in data:
            return None, ()
        raw = data[key]
        params: dict[str, Any] = {}
        if isinstance(raw, dict):
            params = {str(k): v for k, v in raw.items() if k != "class"}
            if "class" not in raw:
                raise InputError.at(src, key, f"needs 'class:' naming the model when it is a mapping; "
                                              f"{_model_example(key, raw)}")
            raw = raw["class"]
        if not isinstance(raw, str) or not raw:
            raise InputError.at(src, key, f"must be a model name or package.module:Class, or {{class: name, "
                                          f"parameter: value}} (got {show_value(raw)})")
        # deferred: only link/switch models need network.models; an analytical run does not load it
        from simpy_astra.network.models import (
            LINK_ARGS,
            SWITCH_ARGS,
            check_params,
            lookup_link,
            lookup_switch,
            trial_problem,
        )
        try:
            cls = (lookup_link if key == "link-model" else lookup_switch)(raw)
        except PluginError as exc:
            raise InputError.at(src, key, str(exc)) from None
        problem = check_params(cls, params, LINK_ARGS if key == "link-model" else SWITCH_ARGS)
        if problem is None:
            try:
                problem = trial_problem(cls, params, link=key == "link-model")
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's __init__ failed: say so
                raise PluginError(user_code_problem(users_entry(exc) or f"{key} '{raw}'", exc), exc) from None
        if problem is not None:
            raise InputError.at(src, key, f"({raw}) {problem}")
        return raw, tuple(params.items())

    (link_model, link_params), (switch_model, switch_params) = model("link-model"), model("switch-model")
    net = NetworkConfig(
        topology=tuple(topology),
        npus_count=tuple(npus),
        bandwidth_gbps=bandwidth,
        latency_ns=latency,
        source=src,
        graph_specs=tuple(specs) if any(specs) else (),
        packet_size_bytes=packet_size,
        switch_buffer_bytes=switch_buffer,
        warnings=tuple(unknown_key_warnings(src, data, KNOWN_NETWORK_KEYS, "network")),
        link_model=link_model,
        switch_model=switch_model,
        link_params=link_params,
        switch_params=switch_params,
    )
    if "cost" in data:  # beyond ASTRA-sim: prices for the network cost model
        net = with_cost(net, data["cost"], src)
    return net


def _model_example(key: str, raw: dict) -> str:
    """The fix of a ``link-model``/``switch-model`` mapping without ``class:``: the flat form of
    the model's name as its one key (``{ecn: {threshold_bytes: 1}}``), else an example of that
    field's own kind (a switch model's for ``switch-model``, not a link model's)."""
    if len(raw) == 1:
        name, params = next(iter(raw.items()))
        if isinstance(params, dict) and all(isinstance(k, str) for k in params):
            flat = ", ".join([f"class: {name}", *(f"{k}: {show_value(v)}" for k, v in params.items())])
            return f"write {{{flat}}}"
    return "e.g. {class: delay, delay_ns: 100}" if key == "switch-model" else "e.g. {class: ecn, threshold_bytes: 32768}"


def with_cost(net: NetworkConfig, block: Any, src: str) -> NetworkConfig:
    """``net`` with a ``cost:`` block laid over the one it has; errors name ``src``."""
    try:
        given = CostPrices.parse(block)
        prices = given.over(net.cost)
        unused = given.unused(tiers_for(net, prices), src)
    except CostSpecError as exc:
        raise InputError.at(src, exc.field, exc.problem) from None
    return dataclasses.replace(net, cost=prices, warnings=(*net.warnings, *unused))
