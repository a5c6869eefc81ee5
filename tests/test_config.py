"""Config loaders: ASTRA-sim's input rules, our error messages, and the reference inputs."""

from __future__ import annotations

import dataclasses
import json
import struct
from pathlib import Path
from typing import Any

import pytest

from simpy_astra.config import (
    NetworkConfig,
    RemoteMemoryConfig,
    SystemConfig,
    load_comm_groups_json,
    load_network_yaml,
    load_per_node_custom_yaml,
    load_remote_memory_json,
    load_system_json,
    parse_implementation,
)
from simpy_astra.errors import InputError, StalledError
from tests.conftest import REFERENCE

CONFIGS = REFERENCE / "configs"
CASES = REFERENCE / "cases"
NO_REFERENCE = f"reference inputs not found at {CONFIGS} (the shared reference folder is absent)"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def system(tmp_path: Path, injection_scale: float = 1.0, **keys: Any) -> SystemConfig:
    """Load a system JSON holding ``keys`` (underscores -> dashes) plus 4 splits by default."""
    data: dict[str, Any] = {"preferred-dataset-splits": 4}
    for key, value in keys.items():
        data[key.replace("_", "-")] = value
    return load_system_json(write(tmp_path, "system.json", json.dumps(data)), injection_scale)


def system_error(tmp_path: Path, **keys: Any) -> str:
    with pytest.raises(InputError) as info:
        system(tmp_path, **keys)
    message = str(info.value)
    assert "system.json" in message and "\n" not in message
    return message


def system_raw(tmp_path: Path, text: str) -> str:
    with pytest.raises(InputError) as info:
        load_system_json(write(tmp_path, "system.json", text))
    return str(info.value)


# ---------------------------------------------------------------------------- errors
def test_input_error_at_names_file_field_and_problem() -> None:
    err = InputError.at("system.json", "preferred-dataset-splits", "must be an integer >= 1 (got 0)")
    assert str(err) == "system.json: field 'preferred-dataset-splits' must be an integer >= 1 (got 0)"
    assert str(InputError.at(Path("a/net.yml"), None, "bad")) == "a/net.yml: bad"
    assert (
        str(InputError.at("wl.0.et", 7, "has no comm_size", kind="node"))
        == "wl.0.et: node '7' has no comm_size"
    )
    assert err.message == str(err)


def test_input_error_is_one_line() -> None:
    assert str(InputError("first\n   second\nthird")) == "first second third"


def test_stalled_error_is_an_exception() -> None:
    assert issubclass(StalledError, Exception) and StalledError.__doc__


# ---------------------------------------------------------------------------- network YAML
NET_2D = (
    "topology: [ Ring, Switch ]\nnpus_count: [ 4, 2 ]\nbandwidth: [ 50, 25.5 ]\nlatency: [ 500.0, 0.25 ]\n"
)


def net_error(tmp_path: Path, text: str) -> str:
    with pytest.raises(InputError) as info:
        load_network_yaml(write(tmp_path, "net.yml", text))
    message = str(info.value)
    assert "net.yml" in message and "\n" not in message
    return message


def test_network_two_dimensions(tmp_path: Path) -> None:
    cfg = load_network_yaml(write(tmp_path, "net.yml", NET_2D))
    assert cfg.topology == ("Ring", "Switch")
    assert cfg.npus_count == (4, 2)
    assert cfg.bandwidth_gbps == (50.0, 25.5) and isinstance(cfg.bandwidth_gbps[0], float)
    assert cfg.latency_ns == (500.0, 0.25)
    assert cfg.num_dims == 2 and cfg.total_npus == 8
    assert cfg.source.endswith("net.yml")


def test_network_zero_latency_is_allowed(tmp_path: Path) -> None:
    text = "topology: [ FullyConnected ]\nnpus_count: [ 8 ]\nbandwidth: [ 1 ]\nlatency: [ 0 ]\n"
    assert load_network_yaml(write(tmp_path, "net.yml", text)).latency_ns == (0.0,)


@pytest.mark.parametrize("key", ["topology", "npus_count", "bandwidth", "latency"])
def test_network_missing_key(tmp_path: Path, key: str) -> None:
    text = "\n".join(line for line in NET_2D.splitlines() if not line.startswith(key))
    message = net_error(tmp_path, text)
    assert f"'{key}' is missing" in message


