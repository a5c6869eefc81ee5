"""An eighth hunt for inputs that ran as something other than what they say, or were refused in
words that sent the user elsewhere: each is now refused (or marked) before the run in one line
naming the file (or flag), the field and the fix."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main
from tests.scenario_files import SCENARIOS, error_lines
from tests.scenario_files import TINY_GPT_ARGS as ARGS
from tests.test_hostile_hunt6 import write_rows


def _scenario(tmp_path, doc: dict | None = None, name: str = "s.yaml"):
    path = tmp_path / name
    doc = doc or {"workload": {"generate": "megatron", "args": ARGS}, "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture
def registries(monkeypatch):
    """The registries and modules a test's plug-ins add to, as they were after it."""
    import sys

    from simpy_astra import collectives
    from simpy_astra.workloads.schedules import registry

    monkeypatch.setattr(registry, "SCHEDULES", dict(registry.SCHEDULES))
    monkeypatch.setattr(collectives, "REGISTRY", dict(collectives.REGISTRY))
    yield
    for name in ("h8_algos", "h8_schedules"):
        sys.modules.pop(name, None)


def _ring8(tmp_path) -> dict:
    """The default scenario (8 NPUs on a ring, ET traces), its workload made absolute."""
    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    doc["workload"] = str(SCENARIOS / doc["workload"])
    return doc


def _listed(capsys, sweep) -> tuple[dict[str, bool], str]:
    """``sweep --list``: each point's coordinates -> marked "will fail", and the reasons."""
    assert main(["sweep", str(sweep), "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in out) <= 80
    points = [line for line in out[1:] if not line.startswith(("will fail", " ", "invalid"))]
    marks = {" ".join(line.removesuffix("  will fail").split()[1:]): line.endswith("  will fail") for line in points}
    return marks, " ".join(line.strip() for line in out if line.startswith(("will fail", " ")))


def test_list_marks_a_point_the_scenario_loader_refuses_with_the_runs_own_words(tmp_path, capsys):
    # backend: bogus and network.bandwidth: -5 were listed as fine (only cluster and Megatron
    # axes were checked), then each point failed when run
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": _ring8(tmp_path),
                                     "axes": {"backend": ["congestion_unaware", "bogus"],
                                              "network.bandwidth": [50, -5]}}))
    marks, reasons = _listed(capsys, sweep)
    assert marks == {"backend=congestion_unaware bandwidth=50": False, "backend=congestion_unaware bandwidth=-5": True,
                     "backend=bogus bandwidth=50": True, "backend=bogus bandwidth=-5": True}
    assert (f"{sweep}: point backend=congestion_unaware network.bandwidth=-5: network: field 'bandwidth[0]' must "
            f"be a number > 0 (GB/s per link; got -5)") in reasons
    assert f"{sweep}: point backend=bogus network.bandwidth=50: field 'backend': must be one of" in reasons
    # the same words as the row the run records
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out"), "--no-plots", "--jobs", "1"]) == 0
    capsys.readouterr()
    with open(tmp_path / "out" / "results.csv") as f:
        errors = {row["key"]: row["error"] for row in csv.DictReader(f) if row["status"] == "error"}
    assert len(errors) == 3
    for error in errors.values():
        assert error.removeprefix("InputError: ") in reasons


def test_list_marks_a_job_placement_the_loader_refuses(tmp_path, capsys):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": str(SCENARIOS / "two_llm_jobs_fat_tree.yaml"),
                                     "axes": {"jobs.1.placement": ["strided", "diagonal"]}}))
    marks, reasons = _listed(capsys, sweep)
    assert marks == {"placement=strided": False, "placement=diagonal": True}
    assert reasons == (f"will fail: {_key('diagonal')}: {sweep}: point jobs.1.placement=diagonal: "
                       f"jobs[1].placement: must be one of contiguous, strided, random (got 'diagonal')")


def _key(value) -> str:
    from simpy_astra.sweep.spec import point_key

    return point_key({"jobs.1.placement": value})


NCCL_LOG = Path(__file__).resolve().parent / "data" / "nccl" / "dgx-a100-superbench" / "all_reduce.log"


