"""A fourteenth hunt for inputs that ran as something other than what they say: each is now
refused before the run in one line naming the file, the field and the fix, or runs with a
warning that says what it changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import DEFAULT, SCENARIOS, error_lines, write_yaml


def test_a_path_from_the_home_folder_written_with_a_tilde_gets_the_full_path(tmp_path, capsys):
    # 'workload: ~/traces/step' looked for SCENARIO_FOLDER/~/traces/step.0.et and said that
    # file did not exist; ~ is the shell's, and no shell reads a scenario
    doc = dict(DEFAULT, workload="~/traces/step")
    path = write_yaml(tmp_path, doc)
    home = os.path.expanduser("~/traces/step")
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: field 'workload' is ~/traces/step, but ~ means the home folder only to a shell; a "
        f"scenario's relative paths resolve from its own folder: write {home}"]
    # a job's, and the network's, alike
    jobs = dict(DEFAULT, network="~/net.yml")
    assert "field 'network' is ~/net.yml, but ~ means" in error_lines(capsys, ["run", write_yaml(tmp_path, jobs)])[0]
    # a folder named ~ beside the scenario is what the path names
    (tmp_path / "~").mkdir()
    prefix = SCENARIOS / DEFAULT["workload"]
    for rank in range(8):
        (tmp_path / "~" / f"step.{rank}.et").write_bytes(Path(f"{prefix}.{rank}.et").read_bytes())
    doc["network"] = DEFAULT["network"]
    assert main(["run", write_yaml(tmp_path, dict(doc, workload="~/step")), "--quiet"]) == 0


def test_an_output_prefix_that_names_one_rank_file_is_told_the_prefix(tmp_path, capsys):
    # --output traces/ar.0.et wrote traces/ar.0.et.0.et .. ar.0.et.7.et, which run then
    # reads only as 'workload: traces/ar.0.et' (and as its files' prefix nowhere else)
    out = tmp_path / "ar.3.et"
    argv = ["generate", "microbench", "--collective", "all_reduce", "--size", "1024", "--num-npus", "8",
            "--output", str(out)]
    assert error_lines(capsys, argv) == [
        f"error: --output: {out} is the name of NPU 3's ET file; give the prefix, {tmp_path / 'ar'}, which writes "
        f"ar.0.et, ar.1.et, ..."]
    assert list(tmp_path.iterdir()) == []
    text = SCENARIOS / "workloads" / "text" / "Resnet50_DataParallel.txt"
    argv = ["convert", "text", "--input", str(text), "--output", str(tmp_path / "r.0.et"), "--num-npus", "8",
            "--num-passes", "1"]
    assert "is the name of NPU 0's ET file" in error_lines(capsys, argv)[0]
    # a prefix that only ends in digits, or in .et, is a prefix
    assert main(argv[:5] + [str(tmp_path / "r.0")] + argv[6:]) == 0
    assert (tmp_path / "r.0.7.et").is_file()


def test_a_range_in_decimal_steps_gives_the_decimals_written(tmp_path, capsys):
    # {from: 0.1, to: 0.7, step: 0.1} listed bandwidth=0.30000000000000004 and ended on
    # 0.7000000000000001, past 'to', in every label, point key and results row
    base = write_yaml(tmp_path, dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"])), "base.yaml")
    sweep = write_yaml(tmp_path, {"base": base, "axes": {"network.bandwidth": {"from": 0.1, "to": 0.7, "step": 0.1}}},
                       "sweep.yaml")
    assert main(["sweep", sweep, "--list"]) == 0
    values = [line.split("=")[1] for line in capsys.readouterr().out.splitlines() if "=" in line]
    assert values == ["0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7"]


def _jobs(tmp_path: Path, count: int) -> str:
    """``count`` 4-NPU all-reduce jobs on the default scenario's 8-NPU ring."""
    bench = {"generate": "microbench", "collective": "all_reduce", "size": 1024, "num_npus": 4}
    jobs = [{"name": name, "workload": bench, "npus": [i * 4 + k for k in range(4)]}
            for i, name in enumerate("ab"[:count])]
    return write_yaml(tmp_path, {"jobs": jobs, "system": DEFAULT["system"], "network": DEFAULT["network"],
                                 "backend": "congestion_aware"})


def test_isolation_of_a_scenarios_only_job_is_refused(tmp_path, capsys):
    # one job under jobs: ran twice and printed 'slowdown 1.000x': nothing shares its network
    assert error_lines(capsys, ["run", _jobs(tmp_path, 1), "--isolation", "--quiet"]) == [
        "error: --isolation: the scenario's one job (a) shares the network with no other job, so alone it runs as it "
        "does here (slowdown 1); add a job, or drop --isolation"]
    assert main(["run", _jobs(tmp_path, 2), "--isolation"]) == 0
    assert "slowdown" in capsys.readouterr().err


