"""Double binary tree all-reduce: reduce up a binary tree, broadcast back down.

Two trees alternate between chunks: "RootMax" (the root is the member with the largest
position) and "RootMin" (the smallest). Each tree is a complete binary tree, numbered in
order, hanging below a root with one child. Messages always carry the whole chunk.
Configured for reduce-scatter or all-gather it still performs a full all-reduce and keeps
the size, as the reference does.
"""

from __future__ import annotations

from simpy_astra.collectives.base import AlgorithmRun, CollectiveAlgorithm, PhaseContext, PhaseShape
from simpy_astra.collectives.logical import LEAF, ROOT, ROOT_MAX, TreeNode, alternating_trees, build_tree


def double_binary_tree(ctx: PhaseContext, node: TreeNode) -> AlgorithmRun:
    """One chunk on one tree; ``node`` is this NPU's place in it (ids, not positions)."""
    size = ctx.size_bytes
    if node.role == LEAF:
        yield ctx.endpoint()
        ctx.post(node.parent, size)
        yield ctx.recv(node.parent, size)
        yield ctx.endpoint()
        return
    if node.role == ROOT:
        only_child = node.left if node.left is not None else node.right
        yield ctx.recv(only_child, size)
        yield ctx.endpoint(size)
        ctx.post(only_child, size)
        return
    # intermediate: each child's data is reduced as soon as it is here (in arrival order);
    # when both are reduced, up to the parent, then the result down to both children
    def reduce_when_received(received):
        yield received
        yield ctx.endpoint(size)

    left = ctx.spawn(reduce_when_received(ctx.recv(node.left, size)))
    right = ctx.spawn(reduce_when_received(ctx.recv(node.right, size)))
    yield left
    yield right
    ctx.post(node.parent, size)
    yield ctx.recv(node.parent, size)
    yield ctx.endpoint(size)
    ctx.post(node.left, size)
    ctx.post(node.right, size)


def _same_size(kind: str, size: int, n: int) -> int:
    return size


def double_binary_tree_traffic(shape: PhaseShape) -> list[tuple[int, int]]:
    """The RootMax tree's messages (RootMin's tree is its mirror image); the whole chunk each."""
    n, size = len(shape.members), shape.size_bytes
    if n & (n - 1):
        return []
    node = build_tree(n, ROOT_MAX)[shape.index]
    peers = [node.parent] if node.role == LEAF else [node.left if node.left is not None else node.right] \
        if node.role == ROOT else [node.parent, node.left, node.right]
    return [(p, size) for p in peers]


DOUBLE_BINARY_TREE = CollectiveAlgorithm(
    "doubleBinaryTree", double_binary_tree, _same_size, logical=alternating_trees, traffic=double_binary_tree_traffic,
    group_subsets=False,  # the reference crashes on a communicator-group subset
)