def test_network_unknown_topology_lists_valid_names(tmp_path: Path) -> None:
    message = net_error(tmp_path, NET_2D.replace("Ring,", "Torus,"))
    assert "'topology[0]'" in message and "Ring, FullyConnected, Switch" in message and "Torus" in message


def test_network_topology_is_case_sensitive(tmp_path: Path) -> None:
    message = net_error(tmp_path, NET_2D.replace("Ring,", "ring,"))
    assert "case-sensitive" in message and "did you mean 'Ring'" in message


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("npus_count: [ 4, 1 ]", "npus_count[1]"),
        ("npus_count: [ 4.0, 2 ]", "npus_count[0]"),
        ("npus_count: [ true, 2 ]", "npus_count[0]"),
        ("npus_count: [ '4', 2 ]", "npus_count[0]"),
        ("bandwidth: [ 0, 25 ]", "bandwidth[0]"),
        ("bandwidth: [ 50, -1 ]", "bandwidth[1]"),
        ("bandwidth: [ 50, fast ]", "bandwidth[1]"),
        ("bandwidth: [ .inf, 1 ]", "bandwidth[0]"),
        ("latency: [ -1, 5 ]", "latency[0]"),
        ("topology: [ Ring, 3 ]", "topology[1]"),
    ],
)
def test_network_bad_entries(tmp_path: Path, line: str, field: str) -> None:
    key = line.split(":")[0]
    lines = [line if existing.startswith(key) else existing for existing in NET_2D.splitlines()]
    assert f"'{field}'" in net_error(tmp_path, "\n".join(lines))


@pytest.mark.parametrize("value", ["Ring", "[]", "{a: 1}"])
def test_network_list_required(tmp_path: Path, value: str) -> None:
    lines = [f"topology: {value}" if ln.startswith("topology") else ln for ln in NET_2D.splitlines()]
    message = net_error(tmp_path, "\n".join(lines))
    assert "'topology' must be a non-empty list" in message


def test_network_lengths_must_match(tmp_path: Path) -> None:
    message = net_error(tmp_path, NET_2D.replace("latency: [ 500.0, 0.25 ]", "latency: [ 500.0 ]"))
    assert "'latency' has 1 entry but topology has 2" in message


def test_network_bad_yaml_reports_position(tmp_path: Path) -> None:
    message = net_error(tmp_path, "topology: [ Ring\nnpus_count: [ 4 ]\n")
    assert "invalid YAML at line" in message and "column" in message


@pytest.mark.parametrize(("text", "got"), [("", "an empty file"), ("- Ring\n", "list")])
def test_network_top_level_must_be_mapping(tmp_path: Path, text: str, got: str) -> None:
    message = net_error(tmp_path, text)
    assert "top level must be a mapping" in message and got in message


def test_network_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.yml: network YAML file does not exist"):
        load_network_yaml(tmp_path / "nope.yml")


def test_network_directory_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        load_network_yaml(tmp_path)


def test_configs_are_frozen(tmp_path: Path) -> None:
    cfg = load_network_yaml(write(tmp_path, "net.yml", NET_2D))
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.topology = ("Ring",)  # type: ignore[misc]


# ---------------------------------------------------------------------------- system JSON
def test_system_defaults(tmp_path: Path) -> None:
    cfg = system(tmp_path)
    assert cfg == SystemConfig(preferred_dataset_splits=4, source=cfg.source)
    assert cfg.scheduling_policy == "LIFO"  # uninitialised in ASTRA-sim, usually 0 = LIFO
    assert cfg.collective_optimization == "baseline"  # likewise
    assert cfg.endpoint_delay_ns == 10
    assert cfg.active_chunks_per_dimension == 1
    assert cfg.local_reduction_delay == 1
    assert (cfg.L, cfg.o, cfg.g, cfg.G) == (0.0, 0.0, 0.0, 0.0)
    assert cfg.model_shared_bus is False
    assert cfg.peak_perf_tflops == 0.0 and cfg.local_mem_bw_gbps == 0.0
    assert not (cfg.roofline_enabled or cfg.trace_enabled or cfg.replay_only or cfg.track_local_mem)
    assert cfg.local_mem_trace_filename == "local_mem_trace"
    assert cfg.implementations == {} and cfg.custom_implementations == {} and cfg.per_node_custom == {}
    assert cfg.source.endswith("system.json")


