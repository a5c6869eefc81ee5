"""Sweeps of real jobs and the console, round 3: what a researcher reads after sweeping a
Megatron-LM job's layout, or running a large scenario, in a pipe or on a terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from simpy_astra.cli.sweep import main as sweep_main
from tests.scenario_files import SMALL_GPT_ARGS, megatron_sweep

pytestmark = pytest.mark.usefixtures("own_cache")


# ---------------------------------------------------------------- the summary in a pipe
def test_an_invalid_rules_example_point_longer_than_a_line_is_broken_between_its_coordinates(tmp_path, capsys):
    """The example of a rule's invalid points was kept in one piece; one longer than the line
    was then cut inside its words: 'e.g. pp=' / '1 num_layers_..._stage=2 ... preset=dgx-a1' /
    '00-40gb'. Now it breaks between coordinates, each whole, within 80 columns."""
    path = megatron_sweep(tmp_path, {"workload.args.pipeline-model-parallel-size": [1, 2],
                                     "workload.args.num-layers-per-virtual-pipeline-stage": [False, 2],
                                     "workload.args.context-parallel-size": [1],
                                     "workload.args.sequence-parallel": [True, False],
                                     "workload.args.use-distributed-optimizer": [True],
                                     "cluster.preset": ["dgx-a100-40gb"]})
    assert sweep_main([path, "--out", str(tmp_path / "out"), "--jobs", "1", "--no-plots"]) == 0
    err = capsys.readouterr().err.splitlines()
    start = next(i for i, line in enumerate(err) if line.startswith("invalid:"))
    said = err[start:next(i for i in range(start + 1, len(err)) if not err[i].startswith("  "))]
    assert all(len(line) <= 80 for line in said)
    words = " ".join(said).split()
    for coordinate in ("pp=1", "num_layers_per_virtual_pipeline_stage=2", "cp=1", "sp=on", "dist_opt=on",
                       "preset=dgx-a100-40gb"):
        assert coordinate in words


# ---------------------------------------------------------------- reports no slower than they need
def test_a_trace_of_chosen_npus_sizes_only_their_ranks_traces_before_the_run(tmp_path, monkeypatch, capsys):
    """Before a generated workload's run, --trace-out's size check read one ET trace of every
    rank class (16 on GPT-3-175B at 16,384 NPUs: 1.6 s, a tenth of the 15 s simulation) even
    when --trace-npus chose NPUs of one class. Now it reads the chosen NPUs' classes only, and
    the trace written is the same."""
    import simpy_astra.workloads.chakra as chakra
    from simpy_astra.cli.main import main
    from simpy_astra.report import trace_size

    scenario = Path(__file__).resolve().parent.parent / "scenarios" / "transformer_llama_16npus.yaml"
    whole = tmp_path / "whole.json"
    assert main(["run", str(scenario), "--quiet", "--trace-out", str(whole), "--trace-npus", "0"]) == 0
    read: list[str] = []
    real = chakra.read_et

    def counted(path, *args, **kwargs):
        read.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(chakra, "read_et", counted)
    from simpy_astra.config.scenario import load_scenario

    inputs = load_scenario(str(scenario))
    assert trace_size.check_before_build(inputs, str(tmp_path / "t.json"), "0")
    assert len(read) == 1  # NPU 0's class: one trace read, not one per class
    monkeypatch.setattr(chakra, "read_et", real)
    again = tmp_path / "again.json"
    assert main(["run", str(scenario), "--quiet", "--trace-out", str(again), "--trace-npus", "0"]) == 0
    assert again.read_bytes() == whole.read_bytes()


def test_a_constraint_met_only_by_points_that_do_not_fit_says_so(tmp_path, capsys):
    """Under a constraint that only points too large for their GPU meet (GPT-2-XL-sized at tp 1
    on A100-40GB: 62 GiB), the summary said 'no finished point qualifies', as if none met it;
    best.json rightly names none. Now the line says none that fits does, and how many that meet
    it do not fit."""
    args = SMALL_GPT_ARGS.replace("--num-layers 8 --hidden-size 1024", "--num-layers 24 --hidden-size 4096") \
        .replace("--tensor-model-parallel-size 2", "--tensor-model-parallel-size 1")
    path = megatron_sweep(tmp_path, {"workload.args.micro-batch-size": [1, 2],
                                     "cluster.preset": ["dgx-a100-40gb", "dgx-h100"]}, args=args,
                          constraints=["memory_per_gpu_gib > 45 and preset == 'dgx-a100-40gb'"])
    assert sweep_main([path, "--out", str(tmp_path / "out"), "--jobs", "1", "--no-plots"]) == 0
    said = capsys.readouterr()
    err = " ".join((said.err + said.out).split())  # the summary, then the answer (stdout)
    import csv
    import json

    with open(tmp_path / "out" / "results.csv", newline="") as f:
        meeting = [r for r in csv.DictReader(f) if r["cluster.preset"] == "dgx-a100-40gb"
                   and float(r["memory_per_gpu_gib"]) > 45]
    assert len(meeting) == 2 and all(r["fits"] == "0" for r in meeting)  # the premise
    best = json.loads((tmp_path / "out" / "best.json").read_text())
    assert best["best_under"]["memory_per_gpu_gib > 45 and preset == 'dgx-a100-40gb'"] is None
    assert "no finished point qualifies" not in err
    assert ("best with memory_per_gpu_gib > 45 and preset == 'dgx-a100-40gb': none that fits the GPU's "
            "memory; 2 points meet it but do not fit") in err


# ---------------------------------------------------------------- progress in a pipe
def test_a_points_progress_line_keeps_the_coordinates_after_one_too_long_for_it():
    """A sweep over pp, --num-layers-per-virtual-pipeline-stage (no short name), cp, sp,
    dist_opt and preset named every one of its 48 points 'pp=2 ...' in a pipe: the coordinates
    stopped at the first that did not fit, so no line told its point. Then only that coordinate
    was left out ('...'); two points differing in it read alike. Now nothing is cut: the line
    breaks between coordinates, the figure on the last."""
    import io

    from simpy_astra.sweep.runner import Finished, _PlainProgress

    stream = io.StringIO()
    progress = _PlainProgress(stream)
    progress.add_task("sweep", total=48, last=None)
    coords = "pp=2 num_layers_per_virtual_pipeline_stage=2 cp=1 sp=off dist_opt=on preset=dgx-h100"
    terse = "pp=2 num_layers_per_virtual_pipeline_stage=2 cp=1 sp=off dist_opt=on dgx-h100"
    for _ in range(26):
        progress.update(0, advance=1, last=Finished(coords, "43,215,743 ns", True, terse=terse))
    lines = stream.getvalue().splitlines()[-2:]
    assert lines == ["sweep: 26/48 done; pp=2 num_layers_per_virtual_pipeline_stage=2 cp=1 sp=off",
                     "    dist_opt=on dgx-h100: 43,215,743 ns"]


# ---------------------------------------------------------------- the summary on a terminal
def test_a_terminal_table_too_wide_splits_its_columns_before_it_folds_a_value():
    """On an 80-column terminal the sweep's table of tp, recompute, cluster preset, gpus and
    the figures was split into two tables with the preset column folded to 10 characters:
    'dgx-a100-8' / '0gb' (the pipe's table, split at other columns, kept it whole). Now the
    columns are split so that each value stands whole, as in a pipe; folding is left for a
    column too wide to stand beside the row number alone."""
    import io

    from simpy_astra.report.console import Output

    stream = io.StringIO()
    out = Output(stream, rich=True)
    out.console.width = 80
    headers = ["tp", "recompute", "preset", "gpus", "iteration_time_ns", "tflops_per_gpu", "mfu",
               "memory_per_gpu_gib", "wall_s", "fits"]
    rows = [["2", "sel", "dgx-h100", "32", "654,365,098", "408.94", "0.413", "32.90", "0.28", "yes"],
            ["2", "sel", "dgx-a100-80gb", "32", "1,686,512,280", "158.67", "0.509", "32.90", "0.20", "yes"],
            ["2", "sel", "dgx-a100-40gb", "32", "1,742,797,280", "153.54", "0.492", "32.90", "0.07", "yes"]]
    out.table("best 3 by iteration_time_ns", headers, rows, align=["left"] * 4 + ["right"] * 5 + ["left"], key=0)
    text = stream.getvalue()
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "dgx-a100-80gb" in text and "dgx-a100-40gb" in text
    assert "memory_per_gpu_gib" in text and "1,742,797,280" in text


def test_points_told_apart_by_a_late_coordinate_read_apart_in_a_pipe(tmp_path):
    """A sweep over bandwidth, two collectives, an axis of one value, splits and backend printed
    'bandwidth=50 halvingDoubling halvingDoubling ...: 121,772 ns' for four points in a pipe: the
    coordinates that told them apart (splits, backend) were cut. An axis of one value tells no
    point apart and is left out of the short form; what still does not fit goes on to a next
    line, every coordinate kept."""
    import os
    import subprocess
    import sys

    torus = Path(__file__).resolve().parents[1] / "scenarios" / "torus3d_all_reduce.yaml"
    sweep = tmp_path / "wide.yaml"
    sweep.write_text(
        f"name: wide\nbase: {torus}\naxes:\n"
        "  network.bandwidth: [50]\n"
        "  system.all-reduce-implementation: [halvingDoubling]\n"
        "  system.all-gather-implementation: {values: [halvingDoubling], as: all_gather_implementation_long}\n"
        "  system.preferred-dataset-splits: {values: [4, 64], as: splits}\n"
        "  backend: [congestion_unaware, congestion_aware]\n")
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "sweep", str(sweep), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    records: list[list[str]] = []
    for line in done.stderr.splitlines():
        if line.startswith("sweep: ") and " done; " in line:
            records.append([line])
        elif line.startswith("    ") and records:
            records[-1].append(line)
    assert len(records) == 4
    told = {" ".join(" ".join(r).split()[3:]).rsplit(":", 1)[0] for r in records}
    assert told == {f"splits={s} {b}" for s in (4, 64) for b in ("congestion_unaware", "congestion_aware")}
    assert all(len(line) <= 80 for r in records for line in r)
