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

from simpy_astra.cli.main import EXIT_INPUT_ERROR, EXIT_STALLED, main
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.schema import (
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


# ------------------------------------------------------------------ issue 16: every bad input, one line
ROOT = Path(__file__).resolve().parents[1]
DEFAULT = (ROOT / "scenarios" / "default.yaml").read_text()
STEP = ROOT / "scenarios" / "workloads" / "step_8npus_1MB" / "step"


def scenario(text: str = DEFAULT, name: str = "scen.yaml") -> str:
    """The default scenario, edited, in the working directory (its workload path made absolute)."""
    Path(name).write_text(text.replace("workload: workloads/step_8npus_1MB/step", f"workload: {STEP}"))
    return name


def expect_cli_error(capsys, argv: list[str], *needles: str) -> str:
    """Exit status 2 and exactly one ``error:`` line on stderr containing every needle."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code == EXIT_INPUT_ERROR, (code, err)
    line = error_line(err)
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


def test_directory_as_scenario(capsys):
    Path("adir").mkdir()
    expect_cli_error(capsys, ["run", "adir"], "adir", "is a directory")
    expect_cli_error(capsys, ["adir"], "adir", "is a directory")


def test_non_utf8_scenario(capsys):
    Path("bad.yaml").write_bytes(b"name: \xff\xfe\n")
    expect_cli_error(capsys, ["run", "bad.yaml"], "bad.yaml", "not UTF-8")


def test_non_utf8_network_file(capsys):
    write_workload({0: [comp(0)], 1: [comp(0)]})
    write_configs()
    Path("net.yml").write_bytes(b"topology: [ Ring ]\n# \xff\n")
    expect_input_error(capsys, "net.yml", "not UTF-8")


@pytest.mark.parametrize(("line", "field"), [
    ("num_queues_per_dim: abc", "num_queues_per_dim"),
    ("injection_scale: [1]", "injection_scale"),
    ("num_passes: -1", "num_passes"),
    ("backend: [x]", "backend"),
])
def test_scenario_field_type_errors(capsys, line, field):
    path = scenario(DEFAULT + line + "\n")
    line = expect_cli_error(capsys, ["run", path], f"{path}: field '{field}'")
    assert "--num-queues-per-dim" not in line


@pytest.mark.parametrize(("system", "field"), [
    ("  roofline-enabled: 1\n  peak-perf: 0\n", "peak-perf"),
    ("  roofline-enabled: 1\n  peak-perf: 100\n", "local-mem-bw"),
])
def test_roofline_needs_its_rates(capsys, system, field):
    text = DEFAULT.replace("  local-mem-bw: 50\n", "" if field == "local-mem-bw" else "  local-mem-bw: 50\n")
    path = scenario(text.replace("  preferred-dataset-splits: 4\n", "  preferred-dataset-splits: 4\n" + system))
    # an inline block is named by the scenario file and its key, not by a temporary file
    expect_cli_error(capsys, ["run", path], f"{path}: system: field '{field}'", "roofline")


@pytest.mark.parametrize(("old", "new", "field"), [
    ("latency: [500.0]", "latency: [1e300]", "latency[0]"),
    ("bandwidth: [50.0]", "bandwidth: [1e-300]", "bandwidth[0]"),
])
def test_network_times_beyond_64_bit_cycles(capsys, old, new, field):
    path = scenario(DEFAULT.replace(old, new))
    expect_cli_error(capsys, ["run", path], f"{path}: network: field '{field}'", "64-bit")


def test_yaml_date_where_a_size_belongs(capsys):
    path = scenario(DEFAULT.replace("preferred-dataset-splits: 4", "preferred-dataset-splits: 2024-01-01"))
    expect_cli_error(capsys, ["run", path], f"{path}: system: field 'preferred-dataset-splits'", '"2024-01-01"')


def test_scientific_numbers_in_network_yaml_are_numbers(capsys):
    # yaml-cpp reads 5e1 and 1e-3 as numbers; YAML 1.1 (PyYAML) would leave them strings
    path = scenario(DEFAULT.replace("latency: [500.0]", "latency: [5e2]").replace("bandwidth: [50.0]", "bandwidth: [5e1]"))
    assert main(["run", "--quiet", path]) == 0
    plain = scenario(name="plain.yaml")
    assert main(["run", "--quiet", plain]) == 0
    out = capsys.readouterr().out
    half = len(out) // 2
    assert out[:half] == out[half:]  # the same figures as 500.0 / 50.0
    write_workload({0: [comp(0)], 1: [comp(0)]})
    write_configs()
    Path("net.yml").write_text("topology: [ Ring ]\nnpus_count: [ 2 ]\nbandwidth: [ 1e-3 ]\nlatency: [ 5e1 ]\n")
    code, _out, err = run(capsys)
    assert code == 0, err


@pytest.mark.parametrize(("flag", "value", "needle"), [
    ("--json-out", "scen.yaml/x.json", "is not a folder"),
    ("--json-out", "missing/x.json", "does not exist"),
    ("--json-out", "", "empty"),
    ("--csv-out", "scen.yaml/dir", "is not a folder"),
    ("--trace-out", "missing/t.json", "does not exist"),
])
def test_unwritable_outputs_refused_before_the_run(capsys, flag, value, needle):
    path = scenario()
    line = expect_cli_error(capsys, ["run", path, flag, value], flag, needle)
    assert line  # and nothing was simulated: no figures on stdout (checked by expect_cli_error's capture)


def test_negative_message_size_in_et(capsys):
    write_workload({0: [coll(0, size=-1024)], 1: [coll(0, size=-1024)]})
    write_configs()
    expect_input_error(capsys, "w.0.et", "node 0", "comm_size", "-1024")


def test_negative_send_recv_size_in_et(capsys):
    write_workload({0: [send(0, dst=1, size=-8)], 1: [recv(0, src=0, size=-8)]})
    write_configs()
    expect_input_error(capsys, "w.0.et", "comm_size", "-8")


def _text(body: str, header: str = "DATA\n1\n") -> str:
    Path("model.txt").write_text(header + body)
    return "model.txt"


@pytest.mark.parametrize(("header", "body", "needles"), [
    ("DATA\n1\n", "l0 -1 5 NONE 0 5 NONE 0 5 ALLREDUCEX 1024 10\n", ("model.txt:3", "column 10", "ALLREDUCEX")),
    ("DATA\n-1\n", "l0 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 10\n", ("model.txt:2", "-1")),
    ("DATA\n1\n", "l0 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE -1024 10\n", ("model.txt:3", "column 11", "-1024")),
    ("DATA\n1\n", "l0 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 99999999999999999999 10\n", ("column 11", "64-bit")),
    ("DATA\n1\n", "l0 -1 99999999999999999999 NONE 0 5 NONE 0 5 ALLREDUCE 8 10\n", ("column 3", "64-bit")),
])
def test_bad_text_workloads(capsys, tmp_path, monkeypatch, header, body, needles):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    write_configs()
    path = _text(body, header)
    code = main([f"--workload-configuration={path}", "--system-configuration=sys.json",
                 "--network-configuration=net.yml", "--remote-memory-configuration=mem.json"])
    _out, err = capsys.readouterr()
    assert code == EXIT_INPUT_ERROR, err
    line = error_line(err)
    for needle in needles:
        assert needle in line
    # the converter refuses the same file, and writes nothing
    expect_cli_error(capsys, ["convert", "text", "--input", path, "--output", "out/m", "--num-npus", "2",
                              "--num-passes", "1"], needles[0])
    assert not Path("out").exists()


def test_text_workload_checked_even_when_cached(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    write_configs()
    good = _text("l0 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 10\n")
    flags = ["--system-configuration=sys.json", "--network-configuration=net.yml",
             "--remote-memory-configuration=mem.json"]
    assert main([f"--workload-configuration={good}", *flags]) == 0
    capsys.readouterr()
    Path("model.txt").write_text("DATA\n1\nl0 -1 5 NONE 0 5 NONE 0 5 ALLGATHR 1024 10\n")
    code = main(["--workload-configuration=model.txt", *flags])
    assert code == EXIT_INPUT_ERROR
    assert "ALLGATHR" in error_line(capsys.readouterr().err)


def test_per_node_remote_memory_with_too_few_nodes(capsys):
    write_workload({0: [comp(0)], 1: [comp(0)]})
    write_configs()
    Path("mem.json").write_text(json.dumps({"memory-type": "PER_NODE_MEMORY_EXPANSION", "num-nodes": 1,
                                            "num-npus-per-node": 1, "remote-mem-bw": 10}))
    expect_input_error(capsys, "mem.json", "field 'num-nodes'", "need 2 nodes")


@pytest.mark.parametrize("argv", [
    ["generate", "microbench", "--collective", "all_reduce", "--size", "1024", "--num-npus", "2", "--output", ""],
    ["generate", "transformer", "--output", ""],
    ["convert", "text", "--input", "model.txt", "--output", "", "--num-npus", "2", "--num-passes", "1"],
    ["generate", "microbench", "--collective", "all_reduce", "--size", "1024", "--num-npus", "2",
     "--output", "sub/"],
])
def test_empty_output_prefix(capsys, argv):
    _text("l0 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 10\n")
    before = set(Path().iterdir())
    expect_cli_error(capsys, argv, "--output", "prefix")
    assert set(Path().iterdir()) == before  # no hidden .0.et files


def test_microbench_size_beyond_64_bits(capsys):
    expect_cli_error(capsys, ["generate", "microbench", "--collective", "all_reduce", "--size",
                              str(2**63), "--num-npus", "2", "--output", "mb/x"], "--size", "64-bit")
    assert not Path("mb").exists()


def test_transformer_million_way_data_parallel_refused_before_writing(capsys):
    expect_cli_error(capsys, ["generate", "transformer", "--dp", "1000000", "--batch", "1000000",
                              "--output", "tr/t"], "'dp'", "1000000 NPUs")
    assert not Path("tr").exists()


def test_transformer_dimensions_beyond_64_bits(capsys):
    expect_cli_error(capsys, ["generate", "transformer", "--dmodel", str(2**40), "--head", "1", "--kvhead", "1",
                              "--dff", str(2**40), "--num-stacks", "1", "--output", "tr/t"], "64-bit")
    assert not Path("tr").exists()


def test_failed_generator_leaves_no_files(capsys, monkeypatch):
    from simpy_astra.workloads import microbench

    calls = []
    real = microbench.write_et

    def fail_third(path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(path, *args, **kwargs)

    monkeypatch.setattr(microbench, "write_et", fail_third)
    with pytest.raises(KeyboardInterrupt):
        microbench.write_microbench("all_reduce", 1024, 4, "out/mb")
    assert not Path("out").exists()


def test_comm_group_path_containing_empty_is_ignored_with_a_warning(capsys):
    write_workload({0: [comp(0)], 1: [comp(0)]})
    write_configs()
    Path("groups_nonempty.json").write_text('{"1": [0, 1]}')
    code, _out, err = run(capsys, groups="groups_nonempty.json")
    assert code == 0
    assert "warning: groups_nonempty.json: comm-group file ignored" in err
    code, _out, err = run(capsys, groups="empty")  # the default spelling says so on purpose
    assert code == 0 and "warning" not in err


def test_inline_block_errors_name_the_scenario(capsys):
    path = scenario(DEFAULT.replace("npus_count: [8]", "npus_count: [one]"))
    line = expect_cli_error(capsys, ["run", path], f"{path}: network: field 'npus_count[0]'")
    assert "/tmp" not in line.split(path)[0] and "simpy-astra-" not in line


def test_unknown_command_is_named(capsys):
    expect_cli_error(capsys, ["swep"], "swep", "neither a scenario YAML nor a command")


def test_inline_comm_groups_with_number_keys(capsys):
    ok = scenario(DEFAULT + "comm_groups: {1: [0, 1, 2, 3, 4, 5, 6, 7]}\n")
    assert main(["run", "--quiet", ok]) == 0
    capsys.readouterr()
    bad = scenario(DEFAULT + "comm_groups: {1: [0, 99]}\n", name="bad.yaml")
    expect_cli_error(capsys, ["run", bad], "bad.yaml: comm_groups: group '1'", "99")
