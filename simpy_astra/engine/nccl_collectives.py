"""A cluster preset's all-reduce, reduce-scatter and all-gather timed as NCCL times them
(cluster presets only).

On a cluster preset these are not played message by message: each takes the time NCCL's
tuning model predicts (:mod:`simpy_astra.engine.nccl_tuning`) for its group's shape (GPUs, nodes,
NICs in use) with the preset's NVLink and rail bandwidths, for the algorithm ``nccl_algo``
forces or, by default, the one NCCL chooses, and never less than the group's NIC floor
(:func:`simpy_astra.engine.bandwidth_floor.nic_floor_ns`), counted from the moment its last member
issued it (:class:`NcclRendezvous`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from simpy_astra.collectives.base import ALL_GATHER, ALL_REDUCE, REDUCE_SCATTER
from simpy_astra.engine.bandwidth_floor import nic_floor_ns
from simpy_astra.engine.nccl_tuning import Links, Shape, available, choose, predict_us
from simpy_astra.errors import InputError
from simpy_astra.network.rails import Rails


@dataclass
class NcclAllReduce:
    rails: Rails
    links: Links
    #: ``nccl_algo`` (``NCCL_ALGO``), None: NCCL's choice
    forced: str | None = None
    #: where the cluster was written (``s.yaml: cluster``), for the error of an algorithm NCCL cannot run
    where: str = "cluster"
    _shapes: dict = field(default_factory=dict)
    _durations: dict = field(default_factory=dict)  # (members, bytes, kind) -> ns: a run repeats a few

    def group(self, npu: int, dims: list, involved: list[bool]) -> tuple[int, ...]:
        """The members of an all-reduce that ``npu`` issues on ``dims`` (rings through it)."""
        key = (npu, tuple(d.members for d in dims), tuple(involved))
        members = self._shapes.get(key)
        if members is None:
            members = {npu}
            for d, dim in enumerate(dims):
                if d < len(involved) and not involved[d] or dim.size < 2:
                    continue
                members = {x + (m - npu) for x in members for m in dim.members}
            members = self._shapes[key] = tuple(sorted(members))
        return members

    def shape(self, members: tuple[int, ...]) -> Shape:
        per_node = self.rails.gpus_per_node
        nodes = len({m // per_node for m in members})
        return Shape(len(members), nodes, len({m % per_node for m in members}))

    def algorithm(self, shape: Shape, size_bytes: int) -> str:
        """NCCL's choice, or the forced one where NCCL can run it (``NCCL_ALGO=NVLS`` on a group
        with one GPU a node stops NCCL with 'no algorithm/protocol available': so does this)."""
        if self.forced is None:
            return choose(self.links, shape, size_bytes)
        if not available(self.links, shape, self.forced):
            raise InputError(f"{self.where}.nccl_algo: {self.forced}: NCCL has no {self.forced} for a group of "
                             f"{shape.ranks} GPUs with one on each of {shape.nodes} nodes (NVLS reduces in "
                             f"a node's NVSwitch: it needs several GPUs of a node), and NCCL_ALGO={self.forced.upper()} "
                             f"stops NCCL there; leave nccl_algo out for NCCL's choice, or force ring or tree")
        return self.forced

    def duration_ns(self, members: tuple[int, ...], size_bytes: int, kind: str = ALL_REDUCE) -> int:
        """NCCL's time for ``kind`` on ``members``: an all-reduce by the chosen algorithm; a
        reduce-scatter or all-gather by NCCL's ring, which moves half an all-reduce's bytes in
        half its steps for one call's fixed cost (``size_bytes`` is the whole buffer of a
        reduce-scatter, one rank's share of an all-gather, as the traces give them)."""
        if len(members) < 2:
            return 0
        key = (members, size_bytes, kind)
        known = self._durations.get(key)
        if known is None:
            known = self._durations[key] = self._duration_ns(members, size_bytes, kind)
        return known

    def _duration_ns(self, members: tuple[int, ...], size_bytes: int, kind: str) -> int:
        shape = self.shape(members)
        if kind == ALL_REDUCE:
            time_us, _ = predict_us(self.links, shape, self.algorithm(shape, size_bytes), size_bytes)
        else:
            buffer = size_bytes * len(members) if kind == ALL_GATHER else size_bytes
            ring_us = predict_us(self.links, shape, "ring", buffer)[0]
            time_us = self.links.launch_us + (ring_us - self.links.launch_us) / 2  # one call
        return max(int(time_us * 1000), nic_floor_ns(self.rails, kind, size_bytes, members, through_spine=True))

    def rendezvous(self, simulated) -> NcclRendezvous:
        """One run's timed collectives on this machine, ``simulated`` the NPUs it simulates."""
        return NcclRendezvous(self, simulated)


#: the collectives timed as NCCL times them (all-to-all and broadcast are played as messages)
TIMED = frozenset((ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER))


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
        self._count: dict[tuple[int, tuple[int, ...]], int] = {}
        self._pending: dict[tuple[tuple[int, ...], int], list] = {}
        self._expected: dict[tuple[int, ...], int] = {}
        self._busy_until: dict[tuple[int, ...], int] = {}  # when each group's last collective ends

    def issue(self, npu, dims: list, involved: list[bool], size_bytes: int, node_id: int,
              kind: str = ALL_REDUCE) -> None:
        """NPU ``npu`` issues collective node ``node_id`` (one of :data:`TIMED`);
        ``npu.complete_soon(node_id)`` is called when it is done."""
        members = self.timing.group(npu.npu_id, dims, involved)
        seq = self._count[(npu.npu_id, members)] = self._count.get((npu.npu_id, members), 0) + 1
        expected = self._expected.get(members)
        if expected is None:
            expected = self._expected[members] = sum(1 for m in members if m in self.simulated)
        key = (members, seq)
        arrived = self._pending.setdefault(key, [])
        arrived.append((npu, node_id))
        if len(arrived) < expected:
            return
        del self._pending[key]
        now = npu.clock.env.now
        end = max(now, self._busy_until.get(members, 0)) + self.timing.duration_ns(members, size_bytes, kind)
        self._busy_until[members] = end
        for who, nid in arrived:
            who.clock.register(end - now, who.complete_soon, nid)
