"""A sweep point's Megatron-LM command line is parsed once in the sweep's process: the job
that tells points alike apart and the one that marks those Megatron refuses are the same
(simpy_astra/sweep/point_job.py). Before, each parsed it again: twice a point for --list, and
a third time by the loader of a point read whole."""

from __future__ import annotations

import csv

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import SMALL_GPT_ARGS, megatron_sweep


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


def test_list_of_axes_beyond_megatrons_flags_parses_each_point_once(tmp_path, capsys, jobs_built):
    # a cluster axis: --list reads each point with the scenario loader too, whose generator
    # parsed the command line again (8 parses of 4 points); it reads the job of the expansion
    sweep = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2],
                                      "cluster.nccl_algo": ["ring", "tree"]})
    assert main(["sweep", sweep, "--list"]) == 0
    # tree at tp 2 stops at the batch broadcast (NCCL's ring alone has one): marked, not parsed again
    assert capsys.readouterr().out.startswith("4 points, 1 invalid")
    assert len(jobs_built) == 4


def test_a_point_loaded_as_it_is_expanded_is_marked_in_the_loaders_words(tmp_path, capsys):
    # the loader reads each point as it is expanded: what only it refuses (a system beside the
    # cluster that lacks a key) still marks the point, in its run's words
    sweep = megatron_sweep(tmp_path, {"workload.args.micro-batch-size": [1, 2],
                                      "system.active-chunks-per-dimension": [1]})
    assert main(["sweep", sweep, "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.endswith("  will fail") for line in lines[1:3]] == [True, True]
    out = " ".join(" ".join(lines).split())
    assert "system.active-chunks-per-dimension=1: system: beside cluster: it replaces the preset's whole system" in out


def test_a_refused_points_reason_is_the_one_its_parse_gave(tmp_path, capsys, jobs_built):
    # tp 3 does not divide 16 GPUs: one parse marks it invalid, with Megatron's rule
    sweep = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [2, 3]})
    assert main(["sweep", sweep, "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" ", 1)[1] for line in lines[1:3]] == ["tp=2", "tp=3  invalid"]
    assert lines[3] == "invalid: 1 point(s) break the rule 'gpus divisible by tp x pp x cp'"
    assert len(jobs_built) == 1  # tp 2's, once; the refused point builds none


def test_a_swept_point_keeps_what_its_job_said_not_the_job(tmp_path):
    # a parsed job held 4.4 KB a point for the whole sweep (440 MB at the 100,000-point cap);
    # what reads it (alike points, the marks of refused ones) reads it as the point is expanded
    import gc

    from simpy_astra.sweep.spec import load_sweep
    from simpy_astra.workloads.megatron import memory
    from simpy_astra.workloads.megatron.job import MegatronJob

    sweep = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2, 3],
                                      "workload.args.micro-batch-size": [1, 2]})
    gc.collect()
    before = {id(o) for o in gc.get_objects() if isinstance(o, MegatronJob)}  # other tests' (a whole suite)
    points = load_sweep(sweep).points()
    memory._fullest_stage_parts.cache_clear()  # (a bound of 8 jobs, however many points)
    gc.collect()
    assert len(points) == 6
    assert [o for o in gc.get_objects() if isinstance(o, MegatronJob) and id(o) not in before] == []


@pytest.mark.parametrize("launcher, said", [
    ("torchrun --nproc_per_node 4 --nnodes 4", "starts 4 GPUs a node"),  # the nodes hold 8
    ("srun -N 4", "32 GPUs at the cluster's 8 a node"),  # 16 GPUs on 4 nodes of 8
])
def test_list_marks_a_launcher_the_clusters_nodes_refuse_as_its_run_does(tmp_path, capsys, launcher, said):
    # --list parsed the job without the cluster's GPUs a node: the points were listed unmarked,
    # and every one of them failed when run
    sweep = megatron_sweep(tmp_path, {"workload.args.micro-batch-size": [1, 2]},
                           args=f"{launcher} pretrain_gpt.py {SMALL_GPT_ARGS}")
    assert main(["sweep", sweep, "--list"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert [line.endswith("  will fail") for line in lines[1:3]] == [True, True]
    listed = " ".join(out.split("will fail: ", 1)[1].split("will fail: ")[0].split())
    assert said in listed
    out_dir = tmp_path / "out"
    assert main(["sweep", sweep, "--out", str(out_dir), "--no-plots"]) != 0
    with open(out_dir / "results.csv", newline="") as f:
        row = next(csv.DictReader(f))
    assert row["status"] == "error"
    key, _, text = listed.partition(": ")
    assert key == row["key"]  # the run's own words (its where names the field, workload.args)
    assert row["error"].partition("the pasted launcher")[2] == text.partition("the pasted launcher")[2]