def test_calibrate_on_a_networkx_network_says_what_it_needs(tmp_path, capsys, monkeypatch):
    # the network README's own form, topology: {networkx: module:function}: calibrate said
    # "field 'topology' must be a list with one entry per dimension", as if a list had been
    # mistyped; calibrate scales one bandwidth and latency per dimension, which a graph's
    # per-link values are not. The module need not even import for that to be said.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nx.yml").write_text('topology: {networkx: "no_such_module:build"}\n')
    err = error_lines(capsys, ["calibrate", str(NCCL_LOG), "--network", "nx.yml", "--out", "out"])
    assert err == ["error: nx.yml: field 'topology' is a networkx graph ({networkx: ...}), whose links carry their "
                   "own bandwidth and latency; calibrate fits one bandwidth and latency per dimension, so give "
                   "lists with one entry per dimension: topology (Ring, Switch, FullyConnected or Line), "
                   "npus_count, bandwidth, latency"], err


def test_calibrate_given_a_scenario_for_its_network_says_so(tmp_path, capsys):
    # "field 'topology' is missing": the scenario has one, under network:
    scenario = SCENARIOS / "dragonfly_send_recv.yaml"
    err = error_lines(capsys, ["calibrate", str(NCCL_LOG), "--network", str(scenario), "--out", str(tmp_path / "o")])
    assert err == [f"error: {scenario}: is a scenario (it has network:, no topology:); --network takes a network "
                   f"YAML: save the scenario's network: block as a file of its own and give that"], err


def _megatron_sweep(tmp_path, axes: dict):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": {"workload": {"generate": "megatron", "args": ARGS},
                                              "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}, "axes": axes}))
    return sweep


@pytest.mark.parametrize("fits", ["2", "0.5"])
def test_an_edited_fits_that_is_neither_yes_nor_no_is_refused(tmp_path, capsys, fits):
    # a run writes fits 1 or 0; an edited 2 was read as "fits" (anything but 0), and the
    # summary printed "(fits)" for it, from a value no run wrote
    sweep = _megatron_sweep(tmp_path, {"workload.args.num-layers": [2, 4]})
    out = tmp_path / "out"
    assert main(["sweep", str(sweep), "--out", str(out), "--no-plots", "--jobs", "1"]) == 0
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert [row["fits"] for row in rows] == ["1", "1"]
    rows[1]["fits"] = fits
    write_rows(out / "results.csv", rows)
    before = (out / "results.csv").read_bytes()
    capsys.readouterr()
    err = error_lines(capsys, ["sweep", str(sweep), "--out", str(out), "--no-plots", "--jobs", "1"])
    assert err == [f"error: {out / 'results.csv'}: line 3: fits: must be 1 (yes), 0 (no) or empty (got '{fits}'); "
                   f"fix or delete that line (its point then runs again); the file is left as it is"], err
    assert (out / "results.csv").read_bytes() == before


@pytest.mark.parametrize("flag", [True, False])
def test_a_plugin_module_that_registers_nothing_is_refused(tmp_path, capsys, monkeypatch, flag):
    # --plugin os (and examples/my_algos.py, whose algorithm a config names as
    # my_algos:simple_ring) ran as if the plug-in had been used: nothing it could add was added
    monkeypatch.chdir(tmp_path)
    doc = _ring8(tmp_path)
    if not flag:
        doc["plugins"] = ["os"]
    path = _scenario(tmp_path, doc)
    err = error_lines(capsys, ["run", str(path), "--quiet", *(["--plugin", "os"] if flag else [])])
    where = "--plugin" if flag else f"{path}: field 'plugins'"
    assert err == [f"error: {where}: plugin module 'os' registered nothing (no collective algorithm, topology, link or "
                   f"switch model, network backend, workload generator or pipeline schedule); remove it, or have it "
                   f"call a register function (docs/collectives.md); a name such as os:NAME in a config needs no "
                   f"plug-in"], err


def test_a_plugin_module_that_registers_runs_and_may_be_named_twice(tmp_path, capsys, monkeypatch, registries):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h8_algos.py").write_text(
        "from simpy_astra import collectives\n"
        "from simpy_astra.collectives import REGISTRY\n"
        "collectives.register('h8Ring', REGISTRY['ring'].__class__('h8Ring', REGISTRY['ring'].run,"
        " REGISTRY['ring'].final_size))\n")
    doc = _ring8(tmp_path)
    doc["plugins"] = ["h8_algos"]
    path = _scenario(tmp_path, doc)
    assert main(["run", str(path), "--quiet", "--plugin", "h8_algos"]) == 0


