"""Double binary tree all-reduce: reduce up a binary tree, broadcast back down.

Two trees alternate between chunks: "RootMax" (the root is the member with the largest
position) and "RootMin" (the smallest). Each tree is a complete binary tree, numbered in
order, hanging below a root with one child. Messages always carry the whole chunk.
Configured for reduce-scatter or all-gather it still performs a full all-reduce and keeps
the size, as the reference does.
"""

from __future__ import annotations

from dataclasses import dataclass

from simpy_astra.collectives.base import AlgorithmRun, CollectiveAlgorithm, PhaseContext

LEAF, INTERMEDIATE, ROOT = "leaf", "intermediate", "root"
ROOT_MAX, ROOT_MIN = 0, 1


@dataclass(frozen=True)
class TreeNode:
    role: str
    parent: int | None
    left: int | None
    right: int | None


def build_tree(n: int, flavour: int) -> dict[int, TreeNode]:
    """Positions 0..n-1 (n a power of two) -> their role and neighbours in one tree."""
    levels = n.bit_length() - 1  # levels of the complete subtree below the root
    nodes: dict[int, TreeNode] = {}
    base = 0 if flavour == ROOT_MAX else 1

    def subtree(lo: int, depth: int, parent: int) -> int:
        mid = lo + (1 << (depth - 1)) - 1
        if depth == 1:
            nodes[mid] = TreeNode(LEAF, parent, None, None)
            return mid
        left = subtree(lo, depth - 1, mid)
        right = subtree(mid + 1, depth - 1, mid)
        nodes[mid] = TreeNode(INTERMEDIATE, parent, left, right)
        return mid

    root = n - 1 if flavour == ROOT_MAX else 0
    child = subtree(base, levels, root)
    if flavour == ROOT_MAX:
        nodes[root] = TreeNode(ROOT, None, child, None)
    else:
        nodes[root] = TreeNode(ROOT, None, None, child)
    return nodes


def double_binary_tree(ctx: PhaseContext, node: TreeNode) -> AlgorithmRun:
    """One chunk on one tree; ``node`` is this NPU's place in it (ids, not positions)."""
    size = ctx.size_bytes
    if node.role == LEAF:
        yield ctx.endpoint()
        ctx.send(node.parent, size)
        yield ctx.recv(node.parent, size)
        yield ctx.endpoint()
        return
    if node.role == ROOT:
        only_child = node.left if node.left is not None else node.right
        yield ctx.recv(only_child, size)
        yield ctx.endpoint(size)
        ctx.send(only_child, size)
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
    ctx.send(node.parent, size)
    yield ctx.recv(node.parent, size)
    yield ctx.endpoint(size)
    ctx.send(node.left, size)
    ctx.send(node.right, size)


def _same_size(kind: str, size: int, n: int) -> int:
    return size


DOUBLE_BINARY_TREE = CollectiveAlgorithm(
    "doubleBinaryTree", double_binary_tree, _same_size, topology="tree"
)
