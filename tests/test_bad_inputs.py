"""Bad inputs: each ends with one ``error: ...`` line on stderr and a non-zero exit.

Every case builds a tiny ET set and tiny configs in ``tmp_path`` and runs the CLI in-process.
Input errors exit with 2 and name the file and the field or node; a run that can no longer
progress (unmatched send/recv, a collective a group member never joins) exits with 3 and
names the NPUs and the nodes they wait on. No case may print a Python traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simpy_astra.cli import EXIT_INPUT_ERROR, EXIT_STALLED, main
from workloads.chakra_et import make_node, write_et
from workloads.chakra_schema import (
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    INVALID_NODE,
    METADATA_NODE,
)

ALL_REDUCE, REDUCE, ALL_GATHER = 0, 1, 2
ALL_TO_ALL = 6

SYSTEM = {
    "scheduling-policy": "LIFO",
    "endpoint-delay": 10,
    "active-chunks-per-dimension": 1,
    "preferred-dataset-splits": 1,
    "all-reduce-implementation": ["ring"],
    "all-gather-implementation": ["ring"],
    "reduce-scatter-implementation": ["ring"],
    "all-to-all-implementation": ["ring"],
    "collective-optimization": "baseline",
}


# ------------------------------------------------------------------------------ helpers
def comp(nid: int, deps=(), name: str | None = None):
    return make_node(nid, name or f"comp{nid}", COMP_NODE, deps=deps, duration_micros=5)


def coll(nid: int, comm_type: int = ALL_REDUCE, size: object = 1024, deps=(), pg: str | None = None):
    attrs: dict[str, object] = {"comm_type": comm_type, "is_cpu_op": False}
    if size is not None:
        attrs["comm_size"] = size
    if pg is not None:
        attrs["pg_name"] = pg
    return make_node(nid, f"coll{nid}", COMM_COLL_NODE, deps=deps, attrs=attrs)


def send(nid: int, dst: int, tag: int = 7, size: int = 1024):
    attrs = {"comm_dst": dst, "comm_size": size, "comm_tag": tag, "is_cpu_op": False}
    return make_node(nid, f"send{nid}", COMM_SEND_NODE, attrs=attrs)


def recv(nid: int, src: int, tag: int = 7, size: int = 1024):
    attrs = {"comm_src": src, "comm_size": size, "comm_tag": tag, "is_cpu_op": False}
    return make_node(nid, f"recv{nid}", COMM_RECV_NODE, attrs=attrs)


def write_workload(ranks: dict[int, list], prefix: str = "w") -> None:
    for rank, nodes in ranks.items():
        write_et(f"{prefix}.{rank}.et", nodes)


def write_configs(npus: int = 2, system: dict | None = None) -> None:
    Path("net.yml").write_text(
        f"topology: [ Ring ]\nnpus_count: [ {npus} ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n"
    )
    Path("sys.json").write_text(json.dumps(SYSTEM if system is None else system))
    Path("mem.json").write_text(json.dumps({"memory-type": "NO_MEMORY_EXPANSION"}))


def run(capsys, *extra: str, groups: str | None = None) -> tuple[int, str, str]:
    argv = [
        "--workload-configuration=w",
        "--system-configuration=sys.json",
        "--network-configuration=net.yml",
        "--remote-memory-configuration=mem.json",
        *extra,
    ]
    if groups is not None:
        argv.append(f"--comm-group-configuration={groups}")
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def error_line(err: str) -> str:
    """The single ``error: ...`` line (nothing else may be on stderr)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {err!r}"
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


def expect_input_error(capsys, *needles: str, extra: tuple[str, ...] = (), groups: str | None = None) -> str:
    code, _out, err = run(capsys, *extra, groups=groups)
    assert code == EXIT_INPUT_ERROR, err
    line = error_line(err)
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


def expect_stalled(capsys, *needles: str, groups: str | None = None) -> tuple[str, str]:
    """(the error line, stdout): NPUs that did finish still print their figures."""
    code, out, err = run(capsys, groups=groups)
    assert code == EXIT_STALLED, err
    line = error_line(err)
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line, out


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


# ------------------------------------------------------------------------------ ET files
def test_missing_et_file_for_one_rank(capsys):
    write_configs(npus=4)
    write_workload({0: [comp(1)], 1: [comp(1)], 3: [comp(1)]})
    expect_input_error(capsys, "w.2.et", "NPU 2", "does not exist")


def test_truncated_et(capsys):
    write_configs()
    write_workload({0: [comp(1), comp(2, deps=[1])], 1: [comp(1)]})
    data = Path("w.0.et").read_bytes()
    Path("w.0.et").write_bytes(data[:-3])
    expect_input_error(capsys, "w.0.et", "node 1", "truncated")