def test_the_receiver_of_a_send_recv_microbenchmark_waits_on_communication_not_a_bubble(tmp_path, capsys):
    # NPU 5 of 8 on a ring receives 1 MiB from NPU 0: three hops of 500 ns and 2^20 bytes at
    # 50 GiB/s (53.687 bytes/ns), trunc(1,500 + 19,531.25) = 21,031 ns on the unaware backend.
    # The receiver waits for the message the whole time: its breakdown said "bubble", the
    # part docs/reports.md keeps for waiting on a peer pipeline stage, which a one-message
    # microbenchmark has none of
    import json

    doc = yaml.safe_load((SCENARIOS / "dragonfly_send_recv.yaml").read_text())
    doc["network"] = {"topology": ["Ring"], "npus_count": [8], "bandwidth": [50.0], "latency": [500.0]}
    doc["workload"].update(num_npus=8, dst=5)
    figures = tmp_path / "f.json"
    assert main(["run", str(_scenario(tmp_path, doc)), "--quiet", "--json-out", str(figures)]) == 0
    npus = json.loads(figures.read_text())["npus"]
    assert npus["5"]["breakdown_ns"] == {"comm.p2p": 21_031} == npus["0"]["breakdown_ns"]
    assert npus["3"]["breakdown_ns"] == {}


SCHEDULES = '''
from simpy_astra.workloads.schedules.task import Kind, Task


def each_at_once(stage, pp, m, chunks):
    """Stage 0 backwards each micro-batch right after its forward; the others forward all first."""
    if stage == 0:
        return [t for i in range(m) for t in (Task(Kind.FORWARD, i, 0), Task(Kind.BACKWARD, i, 0))]
    return [Task(Kind.FORWARD, i, 0) for i in range(m)] + [Task(Kind.BACKWARD, i, 0) for i in range(m)]


def last_backwards_reversed(stage, pp, m, chunks):
    """GPipe, the last stage backwarding its micro-batches last first: slow, but it finishes."""
    backwards = [Task(Kind.BACKWARD, i, 0) for i in range(m)]
    return [Task(Kind.FORWARD, i, 0) for i in range(m)] + (backwards[::-1] if stage == pp - 1 else backwards)
'''


@pytest.mark.parametrize("schedule, code", [("h8_schedules:each_at_once", 2),
                                            ("h8_schedules:last_backwards_reversed", 0)])
def test_a_schedule_whose_stages_wait_on_each_other_is_refused_before_the_run(tmp_path, capsys, monkeypatch,
                                                                              registries, schedule, code):
    # each stage's order is in contract alone (every micro-batch forwarded, then backwarded),
    # but stage 0 waits at its first backward for stage 1's, which first forwards micro-batch
    # 1, which stage 0 sends only after that backward: the run simulated up to there and
    # stopped with status 3, naming trace nodes ('B0.c0.recv_gradient'), not the schedule
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h8_schedules.py").write_text(SCHEDULES)
    path = _scenario(tmp_path, {"workload": {"generate": "megatron", "schedule": schedule,
                                             "args": ARGS + " --pipeline-model-parallel-size 2"},
                                "cluster": {"preset": "dgx-a100-80gb", "gpus": 2}})
    assert main(["run", str(path), "--quiet"]) == code
    err = capsys.readouterr().err.strip().splitlines()
    if code == 0:
        return
    assert err == [f"error: {path}: workload.schedule: pipeline schedule '{schedule}': its stages' orders wait on "
                   f"each other for ever (16 micro-batches, 1 chunk(s)): stage 0 at its BACKWARD of micro-batch 0 "
                   f"(chunk 0) waits for stage 1's BACKWARD of it (chunk 0); stage 1 at its FORWARD of micro-batch 1 "
                   f"(chunk 0) waits for stage 0's FORWARD of it (chunk 0); order each stage's tasks so that what "
                   f"it waits for comes earlier in the other stage's"], err


