"""Injection slots shared by ring, direct and halving-doubling (ASTRA-sim's "packet engine";
unrelated to the packet network backend).

ASTRA-sim's native algorithms inject "packets" into a local queue; every injected packet
comes back after the endpoint delay (plus a reduction delay when it carries data to
reduce) and then frees one send slot. A free slot, a queued packet and a remaining send
together make one message: send to the packet's destination and post the matching
receive from its source. Each receive injects the next packet. The phase ends when every
message was sent and all slots are free again.

Algorithms differ only in who the next peer is and how big the next message is, which a
``PeerPlan`` supplies. With one slot (ring, halving-doubling) the engine is one loop; with
several (direct) each endpoint delay and each receive is a sub-process of the phase.
"""

from __future__ import annotations

import functools
from collections import deque
from itertools import cycle
from typing import Protocol

from simpy_astra.collectives.base import (
    ALL_REDUCE,
    REDUCE_SCATTER,
    AlgorithmRun,
    CollectiveError,
    PhaseContext,
)


class PeerPlan(Protocol):
    receiver: int  # NPU id the next packet goes to
    sender: int  # NPU id the matching receive expects
    msg_bytes: int

    def advance(self) -> None:
        """Move to the peer and size of the packet after this one."""


class ReduceBudget:
    """Which injected packets carry data to reduce (the reference's two alternating budgets:
    ``parallel`` packets without, then ``nz_budget`` with, the second set reducing always
    for reduce-scatter and every other round for all-reduce)."""

    __slots__ = ("parallel", "nz_budget", "zero", "nonzero", "toggle", "always", "on_toggle", "npu_id")

    def __init__(self, kind: str, npu_id: int, parallel: int, nz_budget: int) -> None:
        self.parallel = parallel
        self.nz_budget = nz_budget
        self.zero = self.nonzero = 0
        self.toggle = False
        self.always = kind == REDUCE_SCATTER
        self.on_toggle = kind == ALL_REDUCE
        self.npu_id = npu_id

    def next_reduces(self) -> bool:
        if self.zero == 0 and self.nonzero == 0:
            self.zero = self.parallel
            self.nonzero = self.nz_budget
            self.toggle = not self.toggle
        if self.zero > 0:
            self.zero -= 1
            return False
        if self.nonzero > 0:
            self.nonzero -= 1
            return self.always or (self.on_toggle and self.toggle)
        raise CollectiveError(f"NPU {self.npu_id}: packet engine has nothing to inject")


@functools.cache
def one_slot_reduces(kind: str, nz_budget: int) -> tuple[bool, ...]:
    """:meth:`ReduceBudget.next_reduces` of one slot, one period long (two refills: the
    all-reduce toggle's period), worked out once per kind and budget: a phase cycles through
    it, one C call per packet instead of a Python one (one slot never runs out)."""
    budget = ReduceBudget(kind, -1, 1, nz_budget)
    return tuple(budget.next_reduces() for _ in range(2 * (1 + nz_budget)))


def planned_sends(plan: PeerPlan, total_sends: int) -> list[tuple[int, int]]:
    """(receiver, bytes) of each message a phase sends, in order: the plan's packets one after
    another (whatever the slots, packets are sent in the order they were injected)."""
    out = []
    for _ in range(total_sends):
        out.append((plan.receiver, plan.msg_bytes))
        plan.advance()
    return out


def injection_slots(ctx: PhaseContext, plan: PeerPlan, parallel: int, nz_budget: int,
                  total_sends: int, two_halves: int = 0) -> AlgorithmRun:
    """Run one phase. ``two_halves`` > 0 selects direct all-reduce's rule that the second
    half of the sends waits until ``two_halves`` first-half messages were received."""
    if parallel == 1 and not two_halves:
        return _one_slot(ctx, plan, nz_budget, total_sends)
    return _Slots(ctx, plan, parallel, nz_budget, total_sends, two_halves).run()


def _one_slot(ctx: PhaseContext, plan: PeerPlan, nz_budget: int, total_sends: int) -> AlgorithmRun:
    """One slot: inject, wait for it to come back, send it and wait for the answer, repeat."""
    reduces = cycle(one_slot_reduces(ctx.kind, nz_budget)).__next__
    endpoint, send, recv, advance = ctx.endpoint, ctx.post, ctx.recv, plan.advance
    size, dst, src = plan.msg_bytes, plan.receiver, plan.sender  # the first packet
    advance()
    yield endpoint(size if reduces() else 0)
    for _ in range(total_sends):
        send(dst, size)
        yield recv(src, size)
        # the answer injects the next packet (after the last one too)
        next_size, next_dst, next_src = plan.msg_bytes, plan.receiver, plan.sender
        advance()
        yield endpoint(next_size if reduces() else 0)
        size, dst, src = next_size, next_dst, next_src


class _Slots:
    """Several slots: packets wait in FIFO order for whichever slot comes back first."""

    def __init__(self, ctx: PhaseContext, plan: PeerPlan, parallel: int, nz_budget: int,
                 total_sends: int, two_halves: int) -> None:
        self.ctx = ctx
        self.plan = plan
        self.parallel = parallel
        self.budget = ReduceBudget(ctx.kind, ctx.npu_id, parallel, nz_budget)
        self.remaining = total_sends
        self.two_halves = two_halves
        self.packets: deque[tuple[int, int, int]] = deque()
        self.free = 0
        self.received = 0
        self.done = ctx.signal()

    def run(self) -> AlgorithmRun:
        for _ in range(self.parallel):
            self.inject()
        yield self.done

    def inject(self) -> None:
        plan = self.plan
        size = plan.msg_bytes
        reduce = size if self.budget.next_reduces() else 0
        self.packets.append((plan.receiver, plan.sender, size))
        plan.advance()
        self.ctx.spawn(self.slot_comes_back(self.ctx.endpoint(reduce)))

    def slot_comes_back(self, back) -> AlgorithmRun:
        yield back
        self.free += 1
        if self.two_halves and self.remaining <= self.two_halves:
            if self.received < self.two_halves:
                return  # the second half waits for every first-half message
            for _ in range(self.parallel):
                self.send_next()
        else:
            self.send_next()
        if self.remaining == 0 and self.free == self.parallel:
            self.done.fire()

    def send_next(self) -> None:
        if self.remaining == 0 or self.free == 0 or not self.packets:
            return
        dst, src, size = self.packets.popleft()
        self.ctx.post(dst, size)
        self.ctx.spawn(self.answer(self.ctx.recv(src, size)))
        self.remaining -= 1
        self.free -= 1

    def answer(self, received) -> AlgorithmRun:
        yield received
        self.received += 1
        self.inject()
