"""Logical dimensions: the rings (and trees) of NPUs a collective phase runs on.

The system layer builds one :class:`LogicalDim` per dimension a collective uses (the network's
dimension lines, one ring over all NPUs, or a communicator group's members) and knows nothing
else of an algorithm's shape: an algorithm that needs more than the ring order (a tree, say)
names a ``logical`` hook on its :class:`~simpy_astra.collectives.base.CollectiveAlgorithm`,
which builds its arguments from the dimension once per phase and may keep what it builds in
``dim.shapes``. Double binary trees are such a shape (:func:`alternating_trees`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.infra.grid import Grid

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



@dataclass
class LogicalDim:
    """One logical dimension as seen from one NPU: its ring of members, in ring order."""

    members: tuple[int, ...]
    index: int
    #: a communicator-group subset (ASTRA-sim's "Local" rings)
    local: bool = False
    #: what algorithms' ``logical`` hooks built on this dimension, by their own keys
    shapes: dict[Any, Any] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.members)


def dimension_ring(npu: int, dims: list[int], d: int) -> LogicalDim:
    """Members of network dimension ``d`` that share all other coordinates with ``npu``: one
    tuple shared by every NPU of the line (a tuple per NPU held n copies of an n-NPU line,
    hundreds of GB at 262,144 GPUs; and what is derived from a line is then worked out once)."""
    grid = Grid(dims)
    return LogicalDim(_line(grid.dims, d, grid.moved(npu, d, 0)), grid.coord(npu, d))


@lru_cache(maxsize=1 << 12)
def _line(dims: tuple[int, ...], d: int, first: int) -> tuple[int, ...]:
    """The NPUs of dimension ``d``'s line whose first NPU is ``first``, in coordinate order."""
    return Grid(dims).line(first, d)[0]


@lru_cache(maxsize=16)
def every_npu(total_npus: int) -> tuple[int, ...]:
    """NPUs 0..n-1 as one tuple shared by every NPU's ring over all of them."""
    return tuple(range(total_npus))


def alternating_trees(dim: LogicalDim) -> tuple[TreeNode]:
    """This NPU's place (as NPU ids) in the next double binary tree of ``dim``: RootMax and
    RootMin alternate per phase built, as in the reference."""
    counter = dim.shapes.get("tree counter", 0)
    dim.shapes["tree counter"] = counter + 1
    flavour = ROOT_MAX if counter % 2 == 0 else ROOT_MIN
    tree = dim.shapes.get(("tree", flavour))
    if tree is None:
        n = dim.size
        if n & (n - 1):
            raise InputError(f"doubleBinaryTree needs a power-of-two number of NPUs per dimension (got {n})")
        tree = dim.shapes[("tree", flavour)] = build_tree(n, flavour)
    node = tree[dim.index]
    m = dim.members
    return (TreeNode(node.role, None if node.parent is None else m[node.parent],
                     None if node.left is None else m[node.left],
                     None if node.right is None else m[node.right]),)
