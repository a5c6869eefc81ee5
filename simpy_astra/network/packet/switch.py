"""A forwarding device's SimPy process: it has its output ports look at their buffers and hands
their fill and empty instants to the network.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol

import simpy

from simpy_astra.network.packet.trains import MAX_ROUNDS, instant_after

if TYPE_CHECKING:
    from simpy_astra.network.packet.port import Port


class SwitchOwner(Protocol):
    """What a switch process asks of its network."""

    switch_buffer_bytes: float | None

    def buffer_instant(self, port: Port) -> None:
        """A buffer of ``port`` fills or empties now: the network re-shares its trains."""


class SwitchProcess:
    """A forwarding device's process (a switch, or an NPU that forwards on multi-hop routes):
    it keeps the buffers of its output ports.

    The network wakes it (:meth:`notify`: its ``_wake`` event succeeds) whenever trains
    start, end or change rate on one of its buffered ports. Woken, it has each such port
    measure its buffer (:meth:`Port.look_at_buffer`: occupancy, the largest queue, the next
    instant) and arm its timer for that instant (:meth:`Port.arm_buffer_timer`), which wakes
    it again; an instant that is now it hands to the network
    (:meth:`SwitchOwner.buffer_instant`), which re-shares."""

    def __init__(self, env: simpy.Environment, device: Any, network: SwitchOwner) -> None:
        self.env = env
        self.device = device
        self.network = network
        self.wakes = 0
        self._due: dict[Port, None] = {}
        self._wake = env.event()
        self.process = env.process(self._serve())

    def notify(self, port: Port) -> None:
        self._due[port] = None
        if not self._wake.triggered:
            self._wake.succeed()

    def _serve(self):
        while True:
            yield self._wake
            self._wake = self.env.event()
            self.wakes += 1
            due, self._due = self._due, {}
            for port in due:
                self._look(port)

    def _look(self, port: Port) -> None:
        instant, soonest = port.look_at_buffer(self.network.switch_buffer_bytes)
        if instant and port.count_instant() <= MAX_ROUNDS:  # (a guard: a state that re-solves to itself)
            self.network.buffer_instant(port)
            return
        if soonest != math.inf:
            port.arm_buffer_timer(instant_after(self.env.now, soonest), self.notify)

    def __repr__(self) -> str:
        return f"<SwitchProcess {self.device}>"
