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

from simpy_astra.infra.horizon import HORIZON_NS, HORIZON_TEXT, whole_ns
from simpy_astra.infra.units import network_gbps_to_bytes_per_ns
from simpy_astra.network.fabric import DeviceId, Fabric
from simpy_astra.network.faults import WithoutLinks
from simpy_astra.network.messages import Handler, MessageBoard
from simpy_astra.plugins import bad_return, users_method
from simpy_astra.topologies.base import BasicTopology

if TYPE_CHECKING:
    import networkx as nx

    from simpy_astra.network.rails import Rails


class CongestionUnawareNetwork(WithoutLinks):
    name = "congestion_unaware"
    #: what a user's subclass is, in its errors (:func:`simpy_astra.plugins.model_kind`)
    MODEL_KIND = "network backend"
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
        #: a user's topology checks the route of each pair a message takes (``check_route``)
        self._user_dims = any(getattr(t, "checks_answers", False) for t in dims)
        #: a backend of the user's times messages: its whole-ns ints are held to the horizon too
        #: (ours may pass it: a run that would end past it is then named by its sizes and speeds)
        self._users_delays = users_method(type(self), "message_delay_ns")
        self._arrive_after = self.board.schedule_arrival

    def delay_ns(self, src: int, dst: int, size: int) -> int:
        """The delay of a message, :meth:`message_delay_ns` computed once per (src, dst, size)."""
        key = (src, dst, size)
        delay = self._cache.get(key)
        if delay is None:
            dim = self.grid.first_difference(src, dst)
            if dim is None:
                raise ValueError(f"NPU {src} cannot send to itself")
            if self._user_dims and self.rails is None:
                self._check_route(src, dst, dim)
            delay = self.message_delay_ns(src, dst, size)
            if type(delay) is not int or delay < 0 or (delay > HORIZON_NS and self._users_delays):
                delay = _whole_ns(self, delay)  # once per distinct message
            self._cache[key] = delay
        return delay

    def _check_route(self, src: int, dst: int, dim: int) -> None:
        """Have a user's topology check the route this message's delay stands for."""
        topology = self.dims[dim]
        if getattr(topology, "checks_answers", False):
            topology.check_route(self.grid.coord(src, dim), self.grid.coord(dst, dim))

    def message_delay_ns(self, src: int, dst: int, size_bytes: int) -> int:
        """How long ``size_bytes`` take from NPU ``src`` to ``dst``: trunc(summed route latency
        + bytes / slowest bandwidth) in the first dimension the two differ in. The hook a
        backend of one's own overrides (docs/backends.md): a pure function of its arguments
        (it is asked once per distinct message; folding relies on it), whole ns >= 0."""
        grid = self.grid
        dim = grid.first_difference(src, dst)
        if self.rails is not None:
            latency_ns, bandwidth_gbps = self.rails.profile(src, dst)
        else:
            latency_ns, bandwidth_gbps = self.dims[dim].path_profile(grid.coord(src, dim), grid.coord(dst, dim))
        return int(latency_ns + size_bytes / network_gbps_to_bytes_per_ns(bandwidth_gbps))

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


def _whole_ns(network: CongestionUnawareNetwork, delay: Any) -> int:
    """A subclass's ``message_delay_ns`` in whole ns (:func:`~simpy_astra.infra.horizon.whole_ns`),
    or its error naming the class and method (NaN, a negative number, past the horizon, not a
    number)."""
    whole = whole_ns(delay)
    if whole is None:
        raise bad_return(network, "message_delay_ns", delay, f"a finite number of ns >= 0, within the horizon "
                         f"({HORIZON_TEXT})")
    return whole
