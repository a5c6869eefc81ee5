"""Directed links as SimPy resources and processes: the element contract every link keeps, the
base element a link model derives from, and the built-in FIFO link.

:class:`LinkResource` is what every backend's directed link is (the contract, listed in
``simpy_astra/network/README.md``): a SimPy :class:`~simpy.resources.base.BaseResource`
with its ends, speed (``bandwidth_gbps``; ``bytes_per_ns``, GB = 2^30 B), ``latency_ns``,
``up`` and ``failed``, live statistics (``bytes``, ``busy_ns``, ``queue``), the controls
(:meth:`~LinkResource.set_bandwidth`, :meth:`~LinkResource.take_down`,
:meth:`~LinkResource.bring_up`, :meth:`~LinkResource.fail`), ``put(nbytes)`` (a
:class:`Transmission`: background bytes over this link), what it holds for the stall check
(:meth:`~LinkResource.held`) and the probe points ``link_start`` / ``link_end``
(:mod:`simpy_astra.engine.probes`). The packet backend's
:class:`~simpy_astra.network.packet.port.Port` builds on it directly.

:class:`LinkElement` is the congestion-aware backend's link: a store-and-forward wire served
by its own process (``link.process``, as ns.py's ``Port``). It implements the whole
contract -- the wire's timing, changes of speed, faults, live ``busy_ns``, the probes -- and
leaves the policy to three methods a model overrides: :meth:`~LinkElement.enqueue` and
:meth:`~LinkElement.dequeue` (what to send next; FIFO here) and
:meth:`~LinkElement.hold_ns` (how long to hold an item before it may start; 0 here).
``link-model: fifo`` is this class as it is (``models.ProcessLink``). An item starting at
``t`` leaves the wire at ``t + trunc(S / B)`` and arrives at the far end at
``t + trunc(latency + S / B)`` (``S`` bytes, ``B`` bytes/ns), as ASTRA-sim's links do.

:class:`Link` is the built-in FIFO link the reference cases are checked with. It is a
``LinkElement`` with one documented shortcut for ASTRA-sim's exact same-time order:

**Exact order.** The arrival is a callback timeout scheduled before the "link free"
timeout the process waits on, the order the reference schedules them in; a SimPy process
resumes as the callback of the event it waits on, so "link free" resumes the process in the
queue position the reference frees its link in, and it takes the next queued item there.
An item offered to an idle ``Link`` starts in the offer itself, as the reference starts a
message on a free link inside the send: :meth:`Link.offer` (or a ``put``, or ``bring_up``)
puts it on the wire and moves the idle process's wait to that item's "link free"
(:func:`~simpy_astra.engine.events.wait_instead`: no step of the generator, no queue entry; waking
the process in place to start the item costs a resume per idle hand-over, measured ~10% of
an aware run). The process is started at construction
(:func:`~simpy_astra.engine.events.start_in_place`), so a link is idle from its first instant.
Those two engine calls are the link's only in-place tricks. A ``LinkElement`` (a model)
wakes its process with ``succeed`` instead: the same times for a FIFO link, but same-time
events may come in another order.

The link's speed is live: ``set_bandwidth``, ``take_down`` and ``bring_up`` act on every
byte not yet on the wire, those of the transmission being serialised included (it is
re-timed for its remaining bytes: its old events go stale and the process, interrupted,
waits for the new "link free").
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Generator
from numbers import Real
from typing import Any

import simpy
from simpy.core import BoundClass
from simpy.events import Event, Timeout
from simpy.exceptions import Interrupt
from simpy.resources.base import BaseResource, Put

from simpy_astra.engine.events import start_in_place, timeout, wait_instead
from simpy_astra.engine.probes import Probed
from simpy_astra.infra.horizon import HORIZON_NS, api_number
from simpy_astra.infra.units import network_gbps_to_bytes_per_ns
from simpy_astra.plugins import bad_return, serving_loop

#: the largest transfer a link takes: sizes are whole bytes below 2^63 (the horizon's bound)
MAX_BYTES = 2**63 - 1


def check_size_bytes(size_bytes: Any, where: str) -> int:
    """A transfer's size at the API's boundary: a whole number 0 .. 2^63-1 of bytes, else
    ValueError naming ``where`` (no nan, no wrap-around, no string taken as a number)."""
    ok = (isinstance(size_bytes, int) and not isinstance(size_bytes, bool)) or (
        isinstance(size_bytes, float) and size_bytes.is_integer())
    if not ok or not 0 <= size_bytes <= MAX_BYTES:
        raise ValueError(f"{where}: size_bytes must be a whole number 0 .. 2^63-1 (got {size_bytes!r})")
    return int(size_bytes)


def checked_hold_ns(link: LinkResource, hold: Any) -> int:
    """``hold`` in whole ns if it is a finite number of ns >= 0 (what a model's ``hold_ns`` must
    return; a fraction is cut, as a link cuts ``latency + S / B``, so simulated times stay whole
    ns), else the model's error naming its class and method (NaN is not 0, "10" is not 10)."""
    if isinstance(hold, Real) and not isinstance(hold, bool) and math.isfinite(hold) and hold >= 0:
        return int(hold)  # numpy's as Python's; 200.7 -> 200
    raise bad_return(link, "hold_ns", hold, "a finite number of ns >= 0 (0: start at once)")


