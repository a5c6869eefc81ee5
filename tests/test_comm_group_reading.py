"""A comm-group JSON is checked over the whole file at once, its integers are read without a
check each unless the text could hold one past a double, the nesting is measured level by
level, and an NPU's own view of a file group is made when it first asks for it (a file of
300,000 groups took seconds per step of each). What a file means and every error it gets
must be what the group-by-group reading gave: these pin both."""

from __future__ import annotations

import json
import random

import pytest

from simpy_astra.config import SystemConfig
from simpy_astra.config.comm_groups import comm_groups_from_mapping
from simpy_astra.config.input_bounds import MAX_NESTING, nesting_depth
from simpy_astra.config.json_reader import parse_json
from simpy_astra.engine.collective_plans import CollectivePlanner
from simpy_astra.errors import InputError

#: a file that is wrong in one group -> the error the group-by-group check gives it (8 NPUs)
BAD_FILES = [
    ({"1": [0, 1], "2": [0, True]}, "g.json: group '2' lists true, which is not an NPU id; the network has 8 NPUs "
                                    "(0..7)"),
    ({"1": [0, 0]}, "g.json: group '1' lists NPU 0 twice; list each NPU once"),
    ({"1": [0, 8]}, "g.json: group '1' lists 8, which is not an NPU id; the network has 8 NPUs (0..7)"),
    ({"1": [-1]}, "g.json: group '1' lists -1, which is not an NPU id; the network has 8 NPUs (0..7)"),
    ({"1": [0.0]}, "g.json: group '1' lists 0.0, which is not an NPU id; the network has 8 NPUs (0..7); write 0"),
    ({"1": []}, "g.json: group '1' must be a non-empty list of NPU ids (got [])"),
    ({"01": [0]}, "g.json: group '01' is not a group id; keys must be decimal integers > 0 (0 means all NPUs); "
                  "write 1"),
    ({"2147483648": [0]}, "g.json: group '2147483648' is not a group id; keys must be decimal integers > 0 (0 "
                          "means all NPUs) and at most 2147483647 (ASTRA-sim keeps them in an int)"),
    # the first wrong group is named, in the file's order
    ({"1": [0], "2": [9], "3": [0, 0]}, "g.json: group '2' lists 9, which is not an NPU id; the network has 8 "
                                        "NPUs (0..7)"),
]


@pytest.mark.parametrize(("groups", "error"), BAD_FILES)
def test_a_wrong_group_is_named_as_group_by_group(groups: dict, error: str) -> None:
    with pytest.raises(InputError) as caught:
        comm_groups_from_mapping(groups, "g.json", 8)
    assert str(caught.value) == error


def test_a_valid_file_keeps_ids_and_member_order() -> None:
    groups = {"7": [3, 1], "2147483647": [0], "1": [7, 6, 5, 4, 3, 2, 1, 0]}
    got = comm_groups_from_mapping(groups, "g.json", 8)
    assert list(got.items()) == [(7, (3, 1)), (2147483647, (0,)), (1, (7, 6, 5, 4, 3, 2, 1, 0))]


