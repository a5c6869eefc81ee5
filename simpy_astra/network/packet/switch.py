"""A forwarding device's SimPy process: its output buffers' occupancy, the largest queue, and the
timers for the next fill or empty instant.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol

import simpy
from simpy.events import Timeout

from simpy_astra.network.packet.solver import TOLERANCE
from simpy_astra.network.packet.trains import EMPTY_BYTES, MAX_ROUNDS

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
    start, end or change rate on one of its buffered ports. Woken, it sums each such port's
    backlogs into its occupancy, records the largest, and arms a timer for the port's next
    buffer instant (full, or a train's backlog empty); the timer wakes it again, and it hands
    the instant to the network (:meth:`SwitchOwner.buffer_instant`), which re-shares."""

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
        now = self.env.now
        buffer_bytes = self.network.switch_buffer_bytes
        occupancy = slope = 0.0
        soonest = math.inf
        instant = False
        for flow in port.buffered:
            backlog = flow.backlog_at(now)
            sending = flow.in_rate if flow.left_bytes > 0 else 0.0
            occupancy += flow.buffered_at(now)
            slope += sending - flow.buffer_rate()
            net = sending - flow.out_rate
            if net < 0:
                if backlog <= EMPTY_BYTES:
                    instant = True  # emptied
                else:
                    soonest = min(soonest, backlog / -net)
        full = occupancy >= buffer_bytes - EMPTY_BYTES
        if full and any(not f.coupled and f.left_bytes > 0 and f.in_rate > f.buffer_rate() * (1 + TOLERANCE)
                        for f in port.buffered):
            instant = True
        port.full = full
        seen = min(occupancy, buffer_bytes)
        if seen > port.max_queue_bytes:
            port.max_queue_bytes = round(seen)
        if instant:
            if port._instant_ns != now:
                port._instant_ns, port._instants = now, 0
            port._instants += 1
            if port._instants <= MAX_ROUNDS:  # (a guard: a state that re-solves to itself)
                self.network.buffer_instant(port)
                return
        if slope > 0 and not full:
            soonest = min(soonest, (buffer_bytes - occupancy) / slope)
        if soonest == math.inf:
            return
        at_ns = math.ceil(now + soonest - 1e-9)
        if port._timer_ns is not None and now <= port._timer_ns <= at_ns:
            return  # the pending timer comes first; it wakes us and we look again
        port._timer_version += 1
        port._timer_ns = at_ns
        version = port._timer_version
        Timeout(self.env, max(0, at_ns - now)).callbacks.append(lambda _e: self._timer(port, version))

    def _timer(self, port: Port, version: int) -> None:
        if version == port._timer_version:
            port._timer_ns = None
            self.notify(port)

    def __repr__(self) -> str:
        return f"<SwitchProcess {self.device}>"
