"""An ECN-marking FIFO link (as DCTCP's switches mark): an item that joins a queue already
holding ``threshold_bytes`` or more (the item on the wire not counted) gets ``ecn = True``.

Timing is the FIFO link's: marking tells the receiver about congestion, it delays nothing.
``marked`` counts the marked items. The threshold is a parameter:
``link-model: {class: ecn, threshold_bytes: 32768}``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import simpy

from simpy_astra.network.models.process_link import ProcessLink


class EcnLink(ProcessLink):
    def __init__(self, env: simpy.Environment, src: Any, dst: Any, bandwidth_gbps: float, latency_ns: float,
                 on_arrival: Callable[[Any], None], threshold_bytes: int = 64 * 1024) -> None:
        if isinstance(threshold_bytes, bool) or not isinstance(threshold_bytes, int) or threshold_bytes < 0:
            raise ValueError(f"threshold_bytes must be a whole number of bytes >= 0 (got {threshold_bytes!r})")
        self.threshold_bytes = threshold_bytes
        self.marked = 0
        self.queued_bytes = 0
        super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)

    def enqueue(self, item: Any) -> None:
        if self.queued_bytes >= self.threshold_bytes:
            item.ecn = True
            self.marked += 1
        self.queued_bytes += item.size
        super().enqueue(item)

    def dequeue(self) -> Any | None:
        item = super().dequeue()
        if item is not None:
            self.queued_bytes -= item.size
        return item
