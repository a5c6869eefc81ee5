"""How collective algorithms run: generators that yield SimPy events, as SimPy processes.

An algorithm is a generator function ``algo(ctx)``. It yields events and is resumed with
their values, as a SimPy process is:

* the phase's own events (:class:`~simpy_astra.engine.events.Signal`: ``ctx.recv``, ``ctx.send``,
  ``ctx.endpoint``, ``ctx.wait``, ``ctx.spawn``) resume it *in place*, in the instant and
  order in which they happen, exactly where ASTRA-sim runs its collective state machines
  (``env.process`` would start it one queue entry late and resume it one entry late);
* any other SimPy event (``env.timeout(t)``, ``env.all_of([...])``, a user's event) resumes
  it when SimPy processes that event, as it resumes any process; a failed event is thrown
  into the generator.

A phase is a :class:`PhaseProcess`, a :class:`simpy.Process` subclass: ``is_alive``,
``target``, ``value``, ``triggered``/``processed`` and :meth:`~PhaseProcess.interrupt` work
as for any process (an :class:`simpy.Interrupt` is thrown into the generator in an event
of its own, as SimPy does; one the algorithm does not catch ends the run with that error, as an
unhandled failed process does in SimPy). Beside its NPU's process: when the collective's last phase ends,
the NPU's process is woken to complete the node. ``ctx.spawn(generator)`` starts a
sub-process of the phase at once (a :class:`PhaseProcess` too).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Generator
from types import CodeType
from typing import Any

import simpy
from simpy.events import Event

from simpy_astra.collectives.base import CollectiveError
from simpy_astra.engine.events import Signal
from simpy_astra.infra.zero_time import ZeroTimeGuard
from simpy_astra.plugins import is_users_file, shown

__all__ = ["PhaseProcess", "PostCount", "Signal", "users_algorithm", "users_code"]

#: how many messages (sends and receives) one phase of a user's algorithm may post in one
#: instant: a loop that posts without yielding never gives SimPy the control back (it grew by
#: 100 MB a second); a direct all-to-all of 16,384 NPUs posts 32,766
POSTS_PER_INSTANT = 100_000


#: whether a function's code is the user's, decided once per function (code object) and shared
#: by all its phases: bounded by the functions defined, not by the phases run (a cache keyed
#: by per-phase objects held every phase alive, and ``is_users_file`` per phase took 300 µs)
_USERS_CODE: dict[CodeType, bool] = {}


def users_code(code: CodeType) -> bool:
    """``code`` (a function's or generator's) is in the user's file; looked up once per code."""
    users = _USERS_CODE.get(code)
    if users is None:
        users = _USERS_CODE[code] = is_users_file(code.co_filename)
    return users


def users_algorithm(algorithm: Any) -> bool:
    """``algorithm`` (a phase's run function, through its wrappers and partials) is in the
    user's code (a callable without code of its own, a builtin, is not)."""
    while True:
        if isinstance(algorithm, functools.partial):
            algorithm = algorithm.func
        elif (inner := getattr(algorithm, "__wrapped__", None)) is not None:
            algorithm = inner
        else:
            break
    code = getattr(algorithm, "__code__", None)
    return code is not None and users_code(code)


class PostCount:
    """The messages a user's phase posted in the current instant, and its receives still to
    arrive (a phase that returns before them ends its collective without its data)."""

    __slots__ = ("instant", "count", "pending")

    def __init__(self) -> None:
        self.instant, self.count, self.pending = -1, 0, 0

    def too_many(self, now: float) -> bool:
        if now != self.instant:
            self.instant, self.count = now, 0
        self.count += 1
        return self.count > POSTS_PER_INSTANT

    def problem(self, now: float) -> str:
        return (f"{POSTS_PER_INSTANT:,} messages posted at {now:,} ns without time passing: a loop that sends "
                f"or receives without yielding never ends; yield what it waits for (yield ctx.recv(...)) or "
                f"end the loop")


def innermost(generator: Any) -> Any:
    """The generator ``generator`` delegates to, through every ``yield from`` (itself if none)."""
    while getattr(generator, "gi_yieldfrom", None) is not None:
        generator = generator.gi_yieldfrom
    return generator


def describe(algorithm: Any) -> str:
    """The user's function behind a generator (the innermost one it delegates to) or a
    function (unwrapped), and where it is: ``'simple_ring' (my_algos.py:12)``."""
    algorithm = innermost(algorithm)
    if not inspect.isgenerator(algorithm):
        algorithm = inspect.unwrap(algorithm)
    code = getattr(algorithm, "gi_code", None) or getattr(algorithm, "__code__", None)
    if code is None:
        return repr(algorithm)
    return f"'{algorithm.__qualname__}' ({code.co_filename}:{code.co_firstlineno})"


