"""A twenty-third hunt: an environment variable as a script quotes it, NCCL's fitted keys a
preset's machine never reads, and Megatron-LM's newer flags in combinations. Each test failed
before its fix: a silent wrong run, a field ignored, or an error naming no fix."""

from __future__ import annotations

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import SMALL_GPT_ARGS, error_lines, megatron_scenario, megatron_sweep


def test_a_cache_path_quoted_with_its_tilde_goes_home(tmp_path, capsys, monkeypatch):
    # before: SIMPY_ASTRA_CACHE="~/cache" (quoted in a job script, so no shell expanded it)
    # made a folder named '~' in the working folder and cached the traces there
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", "~/cache")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert main(["run", megatron_scenario(tmp_path), "--quiet"]) == 0, capsys.readouterr().err
    assert (tmp_path / "home" / "cache" / "workloads").is_dir()
    assert not (tmp_path / "work" / "~").exists()


def _step_and_warnings(capsys, path: str) -> tuple[str, list[str]]:
    """The headline of a run of ``path`` and its warnings, each on one line."""
    from tests.wrapped_lines import plain

    assert main(["run", path, "--quiet"]) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    return captured.out, plain(captured.err).strip().splitlines()


@pytest.mark.parametrize(("fields", "key", "said"), [
    # the preset's nodes have no NVLS (dgx-a100-80gb: node.nvls false); only a written nvls:
    # false was heard
    ({"nccl_nvls_efficiency": 0.5}, "nccl_nvls_efficiency",
     "nvls (for an all-reduce, reduce-scatter or all-gather) or PAT (at the mean of every share), and nvls is "
     "false (no NVLink SHARP), and the job issues no all-gather or reduce-scatter (PAT's collectives)"),
    # a latency scale fitted on an algorithm that never runs: no word was said of either
    ({"nccl_algo": "ring", "nccl_latency_scale": 20, "nccl_latency_scale_algo": "tree"}, "nccl_latency_scale",
     "tree (for an all-reduce), the algorithm it was fitted on, and nccl_algo forces ring"),
    ({"nccl_latency_scale": 20, "nccl_latency_scale_algo": "nvls"}, "nccl_latency_scale",
     "nvls (for an all-reduce, reduce-scatter or all-gather), the algorithm it was fitted on, and nvls is false "
     "(no NVLink SHARP)"),
])
def test_an_nccl_term_of_an_algorithm_the_machine_never_runs_is_said(tmp_path, capsys, fields, key, said):
    base = {k: v for k, v in fields.items() if k != key}
    path = megatron_scenario(tmp_path, SMALL_GPT_ARGS, gpus=16, **fields)
    step, warnings = _step_and_warnings(capsys, path)
    assert warnings == [f"warning: {path}: cluster.{key} changes nothing here: it is read only where NCCL "
                        f"runs {said}"]
    assert step == _step_and_warnings(capsys, megatron_scenario(tmp_path, SMALL_GPT_ARGS, "base.yaml", gpus=16,
                                                                **base))[0]


