"""An ECN-marking FIFO link (as DCTCP's switches mark): an item that joins a queue already
holding ``threshold_bytes`` or more (the item on the wire not counted) gets ``ecn = True``.

Timing is the FIFO link's: marking tells the receiver about congestion, it delays nothing.
``marked`` counts the marked items. Change the threshold in a subclass (``link-model:
my_pkg.mod:MyEcn`` with ``threshold_bytes = ...``).
"""

from __future__ import annotations

from typing import Any

from simpy_astra.network.models.process_link import ProcessLink


class EcnLink(ProcessLink):
    threshold_bytes: int = 64 * 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.marked = 0
        self.queued_bytes = 0
        super().__init__(*args, **kwargs)

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
