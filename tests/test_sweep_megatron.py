"""Sweeps of real jobs: axes over Megatron-LM flags, training figures as results, invalid layouts
as rows with their rule, and a best that always fits (issue 49); relative cluster presets in
sweep points (issue 52)."""

from __future__ import annotations

import csv
import io
import json
import shlex
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.sweep import main as sweep_main
from simpy_astra.errors import InputError
from simpy_astra.sweep.best import Outcome, best_summary
from simpy_astra.sweep.megatron_args import set_flag
from simpy_astra.sweep.spec import load_sweep

ROOT = Path(__file__).resolve().parents[1]
PRESET = ROOT / "simpy_astra" / "config" / "clusters" / "dgx-a100-80gb.yaml"
# a 4-layer model on 16 GPUs: a point runs in a fraction of a second
SMALL = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --micro-batch-size 1 "
         "--global-batch-size 32 --bf16")
GPUS = 16


pytestmark = pytest.mark.usefixtures("own_cache")


def write(path: Path, doc: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def megatron_sweep(tmp_path: Path, axes: dict, args: str = SMALL, **extra) -> str:
    base = {"workload": {"generate": "megatron", "args": args}, "cluster": {"preset": "dgx-a100-80gb", "gpus": GPUS}}
    return write(tmp_path / "sweep.yaml", {"base": base, "axes": axes, **extra})


def rows(out: Path) -> list[dict[str, str]]:
    with open(out / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def flags(args: str) -> list[str]:
    return shlex.split(args)


# ---------------------------------------------------------------- editing the args
def test_an_axis_value_replaces_the_flag_where_it_stands_under_any_of_its_names():
    base = "--num-layers 4 --tensor-model-parallel-size 2 --bf16"
    assert flags(set_flag(base, "workload.args.tensor-model-parallel-size", 8, "w")) == \
        ["--num-layers", "4", "--tensor-model-parallel-size", "8", "--bf16"]
    # the = form, and the 2021 name --batch-size of --micro-batch-size, are the same flag
    assert flags(set_flag("--tensor-model-parallel-size=2 --bf16", "workload.args.tensor-model-parallel-size", 4,
                          "w")) == ["--tensor-model-parallel-size", "4", "--bf16"]
    # a float stays one (load_sweep refuses it, as Megatron's int() and run do), never becomes 4 in silence
    assert flags(set_flag("--bf16", "workload.args.tensor-model-parallel-size", 4.0, "w"))[-1] == "4.0"
    assert flags(set_flag("--batch-size 4 --bf16", "workload.args.micro-batch-size", 2, "w")) == \
        ["--micro-batch-size", "2", "--bf16"]


def test_an_axis_value_adds_a_flag_the_base_lacks_and_false_removes_one():
    assert flags(set_flag("--num-layers 4", "workload.args.context-parallel-size", 2, "w")) == \
        ["--num-layers", "4", "--context-parallel-size", "2"]
    assert flags(set_flag("--recompute-method uniform --bf16", "workload.args.recompute-method", False, "w")) == \
        ["--bf16"]


def test_a_switch_flag_turns_on_and_off():
    on = set_flag("--num-layers 4", "workload.args.sequence-parallel", True, "w")
    assert flags(on) == ["--num-layers", "4", "--sequence-parallel"]
    assert flags(set_flag(on, "workload.args.sequence-parallel", True, "w")) == flags(on)  # once
    assert flags(set_flag(on, "workload.args.sequence-parallel", False, "w")) == ["--num-layers", "4"]
    with pytest.raises(InputError, match="switch"):
        set_flag(on, "workload.args.sequence-parallel", 4, "w")
    with pytest.raises(InputError, match="takes a value"):
        set_flag(on, "workload.args.tensor-model-parallel-size", True, "w")


def test_points_carry_the_edited_args_and_flags_are_names_in_expressions(tmp_path):
    path = megatron_sweep(tmp_path, {
        "workload.args.micro-batch-size": {"powers_of_two": [1, 2]},
        "workload.args.sequence-parallel": [True, False],
        "layout": {"named": {
            "t2p1": {"workload.args.tensor-model-parallel-size": 2, "workload.args.pipeline-model-parallel-size": 1},
            "t4p2": {"workload.args.tensor-model-parallel-size": 4, "workload.args.pipeline-model-parallel-size": 2}}},
    }, constraints=["tensor_model_parallel_size * pipeline_model_parallel_size <= 4"])
    spec = load_sweep(path)
    points = spec.points()
    assert len(points) == 4  # t4p2 (8 > 4) filtered out before anything runs
    for p in points:
        args = flags(p.scenario["workload"]["args"])
        assert args.count("--micro-batch-size") == 1
        assert args[args.index("--micro-batch-size") + 1] == str(p.coordinates["workload.args.micro-batch-size"])
        assert ("--sequence-parallel" in args) == p.coordinates["workload.args.sequence-parallel"]
        assert args[args.index("--tensor-model-parallel-size") + 1] == "2"
        assert p.names(spec.axes)["tensor_model_parallel_size"] == 2
        assert p.names(spec.axes)["data_parallel_size"] == GPUS // 2  # pp 1


def test_an_unknown_flag_or_a_flag_axis_on_a_non_megatron_base_is_refused(tmp_path, capsys):
    path = megatron_sweep(tmp_path, {"workload.args.tensor-model-paralel-size": [1, 2]})
    with pytest.raises(InputError, match="did you mean 'workload.args.tensor-model-parallel-size'"):
        load_sweep(path)
    other = write(tmp_path / "b" / "sweep.yaml", {"base": {"workload": {"generate": "transformer", "dp": 8}},
                                                  "axes": {"workload.args.micro-batch-size": [1]}})
    with pytest.raises(InputError, match="not {generate: megatron"):
        load_sweep(other)


@pytest.mark.parametrize("axis, values", [("workload.args.lr", [1e-4, 3e-4]),
                                           ("workload.args.seed", [1, 2, 3])])
def test_an_axis_over_a_flag_that_cannot_change_a_step_is_refused(tmp_path, axis, values):
    """--lr is read and ignored (it cannot change a step's time): its points all ran the same
    step and the sweep crowned one of them."""
    with pytest.raises(InputError, match=rf"{axis}: --\w+ cannot change a step's time.*every point would run "
                                         rf"the same"):
        load_sweep(megatron_sweep(tmp_path, {axis: values}))


@pytest.mark.parametrize("axis, values, words", [
    ("workload.args.num-layers", [4, "nan"], ("--num-layers nan", "invalid int value")),
    ("workload.args.num-layers", [4, 4.5], ("--num-layers takes integers, not 4.5", "write 4 or 5")),
    ("workload.args.micro-batch-size", [0, 1], ("--micro-batch-size 0", "must be an integer >= 1")),
    ("workload.args.recompute-granularity", ["full", "selectiv"], ("'selectiv'", "full, selective")),
    ("workload.args.attention-dropout", [0, 1.5], ("--attention-dropout 1.5", "probability from 0 to 1")),
    ("b", {"named": {"x": {"workload.args.num-layers": "four"}}}, ("named: x", "--num-layers four")),
])
def test_an_axis_value_its_flag_can_never_take_is_refused_before_anything_runs(tmp_path, axis, values, words):
    """Such a value was listed by --list as a point to run and failed when run, while the
    other points ran: a typo in the sweep file, not a layout Megatron refuses."""
    with pytest.raises(InputError) as caught:
        load_sweep(megatron_sweep(tmp_path, {axis: values}))
    for word in (f"axes: {axis}", *words):
        assert word in str(caught.value), (word, str(caught.value))


def test_a_base_whose_args_are_a_yaml_list_with_numbers_sweeps_as_it_runs(tmp_path):
    """run reads ``args: [--num-layers, 4, ...]`` (YAML makes 4 a number); the sweep refused
    to edit such a base ('must be ... one string'), and read no flag names from it, so a
    constraint over them silently kept every point."""
    words = [int(w) if w.isdigit() else w for w in SMALL.split()]
    path = megatron_sweep(tmp_path, {"workload.args.micro-batch-size": [1, 2, 4]}, args=words,
                          constraints=["micro_batch_size * data_parallel_size <= 16"])
    spec = load_sweep(path)
    assert [p.names(spec.axes)["micro_batch_size"] for p in spec.points()] == [1]  # 16 GPUs: dp 16
    kept = megatron_sweep(tmp_path, {"cluster.gpus": [16, 32]}, args=words, constraints=["micro_batch_size > 1"])
    assert load_sweep(kept).points() == []  # micro-batch 1 in the base: no point passes


def test_a_pasted_launch_script_base_sweeps_as_it_runs(tmp_path):
    """run reads a launch script with its torchrun prefix and backslash line continuations; a
    flag axis over such a base split it without them, and every point failed ('\\n' comes
    before any flag) while its flags were unknown to constraints."""
    from simpy_astra.workloads.megatron.arguments import parse

    script = "torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py \\\n  " + SMALL.replace(" --seq-length", " \\\n  --seq-length")
    assert parse(script, GPUS).micro_batch == 1  # run reads it
    spec = load_sweep(megatron_sweep(tmp_path, {"workload.args.micro-batch-size": [1, 2, 4]}, args=script,
                                     constraints=["hidden_size == 1024 and micro_batch_size < 4"]))
    points = spec.points()
    assert [p.names(spec.axes)["micro_batch_size"] for p in points] == [1, 2]
    assert [parse(p.scenario["workload"]["args"], GPUS).micro_batch for p in points] == [1, 2]


@pytest.mark.parametrize("axes", [
    {"workload.args.micro-batch-size": [1, 2], "workload.args.batch-size": [4, 8]},  # 2021's name
    {"workload.args.seq-length": [512, 1024], "workload.args.encoder-seq-length": [256]},
    {"workload.args.micro-batch-size": [1, 2], "workload.args.--micro-batch-size": [4]},
    {"workload.args.micro-batch-size": [1, 2], "b": {"named": {"x": {"workload.args.batch-size": 4}}}},
    # a bundle first: its tp 8 vanished, the points listed as layout=t8 tp=1 and tp=2 ran tp 1 and 2
    {"b": {"named": {"t8": {"workload.args.tensor-model-parallel-size": 8}}},
     "workload.args.tensor-model-parallel-size": [1, 2]},
])
def test_two_axes_on_one_flag_under_two_spellings_are_refused(tmp_path, axes):
    """--batch-size is --micro-batch-size: the later axis replaced the earlier's value in every
    point, whose coordinates still claimed micro-batch 1 and 2 (four points, two runs)."""
    with pytest.raises(InputError, match="is set by two axes"):
        load_sweep(megatron_sweep(tmp_path, axes))


def test_a_no_effect_flag_may_be_fixed_removed_or_set_in_a_bundle(tmp_path):
    """One value, a value and its removal, or a bundle that also sets a modelled flag: allowed."""
    for axes in ({"workload.args.lr": [1e-4]}, {"workload.args.vocab-file": ["v.json", False]},
                 {"b": {"named": {"x": {"workload.args.lr": 1e-4, "workload.args.micro-batch-size": 1},
                                  "y": {"workload.args.lr": 3e-4, "workload.args.micro-batch-size": 2}}}}):
        assert load_sweep(megatron_sweep(tmp_path, axes)).points()


# ---------------------------------------------------------------- figures, invalid rows, best
def test_megatron_points_have_training_figures_and_invalid_layouts_are_rows_with_their_rule(tmp_path, capsys):
    path = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2, 3],
                                     "workload.args.micro-batch-size": [1, 4]},
                          constraints=["fits == 1", "mfu > 0.01"], minimise="iteration_time_ns")
    assert sweep_main([path, "--list"]) == 0
    listed = capsys.readouterr().out
    assert "6 points, 3 invalid" in listed
    marked = [line.split()[1:3] for line in listed.splitlines() if line.endswith("  invalid")]
    assert marked == [["tp=1", "mb=4"],  # 32 % (4 x 16)
                      ["tp=3", "mb=1"],  # tp 3 on 16 GPUs
                      ["tp=3", "mb=4"]]
    assert "invalid: 1 point(s) break the rule 'global batch divisible by micro-batch x dp'" in listed
    assert "invalid: 2 point(s) break the rule 'gpus divisible by tp x pp x cp'" in listed
    out = tmp_path / "out"
    assert sweep_main([path, "--out", str(out), "--jobs", "1"]) == 0
    by = {(int(r["workload.args.tensor-model-parallel-size"]), int(r["workload.args.micro-batch-size"])): r
          for r in rows(out)}
    assert by[(3, 1)]["status"] == "invalid" and by[(3, 1)]["error"].startswith("gpus divisible by tp x pp x cp: ")
    assert by[(1, 4)]["status"] == "invalid"
    assert by[(1, 4)]["error"].startswith("global batch divisible by micro-batch x dp: ")
    summary = json.loads((out / "best.json").read_text())
    assert (summary["invalid"], summary["failed"]) == (3, 0)
    for key in ((1, 1), (2, 1), (2, 4)):
        row = by[key]
        assert row["status"] == "ok"
        time_ns = int(row["iteration_time_ns"])
        assert time_ns == int(row["finish_ns"])
        # tokens per second per GPU: 32 samples x 512 tokens per step, over the step and 16 GPUs
        assert float(row["tokens_per_s_per_gpu"]) == pytest.approx(32 * 512 / (time_ns / 1e9 * GPUS), rel=1e-4)
        assert row["fits"] == "1" and float(row["memory_capacity_gib"]) == 80
        assert 0 < float(row["memory_per_gpu_gib"]) < 80 and 0 < float(row["mfu"]) < 1
        assert float(row["peak_memory_gb"]) == float(row["memory_per_gpu_gib"])
    assert (out / "time_memory.png").read_bytes()[:4] == b"\x89PNG"


