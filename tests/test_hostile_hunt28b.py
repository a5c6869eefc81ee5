"""A twenty-eighth hunt, second half: the leftovers of the first and the seams of round 14's
extensions. Each test failed before its fix: a wrong success, or a message naming no fix."""

from __future__ import annotations

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import TINY_GPT_ARGS, error_lines, megatron_scenario


@pytest.mark.parametrize(("launcher", "started"), [
    ("mpirun -np 8 -x NCCL_DEBUG=INFO python pretrain_gpt.py", "8 GPUs (-np 8)"),
    ("/usr/bin/mpiexec -n 32 python pretrain_gpt.py", "32 GPUs (-n 32)"),
    ("srun -N 2 --ntasks-per-node=4 python pretrain_gpt.py", "8 GPUs (-N 2 x --ntasks-per-node 4)"),
    ("srun --ntasks 32 python pretrain_gpt.py", "32 GPUs (--ntasks 32)"),
    ("deepspeed --num_nodes 4 --num_gpus 8 pretrain_gpt.py", "32 GPUs (--num_nodes 4 x --num_gpus 8)"),
    # of launchers nested, the last starts the workers
    ("srun -N 2 --ntasks-per-node 1 torchrun --nnodes 2 --nproc_per_node 4 pretrain_gpt.py",
     "8 GPUs (--nnodes 2 x --nproc_per_node 4)")])
def test_mpirun_srun_and_deepspeed_counts_are_read_as_torchruns_are(tmp_path, capsys, launcher, started):
    # before: only torchrun's counts were read; mpirun -np 8 (srun, deepspeed) was dropped unread
    # and the job ran on cluster.gpus' 16 in silence
    path = megatron_scenario(tmp_path, f"{launcher} {TINY_GPT_ARGS}", preset="dgx-h100", gpus=16)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: the pasted launcher starts {started}, but the job runs on 16 ({path}: "
        f"cluster.gpus); make them one count, or drop the launcher's words"]


@pytest.mark.parametrize(("launcher", "shown"), [
    ("mpirun -np 16 -N 4 python pretrain_gpt.py", "-np 16 x -N 4"),
    ("deepspeed --num_gpus 4 pretrain_gpt.py", "--num_gpus 4")])
def test_a_launchers_gpus_a_node_are_read_with_or_without_its_whole_count(tmp_path, capsys, launcher, shown):
    path = megatron_scenario(tmp_path, f"{launcher} {TINY_GPT_ARGS}", preset="dgx-h100", gpus=16)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: the pasted launcher starts 4 GPUs a node ({shown}), but the cluster's nodes "
        f"hold 8; give cluster.gpus_per_node: 4, or drop the launcher's words"]


@pytest.mark.parametrize("launcher", ["mpirun -np 16 python pretrain_gpt.py", "srun -N 2 python pretrain_gpt.py",
                                      "deepspeed --num_gpus 8 pretrain_gpt.py"])
def test_a_launcher_agreeing_with_the_job_runs(tmp_path, launcher):
    assert main(["run", megatron_scenario(tmp_path, f"{launcher} {TINY_GPT_ARGS}", preset="dgx-h100", gpus=16),
                 "--quiet"]) == 0


@pytest.mark.parametrize(("field", "value"), [("gpus", "'16'"), ("gpus", '"16"'), ("inter_node_gbit_s", "'400'")])
def test_a_quoted_number_is_told_to_lose_its_quotes(tmp_path, capsys, field, value):
    # before: "cluster.gpus: must be a positive integer (got '16')", no fix named
    path = tmp_path / "s.yaml"
    other = "" if field == "gpus" else ", gpus: 16"
    path.write_text(f"workload: {{generate: megatron, args: '{TINY_GPT_ARGS}'}}\n"
                    f"cluster: {{preset: dgx-h100, {field}: {value}{other}}}\n")
    number = value.strip("'\"")
    assert error_lines(capsys, ["run", str(path), "--quiet"])[-1].endswith(
        f"(got '{number}'); write {number} without quotes (in quotes, YAML reads it as text)")
