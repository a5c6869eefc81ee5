"""A ninth hunt for inputs that ran as something other than what they say, or were refused in
words that sent the user elsewhere: each is now refused (or stated) before the run in one line
naming the file (or flag), the field and the fix."""

from __future__ import annotations

import csv
import json
import os

import pytest
import yaml

from simpy_astra.cli.main import main
from tests.scenario_files import SCENARIOS, error_lines
from tests.scenario_files import TINY_GPT_ARGS as ARGS
from tests.test_hostile_hunt6 import write_rows
from tests.test_hostile_hunt8 import _scenario
from tests.wrapped_lines import unwrapped


def _events_by_npu(path) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for event in json.loads(path.read_text())["traceEvents"]:
        out.setdefault(event["pid"], []).append(event)
    return out


def test_a_trace_past_what_a_browser_opens_is_refused_before_the_run(tmp_path, capsys):
    # SC'21's 1,536-GPU row: 10,058,112 workload nodes (80 layers over 8 stages, 48
    # micro-batches, counted by building the run), one trace event each of at least ~130 bytes.
    # --trace-out ran the job unfolded (8.5 min, 6 GB), then wrote gigabytes no browser opens
    scenario = SCENARIOS / "megatron_gpt_145b_sc21.yaml"
    out = tmp_path / "t.json"
    err = error_lines(capsys, ["run", str(scenario), "--quiet", "--trace-out", str(out)])
    assert len(err) == 1 and err[0].startswith("error: --trace-out: the trace of all 1,536 NPUs would be at "
                                               "least "), err
    size = float(err[0].split("at least ")[1].split(" GB")[0])
    assert 10_058_112 * 120 / 1e9 < size < 10_058_112 * 200 / 1e9
    assert "past the 1.0 GB a browser opens; select NPUs with --trace-npus (--trace-npus 0-7: about" in err[0]
    assert not out.exists()


def test_the_size_bound_is_under_the_trace_written(tmp_path, capsys):
    # the bound leaves out digits of times it cannot know before the run: under the file, not
    # far under it (this job records no chunk phases: its collectives are NCCL's)
    from simpy_astra.config.scenario import load_scenario
    from simpy_astra.report import trace_size

    scenario = _scenario(tmp_path)
    out = tmp_path / "t.json"
    assert main(["run", str(scenario), "--quiet", "--trace-out", str(out)]) == 0
    inputs = load_scenario(str(scenario))
    per_npu = trace_size.lazy_node_bytes(inputs.workload_prefix, inputs.workload.prepared)
    events = sum(len(e) for e in _events_by_npu(out).values())
    assert len(per_npu) == 8
    bound = sum(per_npu.values())
    assert 0.6 * out.stat().st_size < bound < out.stat().st_size, (bound, out.stat().st_size, events)


def test_trace_npus_writes_those_npus_only(tmp_path, capsys):
    scenario = _scenario(tmp_path)
    full, some = tmp_path / "full.json", tmp_path / "some.json"
    assert main(["run", str(scenario), "--quiet", "--trace-out", str(full)]) == 0
    assert main(["run", str(scenario), "--quiet", "--trace-out", str(some), "--trace-npus", "0-1,6"]) == 0
    everything, chosen = _events_by_npu(full), _events_by_npu(some)
    assert sorted(everything) == list(range(8)) and sorted(chosen) == [0, 1, 6]
    assert all(chosen[i] == everything[i] for i in chosen)


def test_an_et_trace_past_the_limit_is_refused_once_read(tmp_path, capsys, monkeypatch):
    # ET files: the nodes are counted from the built run, before time starts
    from simpy_astra.report import trace_size

    monkeypatch.setattr(trace_size, "LIMIT_BYTES", 1000)
    out = tmp_path / "t.json"
    assert main(["run", str(SCENARIOS / "default.yaml"), "--trace-out", str(out)]) == 2
    std, err = capsys.readouterr()
    assert std == "" and not out.exists()
    assert err.strip().startswith("error: --trace-out: the trace of all 8 NPUs would be at least ")
    assert main(["run", str(SCENARIOS / "default.yaml"), "--quiet", "--trace-out", str(out),
                 "--trace-npus", "3"]) == 0
    assert sorted(_events_by_npu(out)) == [3]


