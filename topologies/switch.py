"""Single switch: every NPU has an uplink to and a downlink from one switch (two hops)."""

from __future__ import annotations

from collections.abc import Callable

from simpy_astra.topologies.base import BasicTopology, CostPart


class Switch(BasicTopology):
    name = "Switch"
    delay_symmetry = "uniform"  # see BasicTopology

    @property
    def switch_id(self) -> int:
        return self.npus_count

    def hops(self, src: int, dst: int) -> int:
        return 2

    def links(self) -> list[tuple[int, int]]:
        s = self.switch_id
        out: list[tuple[int, int]] = []
        for i in range(self.npus_count):
            out.append((i, s))
            out.append((s, i))
        return out

    def cost_parts(self) -> list[CostPart]:
        # as ASTRA-sim's analytical cost model: a cable and a NIC per NPU, one switch of radix n
        n, bw = self.npus_count, self.bandwidth_gbps
        return [CostPart("link", bw, n), CostPart("switch", bw, 1, n), CostPart("nic", bw, n)]

    def route(self, src: int, dst: int) -> list[int]:
        return [src, self.switch_id, dst]

    def link_action(self, move: Callable[[int], int]) -> dict[int, int]:
        """Every permutation of the NPUs, the switch staying (see BasicTopology)."""
        return {**{k: move(k) for k in range(self.npus_count)}, self.switch_id: self.switch_id}
