"""A review of hunt 25 (route latencies each generator declares, PAT reading every fitted
share, a sweep's row held from a stop, another preset's GPU by name). Each test failed before
its fix."""

from __future__ import annotations

from simpy_astra.cli.main import main
from tests.scenario_files import write_yaml


def _step_and_warnings(capsys, path: str) -> tuple[str, list[str]]:
    """``run --quiet``'s headline and its warnings, each joined into one line."""
    assert main(["run", path, "--quiet"]) == 0
    captured = capsys.readouterr()
    said = " ".join(captured.err.split()).replace(" warning: ", "\nwarning: ")
    return captured.out, [line for line in said.splitlines() if line]


def _nvls_share_said(capsys, tmp_path, workload: dict, cluster: dict, why: str) -> None:
    """``nccl_nvls_efficiency: 0.3`` runs ``workload`` on ``cluster`` to the nanosecond as
    without it, and is said to change nothing, for ``why``."""
    plain = _step_and_warnings(capsys, write_yaml(tmp_path, {"workload": workload, "cluster": cluster}, "a.yaml"))
    path = write_yaml(tmp_path, {"workload": workload, "cluster": {**cluster, "nccl_nvls_efficiency": 0.3}}, "b.yaml")
    share = _step_and_warnings(capsys, path)
    assert share[0] == plain[0] and plain[1] == []
    assert share[1] == [f"warning: {path}: cluster.nccl_nvls_efficiency changes nothing here: it is read only where "
                        f"NCCL runs nvls (for an all-reduce, reduce-scatter or all-gather) or PAT (at the mean of "
                        f"every share), and {why}"]


def test_an_nvls_share_no_pat_reads_at_eight_gpus_a_node_is_said_to_change_nothing(tmp_path, capsys):
    # a microbenchmark's all-gather runs over every GPU, 8 a node: NCCL never runs PAT for it
    # (one GPU a node), and without NVLS the share is never read. Before: since PAT was said to
    # read every share wherever a job gathers across nodes, nccl_nvls_efficiency: 0.3 beside
    # nvls: false ran 51,116 ns as without it, in silence, and a sweep over it ran two points
    cluster = {"preset": "dgx-h100", "gpus": 16, "nvls": False}
    workload = {"generate": "microbench", "collective": "all_gather", "size": 65536}
    _nvls_share_said(capsys, tmp_path, workload, cluster, "nvls is false (no NVLink SHARP), and its all-gathers and "
                     "reduce-scatters run over every GPU, 8 a node (PAT runs at one GPU a node)")
    sweep = write_yaml(tmp_path, {"base": {"workload": workload, "cluster": cluster},
                                  "axes": {"cluster.nccl_nvls_efficiency": [1.0, 0.3]}, "minimise": "finish_ns"},
                       "sweep.yaml")
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("1 point\n")


def test_a_send_between_two_gpus_gathers_nothing_so_no_pat_reads_the_nvls_share(tmp_path, capsys):
    # before: a microbenchmark's send_recv was declared to gather, so at one GPU a node its
    # nccl_nvls_efficiency (NVLS never runs there) was kept as read by PAT: the same step, silent
    _nvls_share_said(capsys, tmp_path, {"generate": "microbench", "collective": "send_recv", "size": 65536,
                                        "src": 0, "dst": 3},
                     {"preset": "dgx-h100", "gpus": 4, "gpus_per_node": 1}, "each node holds one GPU (gpus_per_node 1), and the job issues no all-gather or "
                     "reduce-scatter (PAT's collectives)")


def test_a_sweep_of_layouts_the_transformer_cannot_split_names_the_split_not_a_framework(tmp_path, capsys):
    # before: "each breaks a rule of the real framework (Megatron-LM's, NCCL's), e.g. 'seq
    # divisible by sp x tp'": the transformer generator's own rule, of neither
    workload = {"generate": "transformer", "dp": 1, "tp": 3, "dmodel": 1024, "dff": 4096, "head": 16,
                "num_stacks": 2, "seq": 1024, "batch": 16, "micro_batch": 4}
    sweep = write_yaml(tmp_path, {"base": {"workload": workload, "cluster": {"preset": "dgx-h100", "gpus": 3}},
                                  "axes": {"workload.tp": [3, 5], "cluster.gpus": [3, 5]}, "minimise": "finish_ns"},
                       "sweep.yaml")
    assert main(["sweep", sweep, "--out", str(tmp_path / "out"), "--no-plots", "--jobs", "1"]) == 4
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {sweep}: every point is invalid (4 of 4): each breaks a rule (the framework's, "
        f"NCCL's or the model's), e.g. 'seq divisible by sp x tp'; change the axes (results.csv has each reason)")


