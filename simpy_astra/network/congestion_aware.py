"""Congestion-aware backend: every directed link is a FIFO server; messages queue for links.

As in ASTRA-sim's ``congestion_aware`` library, which handles one-dimensional networks:

* a message follows its topology's route hop by hop, store-and-forward, whole message;
* a link that is free starts a message at once, otherwise queues it (FIFO);
* a message starting on a link at ``t`` schedules, on the global queue and in this order,
  "arrived at the next device" at ``t + trunc(latency + bytes / B')`` and "link free" at
  ``t + trunc(bytes / B')`` (``B'`` in bytes/ns, GB = 2^30 B);
* "link free" marks the link free and starts the next queued message (here: the link's
  SimPy process, waiting on that timeout, resumes and takes the next message);
* arriving at a switch (its SimPy process, :class:`SwitchProcess`) or an intermediate NPU
  offers the message to the next link in that instant; arriving at the destination
  completes it (send/receive matching in :class:`MessageBoard`).

Beyond the reference, stacked dimensions work too (a 2D mesh is [Line, Line], a torus
[Ring, Ring, Ring]): a message crosses dimension 0 first, then 1, ... (dimension-order, XY
routing on a mesh), each hop on that dimension's links with its bandwidth and latency. A
Graph dimension (``topologies/graph.py``) gives every link its own bandwidth and latency.

Devices, links and routes are the :class:`~simpy_astra.network.fabric.Fabric`'s (shared
with the packet backend through :class:`~simpy_astra.network.link_level.LinkLevelNetwork`).
Every directed link is a :class:`~simpy_astra.network.link.Link`, a SimPy resource with
live statistics and speed served by its own SimPy process (``link.process``;
``network.link(u, v)``, ``network.graph.edges[u, v]["link"]``); every switch is a SimPy
process. A message is one small :class:`_Message` handed from link
to link (no SimPy process per message); routes are tuples of links computed once per
(src, dst).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import simpy

from simpy_astra.engine.events import Doorbell
from simpy_astra.network.checked_models import checked_link_model, checked_switch_model
from simpy_astra.network.fabric import DeviceId
from simpy_astra.network.link import Link
from simpy_astra.network.link_level import LinkLevelNetwork
from simpy_astra.network.messages import Handler
from simpy_astra.network.switch import SwitchElement
from simpy_astra.plugins import PluginError, class_name, is_ours
from simpy_astra.topologies.base import BasicTopology


class _Message:
    """One message in flight: its board key (None for background traffic), route (links),
    the index of the hop it is on, its size, for background traffic the event to succeed
    on delivery, its ``priority`` class (0: highest, the workload's) and ``ecn`` (a link
    model marked it)."""

    __slots__ = ("key", "route", "hop", "size", "done", "priority", "ecn")

    def __init__(self, key: Any, route: tuple, size: int, done: simpy.Event | None = None,
                 priority: int = 0) -> None:
        self.key = key
        self.route = route
        self.hop = 0
        self.size = size
        self.done = done
        self.priority = priority
        self.ecn = False

    @property
    def next_link(self) -> Any:
        """The link the message is handed to next, None from its last one: at a switch, the
        output port it leaves by (a switch model's per-port queues key on it)."""
        hop = self.hop + 1
        return self.route[hop] if hop < len(self.route) else None


class SwitchProcess(SwitchElement):
    """The built-in switch: a SimPy process that forwards each message arriving on one of its
    input links to the message's next link, at the instant it arrives (a link's arrival
    event rings the switch's :class:`~simpy_astra.engine.events.Doorbell`, so the process runs in
    that instant, as the reference forwards inside that event). The doorbell is its one
    shortcut; the rest of the contract is :class:`~simpy_astra.network.switch.SwitchElement`'s.

    ``forward_in_arrival``: the network's way on is our own links' ``offer``, which cannot
    raise and never hands the message on within the call (a user's link model may do
    either), so an unwatched switch hands a message on through
    :meth:`~simpy_astra.engine.events.Doorbell.run_or_ring`: in the arrival itself while its
    process waits."""

    def __init__(self, env: simpy.Environment, device: Any, forward: Callable[[Any], None], *,
                 forward_in_arrival: bool = False) -> None:
        self._forward_in_arrival = forward_in_arrival
        super().__init__(env, device, forward)

    def _start_process(self) -> simpy.Process:
        self._doorbell = doorbell = Doorbell(self.env)
        self._hand_on = doorbell.run_or_ring if self._forward_in_arrival else doorbell.ring
        return self.env.process(doorbell.serve())

    def receive(self, msg: _Message) -> None:
        if self.probe_switch_forward is None:
            self._hand_on(self._forward, msg)  # the network's way on directly while nobody watches
        else:
            self._doorbell.ring(self.send_on, msg)


def _at_whole_ns(env: simpy.Environment, deliver: Callable[[Any], None], model: type) -> Callable[[Any], None]:
    """``deliver`` for a user's link model, refusing a delivery off whole nanoseconds (the
    contract; a 0.5 ns model would print fractional cycles as if they were figures)."""
    def checked(item: Any) -> None:
        now = env.now
        if now != int(now):
            raise PluginError(f"link model '{model.__module__}:{model.__qualname__}' delivered a message at "
                              f"{now} ns; a link delivers at whole nanoseconds (truncate its delays)")
        deliver(item)

    return checked


class CongestionAwareNetwork(LinkLevelNetwork):
    name = "congestion_aware"

    has_priorities = True  # a link model may serve classes (send_background's priority)

    def __init__(self, env: simpy.Environment, dims: list[BasicTopology], source: str = "<network>",
                 link_model: type | None = None, switch_model: type | None = None,
                 link_params: dict[str, Any] | None = None, switch_params: dict[str, Any] | None = None,
                 links_at_start: bool = True,
                 link_of_hop: Callable[[DeviceId, DeviceId], Any] | None = None) -> None:
        """``link_model`` / ``switch_model``: classes that replace :class:`Link` and
        :class:`SwitchProcess` (the contract: ``simpy_astra/network/README.md``), built with
        ``link_params`` / ``switch_params`` as keyword arguments (the network YAML's).
        ``links_at_start`` and ``link_of_hop`` (which live link carries a route's hop
        ``u -> v``; default: the link ``u -> v``) are a folded run's hooks
        (:mod:`simpy_astra.folding.links`: one link per orbit carries every hop of it)."""
        self._routes: dict[tuple[int, int], tuple[Link, ...]] = {}
        self.link_model = Link if link_model is None else link_model
        self.switch_model = SwitchProcess if switch_model is None else switch_model
        # what a user's model is built as: held to its contract's once-per-item rules, chosen here once
        self._link_class = checked_link_model(self.link_model)
        self._switch_class = checked_switch_model(self.switch_model)
        self._link_params = dict(link_params or {})
        self._switch_params = dict(switch_params or {})
        self._link_of_hop = link_of_hop
        super().__init__(env, dims, source, links_at_start=links_at_start)

    def _new_link(self, u: DeviceId, v: DeviceId, bandwidth_gbps: float, latency_ns: float, *,
                  into_switch: bool, from_switch: bool) -> Link:
        deliver = self.switch(v).receive if into_switch else self._arrived
        if is_ours(self.link_model):
            return self.link_model(self.env, u, v, bandwidth_gbps, latency_ns, deliver, **self._link_params)
        deliver = _at_whole_ns(self.env, deliver, self.link_model)  # a user's model: hold it to the contract
        try:
            return self._link_class(self.env, u, v, bandwidth_gbps, latency_ns, deliver, **self._link_params)
        except ValueError as exc:  # the base refused the speed or latency the model handed it
            if not str(exc).startswith(f"link {u}->{v}: "):
                raise
            raise PluginError(f"link model '{class_name(self.link_model)}', method __init__() passed "
                              f"LinkElement.__init__ a link it cannot have: {exc} (the network gives "
                              f"{bandwidth_gbps:g} GB/s and {latency_ns:g} ns); this is an error in that "
                              f"code, not in simpy-astra") from exc

    def _new_switch(self, device: DeviceId) -> SwitchProcess:
        if self.switch_model is SwitchProcess:
            return SwitchProcess(self.env, device, self._arrived, forward_in_arrival=is_ours(self.link_model),
                                 **self._switch_params)
        return self._switch_class(self.env, device, self._arrived, **self._switch_params)

    # ------------------------------------------------------------------ public interface
    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        key = self.board.post_send(src, dst, tag, size, fn, arg)
        route = self._routes.get((src, dst))
        if route is None:
            route = self.route(src, dst)
        route[0].offer(_Message(key, route, size))

    def send_background(self, src: int, dst: int, size_bytes: int, priority: int = 0) -> simpy.Event:
        """Background traffic: ``size_bytes`` from NPU ``src`` to ``dst`` along the usual
        route, queued with the workload's messages, matched by no receive. The event
        succeeds (value: the time) when the last byte reached ``dst``. ``priority``: its
        class for link models that have classes (0 is the workload's)."""
        src, dst, size_bytes = self._check_background(src, dst, size_bytes, priority)
        done = self.env.event()
        route = self._routes.get((src, dst)) or self.route(src, dst)
        route[0].offer(_Message(None, route, size_bytes, done, priority))
        return done

    def route(self, src: int, dst: int) -> tuple[Link, ...]:
        """The links from NPU ``src`` to ``dst``: the fabric's dimension-order route (XY on a
        mesh; a Graph dimension's own shortest path, ECMP pick or given route)."""
        route = self._routes.get((src, dst))
        if route is None:
            path = self.fabric.device_paths(src, dst)[0]
            hops = zip(path[:-1], path[1:], strict=True)
            if self._link_of_hop is None:
                links = self._links
                route = tuple(links[hop] for hop in hops)
            else:
                route = tuple(self._link_of_hop(u, v) for u, v in hops)
            self._routes[(src, dst)] = route
        return route

    # ------------------------------------------------------------------ internals
    def _arrived(self, msg: _Message) -> None:
        """``msg`` reached the far end of its current hop: forward it at once (through a
        switch or an intermediate NPU) or deliver it."""
        hop = msg.hop + 1
        route = msg.route
        if hop == len(route):
            key = msg.key
            if key is not None:
                key()  # the board's entry: it arrived (MessageBoard.arrived, a call less per message)
            else:
                msg.done.succeed(self.env.now)
        else:
            msg.hop = hop
            route[hop].offer(msg)
