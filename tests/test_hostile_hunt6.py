"""A sixth hunt for inputs that ran as something other than what they say, or failed only after
the run: each is now refused in one line naming the file, the field and the fix."""

from __future__ import annotations

import csv
import os

import pytest
import yaml

from simpy_astra.cli.main import main
from tests.scenario_files import error_lines

ARGS = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
        "--global-batch-size 32 --tensor-model-parallel-size 2 --bf16 --vocab-size 32000")


def write_rows(path, rows: list[dict]) -> None:
    """``rows`` (csv.DictReader's) written back as a results.csv a user edited."""
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _scenario(tmp_path, cluster: dict, args: str = ARGS):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": args}, "cluster": cluster},
                                   sort_keys=False))
    return path


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
@pytest.mark.parametrize("flag", ["--csv-out", "--plots"])
def test_an_output_folder_that_cannot_be_made_is_refused_before_the_run(tmp_path, capsys, flag):
    # no folder can be made in /proc, not even by root, for whom os.access says yes: the run
    # printed its answer and then failed on "cannot write into /proc/... (No such file or
    # directory)", the minutes of a large run lost
    path = _scenario(tmp_path, {"preset": "dgx-a100-80gb", "gpus": 16})
    folder = "/proc/simpy-astra-no-such-folder"
    assert main(["run", str(path), "--quiet", flag, folder]) == 2
    out, err = capsys.readouterr()
    assert out == "", out  # refused before the run: no answer printed
    err = err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {flag}: cannot write into {folder}"), err


def test_an_fp8_peak_given_to_a_gpu_without_fp8_names_the_scenarios_field(tmp_path, capsys):
    # the A100 preset has no FP8 (fp8_tflops 0, fp8_efficiency 0): a scenario's fp8_tflops 1000
    # alone was blamed on the preset, "dgx-a100-80gb.yaml: gpu.fp8_efficiency: must be a positive
    # number (got 0)", a file the user never wrote
    path = _scenario(tmp_path, {"preset": "dgx-a100-80gb", "gpus": 16, "gpu": {"fp8_tflops": 1000}})
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1 and err[0].startswith(f"error: {path}: cluster.gpu.fp8_tflops: "), err
    assert "fp8_efficiency" in err[0] and "dgx-a100-80gb.yaml" in err[0]
    # with its efficiency beside it, FP8 runs: MFU against the FP8 peak
    path = _scenario(tmp_path, {"preset": "dgx-a100-80gb", "gpus": 16,
                                "gpu": {"fp8_tflops": 1000, "fp8_efficiency": 0.5}})
    assert main(["run", str(path), "--quiet"]) == 0


def test_a_sweeps_failed_points_are_listed_within_80_columns_in_a_pipe(tmp_path, capsys, monkeypatch):
    # a point whose scenario leaves out --num-attention-heads fails (argparse: "the following
    # arguments are required"); the summary's 'failed' line, its coordinates and the whole
    # error, was one line of 300 columns in a pipe, where every other line keeps within 80
    monkeypatch.setenv("COLUMNS", "80")
    args = ARGS.replace("--num-attention-heads 16 ", "")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": {"workload": {"generate": "megatron", "args": args},
                                              "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}},
                                     "axes": {"workload.args.num-layers": [2, 4]}}, sort_keys=False))
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out"), "--no-plots", "--jobs", "1"]) == 4
    err = capsys.readouterr().err.splitlines()
    failed = [i for i, line in enumerate(err) if line.startswith("failed ")]
    assert len(failed) == 1, err  # the two points failed alike: their error once
    end = next(i for i in range(failed[0] + 1, len(err)) if not err[i].startswith("  "))
    said = err[failed[0]:end]
    assert max(len(line) for line in said) <= 80, said
    whole = " ".join(line.strip() for line in said)
    assert whole.startswith("failed num_layers=2 (and 1 more alike): ") and "required: --num-attention-heads" in whole


@pytest.mark.parametrize("workload", [{"generate": "megatron", "args": ARGS},
                                      {"generate": "microbench", "collective": "all_reduce", "size": 1048576}])
