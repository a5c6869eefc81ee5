"""Bad inputs: each ends with one ``error: ...`` line on stderr and a non-zero exit.

Every case builds a tiny ET set and tiny configs in ``tmp_path`` and runs the CLI in-process.
Input errors exit with 2 and name the file and the field or node; a run that can no longer
progress (unmatched send/recv, a collective a group member never joins) exits with 3 and
names the NPUs and the nodes they wait on. No case may print a Python traceback.
"""

from __future__ import annotations

import json
import os
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
from tests.wrapped_lines import plain

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
    given = {flag.split("=", 1)[0] for flag in extra}  # a flag in extra replaces the default (once: twice is refused)
    argv = [*(flag for flag in ("--workload-configuration=w", "--system-configuration=sys.json",
                                "--network-configuration=net.yml", "--remote-memory-configuration=mem.json")
              if flag.split("=", 1)[0] not in given), *extra]
    if groups is not None:
        argv.append(f"--comm-group-configuration={groups}")
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, plain(err)  # a warning wrapped within the pipe's width: one line again


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
    kept = "".join(ln for ln in DEFAULT.splitlines(keepends=True) if not ln.startswith(f"{field}:"))
    path = scenario(kept + line + "\n")  # replaced, not given twice (a duplicate key is an error)
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
def test_network_times_beyond_the_horizon(capsys, old, new, field):
    path = scenario(DEFAULT.replace(old, new))
    expect_cli_error(capsys, ["run", path], f"{path}: network: field '{field}'", "past the horizon")


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


@pytest.mark.skipif(not os.path.isfile("/proc/version"), reason="needs Linux's /proc")
def test_an_output_where_no_file_can_be_made_is_refused_before_the_run(capsys):
    """``/proc`` takes no new file, yet ``os.access`` says it does to root: the run used to
    simulate, print its figures and only then fail to write them (as "does not exist")."""
    path = scenario()
    line = expect_cli_error(capsys, ["run", path, "--json-out", "/proc/version"], "--json-out", "/proc/version")
    assert "does not exist" not in line
    code = main(["run", path, "--json-out", "/proc/version"])
    assert code == EXIT_INPUT_ERROR and capsys.readouterr().out == ""  # nothing was simulated


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


# ------------------------------------------------------------------ issue 27: every class of hostile input
# Each class has several cases; each case is exit 2 and one line naming the file and the field
# (or a warning and a normal run, where the issue asks for a warning).
BASE = str(ROOT / "scenarios" / "default.yaml")


def sweep_file(text: str, name: str = "sw.yaml") -> str:
    Path(name).write_text(text)
    return name


def warned_run(capsys, argv: list[str], *needles: str) -> str:
    """Exit 0, the figures printed, and a ``warning:`` line holding every needle."""
    code = main(argv)
    out, err = capsys.readouterr()
    err = plain(err)  # a warning wrapped within the pipe's width: one line again
    assert "Traceback" not in out + err
    assert code == 0, err
    assert "finished" in out
    line = next((ln for ln in err.splitlines() if ln.startswith("warning:") and needles[0] in ln), "")
    for needle in needles:
        assert needle in line, f"{needle!r} not in a warning of {err!r}"
    return line


# -- crashes: the sweep's loaders read files as `run` does
@pytest.mark.parametrize("make", [
    lambda: Path("sw.yaml").mkdir(),
    lambda: Path("sw.yaml").write_bytes(b"base: \xff\xfe\n"),
    lambda: Path("sw.yaml").write_text(f"base: {BASE}\naxes: {{network.bandwidth: [1, 2]}}\nname: \"\\x\"\n"),
])
def test_a_bad_sweep_file_is_one_line(capsys, make):
    make()
    expect_cli_error(capsys, ["sweep", "sw.yaml", "--list", "--no-plots"], "sw.yaml")


@pytest.mark.parametrize("make, needle", [
    (lambda: Path("base.yaml").mkdir(), "is a directory"),
    (lambda: Path("base.yaml").write_bytes(b"workload: \xff\n"), "not UTF-8"),
    (lambda: Path("base.yaml").write_text("workload: x\nnetwork: {a: 1, a: 2}\n"), "duplicate key"),
])
def test_a_bad_sweep_base_is_one_line(capsys, make, needle):
    make()
    path = sweep_file("base: base.yaml\naxes: {network.bandwidth: [1, 2]}\n")
    expect_cli_error(capsys, ["sweep", path, "--list", "--no-plots"], "base.yaml", needle)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_sweep_and_scenario_files(capsys):
    path = sweep_file(f"base: {BASE}\naxes: {{network.bandwidth: [1, 2]}}\n")
    os.chmod(path, 0)
    expect_cli_error(capsys, ["sweep", path, "--list", "--no-plots"], path, "cannot be read")
    other = scenario()
    os.chmod(other, 0)
    expect_cli_error(capsys, ["run", other], other, "cannot be read")


