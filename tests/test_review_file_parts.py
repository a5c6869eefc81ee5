"""A trace error keeps its file and problem as fields (errors.AboutFile), and the line that
names a user's generator is built from them, not by taking the message apart."""

from __future__ import annotations

import pytest

from simpy_astra.workloads.chakra import write_et
from simpy_astra.workloads.chakra.reader import read_et
from tests.scenario_files import error_lines
from tests.test_hostile_hunt10 import BAD_TRACES, users_generator_scenario


def test_a_cache_folder_with_a_colon_space_names_the_written_file_whole(tmp_path, capsys, monkeypatch):
    # SIMPY_ASTRA_CACHE=".../my: cache": the message was split at its first ": ", inside the
    # folder, so the line said the generator wrote "my" and quoted the rest of the path as the problem
    path = users_generator_scenario(tmp_path, monkeypatch, "parts_traces", BAD_TRACES, "far_peer")
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "my: cache"))
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {path}: workload.generate: generator 'parts_traces:far_peer' wrote "
                   f"parts_traces_far_peer.0.et, which cannot run (node 0: comm_dst 99 must be another NPU id "
                   f"in 0..3); fix the generator (its traces are made anew once it is edited)"], err


@pytest.mark.parametrize("data, problem", [
    (b"", "empty file, expected a GlobalMetadata record first"),
    (b"\x07garbage", "record 0 at byte 0: 7 bytes do not parse as ChakraProtoMsg.GlobalMetadata "
                     "(not a Chakra ET file?)"),
])
def test_a_trace_error_keeps_its_file_and_problem(tmp_path, data, problem):
    path = tmp_path / "t.0.et"
    path.write_bytes(data)
    with pytest.raises(Exception) as caught:
        read_et(str(path))
    assert (caught.value.file, caught.value.problem) == (str(path), problem)
    assert str(caught.value) == f"{path}: {problem}"


def test_a_node_error_keeps_its_file_and_problem(tmp_path):
    path = tmp_path / "t.0.et"
    write_et(str(path), [])
    with pytest.raises(Exception) as caught:
        from simpy_astra.workloads.chakra.reader import validate_graph

        validate_graph(str(path), read_et(str(path))[1])
    assert (caught.value.file, caught.value.problem) == (str(path), "no nodes (every rank needs at least one node)")
