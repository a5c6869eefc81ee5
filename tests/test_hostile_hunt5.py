"""A fifth hunt for inputs that ran as something other than what they say: each is now refused
in one line naming the file, the field and the fix, or says plainly what it is."""

from __future__ import annotations

import pytest
import yaml

from simpy_astra.cli.main import main


def _scenario(tmp_path, args: str, cluster: dict):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": args}, "cluster": cluster}, sort_keys=False))
    return path


def test_a_quiet_run_of_a_job_that_does_not_fit_says_so(tmp_path, capsys):
    # GPT-3 175B's 96 layers of h 12288 over tp 2 alone: 12 x 96 x 12288^2 / 2 = 87e9 parameters
    # a GPU, at 16 bytes each (fp16 weights, fp32 gradients and Adam's two moments, Megatron's
    # mixed precision) 1.3 TB, sixteen times an A100's 80 GiB. --quiet printed its step time
    # alone, exit status 0, with nothing to tell a script the job cannot run
    args = ("--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 --micro-batch-size 1 "
            "--global-batch-size 32 --tensor-model-parallel-size 2 --bf16 --vocab-size 32000")
    assert 12 * 96 * 12288**2 / 2 * 16 > 16 * 80 * 2**30
    path = _scenario(tmp_path, args, {"preset": "dgx-a100-80gb", "gpus": 16})
    assert main(["run", str(path), "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 and out.startswith("iteration time ")  # the headline, as before
    lines = [line for line in err.splitlines() if "DOES NOT FIT" in line]
    assert len(lines) == 1 and "of 80 GiB" in lines[0] and len(lines[0]) <= 80, err
    # with ASTRA-sim's per-NPU lines in place of the headline, the warning is the same
    assert main(["run", str(path), "--quiet", "--reference-lines"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("sys[0] finished") and sum("DOES NOT FIT" in line for line in err.splitlines()) == 1, err


def test_a_quiet_run_of_a_job_that_fits_prints_its_headline_alone(tmp_path, capsys):
    args = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
            "--global-batch-size 32 --tensor-model-parallel-size 2 --bf16 --vocab-size 32000")
    assert main(["run", str(_scenario(tmp_path, args, {"preset": "dgx-a100-80gb", "gpus": 16})), "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 and "FIT" not in err


ARGS = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
        "--global-batch-size 32 --tensor-model-parallel-size 2 --bf16 --vocab-size 32000")


@pytest.mark.parametrize("cluster, where, words", [
    # inter_node_gbps is inter_node_gbit_s's older name: of the two the later silently won, so the
    # step took 0.018 s at 1,600 Gbit/s or 0.020 s at 800 by the order they were written in
    ({"inter_node_gbps": 800, "inter_node_gbit_s": 1600}, "cluster", "inter_node_gbps and inter_node_gbit_s"),
    ({"inter_node_gbit_s": 1600, "inter_node_gbps": 800}, "cluster", "inter_node_gbit_s and inter_node_gbps"),
    ({"gpu": {"hbm_gbps": 100, "hbm_gb_s": 2000}}, "cluster.gpu", "hbm_gbps and hbm_gb_s"),
])
def test_one_cluster_field_under_both_its_names_is_refused(tmp_path, capsys, cluster, where, words):
    path = _scenario(tmp_path, ARGS, {"preset": "dgx-a100-80gb", "gpus": 16, **cluster})
    assert main(["run", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}: {where}: {words} are one field"), err
    assert "keep one" in err[0]


def test_a_preset_with_one_node_field_under_both_its_names_is_refused(tmp_path, capsys):
    from simpy_astra.config.cluster_presets import PRESET_DIR

    preset = tmp_path / "mine.yaml"
    text = open(f"{PRESET_DIR}/dgx-a100-80gb.yaml").read()
    assert "inter_node_gbps: " in text and "inter_node_gbit_s" not in text
    preset.write_text(text.replace("inter_node_gbps: ", "inter_node_gbit_s: 800\n  inter_node_gbps: "))
    path = _scenario(tmp_path, ARGS, {"preset": str(preset), "gpus": 16})
    assert main(["run", str(path), "--quiet"]) == 2
    assert f"error: {preset}: node: inter_node_gbit_s and inter_node_gbps are one field" in capsys.readouterr().err


@pytest.mark.parametrize("axes", [
    # one field under two names: each point ran at the later axis's value, 1,600 Gbit/s, listed
    # as inter_node_gbps=800 (and 400 and 800 gave one scenario under two coordinates)
    {"cluster.inter_node_gbps": [400, 800], "cluster.inter_node_gbit_s": [1600]},
    {"cluster.inter_node_gbit_s": [1600], "cluster.inter_node_gbps": [400, 800]},
    {"cluster.gpu.hbm_gb_s": [1000, 2000], "cluster.gpu.l2_gbps": [5000], "cluster.gpu.hbm_gbps": [1500]},
])
def test_two_axes_on_one_cluster_field_under_its_two_names_are_refused(tmp_path, capsys, axes):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": {"workload": {"generate": "megatron", "args": ARGS},
                                              "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}},
                                     "axes": axes}, sort_keys=False))
    assert main(["sweep", str(sweep), "--list"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {sweep}: axes: cluster."), err
    assert "set by two axes" in err[0] and "keep one" in err[0]


@pytest.mark.parametrize("end_ns", [1_056_492_763_192, 9_726_425_641_588_805, 2**63 - 1])
def test_the_timelines_first_line_fits_80_columns_for_a_long_step(end_ns, monkeypatch):
    # a 17-minute step (8 layers of h 8192 over 4,096 sequences of 8,192 tokens on one A100
    # node: 1,056.5 s, MFU 59%) headed its timeline with 81 columns in a pipe, 89 at 9.7e6 s
    import io

    from simpy_astra.report.breakdown import Breakdown
    from simpy_astra.report.console import Output
    from simpy_astra.report.timeline import print_timeline

    monkeypatch.setenv("COLUMNS", "80")
    b = Breakdown(end_ns, {"compute.gemm": end_ns}, segments=[(0, end_ns, "compute.gemm")])
    text = io.StringIO()
    print_timeline({0: b}, Output(text, rich=False))
    lines = text.getvalue().splitlines()
    assert lines[0].startswith(f"timeline 0 .. {end_ns:,} ns, one column = ")
    assert max(map(len, lines)) <= 80, lines


def test_a_sweep_with_long_coordinates_draws_its_plots_without_a_warning(tmp_path, monkeypatch):
    # a point's coordinates, rotated under its bar, were taller than the picture: matplotlib cut
    # them and printed 'UserWarning: Tight layout not applied ...' (171 columns, with a source
    # line of plots.py) four times into the sweep's summary
    import os
    import warnings

    torus = os.path.join(os.path.dirname(__file__), "..", "scenarios", "torus3d_all_reduce.yaml")
    names = {"the_fast_network_of_the_lab_with_its_new_switches_and_its_new_cables_at_100_gb_s": {"network.bandwidth": 100},
             "the_slow_network_of_the_lab_with_its_old_switches_and_its_old_cables_at_50_gb_s": {"network.bandwidth": 50}}
    sweep = tmp_path / "s.yaml"
    sweep.write_text(yaml.safe_dump({"base": os.path.abspath(torus), "axes": {"machine": {"named": names},
                                                                              "network.latency": [500]}}))
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["sweep", "s.yaml", "--out", "out", "--jobs", "1"]) == 0
    assert [str(w.message) for w in caught] == []
    assert (tmp_path / "out" / "time.png").is_file()


@pytest.mark.parametrize("values", [[4, "4"], ["4", 4]])  # 4.0: refused, as run refuses it (test_sweep_integer_flags)
def test_axis_values_that_write_one_argument_alike_give_one_point(tmp_path, capsys, values):
    # 4 and '4' both write --num-layers 4: two points ran one scenario under two keys (the docs:
    # repeated axis values, [50, 50.0], give one point)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": {"workload": {"generate": "megatron", "args": ARGS},
                                              "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}},
                                     "axes": {"workload.args.num-layers": values + [8]}}, sort_keys=False))
    assert main(["sweep", str(sweep), "--list"]) == 0
    assert capsys.readouterr().out.startswith("2 points")


