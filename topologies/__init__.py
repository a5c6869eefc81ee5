"""Physical topologies: one file per building block, each a :class:`BasicTopology`.

A topology knows its NPU count, builds the networkx graph of its devices and links, and
answers how many hops a message between two NPUs crosses. Register a new one by adding a
file and one line in ``REGISTRY``; its name is what network YAML files write.
"""

from __future__ import annotations

from topologies.base import BasicTopology
from topologies.fully_connected import FullyConnected
from topologies.line import Line
from topologies.ring import Ring
from topologies.switch import Switch

REGISTRY: dict[str, type[BasicTopology]] = {
    "Ring": Ring,
    "FullyConnected": FullyConnected,
    "Switch": Switch,
    # beyond ASTRA-sim
    "Line": Line,
}

__all__ = ["BasicTopology", "Ring", "FullyConnected", "Switch", "Line", "REGISTRY"]