def test_a_remote_memory_beside_a_cluster_job_that_never_reads_it_is_refused(tmp_path, capsys, workload):
    # a remote memory of 1 B/ns behind 0.1 s of latency beside a Megatron job: its step has no
    # remote-memory load or store (its tensors live in HBM), so it ran in 0.017 s as without it,
    # the offload the user meant to model never simulated
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": workload, "cluster": {"preset": "dgx-a100-80gb", "gpus": 16},
                                    "remote_memory": {"memory-type": "PER_NPU_MEMORY_EXPANSION",
                                                      "remote-mem-latency": 100_000_000, "remote-mem-bw": 1}}))
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1 and err[0].startswith(f"error: {path}: field 'remote_memory': "), err
    assert "remove remote_memory" in err[0]


def test_no_remote_memory_beside_a_cluster_job_runs(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": ARGS},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 16},
                                    "remote_memory": {"memory-type": "NO_MEMORY_EXPANSION"}}))
    assert main(["run", str(path), "--quiet"]) == 0


LLAMA = os.path.join(os.path.dirname(__file__), "..", "scenarios", "transformer_llama_16npus.yaml")
NCCL = os.path.join(os.path.dirname(__file__), "data", "nccl", "dgx-a100-superbench")


@pytest.mark.parametrize("command", ["run", "sweep", "calibrate"])
def test_an_output_path_with_a_colour_code_is_printed_escaped(tmp_path, capsys, monkeypatch, command):
    # a folder named with ESC [31m: 'wrote o\x1b[31mx/results.csv' turned the rest of the
    # terminal red, and wrote the raw code into a pipe; errors show such a path escaped already
    monkeypatch.chdir(tmp_path)
    folder = "o\x1b[31mx"
    if command == "run":
        argv = ["run", os.path.abspath(LLAMA), "--quiet", "--trace-dir", folder]
    elif command == "sweep":
        (tmp_path / "s.yaml").write_text(yaml.safe_dump({
            "base": {"workload": {"generate": "megatron", "args": ARGS},
                     "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}},
            "axes": {"workload.args.num-layers": [2]}}))
        argv = ["sweep", "s.yaml", "--out", folder, "--jobs", "1", "--no-plots"]
    else:
        argv = ["calibrate", os.path.join(NCCL, "all_reduce.log"), "--network", os.path.join(NCCL, "network.yml"),
                "--out", folder]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err
    assert "o\\x1b[31mx" in out + err  # the path, as errors show it


def _sweep(tmp_path, axes: dict):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": {"workload": {"generate": "megatron", "args": ARGS},
                                              "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}},
                                     "axes": axes}, sort_keys=False))
    return sweep


@pytest.mark.parametrize("axes, where, words", [
    # each listed as a valid point by --list; run, every such point failed on the cluster's
    # own check (the others ran), the sweep's time spent before the typo showed
    ({"cluster.preset": ["dgx-a100-80gb", "dgx-a100-80GB"]}, "axes: cluster.preset: ",
     "'dgx-a100-80GB' is not a preset"),
    ({"cluster.nccl_algo": ["ring", "RING"]}, "axes: cluster.nccl_algo: ", "must be one of ring, tree, nvls"),
    ({"cluster.gpu.tensor_efficiency": [0.5, 1.5]}, "axes: cluster.gpu.tensor_efficiency: ", "must be in (0, 1]"),
    ({"cluster.oversubscription": [1, 0.5]}, "axes: cluster.oversubscription: ", "between 1 and 64"),
    ({"cluster.inter_node_gbps": [800, -1]}, "axes: cluster.inter_node_gbps: ", "must be between 0.001 and 1e+07"),
    ({"cluster.gpus": [16, 1]}, "axes: cluster.gpus: ", "2 or more"),
    ({"machine": {"named": {"a": {"cluster.gpu.hbm_gib": 40}, "b": {"cluster.gpu.hbm_gib": 0}}}},
     "axes: machine: named: b: cluster.gpu.hbm_gib: ", "must be between 0.001 and 1e+07 (GiB; got 0)"),
])
def test_a_cluster_axis_value_no_cluster_can_take_is_refused_before_any_point_runs(tmp_path, capsys, axes, where,
                                                                                  words):
    sweep = _sweep(tmp_path, axes)
    err = error_lines(capsys, ["sweep", str(sweep), "--list"])
    assert len(err) == 1 and err[0].startswith(f"error: {sweep}: {where}"), err
    assert words in err[0]


