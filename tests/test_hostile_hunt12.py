"""A twelfth hunt for inputs that ran as something other than what they say, or were refused
where they would run: each is now refused before the run in one line naming the file (or
flag), the field and the fix, or runs as it says."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simpy_astra.config.cluster_presets import PRESET_DIR
from simpy_astra.config.gpu_names import has_nvls
from simpy_astra.config.scenario import load_scenario
from tests.scenario_files import SCENARIOS, error_lines
from tests.scenario_files import TINY_GPT_ARGS as ARGS


def _copy_of_h100_preset(tmp_path: Path, gpu_name: str) -> str:
    """A user's copy of the H100 preset for another GPU, its node silent on NVLS."""
    doc = yaml.safe_load((Path(PRESET_DIR) / "dgx-h100.yaml").read_text())
    doc["gpu"]["name"] = gpu_name
    del doc["node"]["nvls"]
    path = tmp_path / f"{gpu_name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.parametrize("gpu, nvls", [
    ("B300-SXM6-288GB", True), ("GB300", True), ("H20", True), ("NVIDIA H20 96GB HBM3", True),
    ("GB200 NVL72", True), ("H100-SXM5-80GB", True),
    # PCIe cards: NVLink bridges between two or four cards at most, no NVSwitch, no NVLS
    ("H100-PCIe-80GB", False), ("NVIDIA H100 PCIe", False), ("H100 NVL", False), ("H200-NVL", False),
])
def test_nvls_by_the_gpus_name_knows_blackwell_ultra_h20_and_pcie_cards(tmp_path, gpu, nvls):
    # B300, GB300 and H20 (NVSwitch boards) ran with NVLS off and a warning that the name was
    # unknown; an H100 PCIe card ran NVLS all-reduces over an NVSwitch it does not have
    assert has_nvls(gpu) is nvls
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": ARGS},
                                        "cluster": {"preset": _copy_of_h100_preset(tmp_path, gpu), "gpus": 8}}))
    inputs = load_scenario(str(scenario))
    assert not [w for w in inputs.warnings if "NVLS" in w], inputs.warnings


MICROBENCH = {"workload": {"generate": "microbench", "collective": "all_reduce", "size": 1048576, "num_npus": 8},
              **{k: v for k, v in yaml.safe_load((SCENARIOS / "default.yaml").read_text()).items()
                 if k in ("system", "network", "remote_memory")}}


@pytest.mark.parametrize("axes, said", [
    ({"workload.sizee": [1024, 2048]}, "generate microbench takes no parameter 'sizee', so every point would fail "
                                       "on it; did you mean 'workload.size'?"),
    ({"m": {"named": {"a": {"workload.bytes": 1024}, "b": {"workload.size": 2048}}}},
     "generate microbench takes no parameter 'bytes', so every point would fail on it; it takes collective, size, "
     "num_npus, src, dst"),
])
def test_an_axis_on_a_parameter_the_generator_does_not_take_is_refused_once(tmp_path, capsys, axes, said):
    # each point failed alike after the sweep started (sweep --list marked every one 'will fail')
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(MICROBENCH, sort_keys=False))
    sweep = tmp_path / "sw.yaml"
    sweep.write_text(yaml.safe_dump({"base": "base.yaml", "axes": axes}, sort_keys=False))
    err = error_lines(capsys, ["sweep", str(sweep), "--list"])
    assert len(err) == 1 and err[0].startswith(f"error: {sweep}: axes: "), err
    assert err[0].endswith(said), err


def test_an_axis_on_a_generators_parameter_or_on_the_generator_is_listed(tmp_path, capsys):
    from simpy_astra.cli.main import main

    (tmp_path / "base.yaml").write_text(yaml.safe_dump(MICROBENCH, sort_keys=False))
    sweep = tmp_path / "sw.yaml"
    for axes in ({"workload.size": [1024, 2048]},
                 {"w": {"named": {"mb": {"workload.size": 1024},
                                  "tf": {"workload": {"generate": "transformer", "preset": "llama2-7b"}}}}}):
        sweep.write_text(yaml.safe_dump({"base": "base.yaml", "axes": axes}, sort_keys=False))
        assert main(["sweep", str(sweep), "--list"]) == 0, capsys.readouterr().err
        assert capsys.readouterr().out.startswith("2 points")