@pytest.mark.parametrize("argv_of", [
    lambda long: ["run", long + ".yaml"],
    lambda long: ["sweep", long + ".yaml", "--list", "--no-plots"],
    lambda long: ["--workload-configuration=w", f"--system-configuration={long}.json",
                  "--network-configuration=net.yml", "--remote-memory-configuration=mem.json"],
])
def test_path_names_too_long_for_the_os(capsys, argv_of):
    write_configs()
    write_workload({0: [comp(1)], 1: [comp(1)]})
    line = expect_cli_error(capsys, argv_of("x" * 5000))
    assert "xxx" in line and len(line) < 400  # names the file, shortened


@pytest.mark.parametrize("where", ["network", "system"])
def test_yaml_nested_thousands_deep(capsys, where):
    deep = "[" * 5000 + "]" * 5000
    path = scenario(DEFAULT + f"description: {deep}\n" if where == "system" else
                    DEFAULT.replace("bandwidth: [50.0]", f"bandwidth: {deep}"))
    expect_cli_error(capsys, ["run", path], path, "nest more than")


def test_json_nested_thousands_deep(capsys):
    write_configs()
    write_workload({0: [comp(1)], 1: [comp(1)]})
    Path("sys.json").write_text('{"preferred-dataset-splits": 1, "x": ' + "[" * 5000 + "]" * 5000 + "}")
    expect_input_error(capsys, "sys.json", "nest more than")
    Path("sys.json").write_text('{"preferred-dataset-splits": 1, "x": ' + "[" * 150 + "]" * 150 + "}")
    expect_input_error(capsys, "sys.json", "nest more than")


def test_a_number_of_thousands_of_digits_is_one_line(capsys):
    """Python reads at most 4,300 digits: the JSON reader's ValueError was an internal error
    (status 1), the YAML one named sys.set_int_max_str_digits as the fix."""
    write_configs()
    write_workload({0: [comp(1)], 1: [comp(1)]})
    Path("sys.json").write_text(json.dumps(SYSTEM).replace('"endpoint-delay": 10', '"endpoint-delay": ' + "9" * 5000))
    expect_input_error(capsys, "sys.json", "5,000 digits", "check the value")
    Path("net.yml").write_text(f"topology: [ Ring ]\nnpus_count: [ {'2' * 5000} ]\nbandwidth: [ 50 ]\n"
                               f"latency: [ 500 ]\n")
    Path("sys.json").write_text(json.dumps(SYSTEM))
    line = expect_input_error(capsys, "net.yml", "line 2", "5,000 digits", "check the value")
    assert "set_int_max_str_digits" not in line


def test_sweep_nested_thousands_deep(capsys):
    path = sweep_file(f"base: {BASE}\naxes: {{network.bandwidth: " + "[" * 3000 + "]" * 3000 + "}\n")
    expect_cli_error(capsys, ["sweep", path, "--list", "--no-plots"], path, "nest more than")


PLUGINS = {
    "raises": "x = 1 / 0\n",
    "syntax": "def broken(:\n",
    "imports": "import no_such_module_for_simpy_astra_tests\n",
}


@pytest.mark.parametrize("kind", sorted(PLUGINS))
def test_a_plugin_that_fails_is_reported_as_the_users(capsys, monkeypatch, kind):
    monkeypatch.syspath_prepend(os.getcwd())
    Path(f"plug_{kind}.py").write_text(PLUGINS[kind])
    path = scenario(DEFAULT + f"plugins: [plug_{kind}]\n")
    line = expect_cli_error(capsys, ["run", path], "plugins", f"plug_{kind}", "--debug")
    assert "simpy-astra bug" not in line and "internal error" not in line
    assert f"plug_{kind}.py:1" in line  # where in their code