def test_a_sweep_of_only_invalid_points_says_so_and_exits_4(tmp_path, capsys):
    path = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [3, 5]})
    assert sweep_main([path, "--out", str(tmp_path / "out")]) == 4
    err = capsys.readouterr().err
    assert "every point is invalid (2 of 2)" in err and "gpus divisible by tp x pp x cp" in err


def test_a_sweep_reads_back_the_long_errors_it_wrote(tmp_path, capsys):
    """A refused layout's error quotes it: a 200,000-character layout gave results.csv a field
    past the csv module's 131,072, and running the sweep again stopped with an internal error."""
    layout = "'E" + "|" * 200_000 + "L'"
    path = megatron_sweep(tmp_path, {"workload.args.micro-batch-size": [1, 2]},
                          args=SMALL + f" --pipeline-model-parallel-layout {layout}")
    for _ in range(2):  # the second run reads the rows back and runs nothing again
        assert sweep_main([path, "--out", str(tmp_path / "out"), "--no-plots"]) == 4
        err = capsys.readouterr().err
        assert "every point is invalid (2 of 2)" in err and "internal error" not in err, err[-300:]
    assert (tmp_path / "out" / "results.csv").stat().st_size > 400_000  # both rows quote it


def test_a_point_refused_while_it_runs_is_invalid_not_failed():
    from simpy_astra.sweep.point import run_point

    figures = run_point({"workload": {"generate": "megatron", "args": SMALL + " --tensor-model-parallel-size 3"},
                         "cluster": {"preset": "dgx-a100-80gb", "gpus": GPUS}}, "S: point tp=3")
    assert figures["status"] == "invalid" and figures["error"].startswith("gpus divisible by tp x pp x cp: ")


