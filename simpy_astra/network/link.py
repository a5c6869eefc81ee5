"""Directed links served by their own SimPy process: the base element a link model derives
from, and the built-in FIFO link. Both keep the contract every link keeps
(:class:`~simpy_astra.network.link_resource.LinkResource`).

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

from collections import deque
from collections.abc import Callable, Generator
from typing import Any

import simpy
from simpy.events import Event, Timeout
from simpy.exceptions import Interrupt

from simpy_astra.engine.events import start_in_place, timeout, wait_instead
from simpy_astra.infra.horizon import whole_ns
from simpy_astra.network.link_resource import LinkResource, Transmission
from simpy_astra.plugins import bad_return, serving_loop


def checked_hold_ns(link: LinkResource, hold: Any) -> int:
    """``hold`` in whole ns if it is a finite number of ns >= 0 (what a model's ``hold_ns`` must
    return; a fraction is cut, as a link cuts ``latency + S / B``, so simulated times stay whole
    ns), else the model's error naming its class and method (NaN is not 0, "10" is not 10)."""
    whole = whole_ns(hold)  # numpy's, a Fraction's and a Decimal's as Python's; 200.7 -> 200
    if whole is not None:
        return whole
    raise bad_return(link, "hold_ns", hold, "a finite number of ns >= 0 (0: start at once)")


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
        bandwidth_gbps = self._check_bandwidth(bandwidth_gbps)
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