class Transmission(Put):
    """A user's request to carry ``size_bytes`` over one link; its value is the arrival time.
    It is no network message: class 0 (``priority``), no board ``key``."""

    priority = 0
    key = None
    ecn = False
    def __init__(self, link: LinkResource, size_bytes: int) -> None:
        self.size = check_size_bytes(size_bytes, f"link {link.src}->{link.dst}: put()")
        super().__init__(link)

    def arrived(self, link: LinkResource) -> None:
        self.succeed(link.env.now)


class LinkResource(BaseResource, Probed):
    """What a directed link ``src -> dst`` is on every link-level backend (the contract in
    ``simpy_astra/network/README.md``): a SimPy resource with ``bandwidth_gbps``
    (``bytes_per_ns``), ``latency_ns``, ``up`` and ``failed``; ``put(nbytes)`` is a
    :class:`Transmission`. Subclasses keep ``bytes``, ``busy_ns`` (live) and ``queue``,
    implement the controls, and emit ``link_start`` / ``link_end``
    (``fn(link, key, size_bytes)``, :mod:`simpy_astra.engine.probes`) for the network's messages."""

    #: what a user's subclass is, in its errors (:func:`simpy_astra.plugins.model_kind`)
    MODEL_KIND = "link model"

    put = BoundClass(Transmission)
    PROBES = ("link_start", "link_end")
    probe_link_start: list | None = None
    probe_link_end: list | None = None
    #: down for good (:meth:`fail`, ``sim.fail_device``): stall reports say "failed"
    failed = False
    #: its behaviour depends on what is offered to it alone, not on which link it is: a
    #: user's model says so (``symmetric = True``) for a congestion-aware run to fold its
    #: links (:mod:`simpy_astra.folding.links`; ours are)
    symmetric = False

    def __init__(self, env: simpy.Environment, src: Any, dst: Any, bandwidth_gbps: float,
                 latency_ns: float, capacity: float) -> None:
        super().__init__(env, capacity)
        # a link model may pass its own speed on (a share of the link's): one it cannot have is
        # named here, not met as a division by zero or a negative delay in the run
        api_number(bandwidth_gbps, f"link {src}->{dst}: bandwidth_gbps", positive=True, time=False)
        api_number(latency_ns, f"link {src}->{dst}: latency_ns")
        self.env = env
        self.src = src
        self.dst = dst
        self.latency_ns = latency_ns
        self.bandwidth_gbps = bandwidth_gbps
        self.bytes_per_ns = network_gbps_to_bytes_per_ns(bandwidth_gbps)
        self.up = True

    # ------------------------------------------------------------------ the contract
    bytes: int  # bytes put on the wire so far
    busy_ns: float  # time spent serialising so far, the transmission on the wire now included

    @property
    def queue(self) -> list[Any]:
        """What waits for the wire, first to be sent first."""
        raise NotImplementedError

    @property
    def on_wire(self) -> Any | None:
        """The item being serialised now (held there while the link is down), or None."""
        return None

    @property
    def holding(self) -> Any | None:
        """The item taken from the queue and held before it starts (a model's ``hold_ns``),
        or None."""
        return None

    def set_bandwidth(self, bandwidth_gbps: float) -> None:
        """New speed for every byte not yet on the wire, from now (ValueError unless finite, > 0)."""
        raise NotImplementedError

    def take_down(self) -> None:
        """Stop the wire: what is on it and what waits stay until :meth:`bring_up`."""
        raise NotImplementedError

    def bring_up(self) -> None:
        """Carry on after :meth:`take_down`, at the current speed."""
        raise NotImplementedError

    def fail(self) -> None:
        """Down for good (a failed device's link): what it holds is never delivered."""
        self.failed = True
        self.take_down()

    def held(self) -> list[tuple[Any, Any]]:
        """(message, its board key or None for background bytes) of every network message on
        this link, on the wire or waiting: what cannot move while it is down (the stall
        check reads it). A user's own ``put()`` is not a network message."""
        on_wire, holding = self.on_wire, self.holding
        items = [*(() if on_wire is None else (on_wire,)), *(() if holding is None else (holding,)), *self.queue]
        return [(item, item.key) for item in items if type(item) is not Transmission]

    # ------------------------------------------------------------------ checks
    def _check_bandwidth(self, bandwidth_gbps: float) -> None:
        where = f"link {self.src}->{self.dst}: set_bandwidth(bandwidth_gbps)"
        if isinstance(bandwidth_gbps, int | float) and not isinstance(bandwidth_gbps, bool) and bandwidth_gbps == 0:
            raise ValueError(f"{where} must be > 0 (got 0); use take_down() to stop the link")
        api_number(bandwidth_gbps, where, positive=True, time=False)
        if 1 / network_gbps_to_bytes_per_ns(bandwidth_gbps) > HORIZON_NS:
            raise ValueError(f"{where}: {bandwidth_gbps:g} GB/s is so low that one byte would take past "
                             f"the horizon (2^63 ns)")

    def _new_bandwidth(self, bandwidth_gbps: float) -> None:
        """Take a new speed (checked; the subclass first accounts what the old one did)."""
        self.bandwidth_gbps = bandwidth_gbps
        self.bytes_per_ns = network_gbps_to_bytes_per_ns(bandwidth_gbps)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.src}->{self.dst} {self.bandwidth_gbps} GB/s {self.latency_ns} ns>"


