"""Leftovers of the twenty-fifth hunt: NVLS claimed for nodes whose NVSwitch has no multicast, a
horizon error that named no figure, and microbenchmarks on a preset that never folded. Each test
failed before its fix.

Outside facts: the DGX A100 datasheet (six second-generation NVSwitches, no NVLink SHARP) and
the DGX H100's (four third-generation NVSwitches, NVLink SHARP), which NCCL's NVLS needs."""

from __future__ import annotations

import csv
import dataclasses

import pytest
import yaml

from simpy_astra.cli.main import main
from simpy_astra.config.cluster_presets import PRESET_DIR
from simpy_astra.config.scenario import load_scenario
from simpy_astra.simulation import Simulation
from tests.scenario_files import error_lines, megatron_sweep, write_yaml

MIB = 1 << 20

#: the reason each A100 refusal gives, after "preset P's"
NO_MULTICAST = ("nodes have a 2nd-generation NVSwitch, without the multicast (NVLink SHARP) of NVSwitch-3, "
                "Hopper's NVSwitch systems on, that NCCL's NVLS needs")
A100S = {"dgx-a100-80gb": "A100-SXM4-80GB", "dgx-a100-40gb": "A100-SXM4-40GB"}


def _microbench(folder, cluster: dict, name: str = "s.yaml", collective: str = "all_reduce",
                size: int = MIB) -> str:
    return write_yaml(folder, {"workload": {"generate": "microbench", "collective": collective, "size": size},
                               "cluster": cluster}, name)


# ---------------------------------------------------------------- NVLS on nodes without NVSwitch-3

@pytest.mark.parametrize("preset", sorted(A100S))
def test_nvls_true_on_an_a100_preset_is_refused_naming_the_field_why_and_the_fix(tmp_path, capsys, preset):
    # before: it ran NCCL's NVLS on the A100's nodes (16 GPUs, 1 MiB: 85,917 ns, as without it),
    # hardware the DGX A100 does not have
    path = _microbench(tmp_path, {"preset": preset, "gpus": 16, "nvls": True})
    assert error_lines(capsys, ["run", path]) == [
        f"error: {path}: cluster.nvls: true, but preset {preset}'s {A100S[preset]} {NO_MULTICAST}; use an H100 "
        f"preset (preset: dgx-h100), or drop nvls"]
    # the fixes run: the field dropped, or an H100 preset
    for cluster in ({"preset": preset, "gpus": 16}, {"preset": "dgx-h100", "gpus": 16, "nvls": True}):
        assert main(["run", _microbench(tmp_path, cluster, "fixed.yaml"), "--quiet"]) == 0
    capsys.readouterr()


def test_a_preset_of_ones_own_claiming_nvls_for_a100_nodes_is_refused_at_its_key(tmp_path, capsys):
    doc = yaml.safe_load(open(f"{PRESET_DIR}/dgx-a100-80gb.yaml"))
    doc["node"]["nvls"] = True
    preset = write_yaml(tmp_path, doc, "my-a100.yaml")
    path = _microbench(tmp_path, {"preset": preset, "gpus": 16})
    assert error_lines(capsys, ["run", path]) == [
        f"error: {preset}: node.nvls: true, but preset {preset}'s A100-SXM4-80GB {NO_MULTICAST}; use an H100 "
        f"preset (preset: dgx-h100), or set it false (or drop it)"]


def test_nccl_algo_nvls_on_an_a100_preset_names_an_h100_preset_not_nvls_true(tmp_path, capsys):
    # before: "... node.nvls is false; use ring or tree (or nvls: true, for nodes that have it)",
    # a fix that claims hardware the A100's nodes have not
    path = _microbench(tmp_path, {"preset": "dgx-a100-80gb", "gpus": 16, "nccl_algo": "nvls"})
    assert error_lines(capsys, ["run", path]) == [
        f"error: {path}: cluster.nccl_algo: nvls, but preset dgx-a100-80gb's A100-SXM4-80GB {NO_MULTICAST}; "
        f"use ring or tree, or an H100 preset (preset: dgx-h100)"]