def test_et_that_is_not_protobuf(capsys):
    write_configs()
    write_workload({1: [comp(1)]})
    Path("w.0.et").write_text("not a protobuf file at all\n" * 20)
    expect_input_error(capsys, "w.0.et", "record 0", "Chakra ET")


def test_et_that_is_short_text(capsys):
    write_configs()
    write_workload({1: [comp(1)]})
    Path("w.0.et").write_text("hello\n")
    expect_input_error(capsys, "w.0.et", "record 0", "Chakra ET")


def test_unknown_node_type(capsys):
    write_configs()
    write_workload({0: [comp(1), make_node(2, "batch", 9, deps=[1])], 1: [comp(1)]})
    expect_input_error(capsys, "w.0.et", "node 2", "type 9")


def test_unknown_collective_type(capsys):
    write_configs()
    write_workload({0: [coll(1, comm_type=REDUCE)], 1: [coll(1, comm_type=REDUCE)]})
    expect_input_error(capsys, "w.0.et", "node 1", "REDUCE", "ALL_REDUCE")


def test_dependency_on_missing_id(capsys):
    write_configs()
    write_workload({0: [comp(1), comp(2, deps=[42])], 1: [comp(1)]})
    expect_input_error(capsys, "w.0.et", "node 2", "node 42")


def test_dependency_cycle(capsys):
    write_configs()
    write_workload({0: [comp(1), comp(2, deps=[1, 3]), comp(3, deps=[2])], 1: [comp(1)]})
    expect_input_error(capsys, "w.0.et", "node 3", "dependency cycle 3 -> 2 -> 3")


def test_more_et_files_than_npus(capsys):
    write_configs(npus=2)
    write_workload({0: [comp(1)], 1: [comp(1)], 2: [comp(1)]})
    expect_input_error(capsys, "w.2.et", "net.yml", "2 NPUs")


def test_fewer_et_files_than_npus(capsys):
    write_configs(npus=4)
    write_workload({0: [comp(1)], 1: [comp(1)]})
    expect_input_error(capsys, "w.2.et", "net.yml", "4 NPUs")


def test_missing_required_attribute(capsys):
    write_configs()
    write_workload({0: [coll(1, size=None)], 1: [coll(1)]})
    expect_input_error(capsys, "w.0.et", "node 1", "comm_size", "missing")


def test_float_comm_size(capsys):
    write_configs()
    write_workload({0: [coll(1, size=1024.0)], 1: [coll(1)]})
    expect_input_error(capsys, "w.0.et", "node 1", "comm_size", "integer")


# ------------------------------------------------------------------------------ configs
def test_unknown_collective_implementation(capsys):
    write_configs(system={**SYSTEM, "all-reduce-implementation": ["fancyRing"]})
    write_workload({0: [coll(1)], 1: [coll(1)]})
    expect_input_error(capsys, "sys.json", "all-reduce-implementation[0]", "fancyRing", "ring")


def test_zero_preferred_dataset_splits(capsys):
    write_configs(system={**SYSTEM, "preferred-dataset-splits": 0})
    write_workload({0: [coll(1)], 1: [coll(1)]})
    expect_input_error(capsys, "sys.json", "preferred-dataset-splits", ">= 1")


def test_bad_yaml_in_network_file(capsys):
    write_configs()
    Path("net.yml").write_text("topology: [ Ring\nnpus_count: [ 2 ]\n")
    write_workload({0: [comp(1)], 1: [comp(1)]})
    expect_input_error(capsys, "net.yml", "invalid YAML", "line")


def test_bad_json_in_system_file(capsys):
    write_configs()
    Path("sys.json").write_text('{"preferred-dataset-splits": 1,, }')
    write_workload({0: [comp(1)], 1: [comp(1)]})
    expect_input_error(capsys, "sys.json", "invalid JSON", "line 1")


def test_halving_doubling_for_all_to_all(capsys):
    write_configs(system={**SYSTEM, "all-to-all-implementation": ["halvingDoubling"]})
    write_workload({0: [coll(1, comm_type=ALL_TO_ALL)], 1: [coll(1, comm_type=ALL_TO_ALL)]})
    expect_input_error(capsys, "sys.json", "all-to-all-implementation", "halvingDoubling", "all_to_all")


