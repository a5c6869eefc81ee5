"""SimPy is the engine: one plain :class:`simpy.Environment`, ASTRA-sim's order kept by it.

ASTRA-sim keeps one global time-ordered FIFO queue and, per NPU, a map tick -> list of
callbacks that a single global event flushes (``Sys::register_event``). Both map onto
SimPy: the global queue is SimPy's heap, ordered by (time, priority, insertion); a per-NPU
bucket is one entry on it, and so is a network arrival (:func:`call_after`, a timeout's
entry without the event). So every heap entry is created in the reference's order, and
``env.run`` replays it.

Every NPU is a SimPy process (``Npu.execute``) that executes its Chakra graph: an event that
completes one of its nodes (a bucket, a message delivery, a collective's last event) rings
the NPU's :class:`Bell`, and the process completes the node and issues what that frees in
that instant, where the reference does it, so the order of same-time events (which decides
the figures) is kept exactly. A collective phase is a process of its own, resumed by its
own events (:mod:`simpy_astra.engine.phase_process`).

**SimPy internals.** This is the one module that sets SimPy's private event fields
(``_ok``, ``_value``): :class:`Bell`, :class:`Signal` and :func:`process_in_place` give an
event its outcome and run its callbacks in the instant, as ``Environment.step`` would, where
``Event.succeed`` would queue it behind the instant's other events (and so change the
reference's order); :func:`wait_instead` moves a waiting process (its ``_target`` and
``_resume``) to another event; :func:`rewrap_starting_processes` and
:func:`rewrap_processes_starting_now` read the processes queued to start and hand one a
wrapped generator (``_generator``). :func:`call_after` and :func:`timeout` put entries on
SimPy's queue (``_queue``, ``_eid``, ``_now``) as ``Environment.schedule`` does, in one
Python call instead of three: a run schedules one per message and per NPU tick. Checked
against SimPy 4.1 (``setup.cfg`` pins ``simpy>=4.1,<5``).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from heapq import heappush
from typing import Any

import simpy
from simpy.core import NORMAL, URGENT, StopSimulation
from simpy.events import Event, Initialize, Timeout

Callback = Callable[[Any], None]

#: allocations between young-generation collections while running (CPython's default is
#: 700): a run allocates millions of short-lived objects freed by reference counting, so
#: frequent cycle searches cost ~10% of the run for nothing
GC_YOUNG_THRESHOLD = 50_000


def process_in_place(event: Event, value: Any = None) -> None:
    """Trigger ``event`` with ``value`` and process it now: callbacks run in order, as
    ``Environment.step`` would run them (``event.processed`` is True afterwards). A process
    it resumes runs nested in the caller's step; the caller's process (if any) is the
    active one again afterwards."""
    event._ok = True
    event._value = value
    callbacks = event.callbacks
    event.callbacks = None
    if callbacks:
        env = event.env
        active = env._active_proc
        for callback in callbacks:
            callback(event)
        env._active_proc = active


def start_in_place(env: simpy.Environment, generator: Generator[Event, Any, Any]) -> simpy.Process:
    """``env.process(generator)``, with the generator run to its first ``yield`` now rather
    than one queue entry later: an element that must act in the instant work is offered
    (a link) waits from the moment it exists. The process's start event stays on the
    queue, emptied, so processing it does nothing."""
    process = env.process(generator)
    start = process.target
    callbacks, start.callbacks = start.callbacks, []
    for callback in callbacks:
        callback(start)
    return process


def wait_instead(process: simpy.Process, event: Event) -> None:
    """Have ``process``, waiting on an event that nothing triggers, wait on ``event`` instead,
    without a step of its generator: what it waited for (an item to start) was done for it
    in place; it resumes, as the callback of ``event``, where ``event`` is processed."""
    resume = process._resume
    process._target.callbacks.remove(resume)
    event.callbacks.append(resume)
    process._target = event


def rewrap_starting_processes(env: simpy.Environment,
                              wrap: Callable[[simpy.Process, Generator], Generator | None]) -> None:
    """Every process on ``env``'s queue that has not started yet (its start event, SimPy's
    ``Initialize``, queued) runs the generator ``wrap(process, generator)`` returns instead
    of its own, unless that is None: a run holds a user's processes to letting time pass
    before it runs them. Only processes still to start: one that started runs on as it is."""
    for entry in env._queue:
        _rewrap(entry[3], wrap)


def rewrap_processes_starting_now(env: simpy.Environment,
                                  wrap: Callable[[simpy.Process, Generator], Generator | None]) -> None:
    """:func:`rewrap_starting_processes` for the processes started in this instant alone (a
    user's code started them while the run runs): their start events are queued at ``now``
    with ``URGENT`` priority, the least keys of the heap, so they and their ancestors are the
    top of it and only that top is read (nothing when its first entry is not one)."""
    queue, now = env._queue, env._now
    if not queue or queue[0][0] != now or queue[0][1] != URGENT:
        return  # (nearly always: checked once per step of a user's process, per on() callback)
    below = [0]
    while below:
        i = below.pop()
        if i < len(queue) and queue[i][0] == now and queue[i][1] == URGENT:
            _rewrap(queue[i][3], wrap)
            below += (2 * i + 1, 2 * i + 2)


def _rewrap(start: Event, wrap: Callable[[simpy.Process, Generator], Generator | None]) -> None:
    """Hand a process whose start event ``start`` is still queued the generator ``wrap`` gives."""
    if type(start) is Initialize and start.callbacks:
        process = getattr(start.callbacks[0], "__self__", None)
        if isinstance(process, simpy.Process):
            wrapped = wrap(process, process._generator)
            if wrapped is not None:
                process._generator = wrapped


class Signal(Event):
    """An event of a collective phase's own (a message arrived, an endpoint delay elapsed, ...).

    :meth:`fire` resumes the phase generators waiting on it *in place* (``resume``/``more``:
    :class:`~simpy_astra.engine.phase_process.PhaseProcess` steps), in the instant and order the
    reference runs its collective state machines. It is a SimPy event all the same: fired
    with nobody else waiting it is processed at once (``triggered`` and ``processed``, its
    ``value`` set), so yielding it later, ``env.all_of([...])`` and conditions see it done;
    a SimPy process or condition that waits on it (its ``callbacks``) is resumed by SimPy, one
    queue entry later, as ``succeed`` does."""

    # defaults on the class: a phase makes one of these per message, and setting them per
    # instance would double what creating one costs
    fired = False
    result: Any = None
    resume: Callable[[Any], None] | None = None
    more: list[Callable[[Any], None]] | None = None

    def wait_in_place(self, resume: Callable[[Any], None]) -> None:
        if self.resume is None:
            self.resume = resume
        else:
            self.more = (self.more or []) + [resume]

    def stop_waiting(self, resume: Callable[[Any], None]) -> None:
        """Forget ``resume`` (an interrupted process no longer waits on this event)."""
        if self.resume == resume:
            self.resume = None
            if self.more:
                self.resume = self.more.pop(0)
        elif self.more and resume in self.more:
            self.more.remove(resume)

    def fire(self, value: Any = None) -> None:
        if self.fired:
            return
        self.fired = True
        self.result = value
        self._ok = True  # triggered before anyone resumes: what they see of it is consistent
        self._value = value
        resume = self.resume
        if resume is not None:
            self.resume = None
            resume(value)
            more = self.more
            if more:
                self.more = None
                for r in more:
                    r(value)
        if self.callbacks:
            self.env.schedule(self)  # SimPy processes and conditions: processed as succeed() would
        else:  # nobody else waits: processed now (cheaper than queueing an empty event)
            self.callbacks = None

    def settle(self) -> None:
        """Fire with nobody waiting in place (a native algorithm's send that arrived): marked
        done as a processed SimPy event, or scheduled if a SimPy process or condition waits."""
        self.fired = True
        self._ok = True
        self._value = None
        if self.callbacks:
            self.env.schedule(self)
        else:
            self.callbacks = None


class _Due:
    """A queue entry that only runs its callbacks when its time comes: all that
    ``Environment.step`` reads of an event (``callbacks``, then ``_ok``). Nobody waits on it
    or asks its value, so it needs none of a :class:`~simpy.events.Timeout`'s fields."""

    __slots__ = ("callbacks",)
    _ok = True


def process_in_place_or_raise(event: Event, value: Any = None) -> None:
    """:func:`process_in_place`, then raise the error of a process it resumed that failed:
    a run stops in the instant ``sim.finished`` fires, so a user's process that waited on it
    and raised would otherwise never have its failure processed, and the error would be lost."""
    waiting = list(event.callbacks or ())
    process_in_place(event, value)
    for callback in waiting:
        process = getattr(callback, "__self__", None)
        if isinstance(process, simpy.Process) and process.triggered and not process.ok:
            process.defused = True  # raised here, once, as SimPy would raise it from run()
            raise process.value


#: rounds of events queued for the last instant that still run after every NPU has finished
LAST_INSTANT_ROUNDS = 1000


def stop_at_end_of_instant(env: simpy.Environment, rounds_left: int = LAST_INSTANT_ROUNDS) -> None:
    """Stop ``env.run()`` behind every event queued for this instant: a user's process resumed
    there after the last NPU finished may raise, and SimPy raises a failed process's error only
    where its event is processed. ``Event.succeed`` (public SimPy) queues the stop behind them;
    what they queue for the same instant gets another round, at most ``rounds_left``, so a
    user's loop of ``env.timeout(0)`` cannot hold the end of the run."""
    def stop(_event: Event) -> None:
        if rounds_left > 1 and env.peek() == env.now:
            stop_at_end_of_instant(env, rounds_left - 1)
        else:
            raise StopSimulation(None)

    end = env.event()
    end.callbacks.append(stop)
    end.succeed()


def call_after(env: simpy.Environment, delay_ns: int | float, callback: Callback) -> None:
    """Run ``callback(entry)`` ``delay_ns`` from now, as its own entry on SimPy's queue: the
    entry ``Timeout(env, delay_ns).callbacks.append(callback)`` makes, in the same place
    of the queue, without the Timeout."""
    if delay_ns < 0:
        raise ValueError(f"Negative delay {delay_ns}")  # (SimPy's words)
    due = _Due()
    due.callbacks = [callback]
    heappush(env._queue, (env._now + delay_ns, NORMAL, next(env._eid), due))


def timeout(env: simpy.Environment, delay_ns: int | float, value: Any = None) -> Timeout:
    """``Timeout(env, delay_ns, value)``, built and scheduled in one call (a link makes two
    per message hop)."""
    if delay_ns < 0:
        raise ValueError(f"Negative delay {delay_ns}")
    event = _new_timeout(Timeout)
    event.env = env
    event.callbacks = []
    event._value = value
    event._delay = delay_ns
    event._ok = True
    heappush(env._queue, (env._now + delay_ns, NORMAL, next(env._eid), event))
    return event


_new_timeout = object.__new__


def call_later(env: simpy.Environment, delay_ns: int, fn: Callback, arg: Any = None) -> None:
    """Run ``fn(arg)`` ``delay_ns`` from now, as its own entry on SimPy's queue."""
    call_after(env, delay_ns, lambda _entry: fn(arg))


class Bell(Event):
    """Wakes the one process that waits on it, in the instant and place of the event that
    rings it.

    SimPy would process a bell scheduled with ``URGENT`` priority right after the event that
    rang it, before anything else; our events that ring bells have that ring as their only
    action, so nothing could run in between, and the bell is processed at once instead,
    exactly as ``Environment.step`` processes an event: outcome set, callbacks (the waiting
    process's resume) called in order. That saves a queue entry per wake-up. A bell nobody
    waits on yet (its process is running) is scheduled ``URGENT`` instead. ``next`` is the
    bell the process waits on after this one, so rings are never lost or reordered."""

    # defaults on the class: one bell per wake-up of a process, so creating one stays cheap
    next: Bell | None = None
    work: Callback | None = None
    arg: Any = None

    def ring(self, work: Callback, arg: Any) -> Bell:
        """Have the waiting process run ``work(arg)`` now; returns the bell to ring next."""
        self.work = work
        self.arg = arg
        self.next = following = Bell(self.env)
        self._ok = True
        self._value = None
        callbacks = self.callbacks
        if callbacks:
            self.callbacks = None
            for callback in callbacks:
                callback(self)
        else:
            self.env.schedule(self, URGENT)
        return following


class Doorbell:
    """The bells of one process, rung in order: :meth:`ring` has the process run
    ``work(arg)`` in this instant; :meth:`serve` is the process's loop that does it."""

    __slots__ = ("bell", "first_bell", "serving", "stopped")

    def __init__(self, env: simpy.Environment) -> None:
        self.bell = self.first_bell = Bell(env)
        self.serving = True  # the process waits on ``bell``; False once it has ended
        self.stopped = False  # :meth:`stop`: rings do nothing any more

    def ring(self, work: Callback, arg: Any = None) -> None:
        """Have the process run ``work(arg)`` now (after it has ended, e.g. a late message
        for a finished NPU, the bell runs it; after :meth:`stop`, nothing)."""
        if self.stopped:
            return
        bell = self.bell
        if not self.serving:
            bell.callbacks.append(_run_work)
        self.bell = bell.ring(work, arg)

    def run_or_ring(self, work: Callback, arg: Any = None) -> None:
        """:meth:`ring`, for a ``work`` that cannot raise and does not ring this doorbell
        before it returns. While the process waits on its bell, a ring would only resume it
        in place to run ``work(arg)``: run it here instead, in the same instant and order,
        a generator step and a bell less (nothing else tells the two apart: the process
        never sees the ring, and an error would have been the process's, not the ringer's)."""
        if self.bell.callbacks and not self.stopped:
            work(arg)
        else:
            self.ring(work, arg)

    def stop(self) -> None:
        """From now on a ring does nothing (a failed NPU: nothing wakes its process)."""
        self.stopped = True

    def serve(self, finished: Callable[[], bool] | None = None):
        """The process's loop: run what each ring brings until ``finished()`` (forever
        without it)."""
        bell = self.first_bell
        self.first_bell = None  # rung bells link to the next: keeping the first keeps them all
        try:
            while finished is None or not finished():
                yield bell
                work, arg = bell.work, bell.arg
                bell.work = bell.arg = None
                bell = bell.next
                work(arg)
        finally:
            self.serving = False
            while bell.next is not None:  # rung, not yet run by the process: the bell runs it
                bell.callbacks.append(_run_work)
                bell = bell.next


class NpuClock(Doorbell):
    """One NPU's time: its event buckets (``Sys::register_event``), one SimPy event per new
    tick, and the doorbell through which an event that completes one of the NPU's nodes
    wakes the NPU's process (:meth:`ring`). A failed NPU's clock is stopped
    (:meth:`~Doorbell.stop`): nothing it is asked to do happens any more."""

    __slots__ = ("env", "buckets")

    def __init__(self, env: simpy.Environment) -> None:
        super().__init__(env)
        self.env = env
        self.buckets: dict[int | float, list[tuple[Callback, Any]]] = {}

    def register(self, delay_ns: int, fn: Callback, arg: Any = None) -> None:
        """Run ``fn(arg)`` after ``delay_ns``, in this NPU's bucket for that tick (with
        everything else registered for that tick, in order); nothing once stopped."""
        if self.stopped:
            return
        env = self.env
        tick = env._now + delay_ns
        items = self.buckets.get(tick)
        if items is None:
            items = self.buckets[tick] = []
            call_after(env, delay_ns, _Bucket(self, tick, items))
        items.append((fn, arg))


def _run_work(bell: Bell) -> None:
    bell.work(bell.arg)


class _Bucket:
    """The callback of a bucket's event: run the bucket's list in order, including what is
    registered for the same tick while it runs ("same-time appends run in the same pass", as
    in the reference). An item that completes a node wakes the NPU's process."""

    __slots__ = ("clock", "tick", "items")

    def __init__(self, clock: NpuClock, tick: int | float, items: list) -> None:
        self.clock = clock
        self.tick = tick
        self.items = items

    def __call__(self, _event: simpy.Event) -> None:
        items = self.items
        i = 0
        while i < len(items):
            fn, arg = items[i]
            fn(arg)
            i += 1
        del self.clock.buckets[self.tick]


@contextmanager
def fast_collection() -> Iterator[None]:
    """Fewer garbage-collector passes while a run allocates its short-lived events (the
    collector runs during the run even if start-up paused it, as ``__main__`` does).

    What exists at the start (graphs, configs) lives to the end: frozen, never scanned again,
    and thawed at the end. A heap someone froze before (a sweep worker's modules and inherited
    inputs, :func:`simpy_astra.sweep.point.freeze_worker_heap`) is left frozen: ``gc.unfreeze``
    thaws every frozen object at once, and a thawed heap is scanned again by every full
    collection after the run (80% of a small point's CPU in a sweep worker). The run's own
    graphs are then not frozen (they could not be thawed alone): its full collections scan them."""
    owned = gc.get_freeze_count() == 0  # a heap frozen by someone else stays theirs, frozen
    if owned:
        gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *thresholds[1:])
    was_enabled = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if not was_enabled:
            gc.disable()
        gc.set_threshold(*thresholds)
        if owned:
            gc.unfreeze()