def _depth(value) -> int:
    """Nesting by its definition, recursively."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def test_nesting_depth_is_its_definition() -> None:
    rng = random.Random(7)

    def grow(level: int):
        if level > 6 or rng.random() < 0.3:
            return rng.choice([1, "a", None, 2.5])
        items = [grow(level + 1) for _ in range(rng.randrange(4))]
        return items if rng.random() < 0.5 else {str(k): v for k, v in enumerate(items)}

    for _ in range(300):
        value = grow(0)
        assert nesting_depth(value) == _depth(value)


def test_nesting_at_the_limit_is_read_and_past_it_refused() -> None:
    assert parse_json("a.json", "[" * MAX_NESTING + "]" * MAX_NESTING, "x") is not None
    with pytest.raises(InputError, match=f"nest more than {MAX_NESTING} levels deep"):
        parse_json("a.json", "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1), "x")


def test_integers_near_the_largest_double() -> None:
    below = "1" + "0" * 308  # 1e308: 309 digits, still within a double
    assert parse_json("a.json", f'{{"a": {below}, "b": -{"9" * 308}}}', "x") == {"a": 10**308, "b": -(10**308 - 1)}
    with pytest.raises(InputError, match="past 1.8e\\+308, the largest a double holds"):
        parse_json("a.json", '{"a": 2' + "0" * 308 + "}", "x")
    with pytest.raises(InputError, match="a number of 4,001 digits"):
        parse_json("a.json", '{"a": ' + "1" * 4001 + "}", "x")
    # a long run of digits in a string is no number
    assert parse_json("a.json", f'{{"a": "{"7" * 400}", "b": 12}}', "x") == {"a": "7" * 400, "b": 12}


def test_a_member_gets_its_own_view_and_a_non_member_the_shared_one() -> None:
    planner = CollectivePlanner(SystemConfig(preferred_dataset_splits=1), 8)
    planner.add_file_groups({1: (0, 1), 2: (2, 3)}, "groups.json")
    own0, own1 = {}, {}
    a, b = planner.group_for(0, own0, 1), planner.group_for(1, own1, 1)
    assert a.members == b.members == (0, 1) and a is not b and a.streams is not b.streams
    assert planner.group_for(0, own0, 1) is a and own0 == {1: a}  # kept: its streams go on
    shared = planner.group_for(0, own0, 2)
    assert shared.members == (2, 3) and 2 not in own0 and planner.group_for(5, {}, 2) is shared
    assert planner.group_for(0, own0, 3) is None
    declared = planner.make_group(2, (0, 2), 0)  # a METADATA node's group of the same id
    assert planner.group_for(0, {2: declared}, 2) is declared


@pytest.mark.parametrize("groups, error", [
    ({1: (0, 1), 2: (3, 4)}, "group '2' lists 4, which is not an NPU id; the network has 4 NPUs (0..3)"),
    ({1: (0, "x")}, "group '1' lists \"x\", which is not an NPU id; the network has 4 NPUs (0..3)"),
])
def test_file_group_npu_that_does_not_exist_is_named(groups: dict, error: str) -> None:
    """Groups a Python caller gives SimulationInputs unchecked: one line naming where they were
    given, the group and the ids it may list (a member no int took was a ValueError's traceback)."""
    planner = CollectivePlanner(SystemConfig(preferred_dataset_splits=1), 4)
    with pytest.raises(InputError) as caught:
        planner.add_file_groups(groups, "SimulationInputs.comm_groups")
    assert str(caught.value) == f"SimulationInputs.comm_groups: {error}"


def test_a_metadata_group_of_an_npu_that_does_not_exist_names_the_trace_and_node(tmp_path) -> None:
    from simpy_astra.workloads.chakra import make_node
    from simpy_astra.workloads.chakra.schema import METADATA_NODE
    from tests.sim_helpers import net, run

    groups = '[\'[{"pg_name": "1", "ranks": [0, 9]}]\']'
    meta = make_node(1, "pg", METADATA_NODE, inputs_values=groups)
    with pytest.raises(InputError, match=r"\.et: node 1: METADATA: group '1' lists 9, which is not an NPU "
                                         r"id; the network has 4 NPUs \(0\.\.3\)$"):
        run(tmp_path, [[meta]] * 4, net("Ring", 4), {})


def test_a_file_read_whole_gives_each_group(tmp_path) -> None:
    rng = random.Random(3)
    groups = {str(g): rng.sample(range(64), rng.choice((1, 2, 4, 8))) for g in range(1, 2001)}
    path = tmp_path / "groups.json"
    path.write_text(json.dumps(groups))
    from simpy_astra.config.comm_groups import load_comm_groups_json

    got = load_comm_groups_json(str(path), 64)
    assert got == {int(k): tuple(v) for k, v in groups.items()} and list(got) == [int(k) for k in groups]