@pytest.mark.parametrize("npus, words", [
    ("8", "'8' is past this run's 8 NPUs (0-7)"),
    ("5-2", "'5-2' runs backwards; give FIRST-LAST with FIRST <= LAST, such as 2-5"),
    ("0,x", "'x' is no NPU id or range; give ids and ranges such as 0-7,64"),
])
def test_trace_npus_out_of_the_run_is_refused(tmp_path, capsys, npus, words):
    err = error_lines(capsys, ["run", str(_scenario(tmp_path)), "--trace-out", str(tmp_path / "t.json"),
                               "--trace-npus", npus])
    assert err == [f"error: --trace-npus: {words}"], err


def test_trace_npus_without_a_trace_is_refused(tmp_path, capsys):
    err = error_lines(capsys, ["run", str(_scenario(tmp_path)), "--trace-npus", "0"])
    assert err == ["error: --trace-npus: selects the NPUs --trace-out writes; give --trace-out too, or leave out "
                   "--trace-npus"], err


@pytest.mark.parametrize("argv", [
    ["generate", "microbench", "--collective", "all_reduce", "--size", "1024", "--num-npus", "2"],
    ["generate", "transformer", "--dp", "2"],
    ["generate", "megatron", "--gpus", "8", "--output", "-", "--", *ARGS.split()],
    ["generate", "gemm", "--mnk", "mnk.csv", "--parallel", "DATA", "--num-npus", "2"],
    ["convert", "text", "--input", str(SCENARIOS / "workloads" / "text" / "Resnet50_DataParallel.txt"),
     "--num-npus", "2", "--num-passes", "1"],
])
def test_an_et_prefix_of_dash_is_refused(tmp_path, capsys, monkeypatch, argv):
    # '--output -' (stdout to many tools) wrote -.0.et, -.1.et, ... into the working folder, as
    # the run's output flags did before they refused '-'
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mnk.csv").write_text("Layer,m,n,k\nl1,64,64,64\n")
    argv = argv if "--output" in argv else [*argv, "--output", "-"]
    err = error_lines(capsys, argv)
    assert err == ["error: --output: '-' would be files named '-.0.et', '-.1.et', ... here, not stdout (a trace "
                   "is one binary file per NPU); give a file prefix such as traces/allreduce"], err
    assert sorted(os.listdir(tmp_path)) == ["mnk.csv"]