@pytest.mark.parametrize("axis, near", [("cluster.bogus", "cluster.gpus"),
                                        ("cluster.oversubscriptoin", "cluster.oversubscription"),
                                        ("cluster.gpu.hbm_gbs", "cluster.gpu.hbm_gb_s")])
def test_an_axis_on_no_cluster_key_is_refused_before_any_point_runs(tmp_path, capsys, axis, near):
    # every point ran and failed on 'cluster: unknown key', exit status 4 after the whole sweep
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": {"workload": {"generate": "megatron", "args": ARGS},
                                              "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}},
                                     "axes": {axis: [1, 2]}}, sort_keys=False))
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out"), "--no-plots"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {sweep}: axes: {axis}: "), err
    assert f"did you mean '{near}'?" in err[0]
    assert not (tmp_path / "out" / "results.csv").exists()


@pytest.mark.parametrize("axis", ["cluster.inter_node_gbps", "cluster.gpu.l2_gbps", "cluster.gpu.name",
                                  "cluster.nodes_per_leaf"])
def test_an_axis_on_a_cluster_key_is_listed(tmp_path, capsys, axis):
    sweep = tmp_path / "sweep.yaml"
    values = ["A100-SXM4-80GB", "A100-SXM4-40GB"] if axis == "cluster.gpu.name" else [1, 2]  # a name is text
    sweep.write_text(yaml.safe_dump({"base": {"workload": {"generate": "megatron", "args": ARGS},
                                              "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}},
                                     "axes": {axis: values}}, sort_keys=False))
    assert main(["sweep", str(sweep), "--list"]) == 0


@pytest.mark.parametrize("nodes_per_leaf", [1, 2, 3])
def test_an_all_reduce_over_leaves_pays_the_oversubscribed_spine(tmp_path, capsys, nodes_per_leaf):
    # 1 GiB all-reduced over four DGX A100 nodes, spine 4:1. NCCL's rings run over the nodes in
    # rank order, blind to leaves, so whenever the nodes sit under more than one leaf a ring
    # crosses the spine. Under leaves of two or three nodes it took 11.6 ms, as on a non-blocking
    # fabric. A flat ring over n = 32 GPUs sends 2 (n-1)/n x 1 GiB out of each node through its
    # 8 NICs, each at a quarter of 1,600 / 8 / 8 Gb/s x 0.94 = 23.5 GB/s: 44.26 ms, plus NCCL's
    # per-step latencies (under 1%); never under the NIC floor, 2 x 3/4 x 1 GiB the same way:
    # 34.27 ms (what a hierarchical algorithm would need; until 94da48e the run took the floor)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": {"generate": "microbench", "collective": "all_reduce", "size": 2**30},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 32, "nodes_per_leaf": nodes_per_leaf,
                                                "oversubscription": 4}}))
    nic_gb_s = 8 * 1600 / 8 / 8 * 0.94 / 4
    flat_ring_ns, floor_ns = 2 * 31 / 32 * 2**30 / nic_gb_s, 2 * 3 / 4 * 2**30 / nic_gb_s
    assert main(["run", str(path), "--quiet"]) == 0
    took = int(capsys.readouterr().out.split()[2].replace(",", ""))
    assert flat_ring_ns <= took <= flat_ring_ns * 1.01 and took > floor_ns


