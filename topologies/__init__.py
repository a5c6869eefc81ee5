"""Physical topologies: one file per building block, each a :class:`BasicTopology`.

A topology knows its NPU count, builds the networkx graph of its devices and links, and
answers how many hops a message between two NPUs crosses. Register a new one by adding a
file and one line in ``REGISTRY``; its name is what network YAML files write.
"""

from __future__ import annotations

from topologies.base import BasicTopology, CostPart
from topologies.fully_connected import FullyConnected
from topologies.graph import GraphSpec, GraphSpecError, GraphTopology
from topologies.line import Line
from topologies.ring import Ring
from topologies.switch import Switch

REGISTRY: dict[str, type[BasicTopology]] = {
    "Ring": Ring,
    "FullyConnected": FullyConnected,
    "Switch": Switch,
    # beyond ASTRA-sim
    "Line": Line,
    "Graph": GraphTopology,  # needs the network YAML's `graph` mapping
}


def build(name: str, npus_count: int, bandwidth_gbps: float, latency_ns: float,
          graph: GraphSpec | None = None) -> BasicTopology:
    """One dimension of a network; ``graph`` is the parsed ``graph`` mapping for Graph."""
    if name == "Graph":
        if graph is None:
            raise GraphSpecError("graph", "is missing; topology Graph needs a graph mapping")
        return GraphTopology(npus_count, bandwidth_gbps, latency_ns, graph)
    return REGISTRY[name](npus_count, bandwidth_gbps, latency_ns)


__all__ = ["BasicTopology", "CostPart", "Ring", "FullyConnected", "Switch", "Line", "GraphTopology", "GraphSpec",
           "GraphSpecError", "REGISTRY", "build"]