@pytest.mark.parametrize("schedule", ["1f1b", "zb-h1"])
def test_a_pipeline_schedule_on_one_stage_is_refused(tmp_path, capsys, schedule):
    # the step was the same with and without it: Megatron-Core's get_forward_backward_func
    # takes forward_backward_no_pipelining when the pipeline size is 1, whatever is asked
    path = _scenario(tmp_path, {"workload": {"generate": "megatron", "args": ARGS, "schedule": schedule},
                                "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}})
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {path}: workload.schedule: pipeline schedule '{schedule}' on one pipeline stage: "
                   f"Megatron runs no pipeline schedule then (each micro-batch's forward and backward in turn); "
                   f"remove workload.schedule, or set --pipeline-model-parallel-size 2 or more"], err


def test_a_pipeline_schedule_on_two_stages_runs(tmp_path, capsys):
    args = ARGS.replace("--num-layers 2", "--num-layers 4") + " --pipeline-model-parallel-size 2"
    path = _scenario(tmp_path, {"workload": {"generate": "megatron", "args": args, "schedule": "zb-h1"},
                                "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}})
    assert main(["run", str(path), "--quiet"]) == 0


@pytest.mark.parametrize("text", ["", "# nothing yet\n", "---\n"])
def test_an_empty_scenario_says_it_is_empty_and_what_goes_in(tmp_path, capsys, text):
    # "a scenario must be a mapping with keys workload, system, network": the file was empty,
    # and a real job has no system: or network: (its cluster: gives them)
    path = tmp_path / "s.yaml"
    path.write_text(text)
    err = error_lines(capsys, ["run", str(path)])
    assert err == [f"error: {path}: is empty (no YAML in it); a scenario is a mapping with workload: and either "
                   f"cluster: {{preset: NAME, gpus: N}} (a real job) or system: and network: (run --help lists "
                   f"them)"], err
    err = error_lines(capsys, ["sweep", str(path), "--list"])
    assert err == [f"error: {path}: is empty (no YAML in it); a sweep is a mapping with base: (a scenario, or its "
                   f"file) and axes: {{FIELD: [VALUES]}}"], err


def _cyrillic(tmp_path, old: str, new: str):
    """The test scenario with ``old`` written ``new`` (a Cyrillic letter in it)."""
    path = _scenario(tmp_path)
    path.write_text(path.read_text().replace(old, new, 1))
    return path


CYRILLIC_O, CYRILLIC_IE, CYRILLIC_A = "\u043e", "\u0435", "\u0430"


@pytest.mark.parametrize("old, new, words", [
    ("workload:", f"w{CYRILLIC_O}rkload:",
     f"field 'w{CYRILLIC_O}rkload' (its '{CYRILLIC_O}' is U+043E CYRILLIC SMALL LETTER O, not ASCII: retype it) is "
     f"not a scenario field; did you mean 'workload'?"),
    ("generate:", f"g{CYRILLIC_IE}nerate:",
     f"field 'workload.g{CYRILLIC_IE}nerate' (its '{CYRILLIC_IE}' is U+0435 CYRILLIC SMALL LETTER IE, not ASCII: "
     f"retype it) is not a workload field; did you mean 'generate'?"),
    ("preset:", f"pr{CYRILLIC_IE}set:",
     f"cluster: unknown key 'pr{CYRILLIC_IE}set' (its '{CYRILLIC_IE}' is U+0435 CYRILLIC SMALL LETTER IE, not "
     f"ASCII: retype it); did you mean 'preset'?"),
    ("dgx-a100", f"dgx-{CYRILLIC_A}100",
     f"cluster.preset: 'dgx-{CYRILLIC_A}100-80gb' (its '{CYRILLIC_A}' is U+0430 CYRILLIC SMALL LETTER A, not "
     f"ASCII: retype it) is not a preset (dgx-a100-40gb, dgx-a100-80gb, dgx-h100) nor a YAML file"),
    ("--num-layers", f"--num-l{CYRILLIC_A}yers",
     f"workload.args: --num-l{CYRILLIC_A}yers is not an argument of Megatron-LM's pretrain_gpt.py that this "
     f"simulator knows (its '{CYRILLIC_A}' is U+0430 CYRILLIC SMALL LETTER A, not ASCII: retype it); did you "
     f"mean --num-layers?"),
])
def test_a_look_alike_letter_is_named(tmp_path, capsys, old, new, words):
    # the scenario reads as right; "did you mean 'workload'?" of 'wоrkload' left the user
    # looking at two equal-looking words. 'workload.gеnerate' was told the mapping lacks
    # generate, and 'prеset' got the list of 20 cluster keys, preset among them
    path = _cyrillic(tmp_path, old, new)
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {path}: {words}"], err


def test_a_misspelt_generate_is_named(tmp_path, capsys):
    path = _cyrillic(tmp_path, "generate:", "generat:")
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {path}: field 'workload.generat' is not a workload field; did you mean 'generate'?"], err


def test_a_transformer_layout_that_cannot_split_the_heads_is_invalid_not_failed(tmp_path, capsys):
    # lab_gpt175b_system2.yaml's 4 tp 64 points (96 heads do not split 64 ways: STAGE refuses
    # it, as Megatron refuses heads % tp) were failures: "will fail" in --list, "error" rows;
    # a layout the model cannot be split by is a result of the design space, as Megatron's are
    doc = yaml.safe_load((SCENARIOS / "transformer_llama_16npus.yaml").read_text())
    doc["workload"].update(dmodel=192, dff=512, head=12, kvhead=4, num_stacks=2, seq=128, pp=1, sp=1, micro_batch=8)
    doc.pop("name")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": doc, "axes": {"workload.tp": [2, 8], "workload.dp": [8, 2]},
                                     "constraints": ["dp * tp == 16"]}))
    assert main(["sweep", str(sweep), "--list"]) == 0
    out = capsys.readouterr().out
    assert "2 points, 1 invalid (each breaks a rule named below; they will not run)" in out
    assert "invalid: 1 point(s) break the rule 'heads divisible by tp'" in out and "will fail" not in out
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out"), "--no-plots", "--jobs", "1"]) == 0
    with open(tmp_path / "out" / "results.csv") as f:
        rows = {(row["workload.tp"], row["status"]) for row in csv.DictReader(f)}
    assert rows == {("2", "ok"), ("8", "invalid")}


