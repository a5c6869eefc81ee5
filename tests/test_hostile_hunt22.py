"""A twenty-second hunt, on ASTRA-sim's own inputs and flags: each case below ran with an
error that named the wrong problem (a field its file never has, no flag); each is now one
line naming the file or flag and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simpy_astra.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
STEP = ROOT / "scenarios" / "workloads" / "step_8npus_1MB"
SYSTEM = {"scheduling-policy": "LIFO", "collective-optimization": "localBWAware", "endpoint-delay": 10,
          "active-chunks-per-dimension": 1, "preferred-dataset-splits": 4, "local-mem-bw": 50,
          "all-reduce-implementation": ["ring"]}


def _files(tmp_path: Path) -> dict[str, str]:
    """The four input files of an 8-NPU ring run, by flag."""
    (tmp_path / "sys.json").write_text(json.dumps(SYSTEM))
    (tmp_path / "net.yml").write_text("topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n")
    (tmp_path / "mem.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    return {"--workload-configuration": str(STEP / "step"), "--system-configuration": str(tmp_path / "sys.json"),
            "--network-configuration": str(tmp_path / "net.yml"),
            "--remote-memory-configuration": str(tmp_path / "mem.json")}


def _error(capsys, flags: dict[str, str]) -> str:
    """The one line a run that refuses its input (exit status 2) writes to stderr."""
    assert main([f"{flag}={value}" for flag, value in flags.items()]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.mark.parametrize(("flag", "given", "kind", "theirs"), [
    # was "field 'topology' is missing": the system JSON given for the network YAML
    ("--network-configuration", "sys.json", "network YAML", "system JSON"),
    ("--network-configuration", "mem.json", "network YAML", "remote-memory JSON"),
    # was "field 'preferred-dataset-splits' is missing"
    ("--system-configuration", "mem.json", "system JSON", "remote-memory JSON"),
    # was "group 'scheduling-policy' is not a group id"
    ("--comm-group-configuration", "sys.json", "communicator-group JSON", "system JSON"),
])
def test_an_input_given_to_another_inputs_flag_is_named_as_what_it_is(tmp_path, capsys, flag, given, kind, theirs):
    flags = _files(tmp_path)
    flags[flag] = str(tmp_path / given)
    line = _error(capsys, flags)
    assert line.startswith(f"error: {tmp_path / given}: holds a {theirs}'s fields ("), line
    assert f"and none of a {kind}'s; give the {kind} file, e.g. " in line, line


def test_a_system_json_missing_its_splits_is_still_told_to_set_them(tmp_path, capsys):
    flags = _files(tmp_path)
    (tmp_path / "sys.json").write_text(json.dumps({k: v for k, v in SYSTEM.items() if k != "preferred-dataset-splits"}))
    assert "field 'preferred-dataset-splits' is missing; set it" in _error(capsys, flags)


def test_an_empty_comm_group_flag_names_the_flag(tmp_path, capsys):
    # was "<empty path>: expected the path of the communicator-group JSON file", naming no flag
    flags = {**_files(tmp_path), "--comm-group-configuration": ""}
    assert _error(capsys, flags) == ("error: --comm-group-configuration: must be a file path (got an empty "
                                     "string); leave the flag out for no groups")


@pytest.mark.parametrize("near", ["step.", "step.0", "stp"])
def test_a_workload_prefix_that_nearly_spells_one_beside_it_is_told_it(tmp_path, capsys, near):
    # 'step.' looked for step..0.et and said only that it did not exist
    flags = {**_files(tmp_path), "--workload-configuration": str(STEP / near)}
    assert _error(capsys, flags).endswith(f"(0 consecutive file(s) found); did you mean {STEP / 'step'}?")


def test_a_workload_prefix_like_none_beside_it_gets_no_guess(tmp_path, capsys):
    flags = {**_files(tmp_path), "--workload-configuration": str(STEP / "zzz")}
    assert _error(capsys, flags).endswith("(0 consecutive file(s) found)")


@pytest.mark.parametrize(("groups", "ends"), [
    ({"1": [0, 1, 1]}, "group '1' lists NPU 1 twice; list each NPU once"),  # it named no fix
    ({"01": [0, 1]}, "keys must be decimal integers > 0 (0 means all NPUs); write 1"),
    # past the int ASTRA-sim keeps a group id in, yet only 'must be decimal integers > 0'
    ({"99999999999": [0, 1]}, "and at most 2147483647 (ASTRA-sim keeps them in an int)"),
])
def test_a_comm_group_refused_is_told_its_fix(tmp_path, capsys, groups, ends):
    (tmp_path / "groups.json").write_text(json.dumps(groups))
    flags = {**_files(tmp_path), "--comm-group-configuration": str(tmp_path / "groups.json")}
    line = _error(capsys, flags)
    assert line.startswith(f"error: {tmp_path / 'groups.json'}: group ") and line.endswith(ends), line


def _all_reduces(tmp_path: Path, size_of_rank) -> str:
    """An 8-rank workload of one all-reduce each, of ``size_of_rank(rank)`` bytes (None: a
    compute node instead); its prefix."""
    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.schema import ALL_REDUCE, COMM_COLL_NODE, COMP_NODE

    for rank in range(8):
        size = size_of_rank(rank)
        node = (make_node(1, "c", COMP_NODE, duration_micros=1) if size is None else
                make_node(1, "ar", COMM_COLL_NODE, attrs={"comm_type": ALL_REDUCE, "comm_size": size}))
        write_et(str(tmp_path / f"w.{rank}.et"), [node])
    return str(tmp_path / "w")


def test_a_collective_its_members_give_different_sizes_is_named_in_the_stall(tmp_path, capsys):
    # the stall listed a page of unmatched chunk messages and never said the members disagreed
    flags = {**_files(tmp_path), "--workload-configuration": _all_reduces(tmp_path, lambda r: 1 << 20 if r else 1024)}
    assert main([f"{flag}={value}" for flag, value in flags.items()]) == 3
    err = capsys.readouterr().err
    assert ("Their ALL_REDUCE on all NPUs differs in size (1,024 B on NPU 0; 1,048,576 B on NPUs 1, 2, 3, 4 ...): "
            "every member must give a collective the same comm_size") in " ".join(err.split()), err


def test_a_collective_one_member_skips_stalls_without_a_size_to_blame(tmp_path, capsys):
    flags = {**_files(tmp_path), "--workload-configuration": _all_reduces(tmp_path, lambda r: 1 << 20 if r else None)}
    assert main([f"{flag}={value}" for flag, value in flags.items()]) == 3
    err = capsys.readouterr().err
    assert "simulation stalled" in err and "differs in size" not in err, err


def test_an_implementation_list_longer_than_the_network_names_its_fix(tmp_path, capsys):
    # it said only 'all-reduce-implementation lists 2 dimensions but the network has 1'
    flags = _files(tmp_path)
    (tmp_path / "sys.json").write_text(json.dumps({**SYSTEM, "all-reduce-implementation": ["ring", "direct"]}))
    assert _error(capsys, flags) == (
        f"error: {tmp_path / 'sys.json'}: field 'all-reduce-implementation' lists 2 algorithms but the network has "
        f"1 dimension(s); give one per dimension, e.g. [\"ring\"]")
