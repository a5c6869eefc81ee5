"""Communicator groups' keys worked out once per group (``simpy_astra/folding/group_keys.py``)
against the definition they replace: a member's view written out member by member.

Two members' keys must be equal exactly when their written-out views are, in every frame and
every order; the symmetric and asymmetric cases below are derived by hand, the random ones
compared with the written-out views.
"""

from __future__ import annotations

import random

import pytest

from simpy_astra.folding import IdShifts, XorIds
from simpy_astra.folding.group_keys import GroupKeys, least_rotation, smallest_period
from simpy_astra.infra.grid import Grid


def written_out(members: tuple[int, ...], rank: int, frame, order: str | None) -> tuple | None:
    """The view of the group from ``rank`` as folding defined it before group keys: member
    offsets, in ring order from the rank ("rotate"), relabelled by XOR with its position
    ("xor"), or as listed."""
    if len(members) == frame.size:
        return ("all",)
    if rank not in members:
        return None
    i = members.index(rank)
    if order == "rotate":
        members = members[i:] + members[:i]
    elif order == "xor":
        if len(members) & (len(members) - 1):
            return None
        members = tuple(members[k ^ i] for k in range(len(members)))
    return tuple(frame.sub(m, rank) for m in members)


def classes_agree(groups: dict[int, tuple[int, ...]], frame, order: str | None) -> None:
    """Every (group, member) pair: equal keys exactly when equal written-out views."""
    keys = GroupKeys(frame, order)
    by_view: dict = {}
    by_key: dict = {}
    for gid, members in groups.items():
        for rank in [*members, frame.size - 1]:
            view, key = written_out(members, rank, frame, order), keys.key(gid, members, rank)
            assert (view is None) == (key is None), (gid, rank, view, key)
            if view is None:
                continue
            assert by_view.setdefault(view, key) == key, (gid, rank)  # equal views, equal keys
            assert by_key.setdefault(key, view) == view, (gid, rank)  # equal keys, equal views


FRAMES = [Grid([4, 2, 2]), IdShifts(16), XorIds(16)]


@pytest.mark.parametrize("frame", FRAMES, ids=["grid", "ids", "xor"])
@pytest.mark.parametrize("order", ["rotate", "xor", None])
def test_symmetric_members_share_a_key_and_asymmetric_ones_do_not(frame, order) -> None:
    """On 16 NPUs (a 4x2x2 grid, NPU = x + 4y + 8z): the four rows {4k..4k+3} are translates
    of each other and each member sees its row alike, so 16 views and one key in ring order
    in the grid frame; row {0, 1, 2, 3} listed out of order as (0, 2, 1, 3) is seen
    differently from 0 (next members +2, +1) and from 1 (next members +2, -1)."""
    keys = GroupKeys(frame, order)
    rows = {k: tuple(range(4 * k, 4 * k + 4)) for k in range(4)}
    row_keys = {keys.key(k, rows[k], r) for k in rows for r in rows[k]}
    if order == "rotate" and isinstance(frame, Grid):
        assert len(row_keys) == 1  # a ring of 4 in dimension 0: every member alike
    if order is None:
        assert len(row_keys) == 4  # first, second, .. member: four places
    shuffled = (0, 2, 1, 3)
    if not isinstance(frame, XorIds):  # (under XOR, 1 sees 3, 0, 2 as 0 sees 2, 1, 3)
        assert keys.key(9, shuffled, 0) != keys.key(9, shuffled, 1)
    assert keys.key(9, shuffled, 0) != keys.key(0, rows[0], 0)
    assert keys.key(0, rows[0], 5) is None  # not a member
    assert keys.key(10, tuple(range(16)), 3) == ("all",)
    classes_agree({**rows, 9: shuffled}, frame, order)


def test_a_ring_of_period_two_has_two_kinds_of_member() -> None:
    """Members 0, 1, 8, 9 in ring order on Z_16: steps +1, +7, +1, +7, which repeat after two
    places, so 0 and 8 see the group alike, 1 and 9 alike, 0 and 1 not; in 0, 1, 4, 5 (steps
    +1, +3, +1, +11) every member sees it differently."""
    keys = GroupKeys(IdShifts(16), "rotate")
    g = (0, 1, 8, 9)
    k = {r: keys.key(1, g, r) for r in g}
    assert k[0] == k[8] and k[1] == k[9] and k[0] != k[1]
    g = (0, 1, 4, 5)
    assert len({keys.key(2, g, r) for r in g}) == 4


