"""Congestion-unaware backend: a message's delay depends only on its route, never on load.

delay = trunc(hops * latency + bytes / bandwidth), computed in the lowest network
dimension in which the two NPUs' coordinates differ (other differing dimensions are
ignored, as in the reference). Dimension 0 varies fastest in NPU ids. A Graph dimension,
whose links differ, charges its route's summed latency and its slowest link's bandwidth.
A cluster preset's network (``rails``) charges each pair its route through NVSwitch and the
rails instead (:mod:`simpy_astra.network.rails`), whichever dimensions the two differ in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import simpy

from simpy_astra.infra.units import network_gbps_to_bytes_per_ns
from simpy_astra.network.fabric import DeviceId, Fabric
from simpy_astra.network.faults import WithoutLinks
from simpy_astra.network.messages import Handler, MessageBoard
from simpy_astra.topologies.base import BasicTopology

if TYPE_CHECKING:
    import networkx as nx

    from simpy_astra.network.rails import Rails


class CongestionUnawareNetwork(WithoutLinks):
    name = "congestion_unaware"
    #: a message's delay depends on its two NPUs alone: symmetric NPUs may be folded
    pair_delays_only = True

    def __init__(self, env: simpy.Environment, dims: list[BasicTopology], rails: Rails | None = None) -> None:
        self.env = env
        self.rails = rails
        self.board = MessageBoard(env)
        self.dims = dims
        self.fabric = Fabric(dims)  # cheap: its graph (networkx) is built only if asked for
        self.grid = self.fabric.grid
        self._cache: dict[tuple[int, int, int], int] = {}
        self._arrive_after = self.board.arrive_after

    def delay_ns(self, src: int, dst: int, size: int) -> int:
        key = (src, dst, size)
        delay = self._cache.get(key)
        if delay is None:
            grid = self.grid
            dim = grid.first_difference(src, dst)
            if dim is None:
                raise ValueError(f"NPU {src} cannot send to itself")
            if self.rails is not None:
                latency_ns, bandwidth_gbps = self.rails.profile(src, dst)
            else:
                latency_ns, bandwidth_gbps = self.dims[dim].path_profile(grid.coord(src, dim), grid.coord(dst, dim))
            delay = int(latency_ns + size / network_gbps_to_bytes_per_ns(bandwidth_gbps))
            self._cache[key] = delay
        return delay

    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        entry = self.board.post_send(src, dst, tag, size, fn, arg)
        delay = self._cache.get((src, dst, size))
        if delay is None:
            delay = self.delay_ns(src, dst, size)
        self._arrive_after(delay, entry)

    def recv(self, dst: int, src: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        self.board.post_recv(dst, src, tag, size, fn, arg)

    @property
    def graph(self) -> nx.DiGraph:
        """The physical network as networkx (built, and networkx imported, on first use)."""
        return self.fabric.graph()

    def label(self, device: DeviceId) -> int | str:
        return self.fabric.label(device)