def test_system_ignores_unparsed_keys(tmp_path: Path) -> None:
    cfg = system(
        tmp_path,
        boost_mode=1,
        intra_dimension_scheduling="SmallestFirst",
        inter_dimension_scheduling="themis",
        memory_type="whatever",
        something_new=[1, 2],
    )
    assert cfg.preferred_dataset_splits == 4


@pytest.mark.parametrize("policy", ["LIFO", "FIFO", "EXPLICIT"])
def test_system_scheduling_policy(tmp_path: Path, policy: str) -> None:
    assert system(tmp_path, scheduling_policy=policy).scheduling_policy == policy


@pytest.mark.parametrize("policy", ["lifo", "Random", 1, None])
def test_system_bad_scheduling_policy(tmp_path: Path, policy: Any) -> None:
    message = system_error(tmp_path, scheduling_policy=policy)
    assert "'scheduling-policy' must be one of LIFO, FIFO, EXPLICIT" in message


def test_system_collective_optimization(tmp_path: Path) -> None:
    assert system(tmp_path, collective_optimization="localBWAware").collective_optimization == "localBWAware"
    message = system_error(tmp_path, collective_optimization="localbwaware")
    assert "'collective-optimization' must be one of baseline, localBWAware" in message


@pytest.mark.parametrize(
    ("delay", "scale", "expected"),
    [(10, 1.0, 10), (10, 1.55, 15), (7, 0.5, 3), (2.7, 1.0, 2), (2.7, 2.0, 4), (0, 3.0, 0), (True, 5.0, 5)],
)
def test_system_endpoint_delay_scaled_and_truncated(
    tmp_path: Path, delay: Any, scale: float, expected: int
) -> None:
    # C++: int member = j["endpoint-delay"] (float truncated), then int(member * scale)
    assert system(tmp_path, scale, endpoint_delay=delay).endpoint_delay_ns == expected


def test_system_endpoint_delay_absent_ignores_injection_scale(tmp_path: Path) -> None:
    assert system(tmp_path, 3.0).endpoint_delay_ns == 10


def test_system_endpoint_delay_rejects_negative(tmp_path: Path) -> None:
    assert "'endpoint-delay' must be an integer >= 0 (got -5)" in system_error(tmp_path, endpoint_delay=-5)
    with pytest.raises(InputError, match="injection-scale"):
        system(tmp_path, -1.0, endpoint_delay=10)


@pytest.mark.parametrize(("value", "expected"), [(2, 2), (2.7, 2), (True, 1), (4.0, 4)])
def test_system_int_fields_follow_nlohmann(tmp_path: Path, value: Any, expected: int) -> None:
    assert system(tmp_path, active_chunks_per_dimension=value).active_chunks_per_dimension == expected
    assert system(tmp_path, preferred_dataset_splits=value).preferred_dataset_splits == expected
    assert system(tmp_path, local_reduction_delay=value).local_reduction_delay == expected


@pytest.mark.parametrize("value", [0, 0.5, -1, "2", None, [2], False, 2**31])
def test_system_bad_active_chunks(tmp_path: Path, value: Any) -> None:
    assert "'active-chunks-per-dimension' must be" in system_error(
        tmp_path, active_chunks_per_dimension=value
    )


def test_system_splits_required(tmp_path: Path) -> None:
    message = system_raw(tmp_path, '{"endpoint-delay": 10}')
    assert "system.json: field 'preferred-dataset-splits' is missing" in message
    assert "number of chunks per collective" in message


@pytest.mark.parametrize("value", [0, 0.9, -4, "4", None, False])
def test_system_bad_splits(tmp_path: Path, value: Any) -> None:
    message = system_error(tmp_path, preferred_dataset_splits=value)
    assert "field 'preferred-dataset-splits' must be an integer >= 1" in message
    assert "set it to the number of chunks per collective" in message


def test_system_zero_splits_message_matches_the_documented_form(tmp_path: Path) -> None:
    message = system_error(tmp_path, preferred_dataset_splits=0)
    assert message.endswith(
        "system.json: field 'preferred-dataset-splits' must be an integer >= 1 (got 0); "
        "set it to the number of chunks per collective (ASTRA-sim divides by it)"
    )


