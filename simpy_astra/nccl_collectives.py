"""A cluster preset's all-reduce timed as NCCL times it (cluster presets only).

On a cluster preset an all-reduce is not played message by message: it takes the time NCCL's
tuning model predicts (:mod:`simpy_astra.nccl_tuning`) for its group's shape (GPUs, nodes,
NICs in use) with the preset's NVLink and rail bandwidths, for the algorithm ``nccl_algo``
forces or, by default, the one NCCL chooses, and never less than the group's NIC floor
(:func:`simpy_astra.bandwidth_floor.nic_floor_ns`). Each member counts the time from its own
issue, as the members of a Megatron group issue together.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from simpy_astra.nccl_tuning import Links, Shape, choose, predict_us
from simpy_astra.network.rails import Rails


@dataclass
class NcclAllReduce:
    rails: Rails
    links: Links
    #: ``nccl_algo`` (``NCCL_ALGO``), None: NCCL's choice
    forced: str | None = None
    _shapes: dict = field(default_factory=dict)

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
        return self.forced or choose(self.links, shape, size_bytes)

    def duration_ns(self, members: tuple[int, ...], size_bytes: int) -> int:
        from simpy_astra.bandwidth_floor import nic_floor_ns
        from simpy_astra.collectives.base import ALL_REDUCE

        if len(members) < 2:
            return 0
        shape = self.shape(members)
        time_us, _ = predict_us(self.links, shape, self.algorithm(shape, size_bytes), size_bytes)
        return max(int(time_us * 1000), nic_floor_ns(self.rails, ALL_REDUCE, size_bytes, members))
