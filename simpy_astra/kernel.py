"""The simulation clock: a SimPy environment plus the two-level event buckets of ASTRA-sim.

ASTRA-sim keeps one global time-bucketed FIFO queue and, per NPU, a map tick -> list of
callbacks that is flushed by a single global event (``Sys::try_register_event``). We keep
the same structure on top of :class:`simpy.Environment`: SimPy's heap orders events by
(time, priority, insertion id), which is exactly "time buckets, FIFO inside a bucket,
same-time appends run in the same pass". Only one queue entry is allocated per
(NPU, tick) bucket and per network message, never per callback; those entries are small
slotted objects that :meth:`Kernel.run` calls directly instead of SimPy events.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

import simpy
from simpy.core import NORMAL

Callback = Callable[[Any], None]

#: allocations between young-generation collections while running (CPython's default is
#: 700): a run allocates millions of short-lived objects freed by reference counting, so
#: frequent cycle searches cost ~10% of the run for nothing
GC_YOUNG_THRESHOLD = 50_000


class Scheduled:
    """Something :meth:`Kernel.schedule` puts on the queue: its ``fire()`` runs at its tick.

    Not a SimPy ``Event``: only :meth:`Kernel.run` takes these off the queue, and calls them
    directly (no callback list, no event object per message)."""

    __slots__ = ()

    def fire(self) -> None:
        raise NotImplementedError


class _Call(Scheduled):
    """A scheduled callback ``fn(arg)`` (the kernel calls it without going through ``fire``)."""

    __slots__ = ("fn", "arg")

    def __init__(self, fn: Callback, arg: Any) -> None:
        self.fn = fn
        self.arg = arg

    def fire(self) -> None:
        self.fn(self.arg)


class _Bucket(Scheduled):
    """One NPU's list of callbacks for one tick, flushed by a single queue entry."""

    __slots__ = ("owner", "tick", "items")

    def __init__(self, owner: NpuClock, tick: int) -> None:
        self.owner = owner
        self.tick = tick
        self.items: list[tuple[Callback, Any]] = []

    def fire(self) -> None:
        items = self.items
        i = 0
        # callbacks registered for this same tick while flushing are appended and run too
        while i < len(items):
            fn, arg = items[i]
            fn(arg)
            i += 1
        del self.owner.buckets[self.tick]


class Kernel:
    """Global clock shared by every NPU, link and memory model of one run (integer ns)."""

    def __init__(self) -> None:
        self.env = simpy.Environment()
        self._queue = self.env._queue
        self._eid = self.env._eid

    @property
    def now_ns(self) -> int:
        return int(self.env.now)

    def call_later(self, delay_ns: int, fn: Callback, arg: Any = None) -> None:
        """Run ``fn(arg)`` after ``delay_ns`` directly on the global queue (network arrivals)."""
        env = self.env
        heappush(self._queue, (env._now + delay_ns, NORMAL, next(self._eid), _Call(fn, arg)))

    def schedule(self, delay_ns: int, item: Scheduled) -> None:
        """Run ``item.fire()`` after ``delay_ns`` on the global queue."""
        heappush(self._queue, (self.env._now + delay_ns, NORMAL, next(self._eid), item))

    def run(self) -> None:
        """``env.run()`` with our own queue items (:class:`Scheduled`) dispatched directly.

        The order is SimPy's: (time, priority, insertion id) off the same heap; SimPy events
        (the NPU processes) go through SimPy's usual callback protocol, failures included."""
        gc.freeze()  # what exists now (graphs, configs) lives to the end: never scan it again
        thresholds = gc.get_threshold()
        gc.set_threshold(GC_YOUNG_THRESHOLD, *thresholds[1:])
        try:
            self._loop()
        finally:
            gc.set_threshold(*thresholds)
            gc.unfreeze()

    def _loop(self) -> None:
        env = self.env
        queue = self._queue
        pop = heappop
        call = _Call
        while queue:
            now, _prio, _eid, ev = pop(queue)
            env._now = now
            if ev.__class__ is call:
                ev.fn(ev.arg)
            elif isinstance(ev, Scheduled):
                ev.fire()
            else:
                callbacks, ev.callbacks = ev.callbacks, None
                for callback in callbacks:
                    callback(ev)
                if not ev._ok and not hasattr(ev, "_defused"):
                    raise ev._value

    def events_processed(self) -> int:
        """SimPy events scheduled so far (all processed once :meth:`run` returned): buckets,
        message arrivals and deliveries. Reads SimPy's insertion counter, so counting is free;
        call it once, after the run (reading it advances the counter)."""
        return next(self.env._eid)


class NpuClock:
    """Per-NPU event buckets (``Sys::register_event``): one global event per new tick."""

    __slots__ = ("kernel", "env", "buckets", "_queue", "_eid")

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.env = kernel.env
        self._queue = kernel.env._queue
        self._eid = kernel.env._eid
        self.buckets: dict[int, _Bucket] = {}

    def register(self, delay_ns: int, fn: Callback, arg: Any = None) -> None:
        """Run ``fn(arg)`` after ``delay_ns`` inside this NPU's bucket for that tick."""
        tick = self.env._now + delay_ns
        bucket = self.buckets.get(tick)
        if bucket is None:
            bucket = _Bucket(self, tick)
            self.buckets[tick] = bucket
            heappush(self._queue, (tick, NORMAL, next(self._eid), bucket))
        bucket.items.append((fn, arg))