def test_interleaved_1f1b_on_one_chunk_a_stage_is_refused(tmp_path, capsys):
    # Megatron-LM runs 1F1B when there is one chunk a stage (arguments.py: a virtual pipeline
    # size of 1 becomes None); schedule: interleaved-1f1b ran an interleaved warm-up of
    # 2 (pp - stage - 1) forwards, 1F1B's twice, which no Megatron run does
    path = _scenario(tmp_path, {"workload": {"generate": "megatron", "schedule": "interleaved-1f1b",
                                             "args": ARGS + " --pipeline-model-parallel-size 2"},
                                "cluster": {"preset": "dgx-a100-80gb", "gpus": 2}})
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {path}: workload.schedule: interleaved 1F1B interleaves 2 or more model chunks per stage, "
                   f"not 1 (use 1f1b, or give --num-layers-per-virtual-pipeline-stage)"], err


@pytest.mark.parametrize("flag, kind", [("--json-out", "file"), ("--trace-out", "file"), ("--csv-out", "folder"),
                                        ("--plots", "folder")])
def test_a_dash_for_an_output_is_not_taken_as_a_file_named_dash(tmp_path, capsys, monkeypatch, flag, kind):
    # '--json-out -' (stdout to many tools) ran and wrote the figures into a file named '-'
    monkeypatch.chdir(tmp_path)
    err = error_lines(capsys, ["run", str(SCENARIOS / "default.yaml"), "--quiet", flag, "-"])
    assert err == [f"error: {flag}: '-' would be a {kind} named '-' here, not stdout (stdout carries the answer); "
                   f"give a {kind} path"], err
    assert not (tmp_path / "-").exists()


