"""The switch element: what every forwarding device of the congestion-aware backend is.

A switch is a SimPy process (``switch.process``) that receives each message arriving on one
of its input links (:meth:`SwitchElement.receive`) and hands it on, once, to the network,
which offers it to its next link or delivers it (:meth:`SwitchElement.send_on`). The base
keeps the contract -- its process, the ``switch_forward`` probe point
(:mod:`simpy_astra.engine.probes`), ``failed`` and :meth:`SwitchElement.fail` -- and a model
supplies only its policy, :meth:`SwitchElement.release_ns` (when an item that arrived at
``arrived_ns`` may leave; at once here), or overrides :meth:`receive` / :meth:`run` for a
different discipline. The built-in
:class:`~simpy_astra.network.congestion_aware.SwitchProcess` forwards in the arrival's
instant through a :class:`~simpy_astra.engine.events.Doorbell` (ASTRA-sim's exact order);
``models/delay_switch.py`` adds a fixed pipeline delay.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Generator
from decimal import Decimal
from numbers import Real
from typing import Any

import simpy

from simpy_astra.engine.probes import Probed
from simpy_astra.plugins import bad_return, serving_loop


def checked_release_ns(switch: SwitchElement, due_ns: Any) -> int:
    """``due_ns`` in whole ns if it is a finite number (a time in ns, a fraction cut so that
    simulated times stay whole ns; one already past means at once), else the model's error
    naming its class and method."""
    if isinstance(due_ns, Real | Decimal) and not isinstance(due_ns, bool) and math.isfinite(due_ns):
        return int(due_ns)  # numpy's as Python's; 1,030.5 -> 1,030
    raise bad_return(switch, "release_ns", due_ns, "a finite time in ns (when the item may leave)")


class SwitchElement(Probed):
    """A forwarding device ``device``: ``forward(item)`` is the network's way on."""

    #: what a user's subclass is, in its errors (:func:`simpy_astra.plugins.model_kind`)
    MODEL_KIND = "switch model"

    PROBES = ("switch_forward",)
    probe_switch_forward: list | None = None
    #: failed for good (``sim.fail_device``): every link into or out of it is down
    failed = False

    def __init__(self, env: simpy.Environment, device: Any, forward: Callable[[Any], None]) -> None:
        self.env = env
        self.device = device
        self._forward = forward
        self._inbox: deque[tuple[float, Any]] = deque()
        self._wake: simpy.Event | None = None
        self.process = self._start_process()

    def _start_process(self) -> simpy.Process:
        return self.env.process(serving_loop(self))

    # ------------------------------------------------------------------ the policy
    def release_ns(self, item: Any, arrived_ns: float) -> float:
        """When ``item``, which arrived at ``arrived_ns``, may leave (at once here)."""
        return arrived_ns

    # ------------------------------------------------------------------ the contract
    def receive(self, item: Any) -> None:
        """An item arrived on an input link: queue it for the process (which wakes)."""
        self._inbox.append((self.env.now, item))
        wake = self._wake
        if wake is not None:
            self._wake = None
            wake.succeed()

    def run(self) -> Generator[simpy.Event, Any, None]:
        """Forever: take the oldest item, wait until :meth:`release_ns`, hand it on."""
        env = self.env
        inbox = self._inbox
        while True:
            if not inbox:
                self._wake = env.event()
                yield self._wake
                continue
            arrived_ns, item = inbox.popleft()
            due_ns = self.release_ns(item, arrived_ns)
            if type(due_ns) is not int:
                due_ns = checked_release_ns(self, due_ns)
            if due_ns > env.now:
                yield env.timeout(due_ns - env.now)
            self.send_on(item)

    def send_on(self, item: Any) -> None:
        """Hand ``item`` on (to its next link, or delivered): once per item received."""
        watchers = self.probe_switch_forward
        if watchers is not None:
            for watcher in watchers:
                watcher(self, item.key, item.size)
        self._forward(item)

    def fail(self) -> None:
        """Mark the switch failed (``sim.fail_device`` also takes its links down for good)."""
        self.failed = True

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.device}>"
