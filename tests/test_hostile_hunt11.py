"""An eleventh hunt for inputs that ran as something other than what they say, or were refused in
words that sent the user elsewhere: each is now refused (or shown) before the run in one line
naming the file (or flag), the field and the fix."""

from __future__ import annotations

import json
import re
import shutil

import pytest
import yaml

from simpy_astra.cli.main import main
from tests.scenario_files import SCENARIOS, error_lines
from tests.scenario_files import TINY_GPT_ARGS as ARGS


@pytest.mark.parametrize("argv, flag", [
    (["run", str(SCENARIOS / "default.yaml"), "--quiet", "--json-out", "a.json", "--json-out", "b.json"], "--json-out"),
    (["run", str(SCENARIOS / "default.yaml"), "--quiet", "--network-backend=packet", "--network-backend",
      "congestion_aware"], "--network-backend"),
    (["generate", "microbench", "--collective", "all_reduce", "--size", "1024", "--num-npus", "8", "--num-npus", "4",
      "--output", "t/ar"], "--num-npus"),
])
def test_a_flag_given_twice_is_refused_not_silently_replaced(tmp_path, capsys, monkeypatch, argv, flag):
    # argparse kept the later value: the run wrote b.json only, or ran on congestion_aware, or
    # generated 4 traces, and the earlier value vanished without a word
    monkeypatch.chdir(tmp_path)
    err = error_lines(capsys, argv)
    assert len(err) == 1 and err[0].startswith("error: simpy-astra "), err
    assert f": {flag}: given twice; give it once" in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_a_switch_given_twice_and_a_repeatable_flag_still_run(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(SCENARIOS / "default.yaml"), "--quiet", "--quiet"]) == 0
    # the default scenario's step, 142,780 ns (tests/test_cli.py derives it)
    assert "iteration time 142,780 ns" in capsys.readouterr().out


NCCL = SCENARIOS.parent / "tests" / "data" / "nccl" / "dgx-a100-superbench"


@pytest.mark.parametrize("argv", [
    ["calibrate", str(NCCL / "all_reduce.log"), "--network", str(NCCL / "network.yml"), "--out", "-"],
    ["sweep", str(SCENARIOS / "sweeps" / "quick.yaml"), "--out", "-"],
])
def test_a_dash_for_an_output_folder_is_not_taken_as_a_folder_named_dash(tmp_path, capsys, monkeypatch, argv):
    # '--out -' (stdout to many tools) fitted or swept and wrote network.yml (results.csv) into
    # a folder named '-'; run's outputs refuse it since the eighth hunt
    monkeypatch.chdir(tmp_path)
    err = error_lines(capsys, argv)
    assert err == ["error: --out: '-' would be a folder named '-' here, not stdout (stdout carries the answer); "
                   "give a folder path"], err
    assert not (tmp_path / "-").exists()


def test_a_job_name_wider_than_a_pipe_folds_within_80_columns(tmp_path, capsys):
    # the jobs table printed each 150-character name on one line, 171 columns wide in a pipe
    # (README: plain text within 80 columns; on a terminal rich folds the name)
    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    del doc["workload"]
    names = ["a" * 150, "b" * 149 + "!"]
    doc["jobs"] = [{"name": name, "workload": {"generate": "microbench", "collective": "all_reduce", "size": 1048576,
                                               "num_npus": 4}, "placement": "contiguous"} for name in names]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["run", str(path)]) == 0
    err = capsys.readouterr().err.splitlines()
    tables = err[err.index("jobs"):next(i for i, line in enumerate(err) if line.startswith("network cost"))]
    assert max(len(line) for line in tables) <= 80, max(tables, key=len)
    first = tables[2:tables.index("jobs (continued)")]  # the first table's rows, under its header
    # each name whole, folded over the lines below its row, its figures on its first line
    rows = [k for k, line in enumerate(first) if len(line.split()) > 1]
    assert [first[k].split()[1:3] for k in rows] == [["0-3", "0"], ["4-7", "0"]], first  # as placed
    assert all(re.fullmatch(r"[\d,]+", first[k].split()[3]) for k in rows), first  # finished (ns), whole
    assert "".join(line.split()[0] for line in first[:rows[1]]) == names[0]
    assert "".join(line.split()[0] for line in first[rows[1]:]) == names[1]