def test_debug_shows_the_plugins_traceback(capsys, monkeypatch):
    monkeypatch.syspath_prepend(os.getcwd())
    Path("plug_deep.py").write_text("def inner():\n    return {}['missing']\n\ninner()\n")
    path = scenario(DEFAULT + "plugins: [plug_deep]\n")
    code = main(["run", path, "--debug"])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT_ERROR
    assert "Traceback" in err and 'plug_deep.py", line 2, in inner' in err
    assert err.strip().splitlines()[-1].startswith("error: ")


@pytest.mark.parametrize("name", ["bad/name", ".relative", "no_such_plugin_module_xyz"])
def test_a_bad_plugin_name_is_one_line(capsys, name):
    path = scenario(DEFAULT + f"plugins: ['{name}']\n")
    expect_cli_error(capsys, ["run", path], f"{path}: field 'plugins'")


@pytest.mark.parametrize("name", ["os:system", "builtins:len", "json:JSONDecoder", "math:pi"])
def test_an_implementation_that_is_not_an_algorithm_is_refused(capsys, name):
    write_configs(system={**SYSTEM, "all-reduce-implementation": [name]})
    write_workload({0: [coll(1)], 1: [coll(1)]})
    expect_input_error(capsys, "sys.json", "all-reduce-implementation[0]", "not an algorithm")


@pytest.mark.parametrize("text, needles", [
    ("workload: {generate: [a]}", ("workload.generate",)),
    ("workload: {generate: {a: 1}}", ("workload.generate",)),
    ("system: {preferred-dataset-splits: !!binary aGVsbG8=}", ("binary",)),
    ("network: !!set {a, b}", ("set",)),
    ("system: {preferred-dataset-splits: 2024-01-01 10:00:00}", ("preferred-dataset-splits",)),
])
def test_scenario_fields_of_the_wrong_yaml_type(capsys, text, needles):
    key = text.split(":")[0]
    lines = [ln for ln in DEFAULT.splitlines() if not ln.startswith(key)]
    if key == "system" or key == "network":  # drop the block's indented lines too
        start = DEFAULT.splitlines().index(f"{key}:")
        block = DEFAULT.splitlines()[start:]
        end = next(i for i, ln in enumerate(block[1:], 1) if not ln.startswith(" "))
        lines = DEFAULT.splitlines()[:start] + block[end:]
    path = scenario("\n".join(lines) + "\n" + text + "\n")
    expect_cli_error(capsys, ["run", path], path, *needles)


@pytest.mark.parametrize("output, needle", [
    ("scen.yaml/x/trace", "is not a folder"),
    ("x" * 300 + "/trace", "characters"),
    ("out/" + "y" * 300, "characters"),
    ("/".join(["z" * 200] * 30) + "/trace", "characters"),
])
def test_generate_into_a_folder_that_cannot_exist(capsys, output, needle):
    scenario()
    expect_cli_error(capsys, ["generate", "microbench", "--collective", "all_reduce", "--size", "1024",
                              "--num-npus", "2", "--output", output], "--output", needle)


@pytest.mark.parametrize("argv_extra, needle", [
    (["--num-queues-per-dim=1000000000000"], "--num-queues-per-dim"),
    (["--num-queues-per-dim=0"], "--num-queues-per-dim"),
])
def test_huge_queue_counts_from_flags(capsys, argv_extra, needle):
    write_configs()
    write_workload({0: [comp(1)], 1: [comp(1)]})
    expect_input_error(capsys, needle, "1 to 4096", extra=tuple(argv_extra))


@pytest.mark.parametrize("value", ["100000000000", "5000", "1e12"])
def test_huge_queue_counts_in_a_scenario(capsys, value):
    path = scenario(DEFAULT + f"num_queues_per_dim: {value}\n")
    expect_cli_error(capsys, ["run", path], f"{path}: field 'num_queues_per_dim'", "4096")


# -- hangs
BOMB = "\n".join(["a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"] +
                 [f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]"
                  for i in range(8)])


def test_a_yaml_alias_bomb_in_a_list_field(capsys):
    write_workload({0: [comp(1)], 1: [comp(1)]})
    write_configs()
    Path("net.yml").write_text(BOMB + "\ntopology: [Ring]\nnpus_count: [2]\nbandwidth: *i\nlatency: [1]\n")
    expect_input_error(capsys, "net.yml", "aliases", "expand")


def test_a_yaml_alias_bomb_in_a_scenario_and_a_sweep(capsys):
    path = scenario(DEFAULT.replace("name: ring8_allreduce_step", BOMB + "\nname: *i"))
    expect_cli_error(capsys, ["run", path], path, "aliases")
    sweep = sweep_file(f"{BOMB}\nbase: {BASE}\naxes: {{network.bandwidth: *i}}\n")
    expect_cli_error(capsys, ["sweep", sweep, "--list", "--no-plots"], sweep, "aliases")


