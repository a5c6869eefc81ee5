"""How collective algorithms run: generators that yield SimPy events, as processes of their own.

An algorithm is a generator function ``algo(ctx)``. It yields events and is resumed with
their values, as a SimPy process is:

* the phase's own events (:class:`Signal`: ``ctx.recv``, ``ctx.send``, ``ctx.endpoint``,
  ``ctx.wait``, ``ctx.spawn``) resume it *in place*, in the instant and order in which they
  happen, exactly where ASTRA-sim runs its collective state machines (a SimPy process is
  resumed inside the processing of its event too, but starts one queue entry late);
* any other SimPy event (``env.timeout(t)``, ``env.all_of([...])``, a user's event) resumes
  it when SimPy processes that event, as it resumes any process.

A phase is a process of its own, beside its NPU's process: when the collective's last phase
ends, the NPU's process is woken to complete the node. ``ctx.spawn(generator)`` starts a
sub-process of the phase at once; it is itself an event, fired with the generator's return
value.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import simpy
from simpy.events import Event


class Signal(Event):
    """An event of a phase's own (a message arrived, an endpoint delay elapsed, ...).

    :meth:`fire` resumes the phase generators waiting on it at once; a separate SimPy
    process that waits on it (having yielded it before it fired) is resumed by SimPy."""

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

    def fire(self, value: Any = None) -> None:
        self.fired = True
        self.result = value
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
            self.succeed(value)


class PhaseProcess(Signal):
    """Runs ``generator`` as a process that starts now (not one queue entry later, as
    ``env.process`` would) and is resumed by the events it yields in the instant they
    happen; an event itself, fired with the generator's return value."""

    def __init__(self, env: simpy.Environment, generator: Generator) -> None:
        super().__init__(env)
        if not hasattr(generator, "send"):
            raise TypeError(f"a collective algorithm must be a generator function (got {generator!r})")
        self.gen = generator
        self.step(None)

    def step(self, value: Any) -> None:
        """Resume the generator with ``value`` and run it up to its next wait."""
        gen = self.gen
        while True:
            try:
                event = gen.send(value)
            except StopIteration as stop:
                self.gen = None
                self.fire(stop.value)
                return
            if event.__class__ is Signal or isinstance(event, Signal):
                if event.fired:
                    value = event.result
                    continue
                if event.resume is None:
                    event.resume = self.step
                else:
                    event.wait_in_place(self.step)
                return
            if not isinstance(event, Event):
                raise TypeError(f"a collective algorithm yielded {event!r}; yield SimPy events "
                                f"(ctx.recv(...), ctx.endpoint(...), env.timeout(...), ...)")
            if event.callbacks is None:  # already processed by SimPy
                value = event.value
                continue
            event.callbacks.append(self._processed)
            return

    def _processed(self, event: Event) -> None:
        self.step(event.value)