def test_a_sweep_over_a_latency_scale_no_run_reads_runs_it_once(tmp_path, capsys):
    # dgx-h100's scale is its NVLS fit's: beside nccl_algo: ring every point ran the same step
    sweep = megatron_sweep(tmp_path, {"cluster.nccl_latency_scale": [1, 2]},
                           cluster={"preset": "dgx-h100", "gpus": 16, "nccl_algo": "ring"})
    assert main(["sweep", sweep, "--list"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("1 point\n"), captured.out
    assert "(cluster.nccl_latency_scale changes nothing where nccl_algo forces ring)" in " ".join(
        captured.err.split())


@pytest.mark.parametrize(("gpu", "said"), [
    # before: 'must be a mapping of GPU figures to override', and not how to get another GPU
    ("H100-SXM5-80GB", "gpu: 'H100-SXM5-80GB' is a GPU's name, and gpu: lays figures over the preset's GPU as a "
                       "mapping (gpu: {tensor_tflops: 989}); for another GPU use preset: dgx-h100"),
    # before: ran the A100's figures to the nanosecond under the H100's name
    ({"name": "H100-SXM5-80GB"}, "gpu.name: H100-SXM5-80GB is a hopper GPU and every figure is still {preset}'s "
                                 "A100-SXM4-80GB (ampere): only NCCL's constants and the attention kernels would "
                                 "change; use preset: dgx-h100, or give all the GPU's figures beside its name"),
])
def test_another_gpu_by_name_alone_is_told_to_take_its_preset(tmp_path, capsys, gpu, said):
    from simpy_astra.config.cluster_presets import PRESET_DIR

    path = megatron_scenario(tmp_path, gpu=gpu)
    preset = f"{PRESET_DIR}/dgx-a100-80gb.yaml"
    assert error_lines(capsys, ["run", path]) == [f"error: {path}: cluster.{said.replace('{preset}', preset)}"]


def _preset_gpu(name: str) -> dict:
    """The ``gpu:`` block of a shipped preset file, as written."""
    import yaml

    from simpy_astra.config.cluster_presets import PRESET_DIR

    with open(f"{PRESET_DIR}/{name}.yaml") as f:
        return yaml.safe_load(f)["gpu"]


def test_another_gpu_by_name_with_some_figures_is_told_the_ones_left(tmp_path, capsys):
    # before: {name: H100, hbm_gib: 80} on an A100 preset ran the A100's rates under the H100's name
    path = megatron_scenario(tmp_path, gpu={"name": "H100-SXM5-80GB", "hbm_gib": 80})
    lines = error_lines(capsys, ["run", path])
    assert len(lines) == 1 and "gpu.name: H100-SXM5-80GB is a hopper GPU and " in lines[0], lines
    # every figure but the one given, by the names the cluster reads (hbm_gbps is hbm_gb_s)
    assert "and attention_efficiency, fp8_efficiency, fp8_tflops, hbm_gb_s, l2_gb_s, launch_us, " \
           "memory_efficiency, sms, tensor_efficiency, tensor_tflops are still" in lines[0]


def test_another_gpu_by_name_with_all_its_figures_runs(tmp_path):
    figures = _preset_gpu("dgx-h100")
    assert main(["run", megatron_scenario(tmp_path, gpu=figures), "--quiet"]) == 0


def test_a_gpu_renamed_within_its_generation_still_runs(tmp_path, capsys):
    # an A800 is the A100's export board: the preset's figures are its own
    assert main(["run", megatron_scenario(tmp_path, gpu={"name": "A800-SXM4-80GB"}), "--quiet"]) == 0


@pytest.mark.parametrize(("field", "said"), [
    # before: "must be a positive number (got inf)", of a value that is positive
    ({"nvlink_gib_s": float("inf")}, "nvlink_gib_s: must be between 0.001 and 1e+09 (GiB/s per GPU and direction, "
                                     "not B/s; got inf)"),
    ({"gpu": {"tensor_tflops": float("nan")}}, "gpu.tensor_tflops: must be between 0.001 and 1e+06 (dense "
                                               "fp16/bf16 TFLOP/s; got nan)"),
])
def test_an_endless_cluster_figure_is_told_its_range(tmp_path, capsys, field, said):
    path = megatron_scenario(tmp_path, **field)
    assert error_lines(capsys, ["run", path]) == [f"error: {path}: cluster.{said}"]


def test_a_holdout_record_beside_another_network_is_warned_of(tmp_path, capsys):
    # before: validate --holdout split the sizes into 'fitted' and 'held out' against any
    # network given, though its fitted rows were fitted to the record's network, not this one
    from pathlib import Path

    nccl = Path(__file__).resolve().parent / "data" / "nccl" / "dgx-a100-superbench"
    log, fit = str(nccl / "all_reduce.log"), tmp_path / "fit"
    assert main(["calibrate", log, "--network", str(nccl / "network.yml"), "--out", str(fit),
                 "--hold-out-every", "3"]) == 0
    argv = ["validate", log, "--system", str(fit / "system.json"), "--holdout", str(fit / "calibration.json")]
    capsys.readouterr()
    assert main([*argv, "--network", str(fit / "network.yml"), "--out", str(tmp_path / "v1")]) == 0
    assert "warning" not in capsys.readouterr().err
    import json

    import yaml

    edited = tmp_path / "edited.yml"
    network = {**yaml.safe_load((fit / "network.yml").read_text()), "bandwidth": [300]}
    edited.write_text(yaml.safe_dump(network))
    then = json.loads((fit / "calibration.json").read_text())["fitted"]["bandwidth"]
    assert main([*argv, "--network", str(edited), "--out", str(tmp_path / "v2")]) == 0
    from tests.wrapped_lines import plain

    assert plain(capsys.readouterr().err).splitlines() == [
        f"warning: {edited}: bandwidth is [300], but {fit / 'calibration.json'} fitted {then}: its 'fitted' "
        f"rows were fitted to another network; give the network.yml calibrate wrote beside it, or drop --holdout"]


def test_nvlink_at_one_gpu_a_node_changes_nothing_and_is_said(tmp_path, capsys):
    # before: at gpus_per_node 1 (a node's one GPU reaches others only through its NIC) NCCL's
    # ring still ran at min(NVLink, NIC): nvlink_gib_s: 1 made the step 69.9 ms, not 1.2
    one = {"preset": "dgx-h100", "gpus": 16, "gpus_per_node": 1}
    plain = _step_and_warnings(capsys, megatron_scenario(tmp_path, name="plain.yaml", **one))
    path = megatron_scenario(tmp_path, name="slow.yaml", nvlink_gib_s=1, **one)
    step, warnings = _step_and_warnings(capsys, path)
    assert step == plain[0] and plain[1] == []
    assert warnings == [f"warning: {path}: cluster.nvlink_gib_s changes nothing here: each node holds one GPU "
                        f"(gpus_per_node 1), so no message crosses NVLink; it applies from 2 GPUs a node"]


@pytest.mark.parametrize("figure", ["mfu", "tflops_per_gpu", "tokens_per_s_per_gpu"])
def test_minimising_a_figure_of_which_more_is_better_is_warned_of(tmp_path, capsys, figure):
    # before: minimise: mfu ran in silence and its best line named the layout of the lowest MFU
    # (maximise: was refused for that reason; minimise: of the figure itself was not)
    tp = {"workload.args.tensor-model-parallel-size": [1, 2]}
    sweep = megatron_sweep(tmp_path, tp, minimise=figure)
    assert main(["sweep", sweep, "--list"]) == 0
    assert " ".join(capsys.readouterr().err.split()) == (
        f"warning: minimise: {figure} ranks the point of the lowest {figure} best, though more {figure} is better; "
        f"write minimise: -{figure} for the highest (or minimise: iteration_time_ns)")
    sweep = megatron_sweep(tmp_path, tp, minimise=f"-{figure}")
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("flag", "said"), [
    # before: "... that this simulator knows", no fix, for the count a launcher gives
    ("--gpus 16", "the job's GPUs are not an argument of pretrain_gpt.py (torchrun's --nnodes x --nproc-per-node give "
                  "them): give the GPU count as cluster.gpus in a scenario (generate megatron: --gpus before --)"),
    # before: "did you mean --model-parallel-size?", another thing altogether
    ("--data-parallel-size 2", "the data-parallel size is not an argument of Megatron-LM: it follows from the GPU count, "
                               "gpus / (tp x pp x cp); set the GPUs (cluster.gpus in a scenario, generate megatron's "
                               "--gpus)"),
    ("--preset dgx-h100", "the machine is not an argument of Megatron-LM: name it as cluster.preset in a scenario "
                          "(generate megatron: --preset before --)"),
])
def test_what_the_launcher_or_cluster_gives_is_told_where_it_goes(tmp_path, capsys, flag, said):
    from tests.scenario_files import TINY_GPT_ARGS

    path = megatron_scenario(tmp_path, f"{TINY_GPT_ARGS} {flag}")
    assert error_lines(capsys, ["run", path]) == [
        f"error: {path}: workload.args: {flag.split()[0]}: {said}, and remove it here"]


def test_zb_h1_on_model_chunks_names_the_schedules_that_run_them(tmp_path, capsys):
    # before: "ZB-H1 runs one chunk per stage, not 2", and nothing of what does run them
    from tests.scenario_files import write_yaml

    args = ("--num-layers 8 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --micro-batch-size 1 "
            "--global-batch-size 16 --bf16 --vocab-size 32000 --pipeline-model-parallel-size 2 "
            "--virtual-pipeline-model-parallel-size 2")
    path = write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": args, "schedule": "zb-h1"},
                                 "cluster": {"preset": "dgx-h100", "gpus": 8}})
    assert error_lines(capsys, ["run", path]) == [
        f"error: {path}: workload.schedule: ZB-H1 runs one chunk per stage, not 2 (use zb-v for two chunks in a V, "
        f"or interleaved-1f1b)"]