def _records(path: Path, *messages: bytes) -> None:
    from simpy_astra.workloads.chakra.writer import encode_varint

    path.write_bytes(b"".join(encode_varint(len(m)) + m for m in messages))


@pytest.mark.parametrize("first, rest, where, kind", [
    ("meta", "attr", "record 1 (first node) at byte 8", "Node"),
    ("meta", "descriptor", "record 1 (first node) at byte 8", "Node"),
    ("node", "node", "record 0 at byte 0", "GlobalMetadata"),
])
def test_an_et_file_of_another_protobuf_message_is_refused(tmp_path, capsys, first, rest, where, kind):
    # protobuf parses any message's bytes as a Node, keeping what is not a Node's aside: the run
    # took every record for an INVALID node of id 0, finishing at once, and printed 0 ns
    from google.protobuf import descriptor_pb2

    from simpy_astra.workloads.chakra.schema import AttributeProto, GlobalMetadata, NodeRawAttrs

    made = {"meta": GlobalMetadata(version="0.0.4"), "attr": AttributeProto(name="comm_size", int64_val=5),
            "descriptor": descriptor_pb2.FileDescriptorProto(name="x.proto"),
            "node": NodeRawAttrs(id=7, type=4, duration_micros=5)}
    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    for rank in range(8):
        _records(tmp_path / f"w.{rank}.et", made[first].SerializeToString(), made[rest].SerializeToString())
    doc["workload"] = str(tmp_path / "w")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(doc))
    err = error_lines(capsys, ["run", str(scenario), "--quiet"])
    assert len(err) == 1 and err[0].startswith(f"error: {tmp_path / 'w.0.et'}: {where}: is no "
                                               f"ChakraProtoMsg.{kind} (field(s) "), err
    assert err[0].endswith("another protobuf message's file? give a Chakra ET file (a GlobalMetadata, then Nodes)")


def test_an_invalid_node_of_a_chakra_trace_still_runs(tmp_path, capsys):
    from simpy_astra.cli.main import main

    # the microbenchmark's idle NPUs run one INVALID node each (send_recv)
    assert main(["run", str(SCENARIOS / "dragonfly_send_recv.yaml"), "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("iteration time 20,831 ns")


@pytest.mark.parametrize("argv, files", [
    (["--plots", "out", "--json-out", "out/f.json"], {"breakdown.png", "timeline.png", "f.json"}),
    (["--csv-out", "out", "--trace-out", "out/t.json"], {"nodes.csv", "npus.csv", "t.json"}),
    (["--json-out", "out/f.json", "--plots", "out/"], {"breakdown.png", "timeline.png", "f.json"}),
])
def test_a_file_output_in_the_folder_a_folder_output_makes_is_written(tmp_path, capsys, monkeypatch, argv, files):
    # refused before the run: 'cannot write out/f.json: out does not exist', although --plots
    # makes out before anything could fail to be written there
    from simpy_astra.cli.main import main

    monkeypatch.chdir(tmp_path)
    assert main(["run", str(SCENARIOS / "default.yaml"), "--quiet", *argv]) == 0, capsys.readouterr().err
    assert {p.name for p in (tmp_path / "out").iterdir()} == files


def test_a_file_output_in_a_folder_nothing_makes_is_refused_before_the_run(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = error_lines(capsys, ["run", str(SCENARIOS / "default.yaml"), "--quiet", "--plots", "out",
                               "--json-out", "out/json/f.json"])
    assert err == ["error: --json-out: cannot write out/json/f.json: out/json does not exist (make it first)"], err
    assert list(tmp_path.iterdir()) == []


JOB = {"name": "a", "workload": {"generate": "microbench", "collective": "all_reduce", "size": 1024, "num_npus": 4}}


@pytest.mark.parametrize("edit, said", [
    (lambda d: d.update(workload={**d["workload"], "size": 1e6}),
     "workload.size: must be an integer (got 1000000.0); write 1000000"),
    (lambda d: d.update(workload={"generate": "transformer", "preset": "llama2-7b", "num_stacks": 2, "dp": 8.0}),
     "workload.dp: must be an integer (got 8.0); write 8"),  # ran as dp 8
    (lambda d: d.update(jobs=[{**JOB, "placement": "contiguous", "start_ns": 1000.0}], workload=None),
     "jobs[0].start_ns: must be a whole number of ns (the clock ticks in ns; got 1000.0); write 1000"),  # ran
    (lambda d: d.update(jobs=[{**JOB, "placement": "random", "seed": 1.0}], workload=None),
     "jobs[0].seed: must be an integer (got 1.0); write 1"),
    (lambda d: d.update(jobs=[{**JOB, "npus": [0, 1, 2, 3.0]}], workload=None),
     "jobs[0].npus: must be a list of NPU ids, one per rank (got [0, 1, 2, 3.0]); write 3"),
    (lambda d: d.update(network={**d["network"], "npus_count": [8.0]}),
     "network: field 'npus_count[0]' must be an integer > 1 (got 8.0); write 8"),
])
def test_an_integral_float_in_a_field_of_integers_is_refused_naming_the_integer(tmp_path, capsys, edit, said):
    # one rule: the transformer's dp and a job's start_ns took 8.0 and 1000.0 as integers, the
    # cluster, the microbenchmark and the jobs' other fields refused them without saying what to write
    doc = {**MICROBENCH}
    edit(doc)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({k: v for k, v in doc.items() if v is not None}, sort_keys=False))
    err = error_lines(capsys, ["run", str(scenario), "--quiet"])
    assert err == [f"error: {scenario}: {said}"], err


def test_an_integral_float_for_a_clusters_gpus_names_the_integer(tmp_path, capsys):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": ARGS},
                                        "cluster": {"preset": "dgx-a100-80gb", "gpus": 16.0}}))
    err = error_lines(capsys, ["run", str(scenario), "--quiet"])
    assert err == [f"error: {scenario}: cluster.gpus: must be a positive integer (got 16.0); write 16"], err