@pytest.mark.parametrize("axes", [
    # valid beside another axis's value: nvls on the H100 preset, 12 GPUs in nodes of 4
    {"cluster.preset": ["dgx-h100"], "cluster.nccl_algo": ["nvls", "ring"]},
    {"cluster.gpus_per_node": [4], "cluster.gpus": [12, 16]},
    {"cluster.gpu.fp8_tflops": [0, 1000], "cluster.gpu.fp8_efficiency": [0, 0.5]},
])
def test_cluster_axis_values_valid_beside_one_another_are_listed(tmp_path, capsys, axes):
    assert main(["sweep", str(_sweep(tmp_path, axes)), "--list"]) == 0


@pytest.mark.parametrize("axes, where", [
    # null (or false) removes a flag: without --num-layers Megatron-LM's argparse stops ("the
    # following arguments are required"); --list showed the point as valid, and it failed when run
    ({"workload.args.num-layers": [None, 2]}, "axes: workload.args.num-layers: "),
    ({"workload.args.micro-batch-size": [1, False]}, "axes: workload.args.micro-batch-size: "),
    ({"layout": {"named": {"a": {"workload.args.num-layers": 2},
                           "b": {"workload.args.hidden-size": None}}}}, "axes: layout: named: b: "),
])
def test_an_axis_value_that_removes_a_required_megatron_argument_is_refused(tmp_path, capsys, axes, where):
    sweep = _sweep(tmp_path, axes)
    err = error_lines(capsys, ["sweep", str(sweep), "--list"])
    assert len(err) == 1 and err[0].startswith(f"error: {sweep}: {where}"), err
    assert "Megatron-LM requires" in err[0]


def test_an_axis_value_that_removes_an_optional_megatron_argument_is_listed(tmp_path, capsys):
    assert main(["sweep", str(_sweep(tmp_path, {"workload.args.vocab-size": [None, 32000],
                                                "workload.args.bf16": [True, False]})), "--list"]) == 0


@pytest.mark.parametrize("flag", ["--json-out", "--trace-out"])
def test_an_output_on_a_local_memory_trace_the_run_writes_is_refused(tmp_path, capsys, monkeypatch, flag):
    # the Llama scenario tracks local memory: 16 traces, local_mem_trace.N.json in --trace-dir.
    # --json-out t/local_mem_trace.3.json was written over NPU 3's trace (or it over the JSON),
    # and the run said it wrote 16 traces and the JSON
    monkeypatch.chdir(tmp_path)
    out = os.path.join("t", "local_mem_trace.3.json")
    err = error_lines(capsys, ["run", os.path.abspath(LLAMA), "--quiet", "--trace-dir", "t", flag, out])
    assert len(err) == 1 and err[0].startswith(f"error: {flag}: {out} is also NPU 3's local-memory trace"), err
    assert not (tmp_path / "t" / "local_mem_trace.0.json").exists()  # refused before the run
    # a number past the run's NPUs is no trace of it
    assert main(["run", os.path.abspath(LLAMA), "--quiet", "--trace-dir", "t", flag,
                 os.path.join("t", "local_mem_trace.16.json")]) == 0


def test_a_flag_axis_after_a_workload_axis_without_megatron_blames_the_workload_axis(tmp_path, capsys):
    # the error blamed "the base scenario's workload.args: ... (got None)": the base has its
    # args; the workload axis's microbenchmark, set whole before the flag, has none
    sweep = _sweep(tmp_path, {"workload": [{"generate": "microbench", "collective": "all_reduce", "size": 1048576}],
                              "workload.args.num-layers": [4, 8]})
    err = error_lines(capsys, ["sweep", str(sweep), "--list"])
    assert len(err) == 1 and err[0].startswith(f"error: {sweep}: axes: workload.args.num-layers: "), err
    assert "base scenario" not in err[0] and "axis workload" in err[0]


def test_a_finished_sweep_run_again_on_a_cluster_needs_no_scheduler(tmp_path, capsys):
    # every point is in results.csv: nothing to run, yet the sweep connected to the Dask
    # scheduler first and, that one gone, stopped on "cannot connect" without its summary
    pytest.importorskip("distributed")
    sweep = _sweep(tmp_path, {"workload.args.num-layers": [2, 4]})
    out = str(tmp_path / "out")
    assert main(["sweep", str(sweep), "--out", out, "--no-plots", "--jobs", "1"]) == 0
    capsys.readouterr()
    assert main(["sweep", str(sweep), "--out", out, "--no-plots", "--cluster", "no-scheduler-here"]) == 0
    captured = capsys.readouterr()
    assert "2 already in" in captured.err and "best: num_layers=2" in captured.out, captured