@pytest.mark.parametrize("axes, where", [
    ({"name": ["a", "b"]}, "axes: name: 'name'"),
    ({"description": {"values": ["x", "y"], "as": "d"}}, "axes: description: 'description'"),
    ({"m": {"named": {"one": {"description": "x", "cluster.gpus": 8}, "two": {"cluster.gpus": 16}}}},
     "axes: m: 'description'"),
])
def test_an_axis_on_the_scenarios_label_is_refused(tmp_path, capsys, axes, where):
    # name and description are text no run reads: {name: [a, b]} listed (and ran) two points
    # of one scenario, and best.json crowned one of two equal rows
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": ARGS},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}, sort_keys=False))
    sweep = tmp_path / "sw.yaml"
    sweep.write_text(yaml.safe_dump({"base": "base.yaml", "axes": axes}, sort_keys=False))
    err = error_lines(capsys, ["sweep", str(sweep), "--list"])
    assert err == [f"error: {sweep}: {where} is the scenario's label, which no run reads: points that differ only in "
                   f"it run the same scenario; remove it (an axis's name, or a bundle's, labels its points)"], err


def test_a_workload_link_rate_beside_a_cluster_names_the_cluster_field_that_sets_it(tmp_path, capsys):
    # the error said "set cluster.tp_link_gb_s", a key the cluster refuses as unknown
    cluster = {"preset": "dgx-a100-80gb", "gpus": 8}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": ARGS + " --tensor-model-parallel-size 2",
                                                 "tp_link_gb_s": 100}, "cluster": cluster}, sort_keys=False))
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1 and err[0].startswith(f"error: {path}: workload.tp_link_gb_s: the cluster: gives"), err
    field = re.search(r"; set cluster\.(\w+)", err[0]).group(1)
    # following the advice runs: the field it names is the cluster's (tp 2 sits inside a node: NVLink's)
    path.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": ARGS + " --tensor-model-parallel-size 2"},
                                    "cluster": {**cluster, field: 100}}, sort_keys=False))
    assert main(["run", str(path), "--quiet"]) == 0, capsys.readouterr().err


def test_an_unknown_name_in_a_megatron_sweeps_expression_is_one_readable_line(tmp_path, capsys):
    # the line listed every one of the ~100 modelled Megatron flags by name: 3,000 characters
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": ARGS},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}, sort_keys=False))
    sweep = tmp_path / "sw.yaml"
    sweep.write_text(yaml.safe_dump({"base": "base.yaml", "axes": {"cluster.gpus": [8, 16]},
                                     "constraints": ["tensor_model_paralel_size * gpus <= 64"]}, sort_keys=False))
    err = error_lines(capsys, ["sweep", str(sweep), "--list"])
    assert len(err) == 1 and len(err[0]) < 1200, len(err[0])
    head = (f"error: {sweep}: constraints[0]: 'tensor_model_paralel_size * gpus <= 64' uses unknown name(s) "
            f"['tensor_model_paralel_size']; did you mean 'tensor_model_parallel_size' for 'tensor_model_paralel_size'?; "
            f"known: ")
    assert err[0].startswith(head), err[0]
    known = err[0][len(head):].split("; and ")[0].split(", ")
    # the axis, the results (docs/sweeps.md) and data_parallel_size listed; the flags summed up
    assert {"gpus", "finish_ns", "mfu", "data_parallel_size"} <= set(known) and "swiglu" not in known, known
    assert err[0].endswith("and each Megatron-LM flag this simulator reads, with _ for - (tensor_model_parallel_size; "
                           "simpy-astra generate megatron --help lists them)"), err[0]