@pytest.fixture
def backends():
    """The backend registry and the loggp module as they were before the test."""
    import sys

    from simpy_astra.network import backends as registry

    before = dict(registry.BACKENDS)  # the dict itself stays: modules hold it by name
    sys.modules.pop("loggp", None)
    yield
    registry.BACKENDS.clear()
    registry.BACKENDS.update(before)
    sys.modules.pop("loggp", None)


def test_two_spellings_of_one_backend_are_one_backend_in_best_json(tmp_path, capsys, monkeypatch, backends):
    # 'loggp' and 'loggp:LOGGP' (examples/loggp.py registers BackendSpec("loggp", ...) as
    # LOGGP) run one backend; best.json listed two and named no overall best
    import shutil

    shutil.copy(SCENARIOS.parent / "examples" / "loggp.py", tmp_path / "loggp.py")
    base = _ring8(tmp_path)
    base["plugins"] = ["loggp"]
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": base, "axes": {"backend": ["loggp", "loggp:LOGGP"]}}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the module is found beside the sweep, as a point's run finds it
    assert main(["sweep", str(sweep), "--out", "out", "--no-plots", "--jobs", "1"]) == 0
    best = json.loads((elsewhere / "out" / "best.json").read_text())
    assert best["backends"] == ["loggp"] and best["best"]["objective"] > 0 and "by_backend" not in best


def _ring8(tmp_path) -> dict:
    """The default scenario (8 NPUs on a ring, ET traces), its paths made absolute."""
    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    for key in ("workload", "system", "network", "remote_memory"):
        if isinstance(doc.get(key), str):
            doc[key] = str(SCENARIOS / doc[key])
    return doc


def test_an_edited_coordinate_in_results_csv_is_refused_on_resume(tmp_path, capsys):
    # the row of key K (num-layers 4) edited to say num-layers 8 resumed as done: the summary
    # and the plots gave 4 layers' figures to 8 layers, a point never run
    from tests.test_hostile_hunt8 import _megatron_sweep

    sweep = _megatron_sweep(tmp_path, {"workload.args.num-layers": [2, 4]})
    out = tmp_path / "out"
    assert main(["sweep", str(sweep), "--out", str(out), "--no-plots", "--jobs", "1"]) == 0
    rows = list(csv.DictReader((out / "results.csv").open()))
    column = "workload.args.num-layers"
    assert [row[column] for row in rows] == ["2", "4"]
    key = rows[1]["key"]
    rows[1][column] = "8"
    write_rows(out / "results.csv", rows)
    before = (out / "results.csv").read_bytes()
    capsys.readouterr()
    err = error_lines(capsys, ["sweep", str(sweep), "--out", str(out), "--no-plots", "--jobs", "1"])
    assert err == [f"error: {out / 'results.csv'}: line 3: {column}: '8' is not the value of its key {key} (4); fix "
                   f"or delete that line (its point then runs again); the file is left as it is"], err
    assert (out / "results.csv").read_bytes() == before


