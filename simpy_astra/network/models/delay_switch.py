"""A switch with a fixed forwarding delay (a cut-through ASIC's pipeline, say): each message
arriving on an input leaves for its next link ``delay_ns`` later, in arrival order.

An example of the switch contract: only the policy (:meth:`release_ns`) is its own; the
process, probes and faults are :class:`~simpy_astra.network.switch.SwitchElement`'s. The
delay is a parameter: ``switch-model: {class: delay, delay_ns: 250}``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import simpy

from simpy_astra.network.switch import SwitchElement


class DelaySwitch(SwitchElement):
    def __init__(self, env: simpy.Environment, device: Any, forward: Callable[[Any], None],
                 delay_ns: int = 100) -> None:
        if isinstance(delay_ns, bool) or not isinstance(delay_ns, int) or delay_ns < 0:
            raise ValueError(f"delay_ns must be a whole number of ns >= 0 (got {delay_ns!r})")
        self.delay_ns = delay_ns
        super().__init__(env, device, forward)

    def release_ns(self, item: Any, arrived_ns: float) -> float:
        return arrived_ns + self.delay_ns
