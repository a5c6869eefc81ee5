"""What every one-dimensional topology offers the network backends."""

from __future__ import annotations

import networkx as nx


class BasicTopology:
    """A one-dimensional building block of ``npus_count`` NPUs with uniform links.

    NPUs are graph nodes ``0 .. npus_count-1``; switches, if any, are nodes numbered after
    them (as in ASTRA-sim's congestion-aware backend). Every directed edge carries
    ``bandwidth_gbps`` and ``latency_ns``.
    """

    name = "basic"

    def __init__(self, npus_count: int, bandwidth_gbps: float, latency_ns: float) -> None:
        self.npus_count = npus_count
        self.bandwidth_gbps = bandwidth_gbps
        self.latency_ns = latency_ns

    def hops(self, src: int, dst: int) -> int:
        """Links a message from ``src`` to ``dst`` crosses (``src != dst``)."""
        raise NotImplementedError

    def links(self) -> list[tuple[int, int]]:
        """Directed links as (from device, to device)."""
        raise NotImplementedError

    def route(self, src: int, dst: int) -> list[int]:
        """Devices a message visits, ``src`` first and ``dst`` last."""
        raise NotImplementedError

    def link_params(self, src: int, dst: int) -> tuple[float, float]:
        """(bandwidth_gbps, latency_ns) of the directed link ``src -> dst``."""
        return self.bandwidth_gbps, self.latency_ns

    def path_profile(self, src: int, dst: int) -> tuple[float, float]:
        """(summed link latency ns, slowest link GB/s) from ``src`` to ``dst``: what the
        congestion-unaware backend charges. Uniform links: ``hops * latency``, ``bandwidth``."""
        return self.hops(src, dst) * self.latency_ns, self.bandwidth_gbps

    def device_label(self, device: int) -> int | str:
        """How reports name a device (switches may have names)."""
        return device

    def graph(self) -> nx.DiGraph:
        """The physical topology as a directed graph with link attributes."""
        g = nx.DiGraph(name=self.name)
        g.add_nodes_from(range(self.npus_count), kind="npu")
        for u, v in self.links():
            for node in (u, v):
                if node not in g:
                    g.add_node(node, kind="switch", label=self.device_label(node))
            bw, lat = self.link_params(u, v)
            g.add_edge(u, v, bandwidth_gbps=bw, latency_ns=lat)
        return g
