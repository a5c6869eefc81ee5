"""A twenty-seventh hunt: inputs wrong in new ways, and the leftovers of the twenty-sixth. Each
test failed before its fix: a wrong success, a figure that was not the input's, a traceback, or
a message naming no place or no fix."""

from __future__ import annotations

import shutil

import pytest

from simpy_astra.cli.main import main
from simpy_astra.infra.horizon import HORIZON_NS
from tests.scenario_files import (
    DEFAULT,
    SCENARIOS,
    SMALL_GPT_ARGS,
    default_with,
    error_lines,
    megatron_sweep,
    write_yaml,
)

EXAMPLES = SCENARIOS.parent / "examples"


def _pipeline_job(tmp_path, start_ns: int) -> str:
    """A 4-stage pipeline job (examples/pipeline_gen.py: stage s finishes at about s x 11.7 us,
    the last at 45,160 ns) on 4 NPUs of an 8-NPU ring, started at ``start_ns``."""
    shutil.copy(EXAMPLES / "pipeline_gen.py", tmp_path / "pipeline_gen.py")
    network = {**DEFAULT["network"], "topology": ["Ring"], "npus_count": [8], "bandwidth": [50.0],
               "latency": [500.0]}
    job = {"name": "a", "workload": {"generate": "pipeline_gen:pipeline", "stages": 4, "size": 65536,
                                     "compute_us": 10}, "npus": [0, 1, 2, 3], "start_ns": start_ns}
    return write_yaml(tmp_path, {"system": DEFAULT["system"], "network": network,
                                 "backend": "congestion_unaware", "jobs": [job]}, f"start{start_ns}.yaml")


def test_a_job_started_too_late_is_told_the_start_its_last_npu_fits(tmp_path, capsys):
    # before: the first NPU past the horizon (stage 1, 23,440 ns) set the latest start, and the
    # start told then failed again at the last stage (45,160 ns: 4 x 10 us + 3 x 1,720 ns)
    runs_ns = 4 * 10_000 + 3 * (500 + int(65536 / 50 / 2**30 * 1e9))
    late = _pipeline_job(tmp_path, HORIZON_NS - 20_000)
    assert error_lines(capsys, ["run", late, "--quiet"])[-1].endswith(
        f"runs {runs_ns:,} ns, past 2^63 ns (292 years), the simulated time's limit; start it at most "
        f"{HORIZON_NS - runs_ns:,} ns")
    assert main(["run", _pipeline_job(tmp_path, HORIZON_NS - runs_ns), "--quiet"]) == 0
    assert main(["run", _pipeline_job(tmp_path, HORIZON_NS - runs_ns + 1), "--quiet"]) == 2


MOE_ARGS = SMALL_GPT_ARGS + (" --num-experts 4 --moe-token-dispatcher-type alltoall --disable-bias-linear "
                             "--sequence-parallel")


