"""Bidirectional ring all-reduce: half of the chunk goes clockwise, half anticlockwise.

Each half is a ring all-reduce of S/2 bytes (2(n-1) messages of S/2n, the first n-1
receives reduced), both running at once, so every link direction carries traffic. Written
against the PhaseContext interface only, as an example of a researcher's algorithm.
"""

from __future__ import annotations

from collectives.base import ALL_REDUCE, AlgorithmRun, CollectiveAlgorithm, PhaseContext, ring_final_size


def bidirectional_ring(ctx: PhaseContext) -> AlgorithmRun:
    n, i, members = len(ctx.members), ctx.index, ctx.members
    msg = ctx.size_bytes // (2 * n)
    peers = {"cw": (members[(i + 1) % n], members[(i - 1) % n]),  # direction: (send to, receive from)
             "ccw": (members[(i - 1) % n], members[(i + 1) % n])}
    sends_left = {d: 2 * (n - 1) for d in peers}
    received = {d: 0 for d in peers}
    yield  # INIT: both directions start after one endpoint delay
    for d in peers:
        ctx.after_endpoint(0, token=("ready", d))
    running = 2
    while running:
        what, d = yield
        if what == "received":  # reduce during the first n-1 steps, then just forward
            received[d] += 1
            ctx.after_endpoint(msg if received[d] <= n - 1 else 0, token=("ready", d))
        elif sends_left[d]:
            to, frm = peers[d]
            ctx.send(to, msg)
            ctx.recv(frm, msg, token=("received", d))
            sends_left[d] -= 1
        else:
            running -= 1
    ctx.finish()


BIDIRECTIONAL_RING = CollectiveAlgorithm(
    "bidirectionalRing", bidirectional_ring, ring_final_size, kinds=frozenset({ALL_REDUCE}),
    rotation_symmetric=True
)
