"""The contract every directed link keeps, on every link-level backend: :class:`LinkResource`,
a SimPy :class:`~simpy.resources.base.BaseResource` with its ends, speed (``bandwidth_gbps``;
``bytes_per_ns``, GB = 2^30 B), ``latency_ns``, ``up`` and ``failed``, live statistics
(``bytes``, ``busy_ns``, ``queue``), the controls (:meth:`~LinkResource.set_bandwidth`,
:meth:`~LinkResource.take_down`, :meth:`~LinkResource.bring_up`, :meth:`~LinkResource.fail`),
``put(nbytes)`` (a :class:`Transmission`: background bytes over this link), what it holds for
the stall check (:meth:`~LinkResource.held`) and the probe points ``link_start`` /
``link_end`` (:mod:`simpy_astra.engine.probes`); listed in ``simpy_astra/network/README.md``.
The congestion-aware backend's links (:mod:`simpy_astra.network.link`) and the packet
backend's :class:`~simpy_astra.network.packet.port.Port` build on it.
"""

from __future__ import annotations

from typing import Any

import simpy
from simpy.core import BoundClass
from simpy.resources.base import BaseResource, Put

from simpy_astra.engine.probes import Probed
from simpy_astra.infra.horizon import HORIZON_NS, api_number, python_number
from simpy_astra.infra.units import network_gbps_to_bytes_per_ns

#: the largest transfer a link takes: sizes are whole bytes below 2^63 (the horizon's bound)
MAX_BYTES = 2**63 - 1


def check_size_bytes(size_bytes: Any, where: str) -> int:
    """A transfer's size at the API's boundary: a whole number 0 .. 2^63-1 of bytes, else
    ValueError naming ``where`` (no nan, no wrap-around, no string taken as a number)."""
    size_bytes = python_number(size_bytes)
    ok = (isinstance(size_bytes, int) and not isinstance(size_bytes, bool)) or (
        isinstance(size_bytes, float) and size_bytes.is_integer())
    if not ok or not 0 <= size_bytes <= MAX_BYTES:
        raise ValueError(f"{where}: size_bytes must be a whole number 0 .. 2^63-1 (got {size_bytes!r})")
    return int(size_bytes)


class Transmission(Put):
    """A user's request to carry ``size_bytes`` over one link; its value is the arrival time.
    It is no network message: class 0 (``priority``), no board ``key``."""

    priority = 0
    key = None
    ecn = False
    def __init__(self, link: LinkResource, size_bytes: int) -> None:
        self.size = check_size_bytes(size_bytes, f"link {link.src}->{link.dst}: put()")
        super().__init__(link)

    def arrived(self, link: LinkResource) -> None:
        self.succeed(link.env.now)


class LinkResource(BaseResource, Probed):
    """What a directed link ``src -> dst`` is on every link-level backend (the contract in
    ``simpy_astra/network/README.md``): a SimPy resource with ``bandwidth_gbps``
    (``bytes_per_ns``), ``latency_ns``, ``up`` and ``failed``; ``put(nbytes)`` is a
    :class:`Transmission`. Subclasses keep ``bytes``, ``busy_ns`` (live) and ``queue``,
    implement the controls, and emit ``link_start`` / ``link_end``
    (``fn(link, key, size_bytes)``, :mod:`simpy_astra.engine.probes`) for the network's messages."""

    #: what a user's subclass is, in its errors (:func:`simpy_astra.plugins.model_kind`)
    MODEL_KIND = "link model"

    put = BoundClass(Transmission)
    PROBES = ("link_start", "link_end")
    probe_link_start: list | None = None
    probe_link_end: list | None = None
    #: down for good (:meth:`fail`, ``sim.fail_device``): stall reports say "failed"
    failed = False
    #: its behaviour depends on what is offered to it alone, not on which link it is: a
    #: user's model says so (``symmetric = True``) for a congestion-aware run to fold its
    #: links (:mod:`simpy_astra.folding.links`; ours are)
    symmetric = False

    def __init__(self, env: simpy.Environment, src: Any, dst: Any, bandwidth_gbps: float,
                 latency_ns: float, capacity: float) -> None:
        super().__init__(env, capacity)
        # a link model may pass its own speed on (a share of the link's): one it cannot have is
        # named here, not met as a division by zero or a negative delay in the run
        api_number(bandwidth_gbps, f"link {src}->{dst}: bandwidth_gbps", positive=True, time=False)
        api_number(latency_ns, f"link {src}->{dst}: latency_ns")
        self.env = env
        self.src = src
        self.dst = dst
        self.latency_ns = latency_ns
        self.bandwidth_gbps = bandwidth_gbps
        self.bytes_per_ns = network_gbps_to_bytes_per_ns(bandwidth_gbps)
        self.up = True

    # ------------------------------------------------------------------ the contract
    bytes: int  # bytes put on the wire so far
    busy_ns: float  # time spent serialising so far, the transmission on the wire now included

    @property
    def queue(self) -> list[Any]:
        """What waits for the wire, first to be sent first."""
        raise NotImplementedError

    @property
    def on_wire(self) -> Any | None:
        """The item being serialised now (held there while the link is down), or None."""
        return None

    @property
    def holding(self) -> Any | None:
        """The item taken from the queue and held before it starts (a model's ``hold_ns``),
        or None."""
        return None

    def set_bandwidth(self, bandwidth_gbps: float) -> None:
        """New speed for every byte not yet on the wire, from now (ValueError unless finite, > 0)."""
        raise NotImplementedError

    def take_down(self) -> None:
        """Stop the wire: what is on it and what waits stay until :meth:`bring_up`."""
        raise NotImplementedError

    def bring_up(self) -> None:
        """Carry on after :meth:`take_down`, at the current speed."""
        raise NotImplementedError

    def fail(self) -> None:
        """Down for good (a failed device's link): what it holds is never delivered."""
        self.failed = True
        self.take_down()

    def held(self) -> list[tuple[Any, Any]]:
        """(message, its board key or None for background bytes) of every network message on
        this link, on the wire or waiting: what cannot move while it is down (the stall
        check reads it). A user's own ``put()`` is not a network message."""
        on_wire, holding = self.on_wire, self.holding
        items = [*(() if on_wire is None else (on_wire,)), *(() if holding is None else (holding,)), *self.queue]
        return [(item, item.key) for item in items if type(item) is not Transmission]

    # ------------------------------------------------------------------ checks
    def _check_bandwidth(self, bandwidth_gbps: float) -> float:
        """``set_bandwidth``'s argument, checked (numpy's number as Python's)."""
        where = f"link {self.src}->{self.dst}: set_bandwidth(bandwidth_gbps)"
        if isinstance(bandwidth_gbps, int | float) and not isinstance(bandwidth_gbps, bool) and bandwidth_gbps == 0:
            raise ValueError(f"{where} must be > 0 (got 0); use take_down() to stop the link")
        bandwidth_gbps = api_number(bandwidth_gbps, where, positive=True, time=False)
        if 1 / network_gbps_to_bytes_per_ns(bandwidth_gbps) > HORIZON_NS:
            raise ValueError(f"{where}: {bandwidth_gbps:g} GB/s is so low that one byte would take past "
                             f"the horizon (2^63 ns)")
        return bandwidth_gbps

    def _new_bandwidth(self, bandwidth_gbps: float) -> None:
        """Take a new speed (checked; the subclass first accounts what the old one did)."""
        self.bandwidth_gbps = bandwidth_gbps
        self.bytes_per_ns = network_gbps_to_bytes_per_ns(bandwidth_gbps)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.src}->{self.dst} {self.bandwidth_gbps} GB/s {self.latency_ns} ns>"
