"""Link-level folding on the packet backend: one live port per orbit of links.

The frames, orbits and addressing are the congestion-aware backend's
(:mod:`simpy_astra.folding.links`): a translation ``h`` that maps the network onto itself
maps the trains on port ``L`` onto the trains on ``L + h``, so the rate solver needs the
trains of one port per orbit only. Hop ``i`` of a simulated train's path is carried by
the representative ``R`` of its link ``L_i = g_i(R)``: there the real network holds the
train moved by ``g_i``'s inverse, a relabelled copy at the same hop with the same rates.

Two things make a folded path differ from a plain one:

* **A port may occur at several hops.** A train whose path crosses two links of one orbit
  (a ring all-to-all's two-hop message crosses ``0->1`` and ``1->2``, one orbit) has two
  copies on the representative port, and both count: the port's round robin serves each
  (``Port.flows`` counts occurrences, the solver sees one unit member per hop), each
  carries the train's bytes, and the load is their sum.
* **Inputs are the real links.** A port serves its inputs round robin and each input is a
  FIFO, so two trains share an input only if their copies really enter the port from the
  same link. The copy at hop ``i`` enters ``R`` from ``g_i^-1(L_{i-1})``, which need not
  be a representative (all links into a switch may be one orbit, yet each is its own
  input): the path names that device pair as the hop's input (the injection stays None).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from simpy_astra.folding.links import FoldedLinkNetwork
from simpy_astra.network.fabric import DeviceId


class FoldedPacketNetwork(FoldedLinkNetwork):
    """The packet network of a folded run: one live port per orbit of links, every hop of a
    train's path on its orbit's representative port, entered from the real link its copy
    comes from (see the module docstring). Messages are addressed, links watched and
    symmetry-breaking calls refused as on the folded congestion-aware network.

    Rates are shared, not queued in offer order, so trains of two NPUs meeting at a port in
    one instant get the same rates whichever came first: nothing in the run tells orbit
    members apart, and the run keeps its reports as they come."""

    name = "packet"
    may_break_symmetry = False

    def _route_hooks(self) -> dict[str, Callable[..., Any]]:
        return {"path_of_route": self._path_of_route}

    def _path_of_route(self, devices: tuple[DeviceId, ...]) -> tuple[tuple[Any, ...], tuple[Hashable, ...]]:
        """The representative ports that carry the hops of route ``devices`` and, per hop,
        the real link its copy there enters from (None: the source's injection)."""
        orbits, add_link = self.orbits, self.inner.add_link
        ports: list[Any] = []
        inputs: list[Hashable] = []
        before: tuple[DeviceId, DeviceId] | None = None
        for u, v in zip(devices[:-1], devices[1:], strict=True):
            rep, g = orbits.carried(u, v)
            ports.append(add_link(*rep))
            if before is None:
                inputs.append(None)
            else:
                back = orbits.inverse(g)
                inputs.append((orbits.move(before[0], back), orbits.move(before[1], back)))
            before = (u, v)
        return tuple(ports), tuple(inputs)

    def port_stats(self) -> list[dict[str, Any]]:
        """Every directed link's packet figures (its representative's), as named fields."""
        return [{"from": s.src, "to": s.dst, "bytes": s.bytes, "busy_ns": s.busy_ns,
                 "max_queue_bytes": s.max_queue_bytes, "stall_ns": s.stall_ns} for s in self.link_stats()]