@pytest.mark.parametrize("hbm_gib, capacity", [(0.25, "0.25"), (0.4, "0.4"), (40.5, "40.5"), (80, "80")])
def test_a_gpus_memory_is_printed_as_the_cluster_gives_it(tmp_path, capsys, hbm_gib, capacity):
    # a GPU of 0.25 GiB (within the range a preset may state) was printed "of 0 GiB", and one
    # of 40.5 GiB "of 40 GiB": the capacity was rounded to a whole GiB
    path = _scenario(tmp_path, {"preset": "dgx-a100-80gb", "gpus": 16, "gpu": {"hbm_gib": hbm_gib}})
    assert main(["run", str(path), "--quiet"]) == 0
    err = capsys.readouterr().err
    if hbm_gib < 1:  # the job (0.9 GiB a GPU) does not fit: --quiet says so
        assert f" of {capacity} GiB (DOES NOT FIT)" in err, err
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    assert f" GiB of {capacity} GiB (" in out, out


@pytest.mark.parametrize("column", ["finish_ns", "iteration_time_ns", "memory_per_gpu_gib"])
def test_a_negative_figure_in_an_edited_results_file_is_refused(tmp_path, capsys, column):
    # no time, memory or count is below 0: a results.csv edited to finish_ns -5 for the 8-layer
    # point was read, and best.json crowned it (the slowest point, 27,989,484 ns)
    sweep = _sweep(tmp_path, {"workload.args.num-layers": [2, 8]})
    out = tmp_path / "out"
    assert main(["sweep", str(sweep), "--out", str(out), "--no-plots", "--jobs", "1"]) == 0
    rows = list(csv.DictReader((out / "results.csv").open()))
    at = next(i for i, row in enumerate(rows) if row["workload.args.num-layers"] == "8")
    rows[at][column] = "-5"
    write_rows(out / "results.csv", rows)
    before = (out / "results.csv").read_bytes()
    capsys.readouterr()
    err = error_lines(capsys, ["sweep", str(sweep), "--out", str(out), "--no-plots", "--jobs", "1"])
    assert err[-1].startswith(f"error: {out / 'results.csv'}: line {at + 2}: {column}: "), err
    assert "-5" in err[-1] and (out / "results.csv").read_bytes() == before


def test_a_results_file_saved_with_a_byte_order_mark_resumes(tmp_path, capsys):
    # an editor (Excel, Notepad) that saves results.csv as "UTF-8 with BOM" puts U+FEFF before
    # 'key': the sweep refused the file, "column 1 is '\ufeffkey' where this sweep writes
    # 'workload.args.num-layers'", a column it has and a character no terminal shows
    sweep = _sweep(tmp_path, {"workload.args.num-layers": [2, 4]})
    out = tmp_path / "out"
    assert main(["sweep", str(sweep), "--out", str(out), "--no-plots", "--jobs", "1"]) == 0
    csv_path = out / "results.csv"
    csv_path.write_bytes(b"\xef\xbb\xbf" + csv_path.read_bytes())
    capsys.readouterr()
    assert main(["sweep", str(sweep), "--out", str(out), "--no-plots", "--jobs", "1"]) == 0
    assert "2 already in" in capsys.readouterr().err


def test_a_renamed_column_in_an_edited_results_file_is_named_as_it_is(tmp_path, capsys):
    # finish_ns renamed finish: "column 3 is 'finish' where this sweep writes 'exposed_comm_ns'",
    # the column after the one renamed (the header was matched against columns it has)
    sweep = _sweep(tmp_path, {"workload.args.num-layers": [2]})
    out = tmp_path / "out"
    assert main(["sweep", str(sweep), "--out", str(out), "--no-plots", "--jobs", "1"]) == 0
    csv_path = out / "results.csv"
    header, rest = csv_path.read_text().split("\n", 1)
    assert header.split(",")[2] == "finish_ns"
    csv_path.write_text(header.replace(",finish_ns,", ",fin\x1bish,") + "\n" + rest)
    capsys.readouterr()
    err = error_lines(capsys, ["sweep", str(sweep), "--out", str(out), "--no-plots", "--jobs", "1"])
    assert len(err) == 1 and "header: does not match this sweep (column 3 is 'fin\\x1bish', " in err[0], err
    assert "exposed_comm_ns" not in err[0] and "\x1b" not in err[0]


