"""Single switch: every NPU has an uplink to and a downlink from one switch (two hops)."""

from __future__ import annotations

from topologies.base import BasicTopology


class Switch(BasicTopology):
    name = "Switch"

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

    def route(self, src: int, dst: int) -> list[int]:
        return [src, self.switch_id, dst]