class LinkElement(LinkResource):
    """A store-and-forward link served by its own SimPy process (``process``, :meth:`run`):
    the base of every congestion-aware link, the built-in :class:`Link` and every
    ``link-model``. It keeps the whole contract; a model supplies only its policy:

    * :meth:`enqueue` / :meth:`dequeue`: what to send next (FIFO here);
    * :meth:`hold_ns`: how long the item :meth:`dequeue` gave must wait before it starts
      (0 here; a token bucket waits for tokens);

    and may override :meth:`run` for a different serving loop (calling :meth:`transmit`).
    ``on_arrival(item)`` receives the network's messages at the far end; a user's
    ``put()`` succeeds there instead (value: the time)."""

    def __init__(self, env: simpy.Environment, src: Any, dst: Any, bandwidth_gbps: float,
                 latency_ns: float, on_arrival: Callable[[Any], None]) -> None:
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, capacity=1)
        self.bytes = 0
        self._busy_done_ns: float = 0
        # the transmission on the wire (one at a time, so the link holds it, not an object
        # per hop): its item, bytes left at ``_since``, and its two events
        self._item: Any = None
        self._left: float = 0
        self._since: float = 0
        self._arrival: Timeout | None = None
        self._free: Timeout | None = None
        self._stale: set[Timeout] = set()  # arrivals a change of speed re-timed: ignored
        self._idle: Event | None = None  # what the process waits on while nothing is on the wire
        self._fifo: deque = deque()
        self._holding: Any = None  # the item dequeued and held (hold_ns) before it starts
        self._resume: Event | None = None  # what a hold paused by an outage waits on
        self._on_arrival = on_arrival
        self._arrived_callback = self._arrived  # bound once: the callback of every arrival
        self._delays: dict[int, tuple[int, int]] = {}
        self.process = self._start_process()

    def _start_process(self) -> simpy.Process:
        return self.env.process(serving_loop(self))

    # ------------------------------------------------------------------ the policy
    def enqueue(self, item: Any) -> None:
        """Queue an item that may not start now (FIFO here; models override it)."""
        self._fifo.append(item)

    def dequeue(self) -> Any | None:
        """The next item for the wire, or None when nothing waits."""
        return self._fifo.popleft() if self._fifo else None

    def hold_ns(self, item: Any) -> float:
        """How long ``item`` (just dequeued) waits before it starts: 0, at once."""
        return 0

    @property
    def queue(self) -> list[Any]:
        """What waits for the wire, in the order it would be sent (models with their own
        queue override this too)."""
        return list(self._fifo)

    # ------------------------------------------------------------------ statistics
    @property
    def busy(self) -> bool:
        return self._item is not None

    @property
    def on_wire(self) -> Any | None:
        """The message or transmission being serialised (held while the link is down)."""
        return self._item

    @property
    def holding(self) -> Any | None:
        """The item dequeued and held (``hold_ns``, an outage pausing it), or None."""
        return self._holding

    @property
    def busy_ns(self) -> float:
        """Time spent serialising so far, the transmission on the wire now included (an
        integer once every transmission ended)."""
        if self._item is None or not self.up:
            return self._busy_done_ns
        return self._busy_done_ns + (self.env.now - self._since)

    # ------------------------------------------------------------------ the process
    def offer(self, item: Any) -> None:
        """The network's way in (never blocks): an idle link's process takes the item from
        its wake-up (it never queued), a busy one queues it (:meth:`enqueue`)."""
        idle = self._idle
        if idle is not None and self.up:
            self._idle = None
            idle.succeed(item)
        else:
            self.enqueue(item)

    def run(self) -> Generator[Event, Any, None]:
        """Serve the queue forever: take the next item (:meth:`dequeue`) while the link is
        up, wait :meth:`hold_ns`, then carry it (:meth:`transmit`); idle, wait for an offer."""
        env = self.env
        while True:
            item = self.dequeue() if self.up else None
            if item is None:
                self._idle = idle = Event(env)
                item = yield idle  # an offer's item, or None: look at the queue again
                if item is None:
                    continue
            elif not hasattr(item, "size"):  # a model's dequeue gave what it was never offered
                raise bad_return(self, "dequeue", item, "an item it was offered (enqueue(item)'s argument, "
                                 "with its size, priority, key), or None when nothing waits")
            hold = self.hold_ns(item)
            if type(hold) is not int or hold < 0:  # the cheap test; floats are checked in full
                hold = checked_hold_ns(self, hold)
            if hold > 0:
                yield from self.wait_hold(item, hold)
            yield from self.transmit(item)

    def wait_hold(self, item: Any, hold_ns: float) -> Generator[Event, Any, None]:
        """Hold ``item`` for ``hold_ns`` of the link's up time: an outage pauses the hold
        (what is left of it runs after :meth:`bring_up`); meanwhile :meth:`held` lists it."""
        env = self.env
        self._holding = item
        left = hold_ns
        try:
            while left > 0:
                if not self.up:  # down: wait for bring_up, then hold for what is left
                    self._resume = resume = Event(env)
                    try:
                        yield resume
                    except Interrupt:
                        pass
                    continue
                since = env.now
                try:
                    yield env.timeout(left)
                    left = 0
                except Interrupt:  # taken down (or re-timed): the time held so far counts
                    left -= env.now - since
        finally:
            self._holding = None
            self._resume = None

    def transmit(self, item: Any) -> Generator[Event, Any, None]:
        """Put ``item`` on the wire now and wait until its last byte is on it (re-timed by
        each change of speed; held on the wire, with no events, while the link is down)."""
        if self.up:
            self._start(item)
        else:
            self._on_wire_now(item)  # bring_up() schedules its events
        yield from self._retimed()
        self._done()

    def _done(self) -> None:
        """The item's last byte is on the wire: account it, the wire is free."""
        self._busy_done_ns += self.env.now - self._since
        self._item = None

    def _retimed(self) -> Generator[Event, Any, None]:
        """Wait for the end of the transmission on the wire (interrupted by each change of
        speed, which re-times it; while the link is down, until bring_up)."""
        while True:
            try:
                yield self._free if self.up else Event(self.env)
                return
            except Interrupt:
                pass

    def _wake_idle(self) -> None:
        """The queue may have something to send: wake the idle process (one queue entry later)."""
        idle = self._idle
        if idle is not None and self.up:
            self._idle = None
            idle.succeed()

    def _trigger_put(self, _event: Any) -> None:
        """``link.put(n)`` requests join the link's own queue (they succeed on arrival)."""
        while self.put_queue:
            self.offer(self.put_queue.pop(0))

    # ------------------------------------------------------------------ faults
    def set_bandwidth(self, bandwidth_gbps: float) -> None:
        """New speed for every byte not yet on the wire (from now)."""
        self._check_bandwidth(bandwidth_gbps)
        self._pause()
        self._new_bandwidth(bandwidth_gbps)
        self._delays = {}
        self._retime()

    def take_down(self) -> None:
        """Stop the wire: the transmission on it and everything queued wait for bring_up()."""
        if self.up:
            self._pause()
            self.up = False
            if self._item is not None or self._holding is not None:
                self.process.interrupt("link down")  # its "link free" (or its hold) is stale now

    def bring_up(self) -> None:
        if not self.up:
            self.up = True
            resume = self._resume
            if resume is not None:  # a hold paused by the outage goes on
                self._resume = None
                resume.succeed()
            self._retime()

    def _pause(self) -> None:
        """Account the current transmission's progress so far; its arrival goes stale."""
        if self._item is None or not self.up:
            return
        now = self.env.now
        self._left = max(0.0, self._left - (now - self._since) * self.bytes_per_ns)
        self._busy_done_ns += now - self._since
        self._since = now
        self._stale.add(self._arrival)

    def _retime(self) -> None:
        """Carry on at the current speed: the paused transmission's remaining bytes get new
        events (and the process is told to wait for them), or an idle link takes what queued."""
        if not self.up:
            return  # bring_up() resumes
        item = self._item
        if item is None:
            self._wake_idle()
            return
        env = self.env
        self._since = env.now
        ser = self._left / self.bytes_per_ns
        self._schedule(item, int(self.latency_ns + ser), int(ser))
        self.process.interrupt("re-timed")

    # ------------------------------------------------------------------ carrying
    def _on_wire_now(self, item: Any) -> None:
        """``item`` is the transmission on the wire from now (counted, announced)."""
        size = item.size
        self.bytes += size
        self._item = item
        self._left = size
        self._since = self.env.now
        watchers = self.probe_link_start
        if watchers is not None and type(item) is not Transmission:
            for watcher in watchers:
                watcher(self, item.key, size)

    def _start(self, item: Any) -> None:
        """Put ``item`` on the wire of a link that is up, now: its arrival, then its "link
        free" (the order the reference schedules them in). Once per message hop."""
        size = item.size
        self.bytes += size
        env = self.env
        self._item = item
        self._left = size
        self._since = env.now
        watchers = self.probe_link_start
        if watchers is not None and type(item) is not Transmission:
            for watcher in watchers:
                watcher(self, item.key, size)
        delays = self._delays.get(size)
        if delays is None:
            ser = size / self.bytes_per_ns
            delays = self._delays[size] = (int(self.latency_ns + ser), int(ser))
        arrival = self._arrival = timeout(env, delays[0], item)
        arrival.callbacks.append(self._arrived_callback)
        self._free = timeout(env, delays[1])

    def _schedule(self, item: Any, arrive_ns: int, free_ns: int) -> None:
        """The events of a re-timed transmission (as :meth:`_start` schedules them)."""
        arrival = self._arrival = Timeout(self.env, arrive_ns, item)
        arrival.callbacks.append(self._arrived_callback)
        self._free = Timeout(self.env, free_ns)

    def _arrived(self, event: Timeout) -> None:
        """An arrival's callback: hand the item (the event's value) on at the far end."""
        stale = self._stale
        if stale and event in stale:  # re-timed: its new arrival is another event
            stale.remove(event)
            return
        item = event.value
        if type(item) is Transmission:  # (type(x) is specialised by CPython 3.11: no call)
            item.arrived(self)
            return
        watchers = self.probe_link_end
        if watchers is not None:
            for watcher in watchers:
                watcher(self, item.key, item.size)
        self._on_arrival(item)


