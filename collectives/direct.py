"""Direct: every member talks to every other member, ``window`` messages in flight.

Peers rotate through the ring: the k-th packet goes k positions ahead and its receive is
expected from k positions behind. All-reduce is a reduce-scatter half followed by an
all-gather half that starts only when all first-half messages arrived. ``directK``
limits the window to K; ``oneDirect`` runs it over one ring of all NPUs.
"""

from __future__ import annotations

from simpy_astra.collectives.base import (
    ALL_REDUCE,
    AlgorithmRun,
    CollectiveAlgorithm,
    PhaseContext,
    PhaseShape,
    ring_final_size,
)
from simpy_astra.collectives.injection import injection_slots, planned_sends
from simpy_astra.collectives.ring import message_bytes


class RotatingPlan:
    """Peers advance one ring position per packet, skipping this NPU itself."""

    __slots__ = ("receiver", "sender", "msg_bytes", "_members", "_n", "_step", "_self", "_r", "_s")

    def __init__(self, ctx: PhaseContext, msg_bytes: int) -> None:
        self._members = ctx.members
        self._n = len(ctx.members)
        self._step = ctx.direction
        self._self = ctx.index
        self._r = (ctx.index + ctx.direction) % self._n
        self._s = (ctx.index - ctx.direction) % self._n
        self.receiver = self._members[self._r]
        self.sender = self._members[self._s]
        self.msg_bytes = msg_bytes

    def advance(self) -> None:
        n, step = self._n, self._step
        r = (self._r + step) % n
        if r == self._self:
            r = (r + step) % n
        s = (self._s - step) % n
        if s == self._self:
            s = (s - step) % n
        self._r, self._s = r, s
        self.receiver = self._members[r]
        self.sender = self._members[s]


def direct(ctx: PhaseContext) -> AlgorithmRun:
    n = len(ctx.members)
    parallel = n - 1 if ctx.window is None else min(ctx.window, n - 1)
    nz_budget = (n - 1) * parallel if ctx.local else parallel
    sends = 2 * (n - 1) if ctx.kind == ALL_REDUCE else n - 1
    plan = RotatingPlan(ctx, message_bytes(ctx.kind, ctx.size_bytes, n))
    return injection_slots(
        ctx,
        plan,
        parallel=parallel,
        nz_budget=nz_budget,
        total_sends=sends,
        two_halves=n - 1 if ctx.kind == ALL_REDUCE else 0,
    )


def direct_traffic(shape: PhaseShape) -> list[tuple[int, int]]:
    n = len(shape.members)
    plan = RotatingPlan(shape, message_bytes(shape.kind, shape.size_bytes, n))
    return planned_sends(plan, 2 * (n - 1) if shape.kind == ALL_REDUCE else n - 1)


DIRECT = CollectiveAlgorithm("direct", direct, ring_final_size, rotation_symmetric=True, traffic=direct_traffic)