@pytest.mark.parametrize(("axis", "values"), [("fp8-format", [None, "hybrid"]),
                                              ("attention-backend", [None, "flash", "fused"])])
def test_a_flag_megatrons_own_layers_do_not_read_runs_its_sweep_point_once(tmp_path, capsys, axis, values):
    # before: run warned that each changes nothing under --transformer-impl local, yet a sweep
    # over it ran every value as a step of its own, and ranked them
    sweep = megatron_sweep(tmp_path, {f"workload.args.{axis}": values},
                           args=f"{SMALL_GPT_ARGS} --transformer-impl local")
    assert main(["sweep", sweep, "--list"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("1 point\n"), captured.out
    assert "(Megatron-LM runs their arguments alike)" in " ".join(captured.err.split())


@pytest.mark.parametrize(("fields", "said"), [
    # before: "must be in (0, 1e+06]", of a key that takes 0 (a machine without the cost)
    ({"nccl_launch_us": -1}, "nccl_launch_us: must be from 0 to 1e+06 (microseconds, one NCCL call's fixed cost, "
                             "as calibrate --nccl-algo fits it; got -1)"),
    # before: ran, scaling every algorithm's latency by the preset's NVLS fit, where leaving the
    # key out (and a sweep's null) keeps the preset's nvls
    ({"nccl_latency_scale_algo": None}, "nccl_latency_scale_algo: is empty (null); write ring, tree or nvls, or "
                                        "leave the key out for the preset's (every algorithm where it names none)"),
])
def test_an_nccl_key_refused_says_what_it_takes(tmp_path, capsys, fields, said):
    path = megatron_scenario(tmp_path, preset="dgx-h100", gpus=16, **fields)
    assert error_lines(capsys, ["run", path]) == [f"error: {path}: cluster.{said}"]


def test_nvls_at_one_gpu_a_node_is_said_to_change_nothing(tmp_path, capsys):
    # NCCL runs NVLS only where a node holds two or more of a group's GPUs
    one = {"preset": "dgx-h100", "gpus": 16, "gpus_per_node": 1}
    step, warnings = _step_and_warnings(capsys, megatron_scenario(tmp_path, name="off.yaml", nvls=False, **one))
    path = megatron_scenario(tmp_path, nvls=True, **one)
    assert _step_and_warnings(capsys, path) == (step, [
        f"warning: {path}: cluster.nvls changes nothing here: each node holds one GPU (gpus_per_node 1), so no "
        f"message crosses NVLink; it applies from 2 GPUs a node"])