def test_a_switch_buffer_and_a_packet_that_do_not_fit_at_their_defaults_are_refused(tmp_path, capsys):
    # switch-buffer: 1 without packet-size ended on 'internal error ValueError ... (this is a
    # simpy-astra bug)': only a buffer under a packet-size written beside it was checked
    network = dict(DEFAULT["network"], **{"switch-buffer": 1})
    doc = dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"]), network=network, backend="packet")
    path = write_yaml(tmp_path, doc)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: network: field 'switch-buffer' must hold at least one packet (4096 bytes, packet-size's "
        f"default; set packet-size to send smaller ones; got 1)"]
    # a packet past the default 1 MiB buffer alike
    doc["network"] = dict(DEFAULT["network"], **{"packet-size": 2 ** 31})
    assert error_lines(capsys, ["run", write_yaml(tmp_path, doc), "--quiet"]) == [
        f"error: {path}: network: field 'packet-size' must fit a switch buffer (1048576 bytes, switch-buffer's "
        f"default; set switch-buffer to hold larger packets; got 2147483648)"]
    doc["network"] = dict(network, **{"packet-size": 1})
    assert main(["run", write_yaml(tmp_path, doc), "--quiet"]) == 0


def test_a_training_jobs_figure_in_a_sweep_of_no_training_job_is_refused_before_the_run(tmp_path, capsys):
    # minimise: iteration_time_ns over ET traces ran every point, then ended on 'gave no number
    # for any of the finished points'; report: [mfu] showed an empty column, and a constraint
    # mfu > 0.3 held no point to it: only a Megatron job reports them
    base = write_yaml(tmp_path, dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"])), "base.yaml")
    for field, value, where, text in (("minimise", "iteration_time_ns", "minimise", "iteration_time_ns"),
                                      ("report", ["finish_ns", "mfu * 100"], "report[1]", "mfu * 100"),
                                      ("constraints", ["mfu > 0.3"], "constraints", "mfu > 0.3")):
        sweep = write_yaml(tmp_path, {"base": base, "axes": {"network.bandwidth": [50, 100]}, field: value}, "sw.yaml")
        assert error_lines(capsys, ["sweep", sweep, "--out", str(tmp_path / "out")]) == [
            f"error: {sweep}: {where}: '{text}' reads {text.split()[0]}, a figure only a training job reports "
            f"(workload: {{generate: megatron}} on a cluster:), and no point of this sweep is one, so it would be "
            f"empty for every point; use finish_ns, exposed_comm_ns, peak_memory_gb, ..."]
        assert not (tmp_path / "out").exists()


def test_a_transformer_of_more_layer_passes_than_a_trace_holds_is_refused_before_building(tmp_path, capsys):
    # num_stacks: 1099511627776 (a typo of digits) ended on 'internal error MemoryError' after
    # building its graph until memory ran out; Megatron jobs were bounded so, transformers not
    gpt = {"generate": "transformer", "model": "gpt", "dp": 8, "dmodel": 256, "dff": 1024, "head": 4,
           "num_stacks": 2 ** 40, "seq": 64, "batch": 8, "dvocal": 1000}
    system = {**DEFAULT["system"], "roofline-enabled": 1, "peak-perf": 900}
    path = write_yaml(tmp_path, {"workload": gpt, "system": system, "network": DEFAULT["network"]})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.num_stacks: (1,099,511,627,776) x micro-batches (1: batch / micro_batch) would be "
        f"about 87,960,930,222,080 trace nodes, more than the bound of 4,000,000 (about 4 GB to simulate); use fewer "
        f"num_stacks or a larger micro_batch"]
    gpt["num_stacks"] = 2
    assert main(["run", write_yaml(tmp_path, {"workload": gpt, "system": system, "network": DEFAULT["network"]}),
                 "--quiet"]) == 0


def test_a_gemm_workload_of_another_npu_count_is_refused_before_scalesim_runs(tmp_path, capsys, monkeypatch):
    # num_npus: 1 on a 16-NPU network timed every layer whole in SCALE-Sim (minutes for a
    # large one) and only then said the rank counts differ
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    (tmp_path / "layers.csv").write_text("Layer,m,n,k\nfc1,64,64,64\n")
    gemm = {"generate": "gemm", "mnk": "layers.csv", "parallel": "DATA", "num_npus": 1, "array": "8x8"}
    system = {**DEFAULT["system"], "local-mem-bw": 50}
    path = write_yaml(tmp_path, {"workload": gemm, "system": system, "network": DEFAULT["network"]})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload: generate gemm writes 1 ranks, but the network has 8 NPUs; make the generator's "
        f"parallelism (num_npus, or dp x tp x pp ...) match it"]
    assert not (tmp_path / "cache" / "scalesim").exists()  # SCALE-Sim never ran
    gemm["num_npus"] = 8
    assert main(["run", write_yaml(tmp_path, {"workload": gemm, "system": system, "network": DEFAULT["network"]}),
                 "--quiet"]) == 0
    assert (tmp_path / "cache" / "scalesim").is_dir()


