"""A sweep point's Megatron-LM command line is parsed once in the sweep's process: the job
that tells points alike apart and the one that marks those Megatron refuses are the same
(simpy_astra/sweep/point_job.py). Before, each parsed it again: twice a point for --list, and
a third time by the loader of a point read whole."""

from __future__ import annotations

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import megatron_sweep


@pytest.fixture
def jobs_built(monkeypatch):
    """How many jobs Megatron's arguments were parsed into (each parse builds one)."""
    from simpy_astra.workloads.megatron import arguments

    built: list[int] = []
    real = arguments.job_from_args
    monkeypatch.setattr(arguments, "job_from_args", lambda *a: built.append(a[1]) or real(*a))
    return built


def test_list_parses_each_points_command_line_once(tmp_path, capsys, jobs_built):
    # 2 x 2 x 2 points of flags alone: 8 parses (16 before: alike points, then validity)
    sweep = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2],
                                      "workload.args.micro-batch-size": [1, 2],
                                      "workload.args.use-distributed-optimizer": [True, False]})
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("8 points\n")
    assert len(jobs_built) == 8


def test_a_refused_points_reason_is_the_one_its_parse_gave(tmp_path, capsys, jobs_built):
    # tp 3 does not divide 16 GPUs: one parse marks it invalid, with Megatron's rule
    sweep = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [2, 3]})
    assert main(["sweep", sweep, "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" ", 1)[1] for line in lines[1:3]] == ["tp=2", "tp=3  invalid"]
    assert lines[3] == "invalid: 1 point(s) break the rule 'gpus divisible by tp x pp x cp'"
    assert len(jobs_built) == 1  # tp 2's, once; the refused point builds none
