"""A twenty-fourth hunt: interrupted and concurrent work, the newest features, and sizes at the
ends of their ranges. Each test failed before its fix: a traceback or internal error, a run
that could not finish at a size the cluster accepts, or a wrong success."""

from __future__ import annotations

from simpy_astra.collectives.logical import dimension_ring
from simpy_astra.engine.collective_plans import CommunicatorGroup


def test_every_npu_of_a_network_line_holds_one_tuple_of_its_members():
    # before: each NPU built its own tuple of its line's members, n copies of an n-NPU line:
    # a 32,768-GPU data-parallel job (dgx-h100) passed 4 GB in a minute, and 262,144 GPUs (the
    # cluster's bound) could not finish; now 262,144 GPUs run in about 3 minutes and 3.7 GB
    dims = [8, 4096]
    line = dimension_ring(3, dims, 1)
    other = dimension_ring(3 + 8 * 4095, dims, 1)
    assert line.members is other.members
    assert line.members == tuple(range(3, 8 * 4096, 8)) and (line.index, other.index) == (0, 4095)


def test_a_group_member_finds_its_place_without_scanning_the_group():
    # before: each member's view asked members.index (and `in members`): n scans of an n-member
    # group, quadratic in the GPUs of a data-parallel group
    group = CommunicatorGroup(7, (5, 9, 2, 9))
    view = group.member_view()
    assert view.positions is group.positions and view.streams is not group.streams
    assert [group.positions[m] for m in (5, 9, 2)] == [0, 1, 2]  # a repeated member: its first place
