"""Physical topologies: one file per building block, each a :class:`BasicTopology`.

A topology knows its NPU count, builds the networkx graph of its devices and links, and
answers how many hops a message between two NPUs crosses. Register a new one by adding a
file and one line in ``REGISTRY``; its name is what network YAML files write.
"""

from __future__ import annotations

from simpy_astra.topologies.base import BasicTopology, CostPart
from simpy_astra.topologies.fully_connected import FullyConnected
from simpy_astra.topologies.graph import GraphSpec, GraphSpecError, GraphTopology, from_networkx
from simpy_astra.topologies.line import Line
from simpy_astra.topologies.ring import Ring
from simpy_astra.topologies.switch import Switch

REGISTRY: dict[str, type[BasicTopology]] = {
    "Ring": Ring,
    "FullyConnected": FullyConnected,
    "Switch": Switch,
    # beyond ASTRA-sim
    "Line": Line,
    "Graph": GraphTopology,  # needs the network YAML's `graph` mapping
}
_OURS = frozenset(REGISTRY.values())


def register(name: str, topology: type[BasicTopology]) -> type[BasicTopology]:
    """Make network YAMLs' ``topology: [name]`` build ``topology`` (a BasicTopology subclass)."""
    if not (isinstance(topology, type) and issubclass(topology, BasicTopology)):
        raise TypeError(f"topology '{name}': {topology!r} is not a BasicTopology subclass")
    REGISTRY[name] = topology
    return topology


def lookup(name: str) -> type[BasicTopology] | None:
    """The topology class a network YAML names: ours, a registered one, ``pkg.mod:Class``,
    or an installed ``simpy_astra.topologies`` entry point; None if nothing has that name.
    Raises :class:`simpy_astra.plugins.PluginError` for a plugin that cannot be loaded."""
    found = REGISTRY.get(name)
    if found is not None:
        return found
    from simpy_astra.plugins import TOPOLOGIES_GROUP, from_entry_point, import_object

    found = import_object(name) if ":" in name else from_entry_point(TOPOLOGIES_GROUP, name)
    if found is None:
        return None
    try:
        return register(name, found)
    except TypeError as exc:
        from simpy_astra.plugins import PluginError

        raise PluginError(str(exc)) from None


def build(name: str, npus_count: int, bandwidth_gbps: float, latency_ns: float,
          graph: GraphSpec | None = None) -> BasicTopology:
    """One dimension of a network; ``graph`` is the parsed ``graph`` mapping for Graph."""
    if name == "Graph":
        if graph is None:
            raise GraphSpecError("graph", "is missing; topology Graph needs a graph mapping")
        return GraphTopology(npus_count, bandwidth_gbps, latency_ns, graph)
    topology = lookup(name)
    if topology in _OURS:
        return topology(npus_count, bandwidth_gbps, latency_ns)
    try:  # a plugin's class: what it raises is its author's error, reported as such
        return topology(npus_count, bandwidth_gbps, latency_ns)
    except (Exception, SystemExit) as exc:  # noqa: BLE001
        from simpy_astra.plugins import PluginError, user_code_problem

        raise PluginError(user_code_problem(f"topology '{name}'", exc), exc) from None


__all__ = ["register", "lookup", "BasicTopology", "CostPart", "Ring", "FullyConnected", "Switch", "Line",
           "GraphTopology", "GraphSpec", "from_networkx",
           "GraphSpecError", "REGISTRY", "build"]