def test_a_recursive_alias_is_refused(capsys):
    path = scenario(DEFAULT + "description: &d [1, *d]\n")
    expect_cli_error(capsys, ["run", path], path, "alias")


@pytest.mark.parametrize("splits", [1_000_000_000, 100_000, 2**40, 4097])
def test_dataset_splits_so_large_that_chunks_vanish(capsys, splits):
    write_configs(system={**SYSTEM, "preferred-dataset-splits": splits})
    write_workload({0: [coll(1)], 1: [coll(1)]})
    expect_input_error(capsys, "sys.json", "preferred-dataset-splits", "at most 4096")


# -- silent wrong success: YAML read as YAML 1.2 core, like yaml-cpp
def test_leading_zero_is_decimal_not_octal(capsys):
    plain = scenario(name="plain.yaml")
    zero = scenario(DEFAULT.replace("preferred-dataset-splits: 4", "preferred-dataset-splits: 0004")
                    .replace("latency: [500.0]", "latency: [0500]"), name="zero.yaml")
    assert main(["run", "--quiet", plain]) == 0
    first = capsys.readouterr().out
    assert main(["run", "--quiet", zero]) == 0  # YAML 1.1 would read 0500 as 320
    assert capsys.readouterr().out == first


@pytest.mark.parametrize("old, new, needles", [
    ("  latency: [500.0]", "  latency:\n  - 8:20", ("latency[0]", '"8:20"')),  # YAML 1.1: 500 (base 60)
    ("backend: congestion_unaware", "backend: congestion_unaware\nfold_symmetry: yes", ("fold_symmetry", "yes")),
    ("npus_count: [8]", "npus_count: [0x8]", None),  # hex is a number in YAML 1.2 too
    ("bandwidth: [50.0]", "bandwidth: [5_0]", ("bandwidth[0]", "5_0")),  # YAML 1.1: 50
])
def test_yaml_1_1_readings_are_not_ours(capsys, old, new, needles):
    path = scenario(DEFAULT.replace(old, new))
    if needles is None:
        assert main(["run", "--quiet", path]) == 0
        return
    expect_cli_error(capsys, ["run", path], path, *needles)


# -- silent wrong success: unknown keys warn, naming the nearest known one
@pytest.mark.parametrize("extra, needles", [
    ("bandwith: [ 10 ]", ("net.yml", "'bandwith'", "did you mean 'bandwidth'")),
    ("packet_size: 4096", ("net.yml", "'packet_size'", "did you mean 'packet-size'")),
    ("latencyy: [ 1 ]", ("net.yml", "did you mean 'latency'")),
])
def test_unknown_network_keys_warn(capsys, extra, needles):
    write_workload({0: [comp(1)], 1: [comp(1)]})
    write_configs()
    Path("net.yml").write_text(Path("net.yml").read_text() + extra + "\n")
    warned_run(capsys, ["--workload-configuration=w", "--system-configuration=sys.json",
                        "--network-configuration=net.yml", "--remote-memory-configuration=mem.json"], *needles)


@pytest.mark.parametrize("memory, needles", [
    ({"memory-type": "NO_MEMORY_EXPANSION", "remote-mem-bandwidth": 5}, ("'remote-mem-bandwidth'", "'remote-mem-bw'")),
    ({"memory_type": "NO_MEMORY_EXPANSION"}, ("'memory_type'", "did you mean 'memory-type'")),
])
def test_unknown_remote_memory_keys_warn(capsys, memory, needles):
    write_workload({0: [comp(1)], 1: [comp(1)]})
    write_configs()
    Path("mem.json").write_text(json.dumps(memory))
    warned_run(capsys, ["--workload-configuration=w", "--system-configuration=sys.json",
                        "--network-configuration=net.yml", "--remote-memory-configuration=mem.json"],
               "mem.json", *needles)


@pytest.mark.parametrize("extra, needles", [
    ("backnd: packet", ("'backnd'", "did you mean 'backend'")),
    ("num-passes: 2", ("'num-passes'", "did you mean 'num_passes'")),
])
def test_unknown_scenario_keys_are_errors(capsys, extra, needles):
    path = scenario(DEFAULT + extra + "\n")
    expect_cli_error(capsys, ["run", "--quiet", path], path, "not a scenario field", *needles)


