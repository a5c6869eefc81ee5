"""How the trains of one instant get their rates: each train becomes units for the max-min
solver (the hops before its buffer, the hops from it on, or single hops where a FIFO input
cuts it), weighed as FIFO inputs serve them, and the solved rates are written back to the
train (:meth:`Train.take_solution`). Pure solving lives in
:mod:`~simpy_astra.network.packet.solver`; keeping buffers and timers is the network's.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from simpy_astra.network.packet.port import Port
from simpy_astra.network.packet.solver import (
    MIN_WEIGHT,
    NO_LIMIT,
    NO_SHARE,
    Route,
    Share,
    Unit,
    fifo_arrivals,
    hop_limit,
    max_min,
)
from simpy_astra.network.packet.trains import EMPTY_BYTES, Train


class Solutions:
    """Solved FIFO arrivals and max-min rates, by the set of routes / units they were solved
    for (a multiset: the order trains are found in does not matter).

    Both solutions depend only on that set and the links' speeds, and a collective repeats
    the same few sets step after step and layer after layer (st5's 4x4x4 ring: 45 distinct
    arrival sets in 5,304 solves, 104 max-min sets in 9,285), so each is solved once.
    Identical routes (units) get identical rates, so a solution is kept per route (unit).
    So too the units of a whole train at its source, by its path and arrival rates. The
    network forgets them all when a link's speed changes."""

    #: entries kept per table at most, then all forgotten at once: a bound on memory (a set
    #: of a hundred trains is a few tens of kB), not a policy; st5's 4x4x4 ring keeps 45
    #: arrival sets, 104 max-min sets and 336 whole trains' units
    LIMIT = 1024

    __slots__ = ("arrivals", "shares", "whole", "epoch", "solves", "last_arrivals")

    def __init__(self) -> None:
        #: how many times :func:`train_rates` ran (a train's route is tagged with its solve)
        self.solves = 0
        #: how many times the links' speeds changed: a train's memo of its units
        #: (:func:`train_rates`) holds for the epoch it was made in
        self.epoch = 0
        self.arrivals: dict[frozenset, dict[Route, tuple[float, ...]]] = {}
        self.shares: dict[frozenset, dict[Unit, tuple[float, int]]] = {}
        # a whole train at its source: its units (as :func:`plan_of` gives them) by (path,
        # hops reached, arrival rates)
        self.whole: dict[tuple, tuple] = {}
        #: the last solve's FIFO arrivals: (its solve, how many trains, its solution, epoch)
        self.last_arrivals: tuple[int, int, dict, int] | None = None

    def clear(self) -> None:
        self.epoch += 1
        self.arrivals.clear()
        self.shares.clear()
        self.whole.clear()

    def arrivals_as_last(self, flows: list[Train], routes: list[Route]) -> dict[Route, tuple[float, ...]] | None:
        """The FIFO arrivals of the last solve if this one is on the same set of routes, else
        None: the trains of the last solve (as many, each given its route by it), each on the
        same route object, in the same epoch. Its set's entry in ``arrivals`` is then what a
        look-up would find (no solve has filled the table since), without counting and
        hashing some 200 routes: 91% of the solves of the packet all-to-all are such."""
        last = self.last_arrivals
        if last is None or last[1] != len(flows) or last[3] != self.epoch:
            return None
        before = self.solves - 1
        if last[0] != before:
            return None
        for flow, route in zip(flows, routes, strict=True):
            if flow.route is not route or flow.route_solve != before:
                return None
        return last[2]

    def remember(self, table: dict, key: frozenset, solution: dict) -> None:
        if len(table) >= self.LIMIT:
            table.clear()
        table[key] = solution