@pytest.mark.parametrize("size", [2**64 - 1, 2**63])
def test_a_message_size_past_int64_is_refused_as_a_negative_one_is(tmp_path, capsys, size):
    # UINT64_MAX, a sentinel's "unknown size", has -1's bits: -1 was refused as 16 EiB, the uint64
    # ran a 16 EiB all-reduce and printed a step of 1,569,749,485,309,780,080 ns (49 years)
    from simpy_astra.workloads.chakra.types import ALL_REDUCE, COMM_COLL_NODE
    from simpy_astra.workloads.chakra.writer import make_node, write_et

    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    for rank in range(8):
        write_et(str(tmp_path / f"w.{rank}.et"), [make_node(1, "ar", COMM_COLL_NODE, attrs={
            "comm_type": ALL_REDUCE, "comm_size": ("uint64_val", size)})])
    doc["workload"] = str(tmp_path / "w")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(doc))
    err = error_lines(capsys, ["run", str(scenario), "--quiet"])
    assert err == [f"error: {tmp_path / 'w.0.et'}: node 1: attribute 'comm_size' is {size:,} bytes, past "
                   f"Chakra's int64 comm_size (at most 9,223,372,036,854,775,807, 8 EiB); give the message's "
                   f"size in bytes"], err


@pytest.mark.parametrize("flag, what", [
    ("--system-configuration", "system JSON"), ("--remote-memory-configuration", "remote-memory JSON"),
    ("--comm-group-configuration", "communicator-group JSON"),
])
def test_a_json_file_of_no_text_says_so_as_a_yaml_one_does(tmp_path, capsys, flag, what):
    # 'invalid JSON at line 1, column 1: Expecting value', where an empty network YAML says
    # '(got an empty file); expected the network YAML'
    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    files = {"--system-configuration": tmp_path / "sys.json", "--remote-memory-configuration": tmp_path / "mem.json",
             "--network-configuration": tmp_path / "net.yml"}
    import json

    files["--system-configuration"].write_text(json.dumps(doc["system"]))
    files["--remote-memory-configuration"].write_text(json.dumps(doc["remote_memory"]))
    files["--network-configuration"].write_text(yaml.safe_dump(doc["network"]))
    files[flag] = tmp_path / "blank.json"
    files[flag].write_text("\n  \n")
    argv = [f"--workload-configuration={SCENARIOS / doc['workload']}", *(f"{k}={v}" for k, v in files.items())]
    err = error_lines(capsys, argv)
    assert err == [f"error: {files[flag]}: the top level must be a JSON object {{...}} (got an empty file); "
                   f"expected the {what}"], err