def test_list_keeps_points_with_long_coordinates_within_80_columns(tmp_path, capsys):
    # three list-valued axes over a 3D torus: each point's line was 119 or 152 columns
    # ("all_reduce_implementation=['halvingDoubling', 'halvingDoubling', 'halvingDoubling']")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": str(SCENARIOS / "torus3d_all_reduce.yaml"), "axes": {
        "network.bandwidth": [[100, 100, 100], [200, 200, 200]],
        "system.all-reduce-implementation": [["ring"] * 3, ["halvingDoubling"] * 3]}}))
    assert main(["sweep", str(sweep), "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in out) <= 80, out
    assert out[1:3] == [f"{_listed_key([100] * 3, ['ring'] * 3)} bandwidth=[100,100,100]",
                        '  all_reduce_implementation=["ring","ring","ring"]']


def _listed_key(bandwidth, algorithms) -> str:
    from simpy_astra.sweep.spec import point_key

    return point_key({"network.bandwidth": bandwidth, "system.all-reduce-implementation": algorithms})


@pytest.mark.parametrize("key, words", [("peak-perf", "1 FLOP"), ("local-mem-bw", "1 byte")])
def test_a_roofline_rate_so_low_that_one_unit_passes_the_horizon_is_refused(tmp_path, capsys, monkeypatch, key,
                                                                            words):
    # either at 1e-300 on this roofline scenario: 'internal error OverflowError: int too large to
    # convert to float (this is a simpy-astra bug)'; local-mem-bw 1e-300 GB/s on
    # scenarios/default.yaml (only its reductions read it, three passes at 1e-300 bytes/ns) was
    # blamed on the network's bandwidth and latency
    monkeypatch.chdir(tmp_path)
    doc = yaml.safe_load((SCENARIOS / "transformer_llama_16npus.yaml").read_text())
    doc["system"][key] = 1e-300
    path = _scenario(tmp_path, doc)
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {path}: system: field '{key}' is so low that {words} would take past the horizon "
                   f"(9223372036854775807 ns, about 292 years: simulated time must fit 2^63 ns); raise it"], err


def test_compute_past_the_horizon_blames_the_roofline_not_the_network(tmp_path, capsys, monkeypatch):
    # peak-perf 1e-15 TFLOP/s (a FLOP in 1e-3 / 1e-15 = 1e12 ns, within the horizon): the step's
    # compute alone goes past 2^63 ns, and the error told the user to raise the network's
    # bandwidth [100.0] GB/s
    monkeypatch.chdir(tmp_path)
    doc = yaml.safe_load((SCENARIOS / "transformer_llama_16npus.yaml").read_text())
    doc["system"]["peak-perf"] = 1e-15
    path = _scenario(tmp_path, doc)
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1 and err[0].startswith(f"error: {path}: system: NPU "), err
    assert "its compute alone takes " in err[0] and "at peak-perf 1e-15 TFLOP/s and local-mem-bw 3000 GB/s: raise " \
           "them or shrink the workload's compute" in err[0] and "network" not in err[0]


def test_a_trace_folder_beside_an_absolute_trace_name_is_refused(tmp_path, capsys, monkeypatch):
    # local-mem-trace-filename /abs/trace with --trace-dir t: the traces went to /abs, and t
    # was made and left empty, as if the flag had been followed
    monkeypatch.chdir(tmp_path)
    doc = yaml.safe_load((SCENARIOS / "transformer_llama_16npus.yaml").read_text())
    doc["system"]["local-mem-trace-filename"] = str(tmp_path / "abs" / "trace")
    path = _scenario(tmp_path, doc)
    err = error_lines(capsys, ["run", str(path), "--quiet", "--trace-dir", "t"])
    assert err == [f"error: --trace-dir: {path}: system: local-mem-trace-filename is {tmp_path / 'abs' / 'trace'}, "
                   f"an absolute path, where the traces go whatever --trace-dir says; leave out --trace-dir, or "
                   f"give the file name alone"], err
    assert not (tmp_path / "t").exists() and not (tmp_path / "abs").exists()


def test_a_trace_folder_for_several_jobs_is_refused(tmp_path, capsys, monkeypatch):
    # docs/jobs.md: a run of several jobs writes no local-memory trace files; with
    # track-local-mem on, --trace-dir t ran, made t and wrote nothing there
    monkeypatch.chdir(tmp_path)
    doc = yaml.safe_load((SCENARIOS / "two_llm_jobs_fat_tree.yaml").read_text())
    doc["system"]["track-local-mem"] = 1
    err = error_lines(capsys, ["run", str(_scenario(tmp_path, doc)), "--quiet", "--trace-dir", "t"])
    assert err == ["error: --trace-dir: a run of several jobs writes no local-memory traces (their names are per "
                   "rank, which the jobs share); leave out --trace-dir"], err
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("folder", ["step_8npus_1MB", "step_8npus_1MB/"])
def test_a_workload_named_by_its_folder_is_told_the_prefix(tmp_path, capsys, folder):
    # 'error: .../step_8npus_1MB/.0.et: the ET file for NPU 0 does not exist', a name nobody
    # wrote; the folder holds step.0.et .. step.7.et, whose prefix is .../step_8npus_1MB/step
    doc = _ring8(tmp_path)
    doc["workload"] = f"{SCENARIOS / 'workloads'}/{folder}"
    err = error_lines(capsys, ["run", str(_scenario(tmp_path, doc)), "--quiet"])
    assert err == [f"error: {doc['workload']}: is a folder; a workload is the prefix of its ET files, "
                   f"PREFIX for PREFIX.0.et, PREFIX.1.et ...: give {SCENARIOS / 'workloads' / 'step_8npus_1MB' / 'step'} "
                   f"(for step.0.et ...)"], err


@pytest.mark.parametrize("flags, flag", [(["--out", "runs/x"], "--out"), (["--jobs", "3"], "--jobs"),
                                         (["--retry-failed"], "--retry-failed"),
                                         (["--cluster", "tcp://127.0.0.1:8786"], "--cluster")])
def test_list_refuses_the_flags_of_running_the_points(tmp_path, capsys, monkeypatch, flags, flag):
    # 'sweep s.yaml --list --out runs/x' listed the points and ran none, made no folder and said
    # nothing of --out, as if the sweep had gone there
    monkeypatch.chdir(tmp_path)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": _ring8(tmp_path), "axes": {"network.bandwidth": [50, 100]}}))
    err = error_lines(capsys, ["sweep", str(sweep), "--list", *flags])
    assert err == [f"error: --list: prints the points and runs none, so {flag} would change nothing; leave out "
                   f"{flag} (or --list, to run the sweep)"], err


RANDOM_SCHEDULE = '''
import random

from simpy_astra.workloads.schedules.task import Kind, Task

SEED = 0


def shuffled(stage, pp, m, chunks):
    """Each stage's forwards, backwards (input gradients) and weight gradients in micro-batch
    order, interleaved at random: in contract alone, and together sometimes stuck."""
    rng = random.Random(SEED * 100 + stage)
    split = SEED % 2 == 1
    f = b = w = 0
    out = []
    while (w if split else b) < m:
        kinds = ["F"] * (f < m) + ["B"] * (b < f) + ["W"] * (split and w < b)
        kind = rng.choice(kinds)
        if kind == "F":
            out.append(Task(Kind.FORWARD, f, 0))
            f += 1
        elif kind == "B":
            out.append(Task(Kind.BACKWARD_INPUT if split else Kind.BACKWARD, b, 0))
            b += 1
        else:
            out.append(Task(Kind.BACKWARD_WEIGHT, w, 0))
            w += 1
    return out
'''


@pytest.mark.parametrize("seed", range(12))
def test_the_schedule_check_agrees_with_the_engine(tmp_path, capsys, monkeypatch, registries, seed):
    # the check plays the stages' orders out alone; the engine, run without it, must stall (exit
    # 3) exactly when the check refuses: 12 random orders of 2 stages, 8 micro-batches, whole
    # and split backwards
    import sys

    from simpy_astra.workloads.megatron import generator

    monkeypatch.chdir(tmp_path)
    (tmp_path / "h8_schedules.py").write_text(RANDOM_SCHEDULE.replace("SEED = 0", f"SEED = {seed}"))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("h8_schedules", None)
    import h8_schedules

    orders = [h8_schedules.shuffled(stage, 2, 8, 1) for stage in range(2)]
    refused = bool(generator.stall(orders))
    monkeypatch.setattr(generator, "stall", lambda *_: "")
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    path = _scenario(tmp_path, {"workload": {"generate": "megatron", "schedule": "h8_schedules:shuffled",
                                             "args": ARGS.replace("--global-batch-size 16", "--global-batch-size 8")
                                             + " --pipeline-model-parallel-size 2"},
                                "cluster": {"preset": "dgx-a100-80gb", "gpus": 2}})
    assert main(["run", str(path), "--quiet"]) == (3 if refused else 0)


SYSTEM = {"scheduling-policy": "FIFO", "collective-optimization": "localBWAware", "endpoint-delay": 10,
          "active-chunks-per-dimension": 8, "preferred-dataset-splits": 1, "local-mem-bw": 1000000, "peak-perf": 312,
          "roofline-enabled": 0, "all-reduce-implementation": ["halvingDoubling"] * 2,
          "all-gather-implementation": ["ring"] * 2, "reduce-scatter-implementation": ["ring"] * 2,
          "all-to-all-implementation": ["direct"] * 2}


@pytest.mark.parametrize("network, flags, second", [
    (True, [], "network"), (False, ["--network-backend", "congestion_aware"],
                            "congestion_aware backend (--network-backend)")])
def test_nccl_ring_beside_the_scenarios_own_system_where_nccls_model_does_not_run_is_refused(
        tmp_path, capsys, network, flags, second):
    # nccl_algo: ring sets the preset's system to rings and NCCL's model to its ring; with the
    # scenario's own system and its own network (or a backend that plays messages) neither is
    # read: the step took 3,453,111 ns (4,040,753 ns on congestion_aware) with and without it
    doc = {"workload": {"generate": "megatron", "args": ARGS}, "cluster": {"preset": "dgx-a100-80gb", "gpus": 16,
                                                                          "nccl_algo": "ring"},
           "system": SYSTEM}
    if network:
        doc["network"] = {"topology": ["Ring", "Ring"], "npus_count": [8, 2], "bandwidth": [200, 25],
                          "latency": [500, 5000]}
    path = _scenario(tmp_path, doc)
    err = error_lines(capsys, ["run", str(path), "--quiet", *flags])
    assert err == [f"error: {path}: cluster.nccl_algo: read by the preset's system (rings on every dimension) and by "
                   f"NCCL's all-reduce model on the preset's own machine (congestion_unaware backend); the scenario's "
                   f"system replaces the first, and its {second} the second, so it would change nothing; remove "
                   f"nccl_algo"], err
    del doc["cluster"]["nccl_algo"]
    assert main(["run", str(_scenario(tmp_path, doc)), "--quiet", *flags]) == 0


@pytest.mark.parametrize("key, value", [("nvlink_latency_ns", 10), ("inter_node_latency_ns", 9000)])
def test_a_link_latency_of_the_preset_beside_the_scenarios_own_network_is_refused(tmp_path, capsys, key, value):
    # the scenario's network has its own latencies: the step was 3,453,111 ns whatever the
    # preset's NVLink or rail latency said
    doc = {"workload": {"generate": "megatron", "args": ARGS},
           "cluster": {"preset": "dgx-a100-80gb", "gpus": 16, key: value},
           "network": {"topology": ["Ring", "Ring"], "npus_count": [8, 2], "bandwidth": [200, 25],
                       "latency": [500, 5000]}}
    path = _scenario(tmp_path, doc)
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {path}: cluster.{key}: read only on the preset's own machine; the scenario's network "
                   f"replaces its NVLink and rails, latencies too, so it would change nothing; remove {key}"], err