def test_double_binary_tree_on_group_subset(capsys):
    write_configs(npus=4, system={**SYSTEM, "all-reduce-implementation": ["doubleBinaryTree"]})
    Path("groups.json").write_text(json.dumps({"1": [0, 1]}))
    write_workload({0: [coll(1, pg="1")], 1: [coll(1, pg="1")], 2: [comp(1)], 3: [comp(1)]})
    expect_input_error(
        capsys, "sys.json", "all-reduce-implementation", "doubleBinaryTree", "group 1", groups="groups.json"
    )


def test_custom_collective_with_several_splits(capsys):
    write_configs(
        system={**SYSTEM, "preferred-dataset-splits": 4, "all-reduce-implementation-custom": ["custom/ar"]}
    )
    Path("custom").mkdir()
    for rank in range(2):
        write_et(f"custom/ar.{rank}.et", [send(1, 1 - rank), recv(2, 1 - rank)])
    write_workload({0: [coll(1, size=4096)], 1: [coll(1, size=4096)]})
    expect_input_error(capsys, "w.0.et", "node 1", "sys.json", "preferred-dataset-splits", "custom/ar")


def test_all_gather_smaller_than_splits(capsys):
    write_configs(system={**SYSTEM, "preferred-dataset-splits": 4})
    write_workload({0: [coll(1, comm_type=ALL_GATHER, size=3)], 1: [coll(1, comm_type=ALL_GATHER, size=3)]})
    expect_input_error(capsys, "w.0.et", "node 1", "comm_size 3", "sys.json", "preferred-dataset-splits")


def test_unknown_network_backend(capsys):
    write_configs()
    write_workload({0: [comp(1)], 1: [comp(1)]})
    expect_input_error(
        capsys, "--network-backend", "garnet", "congestion_unaware", extra=("--network-backend=garnet",)
    )


# ------------------------------------------------------------------------------ stalls
def test_send_never_received(capsys):
    # sends complete on arrival (as in the reference), so both NPUs finish with figures;
    # the lost message is reported as a warning naming the node
    write_configs()
    write_workload({0: [send(1, dst=1)], 1: [comp(1)]})
    code, out, err = run(capsys)
    assert code == 0, err
    assert "sys[0] finished" in out and "sys[1] finished" in out
    warning = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert len(warning) == 1, err
    assert "NPU 0 node 1 (COMM_SEND 'send1') sent 1024 B to NPU 1 with tag 7" in warning[0]
    assert "NPU 1 never posted a matching receive" in warning[0]
    assert "Traceback" not in out + err


def test_recv_never_sent(capsys):
    write_configs()
    write_workload({0: [comp(1)], 1: [comp(1), recv(2, src=0)]})
    line, out = expect_stalled(
        capsys,
        "1 of 2 NPU(s) unfinished",
        "NPU 1 waits on node 2 (COMM_RECV 'recv2')",
        "from NPU 0 with tag 7, which NPU 0 never sent",
    )
    assert "sys[0] finished" in out and "sys[1] finished" not in out


def test_collective_one_group_member_never_joins(capsys):
    write_configs(npus=4)
    Path("groups.json").write_text(json.dumps({"1": [0, 1]}))
    write_workload({0: [comp(1), coll(2, deps=[1], pg="1")], 1: [comp(1)], 2: [comp(1)], 3: [comp(1)]})
    line, out = expect_stalled(
        capsys,
        "1 of 4 NPU(s) unfinished",
        "NPU 0 waits on node 2 (COMM_COLL 'coll2', ALL_REDUCE on communicator group 1",
        "which NPU 1 never sent",
        groups="groups.json",
    )
    assert "sys[1] finished" in out and "sys[0] finished" not in out


# ------------------------------------------------------------------------------ not bad inputs
def test_metadata_and_invalid_only_graphs_finish(capsys):
    write_configs()
    nodes = [
        make_node(1, "meta", METADATA_NODE),
        make_node(2, "inv", INVALID_NODE, deps=[1]),
        make_node(3, "inv2", INVALID_NODE, deps=[2]),
        make_node(4, "inv3", INVALID_NODE),
    ]
    write_workload({0: nodes, 1: nodes})
    code, out, err = run(capsys)
    assert code == 0, err
    assert err == ""
    assert "sys[0] finished" in out and "sys[1] finished" in out


def test_long_chain_of_zero_time_nodes_finishes(capsys):
    nodes = [make_node(1, "meta", METADATA_NODE)]
    nodes += [make_node(i, f"inv{i}", INVALID_NODE, deps=[i - 1]) for i in range(2, 3000)]
    write_configs()
    write_workload({0: nodes, 1: nodes})
    code, out, err = run(capsys)
    assert code == 0, err
    assert "sys[0] finished" in out and "sys[1] finished" in out