def _headline_and_warnings(capsys, path) -> tuple[str, list[str]]:
    assert main(["run", str(path), "--quiet"]) == 0
    out, err = capsys.readouterr()
    return out.strip(), [line for line in unwrapped(err) if line.startswith("warning:")]


def test_links_between_nodes_on_a_one_node_job_are_said_to_change_nothing(tmp_path, capsys):
    # 8 GPUs of a DGX A100 (8 a node): inter_node_* and the leaves were taken without a word
    cluster = {"preset": "dgx-a100-80gb", "gpus": 8}
    plain = _scenario(tmp_path, {"workload": {"generate": "megatron", "args": ARGS}, "cluster": cluster}, "a.yaml")
    slow = _scenario(tmp_path, {"workload": {"generate": "megatron", "args": ARGS},
                                "cluster": {**cluster, "inter_node_gbit_s": 1, "oversubscription": 4}}, "b.yaml")
    headline, warnings = _headline_and_warnings(capsys, plain)
    assert warnings == []
    assert _headline_and_warnings(capsys, slow) == (headline, [
        f"warning: {slow}: cluster.{key} changes nothing here: the 8 GPUs sit in one node (8 a node), so no "
        f"message leaves it; it applies from 9 GPUs" for key in ("inter_node_gbit_s", "oversubscription")])


def test_a_spine_over_one_leaf_is_said_to_change_nothing(tmp_path, capsys):
    # 4 nodes under a leaf of 4: no message crosses the spine, so its 2:1 changes nothing; under
    # leaves of 2 it does (the step is slower)
    args = ARGS.replace("--global-batch-size 16", "--global-batch-size 64")

    def step(leaf: int, oversubscription: int | None) -> tuple[str, list[str]]:
        cluster = {"preset": "dgx-a100-80gb", "gpus": 32, "nodes_per_leaf": leaf}
        if oversubscription:
            cluster["oversubscription"] = oversubscription
        name = f"s{leaf}{oversubscription}.yaml"
        return _headline_and_warnings(capsys, _scenario(tmp_path, {"workload": {"generate": "megatron", "args": args},
                                                                   "cluster": cluster}, name))

    full, _ = step(4, None)
    assert step(4, 2) == (full, [f"warning: {tmp_path / 's42.yaml'}: cluster.oversubscription changes nothing here: "
                                 f"the 4 nodes sit under one leaf switch (nodes_per_leaf 4), so no message crosses "
                                 f"the spine; it applies from 5 nodes (40 GPUs)"])
    spine, warnings = step(2, 2)
    assert warnings == [] and spine != step(2, None)[0]


def test_nvlink_in_bytes_a_second_is_refused(tmp_path, capsys):
    # NVLink 5's 900 GB/s written in B/s (9e11) ran as a 9e11 GiB/s NVLink (bound 1e12): every
    # intra-node transfer took its latency alone. A B/s figure of any NVLink is past 1e9
    path = _scenario(tmp_path, {"workload": {"generate": "megatron", "args": ARGS},
                                "cluster": {"preset": "dgx-a100-80gb", "gpus": 8, "nvlink_gib_s": 900e9}})
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {path}: cluster.nvlink_gib_s: must be between 0.001 and 1e+09 (GiB/s per GPU and "
                   f"direction, not B/s; got 900000000000.0)"], err


def _sweep_of(tmp_path, extra: dict):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": {"workload": {"generate": "megatron", "args": ARGS},
                                              "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}},
                                     "axes": {"cluster.gpus": [8, 16]}, **extra}))
    return sweep


