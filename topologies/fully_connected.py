"""Fully connected: a dedicated link between every ordered pair of NPUs (one hop)."""

from __future__ import annotations

from collections.abc import Callable

from simpy_astra.topologies.base import BasicTopology, CostPart


class FullyConnected(BasicTopology):
    name = "FullyConnected"
    delay_symmetry = "uniform"  # see BasicTopology

    def hops(self, src: int, dst: int) -> int:
        return 1

    def links(self) -> list[tuple[int, int]]:
        n = self.npus_count
        return [(i, j) for i in range(n) for j in range(n) if i != j]

    def cost_parts(self) -> list[CostPart]:
        n = self.npus_count
        return [CostPart("link", self.bandwidth_gbps, n * (n - 1) // 2)]

    def route(self, src: int, dst: int) -> list[int]:
        return [src, dst]

    def link_action(self, move: Callable[[int], int]) -> dict[int, int]:
        """Every permutation of the NPUs (see BasicTopology)."""
        return {k: move(k) for k in range(self.npus_count)}
