"""A seventh hunt for inputs that ran as something other than what they say, or were refused in
words that sent the user elsewhere: each is now refused before the run in one line naming the
file (or flag), the field and the fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main
from tests.scenario_files import SCENARIOS, error_lines
from tests.scenario_files import TINY_GPT_ARGS as ARGS
from tests.wrapped_lines import plain


def _scenario(tmp_path, doc: dict | None = None):
    path = tmp_path / "s.yaml"
    doc = doc or {"workload": {"generate": "megatron", "args": ARGS}, "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("file_flag, folder_flag, folder", [
    ("--json-out", "--plots", "o.json"),
    ("--trace-out", "--csv-out", "o.json"),
    ("--json-out", "--csv-out", os.path.join("o.json", "csv")),
])
def test_a_folder_output_on_a_file_output_is_refused_before_the_run(tmp_path, capsys, monkeypatch, file_flag,
                                                                     folder_flag, folder):
    # neither path exists before the run, so each passed its own check: the run printed its
    # answer, wrote o.json, and then failed on "--plots: cannot write into o.json (File exists)"
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(_scenario(tmp_path)), "--quiet", file_flag, "o.json", folder_flag, folder]) == 2
    out, err = capsys.readouterr()
    assert out == "" and not (tmp_path / "o.json").exists()
    err = err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {folder_flag}: {folder} is a folder"), err
    assert f"where {file_flag} writes a file; give each output its own path" in err[0]


def test_a_folder_output_beside_a_file_output_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(_scenario(tmp_path)), "--quiet", "--json-out", "o.json", "--csv-out", "csv"]) == 0
    assert (tmp_path / "o.json").is_file() and (tmp_path / "csv" / "nodes.csv").is_file()


def test_a_microbenchmark_on_more_gpus_than_trace_files_blames_the_cluster(tmp_path, capsys):
    # 262,144 GPUs (the largest cluster a run builds) for a microbenchmark, which writes one
    # trace a GPU and at most 65,536: the error blamed "workload.num_npus", a field the
    # scenario leaves out (the count is the cluster's), and said to lower "the parallelism"
    path = _scenario(tmp_path, {"workload": {"generate": "microbench", "collective": "all_reduce", "size": 1048576},
                                "cluster": {"preset": "dgx-h100", "gpus": 262144}})
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1 and err[0].startswith(f"error: {path}: cluster.gpus: 262,144 GPUs would write"), err
    assert "at most 65,536" in err[0] and "num_npus" not in err[0]


def test_a_microbenchmark_with_its_own_npu_count_past_the_files_names_it(tmp_path, capsys):
    path = _scenario(tmp_path, {"workload": {"generate": "microbench", "collective": "all_reduce", "size": 1048576,
                                             "num_npus": 1048576},
                                "cluster": {"preset": "dgx-h100", "gpus": 262144}})
    assert main(["run", str(path), "--quiet"]) == 2
    assert f"error: {path}: workload.num_npus: 1048576 NPUs would write" in capsys.readouterr().err


def _jobs_scenario(tmp_path, first: dict, second: dict | None = None):
    import json

    system = tmp_path / "sys.json"
    system.write_text(json.dumps({"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
                                  "preferred-dataset-splits": 4, "local-mem-bw": 50,
                                  "collective-optimization": "baseline", "all-reduce-implementation": ["ring"],
                                  "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
                                  "all-to-all-implementation": ["direct"]}))
    workload = {"generate": "microbench", "collective": "all_reduce", "size": 1048576, "num_npus": 4}
    jobs = [{"name": "a", "workload": workload, **first}]
    if second is not None:
        jobs.append({"name": "b", "workload": workload, **second})
    return _scenario(tmp_path, {"network": {"topology": ["Switch"], "npus_count": [8], "bandwidth": [50.0],
                                            "latency": [500.0]},
                                "backend": "congestion_aware", "system": str(system), "jobs": jobs})


def test_a_job_listing_one_npu_twice_is_told_so(tmp_path, capsys):
    # npus [0, 0, 1, 2]: "NPU 0 is already used by job 'a'; jobs 'a' and 'a' overlap", as if a
    # second job named a had taken it
    path = _jobs_scenario(tmp_path, {"npus": [0, 0, 1, 2]}, {"placement": "strided"})
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {path}: jobs[0].npus: lists NPU 0 twice; give each rank its own NPU"], err


def test_two_jobs_on_one_npu_name_both(tmp_path, capsys):
    path = _jobs_scenario(tmp_path, {"npus": [0, 1, 2, 3]}, {"npus": [3, 4, 5, 6]})
    assert main(["run", str(path), "--quiet"]) == 2
    assert "jobs[1].npus: NPU 3 is already used by job 'a'; jobs 'a' and 'b' overlap" in capsys.readouterr().err


def test_a_job_with_too_few_npus_names_its_workload_as_written(tmp_path, capsys):
    # the error named the generated workload's cache entry
    # (~/.cache/simpy-astra/workloads/microbench-58b6.../microbench), a file the user never wrote
    path = _jobs_scenario(tmp_path, {"npus": [0]})
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {path}: jobs[0].npus: lists 1 NPUs but jobs[0].workload (generate microbench) has 4 "
                   f"ranks; give one NPU per rank"], err


@pytest.mark.parametrize("key, value, example", [
    # each was told "e.g. [ 8 ]", the example of npus_count: topology: [ 8 ] is then refused
    # as "must be one of Ring, FullyConnected, Switch, Line, Graph"
    ("topology", "Ring", "[ Ring ]"),
    ("bandwidth", 50.0, "[ 50.0 ]"),
    ("latency", [], "[ 500.0 ]"),
    ("npus_count", 8, "[ 8 ]"),
])
def test_a_network_field_that_is_not_a_list_gets_an_example_of_its_own(tmp_path, capsys, key, value, example):
    # the example is ASTRA-sim's own Ring_8npus.yml: topology [ Ring ], npus_count [ 8 ],
    # bandwidth [ 50.0 ], latency [ 500.0 ]
    network = {"topology": ["Ring"], "npus_count": [8], "bandwidth": [50.0], "latency": [500.0], key: value}
    path = _scenario(tmp_path, {"workload": {"generate": "microbench", "collective": "all_reduce", "size": 1048576,
                                             "num_npus": 8},
                                "system": {"all-reduce-implementation": ["ring"]}, "network": network})
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1 and f"network: field '{key}' must be a non-empty list" in err[0], err
    assert f"e.g. {example} (got " in err[0]


@pytest.mark.parametrize("field, value, megatron, example", [
    # a figure to rank by or show was given a constraint's example, 'dp*tp == 64': a test, which
    # ranks every point 0 or 1 (and dp, tp are no names of a Megatron sweep)
    ("minimise", "", True, "iteration_time_ns"),
    ("minimise", 5, False, "finish_ns"),
    ("report", [None], True, "iteration_time_ns"),
])
def test_a_figure_that_is_no_expression_gets_a_figures_example(tmp_path, capsys, field, value, megatron, example):
    if megatron:
        base = {"workload": {"generate": "megatron", "args": ARGS}, "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}
        axes = {"workload.args.num-layers": [2, 4]}
    else:
        base = {"workload": {"generate": "microbench", "collective": "all_reduce", "size": 1048576, "num_npus": 4},
                "system": {"all-reduce-implementation": ["ring"]},
                "network": {"topology": ["Ring"], "npus_count": [4], "bandwidth": [50], "latency": [500]}}
        axes = {"network.bandwidth": [50, 100]}
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": base, "axes": axes, field: value}))
    err = error_lines(capsys, ["sweep", str(sweep), "--list"])
    where = field + ("[0]" if field == "report" else "")
    assert err == [f"error: {sweep}: {where}: must be an expression string such as '{example}' "
                   f"(got {(value[0] if field == 'report' else value)!r})"], err


def test_a_constraint_that_is_no_expression_keeps_a_tests_example(tmp_path, capsys):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": {"workload": {"generate": "megatron", "args": ARGS},
                                              "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}},
                                     "axes": {"workload.args.num-layers": [2, 4]}, "constraints": [""]}))
    assert main(["sweep", str(sweep), "--list"]) == 2
    assert "constraints[0]: must be an expression string such as 'dp*tp == 64'" in capsys.readouterr().err


@pytest.mark.parametrize("target, words", [("step.3.et", "leads back to itself (a symlink loop)"),
                                           ("nowhere.et", "does not exist")])
def test_a_rank_file_that_is_a_dead_symlink_is_named_as_one(tmp_path, capsys, target, words):
    # ls lists step.3.et, and the error said "the ET file for NPU 3 does not exist"
    import shutil

    folder = tmp_path / "et"
    shutil.copytree(SCENARIOS / "workloads" / "step_8npus_1MB", folder)
    (folder / "step.3.et").unlink()
    (folder / "step.3.et").symlink_to(target)
    path = _scenario(tmp_path, {**yaml.safe_load((SCENARIOS / "default.yaml").read_text()),
                                "workload": str(folder / "step")})
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {folder / 'step.3.et'}: the ET file for NPU 3 is a symlink to {target}, which {words}; "
                   f"point it at the rank's file"], err


@pytest.mark.parametrize("make, words", [
    (lambda p: None, "which does not exist (a relative path resolves from {folder})"),
    (lambda p: p.mkdir(), "is a directory, not a regular file"),
    (lambda p: p.symlink_to(p.name), "is a symlink loop"),
])
def test_a_preset_file_that_cannot_be_read_says_why(tmp_path, capsys, monkeypatch, make, words):
    # './my-cluster.yaml' missing (a run from another folder than the scenario's), a folder or a
    # symlink loop: each was "'./my-cluster.yaml' is not a preset (dgx-a100-40gb, dgx-a100-80gb,
    # dgx-h100) nor a YAML file", a name that plainly is a YAML file's, and nowhere it looked
    folder = tmp_path / "scenario"
    folder.mkdir()
    make(folder / "my-cluster.yaml")
    path = folder / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": ARGS},
                                    "cluster": {"preset": "./my-cluster.yaml", "gpus": 8}}))
    monkeypatch.chdir(tmp_path)
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1 and err[0].startswith(f"error: {path}: cluster.preset: "), err
    assert str(folder / "my-cluster.yaml") in err[0] and words.format(folder=folder) in err[0]
    assert "nor a YAML file" not in err[0]


def test_a_preset_flag_naming_a_missing_file_says_it_resolves_from_the_working_folder(tmp_path, capsys,
                                                                                        monkeypatch):
    # generate megatron --preset ./my.yaml has no file naming it: the path resolves from the
    # working folder, and the error must not send the user to "the folder of the file that names it"
    monkeypatch.chdir(tmp_path)
    err = error_lines(capsys, ["generate", "megatron", "--gpus", "8", "--preset", "./my.yaml", "--output", "t/x", "--", *ARGS.split()])
    assert err == [f"error: --preset: './my.yaml' is {tmp_path / 'my.yaml'}, which does not exist (a relative path "
                   f"resolves from {tmp_path})"], err


def test_an_injection_scale_past_astra_sims_int_delay_gives_the_largest_that_fits(tmp_path, capsys):
    # endpoint-delay 10 x injection_scale 1e9 = 1e10 ns, past the int ASTRA-sim keeps the delay
    # in (2^31 - 1 = 2,147,483,647): the error said "use an injection scale >= 0", which 1e9
    # is, and named --injection-scale in a scenario that gave none. The largest that fits is
    # 2,147,483,647 / 10 = 214,748,364.7
    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    doc["workload"] = str(SCENARIOS / doc["workload"])
    path = _scenario(tmp_path, {**doc, "injection_scale": 1e9})
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1 and err[0].startswith(f"error: {path}: system: field 'endpoint-delay' times the "
                                               f"injection scale 1000000000 "), err
    assert "gives 10,000,000,000 ns" in err[0] and err[0].endswith("use an injection scale of at most 214748364.7")


@pytest.mark.parametrize("collective, factor", [("all_gather", "0.875"), ("reduce_scatter", "0.875")])
def test_a_log_read_as_another_collective_names_it_with_its_article(tmp_path, capsys, collective, factor):
    # "but a all_gather on 8 GPUs has 0.875": an all-gather's busbw/algbw on 8 GPUs is 7/8
    log = Path(__file__).resolve().parent / "data" / "nccl" / "dgx-a100-superbench"
    assert main(["calibrate", str(log / "all_reduce.log"), "--network", str(log / "network.yml"),
                 "--out", str(tmp_path / "out"), "--collective", collective]) == 2
    err = capsys.readouterr().err
    article = "an" if collective[0] in "aeiou" else "a"
    assert f"here but {article} {collective} on 8 GPUs has {factor}:" in err, err


def test_a_trace_folder_for_a_run_without_local_memory_traces_is_refused(tmp_path, capsys, monkeypatch):
    # a cluster's system tracks no local memory: --trace-dir t ran, made no folder, wrote
    # nothing there and said nothing, as if the traces asked for had been written somewhere
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(_scenario(tmp_path)), "--quiet", "--trace-dir", "t"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and not (tmp_path / "t").exists()
    assert err.strip().splitlines() == ["error: --trace-dir: this run writes no local-memory traces (its system's "
                                        "track-local-mem is off); leave out --trace-dir, or turn track-local-mem on"]


def test_a_trace_folder_for_a_run_with_local_memory_traces_takes_them(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doc = yaml.safe_load((SCENARIOS / "transformer_llama_16npus.yaml").read_text())
    assert doc["system"]["track-local-mem"] == 1
    assert main(["run", str(_scenario(tmp_path, doc)), "--quiet", "--trace-dir", "t"]) == 0
    assert len(list((tmp_path / "t").glob("local_mem_trace.*.json"))) == 16


@pytest.mark.parametrize("record", ["", "{}", '{"logs": 5}'])
def test_validate_refuses_a_bad_holdout_record_before_simulating(tmp_path, capsys, monkeypatch, record):
    # --holdout's calibration.json was read after every log's every size had been simulated:
    # a wrong file (here empty, an object without logs) cost the whole validation first
    from simpy_astra.calibration import report

    def never(*_args, **_kwargs):
        raise AssertionError("simulated before reading --holdout")

    monkeypatch.setattr(report, "simulate_logs", never)
    log = Path(__file__).resolve().parent / "data" / "nccl" / "dgx-a100-superbench"
    cal = tmp_path / "calibration.json"
    cal.write_text(record)
    system = tmp_path / "system.json"
    system.write_text('{"preferred-dataset-splits": 1}')
    err = error_lines(capsys, ["validate", str(log / "all_reduce.log"), "--network", str(log / "network.yml"), "--system",
                 str(system), "--out", str(tmp_path / "out"), "--holdout", str(cal)])
    assert len(err) == 1 and err[0].startswith(f"error: {cal}: "), err


HUGE = 10 ** 309  # past the largest double, (2 - 2^-52) x 2^1023 = 1.797e308: no float holds it


@pytest.mark.parametrize("where, edit", [
    ("cluster", lambda doc: doc["cluster"].update(inter_node_latency_ns=HUGE)),
    ("cluster", lambda doc: doc["cluster"].update(gpus=HUGE)),
    ("cluster", lambda doc: doc["cluster"].update(gpu={"tensor_tflops": -HUGE})),
    ("network", lambda doc: doc.update(network={"topology": ["Ring"], "npus_count": [8], "bandwidth": [HUGE],
                                                "latency": [500]})),
])
def test_an_integer_past_any_double_in_yaml_is_an_input_error(tmp_path, capsys, where, edit):
    # YAML writes integers of any length: one of 309 digits was read, then checked as a number
    # (math.isfinite), which raised OverflowError: "internal error OverflowError: int too large
    # to convert to float (this is a simpy-astra bug ...)", exit status 1
    doc = {"workload": {"generate": "megatron", "args": ARGS}, "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}
    edit(doc)
    path = _scenario(tmp_path, doc)
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1 and err[0].startswith(f"error: {path}: invalid YAML at line "), err
    assert "a number past 1.8e+308, the largest a double holds" in err[0]


def test_an_integer_past_any_double_in_json_is_an_input_error(tmp_path, capsys):
    import json

    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    system = tmp_path / "sys.json"
    system.write_text(json.dumps({**doc["system"], "local-mem-bw": HUGE}))
    doc.update(workload=str(SCENARIOS / doc["workload"]), system=str(system))
    assert main(["run", str(_scenario(tmp_path, doc)), "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == (f"error: {system}: invalid JSON: a number past 1.8e+308, the largest a "
                                               f"double holds, and more than any field takes; check the value")


def test_an_integer_a_double_holds_is_read():
    from simpy_astra.config.yaml_reader import parse_yaml

    assert parse_yaml(f"x: {10 ** 308}") == {"x": 10 ** 308}  # 1e308 < 1.797e308


@pytest.mark.parametrize("flag", ["--seq-length", "--hidden-size", "--vocab-size", "--num-experts", "--kv-channels",
                                  "--ffn-hidden-size", "--max-position-embeddings", "--make-vocab-size-divisible-by"])
def test_a_megatron_count_past_int64_is_refused(flag):
    # argparse's int reads any length: 10^400 then met a float (a FLOP count, a byte count) and
    # raised OverflowError, an internal error; --make-vocab-size-divisible-by 10^400 ran, a step
    # of 0.005 s, faster than the job with Megatron's 128. torch's int64 tops at 2^63 - 1
    from simpy_astra.errors import InputError
    from simpy_astra.workloads.megatron.arguments import parse

    base = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
            "--global-batch-size 32 --vocab-size 32000 --bf16")
    with pytest.raises(InputError) as info:
        parse(f"{base} {flag} 1{'0' * 400}", 16, "s.yaml: workload.args")
    assert str(info.value) == (f"s.yaml: workload.args: argument {flag}: must be at most 9,223,372,036,854,775,807 "
                               f"(torch's int64 holds no larger count) (got 10000000000000000000..., 401 digits)")


def test_a_megatron_count_of_int64_is_read_and_judged_by_megatrons_rules():
    from simpy_astra.errors import InputError
    from simpy_astra.workloads.megatron.arguments import parse

    with pytest.raises(InputError) as info:  # not the range: the memory bound
        parse(f"--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length {2 ** 63 - 1} "
              f"--max-position-embeddings {2 ** 63 - 1} --micro-batch-size 1 --bf16", 16, "s.yaml: workload.args")
    assert "must be at most" not in str(info.value)


@pytest.mark.parametrize("size, count, says", [
    # the size ended the fit in "internal error OverflowError: integer division result too
    # large for a float"; the count was read and the network calibrated from the log
    (f"1{'0' * 400}", "2097152", "size of 401 digits is past 2^64 - 1"),
    ("8388608", f"1{'0' * 400}", "count of 401 digits is past 2^64 - 1"),
    (str(2 ** 64), "2097152", "size 18446744073709551616 is past 2^64 - 1"),
])
def test_a_log_size_past_size_t_is_refused_naming_its_line(tmp_path, capsys, size, count, says):
    # nccl-tests prints size and count as size_t, at most 2^64 - 1 = 18,446,744,073,709,551,615
    log = Path(__file__).resolve().parent / "data" / "nccl" / "dgx-a100-superbench"
    lines = (log / "all_reduce.log").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["8388608", "2097152"])
    lines[at] = lines[at].replace("8388608       2097152", f"{size}       {count}", 1)
    edited = tmp_path / "all_reduce.log"
    edited.write_text("\n".join(lines) + "\n")
    err = error_lines(capsys, ["calibrate", str(edited), "--network", str(log / "network.yml"), "--out", str(tmp_path / "o")])
    assert err == [f"error: {edited}:{at + 1}: {says}, the largest size_t nccl-tests prints (was the log edited?)"]


def test_a_graph_whose_edge_has_an_integer_past_any_double_is_refused(tmp_path, capsys, monkeypatch):
    # a networkx builder's own code may write any int: bandwidth_gbps 10^400 made math.isfinite
    # raise OverflowError, "internal error ... (this is a simpy-astra bug)", exit status 1
    (tmp_path / "huge_net.py").write_text(
        "import networkx as nx\n\n\ndef build():\n    g = nx.DiGraph()\n    g.add_node('sw', kind='switch')\n"
        "    for i in range(4):\n"
        "        g.add_edge(i, 'sw', bandwidth_gbps=50.0, latency_ns=100.0)\n"
        "        g.add_edge('sw', i, bandwidth_gbps=10 ** 400 if i == 0 else 50.0, latency_ns=100.0)\n"
        "    return g\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = _scenario(tmp_path, {"workload": {"generate": "microbench", "collective": "all_reduce", "size": 1048576,
                                             "num_npus": 4},
                                "system": {"all-reduce-implementation": ["ring"], "preferred-dataset-splits": 1},
                                "network": {"topology": {"networkx": "huge_net:build"}}, "backend": "congestion_aware"})
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1 and "huge_net:build returned a graph whose edge ('sw', 0) has bandwidth_gbps 1000" in err[0]
    assert err[0].endswith("; it must be a finite number > 0 (GB/s)"), err


@pytest.mark.parametrize("make, kind", [(lambda p: p.write_text("{}"), "a regular file"),
                                        (lambda p: p.symlink_to(p.name), "a symlink loop"),
                                        (lambda p: os.mkfifo(p), "a FIFO (named pipe)")])
def test_a_logging_folder_that_is_no_folder_says_what_it_is(tmp_path, capsys, make, kind):
    # "--logging-folder: cannot create folder sys.json (File exists)": mkdir -p takes a folder
    # that exists; the name was a file, a loop or a pipe, which the error never said
    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    system, network = tmp_path / "sys.json", tmp_path / "net.yml"
    system.write_text(__import__("json").dumps(doc["system"]))
    network.write_text(yaml.safe_dump(doc["network"]))
    (tmp_path / "mem.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    folder = tmp_path / "logs"
    make(folder)
    argv = [f"--workload-configuration={SCENARIOS / doc['workload']}", f"--system-configuration={system}",
            f"--network-configuration={network}", f"--remote-memory-configuration={tmp_path / 'mem.json'}",
            f"--logging-folder={folder}"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip().splitlines() == [f"error: --logging-folder: {folder} is {kind}, not a folder; "
                                                      f"name a folder"], err


def test_a_generated_workload_without_a_roofline_is_named_as_written(tmp_path, capsys):
    # the warning named NPU 0's trace in the workload cache,
    # ~/.cache/simpy-astra/workloads/transformer-f8c5.../transformer.0.et, a file the user never
    # wrote nor can find in the scenario
    doc = yaml.safe_load((SCENARIOS / "transformer_llama_16npus.yaml").read_text())
    for key in ("roofline-enabled", "peak-perf", "track-local-mem"):
        doc["system"].pop(key, None)
    path = _scenario(tmp_path, doc)
    assert main(["run", str(path), "--quiet"]) == 0
    err = plain(capsys.readouterr().err)
    assert "warning: the workload (generate transformer): " in err and "compute nodes have FLOPs" in err, err
    assert ".cache" not in err and ".et:" not in err


def test_an_npu_group_listing_one_npu_twice_is_told_so(tmp_path, capsys):
    # npus [0, 0]: "names NPU 0, which npu-groups[0] also names; an NPU is in one group", as
    # if another group had it
    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    doc["workload"] = str(SCENARIOS / doc["workload"])
    doc["system"]["npu-groups"] = [{"npus": [0, 1], "local-mem-bw": 100}, {"npus": [2, 2], "local-mem-bw": 25}]
    path = _scenario(tmp_path, doc)
    assert main(["run", str(path), "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == (f"error: {path}: system: field 'npu-groups[1].npus' names NPU 2 twice; "
                                               f"list each NPU once")


def test_validate_holdout_of_a_fit_that_held_nothing_out_says_so(tmp_path, capsys):
    # calibrate without --hold-out-every fits every size from 1 MiB to 8 GiB (2^20 .. 2^33: 14
    # sizes); validate --holdout printed their 'fitted' line alone, the held-out score it was
    # asked for missing without a word
    log = Path(__file__).resolve().parent / "data" / "nccl" / "dgx-a100-superbench"
    cal = tmp_path / "cal"
    assert main(["calibrate", str(log / "all_reduce.log"), "--network", str(log / "network.yml"),
                 "--out", str(cal)]) == 0
    capsys.readouterr()
    assert main(["validate", str(log / "all_reduce.log"), "--network", str(cal / "network.yml"), "--system",
                 str(cal / "system.json"), "--out", str(tmp_path / "v"), "--holdout", str(cal / "calibration.json")]) == 0
    out = capsys.readouterr().out.replace("\n  ", " ").splitlines()  # its lines unwrapped (80 columns)
    held = [line for line in out if line.startswith("HELD OUT")]
    assert held == ["HELD OUT dgx-a100-superbench/all_reduce.log: none, the calibration fitted every size >= 1 MiB "
                    "(calibrate with --hold-out-every N to hold some out)"], out
    assert any(line.startswith("fitted   dgx-a100-superbench/all_reduce.log: all_reduce on 8 GPUs, 14 sizes")
               for line in out)


def test_a_trace_folder_on_the_json_output_is_refused_before_any_folder_is_made(tmp_path, capsys, monkeypatch):
    # --json-out o.json --trace-dir o.json: the trace folder o.json was made first, and then the
    # run was refused as "--json-out: o.json is a directory", a folder the command had just made
    # and left behind
    monkeypatch.chdir(tmp_path)
    llama = _scenario(tmp_path, yaml.safe_load((SCENARIOS / "transformer_llama_16npus.yaml").read_text()))
    err = error_lines(capsys, ["run", str(llama), "--quiet", "--json-out", "o.json", "--trace-dir", "o.json"])
    assert err == ["error: --trace-dir: o.json is a folder where --json-out writes a file; give each output its own "
                   "path"], err
    assert not (tmp_path / "o.json").exists()


@pytest.mark.parametrize("dash, named", [("\u2212", "a minus sign"), ("\u2010", "a hyphen"),
                                         ("\uff0d", "a full-width hyphen-minus"), ("\u2013", "an en dash"),
                                         ("\u2014", "an em dash")])
def test_a_flag_typed_with_a_unicode_dash_names_it_with_its_article(dash, named):
    # every such dash was "an": "starts with an minus sign", "an hyphen", "an full-width ..."
    from simpy_astra.errors import InputError
    from simpy_astra.workloads.megatron.arguments import parse

    with pytest.raises(InputError) as info:
        parse(f"{ARGS} {dash}{dash}sequence-parallel", 8, "s.yaml: workload.args")
    assert str(info.value) == (f"s.yaml: workload.args: '{dash}{dash}sequence-parallel' starts with {named}, not two "
                               f"ASCII hyphens; type --sequence-parallel")
