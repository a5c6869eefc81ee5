"""NCCL runs NVLS only where a node holds two or more of a group's GPUs
(``nccl_tuning.available``), so at ``gpus_per_node: 1`` an NVLS term of NCCL's fit changes
nothing, as it does beside ``nvls: false``: it is said, and a sweep over it runs once."""

from __future__ import annotations

from simpy_astra.cli.main import main
from tests.scenario_files import SMALL_GPT_ARGS, headline_and_warnings, megatron_scenario, megatron_sweep

ONE = {"preset": "dgx-h100", "gpus": 16, "gpus_per_node": 1}


def test_an_nvls_term_at_one_gpu_a_node_is_said_to_change_nothing(tmp_path, capsys):
    # before: nccl_nvls_efficiency: 0.3 and nccl_latency_scale: 30 (dgx-h100's scale is its
    # NVLS fit's) ran the same 35.7 ms step as neither, in silence
    plain = headline_and_warnings(capsys, megatron_scenario(tmp_path, SMALL_GPT_ARGS, "plain.yaml", **ONE))
    assert plain[1] == []
    nvls = "NCCL runs nvls (for an all-reduce, reduce-scatter or all-gather)"
    for key, value, said in (
            ("nccl_nvls_efficiency", 0.3, f"{nvls} or PAT (at the mean of every share), and each node holds one "
                                          f"GPU (gpus_per_node 1), and the job issues no all-gather or "
                                          f"reduce-scatter (PAT's collectives)"),
            ("nccl_latency_scale", 30, f"{nvls}, the algorithm it was fitted on, and each node holds one GPU "
                                       f"(gpus_per_node 1)")):
        path = megatron_scenario(tmp_path, SMALL_GPT_ARGS, f"{key}.yaml", **ONE, **{key: value})
        assert headline_and_warnings(capsys, path) == (plain[0], [
            f"warning: {path}: cluster.{key} changes nothing here: it is read only where {said}"])


def test_a_sweep_over_an_nvls_share_at_one_gpu_a_node_runs_once(tmp_path, capsys):
    sweep = megatron_sweep(tmp_path, {"cluster.nccl_nvls_efficiency": [0.3, 0.6]}, cluster=ONE)
    assert main(["sweep", sweep, "--list"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("1 point\n"), captured.out
