"""Collective algorithms written outside simpy-astra, used from a scenario without editing it.

    all-reduce-implementation: ["my_algos:simple_ring"]          # in a system JSON / scenario

(run from this folder, or name the module with its package path).
"""

from simpy_astra.collectives.base import ALL_REDUCE, CollectiveAlgorithm, ring_final_size


def simple_ring(ctx):
    """Ring all-reduce, one message of S/n in flight: n-1 steps that reduce what arrives,
    then n-1 steps that only forward it."""
    n, i = len(ctx.members), ctx.index
    right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
    msg = ctx.size_bytes // n
    for step in range(2 * (n - 1)):
        ctx.send(right, msg)
        yield ctx.recv(left, msg)
        yield ctx.endpoint(reduce_bytes=msg if step < n - 1 else 0)


# a bare generator function works as well; a CollectiveAlgorithm says what it supports
SIMPLE_RING = CollectiveAlgorithm("simple_ring", simple_ring, ring_final_size,
                                  kinds=frozenset({ALL_REDUCE}))
