"""Line (one dimension of a mesh): NPU i links to i-1 and i+1, no wrap-around.

Stacked per dimension ([Line, Line] in a network YAML) it forms a 2D mesh, whose routing
crosses dimension 0 first (XY routing): corner NPUs have 2 links, edge NPUs 3, inner 4.
Not an ASTRA-sim building block; ASTRA-sim's files never name it.
"""

from __future__ import annotations

from simpy_astra.topologies.base import BasicTopology, CostPart


class Line(BasicTopology):
    name = "Line"

    def hops(self, src: int, dst: int) -> int:
        return abs(dst - src)

    def links(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for i in range(self.npus_count - 1):
            out.append((i, i + 1))
            out.append((i + 1, i))
        return out

    def cost_parts(self) -> list[CostPart]:
        return [CostPart("link", self.bandwidth_gbps, self.npus_count - 1)]

    def route(self, src: int, dst: int) -> list[int]:
        step = 1 if dst > src else -1
        return list(range(src, dst + step, step))