@pytest.mark.parametrize("given, nan", [("--lr nan", "--lr"), ("--lr 1e-4 --min-lr nan", "--min-lr")])
def test_a_learning_rate_of_nan_is_refused_as_megatrons_assert_refuses_it(given, nan):
    # Megatron's validate_args: assert args.min_lr <= args.lr, false when either is NaN (Python's
    # float('nan') compares false); the check here asked min_lr > lr, also false, and ran on
    from simpy_astra.errors import InvalidConfigurationError
    from simpy_astra.workloads.megatron.arguments import parse

    with pytest.raises(InvalidConfigurationError) as caught:
        parse(f"{ARGS} {given}", 8, "s.yaml: workload.args")
    assert caught.value.message.startswith(f"s.yaml: workload.args: {nan} nan is not a number, so --min-lr "), \
        caught.value.message
    assert caught.value.message.endswith("(Megatron: assert args.min_lr <= args.lr)")
    parse(f"{ARGS} --lr 1e-4 --min-lr 1e-5", 8, "s.yaml: workload.args")  # a finite pair runs


@pytest.mark.parametrize("flag", ["--loss-scale", "--clip-grad", "--sgd-momentum"])
def test_an_infinite_scale_clip_or_momentum_is_refused(flag):
    # float('1e400') is inf: a constant loss scale of inf overflows every step's gradients (the
    # optimizer skips them all), a clip of inf or a momentum of inf is no setting; 'inf' was accepted
    from simpy_astra.errors import InputError
    from simpy_astra.workloads.megatron.arguments import parse

    extra = " --optimizer sgd" if flag == "--sgd-momentum" else ""
    for value in ("1e400", "inf"):
        with pytest.raises(InputError, match=f"argument {flag}: must be a finite number, at least 0"):
            parse(f"{ARGS}{extra} {flag} {value}", 8, "s.yaml: workload.args")
    parse(f"{ARGS}{extra} {flag} 0.5", 8, "s.yaml: workload.args")  # a finite one runs


def test_an_empty_scheduler_address_is_refused_not_run_here(tmp_path, capsys, monkeypatch):
    # --cluster "$SCHEDULER" with the variable unset ran every point locally, without a word
    monkeypatch.chdir(tmp_path)
    err = error_lines(capsys, ["sweep", str(SCENARIOS / "sweeps" / "quick.yaml"), "--out", "o", "--cluster", ""])
    assert err == ["error: --cluster: must be a Dask scheduler's address such as tcp://HOST:8786 (got an empty "
                   "string); leave the flag out to run the points here"], err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("flag", ["--holdout", "--regimes"])