def test_unknown_inline_network_and_system_keys_warn(capsys):
    path = scenario(DEFAULT.replace("  latency: [500.0]", "  latency: [500.0]\n  bandwith: [1]")
                    .replace("  endpoint-delay: 10", "  endpoint-delay: 10\n  peak-pref: 5"))
    warned_run(capsys, ["run", "--reference-lines", "--quiet", path], "bandwith", "did you mean 'bandwidth'")
    warned_run(capsys, ["run", "--reference-lines", "--quiet", path], "peak-pref", "did you mean 'peak-perf'")


def test_unknown_sweep_keys_are_errors(capsys):
    path = sweep_file(f"base: {BASE}\naxes: {{network.bandwidth: [1, 2]}}\nminimize: finish_ns\n")
    expect_cli_error(capsys, ["sweep", path, "--list", "--no-plots"], path, "'minimize'",
                     "not a sweep field", "did you mean 'minimise'")


# -- silent wrong success: a key given twice is an error
@pytest.mark.parametrize("old, new, needle", [
    ("backend: congestion_unaware", "backend: congestion_unaware\nbackend: packet", "'backend'"),
    ("  latency: [500.0]", "  latency: [500.0]\n  latency: [5]", "'latency'"),
    ("  endpoint-delay: 10", "  endpoint-delay: 10\n  endpoint-delay: 20", "'endpoint-delay'"),
])
def test_duplicate_yaml_keys(capsys, old, new, needle):
    path = scenario(DEFAULT.replace(old, new))
    line = expect_cli_error(capsys, ["run", path], path, "duplicate key", needle)
    assert "line" in line


def test_duplicate_json_keys(capsys):
    write_workload({0: [comp(1)], 1: [comp(1)]})
    write_configs()
    Path("sys.json").write_text('{"preferred-dataset-splits": 1, "endpoint-delay": 1, "endpoint-delay": 9}')
    expect_input_error(capsys, "sys.json", "'endpoint-delay'", "twice")
    write_configs()
    Path("mem.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION", "memory-type": "PER_NODE_MEMORY_EXPANSION"}')
    expect_input_error(capsys, "mem.json", "'memory-type'", "twice")


def test_an_axis_listed_twice(capsys):
    path = sweep_file(f"base: {BASE}\naxes:\n  network.bandwidth: [1, 2]\n  network.bandwidth: [3]\n")
    expect_cli_error(capsys, ["sweep", path, "--list", "--no-plots"], path, "duplicate key", "network.bandwidth")
    path = sweep_file(f"base: {BASE}\naxes:\n  network.bandwidth: [1, 2]\n"
                      f"  m: {{named: {{a: {{network.bandwidth: 3}}}}}}\n")
    expect_cli_error(capsys, ["sweep", path, "--list", "--no-plots"], path, "network.bandwidth", "two axes")
    path = sweep_file(f"base: {BASE}\naxes:\n  m: {{named: {{a: {{network.bandwidth: 3}}, b: {{network.bandwidth: 4}}}}}}\n"
                      f"  m2: {{named: {{c: {{network.bandwidth: 5}}}}}}\n")
    expect_cli_error(capsys, ["sweep", path, "--list", "--no-plots"], path, "network.bandwidth", "two axes")


