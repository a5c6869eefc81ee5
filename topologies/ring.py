"""Bidirectional ring: NPU i links to i+1 and i-1 (mod n); messages take the shorter way."""

from __future__ import annotations

from collections.abc import Callable

from simpy_astra.topologies.base import BasicTopology, CostPart


class Ring(BasicTopology):
    name = "Ring"
    delay_symmetry = "rotate"  # see BasicTopology

    def hops(self, src: int, dst: int) -> int:
        cw = (dst - src) % self.npus_count
        ccw = self.npus_count - cw
        return cw if cw < ccw else ccw

    def links(self) -> list[tuple[int, int]]:
        n = self.npus_count
        out: list[tuple[int, int]] = []
        for i in range(n):
            j = (i + 1) % n
            out.append((i, j))
            out.append((j, i))
        return list(dict.fromkeys(out))

    def cost_parts(self) -> list[CostPart]:
        # n cables (one between each neighbour pair; a ring of 2 has a single cable)
        return [CostPart("link", self.bandwidth_gbps, self.npus_count if self.npus_count > 2 else 1)]

    def route(self, src: int, dst: int) -> list[int]:
        # clockwise unless anticlockwise is strictly shorter (ties go clockwise)
        n = self.npus_count
        cw = (dst - src) % n
        step = 1 if cw <= n - cw else -1
        path = [src]
        while path[-1] != dst:
            path.append((path[-1] + step) % n)
        return path

    def link_action(self, move: Callable[[int], int]) -> dict[int, int] | None:
        """The rotations only (see BasicTopology)."""
        n = self.npus_count
        npus = {k: move(k) for k in range(n)}
        c = npus[0] % n
        return npus if all(npus[k] == (k + c) % n for k in range(n)) else None
