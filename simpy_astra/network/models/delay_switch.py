"""A switch with a fixed forwarding delay (a cut-through ASIC's pipeline, say): each message
arriving on an input leaves for its next link ``delay_ns`` later, in arrival order.

An example of the switch contract: ``receive(item)`` is called when an item arrives, and the
switch must call ``forward(item)`` once for it; its process is ``self.process``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import Any

import simpy


class DelaySwitch:
    delay_ns: int = 100

    def __init__(self, env: simpy.Environment, device: Any, forward: Callable[[Any], None]) -> None:
        self.env = env
        self.device = device
        self.forward = forward
        self._inbox: deque[tuple[float, Any]] = deque()
        self._wake: simpy.Event | None = None
        self.process = env.process(self.run())

    def receive(self, item: Any) -> None:
        self._inbox.append((self.env.now + self.delay_ns, item))
        if self._wake is not None and not self._wake.triggered:
            self._wake.succeed()

    def run(self) -> Generator[simpy.Event, Any, None]:
        env = self.env
        while True:
            if not self._inbox:
                self._wake = env.event()
                yield self._wake
                continue
            due_ns, item = self._inbox.popleft()
            if due_ns > env.now:
                yield env.timeout(due_ns - env.now)
            self.forward(item)
