"""Bidirectional ring all-reduce: half of the chunk goes clockwise, half anticlockwise.

Each half is a ring all-reduce of S/2 bytes (2(n-1) messages of S/2n, the first n-1
receives reduced), both running at once as two sub-processes, so every link direction
carries traffic. Written against the PhaseContext interface only, as an example of a
researcher's algorithm.
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


def bidirectional_ring(ctx: PhaseContext) -> AlgorithmRun:
    n, i, members = len(ctx.members), ctx.index, ctx.members
    msg = ctx.size_bytes // (2 * n)

    def one_direction(send_to: int, receive_from: int):
        yield ctx.endpoint()
        for step in range(2 * (n - 1)):
            ctx.post(send_to, msg)
            yield ctx.recv(receive_from, msg)
            yield ctx.endpoint(msg if step < n - 1 else 0)  # reduce, then just forward

    clockwise = ctx.spawn(one_direction(members[(i + 1) % n], members[(i - 1) % n]))
    anticlockwise = ctx.spawn(one_direction(members[(i - 1) % n], members[(i + 1) % n]))
    yield clockwise
    yield anticlockwise


def bidirectional_ring_traffic(shape: PhaseShape) -> list[tuple[int, int]]:
    n, i = len(shape.members), shape.index
    msg = shape.size_bytes // (2 * n)
    return [((i + 1) % n, msg), ((i - 1) % n, msg)] * (2 * (n - 1))


BIDIRECTIONAL_RING = CollectiveAlgorithm(
    "bidirectionalRing", bidirectional_ring, ring_final_size, kinds=frozenset({ALL_REDUCE}),
    rotation_symmetric=True, traffic=bidirectional_ring_traffic
)
