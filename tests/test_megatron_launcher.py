"""A launcher pasted before pretrain_gpt.py: its words are read once, with Megatron-LM's, and
held to the job in one place (workloads/megatron/launcher.py). Each test failed before its fix:
the launcher's words were dropped unread, and the job ran as the cluster's in silence."""

from __future__ import annotations

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import TINY_GPT_ARGS, error_lines, launched_as_alone, megatron_scenario


@pytest.mark.parametrize(("launcher", "shown", "nodes"), [
    ("srun -N 4 python pretrain_gpt.py", "-N 4", 4),
    ("srun --nodes=1 python pretrain_gpt.py", "--nodes 1", 1),
    ("deepspeed --num_nodes 4 pretrain_gpt.py", "--num_nodes 4", 4)])
def test_a_launchers_nodes_alone_are_held_to_the_jobs_gpus(tmp_path, capsys, launcher, shown, nodes):
    # 16 GPUs of 8 a node fill 2 nodes; 'srun -N 4' (a node's GPUs each) starts 32, -N 1 starts 8
    path = megatron_scenario(tmp_path, f"{launcher} {TINY_GPT_ARGS}", preset="dgx-h100", gpus=16)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: the pasted launcher starts {nodes} nodes ({shown}), {nodes * 8} GPUs at the "
        f"cluster's 8 a node, but the job runs on 16 ({path}: cluster.gpus); make them one count, or drop the "
        f"launcher's words"]


def test_a_launchers_nodes_that_hold_the_jobs_gpus_run(tmp_path):
    path = megatron_scenario(tmp_path, f"srun -N 1 python pretrain_gpt.py {TINY_GPT_ARGS}", preset="dgx-h100",
                             gpus=8)
    assert main(["run", path, "--quiet"]) == 0


@pytest.mark.parametrize(("launcher", "name", "word", "fix"), [
    ("mpirun -np 16 -x NCCL_ALGO=Tree python pretrain_gpt.py", "NCCL_ALGO", "NCCL_ALGO=Tree",
     "give cluster.nccl_algo instead (ring, tree, nvls, ...)"),
    ("mpiexec -n 16 -genv NCCL_PROTO Simple python pretrain_gpt.py", "NCCL_PROTO", "NCCL_PROTO",
     "it is not modelled (the simulator runs NCCL's own choice)"),
    ("srun --export=ALL,NCCL_NVLS_ENABLE=0 -N 2 python pretrain_gpt.py", "NCCL_NVLS_ENABLE",
     "--export=ALL,NCCL_NVLS_ENABLE=0", "give cluster.nvls instead"),
    ("NCCL_ALGO=Ring torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py", "NCCL_ALGO", "NCCL_ALGO=Ring",
     "give cluster.nccl_algo instead (ring, tree, nvls, ...)")])
def test_a_launcher_exporting_an_nccl_setting_that_changes_time_is_refused(tmp_path, capsys, launcher, name, word,
                                                                            fix):
    path = megatron_scenario(tmp_path, f"{launcher} {TINY_GPT_ARGS}", preset="dgx-h100", gpus=16)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: the pasted launcher sets {name} ({word}), which changes how long NCCL's "
        f"collectives take and is not read from here; {fix}, and drop it from the launcher's words"]


def test_a_launchers_other_words_run_as_before(tmp_path, capsys):
    # logging, hostfiles, bindings and CUDA_DEVICE_MAX_CONNECTIONS=1 (which Megatron-LM asks for)
    # change no step's time: the job runs as without them
    launcher = ("CUDA_DEVICE_MAX_CONNECTIONS=1 mpirun -np 16 -x NCCL_DEBUG=INFO --hostfile hosts --bind-to none "
                "-x CUDA_DEVICE_MAX_CONNECTIONS python pretrain_gpt.py")
    pasted, alone = launched_as_alone(tmp_path, capsys, launcher)
    assert pasted == alone