def test_one_constraint_not_in_a_list_is_shown_as_a_list(tmp_path, capsys):
    sweep = _sweep_of(tmp_path, {"constraints": "gpus > 8"})
    err = error_lines(capsys, ["sweep", str(sweep), "--list"])
    assert err == [f"error: {sweep}: field 'constraints' must be a list of expressions (got str); write "
                   f"constraints: [\"gpus > 8\"]"], err


def test_a_sweep_name_that_is_a_list_is_refused(tmp_path, capsys):
    # name: [1, 2] named the sweep "[1, 2]" in best.json and the summary
    sweep = _sweep_of(tmp_path, {"name": [1, 2]})
    err = error_lines(capsys, ["sweep", str(sweep), "--list"])
    assert err == [f"error: {sweep}: field 'name' is the sweep's label, one line of text (got a list); several "
                   f"values to run are a sweep's axes: over fields a run reads (sweep --help)"], err


def test_an_et_prefix_that_is_a_folder_is_refused(tmp_path, capsys, monkeypatch):
    # --output traces (a folder) wrote traces.0.et, traces.1.et beside it, not inside
    monkeypatch.chdir(tmp_path)
    (tmp_path / "traces").mkdir()
    err = error_lines(capsys, ["generate", "microbench", "--collective", "all_reduce", "--size", "1024",
                               "--num-npus", "2", "--output", "traces"])
    assert err == [f"error: --output: traces is a folder; a prefix names files, so they would be traces.0.et, "
                   f"traces.1.et, ... beside it: give {os.path.join('traces', 'NAME')} to write NAME.0.et, ... "
                   f"inside it"], err
    assert sorted(os.listdir(tmp_path)) == ["traces"] and not os.listdir(tmp_path / "traces")


@pytest.mark.parametrize("value, bound", [(0, "must be an integer >= 1 (got 0)"),
                                          (10**12, "must be at most 2147483647 (got 1000000000000)")])
def test_active_chunks_out_of_range_is_told_what_the_field_is(tmp_path, capsys, value, bound):
    # a trillion was told "with 0 no chunk would ever start"
    doc = _ring8(tmp_path)
    doc["system"]["active-chunks-per-dimension"] = value
    path = _scenario(tmp_path, doc)
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {path}: system: field 'active-chunks-per-dimension' {bound}; it is how many chunks of "
                   f"a dimension run at once (with 0 none would start)"], err


def test_more_sweep_processes_than_the_cpus_can_hold_are_refused(tmp_path, capsys, monkeypatch):
    # --jobs 100000 started a process per point (a 24-point sweep: 24 on 2 CPUs, each importing
    # the simulator and holding its point); a 100,000-point sweep would exhaust the memory
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    sweep = _sweep_of(tmp_path, {})
    err = error_lines(capsys, ["sweep", str(sweep), "--out", str(tmp_path / "out"), "--jobs", "100000"])
    assert err == ["error: --jobs 100000: this machine has 2 CPU(s); points are CPU-bound, so more processes only "
                   "share them, each holding its own simulation in memory; give at most 8 (the default is 2)"], err
    assert not (tmp_path / "out").exists()
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out"), "--no-plots", "--jobs", "8"]) == 0


@pytest.mark.parametrize("report, shown, example", [("finish_ns", '"finish_ns"', '["finish_ns"]'),
                                                    (True, "true", "[finish_ns]")])
def test_a_report_that_is_no_list_is_shown_as_one(tmp_path, capsys, report, shown, example):
    sweep = _sweep_of(tmp_path, {"report": report})
    err = error_lines(capsys, ["sweep", str(sweep), "--list"])
    assert err == [f"error: {sweep}: field 'report' must be a non-empty list of result names or expressions (got "
                   f"{shown}); write report: {example}"], err