def train_rates(flows, seeds: list[Port], solutions: Solutions, fresh: set[Train] | None = None) -> None:
    """Hierarchical max-min rates for the trains' units, by :func:`~.solver.max_min`, handed
    to each train (:meth:`Train.take_solution`): the share of the unit over the hops before
    its buffer (or its whole path), of the unit from the buffer on, and per hop from the
    buffer on where FIFO inputs cut it hop by hop.

    Where a transit input holds two trains, they are weighed as a FIFO input serves them
    (in proportion to the rates they arrive at, from :func:`~.solver.fifo_arrivals`,
    or for a backlog to the rate it came in at), and a buffered train's hops from its
    buffer on are units of their own (``hop_shares``): a FIFO cuts a flow at every
    oversubscribed input it crosses, so the links between carry what it really moves
    there. A hop whose buffer holds none of the train's bytes passes on no more than
    reaches it. Elsewhere every weight is 1 (even splits) and the hops from the buffer
    on are one unit.

    ``fresh``: on a later round of one instant's re-share, the trains changed since the
    round before (the others, no time having passed, keep the routes it gave them)."""
    solutions.solves += 1
    if all(flow.reach_hops - flow.first_hop == 1 for flow in flows):
        one_hop_shares(flows)
        return
    arrivals = arrival_rates(flows, seeds, solutions, fresh)
    if arrivals is None:
        routes = rates_of = (None,) * len(flows)
    else:
        routes, rates_of = arrivals
    units: list[Unit] = []
    plans: list[tuple] = []  # per train, in the trains' order: its plan (:func:`plan_of`)
    whole = solutions.whole
    epoch = solutions.epoch
    for flow, route, rates in zip(flows, routes, rates_of, strict=True):
        if flow.buffer_hop or flow.first_hop or flow.credit_held or flow.left_bytes <= 0:
            # its units depend on its hops, buffer, credits, route (which hops hold a backlog)
            # and arrival rates, and once drained on which of its queues hold bytes too:
            # kept while those stay as they were, and the ones before them (a train's credits
            # hold it and let go round after round: most changes go back to what they were)
            sig = (flow.reach_hops, flow.buffer_hop, flow.credit_held, route, rates, epoch)
            if flow.left_bytes <= 0:
                sig += drained_sig(flow, rates)
            memo = flow.units_memo
            if memo is not None and memo[0] == sig:
                plan = memo[1]
            elif memo is not None and memo[2] == sig:
                plan = memo[3]
                flow.units_memo = (sig, plan, memo[0], memo[1])
            else:
                plan = plan_of(*units_of(flow, rates, route))
                flow.units_memo = (sig, plan) + (memo[:2] if memo is not None else (None, None))
        else:  # (most trains: whole, at their source; their units depend on path and arrivals)
            key = (flow.path, flow.reach_hops, rates)
            plan = whole.get(key)
            if plan is None:
                plan = plan_of(*units_of(flow, rates))
                solutions.remember(whole, key, plan)
        plans.append(plan)
        units.extend(plan[2])
    key = frozenset(Counter(units).items())
    solved = solutions.shares.get(key)
    if solved is None:
        rate, limit = max_min(units, {p: p.capacity_bytes_per_ns for unit in units for p in unit.ports})
        solved = {}
        for unit, r, lim in zip(units, rate, limit, strict=True):
            solved.setdefault(unit, Share(r, lim))
        solutions.remember(solutions.shares, key, solved)
    # (a plan's kinds: 0 the hops before the buffer or the whole path, 1 from it on, 2 one hop of those)
    for flow, (made, cut, _units, single), route in zip(flows, plans, routes, strict=True):
        if single is not None:  # (most trains: one unit over their whole path)
            solved_in = solved[single]
            flow.take_solution(solved_in, solved_in, None, cut)
            continue
        solved_in = NO_SHARE
        solved_out: Share | None = None
        shares = None
        for unit, kind, hop in made:
            if kind == 2:
                if shares is None:
                    shares = [NO_SHARE] * len(flow.ports)
                shares[hop] = solved[unit]
            elif kind:
                solved_out = solved[unit]
            else:
                solved_in = solved[unit]
        if shares is not None:  # a hop where nothing waits passes on no more than the hop before it
            upstream = solved_in.bytes_per_ns if flow.left_bytes > 0 else 0.0
            first = flow.first_hop
            held = route.backlogged  # (per hop from ``first``: whether bytes wait there, :func:`waits`)
            for i in range(max(flow.buffer_hop, first), flow.reach_hops):
                if shares[i].bytes_per_ns > upstream and not held[i - first]:
                    shares[i] = Share(upstream, hop_limit(i))
                upstream = shares[i].bytes_per_ns
            solved_out = shares[flow.reach_hops - 1]
        elif solved_out is None:  # one unit over its whole path
            solved_out = solved_in
        flow.take_solution(solved_in, solved_out, shares, cut)


def drained_sig(flow: Train, rates: tuple[float, ...] | None) -> tuple:
    """What else a drained train's units (:func:`units_of`) depend on: its first hop, the
    rates its backlog came in at, and which hops' queues hold bytes (read where arrival
    ``rates`` weigh it)."""
    if rates is None:
        return flow.first_hop, None, None
    first, h = flow.first_hop, flow.reach_hops
    queue = flow.queue
    return (first, flow.drain_arrivals_bytes_per_ns,
            tuple([queue(i) > EMPTY_BYTES for i in range(max(1, first), h)]))


def plan_of(made: list[tuple[Unit, int, int]], cut: int) -> tuple:
    """A train's units (:func:`units_of`) as :func:`train_rates` reads them: with them, their
    cut hop, the units alone, and the one unit over its whole path if that is all (else None)."""
    single = made[0][0] if len(made) == 1 and not made[0][1] else None
    return made, cut, tuple(unit for unit, _kind, _hop in made), single