def test_validate_refuses_an_empty_path_for_its_optional_files(tmp_path, capsys, monkeypatch, flag):
    # --holdout "$FIT" with the variable unset validated without the held-out report, without a word
    monkeypatch.chdir(tmp_path)
    (tmp_path / "system.json").write_text(json.dumps({  # calibrate's system (docs/calibration.md)
        "scheduling-policy": "LIFO", "collective-optimization": "localBWAware", "endpoint-delay": 10,
        "active-chunks-per-dimension": 1, "preferred-dataset-splits": 1, "local-mem-bw": 1000000,
        "all-reduce-implementation": ["halvingDoubling"], "all-gather-implementation": ["ring"],
        "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["direct1"]}))
    err = error_lines(capsys, ["validate", str(NCCL / "all_reduce.log"), "--network", str(NCCL / "network.yml"),
                               "--system", "system.json", "--out", "o", flag, ""])
    assert err == [f"error: {flag}: must be a file path (got an empty string); leave the flag out to validate "
                   f"without it"], err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("rank", [0, 5])
def test_a_workload_named_by_one_of_its_files_is_told_the_prefix(tmp_path, capsys, rank):
    # 'error: .../step.0.et.0.et: the ET file for NPU 0 does not exist', a name nobody wrote
    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    prefix = SCENARIOS / doc["workload"]
    doc["workload"] = f"{prefix}.{rank}.et"
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    told = (f"{prefix}.{rank}.et: is the ET file of NPU {rank}; a workload is the prefix of its ET files, PREFIX for "
            f"PREFIX.0.et, PREFIX.1.et ...: give {prefix}")
    assert err == [f"error: {told}"], err
    # a job's workload alike ('no ET files .../step.0.et.0.et ...')
    doc["jobs"] = [{"name": "a", "workload": doc.pop("workload"), "placement": "contiguous"}]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert error_lines(capsys, ["run", str(path), "--quiet"]) == [f"error: {path}: jobs[0].workload: {told}"]


def test_a_system_json_given_as_the_remote_memory_is_refused(tmp_path, capsys):
    # the system JSON in the remote memory's place ran (as NO_MEMORY_EXPANSION) under ten
    # warnings, one a key; no key of a remote-memory file is required, so nothing stopped it
    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    system = tmp_path / "system.json"
    system.write_text(json.dumps(doc["system"]))
    network = tmp_path / "network.yml"
    network.write_text(yaml.safe_dump(doc["network"]))
    err = error_lines(capsys, [f"--workload-configuration={SCENARIOS / doc['workload']}",
                               f"--system-configuration={system}", f"--network-configuration={network}",
                               f"--remote-memory-configuration={system}"])
    assert err == [f"error: {system}: holds a system JSON's fields (scheduling-policy, collective-optimization, "
                   f"endpoint-delay, ...) and none of a remote-memory JSON's; give the remote-memory JSON file, e.g. "
                   f"{{\"memory-type\": \"NO_MEMORY_EXPANSION\"}}"], err


@pytest.mark.parametrize("command", ["calibrate", "validate"])
def test_a_misspelt_key_in_calibrates_system_is_warned_of_as_run_warns(tmp_path, capsys, monkeypatch, command):
    # 'endpoint-dealy': 100 kept calibrate's default endpoint delay (10 ns) without a word; run
    # warns of it (README: a key no reader uses is a warning in ASTRA-sim's own files)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "system.json").write_text(json.dumps({"endpoint-dealy": 100, "preferred-dataset-splits": 1}))
    argv = [command, str(NCCL / "all_reduce.log"), "--network", str(NCCL / "network.yml"), "--system", "system.json",
            "--out", "o"]
    assert main(argv) == 0
    assert ("warning: system.json: field 'endpoint-dealy' is not a system setting and is ignored (as in ASTRA-sim); "
            "did you mean 'endpoint-delay'?") in capsys.readouterr().err.splitlines()


def test_a_misspelt_key_in_calibrates_network_is_warned_of_as_run_warns(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "network.yml").write_text((NCCL / "network.yml").read_text() + "latncy: [5]\n")
    assert main(["calibrate", str(NCCL / "all_reduce.log"), "--network", "network.yml", "--out", "o"]) == 0
    assert ("warning: network.yml: field 'latncy' is not a network field and is ignored; did you mean 'latency'?"
            in capsys.readouterr().err.splitlines())


def test_list_marks_a_point_whose_traces_are_not_there(tmp_path, capsys, monkeypatch):
    # an axis over workload prefixes: --list listed a prefix without files as a point like the
    # others, and its run failed on the first check it makes ('the ET file for NPU 0 does not exist')
    from tests.test_hostile_hunt8 import _listed

    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    monkeypatch.chdir(tmp_path)  # short coordinates: each line keeps its mark within 80 columns
    shutil.copytree((SCENARIOS / doc["workload"]).parent, tmp_path / "w")  # wherever the checkout is
    there, missing = "w/step", "nothing/step"
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump(doc, sort_keys=False))
    sweep = tmp_path / "sw.yaml"
    sweep.write_text(yaml.safe_dump({"base": "base.yaml", "axes": {"workload": [there, missing]}}, sort_keys=False))
    marks, reasons = _listed(capsys, sweep)
    assert marks == {f"workload={there}": False, f"workload={missing}": True}, marks
    said = f"{tmp_path / missing}.0.et: the ET file for NPU 0 does not exist"
    assert "".join(said.split()) in "".join(reasons.split()), reasons  # wrapped at 80 columns anywhere


@pytest.mark.parametrize("argv, what", [
    (["run", "-"], "scenario YAML"),
    (["sweep", "-", "--out", "o"], "sweep YAML"),
    (["calibrate", "-", "--network", str(NCCL / "network.yml"), "--out", "o"], "nccl-tests log"),
])
def test_a_dash_for_an_input_says_stdin_is_not_read(tmp_path, capsys, monkeypatch, argv, what):
    # 'cat s.yaml | simpy-astra run -' said '-: scenario YAML file does not exist (relative paths
    # resolve from ...)', as if a file named '-' had been meant
    monkeypatch.chdir(tmp_path)
    err = error_lines(capsys, argv)
    assert err == [f"error: -: '-' is not read as stdin here; save the {what} to a file and give its path"], err
