"""A strict-priority link: the wire always takes the waiting item of the highest class.

Classes are ``item.priority`` (0 is highest, the workload's messages are 0; background
traffic sets its own with ``send_background(..., priority=k)``), FIFO within a class, not
preemptive: an item on the wire finishes. So a high-class item waits at most for the one
lower-class item being serialised, whatever the lower-class load behind it.
"""

from __future__ import annotations

import heapq
from itertools import count
from typing import Any

from simpy_astra.network.models.process_link import ProcessLink


class StrictPriorityLink(ProcessLink):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._heap: list[tuple[int, int, Any]] = []
        self._order = count()
        super().__init__(*args, **kwargs)

    def enqueue(self, item: Any) -> None:
        heapq.heappush(self._heap, (item.priority, next(self._order), item))

    def dequeue(self) -> Any | None:
        return heapq.heappop(self._heap)[2] if self._heap else None

    @property
    def queue(self) -> list[Any]:
        return [entry[2] for entry in sorted(self._heap)]
