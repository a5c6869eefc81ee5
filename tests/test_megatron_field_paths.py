"""A Megatron-LM argument written where a generator parameter goes (``workload.tp``, in a
scenario or as a sweep axis) is refused naming the exact dotted path the user must write
(``workload.args``, ``workload.args.tensor-model-parallel-size``); a point's parse errors name
``workload.args``, the field the arguments are in, as its run's do. Before, a scenario's said
``workload: unknown parameter 'tp'``, a sweep's listed every parameter the generator takes, and
a sweep point's refusal named ``workload``."""

from __future__ import annotations

import csv

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import SMALL_GPT_ARGS, error_lines, megatron_sweep, write_yaml


def test_a_scenarios_megatron_argument_beside_args_names_the_field_it_goes_in(tmp_path, capsys):
    path = write_yaml(tmp_path, {"workload": {"generate": "megatron", "tp": 2, "args": SMALL_GPT_ARGS},
                                 "cluster": {"preset": "dgx-h100", "gpus": 16}}, "s.yaml")
    [line] = error_lines(capsys, ["run", path])
    assert line == (f"error: {path}: workload.tp: generate megatron takes no parameter 'tp'; a Megatron-LM argument "
                    f"goes in workload.args (\"--tensor-model-parallel-size ...\"); remove workload.tp")


@pytest.mark.parametrize("axis", ["workload.tp", "workload.tensor-model-parallel-size"])
def test_a_sweep_axis_of_a_megatron_argument_names_its_path(tmp_path, capsys, axis):
    sweep = megatron_sweep(tmp_path, {axis: [1, 2]})
    [line] = error_lines(capsys, ["sweep", sweep, "--list"])
    assert line.endswith("so every point would fail on it; a Megatron-LM argument is swept as "
                         "'workload.args.tensor-model-parallel-size'"), line


def test_a_points_refusal_names_workload_args(tmp_path):
    # tp 3 does not divide 16 GPUs: its row's error names the field the flag is in
    sweep = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [3]})
    assert main(["sweep", sweep, "--out", str(tmp_path / "out"), "--no-plots"]) != 0
    with open(tmp_path / "out" / "results.csv", newline="") as f:
        [row] = list(csv.DictReader(f))
    assert row["status"] == "invalid"
    assert "point workload.args.tensor-model-parallel-size=3: workload.args: " in row["error"], row["error"]