class Link(LinkElement):
    """The built-in FIFO link (congestion-aware backend): a :class:`LinkElement` whose queue
    is its ``put`` queue (the network's messages and users' :class:`Transmission` s in one
    FIFO) and whose process keeps ASTRA-sim's exact same-time order (the module docstring:
    an item offered to an idle link starts in the offer itself)."""

    PutQueue = deque

    def _start_process(self) -> simpy.Process:
        # started now, so it is idle (and an offer starts at once) from the link's first instant
        return start_in_place(self.env, self.run())

    @property
    def queue(self) -> deque:
        """Messages and transmissions waiting for the wire, first in line first."""
        return self.put_queue

    def run(self) -> Generator[Event, Any, None]:
        """The link's behaviour, forever: take the next queued item and start it (its arrival
        is a callback timeout, scheduled before "link free", the order the reference
        schedules them in); wait until its last byte is on the wire; account it. While
        nothing is queued (or the link is down) it waits on ``parked``, which nothing
        triggers: an offer, a ``put`` or ``bring_up`` starts the item itself and moves the
        wait to the item's "link free" (:meth:`_hand_over`)."""
        env = self.env
        queue = self.put_queue
        parked = Event(env)  # never triggered: an offer moves the wait to its item's link free
        while True:
            if queue and self.up:
                self._start(queue.popleft())
                waited = self._free
            else:
                self._idle = waited = parked
            try:
                yield waited
            except Interrupt:
                yield from self._retimed()
            self._busy_done_ns += env.now - self._since
            self._item = None

    def _hand_over(self, item: Any) -> None:
        """Start ``item`` on the idle link now, as the reference starts a message on a free
        link (waking the process with ``succeed`` would start it one queue entry late), and
        have the parked process wait for its "link free" instead."""
        self._idle = None
        self._start(item)
        wait_instead(self.process, self._free)

    def _wake_idle(self) -> None:
        """An idle link that is up takes the first queued item now (:meth:`_hand_over`)."""
        if self._idle is not None and self.up and self.put_queue:
            self._hand_over(self.put_queue.popleft())

    def offer(self, item: Any) -> None:
        """The network's way in (no request event per hop): an idle link starts it now,
        a busy one queues it."""
        if self._idle is not None and self.up:
            self._idle = None  # (_hand_over, inlined: once per message hop)
            self._start(item)
            wait_instead(self.process, self._free)
        else:
            self.put_queue.append(item)

    def _trigger_put(self, _event: Any) -> None:
        """A ``put`` joined the queue: an idle link starts the first in line now."""
        self._wake_idle()
