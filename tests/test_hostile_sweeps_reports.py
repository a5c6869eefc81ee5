"""A hunt on sweeps and run's reports with hostile outputs and hand-edited results folders:
each case is now refused in one line naming the flag or file and the fix, or runs as written."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import error_lines, megatron_scenario, megatron_sweep

TP = "workload.args.--tensor-model-parallel-size"


@pytest.fixture(scope="module")
def sweep_folder(tmp_path_factory) -> Path:
    """A finished one-point sweep's results folder (copy it before changing it)."""
    folder = tmp_path_factory.mktemp("sweep")
    assert main(["sweep", megatron_sweep(folder, {TP: [2]}), "--out", str(folder / "out"), "--no-plots"]) == 0
    return folder / "out"


def _copy(sweep_folder: Path, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(sweep_folder, out)
    return out


@pytest.mark.parametrize(("flags", "replaced"), [
    (["--json-out", "{out}/results.csv"], "results.csv"),
    (["--json-out", "{out}/sweep.json"], "sweep.json"),
    (["--trace-out", "{out}/best.json"], "best.json"),
    (["--plots", "{out}"], "breakdown.png"),  # the sweep's plot of the same name
])
def test_a_run_output_over_a_sweeps_results_is_refused(sweep_folder, tmp_path, capsys, flags, replaced):
    # each replaced the sweep's file in silence: results.csv became a run's JSON, its rows lost
    out = _copy(sweep_folder, tmp_path)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    (tmp_path / "out" / "breakdown.png").write_bytes(b"the sweep's plot")
    before["breakdown.png"] = b"the sweep's plot"
    argv = ["run", megatron_scenario(tmp_path), "--quiet", *(f.format(out=out) for f in flags)]
    lines = error_lines(capsys, argv)
    assert len(lines) == 1 and lines[0].startswith(f"error: {flags[0]}: ") and replaced in lines[0]
    assert "the sweep" in lines[0] and "write the output to another path" in lines[0], lines
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_a_run_output_in_a_sweeps_points_folder_is_refused(sweep_folder, tmp_path, capsys):
    out = _copy(sweep_folder, tmp_path)
    point = next((out / "points").iterdir())
    scenario = point.read_bytes()
    lines = error_lines(capsys, ["run", megatron_scenario(tmp_path), "--json-out", str(point)])
    assert len(lines) == 1 and "point scenarios" in lines[0] and "another path" in lines[0], lines
    assert point.read_bytes() == scenario


def test_a_run_writes_its_own_files_beside_a_sweeps(sweep_folder, tmp_path, capsys):
    # nodes.csv, npus.csv and a JSON of another name replace nothing of the sweep's
    out = _copy(sweep_folder, tmp_path)
    argv = ["run", megatron_scenario(tmp_path), "--quiet", "--csv-out", str(out), "--json-out", str(out / "run.json")]
    assert main(argv) == 0
    assert {"nodes.csv", "npus.csv", "run.json", "results.csv", "sweep.json"} <= {p.name for p in out.iterdir()}


def _lines_of_sweep(tmp_path: Path, capsys, sweep: str) -> list[str]:
    assert main(["sweep", sweep, "--out", str(tmp_path / "o"), "--no-plots", "--jobs", "1"]) == 0
    captured = capsys.readouterr()
    return (captured.err + captured.out).splitlines()  # the summary, then the answer (stdout)


def test_a_long_sweep_file_name_is_wrapped_within_80_columns(tmp_path, capsys):
    # 'sweep NAME: 1 points, running 1 on 1 local process' and the closing count were one line
    # each, however long the file's stem: 106 columns for a 60-letter name
    long = tmp_path / ("llama-405b-h100-tp-sweep-with-recompute-and-fp8-" + "x" * 12 + ".yaml")
    Path(megatron_sweep(tmp_path, {TP: [2]})).rename(long)
    lines = _lines_of_sweep(tmp_path, capsys, str(long))
    assert max(len(line) for line in lines if not line.startswith(("0 already in", "wrote "))) <= 80, lines
    assert lines[0].startswith(f"sweep {long.stem}: 1 points") and lines[1] == "  running 1 on 1 local process"


def test_a_bundle_name_longer_than_a_line_is_cut_in_the_best_line(tmp_path, capsys):
    # the table folds a long name in its cell; the 'best:' line printed it whole, 107 columns
    name = "p" * 100
    sweep = megatron_sweep(tmp_path, {"layout": {"named": {name: {TP: 2}}}})
    lines = _lines_of_sweep(tmp_path, capsys, sweep)
    assert max(len(line) for line in lines if not line.startswith(("0 already in", "wrote "))) <= 80, lines
    best = next(i for i, line in enumerate(lines) if line.startswith("best: "))
    assert (lines[best] + lines[best + 1].strip()).startswith(f"best: layout={name} -> ")


@pytest.mark.parametrize("command", ["run", "sweep"])
@pytest.mark.parametrize(("name", "said", "fix"), [
    ("sweep.json", "is the record a sweep keeps in its --out folder", "resume that sweep with: simpy-astra sweep "),
    ("best.json", "is a sweep's answer (best.json)", "run its best point with: simpy-astra run "),
    ("results.csv", "is a sweep's results table", "points/KEY.yaml"),
])
def test_a_sweeps_output_given_as_the_input_says_what_it_is(sweep_folder, capsys, command, name, said, fix):
    # sweep.json and best.json were 'field sweep is not a scenario field; known: ...', results.csv
    # 'holds a str, not fields'
    argv = [command, str(sweep_folder / name), *(["--out", str(sweep_folder.parent / "x")] if command == "sweep" else [])]
    lines = error_lines(capsys, argv)
    wanted = "scenario" if command == "run" else "sweep"
    assert len(lines) == 1 and f"{said}, not a {wanted}; " in lines[0] and fix in lines[0], lines
    assert not (sweep_folder.parent / "x").exists()


def test_the_command_a_sweeps_best_json_names_runs_its_best_point(sweep_folder, capsys):
    lines = error_lines(capsys, ["run", str(sweep_folder / "best.json")])
    command = lines[0].split("simpy-astra ", 1)[1].split()
    assert main([*command, "--quiet"]) == 0
    with open(sweep_folder / "results.csv", newline="") as f:  # tp=2's row of the sweep: the one point
        (row,) = csv.DictReader(f)
    assert capsys.readouterr().out.startswith(f"iteration time {int(row['iteration_time_ns']) / 1e6:.3f} ms")


def test_a_report_expression_wider_than_half_a_line_wraps_its_header(tmp_path, capsys):
    # the header of a figure column was never folded: the table was 95 columns in a pipe
    expression = "iteration_time_ns + 0*tflops_per_gpu + 0*mfu + 0*memory_per_gpu_gib + 0*tokens_per_s_per_gpu"
    lines = _lines_of_sweep(tmp_path, capsys, megatron_sweep(tmp_path, {TP: [2]}, report=[expression]))
    assert max(len(line) for line in lines if not line.startswith(("0 already in", "wrote "))) <= 80, lines
    title = lines.index("best 1 by iteration_time_ns")
    words = " ".join(lines[title + 1:title + 6]).split()
    assert words[:2] == ["tp", "fits"], lines  # the header's first line: tp, fits, the expression's start
    assert " ".join(words[2:]) == expression, lines
    with open(tmp_path / "o" / "results.csv", newline="") as f:  # the expression is the step's time
        (row,) = csv.DictReader(f)
    assert lines[title + 6].split() == ["2", "yes", f"{int(row['iteration_time_ns']):,}"], lines


def test_an_axis_on_a_flag_written_with_its_dashes_is_named_without_them(tmp_path, capsys):
    # workload.args.--num-layers was called '__num_layers' in --list, the table and 'best:',
    # where workload.args.num-layers is 'num_layers'
    sweep = megatron_sweep(tmp_path, {"workload.args.--num-layers": [8, 16]}, report=["num_layers"])
    assert main(["sweep", sweep, "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in listed[1:]] == ["num_layers=8", "num_layers=16"], listed
