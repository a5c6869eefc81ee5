"""The packet backend's rate solver: pure functions over small records, so that the sharing
rule can be read and tested apart from the trains and the SimPy processes that use it.

The rule is that of an output port with a FIFO per input: the port serves its inputs (the
links that feed it, and the device's own injection) round robin, and a transit input, being
one FIFO, serves its flows in proportion to how fast they arrive -- not evenly. A flow
that reaches an input already cut upstream (a long flow) gets less of it than one that
arrives at its injection share (a short one). The injection input interleaves its flows
evenly (a NIC's round robin over its messages).

Two steps: :func:`fifo_arrivals` estimates each flow's rate on every link of its path as
FIFO inputs with unbounded buffers pass it on (each hop's rate is what the upstream link
delivers, cut in proportion where an input is oversubscribed), to a fixed point over the
whole component (routes may form a cycle, as on a ring); :func:`max_min` then gives the
trains' units (a span of hops moving at one rate) hierarchical max-min rates in which an
input's part goes to its units in proportion to those arrival rates (their weights).

Every rate and capacity here is in bytes per ns; weights are relative (rates too, in bytes
per ns, where they are arrival rates).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import NamedTuple

#: relative tolerance under which a port counts as saturated / two fair shares as equal
TOLERANCE = 1e-9

#: sweeps of :func:`fifo_arrivals` at most, the relative change that ends them earlier, and
#: the significant digits its rates are rounded to (weights need few, and flows placed alike
#: then weigh exactly alike, so that their events fall on the same instants)
ARRIVAL_SWEEPS = 60
ARRIVAL_SETTLED = 1e-9
ARRIVAL_DIGITS = 6

#: the weight below which an arrival counts as none (a weight of 0 would take no share at all)
MIN_WEIGHT = 1e-12



class _RouteFields(NamedTuple):
    ports: tuple[Hashable, ...]
    inputs: tuple[Hashable, ...]
    backlogged: tuple[bool, ...]
    weights: tuple[float | None, ...]
    fields_hash: int


class Route(_RouteFields):
    """What :func:`fifo_arrivals` needs of a train: the links it still crosses, the input each
    is entered from (``None`` for the source's injection), which of those inputs hold a
    backlog of it (they take what they are offered, even beyond what arrives), and its
    weight in each input (``None``: the rate it arrives at; a backlog's weight is the rate
    it came in at, since a FIFO holds a flow's bytes in that proportion). A route that does
    not start at its source starts at a backlog, whose weight must be given.

    Its hash is that of its four fields, computed once (``fields_hash``): a route is kept
    on its train and hashed at every solve it takes part in (the key of the solved set and
    the look-up of its rates), where hashing its nested tuples anew cost about a tenth of
    the packet all-to-all's time. Equality is still the tuples' (the extra field is a
    function of the others), so the same routes match as before."""

    __slots__ = ()

    def __new__(cls, ports: tuple[Hashable, ...], inputs: tuple[Hashable, ...],
                backlogged: tuple[bool, ...], weights: tuple[float | None, ...]) -> Route:
        return tuple.__new__(cls, (ports, inputs, backlogged, weights, hash((ports, inputs, backlogged, weights))))

    def __hash__(self) -> int:
        return self[4]


class Limit(NamedTuple):
    """What froze a rate: the path hop of the port whose share it got (or whose arrivals
    capped it: a hop where nothing waits passes on no more than reaches it), or whose credit
    loop capped it (``credit``)."""

    hop: int
    credit: bool = False


class Share(NamedTuple):
    """A solved rate and what froze it."""

    bytes_per_ns: float
    limit: Limit


#: the limits of hops 0..63 by their share and by their credit loop (made once: the solver
#: hands out millions)
HOP_LIMITS = tuple(Limit(hop) for hop in range(64))
CREDIT_LIMITS = tuple(Limit(hop, True) for hop in range(64))


def hop_limit(hop: int, credit: bool = False) -> Limit:
    """``Limit(hop, credit)``, shared for the usual hops."""
    if hop < 64:
        return CREDIT_LIMITS[hop] if credit else HOP_LIMITS[hop]
    return Limit(hop, credit)


#: the limit of a rate not solved yet, and the share of a train not solved yet
NO_LIMIT = Limit(0)
NO_SHARE = Share(0.0, NO_LIMIT)


class _UnitFields(NamedTuple):
    ports: tuple[Hashable, ...]
    inputs: tuple[Hashable, ...]
    weights: tuple[float, ...]
    first_hop: int
    cap_bytes_per_ns: float
    cap_limit: Limit
    fields_hash: int


class Unit(_UnitFields):
    """A span of hops moving at one rate: its links, the input each is entered from, the
    unit's weight within each of those inputs, the path hop of its first link, and the
    tightest cap on its rate over the span (a credit loop's, or what arrives) with the limit
    it sets.

    Its hash is that of its six fields, computed once (``fields_hash``), as a
    :class:`Route`'s: a train's units are kept in its plan and hashed at every solve."""

    __slots__ = ()

    def __new__(cls, ports: tuple[Hashable, ...], inputs: tuple[Hashable, ...], weights: tuple[float, ...],
                first_hop: int, cap_bytes_per_ns: float, cap_limit: Limit) -> Unit:
        fields = (ports, inputs, weights, first_hop, cap_bytes_per_ns, cap_limit)
        return tuple.__new__(cls, (*fields, hash(fields)))

    def __hash__(self) -> int:
        return self[6]


def _water_fill(capacity: float, demands: list[float]) -> list[float]:
    """Max-min shares of ``capacity`` for ``demands`` (``inf``: takes all it is given)."""
    shares = [0.0] * len(demands)
    order = sorted(range(len(demands)), key=demands.__getitem__)
    left, n = capacity, len(demands)
    for k, i in enumerate(order):
        give = min(demands[i], left / (n - k))
        shares[i] = give
        left -= give
    return shares


def fifo_arrivals(routes: Sequence[Route], capacity: Mapping[Hashable, float],
                  start: Sequence[Sequence[float] | None] | None = None,
                  changed: Collection[Hashable] | None = None) -> list[list[float]]:
    """Each route's rate on each of its links when every port serves its inputs round robin
    (max-min over the inputs' demands), each transit input is a FIFO (an oversubscribed one
    cuts its flows' rates in the same proportion; a backlogged one serves its share in
    proportion to the weights), sources inject without limit and buffers are unbounded.

    Solved by sweeps to a fixed point: a hop's rate depends on the hop before it, and on a
    cycle of routes (a ring) on itself. A sweep uses the rates it has just computed (Gauss-
    Seidel: a chain of hops settles in few sweeps); it settles far below the rounding of the
    result, so routes placed alike get alike rates whatever their order; ``start`` (per
    route, or None) is where the sweeps begin,
    e.g. the last solution, which is usually close. If it is that solution, ``changed`` may
    name the ports whose members or capacity changed since (every route without a start
    must cross one): the first sweep computes only those, and later ones what they changed."""
    # port -> [(input, [(route, hop)], [fixed weight or None], [backlogged])]; injection: input None
    grouped: dict[Hashable, dict[Hashable, list[tuple[int, int]]]] = {}
    for r, route in enumerate(routes):
        k = 0
        for port, key in zip(route.ports, route.inputs, strict=True):
            by_input = grouped.get(port)
            if by_input is None:
                grouped[port] = {key: [(r, k)]}
            else:
                members = by_input.get(key)
                if members is None:
                    by_input[key] = [(r, k)]
                else:
                    members.append((r, k))
            k += 1
    slots: dict[Hashable, list] = {}  # port -> [(input, members, fixed weights, backlogged)], as needed
    rates = [list(first) if first is not None and len(first) == len(route.ports)
             else [capacity[p] for p in route.ports]
             for route, first in zip(routes, start or [None] * len(routes), strict=True)]
    dirty = set(grouped) if changed is None else set(changed)  # ports whose arrivals changed
    touched = {r for r, first in enumerate(start or [None] * len(routes)) if first is None}
    order = list(grouped)  # (a fixed order: the same result whatever the set's)
    for _sweep in range(ARRIVAL_SWEEPS):
        moved = 0.0
        later: set[Hashable] = set()
        for port in order:
            if port not in dirty:
                continue
            inputs = slots.get(port)
            if inputs is None:
                inputs = slots[port] = [
                    (key, members, [routes[r].weights[k] for r, k in members],
                     [routes[r].backlogged[k] for r, k in members]) for key, members in grouped[port].items()]
            demands: list[float] = []
            arrivals: list[list[float]] = []
            for key, members, fixed, held in inputs:
                got = []
                for (r, k), weight in zip(members, fixed, strict=True):
                    if weight is None:
                        weight = rates[r][k - 1] if k else math.inf  # at k 0: the source always has bytes
                    got.append(max(weight, MIN_WEIGHT))
                arrivals.append(got)
                demands.append(math.inf if key is None or any(held) else sum(got))
            shares = _water_fill(capacity[port], demands)
            for (key, members, _fixed, held), got, share in zip(inputs, arrivals, shares, strict=True):
                if key is None:  # the source's round robin over its flows
                    new = [share / len(members)] * len(members)
                else:
                    total = sum(got)
                    scale = share / total if total > 0 else 0.0
                    if scale <= 1.0 or all(held):
                        new = [a * scale for a in got]
                    elif not any(held):
                        new = got
                    else:  # what a flow without a backlog leaves at is what arrives; the backlogs get the rest
                        passing = sum(a for a, h in zip(got, held, strict=True) if not h)
                        scale = (share - passing) / (total - passing)
                        new = [a * scale if h else a for a, h in zip(got, held, strict=True)]
                for (r, k), value in zip(members, new, strict=True):
                    old = rates[r][k]
                    if old != value:
                        moved = max(moved, abs(old - value) / max(old, value))
                        rates[r][k] = value  # (Gauss-Seidel: later ports this sweep see it)
                        touched.add(r)
                        ports = routes[r].ports
                        if k + 1 < len(ports):
                            later.add(ports[k + 1])
        # every hop computed from the last sweep's rates, then all set at once (Jacobi)
        dirty = later
        if moved <= ARRIVAL_SETTLED or not dirty:
            break
    for r in touched:  # (the others kept their start, rounded already)
        rates[r] = [_rounded(v) for v in rates[r]]
    return rates


#: ``value -> float(f"{value:.{ARRIVAL_DIGITS}g}")``: the same few rates come out of every
#: solve (a component's flows are placed alike), and formatting one costs ten look-ups
_ROUNDED: dict[float, float] = {}


def _rounded(value: float) -> float:
    """``value`` to :data:`ARRIVAL_DIGITS` significant digits (remembered: a bound on memory,
    all forgotten at 4,096 values)."""
    if not value:  # (0.0 and -0.0 are one key, and round to themselves)
        return value
    got = _ROUNDED.get(value)
    if got is None:
        if len(_ROUNDED) >= 4096:
            _ROUNDED.clear()
        got = _ROUNDED[value] = float(f"{value:.{ARRIVAL_DIGITS}g}")
    return got


def _weight_of(member: tuple[int, int, float]) -> float:
    return member[2]


def max_min(units: Sequence[Unit], capacity: Mapping[Hashable, float]) -> tuple[list[float], list[Limit]]:
    """Hierarchical max-min rates (bytes per ns) for ``units`` and the limit that set each.

    Progressive filling: every port offers each of its inputs an equal part of what the
    inputs whose units are all frozen left, and each input's part is split among its
    unfrozen units in proportion to their weights (a FIFO input); the smallest offer (or
    cap) freezes the units it was made to, at that rate, with the hop that made it; offers
    are recomputed where those units pass. A unit freezing below its offer only raises the
    others' offers, so each freeze is final -- but units that freeze at one level because
    of each other's parts (a cycle of ports) may leave every one of those ports with spare
    capacity: :func:`_fill_idle` then raises them until a port they cross is saturated."""
    # port -> input -> [unfrozen weight, frozen rate sum, [(unit, hop, weight)], unfrozen count,
    #                   the weight every member has (None if they differ)]
    inputs: dict[Hashable, dict[Hashable, list]] = {}
    # per unit, the slot of each of its hops with its port and weight (looked up once, here:
    # freezing a unit updates them all)
    along: list[list[tuple[Hashable, list, float]]] = []
    for u, unit in enumerate(units):
        hop = unit.first_hop
        mine = []
        for port, key, weight in zip(unit.ports, unit.inputs, unit.weights, strict=True):
            by_input = inputs.get(port)
            if by_input is None:
                by_input = inputs[port] = {}
            slot = by_input.get(key)
            if slot is None:
                slot = by_input[key] = [weight, 0.0, [(u, hop, weight)], 1, weight]
            else:
                slot[0] += weight
                slot[2].append((u, hop, weight))
                slot[3] += 1
                if slot[4] != weight:
                    slot[4] = None
            mine.append((port, slot, weight))
            hop += 1
        along.append(mine)
    slots_of = {p: list(by_input.values()) for p, by_input in inputs.items()}  # (a list: read at every offer)
    state = {p: [capacity[p], len(by_input)] for p, by_input in inputs.items()}  # spare, open inputs
    rate: list[float | None] = [None] * len(units)
    limit = [NO_LIMIT] * len(units)

    # an input of differing weights: its members by weight, and how many of the lightest
    # are frozen at least (its lightest unfrozen weight, found from there: exact, as a min)
    by_weight: dict[int, list] = {}

    def lightest(slot: list) -> float:
        got = by_weight.get(id(slot))
        if got is None:
            got = by_weight[id(slot)] = [sorted(slot[2], key=_weight_of), 0]
        members, k = got
        while rate[members[k][0]] is not None:
            k += 1
        got[1] = k
        return members[k][2]

    def offer(port: Hashable) -> float:
        spare, n_open = state[port]
        share = spare / n_open
        best = math.inf
        for slot in slots_of[port]:
            if slot[3]:
                if slot[4] is not None:
                    value = (share - slot[1]) / slot[3]
                else:
                    value = (share - slot[1]) / slot[0] * lightest(slot)
                if value < best:  # (as min(): the first of equal values)
                    best = value
        return best

    offers = {port: offer(port) for port in inputs}
    # the capped units by cap (stably: ties in index order) and how many of the lowest are
    # frozen at least: the lowest cap of an unfrozen one is found from there (exact, as a min)
    capped = sorted((u for u, unit in enumerate(units) if unit.cap_bytes_per_ns != math.inf),
                    key=lambda u: units[u].cap_bytes_per_ns)
    caps = [units[u].cap_bytes_per_ns for u in capped]
    low = 0
    waiting = len(units)
    while waiting:
        level = min(offers.values()) if offers else math.inf
        while low < len(capped) and rate[capped[low]] is not None:
            low += 1
        if low < len(capped):
            level = min(level, caps[low])
        level = max(level, 0.0)
        top = level * (1 + TOLERANCE) + 1e-15
        hits: dict[int, Limit] = {}
        for port, value in offers.items():
            if value <= top:
                spare, n_open = state[port]
                share = spare / n_open
                for slot in slots_of[port]:
                    if not slot[3]:
                        continue
                    # what one unit of weight is offered (an even split if all weigh the same:
                    # then every member is offered the same, so one test serves them all)
                    common = slot[4]
                    if common is not None:
                        each = (share - slot[1]) / slot[3] / common
                        if each * common > top:
                            continue
                        for u, hop, _weight in slot[2]:
                            if rate[u] is None and (u not in hits or hop < hits[u].hop):
                                hits[u] = hop_limit(hop)
                        continue
                    each = (share - slot[1]) / slot[0]
                    for u, hop, weight in slot[2]:
                        if rate[u] is None and each * weight <= top and (u not in hits or hop < hits[u].hop):
                            hits[u] = hop_limit(hop)
        # the unfrozen capped units at the level, in index order (as the freezing sums go)
        at_cap = []
        k = low
        while k < len(capped) and caps[k] <= top:
            u = capped[k]
            if rate[u] is None and u not in hits:
                at_cap.append(u)
            k += 1
        if at_cap:
            at_cap.sort()
            for u in at_cap:
                hits[u] = units[u].cap_limit
        dirty: dict[Hashable, None] = {}
        for u, lim in hits.items():
            rate[u] = level
            limit[u] = lim
            waiting -= 1
            for port, slot, weight in along[u]:
                slot[1] += level
                slot[3] -= 1
                if slot[3]:
                    slot[0] -= weight
                    if slot[4] is None and slot[0] <= weight * 1e-6:  # rounding: sum again
                        slot[0] = sum(w for v, _h, w in slot[2] if rate[v] is None)
                else:
                    slot[0] = 0.0
                    st = state[port]
                    st[0] -= slot[1]
                    st[1] -= 1
                dirty[port] = None
        for port in dirty:
            if state[port][1]:
                offers[port] = offer(port)
            else:
                offers.pop(port, None)
    _fill_idle(units, capacity, rate, limit, {port: st[0] for port, st in state.items()})  # type: ignore[arg-type]
    return rate, limit  # type: ignore[return-value]


def _fill_idle(units: Sequence[Unit], capacity: Mapping[Hashable, float], rate: list[float],
               limit: list[Limit], spare: dict[Hashable, float]) -> None:
    """Work conservation: raise every unit that an input's part froze at a port left with
    spare capacity, together, until a port it crosses is saturated or its credit cap binds.

    An input's part is an equal share of the port only while the other inputs use theirs;
    when units of several ports freeze at one level, each because of another's part (a ring
    where every link has one injected and several transit flows: each transit input's part
    freezes flows whose injection part at the next port then goes unused), every port is
    left idle in part although no port limits them. Raising them in equal steps fills that
    spare capacity (``spare``, per port, is updated)."""
    idle = {port for port, left in spare.items() if left > TOLERANCE * capacity[port]}
    if not idle:
        return
    rising = []
    for u, lim in enumerate(limit):
        if not lim.credit:
            unit = units[u]
            if unit.ports[lim.hop - unit.first_hop] in idle:
                rising.append(u)
    while rising:
        crossing: dict[Hashable, int] = {}
        for u in rising:
            for port in units[u].ports:
                crossing[port] = crossing.get(port, 0) + 1
        step = min(spare[port] / n for port, n in crossing.items())
        step = max(0.0, min(step, min(units[u].cap_bytes_per_ns - rate[u] for u in rising)))
        for port, n in crossing.items():
            spare[port] -= step * n
        still = []
        for u in rising:
            rate[u] += step
            unit = units[u]
            full = None
            k = 0
            for port in unit.ports:
                if spare[port] <= TOLERANCE * capacity[port]:
                    full = k
                    break
                k += 1
            if full is not None:
                limit[u] = hop_limit(unit.first_hop + full)
            elif unit.cap_bytes_per_ns <= rate[u] * (1 + TOLERANCE):
                limit[u] = unit.cap_limit
            else:
                still.append(u)
        rising = still