def test_system_implementations(tmp_path: Path) -> None:
    cfg = system(
        tmp_path,
        all_reduce_implementation=["ring", "direct4", "halvingDoubling"],
        reduce_scatter_implementation=["oneRing"],
        all_gather_implementation=["oneDirect12345", "oneHalvingDoubling"],
        all_to_all_implementation=["doubleBinaryTree"],
    )
    assert cfg.implementations == {
        "all_reduce": ("ring", "direct4", "halvingDoubling"),
        "reduce_scatter": ("oneRing",),
        "all_gather": ("oneDirect12345", "oneHalvingDoubling"),
        "all_to_all": ("doubleBinaryTree",),
    }


def test_system_implementations_only_present_kinds(tmp_path: Path) -> None:
    assert system(tmp_path, all_to_all_implementation=["direct"]).implementations == {
        "all_to_all": ("direct",)
    }


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ring", ("ring", None)),
        ("oneRing", ("oneRing", None)),
        ("direct", ("direct", None)),
        ("direct4", ("direct", 4)),
        ("direct04", ("direct", 4)),
        ("direct99999", ("direct", 99999)),
        ("oneDirect", ("oneDirect", None)),
        ("oneDirect2", ("oneDirect", 2)),
        ("halvingDoubling", ("halvingDoubling", None)),
        ("oneHalvingDoubling", ("oneHalvingDoubling", None)),
        ("doubleBinaryTree", ("doubleBinaryTree", None)),
    ],
)
def test_parse_implementation(name: str, expected: tuple[str, int | None]) -> None:
    assert parse_implementation(name) == expected


@pytest.mark.parametrize(
    "name",
    ["Ring", "direct123456", "directX", "direct-3", "direct 4", "direct0", "oneDirectK", "binaryTree", ""],
)
def test_parse_implementation_rejects(name: str) -> None:
    with pytest.raises(ValueError):
        parse_implementation(name)


def test_system_bad_implementation_lists_valid_names(tmp_path: Path) -> None:
    message = system_error(tmp_path, all_reduce_implementation=["ring", "Ring"])
    assert "field 'all-reduce-implementation[1]'" in message and "'Ring'" not in message.split("valid:")[1]
    for valid in (
        "ring",
        "oneRing",
        "directK",
        "oneDirectK",
        "halvingDoubling",
        "oneHalvingDoubling",
        "doubleBinaryTree",
    ):
        assert valid in message


@pytest.mark.parametrize("value", ["ring", [], [1], None, {"0": "ring"}])
def test_system_implementation_must_be_list_of_names(tmp_path: Path, value: Any) -> None:
    message = system_error(tmp_path, all_gather_implementation=value)
    assert "'all-gather-implementation" in message


def test_system_custom_implementation(tmp_path: Path) -> None:
    cfg = system(tmp_path, all_reduce_implementation_custom=["dir/custom_allreduce"])
    assert cfg.custom_implementations == {"all_reduce": "dir/custom_allreduce"}
    cfg = system(
        tmp_path, all_to_all_implementation_custom=["a2a"], reduce_scatter_implementation_custom=["rs"]
    )
    assert cfg.custom_implementations == {"all_to_all": "a2a", "reduce_scatter": "rs"}


@pytest.mark.parametrize("value", [["a", "b"], [], "dir/custom", [3], [""]])
def test_system_custom_implementation_needs_exactly_one_path(tmp_path: Path, value: Any) -> None:
    message = system_error(tmp_path, all_gather_implementation_custom=value)
    assert "'all-gather-implementation-custom' must be a list with exactly one" in message


def test_system_per_node_custom(tmp_path: Path) -> None:
    yml = write(tmp_path, "per_node.yml", "7: path/to/my_allreduce\n'8': other\n")
    cfg = system(tmp_path, per_node_custom_implementation=str(yml))
    assert cfg.per_node_custom == {7: "path/to/my_allreduce", 8: "other"}
    assert cfg.per_node_custom_file == str(yml)


