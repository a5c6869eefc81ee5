"""Halving-doubling (recursive halving / doubling) for power-of-two groups.

Reduce-scatter exchanges halves with peers 1, 2, 4, ... positions away while the message
halves; all-gather runs the reverse (peers n/2, n/4, ... with doubling messages);
all-reduce is the first followed by the second. Members at an even multiple of the
current distance look clockwise, the others anticlockwise. All-to-all is not supported
(the reference rejects it too).
"""

from __future__ import annotations

import math

from simpy_astra.collectives.base import (
    ALL_GATHER,
    ALL_REDUCE,
    REDUCE_SCATTER,
    AlgorithmRun,
    CollectiveAlgorithm,
    PhaseContext,
    PhaseShape,
    ring_final_size,
)
from simpy_astra.collectives.injection import injection_slots, planned_sends


class ExchangePlan:
    """Peer at distance ``offset``; offset and size scale by ``mult`` after each packet."""

    __slots__ = ("receiver", "sender", "msg_bytes", "_ctx", "_n", "_offset", "_mult", "_ar")

    def __init__(self, ctx: PhaseContext) -> None:
        self._ctx = ctx
        self._n = len(ctx.members)
        self._ar = ctx.kind == ALL_REDUCE
        if ctx.kind == ALL_GATHER:
            self.msg_bytes = ctx.size_bytes
            self._offset = self._n // 2
            self._mult = 0.5
        else:
            self.msg_bytes = ctx.size_bytes // 2
            self._offset = 1
            self._mult = 2.0
        self._locate()

    def _locate(self) -> None:
        offset = self._offset
        index = self._ctx.index
        step = 1 if offset == 0 or (index // offset) % 2 == 0 else -1
        peer = self._ctx.members[(index + step * offset) % self._n]
        self.receiver = peer
        self.sender = peer

    def advance(self) -> None:
        # integer offset and byte count are truncated after each scaling, as in the reference
        self._offset = int(self._offset * self._mult)
        self.msg_bytes = int(self.msg_bytes / self._mult)
        if self._offset == self._n and self._ar:
            self._mult = 0.5
            self._offset = int(self._offset * self._mult)
            self.msg_bytes = int(self.msg_bytes / self._mult)
        self._locate()


def _sends(kind: str, n: int) -> int:
    steps = math.log2(n)
    return int(2 * steps) if kind == ALL_REDUCE else int(steps)


def halving_doubling(ctx: PhaseContext) -> AlgorithmRun:
    steps = math.log2(len(ctx.members))
    return injection_slots(
        ctx, ExchangePlan(ctx), parallel=1, nz_budget=int(steps - 1), total_sends=_sends(ctx.kind, len(ctx.members))
    )


def halving_doubling_traffic(shape: PhaseShape) -> list[tuple[int, int]]:
    return planned_sends(ExchangePlan(shape), _sends(shape.kind, len(shape.members)))


HALVING_DOUBLING = CollectiveAlgorithm(
    "halvingDoubling",
    halving_doubling,
    ring_final_size,
    kinds=frozenset({ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER}),
    # with offsets 1, 2, 4, ... the peer index +- offset is index XOR offset
    xor_symmetric=True,
    traffic=halving_doubling_traffic,
)
