"""The packet engine shared by ring, direct and halving-doubling algorithms.

ASTRA-sim's native algorithms inject "packets" into a local queue; every injected packet
comes back after the endpoint delay (plus a reduction delay when it carries data to
reduce) as a GENERAL event that frees one send slot. A send slot, a queued packet and a
remaining send together allow one message: send to the packet's destination and post the
matching receive from its source. Each receive injects the next packet. The phase ends
when every message was sent and all slots are free again.

Algorithms differ only in who the next peer is and how big the next message is, which a
``PeerPlan`` supplies.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

from collectives.base import (
    ALL_REDUCE,
    RECEIVED,
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


def packet_engine(
    ctx: PhaseContext,
    plan: PeerPlan,
    parallel: int,
    nz_budget: int,
    total_sends: int,
    two_halves: int = 0,
) -> AlgorithmRun:
    """Run one phase. ``two_halves`` > 0 selects direct all-reduce's rule that the second
    half of the sends waits until ``two_halves`` first-half messages were received."""
    packets: deque[tuple[int, int, int]] = deque()
    free = 0
    zero_budget = 0
    nonzero_budget = 0
    toggle = False
    remaining = total_sends
    received = 0
    reduces_always = ctx.kind == REDUCE_SCATTER
    reduces_on_toggle = ctx.kind == ALL_REDUCE
    send = ctx.send
    recv = ctx.recv
    after_endpoint = ctx.after_endpoint

    def insert() -> None:
        nonlocal zero_budget, nonzero_budget, toggle
        if zero_budget == 0 and nonzero_budget == 0:
            zero_budget = parallel
            nonzero_budget = nz_budget
            toggle = not toggle
        if zero_budget > 0:
            processed = False
            zero_budget -= 1
        elif nonzero_budget > 0:
            processed = reduces_always or (reduces_on_toggle and toggle)
            nonzero_budget -= 1
        else:
            raise CollectiveError(f"NPU {ctx.npu_id}: packet engine has nothing to inject")
        size = plan.msg_bytes
        packets.append((plan.receiver, plan.sender, size))
        after_endpoint(size if processed else 0)
        plan.advance()

    def ready() -> None:
        nonlocal remaining, free
        if remaining == 0 or free == 0 or not packets:
            return
        dst, src, size = packets.popleft()
        send(dst, size)
        recv(src, size)
        remaining -= 1
        free -= 1

    yield  # INIT
    for _ in range(parallel):
        insert()
    while True:
        event = yield
        if event is RECEIVED:
            received += 1
            insert()
            continue
        free += 1  # GENERAL
        if two_halves and remaining <= two_halves:
            if received < two_halves:
                continue
            for _ in range(parallel):
                ready()
        else:
            ready()
        if remaining == 0 and free == parallel:
            ctx.finish()
            return
