"""A comm-group JSON a user's generator wrote that does not read is named as the scenario
names the generator, with the fix in the generator (config/scenario_workload.py: written_groups)."""

from __future__ import annotations

from tests.scenario_files import error_lines
from tests.test_hostile_hunt10 import users_generator_scenario

GROUPS_WRITER = '''
import json
from simpy_astra.workloads.chakra import write_et


def bad_groups(params, prefix):
    for rank in range(4):
        write_et(f"{prefix}.{rank}.et", [])
    with open(prefix + ".json", "w") as f:
        json.dump({"1": [0, 9]}, f)
    return prefix + ".json"
'''


def test_a_bad_group_file_a_users_generator_wrote_names_the_generator(tmp_path, capsys, monkeypatch):
    path = users_generator_scenario(tmp_path, monkeypatch, "review_groups", GROUPS_WRITER, "bad_groups")
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1, err
    head = f"error: {path}: workload.generate: generator 'review_groups:bad_groups' wrote "
    assert err[0].startswith(head), err
    assert err[0].endswith("; fix the generator (its traces are made anew once it is edited)"), err
    assert "corrupt workload cache entry" not in err[0]


UNREADABLE_GROUPS = '''
from simpy_astra.workloads.chakra import write_et


def not_text(params, prefix):
    for rank in range(4):
        write_et(f"{prefix}.{rank}.et", [])
    with open(prefix + ".json", "wb") as f:
        f.write(bytes([0xC3, 0x28, 0x00]))  # no byte-order mark: plain bad UTF-8
    return prefix + ".json"
'''


def test_a_group_file_a_users_generator_wrote_that_cannot_be_read_names_the_generator(
        tmp_path, capsys, monkeypatch):
    # "error: /home/.../.cache/simpy-astra/workloads/<hash>/...json: is not UTF-8 text (byte 0);
    # ...; fix the generator": the cache's file alone, not the generator or the scenario's field
    # (reading the file failed before its contents, which named both, were looked at)
    path = users_generator_scenario(tmp_path, monkeypatch, "review_unread", UNREADABLE_GROUPS, "not_text")
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1, err
    head = f"error: {path}: workload.generate: generator 'review_unread:not_text' wrote "
    problem = "is a binary file, not text; expected the communicator-group JSON"
    assert err[0].startswith(head) and f"review_unread_not_text.json: {problem}" in err[0], err
    assert err[0].endswith("; fix the generator (its traces are made anew once it is edited)"), err