def test_system_per_node_custom_missing_yaml(tmp_path: Path) -> None:
    message = system_error(tmp_path, per_node_custom_implementation=str(tmp_path / "gone.yml"))
    assert "field 'per-node-custom-implementation' names" in message and "gone.yml" in message
    assert "does not exist" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("-1: x\n", "not a workload node id"),
        ("abc: x\n", "not a workload node id"),
        ("true: x\n", "not a workload node id"),
        ("7: 12\n", "node '7' must map to a custom-collective ET path prefix"),
        ("7:\n", "node '7' must map"),
        ("- 7\n", "top level must be a mapping"),
        ("", "top level must be a mapping"),
        ("7: [x\n", "invalid YAML at line"),
    ],
)
def test_per_node_custom_yaml_errors(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(InputError) as info:
        load_per_node_custom_yaml(write(tmp_path, "per_node.yml", text))
    assert "per_node.yml" in str(info.value) and expected in str(info.value)


ROOFLINE_READY = {"preferred-dataset-splits": 1, "peak-perf": 900, "local-mem-bw": 1600}


@pytest.mark.parametrize(
    ("key", "attr"),
    [
        ("roofline-enabled", "roofline_enabled"),
        ("trace-enabled", "trace_enabled"),
        ("replay-only", "replay_only"),
        ("track-local-mem", "track_local_mem"),
    ],
)
def test_system_switches(tmp_path: Path, key: str, attr: str) -> None:
    # ASTRA-sim: on iff the JSON value != 0 (the roofline needs its two rates, see below)
    for value, on in ((0, False), (1, True), (2, True), (0.0, False), (0.5, True)):
        cfg = load_system_json(
            write(tmp_path, "system.json", json.dumps({**ROOFLINE_READY, key: value}))
        )
        assert getattr(cfg, attr) is on
    for value in (True, False):
        message = system_raw(tmp_path, json.dumps({**ROOFLINE_READY, key: value}))
        assert f"field '{key}'" in message
        assert "use 0 or 1 (ASTRA-sim treats both true and false as on)" in message
    for value in ("0", None, [0]):
        message = system_raw(tmp_path, json.dumps({**ROOFLINE_READY, key: value}))
        assert f"field '{key}' must be 0 or 1" in message


@pytest.mark.parametrize(("value", "on"), [(1, True), (0, False), (True, True), (False, False), (1.5, True)])
def test_system_model_shared_bus(tmp_path: Path, value: Any, on: bool) -> None:
    # C++: int x = j["model-shared-bus"]; on iff x == 1
    assert system(tmp_path, model_shared_bus=value).model_shared_bus is on


@pytest.mark.parametrize("value", [2, -1, "1", None])
def test_system_bad_model_shared_bus(tmp_path: Path, value: Any) -> None:
    assert "'model-shared-bus'" in system_error(tmp_path, model_shared_bus=value)


def test_system_loggp_parameters_are_c_floats(tmp_path: Path) -> None:
    cfg = system(tmp_path, L=5, o=0.1, g=2.5, G=0.003)
    as_float32 = struct.unpack("f", struct.pack("f", 0.1))[0]
    assert cfg.L == 5.0 and cfg.g == 2.5
    assert cfg.o == as_float32 and cfg.o != 0.1
    assert cfg.G == struct.unpack("f", struct.pack("f", 0.003))[0]
    assert "field 'G' must be" in system_error(tmp_path, G=-1)


def test_system_performance_numbers(tmp_path: Path) -> None:
    cfg = system(tmp_path, peak_perf=900, local_mem_bw=1600.5, local_mem_trace_filename="out/mem")
    assert cfg.peak_perf_tflops == 900.0 and cfg.local_mem_bw_gbps == 1600.5
    assert cfg.local_mem_trace_filename == "out/mem"
    assert "field 'local-mem-bw' must be" in system_error(tmp_path, local_mem_bw=-1)
    assert "field 'peak-perf' must be" in system_error(tmp_path, peak_perf="900")
    assert "field 'local-mem-trace-filename'" in system_error(tmp_path, local_mem_trace_filename=3)


def test_system_bad_json_reports_line_and_column(tmp_path: Path) -> None:
    message = system_raw(tmp_path, '{\n  "preferred-dataset-splits": 4,\n}\n')
    assert message.startswith(str(tmp_path / "system.json"))
    assert "invalid JSON at line 3, column 1" in message


def test_system_rejects_nan(tmp_path: Path) -> None:
    assert "NaN is not a JSON number" in system_raw(tmp_path, '{"preferred-dataset-splits": NaN}')


@pytest.mark.parametrize("text", ["[1, 2]", '"text"', "4"])
def test_system_top_level_must_be_object(tmp_path: Path, text: str) -> None:
    assert "top level must be a JSON object" in system_raw(tmp_path, text)


def test_system_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"sys\.json: system JSON file does not exist"):
        load_system_json(tmp_path / "sys.json")