def test_a_plugin_named_by_its_file_is_told_its_module_name(tmp_path, capsys, monkeypatch):
    # --plugin h8_plug.py beside h8_plug.py: "no module named 'h8_plug.py'; searched the working
    # directory", where the file plainly is (and h8_plug had been run, as package h8_plug)
    import sys

    monkeypatch.chdir(tmp_path)
    (tmp_path / "h8_plug.py").write_text("RAN = True\n")
    err = error_lines(capsys, ["run", str(SCENARIOS / "default.yaml"), "--quiet", "--plugin", "h8_plug.py"])
    assert err == ["error: --plugin: 'h8_plug.py' is a file name, not a module's: write it as h8_plug"], err
    assert "h8_plug" not in sys.modules


def test_reading_a_sweeps_points_leaves_no_dead_folder_to_search(tmp_path, capsys, monkeypatch):
    # each point is read from a temporary folder, which the loader adds to the folders searched
    # for the user's modules: a sweep of 10,000 points left 10,000 dead entries (on sys.path too,
    # scanned by every import of a plug-in after them)
    from simpy_astra import plugins

    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": _ring8(tmp_path), "axes": {"network.bandwidth": [25, 50, 100]}}))
    assert main(["sweep", str(sweep), "--list"]) == 0
    assert [f for f in plugins.SEARCH_FOLDERS if "simpy-astra-point-" in f] == []


