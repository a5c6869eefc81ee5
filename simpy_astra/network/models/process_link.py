"""A directed link as a SimPy process: the base of replaceable link models (ns.py's ``Port``).

The network hands the link an item with :meth:`ProcessLink.offer` (a message with ``size``
bytes and a ``priority`` class, or a user's :class:`~simpy_astra.network.link.Transmission`
from ``yield link.put(nbytes)``); the link's own process (:meth:`ProcessLink.run`) takes the
next item (:meth:`ProcessLink.dequeue`; an idle link takes an offered item at once), holds the wire for ``trunc(size / B)`` with
``yield env.timeout(...)``, and hands the item to the far end one latency later
(``trunc(latency + size / B)`` after the start, as the built-in link times it). A model
changes the discipline by overriding :meth:`enqueue` / :meth:`dequeue` (or :meth:`run`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import Any

import simpy

from simpy_astra.network.link import LinkResource, Transmission


class ProcessLink(LinkResource):
    """A FIFO link served by its own process; live ``bytes``, ``busy_ns``, ``queue``."""

    def __init__(self, env: simpy.Environment, src: Any, dst: Any, bandwidth_gbps: float,
                 latency_ns: float, on_arrival: Callable[[Any], None]) -> None:
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, capacity=1)
        self.bytes = 0
        self.busy_ns = 0
        self.on_arrival = on_arrival
        self._fifo: deque = deque()
        self._wake: simpy.Event | None = None
        self.process = env.process(self.run())

    # ------------------------------------------------------------------ the contract
    def offer(self, item: Any) -> None:
        """Take an item for the wire, never blocking: an idle link starts it now (its
        process takes it from its wake-up event), a busy one queues it (:meth:`enqueue`)."""
        wake = self._wake
        if wake is not None and not wake.triggered:
            wake.succeed(item)
        else:
            self.enqueue(item)

    def enqueue(self, item: Any) -> None:
        """Queue an item (FIFO here; models override it)."""
        self._fifo.append(item)

    def dequeue(self) -> Any | None:
        """The next item for the wire, or None when nothing waits."""
        return self._fifo.popleft() if self._fifo else None

    @property
    def queue(self) -> list[Any]:
        """What waits for the wire, in the order it would be sent."""
        return list(self._fifo)

    def run(self) -> Generator[simpy.Event, Any, None]:
        """Serve the queue forever: one item on the wire at a time."""
        env = self.env
        while True:
            item = self.dequeue()
            if item is None:  # idle: wait for the next offer, which hands its item over
                self._wake = env.event()
                item = yield self._wake
            ser_ns = item.size / self.bytes_per_ns
            self.bytes += item.size
            yield env.timeout(int(ser_ns))
            self.busy_ns += int(ser_ns)
            env.timeout(int(self.latency_ns + ser_ns) - int(ser_ns)).callbacks.append(
                lambda _e, item=item: self.arrive(item))

    def arrive(self, item: Any) -> None:
        """The item reached the far end: a user's transmission succeeds, a message moves on."""
        if isinstance(item, Transmission):
            item.succeed(self.env.now)
        else:
            self.on_arrival(item)

    # ------------------------------------------------------------------ SimPy resource plumbing
    def _trigger_put(self, _event: Any) -> None:
        """``link.put(n)`` requests join the link's own queue (they succeed on arrival)."""
        while self.put_queue:
            self.offer(self.put_queue.pop(0))