def test_system_accepts_utf8_bom(tmp_path: Path) -> None:
    path = tmp_path / "system.json"
    path.write_bytes(b'\xef\xbb\xbf{"preferred-dataset-splits": 2}')
    assert load_system_json(path).preferred_dataset_splits == 2


# ---------------------------------------------------------------------------- remote memory
def memory(tmp_path: Path, data: dict[str, Any]) -> RemoteMemoryConfig:
    return load_remote_memory_json(write(tmp_path, "mem.json", json.dumps(data)))


def memory_error(tmp_path: Path, data: dict[str, Any]) -> str:
    with pytest.raises(InputError) as info:
        memory(tmp_path, data)
    assert "mem.json" in str(info.value)
    return str(info.value)


def test_memory_absent_type_is_no_expansion(tmp_path: Path) -> None:
    cfg = memory(tmp_path, {"remote-mem-latency": 5})
    assert cfg.memory_type == "NO_MEMORY_EXPANSION" and cfg.bandwidth_bytes_per_ns == 0
    with pytest.raises(InputError, match="is empty; write memory-type"):  # (ASTRA-sim leaves it unset)
        memory(tmp_path, {})


def test_memory_per_npu_truncates_bandwidth(tmp_path: Path) -> None:
    cfg = memory(
        tmp_path,
        {"memory-type": "PER_NPU_MEMORY_EXPANSION", "remote-mem-latency": 100.9, "remote-mem-bw": 2.9},
    )
    assert (cfg.memory_type, cfg.latency_ns, cfg.bandwidth_bytes_per_ns) == (
        "PER_NPU_MEMORY_EXPANSION",
        100,
        2,
    )


@pytest.mark.parametrize("memory_type", ["PER_NPU_MEMORY_EXPANSION", "MEMORY_POOL"])
def test_memory_zero_bandwidth_is_rejected(tmp_path: Path, memory_type: str) -> None:
    message = memory_error(tmp_path, {"memory-type": memory_type, "remote-mem-bw": 0.5})
    assert "field 'remote-mem-bw' must be at least 1 B/ns" in message
    assert "remote-mem-bw" in memory_error(tmp_path, {"memory-type": memory_type})


def test_memory_no_expansion_allows_zero_bandwidth(tmp_path: Path) -> None:
    assert (
        memory(tmp_path, {"memory-type": "NO_MEMORY_EXPANSION", "remote-mem-bw": 0}).bandwidth_bytes_per_ns
        == 0
    )


def test_memory_per_node(tmp_path: Path) -> None:
    data = {
        "memory-type": "PER_NODE_MEMORY_EXPANSION",
        "num-nodes": 2,
        "num-npus-per-node": 4,
        "remote-mem-bw": 16,
    }
    cfg = memory(tmp_path, data)
    assert (cfg.num_nodes, cfg.num_npus_per_node) == (2, 4)
    cfg.check_total_npus(8)
    with pytest.raises(InputError, match="'num-nodes' is 2 but 9 NPUs"):
        cfg.check_total_npus(9)


@pytest.mark.parametrize(
    ("key", "value"), [("num-npus-per-node", 0), ("num-npus-per-node", None), ("num-nodes", 0)]
)
def test_memory_per_node_needs_nodes(tmp_path: Path, key: str, value: Any) -> None:
    data: dict[str, Any] = {
        "memory-type": "PER_NODE_MEMORY_EXPANSION",
        "num-nodes": 2,
        "num-npus-per-node": 4,
        "remote-mem-bw": 1,
    }
    if value is None:
        del data[key]
    else:
        data[key] = value
    assert f"field '{key}'" in memory_error(tmp_path, data)