def test_an_all_reduce_under_one_leaf_runs_at_the_rails_rate(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": {"generate": "microbench", "collective": "all_reduce", "size": 2**30},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 32, "nodes_per_leaf": 4,
                                                "oversubscription": 4}}))
    assert main(["run", str(path), "--quiet"]) == 0
    took = int(capsys.readouterr().out.split()[2].replace(",", ""))
    assert took < 2 * 3 / 4 * 2**30 / (8 * 1600 / 8 / 8 * 0.94) * 1.5  # the rails' rate, not the spine's


def test_calibrate_out_on_a_file_says_it_wants_a_folder(tmp_path, capsys):
    # --out naming the log itself said "cannot create .../all_reduce.log (File exists)"
    import shutil
    from pathlib import Path

    logs = Path(__file__).parent / "data" / "nccl" / "dgx-a100-superbench"
    log = tmp_path / "all_reduce.log"
    shutil.copy(logs / "all_reduce.log", log)
    before = log.read_bytes()
    assert main(["calibrate", str(log), "--network", str(logs / "network.yml"), "--out", str(log)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: --out: {log} is a file, not a folder; choose a folder"], err
    assert log.read_bytes() == before


@pytest.mark.parametrize("name, bundle, field", [
    # the summary printed both as they were: a colour code in a piped summary, a newline that
    # split the 'sweep NAME: 2 points' line in two
    ("evil\x1b[31mRED", "fast", "name"),
    ("two\nlines", "fast", "name"),
    ("lab", "a\x1b[32mgreen", "axes: machine: named"),
    ("lab", "b\nnewline", "axes: machine: named"),
])
def test_a_sweep_name_or_bundle_name_that_is_not_one_printable_line_is_refused(tmp_path, capsys, name, bundle,
                                                                               field):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(yaml.safe_dump({"name": name, "base": {"workload": {"generate": "megatron", "args": ARGS},
                                                            "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}},
                                     "axes": {"machine": {"named": {bundle: {"cluster.oversubscription": 1},
                                                                    "slow": {"cluster.oversubscription": 2}}}}}))
    assert main(["sweep", str(sweep), "--list"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {sweep}: {field}: must be printable text"), err
    assert "\x1b" not in err[0]


@pytest.mark.parametrize("alias", ["x\x1b[31my", "tp size", 4, ["tp"]])
def test_an_axis_as_name_that_expressions_cannot_name_is_refused(tmp_path, capsys, alias):
    # 'as:' names the axis in expressions and the summary's header: an escape code in it was
    # printed in every point's line of --list and the summary
    sweep = tmp_path / "s.yaml"
    sweep.write_text(yaml.safe_dump({"base": {"workload": {"generate": "megatron", "args": ARGS},
                                              "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}},
                                     "axes": {"workload.args.num-layers": {"values": [4, 8], "as": alias}}}))
    assert main(["sweep", str(sweep), "--list"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {sweep}: axes: workload.args.num-layers: as: "), err
    assert "\x1b" not in err[0]


def test_a_step_longer_than_simulated_time_can_hold_names_the_scenario(tmp_path, capsys):
    # sequences of 10^9 tokens: attention alone is 4 s^2 h FLOPs a layer and sequence forward
    # (QK^T and AV, 2 s^2 h each; half of it causal), run 4 times with full recomputation
    # (forward, again, backward twice as long): over 8 sequences a GPU and 32 layers, at the
    # H100's dense peak of 989 TFLOP/s, more than 2^63 ns. The error named the trace cache's
    # file (~/.cache/simpy-astra/workloads/megatron-.../megatron.0.et), never written by the user
    args = ("--num-layers 32 --hidden-size 8192 --num-attention-heads 64 --seq-length 1000000000 "
            "--position-embedding-type rope --micro-batch-size 1 --global-batch-size 128 --recompute-granularity full "
            "--recompute-method uniform --recompute-num-layers 1 --bf16 --vocab-size 32000")
    s, h = 10**9, 8192
    assert 8 * 32 * 4 * (4 * s**2 * h / 2) / 989e12 * 1e9 > 2**63
    path = _scenario(tmp_path, args, {"preset": "dgx-h100", "gpus": 16})
    assert main(["run", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}: workload"), err
    assert "past the horizon" in err[0] and ".et" not in err[0]


def test_a_preset_network_past_the_horizon_blames_the_cluster(tmp_path, capsys):
    # 10^18 bytes all-reduced over NICs of 0.001 Gb/s a node: 10^18 B / (1.25e5 B/s) alone is
    # 8e12 s, past 2^63 ns. The error blamed "s.yaml: network", a field the scenario has not
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": {"generate": "microbench", "collective": "all_reduce",
                                                 "size": 10**18},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 16, "inter_node_gbit_s": 0.001}}))
    assert 10**18 / (0.001e9 / 8) * 1e9 > 2**63
    assert main(["run", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}: cluster: "), err
    assert "past the horizon" in err[0]


@pytest.mark.parametrize("command", ["calibrate", "validate"])
def test_one_nccl_log_given_twice_is_refused(tmp_path, capsys, command):
    # all_reduce.log twice was fitted as 28 sizes (its 14, each counted twice) and said so
    from pathlib import Path

    logs = Path(__file__).parent / "data" / "nccl" / "dgx-a100-superbench"
    log = str(logs / "all_reduce.log")
    again = str(logs / ".." / "dgx-a100-superbench" / "all_reduce.log")
    extra = ["--system", str(tmp_path / "none.json")] if command == "validate" else []
    assert main([command, log, again, "--network", str(logs / "network.yml"), *extra,
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {again}: this log is given twice (also as {log}); give each log once"], err
    assert not (tmp_path / "o").exists()


def test_a_forced_nvls_that_nccl_cannot_run_names_the_scenario(tmp_path, capsys):
    # pp 8 on two H100 nodes (tp 1: no get_batch broadcast, which NCCL_ALGO=NVLS would stop at
    # first): the tied embeddings' group {0, 14} is 2 GPUs, one a node, which NVLS (a reduction
    # in one node's NVSwitch) cannot serve, and NCCL_ALGO=NVLS stops NCCL there. The error began
    # "error: cluster.nccl_algo", naming no file
    args = ARGS.replace("--num-layers 4", "--num-layers 8").replace("--tensor-model-parallel-size 2",
                                                                     "--pipeline-model-parallel-size 8")
    path = _scenario(tmp_path, args, {"preset": "dgx-h100", "gpus": 16, "nccl_algo": "nvls"})
    assert main(["run", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}: cluster.nccl_algo: nvls: NCCL has no nvls"), err


def test_the_local_memory_trace_note_keeps_its_words_within_80_columns(tmp_path, capsys, monkeypatch):
    # the shipped Llama scenario's note was one line of 203 columns: the words, the first
    # trace's full path, the last's name and the system's source
    import os

    scenario = os.path.join(os.path.dirname(__file__), "..", "scenarios", "transformer_llama_16npus.yaml")
    monkeypatch.chdir(tmp_path)
    assert main(["run", os.path.abspath(scenario), "--quiet", "--trace-dir", "t"]) == 0
    err = capsys.readouterr().err.splitlines()
    at = next(i for i, line in enumerate(err) if line.startswith("note: wrote 16 local-memory trace(s)"))
    assert len(err[at]) <= 80 and len(err[at + 1]) <= 80, err
    assert err[at + 2] == "  " + str(tmp_path / "t" / "local_mem_trace.0.json")
    assert err[at + 3] == "  .. local_mem_trace.15.json"


def test_verbose_says_why_folding_fell_back_within_80_columns(capsys):
    # the fat tree's tie, in full with --verbose, was one line of 193 columns
    import os

    scenario = os.path.join(os.path.dirname(__file__), "..", "scenarios", "fat_tree_all_to_all.yaml")
    assert main(["run", scenario, "--network-backend", "congestion_aware", "--verbose"]) == 0
    err = capsys.readouterr().err.splitlines()
    at = next(i for i, line in enumerate(err) if line.startswith("warning: symmetry folding undone"))
    said = [err[at]] + [line for line in err[at + 1:at + 4] if line.startswith("  ")]
    assert max(map(len, said)) <= 80, said
    assert " ".join(line.strip() for line in said).endswith("ran again unfolded")


def test_a_sweep_over_backends_says_why_it_names_no_best_within_80_columns(tmp_path, capsys, monkeypatch):
    # the shipped quick sweep's note was one line of 110 columns
    import os

    torus = os.path.join(os.path.dirname(__file__), "..", "scenarios", "torus3d_all_reduce.yaml")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"base": os.path.abspath(torus),
                                                     "axes": {"backend": ["congestion_unaware", "congestion_aware"]}}))
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "s.yaml", "--out", "o", "--jobs", "1", "--no-plots"]) == 0
    err = capsys.readouterr().out.splitlines()  # with the best lines it explains: the answer, stdout
    at = next(i for i, line in enumerate(err) if line.startswith("points of different network backends"))
    assert len(err[at]) <= 80 and err[at + 1].startswith("  ") and err[at + 1].endswith("see by_backend"), err
