"""Link-level folding: the congestion-aware backend simulates one link per orbit.

Where every NPU of an orbit does what its representative does with ids moved by a
translation ``h``, and ``h`` maps the network onto itself (devices, links with their speeds,
routes), the queue of link ``L + h`` is the queue of ``L`` with ids moved by ``h``. So a
folded run makes one live link per orbit of links, and every hop of a route is carried by
its orbit's representative (:class:`LinkOrbits`); the message itself is addressed as in the
unaware folded run (:class:`~simpy_astra.folding.network.OrbitAddresses`).

How a translation moves devices. NPUs move in the folding's frame; a frame that moves each
coordinate on its own (the grid's rotations, XOR on power-of-two dimensions) moves the
instance of dimension ``d`` through NPU ``b`` to the one through ``b + h``, and a device of
that instance (an NPU or a switch) by the dimension's own *local action*: the map of its
devices under the coordinate's translation that sends every route onto the moved pair's
route and every link onto a link of the same speed and latency (:func:`local_action`; a
ring's rotations, a switch's and a fully connected dimension's permutations; a Graph's are
read off its routes). Id shifts carry from one dimension into the next and so move links
onto pairs that are no link: they are not used on this backend. Two more conditions make
the relabelled queues exact: a link no translation but 0 maps onto itself (otherwise the
real link would carry several orbit members' copies of one message; it can only happen
between two switches), and links and switches whose behaviour depends on nothing but what
is offered to them (ours; a user's link model that says so with ``symmetric = True``; the
default switch, which forwards in the instant).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from simpy_astra.folding.frames import Folding, IdShifts, XorIds
from simpy_astra.folding.network import OrbitAddresses
from simpy_astra.network.fabric import DeviceId, Fabric, LinkStats
from simpy_astra.network.messages import Handler
from simpy_astra.plugins import is_ours
from simpy_astra.topologies.base import BasicTopology

if TYPE_CHECKING:
    import networkx as nx

    from simpy_astra.network.congestion_aware import CongestionAwareNetwork

#: a dimension with more NPUs than this, of a topology whose routes are not known in closed
#: form, is not checked pair by pair (O(n^2) routes per translation): it does not fold
LOCAL_CHECK_MAX_NPUS = 256


def _stated_action(topo: BasicTopology) -> Callable[[Callable[[int], int]], dict[int, int] | None] | None:
    """The topology's own ``link_action`` (see BasicTopology), if the class that states it
    also gives ``topo`` its routes, links and link speeds; else None."""
    kind = type(topo)
    owner = next((c for c in kind.__mro__ if vars(c).get("link_action") is not None), None)
    if owner is None or any(getattr(kind, m) is not getattr(owner, m) for m in ("route", "links", "link_params")):
        return None
    return topo.link_action


def local_action(topo: BasicTopology, move: Callable[[int], int]) -> dict[int, int] | None:
    """The map of one dimension's devices (NPUs and switches) that extends the map ``move``
    of its NPUs, sends the route of every pair onto the route of the moved pair and every
    link onto a link of the same bandwidth and latency; None if there is none.

    A topology whose routes have a closed-form symmetry states the map (``link_action``: a
    ring's rotations, every permutation of a switch's or a fully connected dimension's NPUs);
    otherwise it is read off the routes, device by device, and checked."""
    stated = _stated_action(topo)
    if stated is not None:
        return stated(move)
    n = topo.npus_count
    npus = {k: move(k) for k in range(n)}
    if n > LOCAL_CHECK_MAX_NPUS:
        return None
    out = dict(npus)
    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            p, q = topo.route(a, b), topo.route(npus[a], npus[b])
            if len(p) != len(q):
                return None
            for x, y in zip(p, q, strict=True):
                if out.setdefault(x, y) != y:
                    return None
    links = set(topo.links())
    devices = {x for link in links for x in link}
    if not devices <= set(out) or len(set(out.values())) != len(out):
        return None  # a device on no route, or two sent to one
    for u, v in links:
        if (out[u], out[v]) not in links or topo.link_params(out[u], out[v]) != topo.link_params(u, v):
            return None
    return out


def _moves_every_link(topo: BasicTopology, action: dict[int, int]) -> bool:
    """No link is mapped onto itself (a translation other than 0 that fixed one would make
    the real link carry several orbit members' copies of a message)."""
    return not any(action[u] == u and action[v] == v for u, v in topo.links())


def link_shifts(topo: BasicTopology, shifts: set[int]) -> set[int]:
    """The largest subgroup of ``shifts`` (rotations of one dimension, a subgroup of Z_n)
    whose every member has a local action that moves every link: the multiples of the
    smallest divisor ``g`` of n that qualify."""
    n = topo.npus_count

    def works(c: int) -> bool:
        action = local_action(topo, lambda k: (k + c) % n)
        return action is not None and (c == 0 or _moves_every_link(topo, action))

    for g in range(1, n + 1):
        if n % g == 0 and all(c in shifts for c in range(0, n, g)):
            if g == n or all(works(c) for c in range(g, n, g)):
                return set(range(0, n, g))
    return {0}


def link_xors(topo: BasicTopology, masks: set[int]) -> set[int]:
    """A subgroup of ``masks`` (XORs of one power-of-two dimension) whose every member has
    a local action that moves every link, grown mask by mask from {0}."""
    def works(c: int) -> bool:
        action = local_action(topo, lambda k: k ^ c)
        return action is not None and (c == 0 or _moves_every_link(topo, action))

    group = {0}
    for c in sorted(masks):
        if c not in group:
            grown = group | {x ^ c for x in group}
            if grown <= masks and all(works(x) for x in grown - group):
                group = grown
    return group


def link_model_note(link_model: type | None, switch_model: type | None) -> str | None:
    """Why links or switches of these models cannot be folded, or None.

    Folding needs elements whose behaviour depends on what is offered to them alone, not on
    which link or switch they are: our link models, and a user's that says so with a class
    attribute ``symmetric = True``. A switch of a folded run stands for every switch of its
    orbit and, where a translation keeps it (a Switch dimension's), for the messages of every
    orbit member through it: only the default switch, which forwards in the instant, folds."""
    if link_model is not None and not (is_ours(link_model) or link_model.symmetric is True):
        return (f"link model {link_model.__module__}:{link_model.__qualname__} does not say it is "
                f"symmetric (symmetric = True)")
    if switch_model is not None:
        return f"switch model {switch_model.__module__}:{switch_model.__qualname__} may queue messages"
    return None


class LinkOrbits:
    """How the translations of a folding move the devices and links of a network, and the
    representative of each link's orbit.

    The representative of a link with an NPU end is the one whose NPU end (its source if
    both are NPUs) is a representative NPU: the translation that takes it there is unique
    (translations move every NPU), so finding it costs one look-up. A link between two
    switches takes the least image of its orbit."""

    def __init__(self, fabric: Fabric, folding: Folding) -> None:
        if isinstance(folding.frame, IdShifts):  # FoldSetup.for_run does not try them here
            raise ValueError("id shifts carry between dimensions and do not move links onto links")
        self.fabric = fabric
        self.folding = folding
        self._xor = isinstance(folding.frame, XorIds)
        self._add = folding.frame.add
        self._npus = fabric.npus_count
        self._actions: dict[tuple[int, int], dict[int, int]] = {}
        #: links between switches -> (their representative, the least image, and the
        #: translation from it): worth keeping
        self._between: dict[tuple[DeviceId, DeviceId], tuple[tuple[DeviceId, DeviceId], int]] = {}

    def _local(self, dim: int, h: int) -> dict[int, int]:
        """Dimension ``dim``'s local action of translation ``h``."""
        t = self.fabric.grid.coord(h, dim)
        key = (dim, t)
        action = self._actions.get(key)
        if action is None:
            topo = self.fabric.dims[dim]
            n = topo.npus_count
            action = local_action(topo, (lambda k: k ^ t) if self._xor else (lambda k: (k + t) % n))
            if action is None:  # FoldSetup.for_run let only translations with one through
                raise ValueError(f"translation {h} does not move dimension {dim}'s links onto links")
            self._actions[key] = action
        return action

    def move(self, device: DeviceId, h: int) -> DeviceId:
        """``device`` moved by translation ``h``."""
        if device < self._npus:
            return self._add(device, h)
        fabric = self.fabric
        dim, base, local = fabric.locate(device)
        moved_base = fabric.grid.moved(self._add(base, h), dim, 0)
        return fabric.device(dim, moved_base, self._local(dim, h)[local])

    def inverse(self, h: int) -> int:
        return self.folding.frame.sub(0, h)

    def representative(self, u: DeviceId, v: DeviceId) -> tuple[DeviceId, DeviceId]:
        """The representative of the orbit of link ``u -> v``."""
        return self.carried(u, v)[0]

    def carried(self, u: DeviceId, v: DeviceId) -> tuple[tuple[DeviceId, DeviceId], int]:
        """(the representative of link ``u -> v``, the translation ``g`` that moves it onto
        ``u -> v``)."""
        folding = self.folding
        if u < self._npus:
            g = folding.shift_of[u]
            return (folding.rep_of[u], self.move(v, self.inverse(g))), g
        if v < self._npus:
            g = folding.shift_of[v]
            return (self.move(u, self.inverse(g)), folding.rep_of[v]), g
        found = self._between.get((u, v))
        if found is None:
            h = min(folding.translations, key=lambda h: (self.move(u, h), self.move(v, h)))
            found = self._between[u, v] = ((self.move(u, h), self.move(v, h)), self.inverse(h))
        return found

    def representative_links(self) -> list[tuple[DeviceId, DeviceId]]:
        """One link per orbit, in a fixed order: those out of and into representative NPUs,
        then those between switches (found by walking only the dimensions that have any)."""
        fabric, grid = self.fabric, self.fabric.grid
        found: dict[tuple[DeviceId, DeviceId], None] = {}
        for dim, topo in enumerate(fabric.dims):
            local_links = topo.links()
            n = topo.npus_count
            for r in self.folding.representatives:
                base, k = grid.moved(r, dim, 0), grid.coord(r, dim)
                for u, v in local_links:
                    if k in (u, v):
                        found.setdefault(self.representative(fabric.device(dim, base, u),
                                                             fabric.device(dim, base, v)))
            between = [(u, v) for u, v in local_links if u >= n and v >= n]
            if between:
                for base in range(grid.size):
                    if grid.coord(base, dim) == 0:
                        for u, v in between:
                            found.setdefault(self.representative(fabric.device(dim, base, u),
                                                                 fabric.device(dim, base, v)))
        return list(found)


class FoldedLinkNetwork:
    """The congestion-aware network of a folded run: one live link per orbit of links.

    A message is posted as the representative of its receiver receives it
    (:class:`~simpy_astra.folding.network.OrbitAddresses`) and crosses the representatives
    of its route's links: the moved pair's route has the same representatives, link by link.
    ``links()`` are the representatives (made at start); ``link_stats()`` gives every link of
    the network its representative's figures. Faults, changes of speed and background
    traffic would break the symmetry: they are refused here, in one line."""

    name = "congestion_aware"
    pair_delays_only = False
    has_links = True
    has_faults = False  # a fault or change of speed on one link would break the symmetry
    has_priorities = False  # no background traffic to give a class
    #: two NPUs' messages meeting at one link in one instant (:attr:`broken_symmetry`): the
    #: run holds its reports until it knows whether to run again unfolded
    may_break_symmetry = True

    def __init__(self, inner_factory: Callable[..., CongestionAwareNetwork], folding: Folding) -> None:
        """``inner_factory(links_at_start=..., **hooks)`` builds the backend, with the hooks
        that carry a route on representatives (:meth:`_route_hooks`)."""
        self.folding = folding
        self.inner = inner_factory(links_at_start=False, **self._route_hooks())
        self.env = self.inner.env
        self.board = self.inner.board
        self.fabric = self.inner.fabric
        self.orbits = LinkOrbits(self.fabric, folding)
        for u, v in self.orbits.representative_links():
            self.inner.add_link(u, v)
        self._shift_of = folding.shift_of
        self._to_rep = OrbitAddresses(folding).to_representative
        self._hops: dict[tuple[tuple[DeviceId, DeviceId], int], _Hop] = {}
        self._seen: dict[tuple[DeviceId, DeviceId], _Seen] = {}
        #: why the folded figures may differ from the unfolded run's (the first tie between
        #: two NPUs' messages at one link, see :class:`_Seen`), or None
        self.broken_symmetry: str | None = None
        #: offers that met another at the same link in the same instant (any NPUs)
        self.ties = 0

    def _route_hooks(self) -> dict[str, Callable[..., Any]]:
        """The backend's hooks that carry a route's hops on representative links."""
        return {"link_of_hop": self._hop}

    def _hop(self, u: DeviceId, v: DeviceId) -> _Hop:
        """What carries a route's hop ``u -> v``: its orbit's representative link."""
        rep, g = self.orbits.carried(u, v)
        hop = self._hops.get((rep, g))
        if hop is None:
            seen = self._seen.get(rep)
            if seen is None:
                seen = self._seen[rep] = _Seen(self, rep)
            hop = self._hops[rep, g] = _Hop(self.inner.add_link(*rep), g, seen)
        return hop

    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        h = self._shift_of[dst]
        if h:
            src, dst, tag = self._to_rep(src, dst, tag, h)
        self.inner.send(src, dst, tag, size, fn, arg)

    def recv(self, dst: int, src: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        self.board.post_recv(dst, src, tag, size, fn, arg)

    def send_background(self, src: int, dst: int, size_bytes: int, priority: int = 0) -> Any:
        raise ValueError(_REFUSED.format(what="background traffic"))

    def fail_device(self, device: Any) -> None:
        raise ValueError(_REFUSED.format(what=f"failing device {device!r}"))

    def label(self, device: DeviceId) -> int | str:
        return self.inner.label(device)

    def link(self, u: Any, v: Any) -> LinkView:
        """Link ``u -> v`` (by id or label) to watch: its representative's live figures, which
        are its own; a fault or a change of speed is refused (:class:`LinkView`)."""
        rep = self.orbits.representative(*self._ids(u, v))
        return LinkView(self.inner.link(*rep), u, v)

    def _ids(self, u: Any, v: Any) -> tuple[DeviceId, DeviceId]:
        """Device ids of a link named by ids or labels (KeyError if the network has none)."""
        label = self.fabric.label
        if isinstance(u, int) and isinstance(v, int):
            self.fabric.link_params(u, v)  # KeyError if no such link
            return u, v
        for a, b, *_ in self.fabric.edges():
            if (label(a), label(b)) == (u, v):
                return a, b
        raise self.fabric.no_link(u, v)

    def links(self) -> list[Any]:
        """The representative links (each stands for its orbit)."""
        return self.inner.links()

    @property
    def switches(self) -> dict[DeviceId, Any]:
        return self.inner.switches

    @property
    def graph(self) -> nx.DiGraph:
        """The whole network's graph; live links (and switches) on the representatives."""
        return self.inner.graph

    def link_stats(self) -> list[LinkStats]:
        """Every directed link's statistics (its representative's, whatever the backend
        records), devices by their labels."""
        label, rep = self.fabric.label, self.orbits.representative
        live = {(lk.src, lk.dst): st for lk, st in zip(self.inner.links(), self.inner.link_stats(), strict=True)}
        return [replace(live[rep(u, v)], src=label(u), dst=label(v)) for u, v, *_ in self.fabric.edges()]


class LinkView:
    """A link of a folded run, to watch: ``bytes``, ``busy_ns``, ``up`` and the rest read
    from its orbit's representative (its queue holds the representative's messages), with
    its own ``src`` and ``dst``. What would change it alone is refused, in one line."""

    _CHANGES = frozenset({"take_down", "bring_up", "set_bandwidth", "put", "offer", "request", "release"})

    def __init__(self, live: Any, src: Any, dst: Any) -> None:
        self._live = live
        self.src = src
        self.dst = dst

    def __getattr__(self, name: str) -> Any:
        if name in LinkView._CHANGES:
            raise ValueError(_REFUSED.format(what=f"link {self.src} -> {self.dst}.{name}() (a fault, a change of "
                                                  f"speed, traffic of its own)"))
        return getattr(self._live, name)

    def __repr__(self) -> str:
        return f"<LinkView {self.src}->{self.dst} of {self._live!r}>"


class _Seen:
    """The last offer to one representative link: when, and from which NPU in the frame
    of that link (the sender moved by the translation that took its hop there).

    Two offers to one link in the same instant queue in the order their events were
    scheduled. Offers of one NPU keep that NPU's order, the same in every orbit member, so
    folding keeps it; offers of two NPUs are ordered by when each NPU's events were
    scheduled, and an unfolded run schedules NPUs in id order, which no translation keeps
    (NPU 7's events precede NPU 0's moved by +1): the FIFO order, and so the figures, may
    differ between orbit members there. A folded run that meets such a tie says so
    (``broken_symmetry``) and is run again unfolded."""

    __slots__ = ("net", "rep", "env", "sub", "ns", "src", "shift")

    def __init__(self, net: FoldedLinkNetwork, rep: tuple[DeviceId, DeviceId]) -> None:
        self.net = net
        self.rep = rep
        self.env = net.env
        self.sub = net.folding.frame.sub
        self.ns: float = -1.0
        self.src = self.shift = 0

    def tie(self, src: int, shift: int) -> None:
        """A second offer in the same instant: note it if it comes from another NPU."""
        self.net.ties += 1
        sub = self.sub
        first, second = sub(self.src, self.shift), sub(src, shift)
        if first != second and self.net.broken_symmetry is None:
            u, v = self.rep
            self.net.broken_symmetry = (
                f"messages of NPUs {first} and {second} reach link {u}->{v} in the same instant "
                f"({self.env.now:.0f} ns): their order there follows NPU ids, which translations do "
                f"not keep")


class _Hop:
    """One hop of a folded route: the representative link, offered what crosses the hop
    (``shift``: the translation from that link to the hop's own)."""

    __slots__ = ("link", "shift", "seen")

    def __init__(self, link: Any, shift: int, seen: _Seen) -> None:
        self.link = link
        self.shift = shift
        self.seen = seen

    def offer(self, item: Any) -> None:
        seen = self.seen
        now = seen.env.now
        src = item.key.ident[1]
        if now == seen.ns:
            seen.tie(src, self.shift)
        seen.ns, seen.src, seen.shift = now, src, self.shift
        self.link.offer(item)


_REFUSED = ("this run is folded by symmetry (one link per orbit): {what} would break the symmetry; "
            "run it with fold_symmetry: false (--fold-symmetry off)")
