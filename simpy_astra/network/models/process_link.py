"""``link-model: fifo``: the base link element as it is, a FIFO link served by its own process.

:class:`~simpy_astra.network.link.LinkElement` keeps the whole link contract (the wire's
timing, ``set_bandwidth`` / ``take_down`` / ``bring_up`` / ``fail``, live ``bytes`` /
``busy_ns`` / ``queue``, ``put()``, the probes the observers and per-job counts subscribe
to); a model derives from it and overrides only its policy: :meth:`enqueue` /
:meth:`dequeue` (what to send next) and :meth:`hold_ns` (when). ``ProcessLink`` is the name
the models have always derived from.
"""

from __future__ import annotations

from simpy_astra.network.link import LinkElement


class ProcessLink(LinkElement):
    """A FIFO link served by its own process (every policy method as the base has it)."""


__all__ = ["ProcessLink"]