def test_a_systolic_array_past_what_scalesim_can_hold_is_refused(tmp_path, capsys):
    # array: 100000x100000 ended on 'internal error MemoryError: Unable to allocate 74.5 GiB'
    mnk = tmp_path / "layers.csv"
    mnk.write_text("Layer,m,n,k\nfc1,64,64,64\n")
    argv = ["generate", "gemm", "--mnk", str(mnk), "--parallel", "DATA", "--num-npus", "4", "--array",
            "100000x100000", "--output", str(tmp_path / "g" / "gm")]
    assert error_lines(capsys, argv) == [
        "error: --array: 100000x100000 is past the 16,777,216 cells (4096x4096) SCALE-Sim is run for here: it keeps "
        "several ROWS x COLS tables per layer (4096x4096 took 2.4 GB and a minute); give a smaller array"]
    assert not (tmp_path / "g").exists()


def test_an_axis_written_by_its_path_in_a_constraint_is_told_its_name(tmp_path, capsys):
    # 'network.bandwidth > 10' said only "uses unknown name(s) ['network']" and listed 40 names
    base = write_yaml(tmp_path, dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"])), "base.yaml")
    sweep = write_yaml(tmp_path, {"base": base, "axes": {"network.bandwidth": [10, 20]},
                                  "constraints": ["network.bandwidth > 10"]}, "sweep.yaml")
    err = error_lines(capsys, ["sweep", sweep, "--list"])
    assert len(err) == 1 and err[0].startswith(
        f"error: {sweep}: constraints[0]: 'network.bandwidth > 10' uses unknown name(s) ['network']; did you mean "
        f"'bandwidth' for 'network.bandwidth'? (an axis is called by its path's last part, or its as: name); known: ")


@pytest.mark.parametrize("written", ["endpoint-delay", "system.endpoint-delay"])
def test_an_axis_written_with_dashes_in_a_constraint_is_told_its_name(tmp_path, capsys, written):
    # 'endpoint-delay > 10' is endpoint minus delay: it said "uses unknown name(s) ['delay',
    # 'endpoint']" and listed 40 names, and the dotted form gave no hint at all
    base = write_yaml(tmp_path, dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"])), "base.yaml")
    sweep = write_yaml(tmp_path, {"base": base, "axes": {"system.endpoint-delay": [10, 20]},
                                  "constraints": [f"{written} > 10"]}, "sweep.yaml")
    unknown = "['delay', 'endpoint']" if written == "endpoint-delay" else "['delay', 'system']"
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: constraints[0]: '{written} > 10' reads {unknown}: a - in a name is a minus; write "
        f"'endpoint_delay' for '{written}' (an axis is called by its path's last part, with _ for -, or its as: name)"]
    # a subtraction of two known names is one
    sweep = write_yaml(tmp_path, {"base": base, "axes": {"system.endpoint-delay": [10, 20]},
                                  "constraints": ["endpoint_delay-endpoint_delay < 1"]}, "sweep.yaml")
    assert main(["sweep", sweep, "--list"]) == 0


def test_traces_for_one_npu_are_refused_as_no_network_runs_them(tmp_path, capsys):
    # generate microbench --num-npus 1 wrote traces that no run takes: a network dimension holds
    # 2 or more NPUs, and a cluster 2 or more GPUs
    argv = ["generate", "microbench", "--collective", "all_reduce", "--size", "1024", "--num-npus", "1",
            "--output", str(tmp_path / "ar")]
    assert error_lines(capsys, argv) == [
        "error: --num-npus: must be 2 or more (got 1): a run simulates a network between NPUs, and every network has 2 "
        "or more"]
    assert list(tmp_path.iterdir()) == []
    # the text converter's and the gemm generator's alike
    text = SCENARIOS / "workloads" / "text" / "Resnet50_DataParallel.txt"
    (tmp_path / "layers.csv").write_text("Layer,m,n,k\nfc1,64,64,64\n")
    for argv in (["convert", "text", "--input", str(text), "--num-passes", "1", "--num-npus", "1"],
                 ["generate", "gemm", "--mnk", str(tmp_path / "layers.csv"), "--parallel", "DATA", "--num-npus", "1"]):
        assert "must be 2 or more (got 1)" in error_lines(capsys, [*argv, "--output", str(tmp_path / "t")])[0]
    assert [p.name for p in tmp_path.iterdir()] == ["layers.csv"]
