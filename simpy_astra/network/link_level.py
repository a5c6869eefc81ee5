"""What the link-level backends (congestion-aware, packet) share, so neither derives from the
other: the :class:`~simpy_astra.network.fabric.Fabric`, one live link per directed edge of
its graph (made at start, in the fabric's edge order; a folded run makes its links on demand,
:meth:`LinkLevelNetwork.add_link`), one process per switch, the message
board, and the statistics and look-ups callers use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import simpy

from simpy_astra.infra.horizon import python_number
from simpy_astra.network.fabric import DeviceId, Fabric, LinkStats
from simpy_astra.network.link_resource import LinkResource
from simpy_astra.network.messages import Handler, MessageBoard
from simpy_astra.network.registered_name import RegisteredName
from simpy_astra.topologies.base import BasicTopology

if TYPE_CHECKING:
    import networkx as nx


class LinkLevelNetwork(RegisteredName):
    """A backend whose messages cross live links; subclasses say what a link and a switch are
    (:meth:`_new_link`, :meth:`_new_switch`) and how a message moves (``send``)."""

    name = "link_level"
    pair_delays_only = False  # messages share links
    has_links = True
    has_faults = True
    has_priorities = False  # (the congestion-aware backend's link models may have classes)

    def __init__(self, env: simpy.Environment, dims: list[BasicTopology], source: str = "<network>",
                 links_at_start: bool = True) -> None:
        """``links_at_start=False``: make no link now, only those :meth:`add_link` asks for (a
        folded run makes one link per orbit, :mod:`simpy_astra.folding.links`)."""
        self.env = env
        self.board = MessageBoard(env)
        self.dims = dims
        self.source = source
        self.fabric = Fabric(dims)
        self.grid = self.fabric.grid
        self.switches: dict[DeviceId, Any] = {}
        self._links: dict[tuple[DeviceId, DeviceId], Any] = {}
        self._by_label: dict[tuple[Any, Any], Any] | None = None
        is_switch = self.fabric.is_switch
        for u, v, _dim, bandwidth_gbps, latency_ns in self.fabric.edges() if links_at_start else ():
            self._links[(u, v)] = self._new_link(u, v, bandwidth_gbps, latency_ns,
                                                 into_switch=is_switch(v), from_switch=is_switch(u))

    def add_link(self, u: DeviceId, v: DeviceId) -> Any:
        """The live link ``u -> v``, made now if it was not made at start."""
        found = self._links.get((u, v))
        if found is None:
            _dim, bandwidth_gbps, latency_ns = self.fabric.link_params(u, v)
            is_switch = self.fabric.is_switch
            found = self._links[(u, v)] = self._new_link(u, v, bandwidth_gbps, latency_ns,
                                                         into_switch=is_switch(v), from_switch=is_switch(u))
        return found

    def _new_link(self, u: DeviceId, v: DeviceId, bandwidth_gbps: float, latency_ns: float, *,
                  into_switch: bool, from_switch: bool) -> LinkResource:
        raise NotImplementedError

    def _new_switch(self, device: DeviceId) -> Any:
        raise NotImplementedError

    def switch(self, device: DeviceId) -> Any:
        """The process of forwarding device ``device`` (started when first needed)."""
        sw = self.switches.get(device)
        if sw is None:
            sw = self.switches[device] = self._new_switch(device)
        return sw

    def _check_background(self, src: Any, dst: Any, size_bytes: Any, priority: Any = 0) -> tuple[int, int, int]:
        """``send_background``'s arguments at the API's boundary, as Python's ints (numpy's
        taken): NPUs that exist and differ, a size of 0 .. 2^63-1 bytes, a class >= 0 (0
        unless the backend has classes) (ValueError otherwise, never a wrap or a silent delivery)."""
        if isinstance(priority, bool) or not isinstance(priority, int) or priority < 0:
            raise ValueError(f"send_background: priority must be an integer >= 0 (got {priority!r})")
        if priority and not self.has_priorities:
            raise ValueError(f"send_background: the {self.name} backend has no traffic classes "
                             f"(priority={priority}); use priority=0, or congestion_aware with a link-model")
        npus = self.fabric.npus_count
        src, dst, size_bytes = python_number(src), python_number(dst), python_number(size_bytes)
        for name, npu in (("src", src), ("dst", dst)):
            if isinstance(npu, bool) or not isinstance(npu, int) or not 0 <= npu < npus:
                raise ValueError(f"send_background: {name} NPU {npu!r} does not exist (NPUs 0..{npus - 1})")
        if src == dst:
            raise ValueError(f"send_background: src and dst are both NPU {src}")
        if isinstance(size_bytes, bool) or not isinstance(size_bytes, int) or not 0 <= size_bytes < 2**63:
            raise ValueError(f"send_background: size_bytes must be an integer 0 .. 2^63-1 (got {size_bytes!r})")
        return src, dst, size_bytes

    # ------------------------------------------------------------------ what callers use
    @property
    def graph(self) -> nx.DiGraph:
        """The network as one ``networkx.DiGraph`` with the live links on its edges
        (``G.edges[u, v]["link"]``) and switch processes on their nodes (``"device"``)."""
        return self.fabric.graph(self._links, self.switches)

    def recv(self, dst: int, src: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        self.board.post_recv(dst, src, tag, size, fn, arg)

    def link(self, u: Any, v: Any) -> Any:
        """The directed link from device ``u`` to ``v``, by id or by label (a Graph switch's
        name, e.g. ``network.link("leaf0", "spine0")``)."""
        found = self._links.get((u, v))
        if found is not None:
            return found
        if self._by_label is None:
            label = self.fabric.label
            self._by_label = {(label(a), label(b)): lk for (a, b), lk in self._links.items()}
        found = self._by_label.get((u, v))
        if found is None:
            raise self.fabric.no_link(u, v)
        return found

    def label(self, device: DeviceId) -> int | str:
        return self.fabric.label(device)

    def fail_device(self, device: Any) -> None:
        """Fail switch (or NPU) ``device`` for good, now: every link into or out of it goes
        down and stays down (:meth:`~simpy_astra.network.link_resource.LinkResource.fail`), so what
        crosses it is never delivered; a switch process is marked ``failed`` too."""
        touched = [link for link in self._links.values() if device in (link.src, link.dst)]
        if not touched:  # by label, as link() takes it (a Graph switch's name, e.g. "sw")
            label = self.fabric.label
            ids = {d for link in self._links.values() for d in (link.src, link.dst) if label(d) == device}
            touched = [link for link in self._links.values() if ids & {link.src, link.dst}]
            device = next(iter(ids)) if len(ids) == 1 else device
        if not touched:
            raise self.fabric.no_link(device, None, "into or out of")
        switch = self.switches.get(device)
        if switch is not None and hasattr(switch, "fail"):
            switch.fail()
        for link in touched:
            link.fail()

    def links(self) -> list[Any]:
        """Every directed link, in the fabric's edge order."""
        return list(self._links.values())

    def link_stats(self) -> list[LinkStats]:
        """One :class:`LinkStats` per directed link, devices by their labels."""
        label = self.fabric.label
        return [self._stats(lk, label(u), label(v)) for (u, v), lk in self._links.items()]

    def _stats(self, link: Any, src: Any, dst: Any) -> LinkStats:
        return LinkStats(src, dst, link.bytes, link.busy_ns)