def _outcome(spec, point, time_ns: int, memory_gib: float, mfu: float) -> Outcome:
    figures = {"status": "ok", "error": "", "finish_ns": time_ns, "iteration_time_ns": time_ns, "mfu": mfu,
               "memory_per_gpu_gib": memory_gib, "memory_capacity_gib": 80.0, "fits": int(memory_gib <= 80)}
    return Outcome(point, figures)


def test_the_fastest_point_does_not_fit_so_the_second_is_best(tmp_path):
    path = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2, 4]},
                          constraints=["fits == 1", "mfu > 0.3"], minimise="iteration_time_ns")
    spec = load_sweep(path)
    fast, second, third = spec.points()
    done = [_outcome(spec, fast, 10_000_000, 95.0, 0.50),    # fastest, 95 GiB of 80: never best
            _outcome(spec, second, 12_000_000, 70.0, 0.40),
            _outcome(spec, third, 15_000_000, 40.0, 0.25)]
    summary = best_summary(spec, done, 3)
    assert summary["best"]["key"] == second.key and summary["best"]["objective"] == 12_000_000
    assert summary["best"]["left_out_not_fitting"] == 1 and summary["left_out_not_fitting"] == 1
    assert summary["best_under"]["fits == 1"]["key"] == second.key
    assert summary["best_under"]["mfu > 0.3"]["key"] == second.key  # the fast point has mfu 0.5 but no room
    assert summary["best_under_all"]["key"] == second.key
    # nothing fits: no best at all rather than a crowned point that cannot run
    done = [_outcome(spec, p, t, 90.0, 0.5) for p, t in zip((fast, second, third), (1, 2, 3), strict=True)]
    assert best_summary(spec, done, 3)["best"] is None