def test_memory_node_keys_ignored_for_other_types(tmp_path: Path) -> None:
    cfg = memory(tmp_path, {"memory-type": "MEMORY_POOL", "num-npus-per-node": "x", "remote-mem-bw": 1})
    assert cfg.num_npus_per_node == 0


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"memory-type": "POOL"}, "memory-type"),
        ({"memory-type": 3}, "memory-type"),
        ({"remote-mem-latency": -1}, "remote-mem-latency"),
        ({"remote-mem-bw": "fast"}, "remote-mem-bw"),
    ],
)
def test_memory_bad_fields(tmp_path: Path, data: dict[str, Any], field: str) -> None:
    assert f"field '{field}'" in memory_error(tmp_path, data)


def test_memory_file_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        load_remote_memory_json(tmp_path / "mem.json")
    with pytest.raises(InputError, match="invalid JSON at line 1"):
        load_remote_memory_json(write(tmp_path, "mem.json", '{"memory-type": }'))
    with pytest.raises(InputError, match="top level must be a JSON object"):
        load_remote_memory_json(write(tmp_path, "mem.json", '["MEMORY_POOL"]'))


# ---------------------------------------------------------------------------- comm groups
# NB: tmp_path contains the test's name, and any path containing "empty" means "no groups",
# so tests that write a real comm-group file must not have that word in their names.
def groups_error(tmp_path: Path, text: str, total_npus: int = 8) -> str:
    with pytest.raises(InputError) as info:
        load_comm_groups_json(write(tmp_path, "groups.json", text), total_npus)
    assert "groups.json" in str(info.value)
    return str(info.value)


def test_comm_groups_keep_written_order(tmp_path: Path) -> None:
    path = write(tmp_path, "groups.json", '{"2": [3, 1], "1": [0, 2], "10": [7]}')
    groups = load_comm_groups_json(path, 8)
    assert groups == {2: (3, 1), 1: (0, 2), 10: (7,)}
    assert list(groups) == [2, 1, 10]


def test_comm_groups_none_or_marker_means_no_groups(tmp_path: Path) -> None:
    assert load_comm_groups_json(None, 8) == {}
    assert load_comm_groups_json("empty", 8) == {}
    assert load_comm_groups_json(tmp_path / "my_empty_groups.json", 8) == {}  # never opened
    marked = tmp_path / "empty_dir"
    marked.mkdir()
    assert load_comm_groups_json(write(marked, "groups.json", '{"1": [0]}'), 8) == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"0": [0, 1]}', "group '0' is not a group id"),
        ('{"a": [0, 1]}', "group 'a' is not a group id"),
        ('{"01": [0, 1]}', "group '01' is not a group id"),
        ('{"-1": [0, 1]}', "group '-1' is not a group id"),
        ('{"1": [0, 8]}', "group '1' lists 8, which is not an NPU id; the network has 8 NPUs"),
        ('{"1": [-1]}', "group '1' lists -1"),
        ('{"1": [0, 1.0]}', "group '1' lists 1.0"),
        ('{"1": [true]}', "group '1' lists true"),
        ('{"1": [2, 3, 2]}', "group '1' lists NPU 2 twice"),
        ('{"1": []}', "group '1' must be a non-empty list"),
        ('{"1": 3}', "group '1' must be a non-empty list"),
        ("[[0, 1]]", "top level must be a JSON object"),
        ('{"1": [0, 1]', "invalid JSON at line 1"),
    ],
)
def test_comm_group_errors(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in groups_error(tmp_path, text)


def test_comm_groups_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="groups.json: communicator-group JSON file does not exist"):
        load_comm_groups_json(tmp_path / "groups.json", 8)


# ---------------------------------------------------------------------------- reference inputs
def _reference_files() -> list[Any]:
    if not CONFIGS.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=NO_REFERENCE))]
    return [pytest.param(p, id=p.name) for p in sorted(CONFIGS.iterdir())]


def _comm_group_networks() -> dict[str, set[str]]:
    """comm-group file name -> network files of the reference cases that use it."""
    uses: dict[str, set[str]] = {}
    for case_path in sorted(CASES.glob("*.json")):
        case = json.loads(case_path.read_text())
        if case.get("comm_group"):
            uses.setdefault(Path(case["comm_group"]).name, set()).add(case["network"])
    return uses