def test_a_sweeps_points_do_not_import_megatrons_generator_to_read_validity():
    # before: validity imported the generator (for its GPU rules) at the top, so every sweep's
    # worker and --list paid its modules (0.16 s) whether or not a point had Megatron's flags
    from tests.fresh_imports import imported_of

    assert imported_of("import simpy_astra.sweep.point", {"simpy_astra.workloads.megatron.generator"}) == []


def test_gemms_gathers_run_over_every_gpu_so_a_sweep_over_a_share_no_pat_reads_runs_once(tmp_path, capsys):
    # gemm's all-gathers and reduce-scatters name no group: each runs over every GPU, 8 a node
    # here, where NCCL never runs PAT; without NVLS the share is never read. Before: gemm was
    # declared to gather on groups PAT might run, and the sweep ran both points
    (tmp_path / "mnk.csv").write_text("Layer,M,N,K\na,64,32,16\n")
    sweep = write_yaml(tmp_path, {"base": {"workload": {"generate": "gemm", "mnk": "mnk.csv", "parallel": "MODEL"},
                                           "cluster": {"preset": "dgx-h100", "gpus": 16, "nvls": False}},
                                  "axes": {"cluster.nccl_nvls_efficiency": [1.0, 0.3]}, "minimise": "finish_ns"},
                       "sweep.yaml")
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("1 point\n")


def test_a_presets_gpu_named_over_a_copy_whose_gpu_has_no_known_generation_is_refused(tmp_path, capsys):
    # a copy of dgx-a100-80gb whose GPU is renamed MyGPU-1 (no generation known): before, the
    # H100's name over it ran the A100's figures under that name (6.802 ms, as the copy's own
    # GPU), since both rules on a new name asked for the old one's generation
    from simpy_astra.config.cluster_presets import PRESET_DIR
    from tests.scenario_files import error_lines, megatron_scenario

    with open(f"{PRESET_DIR}/dgx-a100-80gb.yaml", encoding="utf-8") as f:
        (tmp_path / "my.yaml").write_text(f.read().replace("name: A100-SXM4-80GB", "name: MyGPU-1"))
    path = megatron_scenario(tmp_path, preset="./my.yaml", gpu={"name": "H100-SXM5-80GB"})
    lines = error_lines(capsys, ["run", path])
    assert len(lines) == 1 and lines[0].startswith(
        f"error: {path}: cluster.gpu.name: H100-SXM5-80GB is preset dgx-h100's GPU, and ")
    assert lines[0].endswith(f"still {tmp_path / 'my.yaml'}'s MyGPU-1's: the run would price this GPU with that "
                             f"one's; use preset: dgx-h100, or give them beside its name")


def test_nvls_forced_on_nodes_without_it_is_an_invalid_point_as_at_one_gpu_a_node(tmp_path, capsys):
    # NCCL_ALGO=NVLS on A100 nodes stops NCCL as it does at one GPU a node (no algorithm for the
    # all-reduce): before, the second was an invalid point and the first a failure of the
    # simulator ("0 failed" against "1 failed"), and --list said the first "will fail"
    import csv

    sweep = write_yaml(tmp_path, {"base": {"workload": {"generate": "microbench", "collective": "all_reduce",
                                                        "size": 1 << 20},
                                           "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}},
                                  "axes": {"cluster.nccl_algo": ["ring", "nvls"]}, "minimise": "finish_ns"},
                       "sweep.yaml")
    assert main(["sweep", sweep, "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].startswith("2 points, 1 invalid") and listed[2].endswith("nccl_algo=nvls  invalid")
    assert main(["sweep", sweep, "--out", str(tmp_path / "out"), "--no-plots", "--jobs", "1"]) == 0
    assert "2 of 2 points, 0 failed, 1 invalid" in " ".join(capsys.readouterr().err.split())
    with open(tmp_path / "out" / "results.csv") as f:
        rows = {row["cluster.nccl_algo"]: row for row in csv.DictReader(f)}
    assert rows["nvls"]["status"] == "invalid"
    assert rows["nvls"]["error"].startswith("NCCL has no forced algorithm here: ")