def test_the_table_of_best_points_lists_the_points_that_fit_first(tmp_path):
    """A 1,024-GPU layout sweep had seven faster layouts that do not fit above the one named
    best: the table's first row is now the answer, the faster ones after every point that fits."""
    from simpy_astra.report.console import Output
    from simpy_astra.sweep.summary import print_summary

    path = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2, 4]},
                          minimise="iteration_time_ns")
    spec = load_sweep(path)
    fast, second, third = spec.points()
    done = [_outcome(spec, fast, 10_000_000, 95.0, 0.50), _outcome(spec, second, 12_000_000, 70.0, 0.40),
            _outcome(spec, third, 15_000_000, 40.0, 0.25)]
    text = io.StringIO()
    print_summary(spec, done, best_summary(spec, done, 3), Output(text, rich=False), 1.0)
    # one table within 80 columns (the axis is called tp): header, then a row per point
    lines = text.getvalue().splitlines()
    at = lines.index("best 3 by iteration_time_ns")
    # fits beside the coordinates: it orders the rows, so it is read before the figures
    assert lines[at + 1].split()[:3] == ["tp", "fits", "iteration_time_ns"]
    rows = [line.split() for line in lines[at + 2:at + 5]]
    # 12 ms, 15 ms (both fit), then the 10 ms layout that needs 95 of 80 GiB
    assert [tuple(r[:3]) for r in rows] == [("2", "yes", "12,000,000"), ("4", "yes", "15,000,000"),
                                            ("1", "NO", "10,000,000")]