@pytest.mark.parametrize("seed", range(6))
def test_random_groups_class_members_as_written_out_views_do(seed: int) -> None:
    """Random groups (translates of a few shapes and of their members listed from another
    place, so equal views occur, and random member lists, repeated members included) in every
    frame and order."""
    rnd = random.Random(seed)
    for frame in (Grid([4, 4, 2]), Grid([8, 4]), IdShifts(32), XorIds(32)):
        n = frame.size
        shapes = [tuple(rnd.randrange(n) for _ in range(size)) for size in (1, 2, 3, 4, 4, 8, 6)]
        groups: dict[int, tuple[int, ...]] = {}
        for shape in shapes:
            for _ in range(4):
                shift, turn = rnd.randrange(n), rnd.randrange(len(shape))
                groups[len(groups)] = tuple(frame.add(m, shift) for m in shape)
                groups[len(groups)] = tuple(frame.add(m, shift) for m in shape[turn:] + shape[:turn])
        for size in (2, 4, 8, 16):
            groups[len(groups)] = tuple(rnd.sample(range(n), size))
        groups[len(groups)] = (3, 5, 3, 7)  # a repeated member: its first place counts
        for order in ("rotate", "xor", None):
            classes_agree(groups, frame, order)


@pytest.mark.parametrize("seed", range(20))
def test_least_rotation_and_period_match_brute_force(seed: int) -> None:
    rnd = random.Random(seed)
    seq = [rnd.randrange(3) for _ in range(rnd.randrange(1, 13))]
    if seed % 4 == 0:
        seq = seq[:3] * 4  # periodic
    rotations = [seq[k:] + seq[:k] for k in range(len(seq))]
    k = least_rotation(seq)
    assert rotations[k] == min(rotations)
    assert smallest_period(seq) == next(p for p in range(1, len(seq) + 1) if rotations[p % len(seq)] == seq)


def _set_view(members: tuple[int, ...], rank: int, frame) -> frozenset | None:
    """The group from ``rank`` as a set of offsets, the order of its members aside."""
    if len(members) == frame.size:
        return frozenset(["all"])
    return frozenset(frame.sub(m, rank) for m in members) if rank in members else None


def test_a_group_over_two_nodes_is_one_set_to_all_its_members_and_many_rings() -> None:
    """Four nodes of 8 GPUs (a grid 8 x 4): tensor-parallel group {0..15} spans nodes 0 and
    1. As a set (what NCCL's timing sees) GPU 0's view holds node offsets {0, +1} and GPU 8's
    {-1, 0} = {0, +3} (dimension 1 wraps at 4 nodes), each with all eight in-node offsets:
    two kinds of member, the eight GPUs of a node alike. In ring order the node boundary falls
    at another place for each GPU of a node, so 0 and 1 differ there. {0, 1, 8} (no
    translation but 0 maps it onto itself) has three kinds of member."""
    frame = Grid([8, 4])
    keys = GroupKeys(frame, "rotate")
    tp = tuple(range(16))
    as_set = {r: keys.set_key(1, tp, r) for r in tp}
    assert len(set(as_set.values())) == 2
    assert len({as_set[r] for r in range(8)}) == 1 and as_set[0] != as_set[8]
    assert keys.key(1, tp, 0) != keys.key(1, tp, 1)  # in ring order 0 and 1 differ
    assert len({keys.set_key(2, (0, 1, 8), r) for r in (0, 1, 8)}) == 3
    assert keys.set_key(1, tp, 20) is None
    # the group over nodes 2 and 3 is its translate: its members' sets match 0's and 8's
    assert keys.set_key(3, tuple(range(16, 32)), 16) == as_set[0]
    assert keys.set_key(3, tuple(range(16, 32)), 31) == as_set[8]


@pytest.mark.parametrize("seed", range(4))
def test_set_keys_class_members_as_their_sets_of_offsets_do(seed: int) -> None:
    """Equal set keys exactly when equal sets of offsets, for the random groups above and
    cosets of subgroups (every translate of a block of a grid), in every frame."""
    rnd = random.Random(seed)
    for frame in (Grid([4, 4, 2]), Grid([8, 4]), IdShifts(32), XorIds(32)):
        n = frame.size
        groups: dict[int, tuple[int, ...]] = {}
        for size in (1, 2, 3, 4, 8, 6):
            shape = tuple(rnd.randrange(n) for _ in range(size))
            for _ in range(4):
                shift, turn = rnd.randrange(n), rnd.randrange(len(shape))
                groups[len(groups)] = tuple(frame.add(m, shift) for m in shape[turn:] + shape[:turn])
        block = tuple(m for m in range(n) if m % 4 < 2)  # half of every row of 4
        for shift in range(n):
            groups[len(groups)] = tuple(sorted({frame.add(m, shift) for m in block}))
        keys = GroupKeys(frame, None)
        by_view: dict = {}
        by_key: dict = {}
        for gid, members in groups.items():
            for rank in [*members, n - 1]:
                view, key = _set_view(members, rank, frame), keys.set_key(gid, members, rank)
                assert (view is None) == (key is None), (gid, rank)
                if view is not None:
                    assert by_view.setdefault(view, key) == key, (gid, rank)
                    assert by_key.setdefault(key, view) == view, (gid, rank)