def test_a_sweep_over_nvls_on_an_a100_preset_has_invalid_points_with_the_rule(tmp_path, capsys):
    # before: nvls=true ran (a row of NVLS on an A100); now it is a point the real machine cannot
    # run, as FP8 on an A100 is, and as NCCL_ALGO=NVLS there is (NCCL stops)
    sweep = write_yaml(tmp_path, {"base": {"workload": {"generate": "microbench", "collective": "all_reduce",
                                                        "size": MIB},
                                           "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}},
                                  "axes": {"cluster.nvls": [None, True], "cluster.nccl_algo": [None, "nvls"]},
                                  "minimise": "finish_ns"}, "sweep.yaml")
    assert main(["sweep", sweep, "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "4 points, 3 invalid (each breaks a rule named below; they will not run)"
    assert out[-2:] == ["invalid: 1 point(s) break the rule 'NCCL has no forced algorithm here'",
                        "invalid: 2 point(s) break the rule 'NVLS needs NVSwitch-3'"]
    assert main(["sweep", sweep, "--out", str(tmp_path / "out"), "--no-plots", "--jobs", "1"]) == 0
    assert "4 of 4 points, 0 failed, 3 invalid" in " ".join(capsys.readouterr().err.split())
    with open(tmp_path / "out" / "results.csv") as f:
        rows = {(row["cluster.nvls"], row["cluster.nccl_algo"]): row for row in csv.DictReader(f)}
    assert rows[("null", "null")]["status"] == "ok"  # a null coordinate is written null (h3, 2026-12-02)
    for key, rule in ((("true", "null"), "NVLS needs NVSwitch-3"), (("true", "nvls"), "NVLS needs NVSwitch-3"),
                      (("null", "nvls"), "NCCL has no forced algorithm here")):
        assert rows[key]["status"] == "invalid" and rows[key]["error"].startswith(f"{rule}: ")


def test_a_megatron_sweep_on_a100s_claiming_nvls_is_marked_invalid_by_list(tmp_path, capsys):
    # an axis over Megatron's flags alone: --list reads only the cluster's GPU, and now its nodes
    sweep = megatron_sweep(tmp_path, {"workload.args.--micro-batch-size": [1, 2]},
                           cluster={"preset": "dgx-a100-80gb", "gpus": 16, "nvls": True})
    assert main(["sweep", sweep, "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "2 points, 2 invalid (each breaks a rule named below; they will not run)"
    assert out[-1] == "invalid: 2 point(s) break the rule 'NVLS needs NVSwitch-3'"


# ---------------------------------------------------------------- the horizon names the GPU's figure

GPT = ("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
       "--global-batch-size 8 --bf16")


@pytest.mark.parametrize(("field", "kind"), [("tensor_efficiency", "gemm"), ("attention_efficiency", "attention"),
                                             ("memory_efficiency", "optimizer")])
def test_a_horizon_error_from_an_extreme_efficiency_names_the_field(tmp_path, capsys, monkeypatch, field, kind):
    # before: "...; use smaller ones, or check the GPU's figures", a dozen of them
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    cluster = {"preset": "dgx-h100", "gpus": 8, "gpu": {field: 1e-300}}
    path = write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": GPT}, "cluster": cluster})
    [line] = error_lines(capsys, ["run", path])
    assert line.startswith(f"error: {path}: workload: the model's dimensions and batch on the H100-SXM5-80GB give ")
    assert line.endswith(f"; raise cluster.gpu.{field}: 1e-300 (what its {kind} kernels run at), or use smaller ones")
    # the fix named runs
    cluster["gpu"][field] = 0.5
    assert main(["run", write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": GPT},
                                              "cluster": cluster}, "fixed.yaml"), "--quiet"]) == 0



def test_a_horizon_error_names_the_figure_the_steps_own_kernels_read(tmp_path, capsys, monkeypatch):
    # unfused attention (Transformer Engine told so) runs its score products as GEMMs at
    # tensor_efficiency; before, the figures were found by timing a flash-attention kernel
    # (and GEMMs of hidden x hidden) beside the step's own, so the error named
    # "tensor_tflops: 989, attention_efficiency: 0.38", which this step's kernels never read
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    args = ("--num-layers 2 --hidden-size 128 --num-attention-heads 2 --seq-length 32768 "
            "--max-position-embeddings 32768 --micro-batch-size 1 --global-batch-size 8 --bf16 "
            "--attention-backend unfused")
    cluster = {"preset": "dgx-h100", "gpus": 8, "gpu": {"tensor_efficiency": 1e-300}}
    path = write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": args}, "cluster": cluster})
    [line] = error_lines(capsys, ["run", path])
    assert line.endswith("; raise cluster.gpu.tensor_efficiency: 1e-300 (what its attention kernels run at), "
                         "or use smaller ones")

# ---------------------------------------------------------------- a microbenchmark on a preset folds

def _reports(path: str, fold: bool) -> tuple[int, list[dict]]:
    sim = Simulation(dataclasses.replace(load_scenario(path), fold_symmetry=fold))
    reports = sim.run()
    return len(sim.npus), [dataclasses.asdict(r) for r in reports]


@pytest.mark.parametrize("preset", ["dgx-h100", "dgx-a100-80gb"])
@pytest.mark.parametrize("collective", ["all_reduce", "all_gather", "reduce_scatter"])
@pytest.mark.parametrize(("gpus", "size"), [(16, 4096), (16, MIB), (32, 64 * MIB), (24, MIB)])
def test_a_default_group_collective_on_a_preset_folds_exactly(tmp_path, preset, collective, gpus, size):
    # before: never folded ("collectives on the network's dimensions use an algorithm that does
    # not commute with their shifts": the halvingDoubling the preset's system names for a node,
    # which NCCL's timing never runs); NCCL times it by its members, every GPU
    path = _microbench(tmp_path, {"preset": preset, "gpus": gpus}, collective=collective, size=size)
    folded_npus, folded = _reports(path, True)
    full_npus, full = _reports(path, False)
    assert (folded_npus, full_npus) == (1, gpus)
    assert folded == full


def test_a_folded_microbenchmark_says_no_untrue_note(tmp_path, capsys):
    path = _microbench(tmp_path, {"preset": "dgx-h100", "gpus": 16})
    assert main(["run", path, "--quiet", "--fold-symmetry", "on"]) == 0
    assert "symmetry folding" not in capsys.readouterr().err


@pytest.mark.parametrize("parallel", ["HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA"])
def test_gemm_layers_on_a_preset_fold_exactly(tmp_path, monkeypatch, parallel):
    # collectives on some of the dimensions (a package's, or across packages), timed by NCCL too
    pytest.importorskip("scalesim")
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    (tmp_path / "mnk.csv").write_text("Layer,m,n,k\nL0,256,128,64\nL1,256,64,128\n")
    path = write_yaml(tmp_path, {"workload": {"generate": "gemm", "mnk": "mnk.csv", "parallel": parallel,
                                              "num_npus": 16, "num_packages": 2},
                                 "cluster": {"preset": "dgx-h100", "gpus": 16}})
    folded_npus, folded = _reports(path, True)
    full_npus, full = _reports(path, False)
    assert folded_npus < full_npus == 16
    assert folded == full


def test_folding_asked_for_over_leaves_unlike_runs_unfolded_and_says_why(tmp_path, capsys):
    # before: --fold-symmetry on overrode the loader's refusal and folded 24 GPUs under leaves of
    # two nodes (a 2:1 spine) onto 8: every GPU finished at 107,291 ns, where unfolded those of the
    # third node, past the spine, take 114,728 (the step) and the others 99,854
    path = _microbench(tmp_path, {"preset": "dgx-h100", "gpus": 24, "nodes_per_leaf": 2, "oversubscription": 2},
                       collective="all_to_all")
    heads = []
    for flag in ("on", "off"):
        assert main(["run", path, "--quiet", "--fold-symmetry", flag]) == 0
        captured = capsys.readouterr()
        heads.append(captured.out)
        said = " ".join(captured.err.split())
        assert ("symmetry folding off: cluster.oversubscription 2:1 over leaves of 2 nodes makes GPUs under "
                "different leaves unlike; leave it out to fold; simulating 24 of 24 NPUs" in said) is (flag == "on")
    assert heads[0] == heads[1] == "iteration time 114,728 ns (last: NPU 8 of 24, exposed comm 114,728 ns)\n"