def units_of(flow: Train, rates: tuple[float, ...] | None,
             route: Route | None = None) -> tuple[list[tuple[Unit, int, int]], int]:
    """The train's units for :func:`~.solver.max_min`, each with its kind (0: the hops before
    its buffer or the whole path, 1: from the buffer on, 2: one hop from the buffer on) and
    first hop, and the first hop at which FIFO inputs cut its rate (0: none), given its FIFO
    arrival ``rates`` per hop it holds (None: every weight 1) and, with them, its ``route``
    (:func:`route_of`: which hops hold a backlog of it)."""
    fp = flow.ports
    h = flow.reach_hops  # (the hops its head has reached)
    b = flow.buffer_hop
    first = flow.first_hop
    path = flow.path
    caps = path.credit_caps_bytes_per_ns
    drained = flow.left_bytes <= 0
    weights = [1.0] * h
    cut = 0
    if rates is not None:  # the rate on the link before each hop (hop 0: the source's round robin)
        for i in range(max(1, first), h):
            if drained and flow.queue(i) > EMPTY_BYTES:
                weights[i] = max(MIN_WEIGHT, flow.drain_arrivals_bytes_per_ns[i - b])
            elif flow.credit_held:  # held back at its source by credits, not cut on its way:
                weights[i] = max(MIN_WEIGHT, rates[0])  # it arrives as it is injected
            elif i > first:
                weights[i] = max(MIN_WEIGHT, rates[i - 1 - first])
            else:
                weights[i] = MIN_WEIGHT
        if not drained:  # the first hop whose arrival rate is below the source's
            top = rates[0] * (1 - 1e-6)
            for k in range(1, len(rates)):
                if rates[k] < top:
                    cut = k
                    break
    if drained:
        spans = ((first, h, 1),)
    elif not b or flow.credit_held:
        spans = ((0, h, 0),)
    else:
        spans = ((0, b, 0), (b, h, 1))
    made = []
    for a, e, kind in spans:
        if kind and rates is not None:
            for i in range(a, e):
                cap = caps[i]
                arrive = rates[i - 1 - first] if i > first else 0.0
                if arrive < cap and not route.backlogged[i - first]:  # nothing waits here: no more than arrives
                    cap, cap_limit = arrive, hop_limit(i)
                else:
                    cap_limit = hop_limit(i, True)
                made.append((Unit((fp[i],), (path.inputs[i],), (weights[i],), i, cap, cap_limit), 2, i))
            continue
        if path.min_cap_bytes_per_ns != math.inf:
            cap = min(caps[a:e])
            cap_limit = hop_limit(caps.index(cap, a, e), True)
        else:
            cap, cap_limit = math.inf, NO_LIMIT
        made.append((Unit(fp[a:e], path.inputs[a:e], tuple(weights[a:e]), a, cap, cap_limit), kind, a))
    return made, cut


def arrival_rates(flows, seeds: list[Port], solutions: Solutions,
                  fresh: set[Train] | None = None) -> tuple[list[Route], list[tuple[float, ...]]] | None:
    """Each train's route (:func:`route_of`; ``fresh`` as for :func:`train_rates`) and rate
    on each link it still holds as FIFO inputs pass it on (:func:`~.solver.fifo_arrivals`),
    in the trains' order, or None if no transit input holds two trains (then no input has a
    split to weigh, and every weight is 1; so too if no path has more than
    two hops: a transit input then carries trains just injected by one source, which
    round robin gives equal rates, so its split is even as it is; a drained train's
    backlog there is weighed like the others, an approximation that buys st5's 64-NPU
    switch its speed back)."""
    if all(flow.reach_hops <= 2 for flow in flows):
        return None
    seen: set[tuple[Port, Port]] = set()
    shared = False
    for flow in flows:
        fp = flow.ports
        for i in range(max(1, flow.first_hop), flow.reach_hops):
            pair = (fp[i], flow.path.inputs[i])
            if pair in seen:
                shared = True
                break
            seen.add(pair)
        if shared:
            break
    if not shared:
        return None
    order = list(flows)
    solve = solutions.solves
    if fresh is None:
        routes = [route_of(flow) for flow in order]
    else:  # (a train the last solve gave a route, unchanged since: the same route)
        routes = [flow.route if flow.route_solve == solve - 1 and flow not in fresh else route_of(flow)
                  for flow in order]
    solved = solutions.arrivals_as_last(order, routes)
    if solved is not None:  # (most solves) each train keeps its route, so the arrivals it was given
        solutions.last_arrivals = (solve, len(order), solved, solutions.epoch)
        return routes, [flow.keep_arrivals(solve) for flow in order]
    key = frozenset(Counter(routes).items())
    solved = solutions.arrivals.get(key)
    if solved is None:
        # from the last solution: only the links of this instant's changes, and of trains
        # whose route changed since, need computing again (and what that moves)
        changed = set(seeds)
        for flow, route in zip(order, routes, strict=True):
            if flow.arrivals_bytes_per_ns is None or route != flow.route:
                changed.update(route.ports)
        rates = fifo_arrivals(routes, {p: p.capacity_bytes_per_ns for route in routes for p in route.ports},
                              [f.warm_start() for f in order], changed)
        solved = {}
        for route, got in zip(routes, rates, strict=True):
            solved.setdefault(route, tuple(got))
        solutions.remember(solutions.arrivals, key, solved)
    solutions.last_arrivals = (solve, len(order), solved, solutions.epoch)  # (for :meth:`Solutions.arrivals_as_last`)
    result = []
    for flow, route in zip(order, routes, strict=True):
        got = solved[route]
        result.append(got)
        flow.remember_arrivals(route, got, solve)
    return routes, result