def test_a_plain_axis_may_fill_what_an_earlier_named_bundle_shapes(capsys):
    """The one overlap allowed: a bundle sets a field's shape, a later plain axis fills it
    (scenarios/sweeps/cost_topology.yaml): 2 bundles x 2 values = 4 points (the bundles differ
    in latency: two alike would run once)."""
    path = sweep_file(f"base: {BASE}\naxes:\n  m: {{named: {{a: {{network.bandwidth: [0]}}, b: {{network.bandwidth: [0], "
                      f"network.latency: [1.0]}}}}}}\n"
                      f"  network.bandwidth: [10, 20]\n")
    assert main(["sweep", path, "--list", "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("4 points") and "m=b bandwidth=20" in out


# -- silent wrong success: durations past the cycle counter, text workload counts
@pytest.mark.parametrize("micros", [2**64 - 1, 2**62, (2**64 - 1) // 1000 + 1])
def test_compute_durations_past_the_cycle_counter(capsys, micros):
    write_configs()
    node = make_node(1, "long", COMP_NODE, duration_micros=micros)
    write_workload({0: [node], 1: [comp(1)]})
    expect_input_error(capsys, "w.0.et", "node 1", "duration_micros", "past the horizon")


def test_compute_durations_adding_up_past_the_cycle_counter(capsys):
    write_configs()
    half = (2**63 - 1) // 1000 // 2 + 1
    nodes = [make_node(1, "a", COMP_NODE, duration_micros=half),
             make_node(2, "b", COMP_NODE, deps=[1], duration_micros=half)]
    write_workload({0: nodes, 1: [comp(1)]})
    expect_input_error(capsys, "w.0.et", "add up to", "past the horizon")


@pytest.mark.parametrize("header, body", [
    ("DATA\n2\n", "l0 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 10\n"),
    ("DATA\n1\n", "l0 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 10\nl1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 10\n"),
    ("MODEL\n3\n", "l0 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 10\n"),
])
def test_text_workload_header_and_body_disagree(capsys, tmp_path, monkeypatch, header, body):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    write_configs()
    path = _text(body, header)
    code = main([f"--workload-configuration={path}", "--system-configuration=sys.json",
                 "--network-configuration=net.yml", "--remote-memory-configuration=mem.json"])
    assert code == EXIT_INPUT_ERROR
    line = error_line(capsys.readouterr().err)
    assert "model.txt:2" in line and "layer line" in line


# -- silent wrong success: flags
@pytest.mark.parametrize("argv, needles", [
    (["--netwrok-backend=packet"], ("--netwrok-backend", "unknown flag", "did you mean --network-backend")),
    (["--json-outt", "x.json"], ("--json-outt", "unknown flag", "--json-out")),
    (["--network"], ("--network",)),  # an abbreviation is not a flag
])
def test_unknown_flags_in_the_astra_form(capsys, argv, needles):
    write_configs()
    write_workload({0: [comp(1)], 1: [comp(1)]})
    expect_input_error(capsys, *needles, extra=tuple(argv))


@pytest.mark.parametrize("argv, needle", [
    (["run", "scen.yaml", "--jsonout", "x"], "--jsonout"),
    (["sweep", "sw.yaml", "--jbos", "2"], "--jbos"),
    (["generate", "microbench", "--colective", "all_reduce"], "--colective"),
])
def test_unknown_flags_in_the_commands(capsys, argv, needle):
    scenario()
    sweep_file(f"base: {BASE}\naxes: {{network.bandwidth: [1, 2]}}\n")
    expect_cli_error(capsys, argv, needle, "unknown flag")


@pytest.mark.parametrize("argv", [
    ["--network-backend", ""],
    ["--network-backend="],
])
def test_an_empty_network_backend(capsys, argv):
    write_configs()
    write_workload({0: [comp(1)], 1: [comp(1)]})
    expect_input_error(capsys, "--network-backend", "empty string", extra=tuple(argv))
    path = scenario()
    expect_cli_error(capsys, ["run", path, *argv], "--network-backend", "empty string")


@pytest.mark.parametrize("code", ["0", "None", "'done'"])
def test_a_plugin_calling_sys_exit(capsys, monkeypatch, code):
    monkeypatch.syspath_prepend(os.getcwd())
    Path("plug_exit.py").write_text(f"import sys\nsys.exit({code})\n")
    path = scenario(DEFAULT + "plugins: [plug_exit]\n")
    expect_cli_error(capsys, ["run", path], "plug_exit", "sys.exit")


def test_a_collective_plugin_calling_sys_exit_or_raising_mid_run(capsys, monkeypatch):
    monkeypatch.syspath_prepend(os.getcwd())
    Path("plug_algo.py").write_text("import sys\n\ndef quits(ctx, *a):\n    sys.exit(0)\n    yield\n\n"
                                    "def fails(ctx, *a):\n    raise KeyError('x')\n    yield\n")
    for name, needle in (("plug_algo:quits", "sys.exit"), ("plug_algo:fails", "KeyError")):
        write_configs(system={**SYSTEM, "all-reduce-implementation": [name]})
        write_workload({0: [coll(1)], 1: [coll(1)]})
        expect_input_error(capsys, name, needle, "plug_algo.py")


# -- sweeps
@pytest.mark.parametrize("axes, needles", [
    ("network.bandwith: [1, 2]", ("network.bandwith", "names no field", "did you mean 'network.bandwidth'")),
    ("sytem.endpoint-delay: [1, 2]", ("sytem.endpoint-delay", "names no field")),
    ("system.endpoint-dealy: [1, 2]", ("did you mean 'system.endpoint-delay'",)),
])
def test_an_axis_naming_no_field(capsys, axes, needles):
    path = sweep_file(f"base: {BASE}\naxes: {{{axes}}}\n")
    expect_cli_error(capsys, ["sweep", path, "--list", "--no-plots"], path, *needles)


@pytest.mark.parametrize("minimise", ["0/0", "finish_ns/0", "1 % 0"])
def test_a_minimise_that_gives_no_number(capsys, minimise):
    path = sweep_file(f"base: {BASE}\naxes: {{network.bandwidth: [1, 2]}}\nminimise: '{minimise}'\n")
    expect_cli_error(capsys, ["sweep", path, "--list", "--no-plots"], path, "minimise", "no number")


@pytest.mark.parametrize("cap", [".nan", ".NaN", ".inf", "-1", "true"])
def test_a_memory_cap_that_is_not_a_number(capsys, cap):
    path = sweep_file(f"base: {BASE}\naxes: {{network.bandwidth: [1, 2]}}\nmemory_cap_gb: {cap}\n")
    expect_cli_error(capsys, ["sweep", path, "--list", "--no-plots"], path, "memory_cap_gb")


@pytest.mark.parametrize("axis, points", [
    ("[5e1, 50]", 1),
    ("{from: 1e1, to: 5e1, step: 1e1}", 5),
    ("{from: 10, to: 100, step: 5e1}", 2),
    ("{powers_of_two: [1e0, 6.4e1]}", 7),
])
def test_scientific_numbers_in_sweeps(capsys, axis, points):
    path = sweep_file(f"base: {BASE}\naxes: {{network.bandwidth: {axis}}}\n")
    assert main(["sweep", path, "--list", "--no-plots"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{points} point" + "s" * (points != 1)


@pytest.mark.parametrize("axis", ["[]", "{values: []}"])
def test_an_empty_sweep_axis(capsys, axis):
    path = sweep_file(f"base: {BASE}\naxes: {{network.bandwidth: {axis}}}\n")
    line = expect_cli_error(capsys, ["sweep", path, "--list", "--no-plots"], path, "network.bandwidth", "no values")
    assert "constraints" not in line


# -- errors naming the right thing
@pytest.mark.parametrize("backend", ["fast", "''", "[packet]"])
def test_a_scenario_backend_is_named_as_the_scenarios(capsys, backend):
    path = scenario(DEFAULT.replace("backend: congestion_unaware", f"backend: {backend}"))
    line = expect_cli_error(capsys, ["run", path], f"{path}: field 'backend'", "congestion_unaware")
    assert "--network-backend" not in line


@pytest.mark.parametrize("params, field", [
    ("collective: all_reduce, size: -1, num_npus: 8", "workload.size"),
    ("collective: all_reduce, size: 99999999999999999999, num_npus: 8", "workload.size"),
    ("collective: all_reduce, size: 1024, num_npus: 0", "workload.num_npus"),
    ("collective: allreduce, size: 1024, num_npus: 8", "workload.collective"),
    ("collective: all_reduce, size: 1 MB, num_npus: 8", "workload.size"),
])
def test_generated_workload_errors_name_the_scenario_field(capsys, tmp_path, monkeypatch, params, field):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    path = scenario(DEFAULT.replace("workload: workloads/step_8npus_1MB/step",
                                    f"workload: {{generate: microbench, {params}}}"))
    line = expect_cli_error(capsys, ["run", path], f"{path}: {field}")
    assert "--size" not in line and "--num-npus" not in line and "--collective" not in line


@pytest.mark.parametrize("flag", ["--system-configuration", "--network-configuration",
                                  "--remote-memory-configuration", "--workload-configuration"])
def test_an_empty_configuration_flag(capsys, flag):
    write_configs()
    write_workload({0: [comp(1)], 1: [comp(1)]})
    argv = [a for a in ["--workload-configuration=w", "--system-configuration=sys.json",
                        "--network-configuration=net.yml", "--remote-memory-configuration=mem.json"]
            if not a.startswith(flag)]
    line = expect_cli_error(capsys, [*argv, f"{flag}="], flag, "empty")
    assert "is a directory" not in line


# -- a first-time user
@pytest.mark.parametrize("argv", [["--help"], ["-h"], []])
def test_help_lists_every_command_then_the_astra_flags(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    text = out + err
    assert code == (0 if argv else EXIT_INPUT_ERROR)
    lines = text.splitlines()
    for command in ("run", "sweep", "generate", "convert", "calibrate", "validate"):
        assert any(ln.startswith(f"  {command} ") for ln in lines), command
    assert text.index("  validate ") < text.index("--workload-configuration")
    assert "the following arguments are required" not in text


def test_console_tables_wrap_their_headers_at_80_columns():
    import io

    from rich.console import Console

    from simpy_astra.report.console import Output

    stream = io.StringIO()
    out = Output(stream, rich=True)
    out.console = Console(file=stream, width=80, color_system=None)
    columns = ("NPU", "finished (ns)", "exposed comm (ns)", "GPU time", "Comm time", "overlap", "peak memory")
    rows = [(str(i), "1,142,780", "117,780", "25,000", "117,780", "0", "1.25 GB") for i in range(3)]
    out.table("simpy-astra: 8 NPUs simulated in 0.05 s", columns, rows)
    text = stream.getvalue()
    assert "…" not in text and "..." not in text  # nothing cut
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "1,142,780" in text and "1.25 GB" in text  # figures whole
    for word in ("finished", "exposed", "comm", "GPU", "time", "overlap", "peak", "memory"):
        assert word in text


@pytest.mark.parametrize("flag", ["--json-out", "--csv-out", "--trace-out"])
def test_output_names_too_long_for_the_os_are_refused_before_the_run(capsys, flag):
    path = scenario()
    code = main(["run", path, flag, "o" * 300])
    out, err = capsys.readouterr()
    assert code == EXIT_INPUT_ERROR and out == ""  # nothing simulated
    line = error_line(err)
    assert flag in line and "not a path the system accepts" in line and len(line) < 400


def test_sweep_out_name_too_long(capsys):
    sweep = sweep_file(f"base: {BASE}\naxes: {{network.bandwidth: [1, 2]}}\n")
    expect_cli_error(capsys, ["sweep", sweep, "--out", "d" * 300, "--no-plots"], "--out")


@pytest.mark.parametrize("passes", ["1000000000", "2000000"])
def test_text_workload_passes_that_would_exhaust_memory(capsys, tmp_path, monkeypatch, passes):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    write_configs()
    path = _text("l0 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 10\n")
    expect_input_error(capsys, "--num-passes", "at most 1,000,000",
                       extra=(f"--workload-configuration={path}", f"--num-passes={passes}"))


def test_a_plugin_topology_failing_mid_run_is_reported_as_the_users(capsys, monkeypatch):
    monkeypatch.syspath_prepend(os.getcwd())
    Path("plug_topo.py").write_text("from simpy_astra.topologies.ring import Ring\n\n"
                                    "class BadRing(Ring):\n    def hops(self, src, dst):\n"
                                    "        raise ValueError('no route')\n")
    path = scenario(DEFAULT.replace("topology: [Ring]", "topology: ['plug_topo:BadRing']"))
    line = expect_cli_error(capsys, ["run", path], "ValueError", "no route", "plug_topo.py:5")
    assert "simpy-astra bug" not in line


@pytest.mark.parametrize("axis, needle", [
    ("{from: 1, to: 10, stpe: 5}", "did you mean 'step'"),
    ("{values: [1, 2], as: bw, valeus: [3]}", "did you mean 'values'"),
])
def test_a_mistyped_axis_key(capsys, axis, needle):
    path = sweep_file(f"base: {BASE}\naxes: {{network.bandwidth: {axis}}}\n")
    expect_cli_error(capsys, ["sweep", path, "--list", "--no-plots"], path, "network.bandwidth", needle)


# -- a key YAML would read as a boolean or null is named as written (yaml-cpp's keys are text)
@pytest.mark.parametrize("old, new, needle", [
    ("backend: congestion_unaware", "backend: congestion_unaware\nnull: 3", "field 'null'"),
    ("backend: congestion_unaware", "backend: congestion_unaware\nTrue: 3", "field 'True'"),
])
def test_a_boolean_or_null_key_is_named_as_written(capsys, old, new, needle):
    path = scenario(DEFAULT.replace(old, new))
    line = expect_cli_error(capsys, ["run", path], path, needle)
    assert "None" not in line


def test_a_boolean_key_among_network_fields_is_warned_as_written(capsys):
    path = scenario(DEFAULT.replace("  latency: [500.0]", "  latency: [500.0]\n  false: [5]"))
    warned_run(capsys, ["run", "--reference-lines", "--quiet", path], "field 'false' is not a network field")
