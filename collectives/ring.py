"""Ring: every message goes to the next ring member and comes from the previous one.

All-reduce sends 2(n-1) messages of S/n (reduce-scatter then all-gather around the ring),
reduce-scatter and all-gather n-1, all-to-all n(n-1)/2 neighbour hops. Also used for
``oneRing`` (one ring over all NPUs) and for communicator-group rings.
"""

from __future__ import annotations

from simpy_astra.collectives.base import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    AlgorithmRun,
    CollectiveAlgorithm,
    PhaseContext,
    PhaseShape,
    ring_final_size,
)
from simpy_astra.collectives.injection import injection_slots, planned_sends


class NeighbourPlan:
    """Fixed peers: the next member receives, the previous one sends."""

    __slots__ = ("receiver", "sender", "msg_bytes")

    def __init__(self, ctx: PhaseContext, msg_bytes: int) -> None:
        n = len(ctx.members)
        self.receiver = ctx.members[(ctx.index + ctx.direction) % n]
        self.sender = ctx.members[(ctx.index - ctx.direction) % n]
        self.msg_bytes = msg_bytes

    def advance(self) -> None:
        pass


def message_bytes(kind: str, size: int, n: int) -> int:
    """Ring-family message size: the whole chunk for all-gather, a 1/n slice otherwise."""
    return size if kind == ALL_GATHER else size // n


def ring_sends(kind: str, n: int) -> int:
    """Messages one member sends in a ring phase of ``kind`` on ``n`` members."""
    if kind == ALL_REDUCE:
        return 2 * (n - 1)
    if kind == ALL_TO_ALL:
        return n * (n - 1) // 2
    return n - 1


def ring(ctx: PhaseContext) -> AlgorithmRun:
    n = len(ctx.members)
    plan = NeighbourPlan(ctx, message_bytes(ctx.kind, ctx.size_bytes, n))
    return injection_slots(ctx, plan, parallel=1, nz_budget=n - 1, total_sends=ring_sends(ctx.kind, n))


def ring_traffic(shape: PhaseShape) -> list[tuple[int, int]]:
    n = len(shape.members)
    return planned_sends(NeighbourPlan(shape, message_bytes(shape.kind, shape.size_bytes, n)), ring_sends(shape.kind, n))


RING = CollectiveAlgorithm("ring", ring, ring_final_size, rotation_symmetric=True, traffic=ring_traffic)