def test_an_interleaved_schedule_forwarding_a_later_chunk_first_is_refused_naming_both_chunks(
        tmp_path, capsys, monkeypatch, registries):
    # chunk 1 of stage 0 is the model's third chunk (c * pp + s = 2): its forward waits for
    # stage 1's chunk 0 (the second), which waits for stage 0's chunk 0, after chunk 1 there
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h8_schedules.py").write_text(
        "from simpy_astra.workloads.schedules.task import Kind, Task\n\n\n"
        "def later_first(stage, pp, m, chunks):\n"
        "    order = [Task(Kind.FORWARD, mb, c) for mb in range(m) for c in reversed(range(chunks))]\n"
        "    return order + [Task(Kind.BACKWARD, mb, c) for mb in range(m) for c in reversed(range(chunks))]\n")
    path = _scenario(tmp_path, {"workload": {"generate": "megatron", "schedule": "h8_schedules:later_first",
                                             "args": ARGS.replace("--num-layers 2", "--num-layers 8")
                                             + " --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 2"},
                                "cluster": {"preset": "dgx-a100-80gb", "gpus": 2}})
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1 and "(16 micro-batches, 2 chunk(s)): stage 0 at its FORWARD of micro-batch 0 (chunk 1) waits " \
                             "for stage 1's FORWARD of it (chunk 0); stage 1 at its FORWARD of micro-batch 0 (chunk 1) " \
                             "waits for stage 0's FORWARD of it (chunk 1);" in err[0], err


@pytest.mark.parametrize("block, name, what, field", [("network", "net.yml", "network YAML", "network"),
                                                      ("system", "sys.json", "system JSON", "system"),
                                                      ("remote_memory", "mem.json", "remote-memory JSON",
                                                       "remote_memory")])