def not_an_event(gen: Any, yielded: Any) -> str:
    """The one line for an algorithm that yielded what it cannot wait on: not an event, or an
    event of another ``simpy.Environment`` (which nothing of this run fires: a silent stall)."""
    if isinstance(yielded, Event):
        return (f"collective algorithm {describe(gen)} yielded {shown(yielded)} of another simpy.Environment, which "
                f"this run never processes; make events with ctx.env (ctx.env.timeout(...), ctx.env.event())")
    hint = ("; to wait for several, yield ctx.env.all_of([...])" if isinstance(yielded, (list, tuple, set)) else
            "; to run a sub-generator, yield ctx.spawn(...) (or yield from it)" if inspect.isgenerator(yielded)
            else "")
    return (f"collective algorithm {describe(gen)} yielded {shown(yielded)}; a collective yields SimPy events "
            f"(ctx.recv(...), ctx.endpoint(...), env.timeout(...), ...){hint}")


class PhaseProcess(Signal, simpy.Process):
    """Runs ``generator`` as a process that starts now (not one queue entry later, as
    ``env.process`` would) and is resumed by the events it yields in the instant they
    happen; an event itself, fired with the generator's return value.

    ``users``: the generator runs the user's code, whose resumes in one instant are counted;
    ours always let time pass and are never counted (a phase's sub-processes, thousands per
    collective, are its algorithm's: decided once, for the algorithm's function)."""

    interrupted = False  # an interrupt was thrown into it: it may end before what it waited on

    def __init__(self, env: simpy.Environment, generator: Generator, users: bool = False) -> None:
        if not hasattr(generator, "throw"):
            raise TypeError(f"a collective algorithm must be a generator function (got {shown(generator)})")
        self.env = env
        self.callbacks = []
        self._generator = generator
        self._target: Event | None = None
        self._zero_time = ZeroTimeGuard() if users else None  # the user's resumes, counted
        self.step(None)

    def step(self, value: Any, error: BaseException | None = None) -> None:
        """Resume the generator with ``value`` (or throw ``error`` into it) and run it up to
        its next wait."""
        gen = self._generator
        guard = self._zero_time
        while True:
            if guard is not None and guard.resumed(self.env.now):
                raise CollectiveError(guard.problem(
                    f"collective algorithm {describe(gen)}",
                    "a loop over events that take no time (ctx.wait(0), env.timeout(0), an event it already waited "
                    "on)", "wait for a message or a time > 0"))
            try:
                if error is None:
                    event = gen.send(value)
                else:
                    event, error = gen.throw(error), None
            except StopIteration as stop:
                self._target = None
                self.fire(stop.value)
                return
            if isinstance(event, Signal):
                if event.fired:
                    value = event.result
                    continue
                self._target = event
                event.wait_in_place(self.step)
                return
            if not isinstance(event, Event) or event.env is not self.env:
                raise CollectiveError(not_an_event(gen, event))
            if event.callbacks is None:  # already processed by SimPy
                if event.ok:
                    value = event.value
                else:
                    event.defused = True
                    error = type(event.value)(*event.value.args)
                continue
            self._target = event
            event.callbacks.append(self._processed)
            return

    def _processed(self, event: Event) -> None:
        if event.ok:
            self.step(event.value)
        else:  # SimPy's rule: a failed event is thrown into the process that waits on it
            event.defused = True
            self.step(None, type(event.value)(*event.value.args))

    def algorithm(self) -> str:
        """The algorithm this phase runs, and where: ``'simple_ring' (my_algos.py:12)``."""
        return describe(self._generator)

    def runs_users_code(self) -> bool:
        """The algorithm is the user's own (its innermost generator is in the user's file), not
        one of ours (ring, direct, a custom ET or MSCCL collective), whose phases always end."""
        code = getattr(innermost(self._generator), "gi_code", None)
        return code is not None and users_code(code)

    @property
    def is_alive(self) -> bool:
        return not self.fired

    def interrupt(self, cause: Any = None) -> None:
        """Throw :class:`simpy.Interrupt` (``cause``) into the phase, in an event of its own
        at the current time, as :meth:`simpy.Process.interrupt` does; the phase stops waiting
        on its target. An interrupt that finds the phase ended is ignored, as in SimPy."""
        if self.fired:
            raise RuntimeError(f"{self!r} has terminated and cannot be interrupted.")
        if self._generator.gi_running:
            raise RuntimeError("A process is not allowed to interrupt itself.")
        event = self.env.event()
        event.callbacks.append(lambda _e: self._interrupted(cause))
        event.succeed()

    def _interrupted(self, cause: Any) -> None:
        if self.fired:
            return
        self.interrupted = True
        target, self._target = self._target, None
        if isinstance(target, Signal):
            target.stop_waiting(self.step)
        elif target is not None and target.callbacks is not None and self._processed in target.callbacks:
            target.callbacks.remove(self._processed)
        self.step(None, simpy.Interrupt(cause))

    def _desc(self) -> str:
        return f"PhaseProcess({getattr(self._generator, '__name__', '?')})"
