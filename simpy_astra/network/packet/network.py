"""The packet backend's network: routes messages as trains over ports, re-shares rates among the
trains that changed, and drives the switch processes (the model is described in
:mod:`simpy_astra.network.packet`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import Any

import simpy
from simpy.events import Timeout

from simpy_astra.network.fabric import DeviceId, LinkStats
from simpy_astra.network.link_level import LinkLevelNetwork
from simpy_astra.network.link_resource import Transmission
from simpy_astra.network.messages import Handler
from simpy_astra.network.packet.port import Port
from simpy_astra.network.packet.rates import Solutions, train_rates
from simpy_astra.network.packet.solver import TOLERANCE
from simpy_astra.network.packet.switch import SwitchProcess
from simpy_astra.network.packet.train_path import TrainPath, alone_share
from simpy_astra.network.packet.train_queues import next_empty_ns, ran_out, release_crossed
from simpy_astra.network.packet.trains import (
    DEFAULT_PACKET_SIZE_BYTES,
    DEFAULT_SWITCH_BUFFER_BYTES,
    EMPTY_BYTES,
    MAX_ROUNDS,
    PacketMessage,
    Train,
    UsersPut,
    instant_after,
)
from simpy_astra.topologies.base import BasicTopology

#: a folded run's hook: a route's devices -> (the ports that carry its hops, what each hop
#: is entered from: None for the source's injection, else a hashable naming the real link)
PathOfRoute = Callable[[tuple[DeviceId, ...]], tuple[tuple[Port, ...], tuple[Hashable, ...]]]


class PacketNetwork(LinkLevelNetwork):
    """The packet backend (see the module docstring). Devices, links and routes are the
    :class:`~simpy_astra.network.fabric.Fabric`'s, as on the congestion-aware backend; links
    are :class:`Port` resources (each with its process), and forwarding devices are
    :class:`SwitchProcess` processes that keep the buffers."""

    name = "packet"

    def __init__(self, env: simpy.Environment, dims: list[BasicTopology], source: str = "<network>",
                 packet_size_bytes: int | None = None, switch_buffer_bytes: int | None = None,
                 links_at_start: bool = True, path_of_route: PathOfRoute | None = None) -> None:
        """``links_at_start`` and ``path_of_route`` (the ports that carry a route's hops, and
        what each hop is entered from; default: the route's own links, each entered from the
        one before) are a folded run's hooks (:mod:`simpy_astra.folding.packet`: one port per
        orbit of links carries every hop of it)."""
        self.packet_size_bytes = DEFAULT_PACKET_SIZE_BYTES if packet_size_bytes is None else packet_size_bytes
        self.switch_buffer_bytes = (DEFAULT_SWITCH_BUFFER_BYTES if switch_buffer_bytes is None
                                    else switch_buffer_bytes)
        # the default buffer is sized for its link's credit loop: only a given one caps links
        self._credit_buffer_bytes = math.inf if switch_buffer_bytes is None else switch_buffer_bytes
        if self.packet_size_bytes <= 0:
            raise ValueError(f"{source}: packet-size must be > 0 bytes (got {self.packet_size_bytes})")
        if self.switch_buffer_bytes < self.packet_size_bytes:
            raise ValueError(f"{source}: switch-buffer ({self.switch_buffer_bytes} bytes) must hold at least "
                             f"one packet ({self.packet_size_bytes} bytes)")
        self._paths: dict[tuple[int, int], tuple[TrainPath, ...]] = {}
        self._pending: dict[Port, None] = {}  # links whose trains changed in this instant
        self._seeds: list[Port] = []  # those of the instant being solved
        self._flush_armed = False
        self._solutions = Solutions()  # solved sharing, by the set of trains' routes
        self._own_paths: dict[Port, TrainPath] = {}  # each port's one-hop path (its put() trains)
        self._speeds_changed = False  # a link changed speed or went down (since: check before trusting path.alone)
        self._path_of_route = path_of_route
        super().__init__(env, dims, source, links_at_start=links_at_start)

    # ------------------------------------------------------------------ topology
    def _new_link(self, u: DeviceId, v: DeviceId, bandwidth_gbps: float, latency_ns: float, *,
                  into_switch: bool, from_switch: bool) -> Port:
        port = Port(self.env, u, v, bandwidth_gbps, latency_ns, self)
        if from_switch:  # out of a switch: its process keeps the buffer
            port.attach_switch(self.switch(u))
        return port

    def _new_switch(self, device: DeviceId) -> SwitchProcess:
        """The process of forwarding device ``device`` (a switch, or an NPU once a train
        buffers at one of its ports: :meth:`switch` starts it then)."""
        return SwitchProcess(self.env, device, self)

    def _paths_between(self, src: int, dst: int) -> tuple[TrainPath, ...]:
        """The fabric's dimension-order route as train paths; a dimension that sprays gives
        several: path ``k`` takes alternative ``k mod m`` in every dimension."""
        paths = self._paths.get((src, dst))
        if paths is None:
            routes = self.fabric.device_paths(src, dst, spray=True)
            if self._path_of_route is None:
                links = self._links
                paths = tuple(self._path(tuple(links[(p[i], p[i + 1])] for i in range(len(p) - 1)))
                              for p in routes)
            else:
                paths = tuple(self._path(*self._path_of_route(tuple(p))) for p in routes)
            self._paths[(src, dst)] = paths
        return paths

    def _path(self, ports: tuple[Port, ...], inputs: tuple[Hashable, ...] | None = None) -> TrainPath:
        return TrainPath(ports, self.packet_size_bytes, self._credit_buffer_bytes, inputs)

    # ------------------------------------------------------------------ public interface
    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        key = self.board.post_send(src, dst, tag, size, fn, arg)
        self._inject(src, dst, size, key, None)

    def send_background(self, src: int, dst: int, size_bytes: int, priority: int = 0) -> simpy.Event:
        """``size_bytes`` from ``src`` to ``dst`` sharing the links with the workload, matched
        by no receive; the event succeeds (value: the time) when the last packet arrived.
        ``priority``: 0 only (links are shared fairly, not by class: ValueError otherwise)."""
        src, dst, size_bytes = self._check_background(src, dst, size_bytes, priority)
        done = self.env.event()
        self._inject(src, dst, size_bytes, None, done)
        return done

    def _stats(self, link: Port, src: Any, dst: Any) -> LinkStats:
        """Bytes, busy ns, largest queue in bytes and back-pressure stall ns of a port."""
        return LinkStats(src, dst, link.bytes, link.busy_ns, link.max_queue_bytes, link.stall_ns)

    def port_stats(self) -> list[dict[str, Any]]:
        """:meth:`link_stats` as named fields."""
        return [{"from": s.src, "to": s.dst, "bytes": s.bytes, "busy_ns": s.busy_ns,
                 "max_queue_bytes": s.max_queue_bytes, "stall_ns": s.stall_ns} for s in self.link_stats()]

    # ------------------------------------------------------------------ trains
    def _inject(self, src: int, dst: int, size: int, key: Any, done: simpy.Event | None) -> None:
        self._start(self._paths_between(src, dst), size, key, done)

    def start_put(self, port: Port, request: Transmission) -> None:
        path = self._own_paths.get(port)
        if path is None:
            path = self._own_paths[port] = self._path((port,))
        self._start((path,), request.size, None, request, UsersPut)

    def _start(self, paths: tuple[TrainPath, ...], size: int, key: Any, done: simpy.Event | None,
               kind: type[PacketMessage] = PacketMessage) -> None:
        """One message of ``size`` bytes sprayed evenly over ``paths`` (usually one); ``kind``:
        :class:`UsersPut` for a user's own ``put()``."""
        message = kind(key, done, len(paths))
        now = self.env.now
        if size == 0:  # no packet to pipeline: only the latencies
            message.parts = 1
            message.deliver_ns = now + paths[0].latency_ns
            self._schedule_delivery(message)
            return
        part_bytes = size / len(paths)
        for path in paths:
            flow = Train(message, path, part_bytes, now)
            idle = True
            for port, times in path.visits:
                if port.flows:
                    idle = False
                port.request(flow, times)
            if idle:  # alone on every link: the slowest link or a credit loop sets the rate
                alone = path.alone
                if self._speeds_changed and any(port.capacity_bytes_per_ns != port.bytes_per_ns
                                                for port in flow.ports):
                    alone = alone_share(path)  # (a link is down)
                alone_hop, by_credit = alone.limit
                if alone_hop == 0 or by_credit:  # the first link or a credit loop: no buffer fills
                    flow.take_solution(alone, alone, None, 0)
                    flow.take_rates()
                    flow.arm_drain(self.env, self._drained)
                    rate = alone.bytes_per_ns
                    for port in flow.ports:
                        port.set_load(rate)
                    if by_credit:
                        self._mark_credit_stall(flow)
                    continue
            self.reshare(flow.ports)

    # ------------------------------------------------------------------ events of a train
    def _drained(self, flow: Train) -> None:
        """The train's last byte left the source (or it slowed down since this event was
        armed: then re-arm): free the links before its buffer; done if nothing is buffered."""
        now = self.env.now
        if flow.drain_ns > now:
            if flow.drain_ns != math.inf:
                flow.arm_drain(self.env, self._drained)
            return
        flow.advance(now)
        flow.source_drained()
        b = flow.buffer_hop
        if not b or flow.backlog_bytes <= EMPTY_BYTES:
            busy = self._finish(flow, 0)
        else:  # the rest waits in the buffer of hop b: the links before it are free
            busy = []
            for port in flow.ports[:b]:
                port.release(flow)
                if port.flows:
                    busy.append(port)
            flow.drain_from_buffer()
            busy.append(flow.ports[b])
            busy += release_crossed(flow)
        if busy:
            self.reshare(busy)

    def _arm_hops(self, flow: Train, now: float) -> None:
        """(Re-)arm the event of the next buffer along the train's path that its bytes leave
        faster than they reach it and that empties: then that hop passes on no more than
        arrives (or, crossed by every byte, is let go), and the rates are shared again.

        As for the source's drain, a later instant than the pending one lets the pending
        event fire and re-arm itself, so re-shares that move it later cost no event."""
        soonest = next_empty_ns(flow)
        timer = flow.hop_timer
        if soonest == math.inf:
            if timer.at_ns is not None:
                timer.cancel()
            return
        at_ns = instant_after(now, soonest)
        if timer.at_ns is not None and now <= timer.at_ns <= at_ns:
            return
        flow.own_hop_timer().arm(self.env, at_ns, self._hop_emptied, flow)

    def _hop_emptied(self, flow: Train) -> None:
        if flow.hop_shares is None:
            return
        now = self.env.now
        flow.advance(now)
        if flow.left_bytes <= 0 and flow.crossed_bytes[flow.reach_hops - 1] >= flow.size_bytes - EMPTY_BYTES:
            # its last byte crossed the last hop it has reached (the rest is its head's way)
            self.reshare(self._finish(flow, flow.buffer_hop))
            return
        if not ran_out(flow):  # armed for a rate that has since dropped: nothing changed
            self._arm_hops(flow, now)
            return
        busy = release_crossed(flow)
        busy += [p for p in flow.ports[flow.first_hop:] if p.flows]
        self.reshare(busy)

    def _finish(self, flow: Train, hop: int) -> list[Port]:
        """The train's last byte left the source (``hop`` 0) or the buffer of ``hop``: free
        its links and schedule its delivery; returns the freed links that others still use."""
        busy = []
        for port in flow.ports[flow.first_hop:]:
            port.release(flow)
            if port.flows:
                busy.append(port)
        if flow.buffer_hop:
            flow.ports[flow.buffer_hop].let_go(flow)
        flow.void_events()
        message = flow.message
        deliver_ns = self.env.now + flow.path.tail_ns(flow.packet_bytes, hop)
        if not hop and flow.reach_hops < len(flow.ports):  # drained before its head reached them all
            deliver_ns = max(deliver_ns, flow.start_ns + flow.path.alone_arrival_ns(
                flow.size_bytes, flow.packet_bytes, flow.reach_hops))
        message.deliver_ns = max(message.deliver_ns, deliver_ns)
        message.parts -= 1
        if message.parts == 0:
            self._schedule_delivery(message)
        return busy

    def _schedule_delivery(self, message: PacketMessage) -> None:
        # whole nanoseconds, as the other backends deliver (never before the last byte arrived)
        at_ns = math.ceil(message.deliver_ns - 1e-6)
        Timeout(self.env, max(0, at_ns - self.env.now)).callbacks.append(lambda _e: self._deliver(message))

    def _deliver(self, message: PacketMessage) -> None:
        if message.key is not None:
            self.board.arrived(message.key)
        else:
            message.done.succeed(self.env.now)

    def buffer_instant(self, port: Port) -> None:
        """The switch process of ``port`` found its buffer full, or a train's backlog empty:
        a full buffer holds the trains filling it to their downstream rate (credits); an empty
        backlog makes its train whole again, or ends it if its source is drained."""
        now = self.env.now
        seeds = [port]
        for flow in port.buffered:
            flow.advance(now)
            if flow.backlog_bytes <= EMPTY_BYTES and (flow.left_bytes <= 0
                                                      or flow.out_bytes_per_ns >= flow.in_bytes_per_ns):
                if flow.left_bytes <= 0:
                    seeds += self._finish(flow, flow.buffer_hop)
                else:
                    port.let_go(flow)
                    flow.close_buffer()
        if port.full:
            for flow in port.buffered:
                if flow.fills_buffer():
                    flow.hold_by_credits(True)
        self.reshare([p for p in seeds if p.flows])
        if port.buffered and port.switch is not None:
            port.switch.notify(port)  # look again after the change, even if nothing was re-shared

    # ------------------------------------------------------------------ sharing
    def speed_changed(self, port: Port) -> None:
        """A link changed speed (or went down or up): solutions kept for the old speeds go now
        (the port's process then has its trains re-shared, in this instant)."""
        self._solutions.clear()
        self._speeds_changed = True

    def reshare(self, seeds: list[Port]) -> None:
        """Re-solve the rates of every train that transitively shares a link with ``seeds``.

        Changes of one instant are solved together, once, by an event at that instant
        (:meth:`_flush`): no time passes in between, so nothing moves at the old rates.

        Each train is one unit of demand over its whole path, or two when it has a buffer
        that is not full (its hops before the buffer, and from the buffer on; a train whose
        source is drained is only the latter). The units get hierarchical max-min rates
        (:func:`~.rates.train_rates`). Then: a whole train held by a port whose buffer is not full,
        with a faster way there, opens that buffer (it will fill); a train whose backlog is
        empty and that arrives no faster than it leaves becomes whole again; a filling train
        at a full buffer is held by credits; a train held by credits whose tightest port is
        now upstream of its buffer is let go (it drains). Solve again until nothing changes."""
        if not seeds:
            return
        pending = self._pending
        for port in seeds:
            pending[port] = None
        if not self._flush_armed:  # one solve for every change of this instant (one event)
            self._flush_armed = True
            Timeout(self.env, 0).callbacks.append(self._flush)

    def _flush(self, _event: Any) -> None:
        self._flush_armed = False
        seeds = list(self._pending)
        self._seeds = seeds
        self._pending.clear()
        now = self.env.now
        ports: set[Port] = set(seeds)
        flows: dict[Train, None] = {}
        stack = list(seeds)
        while stack:
            for flow in stack.pop().flows:
                if flow not in flows:
                    flows[flow] = None
                    for port in flow.ports[flow.first_hop:]:
                        if port not in ports:
                            ports.add(port)
                            stack.append(port)
        for flow in flows:
            flow.advance(now)
            if flow.reach_hops < len(flow.ports):  # (its head has hops to reach)
                flow.join(now)
        changed_once: set[Train] = set()
        fresh: set[Train] | None = None  # the trains changed since the round before (None: all)
        for _round in range(MAX_ROUNDS):
            train_rates(flows, self._seeds, self._solutions, fresh)
            fresh = set()
            changed = False
            for flow in flows:
                if flow.left_bytes <= 0 or flow in changed_once:
                    continue
                b = flow.buffer_hop
                if not b:
                    k, by_credit = flow.solved_in.limit
                    if by_credit or not k:  # (most trains: limited by their first link)
                        continue
                    if flow.cut_hop:  # where FIFO inputs first cut it, if they do
                        k = flow.cut_hop
                    port = flow.ports[k]
                    if port.full:
                        continue
                    flow.open_buffer(k)
                    port.hold(flow)
                    if port.switch is None:
                        port.attach_switch(self.switch(port.src))
                elif flow.credit_held:
                    if flow.solved_in.limit.hop >= b:
                        continue
                    flow.hold_by_credits(False)
                elif (flow.backlog_bytes <= EMPTY_BYTES
                      and flow.solved_in.bytes_per_ns <= flow.solved_out.bytes_per_ns * (1 + TOLERANCE)):
                    flow.ports[b].let_go(flow)
                    flow.close_buffer()
                elif (flow.ports[b].full
                      and flow.solved_in.bytes_per_ns > flow.solved_buffer_bytes_per_ns() * (1 + TOLERANCE)):
                    flow.hold_by_credits(True)
                else:
                    continue
                changed_once.add(flow)
                fresh.add(flow)
                changed = True
            if not changed:
                break
        self._apply(flows, ports, now)

    def _apply(self, flows, ports, now: float) -> None:
        """Take the solved rates: re-arm drains, set the links' loads, mark the stalls and wake
        the switch processes of the buffers involved."""
        load = dict.fromkeys(ports, 0.0)
        held: set[Port] = set()  # links a unit of which is held back by a port further on
        buffers: dict[Port, None] = {}
        ahead: list[tuple[Train, float]] = []  # trains whose head has hops to reach, and their rate
        for flow in flows:
            fp = flow.ports
            h = flow.reach_hops
            b = flow.buffer_hop
            old_in = flow.in_bytes_per_ns
            flow.take_rates()
            if flow.left_bytes > 0:
                if flow.opened_buffer:  # (a buffer opened in this re-share)
                    flow.place_backlog(now)
                if abs(flow.in_bytes_per_ns - old_in) > TOLERANCE * flow.in_bytes_per_ns or flow.drain_at_ns is None:
                    flow.arm_drain(self.env, self._drained)
            if flow.reached_before:  # hops it reached: the bytes credited to them count as carried
                for i in flow.newly_reached():
                    fp[i].count_carried(flow.credited(i))
            # hops before ``split`` carry the train's input rate, from there on its output rate;
            # a hop is held back by a limit further on, or by its own credit loop
            split = b if b and (not flow.credit_held or flow.left_bytes <= 0) else h
            shares = flow.hop_shares
            in_rate, out_rate = flow.in_bytes_per_ns, flow.out_bytes_per_ns
            in_hop, in_credit = flow.solved_in.limit
            out_hop, out_credit = flow.solved_out.limit
            first = flow.first_hop
            held_below = in_hop + 1 if in_credit else in_hop  # (the hops its input limit holds back)
            r = in_rate  # (what its last reached hop passes on: the input rate unless set below)
            for i in range(first, split if split < h else h):
                port = fp[i]
                load[port] += in_rate
                if i < held_below:
                    held.add(port)
            for i in range(split if split > first else first, h):
                if shares is not None:
                    r, (limit_hop, by_credit) = shares[i]
                else:
                    r, limit_hop, by_credit = out_rate, out_hop, out_credit
                port = fp[i]
                load[port] += r
                if limit_hop > i or (by_credit and limit_hop == i):
                    held.add(port)
            if h < len(fp):
                ahead.append((flow, r))
            if b:
                buffers[fp[b]] = None
                if flow.hop_shares is not None:
                    self._arm_hops(flow, now)
                else:
                    if flow.hop_timer.at_ns is not None:
                        flow.hop_timer.cancel()
        if ahead:  # (after every reached hop's load is known)
            room = dict(load)  # (and trains that reach a hop without an event, at their rates)
            for flow, r in ahead:
                self._arm_join(flow, r, room, now)
        for port in ports:
            port.set_load(load[port])
            saturated = port.load_bytes_per_ns >= port.capacity_bytes_per_ns * (1 - 1e-6)
            stalled = port in held and not saturated and bool(port.flows)
            if stalled != port.stalled:
                port.set_stalled(stalled)
        for port in buffers:
            port.switch.notify(port)

    def _arm_join(self, flow: Train, rate: float, load: dict[Port, float], now: float) -> None:
        """(Re-)arm the event of the next hop the train's head reaches where its joining
        may change the sharing: that hop's port would be saturated by the train's ``rate``
        (what its last reached hop passes on) on top of ``load`` (then its round robin may
        bind), or its credit loop is slower.

        Where it is not (an idle link, or one with room to spare), no port binds anew once
        it joins, so the current rates stay the max-min ones: it joins at the next re-share
        without an event; its rate is added to that port's ``load`` (here, not the port's
        own), so that other trains heading there see it. A train alone on its path costs no
        event."""
        fp = flow.ports
        caps = flow.path.credit_caps_bytes_per_ns
        at = None
        for k in range(flow.reach_hops, len(fp)):
            port = fp[k]
            if (load[port] + rate >= port.capacity_bytes_per_ns * (1 - 1e-6)
                    or caps[k] < rate * (1 - TOLERANCE)):
                at = k
                break
            load[port] += rate
        timer = flow.join_timer
        if at is None:
            if timer.at_ns is not None:
                timer.cancel()
            return
        # past 2^53 ns a float rounds start + offset to a reached instant the head has not
        # reached (join() found it ahead): re-armed there it re-fired in that instant for ever
        at_ns = max(flow.join_at(at), math.floor(now) + 1)
        if timer.at_ns != at_ns:
            flow.own_join_timer().arm(self.env, at_ns, self._joined, flow)

    def _joined(self, flow: Train) -> None:
        """The train's head reached a hop where that changes the sharing: re-share."""
        self.reshare([flow.ports[flow.first_hop]])

    @staticmethod
    def _mark_credit_stall(flow: Train) -> None:
        """A lone train held by the credit loop of a hop: that link and those before it had
        spare capacity while it waited for credits (as :meth:`_apply` marks them)."""
        limit = flow.solved_in.limit
        if limit.credit:
            for port in flow.ports[:limit.hop + 1]:
                if port.load_bytes_per_ns < port.capacity_bytes_per_ns * (1 - 1e-6):
                    port.set_stalled(True)