def test_one_of_astra_sims_inputs_given_as_a_scenario_says_where_it_goes(tmp_path, capsys, block, name, what,
                                                                          field):
    # 'run net.yml': "field 'bandwidth' is not a scenario field; known: backend, cluster, ...",
    # as if a scenario had mistyped every key
    import json

    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    path = tmp_path / name
    path.write_text(json.dumps(doc[block]))
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert err == [f"error: {path}: is a {what}, not a scenario; a scenario names it ({field}: {path}) beside "
                   f"workload: and the other inputs (scenarios/default.yaml is one)"], err


def test_a_scenario_given_as_the_network_configuration_says_so(tmp_path, capsys):
    # --network-configuration=scenario.yaml: "field 'topology' is missing", which it has, under network:
    import json

    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    (tmp_path / "sys.json").write_text(json.dumps(doc["system"]))
    (tmp_path / "mem.json").write_text(json.dumps(doc["remote_memory"]))
    err = error_lines(capsys, [f"--workload-configuration={SCENARIOS / doc['workload']}",
                               f"--system-configuration={tmp_path / 'sys.json'}",
                               f"--network-configuration={SCENARIOS / 'default.yaml'}",
                               f"--remote-memory-configuration={tmp_path / 'mem.json'}"])
    assert err == [f"error: {SCENARIOS / 'default.yaml'}: is a scenario (it has workload: and network:), not a network "
                   f"YAML; give its network: block as a file of its own, or run the scenario: simpy-astra run "
                   f"{SCENARIOS / 'default.yaml'}"], err


def test_list_asks_for_its_progress_line_after_every_point_it_loads(tmp_path, capsys, monkeypatch):
    # it asked every 64 points: loading a cold 1,536-GPU Megatron point takes 0.3 s, so 64 of
    # them went 19 s without a sign of life (they are loaded as the points are read: the
    # line is the expansion's, made in cli/sweep.py)
    from simpy_astra.cli import sweep as sweep_command
    from simpy_astra.cli import sweep_points

    asked: list[tuple[str, int]] = []

    class Recorder:
        def __init__(self, what: str, *args, **kwargs) -> None:
            self.what = what

        def __call__(self, done: int, total: int) -> None:
            asked.append((self.what, done))

    monkeypatch.setattr(sweep_points, "ExpansionProgress", Recorder)
    monkeypatch.setattr(sweep_command, "ExpansionProgress", Recorder)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": _ring8(tmp_path), "axes": {"network.bandwidth": [25, 50, 100]}}))
    assert main(["sweep", str(sweep), "--list"]) == 0
    assert [done for what, done in asked if what == "checking"] == [0, 1, 2]


def test_a_sweep_run_as_a_scenario_and_a_scenario_swept_say_which_command_takes_them(tmp_path, capsys):
    # 'run sweep.yaml': "field 'base' is not a scenario field; known: backend, ..."; 'sweep
    # default.yaml': "field 'workload' is not a sweep field; known: axes, base, ..."
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": _ring8(tmp_path), "axes": {"network.bandwidth": [50, 100]}}))
    assert error_lines(capsys, ["run", str(sweep), "--quiet"]) == [
        f"error: {sweep}: is a sweep (it has base: and axes:), not a scenario; run it with: simpy-astra sweep {sweep} "
        f"--out DIR"]
    scenario = SCENARIOS / "default.yaml"
    assert error_lines(capsys, ["sweep", str(scenario), "--list"]) == [
        f"error: {scenario}: is a scenario (it has workload:), not a sweep; a sweep names it (base: {scenario}) with "
        f"axes: {{network.bandwidth: [50, 100]}}, or run it: simpy-astra run {scenario}"]


def test_a_cluster_preset_run_as_a_scenario_says_where_it_goes(tmp_path, capsys):
    # "field 'gpu' is not a scenario field; known: backend, cluster, ..."
    preset = SCENARIOS.parent / "simpy_astra" / "config" / "clusters" / "dgx-h100.yaml"
    assert error_lines(capsys, ["run", str(preset), "--quiet"]) == [
        f"error: {preset}: is a cluster preset, not a scenario; a scenario names it (cluster: {{preset: {preset}, "
        f"gpus: N}}) beside workload: {{generate: megatron, args: ...}}"]