# ---------------------------------------------------------------- cluster presets by path (issue 52)
def test_a_relative_preset_path_works_in_the_base_and_as_a_point(tmp_path):
    (tmp_path / "scen").mkdir()
    (tmp_path / "scen" / "mine.yaml").write_text(PRESET.read_text())
    (tmp_path / "sweeps").mkdir()
    slow = yaml.safe_load(PRESET.read_text())
    slow["node"]["inter_node_gbps"] = 400
    (tmp_path / "sweeps" / "slow.yaml").write_text(yaml.safe_dump(slow))
    base = write(tmp_path / "scen" / "base.yaml", {"workload": {"generate": "megatron", "args": SMALL},
                                                   "cluster": {"preset": "./mine.yaml", "gpus": GPUS}})
    path = write(tmp_path / "sweeps" / "sweep.yaml", {"base": "../scen/base.yaml",
                                                      "axes": {"cluster.preset": ["./slow.yaml", "dgx-a100-80gb"]}})
    assert base
    out = tmp_path / "out"
    assert sweep_main([path, "--out", str(out), "--jobs", "1"]) == 0
    got = {r["cluster.preset"]: r for r in rows(out)}
    assert {r["status"] for r in got.values()} == {"ok"}
    # 400 Gbit/s between nodes instead of 1,600: the data-parallel all-reduce takes longer
    assert int(got["./slow.yaml"]["finish_ns"]) > int(got["dgx-a100-80gb"]["finish_ns"])
    only_base = write(tmp_path / "sweeps" / "gpus.yaml", {"base": "../scen/base.yaml",
                                                          "axes": {"cluster.gpus": [16]}})
    assert sweep_main([only_base, "--out", str(tmp_path / "out2"), "--jobs", "1"]) == 0


def test_the_shipped_sweep_is_gpt3_175b_on_1024_a100s_and_lists_its_invalid_layouts(capsys):
    from simpy_astra.workloads.megatron.arguments import parse

    path = ROOT / "scenarios" / "sweeps" / "megatron_layouts.yaml"
    spec = load_sweep(str(path))
    assert spec.base["cluster"] == {"preset": "dgx-a100-80gb", "gpus": 1024}
    # GPT-3 175B as the SC'21 paper trains it: 96 layers of width 12288, 96 heads, sequence 2048
    job = parse(spec.base["workload"]["args"], 1024)
    assert (job.num_layers, job.hidden, job.heads, job.seq, job.global_batch) == (96, 12288, 96, 2048, 1536)
    assert 170e9 < job.parameters() < 180e9
    assert [a.name for a in spec.axes] == ["tp", "pp", "mb", "recompute"]
    assert sweep_main([str(path), "--list"]) == 0
    listed = capsys.readouterr().out
    # pp 12: tp x 12 never divides 1,024 GPUs
    assert listed.startswith("24 points, 8 invalid")
    lines = listed.splitlines()[1:25]
    assert all(("pp=12" in line) == line.endswith("  invalid") for line in lines)
    assert max(len(line) for line in listed.splitlines()) <= 80  # docs/sweeps.md shows it