#: the floor above which a train's first hop holds a backlog (``EMPTY_BYTES`` above nothing)
EMPTY_FLOOR = EMPTY_BYTES + EMPTY_BYTES


def route_of(flow: Train) -> Route:
    """The train's FIFO route (:func:`~.solver.fifo_arrivals`) over the hops it holds: which
    of them hold a backlog of it (:func:`waits`), and its weight in each (a drained train's
    backlog weighs what it came in at; a hop with none, what arrives). Kept on the train
    while what it is made of stays as it was (most trains, re-share after re-share)."""
    first, b, h = flow.first_hop, flow.buffer_hop, flow.reach_hops
    if not b and not first:  # (most trains: at their source, nothing held anywhere)
        return flow.path.free_routes[h]
    n = h - first
    if not b:  # (every weight what arrives)
        held, weights = (False,) * n, (None,) * n
        return Route(flow.ports[first:h], flow.path.inputs[first:h], held, weights)
    # whether bytes wait at each hop from the buffer on, so that it may pass on more than
    # reaches it: its queue holds more than a packet (its first hop once its source is
    # drained: more than nothing)
    crossed = flow.crossed_bytes
    left = flow.left_bytes
    packet_floor = flow.packet_bytes + EMPTY_BYTES
    # (hops before the buffer hold nothing; its own hop is ``first`` once drained)
    held_list = [False] * (b - first) if b > first else []
    start = b if b > first else first
    upstream = flow.size_bytes - left if start == b else crossed[start - 1]
    for i in range(start, h):
        here = crossed[i]
        held_list.append(upstream - here > (EMPTY_FLOOR if i <= first else packet_floor))
        upstream = here
    held = tuple(held_list)
    drained = left <= 0
    sig = (first, b, h, held, flow.drain_arrivals_bytes_per_ns if drained else None)
    memo = flow.route_memo
    if memo is not None and memo[0] == sig:
        return memo[1]
    if drained:  # a backlog weighs what it came in at; a hop with none, what arrives
        weights = tuple([max(MIN_WEIGHT, flow.drain_arrivals_bytes_per_ns[i - b]) if w
                         else (None if i > first else MIN_WEIGHT)
                         for i, w in zip(range(first, h), held, strict=True)])
    else:
        weights = (None,) * n
    route = Route(flow.ports[first:h], flow.path.inputs[first:h], held, weights)
    flow.route_memo = (sig, route)
    return route


def one_hop_shares(flows) -> None:
    """`train_rates` when every train has one link left (the last hop, no credit loop):
    links do not interact, so each link's inputs share it evenly and each input's part
    goes to its trains in proportion to the rates their backlogs arrived at (FIFO; a
    train still at its source is alone in its injection input's even split)."""
    per_port: dict[Port, dict[Any, list]] = {}  # port -> input -> [count, weight sum]
    for flow in flows:
        i = flow.first_hop
        port = flow.ports[i]
        key = flow.path.inputs[i]
        weight = max(MIN_WEIGHT, flow.drain_arrivals_bytes_per_ns[i - flow.buffer_hop]) if i else 1.0
        counts = per_port.get(port)
        if counts is None:
            per_port[port] = {key: [1, weight]}
        else:
            slot = counts.get(key)
            if slot is None:
                counts[key] = [1, weight]
            else:
                slot[0] += 1
                slot[1] += weight
    for flow in flows:
        i = flow.first_hop
        port = flow.ports[i]
        counts = per_port[port]
        slot = counts[flow.path.inputs[i]]
        weight = max(MIN_WEIGHT, flow.drain_arrivals_bytes_per_ns[i - flow.buffer_hop]) if i else 1.0
        share = Share(port.capacity_bytes_per_ns / len(counts) * weight / slot[1], hop_limit(i))
        flow.take_solution(share, share, None, 0)
