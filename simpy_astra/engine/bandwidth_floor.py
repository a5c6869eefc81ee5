"""The bound check: a collective the congestion-unaware backend finished faster than its bytes
can cross the links.

The analytical backend charges every message ``hops * latency + bytes / bandwidth`` on its own,
however many share a link at once (ASTRA-sim's model, whose figures ours equal). When a
collective's messages share links, that can be far below what the links can carry. After a run
this module compares each collective with its *link-bandwidth floor* and, for the worst one,
gives one warning naming the factor and the backend that models contention.

The floor of one collective, a true lower bound for any backend that moves the same messages
over the same links one at a time (``congestion_aware``, ``packet``): its chunks and phases
(:func:`~simpy_astra.engine.system_layer.phase_steps`, as the system layer runs them) each send the
messages their algorithm lists (``CollectiveAlgorithm.traffic``); a message of ``S`` bytes
keeps each link it crosses busy ``trunc(S / B)`` ns. Per network dimension, over every member
of the dimension line the collective runs on:

* the busiest link is at least as busy as the average: ``sum(hops * trunc(S / B)) / links``;
* the members' outgoing links carry every message: ``sum(trunc(S / B)) / their out-links``.

The floor is the largest of these over the dimensions. A ring's direction and a double binary
tree's root alternate between chunks, so each phase counts the smaller of its pattern and the
pattern's mirror image.

On a cluster preset (``rails``) a phase whose members span several dimensions (a strided
data-parallel group, a tensor-parallel group across nodes) has a floor too: the NICs.
With ``n`` members on ``m`` nodes, ``k`` of them on a node, a chunk of ``S`` bytes must leave
that node through the NICs of the rails its members use (a message to another node takes the
destination's rail, :mod:`simpy_astra.network.rails`), at least

* all-reduce: ``2 (m - 1) / m x S`` (every element crosses out and back in),
* reduce-scatter: ``(n - k) / n x S``; all-gather (``S`` each member's piece): ``(n - k) x S``;
  all-to-all: ``k (n - k) / n x S``; broadcast: ``S`` (out of the root's node, into every other),

over ``rails x`` the rail's bandwidth, the floor being the slowest node's (a group uneven over
its nodes, tp 3's data-parallel groups with 3, 3 and 2 members a node, is held to its
thinnest node's NICs) (the slower spine share where the nodes sit under
different leaves). Elsewhere phases that do not lie on one dimension of the network (``one*``
algorithms on a multi-dimensional network), custom collectives, algorithms without ``traffic``
and dimensions whose links differ in bandwidth add nothing: the floor only ever errs low.

Measured time is the collective's span: from the first member's start to the last member's
end (every message of the collective is sent and received in it), so skew between members
never makes it look faster. Cost: one list entry per collective node during the run, one floor
per distinct (kind, size, plan) after it.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from simpy_astra.collectives.base import ALL_GATHER, ALL_REDUCE, ALL_TO_ALL, REDUCE_SCATTER, PhaseShape
from simpy_astra.engine.nccl_names import BROADCAST
from simpy_astra.engine.system_layer import chunking, phase_steps
from simpy_astra.infra.grid import Grid
from simpy_astra.infra.units import network_gbps_to_bytes_per_ns
from simpy_astra.network.backends import CONTENTION_BACKEND, BackendSpec

if TYPE_CHECKING:
    from simpy_astra.config import SystemConfig
    from simpy_astra.engine.system_layer import CollectivePlan
    from simpy_astra.network.rails import Rails
    from simpy_astra.topologies.base import BasicTopology



@dataclass
class _DimLinks:
    """What the floor needs of one network dimension: its links' count, out-links per NPU."""

    bytes_per_ns: float
    links: int
    out_links: Counter


@dataclass
class _Instance:
    """One collective across its members: when it started and ended, and its floor."""

    start_ns: int
    end_ns: int
    floor_ns: int
    kind: str
    size_bytes: int