def test_a_rule_raised_inside_a_generator_keeps_its_rule(monkeypatch, tmp_path):
    """A validity rule the generator itself checks (e.g. FP8 on a GPU without FP8 units)
    reaches the sweep as an invalid point, not as a failure."""
    from simpy_astra.errors import InvalidConfigurationError
    from simpy_astra.sweep.point import run_point
    from simpy_astra.workloads import generated

    def refuse(params: dict, prefix: str) -> None:
        raise InvalidConfigurationError("generate refuse: --fp8-format on a GPU without FP8 units",
                                        "fp8 needs fp8 hardware")

    monkeypatch.setitem(generated.GENERATORS, "refuse", generated.GeneratorEntry(refuse, "1"))
    scenario = yaml.safe_load((ROOT / "scenarios" / "default.yaml").read_text())
    scenario["workload"] = {"generate": "refuse"}
    for key in ("system", "network"):
        if isinstance(scenario[key], str):
            scenario[key] = str(ROOT / "scenarios" / scenario[key])
    figures = run_point(scenario, "S: point x=1")
    assert figures["status"] == "invalid", figures
    assert figures["error"].startswith("fp8 needs fp8 hardware: ")


def test_a_megatron_sweep_answers_in_the_jobs_figures_unless_told_otherwise(tmp_path, capsys):
    """Without ``report:``, the summary of a sweep of Megatron jobs shows what ``run`` prints
    first (iteration time, TFLOP/s and MFU per GPU, memory per GPU), not the engine's finish and
    exposed-communication counters; a ``report:`` given is kept."""
    path = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2]})
    assert [e.text for e in load_sweep(path).goals.report] == [
        "iteration_time_ns", "tflops_per_gpu", "mfu", "memory_per_gpu_gib", "wall_s"]
    assert sweep_main([path, "--out", str(tmp_path / "out"), "--jobs", "1"]) == 0
    table = capsys.readouterr().err
    assert "tflops_per_gpu" in table and "memory_per_gpu_gib" in table and "exposed_comm_ns" not in table
    told = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2]}, report=["finish_ns"])
    assert [e.text for e in load_sweep(told).goals.report] == ["finish_ns"]


def test_reading_many_points_says_how_far_it_got(tmp_path, capsys, monkeypatch):
    """Reading a point's flags and rules takes about half a millisecond, so 100,000 points
    took minutes before the sweep's first line, with no sign. A clock that advances a second a
    look stands in for a long expansion: the lines come, with the counts."""
    from simpy_astra.sweep import expansion_progress

    class Clock:
        now = 0.0

        @classmethod
        def monotonic(cls) -> float:
            cls.now += 1.0
            return cls.now

    monkeypatch.setattr(expansion_progress, "time", Clock)
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "1")
    path = megatron_sweep(tmp_path, {"workload.args.seq-length": {"from": 1, "to": 1000, "step": 1}})
    assert sweep_main([path, "--list"]) == 0
    captured = capsys.readouterr()
    assert "sweep: reading 64 of 1,000 points" in captured.err
    assert "sweep: checking " in captured.err and " of 1,000 points" in captured.err
    assert captured.out.startswith("1000 points")  # the listing itself is unchanged


def test_list_says_which_points_will_fail_and_why(tmp_path, capsys):
    """A point whose arguments pass Megatron's rules but exceed what the simulator builds
    (here 1,000,000 layers x 2 micro-batches, a global batch of 32 over 16 replicas, x 18
    nodes a layer pass, and 64 a stage: 36,000,064 trace nodes against the bound of 4 million) is marked by ``--list``, with the reason, in 80 columns:
    it used to be listed as fine and fail only when run."""
    sweep = megatron_sweep(tmp_path, {"workload.args.num-layers": [4, 1_000_000]})
    assert sweep_main([sweep, "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    marks = {line.split()[1]: line.endswith("  will fail") for line in listed[1:3]}
    assert marks == {"num_layers=4": False, "num_layers=1000000": True}
    reason = " ".join(line.strip() for line in listed[3:])
    assert reason.startswith("will fail: ") and "36,000,064 trace nodes" in reason and "num-layers=1000000" in reason
    assert max(len(line) for line in listed) <= 80


def test_list_counts_one_point_as_one_point(tmp_path, capsys):
    sweep = megatron_sweep(tmp_path, {"workload.args.num-layers": [4]})
    assert sweep_main([sweep, "--list"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "1 point"
