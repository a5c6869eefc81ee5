"""What every one-dimensional topology offers the network backends."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any


@dataclass(frozen=True)
class CostPart:
    """``count`` identical pieces of hardware in one instance of a dimension, as the network
    cost model (:mod:`simpy_astra.network.cost_model`) prices them.

    ``kind`` is ``link`` (a cable between two devices, carrying ``bandwidth_gbps`` each way),
    ``switch`` (``radix`` ports of ``bandwidth_gbps``) or ``nic`` (an NPU's port facing a
    switch).
    """

    kind: str
    bandwidth_gbps: float
    count: int
    radix: int = 1


class BasicTopology:
    """A one-dimensional building block of ``npus_count`` NPUs with uniform links.

    NPUs are graph nodes ``0 .. npus_count-1``; switches, if any, are nodes numbered after
    them (as in ASTRA-sim's congestion-aware backend). Every directed edge carries
    ``bandwidth_gbps`` and ``latency_ns``.
    """

    name = "basic"
    #: what the unaware delays are known to keep, so folding need not check every pair
    #: (O(n^2), minutes for a dimension of 16,384): "uniform" (every pair alike: a switch),
    #: "rotate" (a pair's delay depends on ``(dst - src) mod n`` alone: a ring), None
    #: (checked pair by pair). A subclass that changes ``hops`` or ``path_profile`` must
    #: reset it unless its delays still have that symmetry.
    delay_symmetry: str | None = None
    #: link-level folding's shortcut, stated by topologies whose routes have a closed-form
    #: symmetry: ``link_action(move)``, the map of the dimension's devices that extends the map
    #: ``move`` of its NPUs and sends every route onto the moved pair's route and every link
    #: onto a link of the same speed (None: there is none). None here: folding reads it off
    #: the routes. It holds only with the ``route``, ``links`` and ``link_params`` of the class
    #: that states it: a subclass with its own is read off its routes.
    link_action: Callable[[Callable[[int], int]], dict[int, int] | None] | None = None
    #: a flow's packets are spread over several paths (``routes``), which folding does not check
    sprays: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A class of a user's that sets no ``name`` is called by its own (``HyperX(16)`` in the
        bound check's warning), not by the base's "basic", which names nothing they wrote."""
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            cls.name = cls.__name__

    def __init__(self, npus_count: int, bandwidth_gbps: float, latency_ns: float) -> None:
        self.npus_count = npus_count
        self.bandwidth_gbps = bandwidth_gbps
        self.latency_ns = latency_ns

    def hops(self, src: int, dst: int) -> int:
        """Links a message from ``src`` to ``dst`` crosses (``src != dst``)."""
        raise NotImplementedError

    def links(self) -> list[tuple[int, int]]:
        """Directed links as (from device, to device)."""
        raise NotImplementedError

    def route(self, src: int, dst: int) -> list[int]:
        """Devices a message visits, ``src`` first and ``dst`` last."""
        raise NotImplementedError

    def routes(self, src: int, dst: int) -> list[list[int]]:
        """Every path a flow's packets are spread over (packet spraying); one path unless
        a topology sprays (Graph with ``routing: spray``)."""
        return [self.route(src, dst)]

    def link_params(self, src: int, dst: int) -> tuple[float, float]:
        """(bandwidth_gbps, latency_ns) of the directed link ``src -> dst``."""
        return self.bandwidth_gbps, self.latency_ns

    def path_profile(self, src: int, dst: int) -> tuple[float, float]:
        """(summed link latency ns, slowest link GB/s) from ``src`` to ``dst``: what the
        congestion-unaware backend charges. Uniform links: ``hops * latency``, ``bandwidth``;
        a subclass that gives links their own ``link_params``: read along its ``route``, so
        that every backend charges the links the link-level ones cross."""
        if not self._own_link_params():
            return self.hops(src, dst) * self.latency_ns, self.bandwidth_gbps
        path = self.route(src, dst)
        params = [self.link_params(u, v) for u, v in zip(path, path[1:], strict=False)]
        return sum(latency for _, latency in params), min(bandwidth for bandwidth, _ in params)

    def _own_link_params(self) -> bool:
        return _defines_link_params(type(self))

    def device_label(self, device: int) -> int | str:
        """How reports name a device (switches may have names)."""
        return device

    def cost_parts(self) -> list[CostPart]:
        """Links, switches and NICs of one instance of this dimension (the cost hook).

        Read off :meth:`links`: a cable per connected pair of devices (both directions are one
        cable, at the faster direction's bandwidth), a switch per switch device with a port
        per cable, and a NIC per NPU-to-switch cable. Subclasses with a closed form override it.
        """
        cables: dict[tuple[int, int], float] = {}
        for u, v in self.links():
            pair = (u, v) if u < v else (v, u)
            cables[pair] = max(cables.get(pair, 0.0), self.link_params(u, v)[0])
        n = self.npus_count
        links: Counter[float] = Counter()
        nics: Counter[float] = Counter()
        ports: dict[int, Counter[float]] = {}
        for (u, v), bw in cables.items():
            links[bw] += 1
            for a, b in ((u, v), (v, u)):
                if a >= n:
                    ports.setdefault(a, Counter())[bw] += 1
                    if b < n:
                        nics[bw] += 1
        parts = [CostPart("link", bw, c) for bw, c in sorted(links.items())]
        switches: Counter[tuple[float, int]] = Counter()
        for per_bw in ports.values():
            for bw, radix in per_bw.items():  # a switch with mixed port speeds: one part per speed
                switches[(bw, radix)] += 1
        parts += [CostPart("switch", bw, c, radix) for (bw, radix), c in sorted(switches.items())]
        parts += [CostPart("nic", bw, c) for bw, c in sorted(nics.items())]
        return parts


@cache
def _defines_link_params(cls: type) -> bool:
    """A class below :class:`BasicTopology` defines ``link_params`` (the checking wrapper of a
    plug-in's class, ``checks_answers``, gives none of its own)."""
    return any("link_params" in vars(c) for c in cls.__mro__
               if c is not BasicTopology and not vars(c).get("checks_answers", False))