@pytest.mark.parametrize("flag, text, said", [
    ("--regimes", '{"regimes": [{"from_bytes": 0, "from_bytes": 1048576, "network": {}}]}',
     "field 'from_bytes' appears twice; keep one (readers disagree on which one wins)"),
    ("--holdout", '{"logs": [], "logs": [{"sha256_16": "x", "fitted_lines": [1]}]}',
     "field 'logs' appears twice; keep one (readers disagree on which one wins)"),
    ("--holdout", "", "the top level must be a JSON object {...} (got an empty file); expected the calibration "
                      "record"),
])
def test_validates_calibration_files_are_read_as_strictly_as_the_configs(tmp_path, capsys, flag, text, said):
    # a key given twice was taken as its last value (Python's json), where every config refuses
    # it; an empty file said 'not JSON (Expecting value: line 1 column 1 (char 0))'
    nccl = SCENARIOS.parent / "tests" / "data" / "nccl" / "dgx-a100-superbench"
    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    import json

    (tmp_path / "sys.json").write_text(json.dumps(doc["system"]))
    record = tmp_path / "record.json"
    record.write_text(text)
    err = error_lines(capsys, ["validate", str(nccl / "all_reduce.log"), "--network", str(nccl / "network.yml"),
                               "--system", str(tmp_path / "sys.json"), "--out", str(tmp_path / "v"), flag,
                               str(record)])
    assert err == [f"error: {record}: {said}"], err


def test_a_list_of_megatron_arguments_with_an_item_that_is_no_word_names_the_item(tmp_path, capsys):
    # the error said the arguments must be 'one string' (a list of words is read too) and quoted
    # the whole list, a pasted launch script's hundreds of words, on one line
    words = [*ARGS.split(), "--lr", True] + ["--log-interval", "1"] * 100
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": words},
                                        "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}))
    err = error_lines(capsys, ["run", str(scenario), "--quiet"])
    assert err == [f"error: {scenario}: workload.args: [{len(ARGS.split()) + 1}] is true: a list of arguments holds "
                   f"words (text or numbers), one per flag or value; write it as the word Megatron-LM reads, or give "
                   f"one string"], err


def test_a_memory_cap_on_runs_that_measure_no_memory_says_so(tmp_path, capsys):
    # 'best with peak_memory_gb <= 10: no finished point qualifies', as if each were over the cap;
    # since hunt 15 it is refused before any point runs (tests/test_hostile_hunt15.py)
    from simpy_astra.cli.main import main

    (tmp_path / "base.yaml").write_text(yaml.safe_dump(MICROBENCH, sort_keys=False))
    sweep = tmp_path / "sw.yaml"
    sweep.write_text(yaml.safe_dump({"base": "base.yaml", "axes": {"workload.size": [1024, 2048]},
                                     "memory_cap_gb": 10}, sort_keys=False))
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "o"), "--no-plots"]) == 2
    assert capsys.readouterr().err.startswith(f"error: {sweep}: memory_cap_gb: 'peak_memory_gb <= 10' reads "
                                              f"peak_memory_gb, which only a run with system track-local-mem: 1")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("given, said", [
    ("--num-layers 2.0", "argument --num-layers: invalid int value: '2.0'; write 2 (Megatron-LM's int() refuses it "
                         "too)"),
    ("--ffn-hidden-size 1e3", "argument --ffn-hidden-size: invalid int value: '1e3'; write 1000 (Megatron-LM's "
                              "int() refuses it too)"),
    ("--num-layers 2.5", "argument --num-layers: invalid int value: '2.5'; write 2 or 3 (Megatron-LM's int() "
                         "refuses it too)"),
    ("--num-layers two", "argument --num-layers: invalid int value: 'two'"),
])
def test_a_float_for_a_megatron_integer_names_the_integer_as_the_one_rule_does(given, said):
    # refused as Megatron's argparse refuses it, without the integer to write that every other
    # field of integers now names
    from simpy_astra.errors import InputError
    from simpy_astra.workloads.megatron.arguments import parse

    with pytest.raises(InputError) as caught:
        parse(f"{ARGS} {given}", 8, "s.yaml: workload.args")
    assert caught.value.message == f"s.yaml: workload.args: {said}"