@dataclass
class FloorCheck:
    """Floors of the collectives of one run (on ``topologies``, with ``config``'s chunking)."""

    topologies: list[BasicTopology]
    config: SystemConfig
    #: a cluster preset's machine (the NIC floor of phases across nodes), else None
    rails: Rails | None = None
    grid: Grid = field(init=False)
    _dims: dict[int, _DimLinks | None] = field(default_factory=dict)
    _floors: dict[tuple, int] = field(default_factory=dict)
    _plan_keys: dict[int, tuple[Any, tuple]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.grid = Grid([t.npus_count for t in self.topologies])

    @classmethod
    def for_run(cls, backend: BackendSpec, jobs: Any, topologies: list[BasicTopology], config: SystemConfig,
                npus: list, rails: Rails | None = None) -> FloorCheck | None:
        """The check of a one-job run on a backend that asks for it (``bound_check``: its
        figures ignore contention), its NPUs set to log their collectives; None for any other run."""
        if not backend.bound_check or jobs is not None:
            return None
        for npu in npus:
            npu.collective_log = []
        return cls(topologies, config, rails)

    def warnings(self, npus: list) -> list[str]:
        """The one warning, as the lines :func:`warning` writes (without their ``warning:``
        prefix), if a collective of ``npus``' logs ran below its link-bandwidth floor, else none."""
        log = [(start, npu.ended_ns[nid], stream, kind, size, plan, involved, npu.npu_id)
               for npu in npus for nid, kind, size, plan, involved, stream, start in npu.collective_log
               if nid in npu.ended_ns]
        worst = self.worst(log)
        return [] if worst is None else warning(self, worst)

    # -- the floor
    def floor_ns(self, kind: str, size_bytes: int, plan: CollectivePlan, involved: tuple[bool, ...]) -> int:
        """The link-bandwidth floor of one collective (0: none derived)."""
        key = (kind, size_bytes, self._plan_key(plan), involved)
        floor = self._floors.get(key)
        if floor is None:
            floor = self._floors[key] = self._floor(kind, size_bytes, plan, involved)
        return floor

    def _plan_key(self, plan: CollectivePlan) -> tuple:
        """A plan by what its floor depends on (its algorithms, its lines as coordinates), so
        that every NPU's copy of the same plan shares one floor."""
        found = self._plan_keys.get(id(plan))
        if found is None or found[0] is not plan:
            lines = tuple(self._line(dim.members) or (self.rails and dim.members) for dim in plan.dims)
            names = tuple((c.algorithm.name, c.window) for c in plan.choices)
            involved = None if plan.involved is None else tuple(plan.involved)
            found = self._plan_keys[id(plan)] = (plan, (names, lines, involved))
        return found[1]

    def _line(self, members: tuple[int, ...]) -> tuple[int, tuple[int, ...]] | None:
        """(dimension, coordinates) when ``members`` differ in one network dimension only."""
        if len(members) < 2:
            return None
        d = self.grid.first_difference(members[0], members[1])
        if d is None:  # a member listed twice: no line
            return None
        first = self.grid.coords(members[0])
        for m in members[1:]:
            c = self.grid.coords(m)
            if any(a != b for i, (a, b) in enumerate(zip(c, first, strict=True)) if i != d):
                return None
        return d, tuple(self.grid.coord(m, d) for m in members)

    def _dim(self, d: int) -> _DimLinks | None:
        if d not in self._dims:
            topo = self.topologies[d]
            links = topo.links()
            if not links or any(topo.link_params(u, v)[0] != topo.bandwidth_gbps for u, v in links):
                self._dims[d] = None
            else:
                self._dims[d] = _DimLinks(network_gbps_to_bytes_per_ns(topo.bandwidth_gbps), len(links),
                                          Counter(u for u, _v in links))
        return self._dims[d]

    def _floor(self, kind: str, size_bytes: int, plan: CollectivePlan, involved: tuple[bool, ...]) -> int:
        chunk, count = chunking(kind, size_bytes, self.config.preferred_dataset_splits, self.grid.size)
        if count == 0 or not plan.choices:
            return 0
        dims_involved = list(plan.involved if plan.involved is not None else involved)
        hop_ns: Counter[int] = Counter()
        sent_ns: Counter[int] = Counter()
        out_links: dict[int, int] = {}
        floor_across = 0  # the phases across nodes, one after the other
        for step in phase_steps(kind, chunk, plan, dims_involved, self.config.collective_optimization):
            choice = plan.choices[step.dim]
            line = self._line(plan.dims[step.dim].members)
            if line is None and self.rails is not None:
                nic_floor = nic_floor_ns(self.rails, step.kind, step.size_bytes, plan.dims[step.dim].members)
                floor_across += nic_floor * count
            if choice.algorithm.traffic is None or line is None:
                continue
            d, coords = line
            links = self._dim(d)
            if links is None:
                continue
            hops, sent = self._phase(choice, step.kind, step.size_bytes, d, coords, links.bytes_per_ns)
            hop_ns[d] += hops * count
            sent_ns[d] += sent * count
            out_links[d] = sum(links.out_links[c] for c in coords)
        floor = floor_across
        for d in hop_ns:
            links = self._dims[d]
            floor = max(floor, hop_ns[d] // links.links, sent_ns[d] // max(out_links[d], 1))
        return floor

    def _phase(self, choice, kind: str, size_bytes: int, d: int, coords: tuple[int, ...],
               bytes_per_ns: float) -> tuple[int, int]:
        """(sum of hops x serialisation, sum of serialisation) in ns of one phase over all members;
        hops counted for the pattern and its mirror image, the smaller kept."""
        topo = self.topologies[d]
        n = len(coords)
        members = tuple(range(n))
        symmetric = (choice.algorithm.rotation_symmetric and coords == members and n == topo.npus_count
                     and topo.delay_symmetry in ("uniform", "rotate"))
        forward = mirror = sent = 0
        for index in (0,) if symmetric else range(n):
            shape = PhaseShape(kind, size_bytes, members, index, window=choice.window)
            for peer, nbytes in choice.algorithm.traffic(shape):
                t = int(nbytes / bytes_per_ns)
                sent += t
                forward += topo.hops(coords[index], coords[peer]) * t
                mirror += topo.hops(coords[n - 1 - index], coords[n - 1 - peer]) * t
        scale = n if symmetric else 1
        return min(forward, mirror) * scale, sent * scale

    # -- the check
    def worst(self, log: list[tuple[int, int, int, str, int, Any, tuple, int]]) -> _Instance | None:
        """The collective furthest below its floor, or None. ``log``: (start ns, end ns, first
        stream id, kind, bytes, plan, involved, NPU) of every collective node simulated."""
        instances: dict[int, _Instance] = {}
        for start, end, stream, kind, size, plan, involved, _npu in log:
            floor = self.floor_ns(kind, size, plan, involved)
            inst = instances.get(stream)
            if inst is None:
                instances[stream] = _Instance(start, end, floor, kind, size)
            else:
                inst.start_ns = min(inst.start_ns, start)
                inst.end_ns = max(inst.end_ns, end)
                inst.floor_ns = min(inst.floor_ns, floor)
        below = [i for i in instances.values() if i.floor_ns > i.end_ns - i.start_ns]
        return max(below, key=lambda i: i.floor_ns / max(i.end_ns - i.start_ns, 1), default=None)

    def network_name(self) -> str:
        return " x ".join(f"{t.name}({t.npus_count})" for t in self.topologies)


def nic_floor_ns(rails: Rails, kind: str, size_bytes: int, members: tuple[int, ...],
                 through_spine: bool = False) -> int:
    """The NIC floor of one phase of ``members`` on a cluster (the module docstring), 0 when
    they share one node. ``through_spine``: the phase's
    every byte crosses its slowest hop, as in NCCL's rings and trees, built over the nodes in
    rank order without regard to leaves; when its nodes sit under several leaves that is the
    spine's share (else a pair under one leaf sets the rate, which errs low)."""
    per_node = rails.gpus_per_node
    on_node: dict[int, set[int]] = {}  # node -> its members' rails
    for x in members:
        on_node.setdefault(x // per_node, set()).add(x % per_node)
    n, m = len(members), len(on_node)
    if m < 2:
        return 0
    first = sorted(on_node)
    if through_spine:  # the ring's hops, the last back to the first node
        rate_gbps = rails.rail_gbps * rails.ring_share(first)
    else:
        rate_gbps = max(rails.rail_gbps_between(first[0], b) for b in first[1:])  # errs low
    worst = 0.0  # the slowest node's bytes out over its NICs (its members' rails)
    for here in on_node.values():
        k = len(here)
        # a broadcast's ring passes the whole buffer on once out of each node but its chain's last
        out_bytes = {ALL_REDUCE: 2 * (m - 1) / m * size_bytes, REDUCE_SCATTER: (n - k) / n * size_bytes,
                     ALL_GATHER: (n - k) * size_bytes, ALL_TO_ALL: k * (n - k) / n * size_bytes,
                     BROADCAST: size_bytes}.get(kind, 0.0)
        worst = max(worst, out_bytes / k)
    return int(worst / network_gbps_to_bytes_per_ns(rate_gbps))


def _size_text(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def _time_text(ns: int) -> str:
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns} ns"


#: the widest a warning line may be, its ``warning: `` prefix included (a terminal's 80 columns)
WARNING_COLUMNS = 80
_PREFIX = len("warning: ")


def warning(check: FloorCheck, worst: _Instance) -> list[str]:
    """The warning's lines (each without its ``warning:`` prefix, each a statement of its own
    within :data:`WARNING_COLUMNS`): the collective and the factor, then the analytical time
    and the backend that models contention. A network name too wide for the first line is
    written without spaces, else on a line of its own; no figure is ever cut."""
    span = worst.end_ns - worst.start_ns
    factor = worst.floor_ns / max(span, 1)
    times = f"{int(factor)}" if factor >= 10 else f"{math.floor(factor * 100) / 100:.2f}".rstrip("0").rstrip(".")
    what = f"{_size_text(worst.size_bytes)} {worst.kind.replace('_', '-')}"
    below = f"{times}x below its link-bandwidth floor"
    backend = f"analytical backend: {_time_text(span)}, no contention; {CONTENTION_BACKEND} models it"
    name = check.network_name()
    for net in (name, name.replace(" x ", "x")):
        first = f"{what} on {net}: {below}"
        if _PREFIX + len(first) <= WARNING_COLUMNS:
            return [first, backend]
    return [f"{what}: {below}", f"network: {name}", backend]
