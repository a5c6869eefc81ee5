"""A cluster preset's all-reduce, reduce-scatter, all-gather and broadcast timed as NCCL times
them (cluster presets only).

On a cluster preset these are not played message by message: each takes the time NCCL's
tuning model predicts (:mod:`simpy_astra.engine.nccl_tuning`) for its group's shape (GPUs, nodes,
NICs in use) with the preset's NVLink and rail bandwidths, for the algorithm ``nccl_algo``
forces (as ``NCCL_ALGO``: for every collective; one that has no such algorithm stops the run,
as NCCL 2.24 on stops) or, by default, the one NCCL chooses for that collective, and never less
than the group's NIC floor
(:func:`simpy_astra.engine.bandwidth_floor.nic_floor_ns`), counted from the moment its last member
issued it (:class:`NcclRendezvous`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import ClassVar

from simpy_astra.collectives.base import ALL_GATHER, ALL_REDUCE, REDUCE_SCATTER
from simpy_astra.engine.bandwidth_floor import nic_floor_ns
from simpy_astra.engine.nccl_names import BROADCAST, NO_FORCED_ALGORITHM
from simpy_astra.engine.nccl_tuning import NVLS_MAX_ARITY, Links, Shape, available, choose, predict_us
from simpy_astra.errors import InputError, InvalidConfigurationError, with_article
from simpy_astra.network.rails import Rails


def _grid_block(npu: int, rings: list) -> tuple | None:
    """What names the NPUs ``rings`` reach from ``npu`` when each is a line of the network's
    grid (not a communicator group's ring: its members an increasing arithmetic run, as
    ``Grid.line`` gives them): the block's lowest NPU and each line's step and length, the
    same for every NPU of the block. None for a ring of another shape."""
    lowest, lines = npu, []
    for ring in rings:
        m = ring.members
        step = m[1] - m[0]
        if ring.local or step <= 0 or m[-1] != m[0] + step * (len(m) - 1):
            return None
        lowest += m[0] - npu
        lines.append((step, len(m)))
    return lowest, tuple(lines)


#: the collectives whose system algorithms never run: NCCL's model times them
REPLACED = frozenset((ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER))
#: the collectives timed as NCCL times them: those, and the broadcast, which no system algorithm
#: runs (a trace's broadcast is replayed where NCCL's model does not time it, as in ASTRA-sim);
#: all-to-alls are played as messages
TIMED = REPLACED | {BROADCAST}


@dataclass
class NcclAllReduce:
    """A cluster preset's collective timer (:class:`~simpy_astra.engine.collective_timer.CollectiveTimer`)."""

    #: the collectives it times: the system's algorithms for them never run
    replaces_algorithms: ClassVar[frozenset[str]] = REPLACED
    rails: Rails
    links: Links
    #: ``nccl_algo`` (``NCCL_ALGO``), None: NCCL's choice
    forced: str | None = None
    #: where the cluster was written (``s.yaml: cluster``), for the error of an algorithm NCCL cannot run
    where: str = "cluster"
    _shapes: dict = field(default_factory=dict)  # a group's key (_grid_block, or the NPU and its rings) -> members
    _groups: dict = field(default_factory=dict)  # members -> the one tuple of them every member shares
    _durations: dict = field(default_factory=dict)  # (members, bytes, kind) -> ns: a run repeats a few

    def group(self, npu: int, dims: list, involved: list[bool]) -> tuple[int, ...]:
        """The members of an all-reduce that ``npu`` issues on ``dims`` (rings through it):
        every NPU its rings reach, one ring after another. One tuple per group, shared by its
        members: an all-reduce over all of 16,384 GPUs built one for each GPU (a GiB each
        thousand) and spent the square of the count building them."""
        used = [dim for d, dim in enumerate(dims) if not (d < len(involved) and not involved[d]) and dim.size >= 2]
        key = _grid_block(npu, used)
        if key is None:  # rings of other shapes (a communicator group's): worked out for each NPU
            key = (npu, tuple(dim.members for dim in used))
        members = self._shapes.get(key)
        if members is None:
            reached = {npu}
            for dim in used:
                reached = {x + (m - npu) for x in reached for m in dim.members}
            members = tuple(sorted(reached))
            members = self._shapes[key] = self._groups.setdefault(members, members)
        return members

    def shape(self, members: tuple[int, ...]) -> Shape:
        nodes = len({m // self.rails.gpus_per_node for m in members})
        return Shape(len(members), nodes, self.rails.nics_in_use(members))

    def algorithm(self, shape: Shape, size_bytes: int, kind: str = ALL_REDUCE, name: str = "") -> str:
        """NCCL's choice for ``kind``, or the forced one where NCCL can run it: where it cannot
        (``NCCL_ALGO=TREE`` at an all-gather or a broadcast, ``NVLS`` on a group with one GPU a
        node) NCCL stops with 'no algorithm/protocol available' (2.24 on: no fall back to the
        ring), and so does this, naming the field and the trace's node ``name`` (where given)."""
        if self.forced is None:
            return choose(self.links, shape, size_bytes, kind)
        if not available(self.links, shape, self.forced, kind):
            # the real job stops at this collective: a result of the design space (a sweep's
            # row is invalid, naming NCCL's rule), not a failure of the simulator
            node = f" (node '{name}', over a group of {shape.ranks} GPUs)" if name else ""
            raise InvalidConfigurationError(
                f"{self.where}.nccl_algo: {self.forced}: {_why_not(self.forced, kind, shape)}{node}, and "
                f"NCCL_ALGO={self.forced.upper()} stops NCCL there (2.24 on); leave nccl_algo out for NCCL's "
                f"choice{_instead(self.forced, kind)}", NO_FORCED_ALGORITHM)
        return self.forced

    def duration_ns(self, members: tuple[int, ...], size_bytes: int, kind: str = ALL_REDUCE, name: str = "") -> int:
        """NCCL's time for ``kind`` on ``members`` by the algorithm chosen for it
        (``size_bytes`` is the whole buffer of an all-reduce, a reduce-scatter or a broadcast,
        one rank's share of an all-gather, as the traces give them; ``name``: the trace's node,
        for the error of a forced algorithm NCCL cannot run)."""
        if len(members) < 2:
            return 0
        key = (members, size_bytes, kind)
        known = self._durations.get(key)
        if known is None:
            known = self._durations[key] = self._duration_ns(members, size_bytes, kind, name)
        return known

    def _duration_ns(self, members: tuple[int, ...], size_bytes: int, kind: str, name: str = "") -> int:
        shape = self.shape(members)
        # nodes under several leaves: NCCL's rings and trees, built over the nodes in rank
        # order, cross the spine, at the rail's rate / oversubscription (docs/megatron.md)
        spine = self.rails.ring_share(sorted({m // self.rails.gpus_per_node for m in members}))
        buffer = size_bytes * len(members) if kind == ALL_GATHER else size_bytes  # NCCL's nBytes
        time_us, _ = predict_us(self.links, shape, self.algorithm(shape, buffer, kind, name), buffer, spine, kind)
        return max(int(time_us * 1000), nic_floor_ns(self.rails, kind, size_bytes, members, through_spine=True))

    def rendezvous(self, simulated) -> NcclRendezvous:
        """One run's timed collectives on this machine, ``simulated`` the NPUs it simulates."""
        return NcclRendezvous(self, simulated)


def _why_not(algo: str, kind: str, shape: Shape) -> str:
    """Why NCCL has no ``algo`` for ``kind`` on ``shape`` (:func:`nccl_tuning.available`)."""
    what = kind.replace("_", "-")
    if kind == BROADCAST:
        return "NCCL runs broadcasts by its ring alone (tuning.cc), and this job issues a broadcast"
    if algo == "tree":
        return f"NCCL's tree runs all-reduces only, and this job issues {with_article(what)}"
    if algo == "pat" and kind == ALL_REDUCE:
        return "NCCL's PAT runs reduce-scatters and all-gathers only, and this job issues an all-reduce"
    if algo == "pat":
        return (f"NCCL's PAT runs on one GPU a node (tuning.cc: PAT only supports 1 GPU per node), and this {what} "
                f"has {shape.per_node} on each of its {shape.nodes} node{'s' if shape.nodes > 1 else ''}")
    if algo == "nvls" and shape.per_node > 1 and shape.nodes > 1:
        return (f"NCCL's NVLS {what} runs in one node (across nodes it needs CollNet), and this one spans "
                f"{shape.nodes} nodes")
    if algo == "nvls" and shape.per_node > 1:
        return f"NCCL's NVLS {what} runs on at most {NVLS_MAX_ARITY} GPUs, and this one has {shape.ranks}"
    return (f"NCCL has no nvls for a group of {shape.ranks} GPUs with one on each of {shape.nodes} nodes (NVLS "
            f"reduces in a node's NVSwitch: it needs several GPUs of a node)")


def _instead(algo: str, kind: str) -> str:
    """The forced algorithms that would run ``kind`` where ``algo`` cannot."""
    return ", or force ring" if kind != ALL_REDUCE else ", or force ring or tree"


class NcclRendezvous:
    """One run's all-reduces on a cluster preset: each completes NCCL's time after its last
    simulated member has issued it (an early member waits for the others, as NCCL's kernel
    does) and after the group's previous one (a communicator's collectives run one after
    another on its stream, so concurrent ones on a group queue rather than each taking the
    links whole). In a folded run a member that is not simulated behaves as its
    representative, so only the simulated members are waited for."""

    TIMED = TIMED

    def __init__(self, timing: NcclAllReduce, simulated) -> None:
        self.timing = timing
        self.simulated = frozenset(simulated)
        # keyed by a group's members tuple's id (one tuple a group: NcclAllReduce.group)
        self._count: dict[tuple[int, int], int] = {}  # (NPU, group) -> its calls on the group so far
        self._pending: dict[tuple[int, int], list] = {}  # (group, call) -> its members that called it
        self._expected: dict[int, int] = {}  # group -> its simulated members
        self._busy_until: dict[int, int] = {}  # when each group's last collective ends
        # (NPU, its dims list's id, involved) -> (that dims list, the group's members): the
        # members worked out once per plan, not at each of a trace's tens of thousands of calls
        self._members: dict[tuple, tuple] = {}

    def issue(self, npu, dims: list, involved: list[bool], size_bytes: int, node_id: int,
              kind: str = ALL_REDUCE, name: str = "") -> None:
        """NPU ``npu`` issues collective node ``node_id`` (one of :data:`TIMED`; ``name``, the
        node's, for errors); ``npu.complete_soon(node_id)`` is called when it is done."""
        system = npu.system  # watched (sim.on): its collective_start now, its collective_end at the end
        watched = system.probe_collective_start is not None or system.probe_collective_end is not None
        done = system.announced(kind, size_bytes, partial(npu.complete_soon, node_id)) if watched else None
        if size_bytes == 0:  # NCCL discards an empty collective (enqueue.cc's taskAppend): no launch, no wait
            npu.clock.register(0, *((_call, done) if done else (npu.complete_soon, node_id)))
            return
        known = self._members.get(plan_key := (npu.npu_id, id(dims), tuple(involved)))
        if known is not None and known[0] is dims:  # the id of this very list, not a freed one's
            members = known[1]
        else:
            members = self.timing.group(npu.npu_id, dims, involved)
            self._members[plan_key] = (dims, members)
        group = id(members)  # one tuple a group, kept for the run (NcclAllReduce._groups): hashing
        # a 16,384-member tuple at each of its members' calls costs the square of the count
        seq = self._count[(npu.npu_id, group)] = self._count.get((npu.npu_id, group), 0) + 1
        expected = self._expected.get(group)
        if expected is None:
            expected = self._expected[group] = sum(1 for m in members if m in self.simulated)
        key = (group, seq)
        arrived = self._pending.setdefault(key, [])
        arrived.append((npu, node_id, done, size_bytes))
        if len(arrived) < expected:
            return
        del self._pending[key]
        _same_count(arrived, kind, members)
        now = npu.clock.env.now
        end = max(now, self._busy_until.get(group, 0)) + self.timing.duration_ns(members, size_bytes, kind, name)
        self._busy_until[group] = end
        for who, nid, announced, _ in arrived:
            if announced is None:
                who.clock.register(end - now, who.complete_soon, nid)
            else:
                who.clock.register(end - now, _call, announced)


def _same_count(arrived: list, kind: str, members: tuple[int, ...]) -> None:
    """Refuse a collective whose members give it other sizes (NCCL's ranks must agree on the
    count: a real job hangs or reads past a buffer), naming two of them; the timing took the
    last one's size in silence."""
    first = arrived[0]
    other = next((a for a in arrived if a[3] != first[3]), None)
    if other is not None:
        shown = f"{list(members[:8])}{' ...' if len(members) > 8 else ''}"
        raise InputError(f"{other[0].source}: node {other[1]}: this {kind.replace('_', '-')} moves {other[3]:,} "
                         f"bytes (comm_size) on NPU {other[0].npu_id}, but {first[3]:,} on NPU {first[0].npu_id} "
                         f"(node {first[1]} of {first[0].source}), over the group {shown}; NCCL's ranks must give "
                         f"a collective one count (a real job hangs or reads past a buffer): give its nodes one "
                         f"comm_size")


def _call(done: Callable[[], None]) -> None:
    """A watched collective's completion: ``collective_end``, then the NPU's node."""
    done()