def test_a_sweep_over_expert_parallelism_runs_its_all_to_alls_at_each_nvlink_latency(tmp_path, capsys):
    # before: the ep=1 point (each pipeline send on its own rail: NVLink's latency unread) was
    # read for the ep=2 points too (one rank grid), so ep=2 at 1e9 ns ran once, as at 1 ns:
    # 48.5 ms for a step whose all-to-alls over NVLink take 288 s at that latency
    sweep = megatron_sweep(tmp_path, {"workload.args.--expert-model-parallel-size": [1, 2],
                                      "cluster.nvlink_latency_ns": [1, 10**9]}, args=MOE_ARGS)
    assert main(["sweep", sweep, "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "3 points" and [line.split()[1:] for line in out[1:4]] == [
        ["ep=1", "nvlink_latency_ns=1"], ["ep=2", "nvlink_latency_ns=1"], ["ep=2", "nvlink_latency_ns=1000000000"]]


# ---------------------------------------------------------------- the m,n,k file's extra columns

def _mnk(tmp_path, rows: str) -> str:
    path = tmp_path / "layers.csv"
    path.write_text("Layer,m,n,k\n" + rows)
    return str(path)


def test_an_mnk_row_of_six_columns_is_refused_naming_the_line(tmp_path):
    # before: read as name,m,n,k with the rest ignored; ASTRA-sim's generator overwrites a row's
    # last column with --parallel and reads its 5th as the layer's strategy (MODEL here, under
    # --parallel DATA), or stops on a 5th that names none
    from simpy_astra.errors import InputError
    from simpy_astra.workloads.gemm_layers import read_mnk

    path = _mnk(tmp_path, "L0,1024,128,512\nL1,1024,128,512,MODEL,x\n")
    with pytest.raises(InputError) as err:
        read_mnk(path)
    assert str(err.value) == (f"{path}:3: layer 'L1' has 6 columns, past Layer,m,n,k and its parallelism; "
                              f"remove those past the 5th")
    # a spreadsheet's trailing empty cells are no columns
    assert [layer.k for layer in read_mnk(_mnk(tmp_path, "L0,1024,128,512,,\n"))] == [512]


def test_an_mnk_fifth_column_another_strategy_names_is_warned_of(tmp_path, capsys, monkeypatch):
    # before: silent; the tutorial's generator overwrites it with --parallel, as we do, so the
    # MODEL the file asks of L1 and L2 runs as DATA
    import sys

    from simpy_astra.workloads.generated import prepare
    from simpy_astra.workloads.scalesim_timing import MISSING_EXTRA

    path = _mnk(tmp_path, "L0,1024,128,512,DATA\nL1,1024,128,512,MODEL\nL2,64,64,64,MODEL\n")
    said = (f"{path}:3: layer L1's 5th column says MODEL (and 1 more layer), but parallel DATA decides every "
            f"layer's, as ASTRA-sim's generator does (per-layer strategies, its HYBRID_CUSTOMIZED, are not "
            f"generated here); remove the column, or set parallel")
    layout = prepare({"generate": "gemm", "mnk": path, "parallel": "DATA", "num_npus": 4}).layout()
    assert layout.warnings == (said,)
    assert prepare({"generate": "gemm", "mnk": path, "parallel": "MODEL", "num_npus": 4}).layout().warnings == (
        f"{path}:2: layer L0's 5th column says DATA, but parallel MODEL decides every layer's, as ASTRA-sim's "
        f"generator does (per-layer strategies, its HYBRID_CUSTOMIZED, are not generated here); remove the "
        f"column, or set parallel",)
    monkeypatch.setitem(sys.modules, "scalesim", None)  # the warning comes before SCALE-Sim is asked
    assert main(["generate", "gemm", "--mnk", path, "--parallel", "DATA", "--num-npus", "4", "--output",
                 str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err
    assert " ".join(err.split()) == f"warning: {said} error: {MISSING_EXTRA}"
    assert all(len(line) <= 80 or path in line for line in err.splitlines()[:-1]), err


# ---------------------------------------------------------------- names in a wide script

def _columns(line: str) -> int:
    """Columns a line takes in a terminal: an East Asian wide character two (UAX #11)."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def test_a_table_of_job_names_in_chinese_fits_80_columns_with_its_figures_in_line(monkeypatch):
    # before: a name was counted by len(), half its width: the jobs table ran to 83 columns
    # and the links' 'bytes by job' to 115, each figure out of line with its header
    import io

    from simpy_astra.report.output import Output

    monkeypatch.delenv("COLUMNS", raising=False)
    names = ["训练任务甲号" * 3, "训练任务乙号" * 3]
    out = io.StringIO()
    Output(out, rich=False).table("jobs", ["job", "NPUs", "start (ns)", "finished (ns)", "exposed comm (ns)"],
                                  [[n, "0,2,4,6,8,10,12,14", "50,000", "14,891,000", "13,192,716"] for n in names],
                                  ["left", "left", "right", "right", "right"])
    lines = out.getvalue().splitlines()
    assert max(map(_columns, lines)) <= 80, lines
    # each figure ends where its header does
    for header, row in ((lines[1], lines[2]), (lines[-3], lines[-2])):
        assert _columns(header) == _columns(row), (header, row)
    out = io.StringIO()
    Output(out, rich=False).table("links", ["link", "bytes by job"],
                                  [["leaf0 -> spine0", ", ".join(f"{n} 694,157,312" for n in names)]],
                                  ["left", "left"])
    assert max(map(_columns, out.getvalue().splitlines())) <= 80, out.getvalue()


def test_a_warning_naming_a_job_in_chinese_wraps_within_80_columns(monkeypatch, capsys):
    from simpy_astra.report.output import say_wrapped

    monkeypatch.delenv("COLUMNS", raising=False)
    say_wrapped("warning: " + " ".join(["训练任务甲号训练任务"] * 12) + " changes nothing")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) > 2 and max(map(_columns, lines)) <= 80, lines


def test_a_word_of_wide_characters_too_long_for_a_line_is_cut_within_its_width():
    # before: textwrap cut the word after 9 stand-ins, parting the 5th character from its second
    # column: lines of 10 columns in 9, each a column over
    from simpy_astra.report.widths import wrapped

    for width in (9, 10, 79):
        lines = wrapped("训练" * 50, width, subsequent_indent="  ")
        assert "".join(line.strip() for line in lines) == "训练" * 50
        assert max(map(_columns, lines)) <= width, (width, lines)


# ---------------------------------------------------------------- a job's npu-groups

def _two_jobs_with_groups(tmp_path, own_groups: list, shared_groups: list | None = None) -> str:
    """Jobs a (NPUs 0..3, the scenario's system) and b (NPUs 4..7, its own system with
    ``own_groups``) of a small Llama step timed by the roofline."""
    import json

    system = {**DEFAULT["system"], "roofline-enabled": 1, "peak-perf": 100, "local-mem-bw": 1000}
    (tmp_path / "sys_b.json").write_text(json.dumps({**system, "npu-groups": own_groups} if own_groups else system))
    if shared_groups:
        system["npu-groups"] = shared_groups
    step = {"generate": "transformer", "model": "llama", "dp": 2, "tp": 2, "dmodel": 256, "dff": 512, "head": 4,
            "kvhead": 2, "num_stacks": 2, "seq": 128, "batch": 8, "micro_batch": 4}
    jobs = [{"name": "a", "workload": step, "npus": [0, 1, 2, 3]},
            {"name": "b", "workload": step, "npus": [4, 5, 6, 7], "system": "sys_b.json"}]
    return write_yaml(tmp_path, {"system": system, "network": DEFAULT["network"], "backend": "congestion_aware",
                                 "jobs": jobs})


def test_a_jobs_own_npu_groups_naming_its_ranks_not_its_npus_is_refused(tmp_path, capsys):
    # before: job b's system slowed 'NPUs 0..3' (its ranks, but job a's NPUs, which read the
    # scenario's system): both jobs ran 1,377,577 ns, the group changing nothing, unsaid
    path = _two_jobs_with_groups(tmp_path, [{"npus": [0, 1, 2, 3], "peak-perf": 1}])
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {tmp_path / 'sys_b.json'}: field 'npu-groups[0].npus' names NPUs 0-3, which no job on this "
        f"system runs; name physical NPUs of its jobs (b: 4-7)"]
    # the fix named runs, and slows job b alone
    assert main(["run", _two_jobs_with_groups(tmp_path, [{"npus": [4, 5, 6, 7], "peak-perf": 1}])]) == 0
    finished = {line.split()[1]: line.split()[3] for line in capsys.readouterr().out.splitlines()
                if line.startswith("job ")}
    assert int(finished["b"]) > 10 * int(finished["a"]), finished


def test_the_scenarios_npu_groups_naming_a_job_with_its_own_system_is_refused(tmp_path, capsys):
    path = _two_jobs_with_groups(tmp_path, [], shared_groups=[{"npus": [0, 4], "peak-perf": 1}])
    assert error_lines(capsys, ["run", path, "--quiet"])[-1].endswith(
        "field 'npu-groups[0].npus' names NPU 4, which no job on this system runs; name physical NPUs of its jobs "
        "(a: 0-3)")


def test_per_node_memory_serves_a_jobs_npus_at_their_own_nodes_server(tmp_path, capsys):
    # before: the node was the job's rank // num-npus-per-node, so job b's ranks 0..3 (NPUs
    # 4..7, node 1) queued behind job a's at node 0: job b finished at 800,000 ns, not 400,000
    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.types import MEM_LOAD_NODE

    for rank in range(4):  # each rank loads 10^6 bytes: 100,000 ns at 10 B/ns, four a node in turn
        write_et(str(tmp_path / f"mem.{rank}.et"),
                 [make_node(0, "load", MEM_LOAD_NODE, attrs={"is_cpu_op": False, "tensor_size": 10**6})])
    memory = {"memory-type": "PER_NODE_MEMORY_EXPANSION", "num-nodes": 2, "num-npus-per-node": 4,
              "remote-mem-latency": 0, "remote-mem-bw": 10}
    jobs = [{"name": "a", "workload": "mem", "npus": [0, 1, 2, 3]}, {"name": "b", "workload": "mem", "npus": [4, 5, 6, 7]}]
    path = write_yaml(tmp_path, {"system": DEFAULT["system"], "network": DEFAULT["network"], "remote_memory": memory,
                                 "backend": "congestion_aware", "jobs": jobs})
    assert main(["run", path]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if line.startswith("job ")] == ["job a finished, 400000 cycles",
                                                                 "job b finished, 400000 cycles"]


def test_a_sweep_of_bundles_named_in_chinese_prints_within_80_columns(tmp_path, capsys, monkeypatch):
    # before: the progress lines ran to 106 columns, the best line to 96 and --list's to 90
    # (each name counted half its width); the same names in ASCII fit
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.chdir(tmp_path)  # the paths printed short
    write_yaml(tmp_path, default_with(), "base.yaml")
    slow, fast = "第一种机器配置带宽很低延迟很高" * 2, "第二种机器配置带宽很高延迟很低" * 2
    bundles = {"named": {slow: {"network.bandwidth": 25}, fast: {"network.bandwidth": 100}}}
    write_yaml(tmp_path, {"base": "base.yaml", "axes": {"machine": bundles, "system.preferred-dataset-splits": [1, 2]}},
               "sweep.yaml")
    assert main(["sweep", "sweep.yaml", "--list"]) == 0
    assert main(["sweep", "sweep.yaml", "--out", "out", "--no-plots", "--jobs", "1"]) == 0
    captured = capsys.readouterr()
    lines = (captured.out + captured.err).splitlines()
    assert any(fast in line for line in lines) and [line for line in lines if _columns(line) > 80] == []


def test_a_pytorch_trace_that_recorded_no_operator_is_refused_not_written_empty(tmp_path, capsys):
    # before: 'wrote PREFIX.0.et (host trace)', exit 0, for an ET of no node, which every run
    # (ours, ASTRA-sim's) then refuses, naming the ET rather than the trace
    import json

    empty = {"id": 1, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 0,
             "inputs": {"values": [], "shapes": [], "types": []},
             "outputs": {"values": [], "shapes": [], "types": []}, "attrs": []}
    host = tmp_path / "host.0.json"
    host.write_text(json.dumps({"schema": "1.1.0-chakra.0.0.4", "pid": 1, "time": "now", "start_ts": 0,
                                "finish_ts": 1, "nodes": [empty]}))
    assert error_lines(capsys, ["convert", "pytorch", "--host", str(host), "--output", str(tmp_path / "w")]) == [
        f"error: {host}: records no operator (only its thread's root node): the observer was stopped before "
        f"anything ran; record the trace around a training step"]
    assert not list(tmp_path.glob("w.*"))


def test_a_jobs_text_workload_is_told_to_be_converted_first(tmp_path, capsys):
    # before: "jobs[0].workload: no ET files .../Resnet50_DataParallel.txt.0.et ...", as if the
    # .txt were a prefix, with no word of the conversion a scenario's one workload makes
    job = {"name": "a", "workload": str(SCENARIOS / "workloads" / "text" / "Resnet50_DataParallel.txt"),
           "npus": [0, 1, 2, 3]}
    other = {"name": "b", "workload": {"generate": "microbench", "collective": "all_reduce", "size": 1024,
                                       "num_npus": 4}, "npus": [4, 5, 6, 7]}
    base = {key: value for key, value in DEFAULT.items() if key != "workload"}
    path = write_yaml(tmp_path, {**base, "jobs": [job, other]})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: jobs[0].workload: a job runs ET files, not a text workload; give the PREFIX of "
        f"'simpy-astra convert text --input {job['workload']} --output PREFIX --num-npus RANKS --num-passes 1'"]


def test_a_log_of_one_size_to_hold_out_from_says_size(capsys):
    # before: "... all_reduce.log has 1 sizes of at least 17179869184 bytes ..."
    log = SCENARIOS.parent / "tests" / "data" / "nccl" / "hgx-h100-2node-ib"
    err = error_lines(capsys, ["calibrate", str(log / "all_reduce.log"), "--network", str(log / "network.yml"),
                               "--out", "unused", "--hold-out-every", "2", "--min-size", str(16 << 30)])
    assert err == [f"error: --hold-out-every 2: {log / 'all_reduce.log'} has 1 size of at least {16 << 30} bytes, "
                   f"so none would be held out; lower --min-size"]


def test_a_group_id_written_as_a_number_and_as_a_string_is_refused(tmp_path, capsys):
    # before: YAML's 1: and '1': are two keys, one id: the later group replaced the earlier,
    # in silence ('the 1 group(s) given (1)'), where a JSON file's repeated key is refused
    path = tmp_path / "s.yaml"
    path.write_text(open(write_yaml(tmp_path, default_with()))
                    .read() + "comm_groups: {1: [0, 1, 2, 3], '1': [4, 5, 6, 7]}\n")
    assert error_lines(capsys, ["run", str(path), "--quiet"]) == [
        f"error: {path}: comm_groups: group '1' is given twice (the number 1 and the string '1' are one id); keep "
        f"one"]


def test_two_bundles_whose_names_read_alike_are_refused(tmp_path, capsys):
    # before: named: {1: ..., '1': ...} gave '1 point': one bundle dropped in silence
    write_yaml(tmp_path, default_with(), "base.yaml")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("base: base.yaml\naxes:\n  machine:\n    named:\n      1: {network.bandwidth: 25}\n"
                     "      '1': {network.bandwidth: 100}\n")
    assert error_lines(capsys, ["sweep", str(sweep), "--list"]) == [
        f"error: {sweep}: axes: machine: named: '1' names two bundles (the keys 1 and '1' read as one name); give "
        f"each its own name"]
    # two such pairs: the keys named are the one name's pair (were 1 and 2, the first two of four)
    sweep.write_text("base: base.yaml\naxes:\n  machine:\n    named:\n      1: {network.bandwidth: 25}\n"
                     "      2: {network.bandwidth: 50}\n      '1': {network.bandwidth: 100}\n"
                     "      '2': {network.bandwidth: 200}\n")
    assert error_lines(capsys, ["sweep", str(sweep), "--list"]) == [
        f"error: {sweep}: axes: machine: named: '1' names two bundles (the keys 1 and '1' read as one name); give "
        f"each its own name"]


def test_a_scenarios_comm_groups_beside_jobs_is_refused(tmp_path, capsys):
    # before: read by no job (each job's groups are its own, in its ranks): the run went on in
    # silence, every collective over its job's ranks
    step = {"generate": "microbench", "collective": "all_reduce", "size": 1 << 20, "num_npus": 4}
    base = {key: value for key, value in DEFAULT.items() if key != "workload"}
    path = write_yaml(tmp_path, {**base, "comm_groups": {1: [0, 1]},
                                 "jobs": [{"name": "a", "workload": step, "npus": [0, 1, 2, 3]},
                                          {"name": "b", "workload": step, "npus": [4, 5, 6, 7]}]})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: comm_groups: read by no job; put it in one (jobs[i].comm_groups)"]


def test_a_scenarios_system_no_job_reads_is_refused(tmp_path, capsys):
    # before: with every job on a system of its own, the scenario's (64 splits here) was read
    # by none, in silence
    import json

    (tmp_path / "own.json").write_text(json.dumps(DEFAULT["system"]))
    step = {"generate": "microbench", "collective": "all_reduce", "size": 1 << 20, "num_npus": 4}
    base = {key: value for key, value in DEFAULT.items() if key != "workload"}
    jobs = [{"name": "a", "workload": step, "npus": [0, 1, 2, 3], "system": "own.json"},
            {"name": "b", "workload": step, "npus": [4, 5, 6, 7], "system": "own.json"}]
    path = write_yaml(tmp_path, {**base, "system": {**DEFAULT["system"], "preferred-dataset-splits": 64},
                                 "jobs": jobs})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: field 'system': every job gives its own system (jobs[i].system), so this one is read by "
        f"none; remove it, or a job's system: to run that job on it"]
    jobs[1].pop("system")  # job b reads it now
    assert main(["run", write_yaml(tmp_path, {**base, "jobs": jobs, "system": DEFAULT["system"]}), "--quiet"]) == 0
