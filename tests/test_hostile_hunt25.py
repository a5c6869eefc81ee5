"""A twenty-fifth hunt: the newest features (a cluster's GPU overrides, NCCL's algorithm forced,
route latencies, folding, sweeps' alike points) fed bad, odd and extreme inputs. Each test
failed before its fix: a wrong success, a traceback, or a message naming no fix."""

from __future__ import annotations

import os
import signal

import pytest

from simpy_astra.cli.main import main
from simpy_astra.config.cluster import load_cluster
from tests.scenario_files import DEFAULT, megatron_sweep, write_yaml


def test_sweep_list_marks_fp8_on_a_gpu_without_fp8_units_invalid(tmp_path, capsys):
    # before: --list showed the A100's --fp8-format point as one that runs; it was refused only
    # when run ("fp8 needs fp8 hardware"), the rule Megatron's arguments alone cannot tell
    sweep = megatron_sweep(tmp_path, {"workload.args.--fp8-format": [None, "hybrid"]},
                           cluster={"preset": "dgx-a100-80gb", "gpus": 16})
    assert main(["sweep", sweep, "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "2 points, 1 invalid (each breaks a rule named below; they will not run)"
    assert out[2].endswith("fp8_format=hybrid  invalid") and not out[1].endswith("invalid")
    assert out[3] == "invalid: 1 point(s) break the rule 'fp8 needs fp8 hardware'"
    # on an H100 it runs
    sweep = megatron_sweep(tmp_path, {"workload.args.--fp8-format": [None, "hybrid"]})
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("2 points\n")


def _microbench_sweep(folder, axes: dict, collective: str = "all_reduce", **cluster) -> str:
    """``sweep.yaml`` over ``axes`` of a 1 MiB microbenchmark on 16 H100s (and ``cluster``)."""
    return write_yaml(folder, {"base": {"workload": {"generate": "microbench", "collective": collective,
                                                     "size": 1 << 20},
                                        "cluster": {"preset": "dgx-h100", "gpus": 16, **cluster}},
                               "axes": axes, "minimise": "finish_ns"}, "sweep.yaml")


def _headline_ns(capsys, path: str) -> int:
    """The iteration time ``run --quiet`` prints for a scenario of ASTRA-sim's kind (in ns)."""
    assert main(["run", path, "--quiet"]) == 0, capsys.readouterr().err
    return int(capsys.readouterr().out.split()[2].replace(",", ""))


@pytest.mark.parametrize(("gpus", "kind"), [(16, "all_gather"), (16, "reduce_scatter"), (2, "all_reduce")])
def test_a_microbenchmark_at_one_gpu_a_node_runs_on_its_nics(tmp_path, capsys, gpus, kind):
    # before: "cluster: field 'npus_count[0]' must be an integer > 1 (got 1)", a field no
    # scenario has: the cluster wrote a node's one GPU as a dimension of one NPU (a Megatron
    # job, whose blocks leave it out, ran); now NCCL's time for the group, on its NICs
    cluster = {"preset": "dgx-h100", "gpus": gpus, "gpus_per_node": 1}
    path = write_yaml(tmp_path, {"workload": {"generate": "microbench", "collective": kind, "size": 1 << 20},
                                 "cluster": cluster})
    nccl = load_cluster(cluster, "cluster").nccl_all_reduce()
    assert _headline_ns(capsys, path) == nccl.duration_ns(tuple(range(gpus)), 1 << 20, kind)


def test_a_partial_folding_counts_one_kind_of_rank_in_the_singular(tmp_path, capsys):
    # before: "symmetry folding partial (1 kinds of rank)"; halvingDoubling runs on the first of
    # two dimensions, whose shifts it does not commute with, so only the second's fold
    system = {**DEFAULT["system"], "all-reduce-implementation": ["halvingDoubling", "ring"],
              "all-gather-implementation": ["ring"] * 2, "reduce-scatter-implementation": ["ring"] * 2,
              "all-to-all-implementation": ["direct"] * 2}
    network = {"topology": ["Switch"] * 2, "npus_count": [4, 3], "bandwidth": [50.0] * 2, "latency": [500.0] * 2}
    path = write_yaml(tmp_path, {"workload": {"generate": "microbench", "collective": "all_reduce", "size": 1 << 20,
                                              "num_npus": 12},
                                 "system": system, "network": network, "backend": "congestion_unaware",
                                 "fold_symmetry": True})
    assert main(["run", path, "--quiet"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "symmetry folding partial (1 kind of rank): " in err


@pytest.mark.parametrize("key", ["nccl_tree_efficiency", "nccl_nvls_efficiency"])
def test_forced_pat_reads_the_other_algorithms_shares(tmp_path, capsys, key):
    # PAT has no fit of its own and runs at the mean of the machine's shares (its tree's and
    # NVLS's too): before, beside nccl_algo: pat each was said to change nothing though the step
    # moved (131,546 -> 146,900 ns at a tree share of 0.5), and a sweep over it ran one point
    cluster = {"preset": "dgx-h100", "gpus": 16, "gpus_per_node": 1, "nccl_algo": "pat"}
    workload = {"generate": "microbench", "collective": "all_gather", "size": 1 << 20}
    members = tuple(range(16))
    steps = []
    for share in (None, 0.5):
        given = {**cluster, **({key: share} if share else {})}
        path = write_yaml(tmp_path, {"workload": workload, "cluster": given}, f"{share}.yaml")
        assert main(["run", path, "--quiet"]) == 0
        captured = capsys.readouterr()
        assert captured.err == ""
        steps.append(int(captured.out.split()[2].replace(",", "")))
        assert steps[-1] == load_cluster(given, "cluster").nccl_all_reduce().duration_ns(members, 1 << 20,
                                                                                          "all_gather")
    assert steps[0] != steps[1]
    sweep = _microbench_sweep(tmp_path, {f"cluster.{key}": [1.0, 0.5]}, "all_gather", **cluster)
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("2 points\n")


def test_a_forced_nccl_algorithm_the_job_cannot_run_is_an_invalid_point_not_a_failure(tmp_path, capsys):
    # before: NCCL_ALGO=PAT on a job issuing an all-reduce (NCCL stops there) was recorded as a
    # failure of the simulator ("error", "N failed"), not as a point of the design space the
    # real job cannot run, as Megatron's refusals are
    import csv

    sweep = _microbench_sweep(tmp_path, {"cluster.nccl_algo": ["ring", "pat"]})
    assert main(["sweep", sweep, "--out", str(tmp_path / "out"), "--no-plots", "--jobs", "1"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "2 of 2 points, 0 failed, 1 invalid" in err
    with open(tmp_path / "out" / "results.csv") as f:
        rows = {row["cluster.nccl_algo"]: row for row in csv.DictReader(f)}
    assert rows["ring"]["status"] == "ok" and rows["pat"]["status"] == "invalid"
    assert rows["pat"]["error"].startswith("NCCL has no forced algorithm here: ")
    assert rows["pat"]["error"].endswith("NCCL_ALGO=PAT stops NCCL there (2.24 on); leave nccl_algo out for "
                                         "NCCL's choice, or force ring or tree")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="finds results.csv's descriptor in /proc")
def test_a_stop_as_a_row_is_saved_counts_that_row(tmp_path, capsys, monkeypatch):
    # before: a Ctrl-C or SIGTERM arriving as a row had been written (results.csv's fsync), but
    # before the store counted it, said "0 of 2 points saved" while the file held one row (and
    # a resume took it: "1 already in results.csv"); now the stop waits for the count
    # Python's own Ctrl-C handler, as a terminal starts it (CI's background job starts with
    # SIGINT ignored, which a sweep leaves ignored: the stop would never come)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    real_fsync = os.fsync

    def fsync_then_stop(fd: int) -> None:
        real_fsync(fd)
        if os.readlink(f"/proc/self/fd/{fd}").endswith("results.csv"):
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(os, "fsync", fsync_then_stop)
    sweep = _microbench_sweep(tmp_path, {"cluster.nccl_algo": ["ring", "tree"]})
    assert main(["sweep", sweep, "--out", str(tmp_path / "out"), "--no-plots", "--jobs", "1"]) == 130
    err = " ".join(capsys.readouterr().err.split())
    with open(tmp_path / "out" / "results.csv") as f:
        saved = len(f.read().splitlines()) - 1
    assert saved == 1 and f"interrupted: {saved} of 2 points saved in " in err


def test_a_sweep_of_points_nccl_refuses_does_not_blame_megatron(tmp_path, capsys):
    # before: "every point is invalid (2 of 2): Megatron refuses each layout, e.g. by its rule
    # 'NCCL has no forced algorithm here'" of a microbenchmark, which has no Megatron layout
    sweep = _microbench_sweep(tmp_path, {"cluster.nccl_algo": ["pat", "nvls"]}, gpus_per_node=1)
    assert main(["sweep", sweep, "--out", str(tmp_path / "out"), "--no-plots", "--jobs", "1"]) == 4
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (f"error: {sweep}: every point is invalid (2 of 2): each breaks a rule "
                   f"(the framework's, NCCL's or the model's), e.g. 'NCCL has no forced algorithm here'; change the axes "
                   f"(results.csv has each reason)")


@pytest.mark.parametrize(("preset", "gpu", "kept"), [
    ("dgx-a100-40gb", {"name": "A100-SXM4-80GB"}, "hbm_gb_s, hbm_gib are"),
    ("dgx-a100-40gb", {"name": "A100-SXM4-80GB", "hbm_gib": 80}, "hbm_gb_s is"),
    ("dgx-a100-80gb", {"name": "A100-SXM4-40GB", "hbm_gbps": 1555}, "hbm_gib is"),
])
def test_another_presets_gpu_of_one_generation_by_name_is_told_to_take_its_preset(tmp_path, capsys, preset, gpu,
                                                                                 kept):
    # before: the 80 GB A100's name over dgx-a100-40gb ran "about 0.3 GiB of 40 GiB" at the 40 GB
    # part's 1,555 GB/s under the 80 GB part's name (only another generation's name was refused)
    from simpy_astra.config.cluster_presets import PRESET_DIR
    from tests.scenario_files import error_lines, megatron_scenario

    path = megatron_scenario(tmp_path, preset=preset, gpu=gpu)
    other = "dgx-a100-80gb" if preset == "dgx-a100-40gb" else "dgx-a100-40gb"
    old = {"dgx-a100-40gb": "A100-SXM4-40GB", "dgx-a100-80gb": "A100-SXM4-80GB"}[preset]
    assert error_lines(capsys, ["run", path]) == [
        f"error: {path}: cluster.gpu.name: {gpu['name']} is preset {other}'s GPU, and {kept} still "
        f"{PRESET_DIR}/{preset}.yaml's {old}'s: the run would price this GPU with that one's; use preset: {other}, "
        f"or give {'them' if ' are' in kept else 'it'} beside its name"]
    # with every figure that differs given, it runs: the other preset's GPU, to the nanosecond
    figures = {"hbm_gbps": 2039, "hbm_gib": 80} if other == "dgx-a100-80gb" else {"hbm_gbps": 1555, "hbm_gib": 40}
    given = megatron_scenario(tmp_path, name="given.yaml", preset=preset, gpu={"name": gpu["name"], **figures})
    theirs = megatron_scenario(tmp_path, name="theirs.yaml", preset=other)
    assert main(["run", given, "--quiet"]) == 0 and main(["run", theirs, "--quiet"]) == 0
    first, second = capsys.readouterr().out.splitlines()
    assert first == second


def test_an_nvls_share_pat_reads_under_nccls_choice_is_not_said_to_change_nothing(tmp_path, capsys):
    # at one GPU a node NVLS never runs, but NCCL may choose PAT for an all-gather (64 KiB here),
    # which runs at the mean of the machine's shares, NVLS's too: before, nccl_nvls_efficiency:
    # 0.3 was said to change nothing while the step went from 76,166 to 78,029 ns. An all-reduce
    # (no PAT) is still told
    cluster = {"preset": "dgx-h100", "gpus": 16, "gpus_per_node": 1}
    for kind, said in (("all_gather", False), ("all_reduce", True)):
        workload = {"generate": "microbench", "collective": kind, "size": 65536}
        runs = []
        for share in ({}, {"nccl_nvls_efficiency": 0.3}):
            path = write_yaml(tmp_path, {"workload": workload, "cluster": {**cluster, **share}}, f"{kind}{len(share)}.yaml")
            assert main(["run", path, "--quiet"]) == 0
            captured = capsys.readouterr()
            runs.append((captured.out, " ".join(captured.err.split())))
        assert runs[0][1] == ""
        assert (runs[1][1] == f"warning: {path}: cluster.nccl_nvls_efficiency changes nothing here: it is read only "
                              f"where NCCL runs nvls (for an all-reduce, reduce-scatter or all-gather) or PAT (at the "
                              f"mean of every share), and each node holds one GPU (gpus_per_node 1), and the job "
                              f"issues no all-gather or reduce-scatter (PAT's collectives)") is said
        assert (runs[0][0] == runs[1][0]) is said


@pytest.mark.parametrize("extra", ["", " --sequence-parallel", " --use-distributed-optimizer",
                                   " --context-parallel-size 2 --cp-comm-type a2a",
                                   " --context-parallel-size 2 --cp-comm-type p2p",
                                   " --num-experts 4 --expert-model-parallel-size 2 --moe-token-dispatcher-type "
                                   "allgather --disable-bias-linear --sequence-parallel",
                                   " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 "
                                   "--distribute-saved-activations"])
def test_a_megatron_job_declares_whether_it_gathers(tmp_path, extra):
    # what the loader asks (WorkloadLayout.gathers) before any trace is built, checked against
    # the stage graphs themselves
    from simpy_astra.config.scenario_workload import prepare_workload
    from simpy_astra.workloads.transformer.graph import COLL
    from tests.scenario_files import SMALL_GPT_ARGS

    all_gather, reduce_scatter = 2, 7  # Chakra's
    args = SMALL_GPT_ARGS.replace("--pipeline-model-parallel-size 2", "--pipeline-model-parallel-size 1") + extra
    prepared = prepare_workload(str(tmp_path / "s.yaml"), {"generate": "megatron", "args": args},
                                load_cluster({"preset": "dgx-h100", "gpus": 16}, "cluster"))
    gathered = any(op.kind == COLL and op.comm_type in (all_gather, reduce_scatter)
                   for graph in prepared.job.graphs for op in graph.ops)
    assert prepared.layout().gathers is gathered


@pytest.mark.parametrize("columns", ["0", "-5"])
def test_a_columns_of_no_width_leaves_plain_text_80_wide(monkeypatch, columns):
    # before: COLUMNS=0 (some containers export it) or a negative one squeezed every table, the
    # timeline and the warnings of a log to 40 columns; shutil reads them as no width, and so now
    from simpy_astra.report.widths import PLAIN_WIDTH, plain_width

    monkeypatch.setenv("COLUMNS", columns)
    assert plain_width() == PLAIN_WIDTH == 80
