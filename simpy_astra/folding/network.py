"""Congestion-unaware network for a folded run: only orbit representatives exist.

A message from ``src`` to a non-representative ``dst = rep + h`` is, by the symmetry, the
message ``rep`` receives from ``src - h`` in the same run moved by ``h``; so it is posted to
``rep`` from ``src - h``, with a communicator-group tag moved back by ``h`` too (group ids
differ between frames, stream counters do not). Its delay is the real pair's delay, which
the symmetry guarantees equals the moved pair's. Receives are always posted by a
representative in its own frame and need no mapping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simpy_astra.folding.frames import Folding
from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork
from simpy_astra.network.messages import Handler
from simpy_astra.tags import group_of_stream_tag, moved_group_tag

if TYPE_CHECKING:
    import networkx as nx


class FoldedNetwork:
    """The unaware network of a folded run, as its representatives see it."""

    name = "congestion_unaware"
    pair_delays_only = True

    def __init__(self, inner: CongestionUnawareNetwork, folding: Folding) -> None:
        self.inner = inner
        self.env = inner.env
        self.board = inner.board
        self.folding = folding
        self._rep_of = folding.rep_of
        self._shift_of = folding.shift_of
        self._moved: dict[tuple[int, int], int] = {}  # (npu, h) -> npu - h
        self._tags: dict[tuple[int, int], int] = {}  # (group tag block, h) -> tag offset
        self._sub = folding.frame.sub

    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        delay = self.inner.delay_ns(src, dst, size)  # the real pair's (cached) delay
        h = self._shift_of[dst]
        if h:
            key = (src, h)
            moved = self._moved.get(key)
            if moved is None:
                moved = self._moved[key] = self._sub(src, h)
            src = moved
            dst = self._rep_of[dst]
            gid = group_of_stream_tag(tag)
            if gid is not None:
                tag += self._tag_offset(tag, gid, h)
        board = self.board
        board.arrive_after(delay, board.post_send(src, dst, tag, size, fn, arg))

    def _tag_offset(self, tag: int, gid: int, h: int) -> int:
        """How much a group stream's tag changes in the representative's frame."""
        key = (gid, h)
        offset = self._tags.get(key)
        if offset is None:
            image = self.folding.group_map.get(key)
            # no entry: not a group's stream (a default-communicator id past 1e6) -> unchanged
            offset = self._tags[key] = 0 if image is None else moved_group_tag(tag, gid, image) - tag
        return offset

    def recv(self, dst: int, src: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        self.board.post_recv(dst, src, tag, size, fn, arg)

    @property
    def graph(self) -> nx.DiGraph:
        """The whole network's graph (every NPU, not only the representatives)."""
        return self.inner.graph

    def link_stats(self) -> None:
        return None