@pytest.mark.parametrize("path", _reference_files())
def test_reference_config_loads(path: Path) -> None:
    name = path.name
    if path.suffix == ".yml":
        cfg = load_network_yaml(path)
        assert cfg.total_npus >= 4
    elif name.startswith("comm_group"):
        networks = _comm_group_networks().get(name)
        if not networks:
            pytest.skip(f"no reference case uses {name}")
        for network in networks:
            total = load_network_yaml(REFERENCE / network).total_npus
            groups = load_comm_groups_json(path, total)
            assert groups and all(gid > 0 for gid in groups)
    elif name.startswith("no_memory_expansion"):
        assert load_remote_memory_json(path).memory_type == "NO_MEMORY_EXPANSION"
    else:
        cfg = load_system_json(path)
        assert cfg.preferred_dataset_splits >= 1
        assert cfg.implementations or cfg.custom_implementations


@pytest.fixture
def configs() -> Path:
    if not CONFIGS.is_dir():
        pytest.skip(NO_REFERENCE)
    return CONFIGS


def test_reference_hgx_values(configs: Path) -> None:
    cfg = load_system_json(configs / "HGX-H100-validated-b41ccbb1.json")
    assert cfg.endpoint_delay_ns == 10
    assert cfg.active_chunks_per_dimension == 2
    assert cfg.preferred_dataset_splits == 4
    assert cfg.scheduling_policy == "LIFO" and cfg.collective_optimization == "localBWAware"
    assert cfg.local_mem_bw_gbps == 3350.0
    assert cfg.implementations == {
        k: ("ring",) for k in ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")
    }
    assert not cfg.roofline_enabled
    net = load_network_yaml(configs / "HGX-H100-validated-74bc37ae.yml")
    assert net == NetworkConfig(
        ("Switch",), (8,), (400.0,), (936.25,), str(configs / "HGX-H100-validated-74bc37ae.yml")
    )


def test_reference_injection_scale_applies_to_present_delay(configs: Path) -> None:
    assert load_system_json(configs / "system-009bdf02.json").endpoint_delay_ns == 1
    assert (
        load_system_json(configs / "HGX-H100-validated-b41ccbb1.json", injection_scale=2.5).endpoint_delay_ns
        == 25
    )


def test_reference_stage_system_switches(configs: Path) -> None:
    cfg = load_system_json(configs / "system-266ff464.json")
    assert cfg.roofline_enabled and cfg.track_local_mem and not cfg.trace_enabled and not cfg.replay_only
    assert (cfg.preferred_dataset_splits, cfg.active_chunks_per_dimension) == (10, 4)
    assert cfg.peak_perf_tflops == 900.0 and cfg.local_mem_bw_gbps == 3000.0
    assert cfg.implementations["all_reduce"] == ("ring", "ring", "ring")


def test_reference_custom_collective_system(configs: Path) -> None:
    cfg = load_system_json(configs / "custom_collective-61641914.json")
    assert cfg.scheduling_policy == "FIFO" and cfg.preferred_dataset_splits == 1
    assert cfg.collective_optimization == "baseline"  # key absent
    assert cfg.implementations == {}
    assert cfg.custom_implementations == {
        "all_reduce": "workloads/examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce"
    }


def test_reference_multi_dim_network_and_groups(configs: Path) -> None:
    net = load_network_yaml(configs / "network-2b05e11e.yml")
    assert net.topology == ("Ring", "Ring", "Ring") and net.total_npus == 64 and net.num_dims == 3
    assert net.bandwidth_gbps == (200.0, 100.0, 50.0) and net.latency_ns == (100.0, 300.0, 500.0)
    groups = load_comm_groups_json(configs / "comm_group-614bbe08.json", 8)
    assert groups[1] == (0, 1, 2, 3) and groups[3] == (0, 4) and groups[14] == (7,)
    assert len(groups) == 14


def test_accepted_but_unmodelled_keys_warn(tmp_path) -> None:
    import json

    from simpy_astra.config import load_system_json

    path = tmp_path / "sys.json"
    path.write_text(json.dumps({"preferred-dataset-splits": 1, "L": 5.5, "o": 0, "model-shared-bus": 1,
                                "trace-enabled": 0}))
    ignored = load_system_json(str(path)).ignored
    assert len(ignored) == 2  # L and model-shared-bus; zeros say nothing
    assert all(line.startswith(f"{path}: field '") and "changes nothing" in line for line in ignored)
    assert "'L'" in ignored[0] and "'model-shared-bus'" in ignored[1]
