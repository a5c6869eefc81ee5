"""The simulation clock: a SimPy environment plus the two-level event buckets of ASTRA-sim.

ASTRA-sim keeps one global time-bucketed FIFO queue and, per NPU, a map tick -> list of
callbacks that is flushed by a single global event (``Sys::try_register_event``). We keep
the same structure on top of :class:`simpy.Environment`: SimPy's heap orders events by
(time, priority, insertion id), which is exactly "time buckets, FIFO inside a bucket,
same-time appends run in the same pass". Only one SimPy event is allocated per
(NPU, tick) bucket and per network message, never per callback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import simpy
from simpy.core import NORMAL
from simpy.events import Event

Callback = Callable[[Any], None]


def _run_call(ev: _Call) -> None:
    ev.fn(ev.arg)


class _Call(Event):
    """A scheduled callback: a bare SimPy event whose only callback runs ``fn(arg)``."""

    def __init__(self, env: simpy.Environment, fn: Callback, arg: Any) -> None:
        self.env = env
        self.fn = fn
        self.arg = arg
        self.callbacks = [_run_call]
        self._value = None
        self._ok = True


class _Bucket(Event):
    """One NPU's list of callbacks for one tick, flushed by a single SimPy event."""

    def __init__(self, env: simpy.Environment, owner: NpuClock, tick: int) -> None:
        self.env = env
        self.owner = owner
        self.tick = tick
        self.items: list[tuple[Callback, Any]] = []
        self.callbacks = [self._flush]
        self._value = None
        self._ok = True

    def _flush(self, _ev: Event) -> None:
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
        self._schedule = self.env.schedule

    @property
    def now_ns(self) -> int:
        return int(self.env.now)

    def call_later(self, delay_ns: int, fn: Callback, arg: Any = None) -> None:
        """Run ``fn(arg)`` after ``delay_ns`` directly on the global queue (network arrivals)."""
        self._schedule(_Call(self.env, fn, arg), NORMAL, delay_ns)

    def run(self) -> None:
        self.env.run()

    def events_processed(self) -> int:
        """SimPy events scheduled so far (all processed once :meth:`run` returned): buckets,
        message arrivals and deliveries. Reads SimPy's insertion counter, so counting is free;
        call it once, after the run (reading it advances the counter)."""
        return next(self.env._eid)


class NpuClock:
    """Per-NPU event buckets (``Sys::register_event``): one global event per new tick."""

    __slots__ = ("kernel", "env", "buckets", "_schedule")

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.env = kernel.env
        self._schedule = kernel.env.schedule
        self.buckets: dict[int, _Bucket] = {}

    def register(self, delay_ns: int, fn: Callback, arg: Any = None) -> None:
        """Run ``fn(arg)`` after ``delay_ns`` inside this NPU's bucket for that tick."""
        tick = self.env._now + delay_ns
        bucket = self.buckets.get(tick)
        if bucket is None:
            bucket = _Bucket(self.env, self, tick)
            self.buckets[tick] = bucket
            self._schedule(bucket, NORMAL, delay_ns)
        bucket.items.append((fn, arg))