@pytest.mark.parametrize("extra", [{}, {"network": {"topology": ["Ring"], "npus_count": [16], "bandwidth": [50],
                                                     "latency": [500]}}])
def test_a_megatron_job_without_its_cluster_asks_for_the_cluster(tmp_path, capsys, extra):
    # a Megatron workload copied without its cluster: was told "field 'system' is missing" (or
    # 'network'), which sent the user writing an ASTRA-sim system for a job a preset describes
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": ARGS}, **extra}))
    err = error_lines(capsys, ["run", str(path), "--quiet"])
    assert len(err) == 1 and err[0].startswith(f"error: {path}: workload: needs a cluster: beside it"), err


@pytest.mark.parametrize("command, doc", [
    # the file's own text, quoted in the error: each error line carried ESC [31m raw, turning the
    # terminal red (or writing the code into a log), and a newline split the one line in two
    ("run", {"workload": {"generate": "megatron", "args": "--num-layers 4 --hidd\x1b[31men 5"},
             "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}}),
    ("run", {"plugins": ["a\x1b[31m\nb"], "workload": "w"}),
    ("sweep", {"base": {"workload": {"generate": "megatron", "args": ARGS},
                        "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}},
               "axes": {"workload.args.num-lay\x1b[31mers": [1]}}),
    ("sweep", {"base": {"workload": {"generate": "megatron", "args": ARGS},
                        "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}},
               "axes": {"workload.args.num-layers": [2]}, "constraints": ["num_l\x1b[31mayers > 1"]}),
])
def test_an_error_quoting_a_colour_code_or_a_newline_is_one_printable_line(tmp_path, capsys, command, doc):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main([command, str(path)] + (["--list"] if command == "sweep" else [])) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and len(err.strip().splitlines()) == 1, err
    assert "\\x1b[31m" in err


@pytest.mark.parametrize("axis, value", [("workload.args.tokenizer-model", "t\x1b[31m.model"),
                                         ("workload.args.data-path", "a\nb")])
def test_an_axis_value_that_is_not_one_printable_line_is_refused(tmp_path, capsys, axis, value):
    # an axis value is printed in each point's line (--list, the progress lines, the summary):
    # ESC [31m in it was printed raw, and a newline forged a line of --list
    sweep = _sweep(tmp_path, {axis: [value, "x"]})
    assert main(["sweep", str(sweep), "--list"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "\x1b" not in err
    err = err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {sweep}: axes: {axis}: "), err
    assert "printable" in err[0]


@pytest.mark.parametrize("name", [5, "", "  "])
def test_a_gpu_name_axis_value_no_cluster_can_take_is_refused(tmp_path, capsys, name):
    # listed as a valid point; each such point failed when run on "gpu.name: must be the GPU's name"
    sweep = _sweep(tmp_path, {"cluster.gpu.name": ["H100-SXM5-80GB", name]})
    err = error_lines(capsys, ["sweep", str(sweep), "--list"])
    assert len(err) == 1 and err[0].startswith(f"error: {sweep}: axes: cluster.gpu.name: "), err
    assert "the GPU's name on one line" in err[0]


@pytest.mark.parametrize(("memory", "capacity", "shown"), [
    (80.04, 80, "80.04 GiB of 80 GiB (DOES NOT FIT)"),  # read "80.0 GiB of 80 GiB (DOES NOT FIT)"
    (79.96, 80, "79.96 GiB of 80 GiB (fits)"),  # read "80.0 GiB of 80 GiB (fits)"
    (80.0, 80, "80.0 GiB of 80 GiB (fits)"),
    (80.0004, 80, "80.0004 GiB of 80 GiB (DOES NOT FIT)"),
    (61.98, 80, "62.0 GiB of 80 GiB (fits)"),
])
def test_the_memory_line_stands_on_the_side_of_the_capacity_its_verdict_says(memory, capacity, shown):
    from simpy_astra.workloads.megatron.report import TrainingFigures

    figures = TrainingFigures(iteration_time_ns=10**9, tflops_per_gpu=100.0, mfu=0.3, tokens_per_s_per_gpu=1e3,
                              memory_parts_gib={"weights": memory}, capacity_gib=capacity)
    assert figures.lines()[1] == f"memory per GPU about {shown}"


def test_a_network_of_another_size_than_the_cluster_names_both(tmp_path, capsys):
    """cluster.gpus 16 beside a network of 8 NPUs: the error said 'cluster.gpus is 8' (the
    network's count, under the cluster's name) and sent the user to the generator."""
    from simpy_astra.cli.main import EXIT_INPUT_ERROR, main

    path = tmp_path / "s.yaml"
    path.write_text("workload: {generate: microbench, collective: all_reduce, size: 1048576}\n"
                    "cluster: {preset: dgx-h100, gpus: 16}\n"
                    "network: {topology: [Ring], npus_count: [8], bandwidth: [50], latency: [500]}\n")
    assert main(["run", str(path), "--quiet"]) == EXIT_INPUT_ERROR
    assert capsys.readouterr().err.strip() == (
        f"error: {path}: network: has 8 NPUs, cluster.gpus is 16; make them one count (or leave out network: "
        f"the cluster builds its own)")


def test_a_report_that_names_a_figure_twice_is_refused(tmp_path, capsys):
    """``report: [finish_ns, finish_ns]`` showed the column twice in the summary."""
    from simpy_astra.cli.main import EXIT_INPUT_ERROR, main

    base = tmp_path / "base.yaml"
    base.write_text("workload: {generate: microbench, collective: all_reduce, size: 1048576, num_npus: 4}\n"
                    "system: {all-reduce-implementation: [ring]}\n"
                    "network: {topology: [Ring], npus_count: [4], bandwidth: [50], latency: [500]}\n")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("name: s\nbase: base.yaml\naxes: {network.bandwidth: [50, 100]}\n"
                     "report: [finish_ns, finish_ns]\n")
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out"), "--list"]) == EXIT_INPUT_ERROR
    assert capsys.readouterr().err.strip() == (
        f"error: {sweep}: field 'report' names 'finish_ns' twice; list each figure once")


def test_a_file_where_the_sweep_keeps_its_points_is_named(tmp_path, capsys):
    """A file named ``points`` in --out: the error read 'cannot write OUT/points (File exists)'."""
    from simpy_astra.cli.main import EXIT_INPUT_ERROR, main

    (tmp_path / "base.yaml").write_text(
        "workload: {generate: microbench, collective: all_reduce, size: 1048576, num_npus: 4}\n"
        "system: {all-reduce-implementation: [ring]}\n"
        "network: {topology: [Ring], npus_count: [4], bandwidth: [50], latency: [500]}\n")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("name: s\nbase: base.yaml\naxes: {network.bandwidth: [50, 100]}\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "points").write_text("")
    assert main(["sweep", str(sweep), "--out", str(out)]) == EXIT_INPUT_ERROR
    assert capsys.readouterr().err.strip().endswith(
        f"error: --out: {out / 'points'} is a file where the sweep keeps its points' scenarios (a folder); "
        f"move the file, or choose another --out")


def test_a_node_rate_in_bits_per_second_is_a_unit_slip(tmp_path, capsys):
    """``inter_node_gbps: 200e9`` (200 Gb/s written in bit/s) ran, its NICs 10^9 times too fast:
    the bound was 10^12 Gb/s a node. Now at most 10^7 (10 Pb/s, 1,500 times a DGX H100's 6.4 Tb/s)."""
    from simpy_astra.cli.main import EXIT_INPUT_ERROR, main

    path = tmp_path / "s.yaml"
    path.write_text("workload: {generate: microbench, collective: all_reduce, size: 1048576}\n"
                    "cluster: {preset: dgx-h100, gpus: 16, inter_node_gbps: 200e9}\n")
    assert main(["run", str(path), "--quiet"]) == EXIT_INPUT_ERROR
    assert capsys.readouterr().err.strip() == (
        f"error: {path}: cluster.inter_node_gbps: must be between 0.001 and 1e+07 (Gb/s per node, not bit/s; "
        f"got 200000000000.0)")
