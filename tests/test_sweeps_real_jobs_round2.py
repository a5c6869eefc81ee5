"""Sweeps of real jobs, round 2: a researcher sweeps a Megatron-LM job's layout as docs/sweeps.md
tells them and trusts the answer. Each figure is checked against a number from outside the
sweep: Megatron's FLOP count, the memory's parts, a single ``run`` of the point's scenario."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main as cli_main
from simpy_astra.cli.sweep import main as sweep_main
from tests.scenario_files import SMALL_GPT_ARGS, megatron_sweep
from tests.wrapped_lines import plain

#: the small GPT every sweep here runs (8 layers, h 1024, s 1024, vocabulary 32,000, global
#: batch 64) on 16 H100s; its figures, for the closed forms below
ARGS = SMALL_GPT_ARGS
LAYERS, HIDDEN, SEQ, VOCAB, BATCH, GPUS = 8, 1024, 1024, 32000, 64, 16
H100_PEAK = 989e12  # H100 SXM datasheet: dense BF16 tensor-core FLOP/s


pytestmark = pytest.mark.usefixtures("own_cache")


def listed(path: str, capsys) -> tuple[list[str], str]:
    """The points ``sweep --list`` names (their words), and its warnings unwrapped."""
    assert sweep_main([path, "--list"]) == 0
    captured = capsys.readouterr()
    lines = plain(captured.out + captured.err).splitlines()
    points = [line.split(" ", 1)[1] for line in lines if line[:12].isalnum() and len(line.split(" ", 1)[0]) == 12]
    return points, "\n".join(line for line in lines if line.startswith("warning:"))


def single_run(tmp_path: Path, args: str, cluster: dict, name: str) -> dict:
    """The training figures ``run --json-out`` gives for one scenario."""
    scenario = tmp_path / f"{name}.yaml"
    scenario.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": args}, "cluster": cluster}))
    out = tmp_path / f"{name}.json"
    assert cli_main(["run", str(scenario), "--quiet", "--json-out", str(out)]) == 0
    return json.loads(out.read_text())["training"]


def megatron_flops(layers: int, passes: int) -> float:
    """Narayanan et al. (SC'21), eq. 3: each pass over the layers 24 B s l h^2 (1 + s/6h), the
    logits' three 2 B s h V; 3 passes without recomputation (72 B s l h^2 (1 + s/6h + V/12lh)),
    4 with full recomputation (96 B s l h^2 (1 + s/6h + V/16lh))."""
    return 24 * passes * BATCH * SEQ * layers * HIDDEN ** 2 * (1 + SEQ / (6 * HIDDEN)) + 6 * BATCH * SEQ * HIDDEN * VOCAB


# ---------------------------------------------------------------- one job, one point
def test_sequence_parallel_at_tp_1_is_one_point_named_as_megatron_runs_it(tmp_path, capsys):
    """Megatron turns --sequence-parallel off at tp 1 ('Disabling sequence parallelism because
    tensor model parallelism is disabled'): the two tp 1 points are one job. They ran as two rows
    of one step, and the one crowned of the tie was sp=on, which Megatron never runs."""
    cluster = {"preset": "dgx-h100", "gpus": GPUS}
    one = ARGS.replace("--tensor-model-parallel-size 2", "--tensor-model-parallel-size 1")
    on, off = (single_run(tmp_path, one + extra, cluster, name) for name, extra in
               (("on", " --sequence-parallel"), ("off", "")))
    assert on == off  # the premise, from two runs: one step
    path = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2],
                                     "workload.args.sequence-parallel": [True, False]})
    points, warnings = listed(path, capsys)
    assert points == ["tp=1 sp=off", "tp=2 sp=on", "tp=2 sp=off"]
    assert "axes: tp=1 sp=on runs the step tp=1 sp=off runs (Megatron-LM runs their arguments alike); " \
           "it runs once, as tp=1 sp=off" in warnings


def test_recompute_activations_makes_a_full_granularity_selective_and_says_so(tmp_path, capsys):
    """Megatron-LM's validate_args: 'if args.recompute_activations: args.recompute_granularity =
    selective'. A base with --recompute-activations swept over recompute-granularity [full,
    selective] listed 'recompute=full' rows with selective recomputation's figures, and run
    said nothing of the full granularity it dropped."""
    cluster = {"preset": "dgx-h100", "gpus": GPUS}
    base = ARGS + " --recompute-activations"
    full = single_run(tmp_path, base + " --recompute-granularity full", cluster, "full")
    assert "--recompute-granularity full with --recompute-activations: Megatron makes it selective" in \
        plain(capsys.readouterr().err)
    assert full == single_run(tmp_path, base + " --recompute-granularity selective", cluster, "selective")
    capsys.readouterr()
    path = megatron_sweep(tmp_path, {"workload.args.micro-batch-size": [1, 2],
                                     "workload.args.recompute-granularity": ["full", "selective"]},
                          args=base)
    points, warnings = listed(path, capsys)
    assert points == ["mb=1 recompute=selective", "mb=2 recompute=selective"]
    assert "axes: 2 points run the step another point runs (Megatron-LM runs their arguments alike), " \
           "e.g. mb=1 recompute=full as mb=1 recompute=selective; each runs once" in warnings


def test_a_cluster_key_that_changes_nothing_at_the_size_gives_one_point(tmp_path, capsys):
    """Two nodes sit under one leaf switch: the spine's oversubscription changes nothing (run
    warns so). The sweep ran both values, two equal rows."""
    one, four = (single_run(tmp_path, ARGS, {"preset": "dgx-h100", "gpus": GPUS, "oversubscription": x}, f"o{x}")
                 for x in (1, 4))
    assert one == four
    path = megatron_sweep(tmp_path, {"cluster.oversubscription": [1, 4], "workload.args.micro-batch-size": [1, 2]})
    points, warnings = listed(path, capsys)
    assert points == ["oversubscription=1 mb=1", "oversubscription=1 mb=2"]
    assert "(cluster.oversubscription changes nothing at 16 GPUs)" in warnings


# ---------------------------------------------------------------- the figures
def test_each_point_s_figures_follow_megatron_s_flop_count_its_memory_and_a_single_run(tmp_path, capsys):
    """tp {1, 2} x recomputation {full, none}: MFU is the model's FLOPs without recomputation
    over time x GPUs x the H100's peak; TFLOP/s counts full recomputation's fourth pass (SC'21);
    tokens/s per GPU is the global batch's tokens over time x GPUs;
    the memory's parts add to the total; the best is the fastest point that fits; its row,
    best.json and the summary's best line carry one figure, and a run of its points/KEY.yaml
    gives the same figures."""
    path = megatron_sweep(tmp_path, {
        "workload.args.tensor-model-parallel-size": [1, 2],
        "recompute": {"named": {
            "full": {"workload.args.recompute-granularity": "full", "workload.args.recompute-method": "uniform",
                     "workload.args.recompute-num-layers": 1},
            "none": {"workload.args.recompute-granularity": False}}}})
    out = tmp_path / "out"
    assert sweep_main([path, "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    said = capsys.readouterr()
    err = said.err + said.out  # the summary, then the answer (stdout)
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["workload.args.tensor-model-parallel-size"], r["recompute"]) for r in rows] == \
        [("1", "full"), ("1", "none"), ("2", "full"), ("2", "none")]
    for r in rows:
        seconds = int(r["iteration_time_ns"]) / 1e9
        passes = 4 if r["recompute"] == "full" else 3
        mfu = megatron_flops(LAYERS, 3) / (seconds * GPUS * H100_PEAK)
        assert float(r["mfu"]) == pytest.approx(mfu, abs=6e-6)
        assert float(r["tflops_per_gpu"]) == pytest.approx(megatron_flops(LAYERS, passes) / seconds / GPUS / 1e12,
                                                           abs=6e-4)
        assert float(r["tokens_per_s_per_gpu"]) == pytest.approx(BATCH * SEQ / seconds / GPUS, abs=6e-4)
        parts = sum(float(r[f"memory_{p}_gib"]) for p in ("weights", "gradients", "optimizer", "activations"))
        assert float(r["memory_per_gpu_gib"]) == pytest.approx(parts, abs=0.003)
        assert r["fits"] == str(int(float(r["memory_per_gpu_gib"]) <= 80))
    fastest = min((r for r in rows if r["fits"] == "1"), key=lambda r: int(r["iteration_time_ns"]))
    best = json.loads((out / "best.json").read_text())["best"]
    assert best["key"] == fastest["key"]
    assert best["figures"]["iteration_time_ns"] == int(fastest["iteration_time_ns"])
    assert best["figures"]["mfu"] == float(fastest["mfu"])
    tp, recompute = fastest["workload.args.tensor-model-parallel-size"], fastest["recompute"]
    assert f"best: tp={tp} recompute={recompute} -> {int(fastest['iteration_time_ns']):,} ns" in err
    assert f"MFU {float(fastest['mfu']) * 100:.1f}%" in err
    assert all(len(line) <= 80 for line in err.splitlines() if str(out) not in line)  # a path is never broken
    run_json = tmp_path / "point.json"
    assert cli_main(["run", str(out / "points" / f"{fastest['key']}.yaml"), "--quiet", "--json-out",
                     str(run_json)]) == 0
    training = json.loads(run_json.read_text())["training"]
    assert training["iteration_time_ns"] == int(fastest["iteration_time_ns"])
    assert training["mfu"] == float(fastest["mfu"])
    assert training["memory_per_gpu_gib"] == float(fastest["memory_per_gpu_gib"])


def test_a_null_on_a_cluster_axis_is_named_as_the_sweep_file_writes_it(tmp_path, capsys):
    """docs/sweeps.md: null in a cluster axis leaves the field out (NCCL's choice); every line
    named such a point 'nccl_algo=None', Python's word for it."""
    path = megatron_sweep(tmp_path, {"cluster.nccl_algo": [None, "ring"]})
    points, _ = listed(path, capsys)
    assert points == ["nccl_algo=null", "nccl_algo=ring"]


def test_a_tie_for_best_names_the_first_in_sweep_order_and_says_the_others(tmp_path, capsys):
    """In one A100 node NCCL picks the ring all-reduce: nccl_algo null and ring are one step
    time (two single runs say so). The best line named null alone, as if ring were slower."""
    # tp 1: a job of all-reduces alone (at tp > 1 the batch's broadcast stops a forced tree)
    args = ARGS.replace("--pipeline-model-parallel-size 2", "--pipeline-model-parallel-size 1") \
        .replace("--tensor-model-parallel-size 2", "--tensor-model-parallel-size 1")
    cluster = {"preset": "dgx-a100-80gb", "gpus": 8}
    times = [single_run(tmp_path, args, {**cluster, **algo}, f"a{i}")["iteration_time_ns"]
             for i, algo in enumerate(({}, {"nccl_algo": "ring"}, {"nccl_algo": "tree"}))]
    assert times[0] == times[1] < times[2]
    path = megatron_sweep(tmp_path, {"cluster.nccl_algo": ["tree", None, "ring"]}, args=args, cluster=cluster)
    out = tmp_path / "out"
    assert sweep_main([path, "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    err = capsys.readouterr().out  # the answer, on stdout
    best = json.loads((out / "best.json").read_text())["best"]
    assert (best["coordinates"], best["objective"]) == ({"cluster.nccl_algo": None}, times[0])
    assert [t["coordinates"] for t in best["tied_with"]] == [{"cluster.nccl_algo": "ring"}]
    assert f"best: nccl_algo=null -> {times[0]:,} ns\n  tied with nccl_algo=ring at this figure (the first in " \
           f"sweep order is named)\n" in err


def test_a_fourth_rule_that_points_break_is_said_not_counted(tmp_path, capsys):
    """Four rules broken: the summary said three and '... and 1 more rules that points break',
    a line as long as the rule it hid."""
    moe = ARGS.replace("--pipeline-model-parallel-size 2", "--pipeline-model-parallel-size 1") + \
        " --num-experts 8 --moe-grouped-gemm"
    path = megatron_sweep(tmp_path, {"workload.args.expert-model-parallel-size": [1, 2, 4, 8, 16],
                                     "workload.args.expert-tensor-parallel-size": [1, 2]}, args=moe)
    assert sweep_main([path, "--out", str(tmp_path / "out"), "--no-plots"]) == 4
    err = plain(capsys.readouterr().err)
    rules = [line for line in err.splitlines() if line.startswith("invalid:")]
    assert len(rules) == 4, err
    assert "more rules" not in err


def test_of_several_points_alike_every_warning_names_the_one_that_runs(tmp_path, capsys):
    """sp on and off at tp 1 beside oversubscription 1 and 4 under one leaf: four points, one
    step. Each warning names the point run, never one left out."""
    one = ARGS.replace("--tensor-model-parallel-size 2", "--tensor-model-parallel-size 1")
    path = megatron_sweep(tmp_path, {"workload.args.sequence-parallel": [True, False],
                                     "cluster.oversubscription": [1, 4]}, args=one)
    points, warnings = listed(path, capsys)
    assert points == ["sp=off oversubscription=1"]
    assert all(line.endswith(("as sp=off oversubscription=1", "as sp=off oversubscription=1; each runs once"))
               for line in warnings.splitlines()), warnings


def test_a_constraint_on_the_global_batch_megatron_derives_reads_micro_batch_x_dp(tmp_path, capsys):
    """Without --global-batch-size Megatron runs a micro-batch per data-parallel rank, so a
    sweep over the GPU count scales the batch. A constraint on global_batch_size stopped the
    sweep with Python's "TypeError: '>=' not supported between instances of 'NoneType' and
    'int'"; it now reads micro-batch x dp, the batch a single run's tokens/s counts."""
    args = ARGS.replace(f" --global-batch-size {BATCH}", "")
    cluster = {"preset": "dgx-h100", "gpus": 32}
    one = single_run(tmp_path, args, cluster, "g32")
    batch = one["tokens_per_s_per_gpu"] * one["iteration_time_ns"] / 1e9 * 32 / SEQ
    assert batch == pytest.approx(2 * 32 // 4, rel=1e-4)  # micro-batch 2 x dp (32 GPUs / tp 2 x pp 2)
    path = megatron_sweep(tmp_path, {"cluster.gpus": [16, 32, 64]}, args=args,
                          constraints=[f"global_batch_size == {round(batch)}"])
    points, _ = listed(path, capsys)
    assert points == ["gpus=32"]


def test_a_constraint_on_a_flag_the_arguments_leave_unset_names_it_and_the_fix(tmp_path, capsys):
    """ffn_hidden_size is unset (Megatron derives 4h): 'ffn_hidden_size >= 4096' stopped with
    Python's words ('>=' not supported between instances of 'NoneType' and 'int')."""
    path = megatron_sweep(tmp_path, {"workload.args.micro-batch-size": [1, 2]}, constraints=["ffn_hidden_size >= 4096"])
    assert cli_main(["sweep", path, "--list"]) == 2
    err = plain(capsys.readouterr().err)
    assert "NoneType" not in err
    assert "'ffn_hidden_size >= 4096' cannot be evaluated: ffn_hidden_size has no value at this point (the " \
           "arguments leave --ffn-hidden-size unset, to a default Megatron derives; give --ffn-hidden-size in the " \
           "base's args or on an axis)" in err


def test_a_forced_algorithm_nccl_has_no_broadcast_by_is_listed_invalid_before_it_runs(tmp_path, capsys):
    """NCCL runs a broadcast by its ring alone (tuning.cc; 2.24 on, a forced algorithm with none
    stops it): a job with tp 2 broadcasts its batch over each tp group, so under a forced tree
    it stops there, while at tp 1 it broadcasts nothing and runs (its all-reduces have the
    tree). ``--list`` showed such points as points to run, and each ran to an invalid row."""
    path = megatron_sweep(tmp_path, {"cluster.nccl_algo": ["ring", "tree"],
                                     "workload.args.tensor-model-parallel-size": {"values": [1, 2], "as": "tp"}})
    assert sweep_main([path, "--list"]) == 0
    lines = plain(capsys.readouterr().out).splitlines()
    marked = {line.split(" ", 1)[1].replace("  invalid", "").strip(): line.endswith("invalid")
              for line in lines if len(line.split(" ", 1)[0]) == 12 and line[:12].isalnum()}
    assert marked == {"nccl_algo=ring tp=1": False, "nccl_algo=ring tp=2": False, "nccl_algo=tree tp=1": False,
                      "nccl_algo=tree tp=2": True}
    assert sweep_main([path, "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    rows = {(r["cluster.nccl_algo"], r["workload.args.tensor-model-parallel-size"]): r
            for r in csv.DictReader((tmp_path / "out" / "results.csv").open())}
    assert rows[("tree", "2")]["status"] == "invalid"
    assert "NCCL runs broadcasts by its ring alone" in rows[("tree", "2")]["error"]
    assert rows[("tree", "1")]["status"] == rows[("ring", "2")]["status"] == "ok"
