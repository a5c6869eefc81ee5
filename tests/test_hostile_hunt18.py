"""An eighteenth hunt for inputs that ran as something other than what they say: each is now
refused in one line naming the file, the field and the fix, warned of, or runs as written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main
from tests.scenario_files import DEFAULT, SCENARIOS, write_yaml
from tests.scenario_files import TINY_GPT_ARGS as ARGS
from tests.test_hostile_commands import A100, _calibrate

RING4 = {"topology": ["Ring"], "npus_count": [4], "bandwidth": [50.0], "latency": [500.0]}


def _error(capsys, argv: list[str]) -> str:
    """The one line a command that refuses its input (exit status 2) writes to stderr."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.mark.parametrize(("every", "fix"), [("1.5", "write 2"), ("0.5", "write 0 or 2"), ("2.0", "write 2")])
def test_a_fraction_for_hold_out_every_is_told_a_value_it_takes(tmp_path, capsys, every, fix):
    # 1.5 was told 'write 1 or 2', and 1 was then refused: the fix named a value the flag refuses
    line = _error(capsys, _calibrate(tmp_path, "--hold-out-every", every))
    assert "--hold-out-every" in line and fix in line and "write 1 " not in line, line


@pytest.mark.parametrize("every", ["1", "-2"])
def test_a_hold_out_every_it_refuses_is_refused_as_the_flag(tmp_path, capsys, every):
    line = _error(capsys, _calibrate(tmp_path, "--hold-out-every", every))
    assert "--hold-out-every" in line and "0 (fit every size) or 2 or more" in line, line


@pytest.mark.parametrize("name", ["system.endpoint-delay", "backend", "network"])
def test_a_bundle_axis_named_as_a_field_is_refused(tmp_path, capsys, name):
    # results.csv had a column 'system.endpoint-delay' holding 'slow' and 'fast', the bundles'
    # names, while neither bundle set the endpoint delay
    sweep = write_yaml(tmp_path, {"base": str(SCENARIOS / "default.yaml"), "axes": {name: {"named": {
        "slow": {"network.bandwidth": 25}, "fast": {"network.bandwidth": 100}}}}}, "sweep.yaml")
    line = _error(capsys, ["sweep", sweep, "--list"])
    assert f"axes: {name}:" in line and "bundle" in line and "machine" in line, line


def test_a_bundle_axis_named_as_no_field_runs(tmp_path, capsys):
    sweep = write_yaml(tmp_path, {"base": str(SCENARIOS / "default.yaml"), "axes": {"machine": {"named": {
        "slow": {"network.bandwidth": 25}, "fast": {"network.bandwidth": 100}}}}}, "sweep.yaml")
    assert main(["sweep", sweep, "--list"]) == 0
    assert "machine=slow" in capsys.readouterr().out


#: a generator of one's own that writes the comm-group JSON its ``groups`` parameter gives
_GROUPS_GENERATOR = '''
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.types import COMP_NODE


def gen(params, prefix):
    for rank in range(4):
        write_et(f"{prefix}.{rank}.et", [make_node(1, "fwd", COMP_NODE, duration_micros=1)])
    with open(prefix + ".json", "w") as f:
        f.write(params["groups"])
    return prefix + ".json"
'''


@pytest.mark.parametrize(("groups", "problem"), [('{"1": [0, 1, 9]}', "lists 9"),
                                                 ('{"1": [0, 1}', "invalid JSON")])
def test_a_bad_comm_group_json_a_users_generator_wrote_names_the_generator(tmp_path, capsys, monkeypatch,
                                                                           groups, problem):
    # the error named only the cache's file: the user never wrote it, and deleting it (the
    # fix of a corrupt cache entry) would write it again
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    (tmp_path / "groups_gen18.py").write_text(_GROUPS_GENERATOR)
    scenario = write_yaml(tmp_path, dict(DEFAULT, network=RING4, workload={"generate": "groups_gen18:gen",
                                                                           "groups": groups}))
    line = _error(capsys, ["run", scenario])
    assert f"{scenario}: workload.generate: generator 'groups_gen18:gen' wrote {tmp_path / 'cache'}" in line
    assert problem in line and "fix the generator" in line, line


def test_a_bad_comm_group_json_of_a_jobs_generator_names_the_job(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    (tmp_path / "groups_gen18j.py").write_text(_GROUPS_GENERATOR)
    job = {"name": "a", "workload": {"generate": "groups_gen18j:gen", "groups": '{"1": [0, 5]}'},
           "npus": [0, 1, 2, 3]}
    doc = {k: v for k, v in DEFAULT.items() if k != "workload"}
    scenario = write_yaml(tmp_path, dict(doc, network=RING4, jobs=[job]))
    line = _error(capsys, ["run", scenario])
    assert f"{scenario}: jobs[0].workload.generate: generator 'groups_gen18j:gen' wrote" in line
    assert "lists 5, which is not a rank of the job" in line and "fix the generator" in line, line


@pytest.mark.parametrize("scenario", ["transformer_llama_16npus.yaml", "two_llm_jobs_fat_tree.yaml"])
def test_a_workload_cache_under_a_folder_named_empty_keeps_its_comm_groups(tmp_path, capsys, monkeypatch,
                                                                        scenario):
    # ASTRA-sim reads a comm-group path holding 'empty' as 'no groups'; the generated groups in
    # a cache under ~/empty_runs were dropped, and the run stopped on the cache's trace naming a
    # group it did not define
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "empty_cache"))
    assert main(["run", str(SCENARIOS / scenario), "--quiet"]) == 0
    assert capsys.readouterr().out.startswith("iteration time ")


#: a collective and a module of one's own that raise what is no Exception
_BASE_RAISERS = '''
class Abort(BaseException):
    pass


def abort(ctx):
    yield ctx.endpoint(reduce_bytes=0)
    raise Abort("stop here")


def generator_exit(ctx):
    yield ctx.endpoint(reduce_bytes=0)
    raise GeneratorExit
'''


def _simple_ring(tmp_path: Path, algorithm: str) -> str:
    doc = yaml.safe_load((SCENARIOS.parent / "examples" / "simple_ring.yaml").read_text())
    doc["system"]["all-reduce-implementation"] = [algorithm]
    return write_yaml(tmp_path, doc)


@pytest.mark.parametrize(("fn", "raised"), [("abort", "Abort: stop here"), ("generator_exit", "GeneratorExit")])
def test_a_users_collective_raising_no_exception_is_named_as_theirs(tmp_path, capsys, fn, raised):
    # a BaseException of their own, or GeneratorExit, passed `except Exception`: a Python traceback
    (tmp_path / "raisers18.py").write_text(_BASE_RAISERS)
    line = _error(capsys, ["run", _simple_ring(tmp_path, f"raisers18:{fn}"), "--quiet"])
    assert f"'raisers18:{fn}' raised {raised}" in line and "raisers18.py:" in line, line


def test_a_plugin_module_raising_no_exception_is_named_as_theirs(tmp_path, capsys, monkeypatch):
    (tmp_path / "raises_at_import18.py").write_text("raise GeneratorExit\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    line = _error(capsys, ["run", str(SCENARIOS / "default.yaml"), "--plugin", "raises_at_import18", "--quiet"])
    assert "'raises_at_import18'" in line and "raised GeneratorExit" in line, line


def test_a_sweep_point_whose_collective_raises_no_exception_fails_alone(tmp_path, capsys):
    (tmp_path / "raisers18s.py").write_text(_BASE_RAISERS)
    _simple_ring(tmp_path, "ring")
    sweep = write_yaml(tmp_path, {"base": "s.yaml", "axes": {
        "system.all-reduce-implementation": ["ring", "raisers18s:abort"]}}, "sweep.yaml")
    assert main(["sweep", sweep, "--out", str(tmp_path / "out")]) == 0
    rows = (tmp_path / "out" / "results.csv").read_text()
    assert ",ok," in rows and "raised Abort: stop here" in rows, rows


def _two_jobs(tmp_path: Path) -> str:
    job = {"generate": "microbench", "collective": "all_reduce", "size": 65536, "num_npus": 4}
    return write_yaml(tmp_path, {"system": DEFAULT["system"], "backend": "congestion_aware", "network": {
        "topology": ["Switch"], "npus_count": [8], "bandwidth": [50.0], "latency": [500.0]}, "jobs": [
        {"name": "a", "workload": job, "placement": "contiguous"},
        {"name": "b", "workload": job, "placement": "strided", "start_ns": 1000}]}, "jobs.yaml")


@pytest.mark.parametrize(("axis", "said"), [
    ("jobs.0.workload.sizee", "generate microbench takes no parameter 'sizee'"),
    ("jobs.0.systemm", "did you mean 'jobs.0.system'?"),
    ("jobs.0.system.endpoint-delay", "job a has no system of its own"),
    ("jobs.0.npus", "job a has placement in the base"),
    ("workload.size", "sweep a job's field, e.g. 'jobs.0.workload.size'"),
])
def test_an_axis_on_a_job_that_every_point_would_fail_on_is_refused(tmp_path, capsys, axis, said):
    # each was listed as a point of its own and failed at every one alike
    _two_jobs(tmp_path)
    values = [[0, 1, 2, 3], [4, 5, 6, 7]] if axis.endswith("npus") else [1, 2]
    sweep = write_yaml(tmp_path, {"base": "jobs.yaml", "axes": {axis: values}}, "sweep.yaml")
    line = _error(capsys, ["sweep", sweep, "--list"])
    assert f"axes: {axis}:" in line and said in line, line


def test_an_axis_on_a_job_of_a_one_workload_base_is_refused(tmp_path, capsys):
    sweep = write_yaml(tmp_path, {"base": str(SCENARIOS / "default.yaml"), "axes": {"jobs.0.start_ns": [0, 10]}},
                       "sweep.yaml")
    line = _error(capsys, ["sweep", sweep, "--list"])
    assert "axes: jobs.0.start_ns:" in line and "runs one workload, not jobs:" in line, line


def test_axes_on_a_jobs_fields_that_it_reads_are_listed(tmp_path, capsys):
    _two_jobs(tmp_path)
    sweep = write_yaml(tmp_path, {"base": "jobs.yaml", "axes": {"jobs.0.workload.size": [1024, 2048],
                                                                "jobs.1.placement": ["contiguous", "strided"]}},
                       "sweep.yaml")
    assert main(["sweep", sweep, "--list"]) == 0
    out = capsys.readouterr().out
    assert "4 points" in out and "will fail" not in out, out


@pytest.mark.parametrize(("memory", "unread"), [
    ({"memory-type": "NO_MEMORY_EXPANSION", "remote-mem-bw": 10}, "remote-mem-bw"),
    ({"memory-type": "MEMORY_POOL", "num-nodes": 2, "remote-mem-bw": 10}, "num-nodes"),
])
def test_a_remote_memory_field_its_type_never_reads_is_warned_of(tmp_path, capsys, memory, unread):
    # the run went on as if the bandwidth were used: NO_MEMORY_EXPANSION reads no bandwidth
    scenario = write_yaml(tmp_path, dict(DEFAULT, workload=str(SCENARIOS / "workloads/step_8npus_1MB/step"),
                                         remote_memory=memory))
    assert main(["run", scenario, "--quiet"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert f"remote_memory: field '{unread}' is accepted but changes nothing: {memory['memory-type']} never reads" \
        in err, err


def test_a_remote_memory_whose_type_reads_every_field_says_nothing(tmp_path, capsys):
    memory = {"memory-type": "PER_NODE_MEMORY_EXPANSION", "num-nodes": 1, "num-npus-per-node": 8,
              "remote-mem-latency": 10, "remote-mem-bw": 10}
    scenario = write_yaml(tmp_path, dict(DEFAULT, workload=str(SCENARIOS / "workloads/step_8npus_1MB/step"),
                                         remote_memory=memory))
    assert main(["run", scenario, "--quiet"]) == 0
    assert "remote_memory" not in capsys.readouterr().err


def _group_traces(tmp_path: Path, groups_of_rank) -> str:
    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.types import ALL_REDUCE, COMM_COLL_NODE

    (tmp_path / "g").mkdir()
    for rank in range(4):
        write_et(str(tmp_path / "g" / f"t.{rank}.et"), [make_node(1, "ar", COMM_COLL_NODE, attrs={
            "is_cpu_op": False, "comm_type": ALL_REDUCE, "comm_size": 1024, "pg_name": groups_of_rank(rank)})])
    return str(tmp_path / "g" / "t")


def test_a_group_the_scenarios_comm_groups_lack_is_told_the_groups_given(tmp_path, capsys):
    # the fix was '--comm-group-configuration', a flag the scenario's user never gave, beside
    # comm_groups that were given
    workload = _group_traces(tmp_path, lambda rank: "1" if rank < 2 else "2")
    scenario = write_yaml(tmp_path, dict(DEFAULT, network=RING4, workload=workload, comm_groups={"1": [0, 1]}))
    line = _error(capsys, ["run", scenario, "--quiet"])
    assert "communicator group 2 is not defined; the communicator groups given define 1: add it to them" in line


def test_a_group_without_comm_groups_is_told_where_groups_go(tmp_path, capsys):
    workload = _group_traces(tmp_path, lambda rank: "1")
    scenario = write_yaml(tmp_path, dict(DEFAULT, network=RING4, workload=workload))
    line = _error(capsys, ["run", scenario, "--quiet"])
    assert "no communicator groups are given: give them (a scenario's comm_groups" in line, line


def test_an_all_reduce_in_a_group_of_one_is_named_with_its_article(tmp_path, capsys):
    workload = _group_traces(tmp_path, lambda rank: str(rank + 1))
    scenario = write_yaml(tmp_path, dict(DEFAULT, network=RING4, workload=workload,
                                         comm_groups={str(r + 1): [r] for r in range(4)}))
    line = _error(capsys, ["run", scenario, "--quiet"])
    # "an all_reduce of 256-byte chunks has no dimension to run on (every involved dimension, or
    # its communicator group, has one NPU)": which of the two, and what to change, went unsaid
    assert line.endswith("t.0.et: node 1: pg_name '1' is communicator group 1 [0], of one NPU, so an all_reduce "
                         "has no other NPU to run with (the reference never finishes it); give group 1 two or "
                         "more NPUs, or leave out the node's pg_name"), line


def test_an_all_reduce_on_no_involved_dimension_names_involved_dim(tmp_path, capsys):
    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.types import ALL_REDUCE, COMM_COLL_NODE

    (tmp_path / "g").mkdir()
    for rank in range(4):
        write_et(str(tmp_path / "g" / f"t.{rank}.et"), [make_node(1, "ar", COMM_COLL_NODE, attrs={
            "is_cpu_op": False, "comm_type": ALL_REDUCE, "comm_size": 1024, "involved_dim": [False, True]})])
    scenario = write_yaml(tmp_path, dict(DEFAULT, network=RING4, workload=str(tmp_path / "g" / "t")))
    line = _error(capsys, ["run", scenario, "--quiet"])
    assert line.endswith("t.0.et: node 1: involved_dim [false, true] marks none of the 1 dimension(s) an "
                         "all_reduce runs over, so it has no other NPU to run with (the reference never "
                         "finishes it); mark one true, or leave out involved_dim (all dimensions)"), line


@pytest.mark.parametrize(("axes", "name"), [
    ({"network.bandwidth": {"values": [25, 50], "as": "for"}}, "for"),
    ({"network.bandwidth": {"values": [25, 50], "as": "min"}}, "min"),
    ({"if": {"named": {"slow": {"network.bandwidth": 25}, "fast": {"network.bandwidth": 50}}}}, "if"),
])
def test_an_axis_named_as_a_keyword_or_a_function_of_expressions_is_refused(tmp_path, capsys, axes, name):
    # 'as: for' was taken, and every constraint naming it was 'invalid syntax'; 'min' hid the function
    sweep = write_yaml(tmp_path, {"base": str(SCENARIOS / "default.yaml"), "axes": axes}, "sweep.yaml")
    line = _error(capsys, ["sweep", sweep, "--list"])
    assert f"its name in expressions, '{name}', is a" in line and f"{name}_value" in line, line


def _validate(tmp_path: Path, *extra: str) -> list[str]:
    from tests.test_hostile_commands import A100

    out = tmp_path / "o"
    return ["validate", str(A100 / "all_reduce.log"), "--network", str(out / "network.yml"), "--system",
            str(out / "system.json"), "--out", str(tmp_path / "v"), *extra]


@pytest.mark.parametrize("flag", ["--holdout", "--regimes"])
def test_calibrates_network_yaml_given_for_its_json_record_is_told_which_file(tmp_path, capsys, flag):
    # it was 'invalid JSON at line 1, column 1: ... JSON has no comments: remove it'
    assert main(_calibrate(tmp_path, "--hold-out-every", "2")) == 0
    capsys.readouterr()
    line = _error(capsys, _validate(tmp_path, flag, str(tmp_path / "o" / "network.yml")))
    wanted = "calibration.json" if flag == "--holdout" else "regimes.json"
    assert f"{flag}: is not a JSON object, so not calibrate's {wanted}" in line and "no comments" not in line, line


def test_a_holdout_of_an_out_of_place_fit_beside_in_place_times_is_refused(tmp_path, capsys):
    # its 'fitted' rows were scored on in-place times the fit never saw
    assert main(_calibrate(tmp_path, "--hold-out-every", "2")) == 0
    capsys.readouterr()
    line = _error(capsys, _validate(tmp_path, "--holdout", str(tmp_path / "o" / "calibration.json"), "--in-place"))
    assert "its fit is of the out-of-place times and validate compares the in-place ones" in line, line
    assert "drop --in-place" in line


def test_fold_symmetry_on_for_a_scenario_of_jobs_is_refused(tmp_path, capsys):
    # folding was dropped with a note, which --quiet hid: the run asked for in words did not fold
    line = _error(capsys, ["run", _two_jobs(tmp_path), "--fold-symmetry", "on", "--quiet"])
    assert "--fold-symmetry on: a scenario with jobs: runs unfolded" in line, line


def test_a_scenarios_fold_symmetry_true_beside_jobs_is_refused(tmp_path, capsys):
    doc = yaml.safe_load(Path(_two_jobs(tmp_path)).read_text())
    line = _error(capsys, ["run", write_yaml(tmp_path, dict(doc, fold_symmetry=True)), "--quiet"])
    assert "field 'fold_symmetry': a scenario with jobs: runs unfolded" in line, line


def test_isolation_under_quiet_without_json_out_is_refused(tmp_path, capsys):
    # every job ran again alone, and nothing showed its slowdown
    line = _error(capsys, ["run", _two_jobs(tmp_path), "--isolation", "--quiet"])
    assert "--isolation: each job's slowdown is printed in the jobs table, which --quiet leaves out" in line, line


def test_isolation_under_quiet_writes_the_slowdowns_to_json_out(tmp_path, capsys):
    import json

    out = tmp_path / "f.json"
    assert main(["run", _two_jobs(tmp_path), "--isolation", "--quiet", "--json-out", str(out)]) == 0
    assert json.loads(out.read_text())["jobs"]["b"]["slowdown"] == 1.0


def test_an_axis_called_as_a_megatron_argument_it_does_not_set_is_refused(tmp_path, capsys):
    # 'tensor_model_parallel_size == 1' read the GPU count of this axis (8, 16), not the points'
    # tp (1), and left no point to run

    write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": ARGS},
                          "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}, "base.yaml")
    sweep = write_yaml(tmp_path, {"base": "base.yaml", "axes": {"cluster.gpus": {
        "values": [8, 16], "as": "tensor_model_parallel_size"}}, "constraints": ["tensor_model_parallel_size == 1"]},
                       "sweep.yaml")
    line = _error(capsys, ["sweep", sweep, "--list"])
    assert "axes: cluster.gpus: its name in expressions, 'tensor_model_parallel_size', is what they call a " \
           "Megatron argument" in line, line


def test_an_axis_on_a_megatron_argument_may_keep_its_name(tmp_path, capsys):

    write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": ARGS},
                          "cluster": {"preset": "dgx-a100-80gb", "gpus": 8}}, "base.yaml")
    sweep = write_yaml(tmp_path, {"base": "base.yaml", "axes": {"workload.args.tensor-model-parallel-size": {
        "values": [1, 2], "as": "tensor_model_parallel_size"}}}, "sweep.yaml")
    assert main(["sweep", sweep, "--list"]) == 0
    assert "tensor_model_parallel_size=2" in capsys.readouterr().out


@pytest.mark.parametrize(("extra", "why"), [((), "the logs (all_reduce) copy nothing"),
                                            (("--in-place",), "in-place times copy nothing")])
def test_a_gpu_memory_rate_nothing_reads_is_warned_of(tmp_path, capsys, extra, why):
    # calibrate took --gpu-memory-bw beside an all-reduce log and said nothing: no figure read it
    from tests.wrapped_lines import plain

    assert main(_calibrate(tmp_path, "--gpu-memory-bw", "100", *extra)) == 0
    out = plain(capsys.readouterr().out)
    assert f"warning: --gpu-memory-bw changes nothing: only the own-chunk copy of an out-of-place all_gather or " \
           f"all_to_all log reads it, and {why}; remove it" in out, out


def test_comm_groups_beside_a_generator_that_writes_its_own_are_refused(tmp_path, capsys, monkeypatch):
    # they replaced the transformer's tp/dp/pp groups in silence, and the run stalled with a
    # page of unmatched messages that named neither
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    doc = yaml.safe_load((SCENARIOS / "transformer_llama_16npus.yaml").read_text())
    scenario = write_yaml(tmp_path, dict(doc, comm_groups={"1": list(range(16))}))
    line = _error(capsys, ["run", scenario, "--quiet"])
    assert f"{scenario}: field 'comm_groups': generate transformer writes its own communicator groups" in line


def test_a_jobs_comm_groups_beside_a_generator_that_writes_its_own_are_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    doc = yaml.safe_load((SCENARIOS / "two_llm_jobs_fat_tree.yaml").read_text())
    doc["jobs"][1]["comm_groups"] = {"1": [0, 1]}
    line = _error(capsys, ["run", write_yaml(tmp_path, doc), "--quiet"])
    assert "jobs[1].comm_groups: the job's generated workload writes its own communicator groups" in line, line


def test_a_broadcast_without_a_duration_is_warned_of(tmp_path, capsys):
    # a 1 MiB broadcast ran in 1 ns without a word: ASTRA-sim (and so the run) replays it
    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.types import BROADCAST, COMM_COLL_NODE

    (tmp_path / "b").mkdir()
    for rank in range(4):
        write_et(str(tmp_path / "b" / f"t.{rank}.et"), [make_node(1, "bcast", COMM_COLL_NODE, attrs={
            "is_cpu_op": False, "comm_type": BROADCAST, "comm_size": 1 << 20})])
    scenario = write_yaml(tmp_path, dict(DEFAULT, network=RING4, workload=str(tmp_path / "b" / "t")))
    assert main(["run", scenario, "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("iteration time 1 ns")  # the reference's figure, kept
    assert "1 of 1 BROADCAST collective(s) record no duration" in " ".join(captured.err.split())


@pytest.mark.parametrize(("cluster", "key", "why"), [
    ({"nccl_algo": "ring", "nccl_tree_efficiency": 0.3}, "nccl_tree_efficiency", "nccl_algo forces ring"),
    ({"nccl_algo": "tree", "nccl_nvls_efficiency": 0.3}, "nccl_nvls_efficiency", "nccl_algo forces tree"),
    ({"nvls": False, "nccl_nvls_efficiency": 0.3}, "nccl_nvls_efficiency", "nvls is false"),
])
def test_an_algorithms_fitted_share_beside_another_forced_is_said(tmp_path, capsys, cluster, key, why):
    # the step is the same with or without it (only the forced algorithm's all-reduce is timed):
    # said, not refused, since a calibrated cluster keeps every share and a sweep over nccl_algo
    # gives them to every point

    # tp 1: a job of all-reduces alone (at tp > 1 each micro-batch's batch is broadcast over tp,
    # which NCCL's tree cannot run: a forced tree is refused there, batch_fetch)
    args = ARGS
    scenario = write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": ARGS},
                                     "cluster": {"preset": "dgx-h100", "gpus": 16, **cluster}})
    assert main(["run", scenario, "--quiet"]) == 0
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert f"cluster.{key} changes nothing here: it is read only where NCCL runs" in err, err
    assert why in err
    (tmp_path / "b").mkdir()
    without = write_yaml(tmp_path / "b", {"workload": {"generate": "megatron", "args": args},
                                          "cluster": {"preset": "dgx-h100", "gpus": 16,
                                                      **{k: v for k, v in cluster.items() if k != key}}})
    assert main(["run", without, "--quiet"]) == 0
    assert capsys.readouterr().out == captured.out  # the same step without the key


@pytest.mark.parametrize(("codec", "name"), [("utf-16", "UTF-16LE"), ("utf-32", "UTF-32LE")])
def test_a_scenario_saved_as_utf16_names_its_encoding_and_the_fix(tmp_path, capsys, codec, name):
    # it read 'is not UTF-8 text (byte 0)': true, but not what the file is or how to re-save it
    path = tmp_path / "s.yaml"
    path.write_bytes((SCENARIOS / "default.yaml").read_text().encode(codec))
    line = _error(capsys, ["run", str(path)])
    assert name in line and "save it as UTF-8" in line, line


def test_an_nccl_log_saved_as_utf16_names_its_encoding(tmp_path, capsys):
    # PowerShell's > writes UTF-16: read with errors replaced, it was 'no nccl-tests result table'
    log = tmp_path / "all_reduce.log"
    log.write_bytes((A100 / "all_reduce.log").read_text().encode("utf-16"))
    argv = _calibrate(tmp_path)
    argv[1] = str(log)
    line = _error(capsys, argv)
    assert "UTF-16LE" in line and "save it as UTF-8" in line, line


def test_an_out_folder_that_cannot_be_made_at_an_absolute_path_gives_no_relative_hint(tmp_path, capsys):
    # /proc takes no new folders: it read '(does not exist (relative paths resolve from CWD))',
    # sending a user to look in the working folder for a path that is not relative
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc")
    argv = _calibrate(tmp_path)
    argv[argv.index("--out") + 1] = "/proc/simpy-astra-x"
    line = _error(capsys, argv)
    assert "relative paths" not in line and "accepts no new folders" in line, line


def test_a_missing_scenario_at_an_absolute_path_gives_no_relative_hint(tmp_path, capsys):
    line = _error(capsys, ["run", str(tmp_path / "none.yaml")])
    assert "does not exist" in line and "relative paths" not in line, line
    assert "relative paths" in _error(capsys, ["run", "no-such-scenario.yaml"])


def test_generate_output_naming_a_device_or_fifo_is_refused_before_writing(tmp_path, capsys):
    # --output /dev/null wrote /dev/null.0.et, /dev/null.1.et into /dev (and a FIFO's name wrote
    # files beside it): a prefix naming a device or FIFO is now refused, nothing written
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for prefix in ([os.devnull] if os.path.exists(os.devnull) else []) + [str(fifo)]:
        line = _error(capsys, ["generate", "microbench", "--collective", "all_reduce", "--size", "1024",
                               "--num-npus", "2", "--output", prefix])
        assert "--output" in line and ("character device" in line or "FIFO" in line), line
        assert not os.path.exists(prefix + ".0.et")


@pytest.mark.parametrize("value", [0, -1, 5])
def test_an_efficiency_out_of_range_reads_one_wording_naming_the_range(tmp_path, capsys, value):
    # 0 read 'must be a positive number (got 0)' and 5 'must be in (0, 1] (...; got 5)': one field,
    # two wordings, and only one named the range it takes
    doc = yaml.safe_load((SCENARIOS / "megatron_gpt_145b_sc21.yaml").read_text())
    doc["cluster"]["gpu"] = {"attention_efficiency": value}
    line = _error(capsys, ["run", write_yaml(tmp_path, doc)])
    assert f"attention_efficiency: must be in (0, 1] (a fraction of the tensor-core peak a fused attention " \
           f"kernel sustains; got {value})" in line, line


@pytest.mark.parametrize("jobs", [False, True])
def test_a_rank_file_that_is_a_folder_names_the_scenario_field(tmp_path, capsys, jobs):
    # it read 'workload file: .../step.3.et is a directory': neither the scenario nor its field
    folder = tmp_path / "w"
    folder.mkdir()
    for path in (SCENARIOS / "workloads" / "step_8npus_1MB").glob("step.*.et"):
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / "step.3.et").unlink()
    (folder / "step.3.et").mkdir()
    doc = dict(DEFAULT, workload="w/step")
    if jobs:
        del doc["workload"]
        doc["jobs"] = [{"name": "a", "workload": "w/step", "npus": list(range(8))}]
    line = _error(capsys, ["run", write_yaml(tmp_path, doc)])
    field = "jobs[0].workload" if jobs else "workload"
    assert f"s.yaml: {field}: NPU 3's ET file" in line and "is a directory" in line, line


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_an_output_linked_to_an_open_descriptor_is_refused_not_replaced(tmp_path, capsys):
    # --json-out /dev/stdout with stdout sent to a file wrote the JSON to a file beside the link
    # and renamed it over the link: /dev/stdout in /dev became a regular file (generate wrote
    # /dev/stdout.0.et ...). Here the link is the test's own, to a descriptor of its own file.
    with open(tmp_path / "real.txt", "w") as real:
        link = tmp_path / "out.json"
        link.symlink_to(f"/proc/self/fd/{real.fileno()}")
        line = _error(capsys, ["run", str(SCENARIOS / "default.yaml"), "--quiet", "--json-out", str(link)])
        assert f"descriptor {real.fileno()}" in line and "give a file path" in line, line
        assert link.is_symlink()
        line = _error(capsys, ["generate", "microbench", "--collective", "all_reduce", "--size", "1024",
                               "--num-npus", "2", "--output", str(link)])
        assert f"descriptor {real.fileno()}" in line and not (tmp_path / "out.json.0.et").exists(), line


def test_an_output_that_is_a_symlink_is_written_through_as_a_shell_would(tmp_path, capsys):
    # --json-out latest.json -> runs/42.json replaced the link with a file of its own and left
    # runs/42.json with the old figures; --trace-out did the same. Now the target is written.
    (tmp_path / "runs").mkdir()
    for name in ("42.json", "42.trace.json"):
        (tmp_path / "runs" / name).write_text("old")
    (tmp_path / "latest.json").symlink_to("runs/42.json")
    (tmp_path / "trace.json").symlink_to(tmp_path / "runs" / "42.trace.json")
    (tmp_path / "new.json").symlink_to("runs/43.json")  # dangling, its folder there: made
    default = str(SCENARIOS / "default.yaml")
    for flag, link in (("--json-out", "latest.json"), ("--trace-out", "trace.json"), ("--json-out", "new.json")):
        assert main(["run", default, "--quiet", flag, str(tmp_path / link)]) == 0
        assert (tmp_path / link).is_symlink() and (tmp_path / link).read_text().startswith("{")
    assert sorted(os.listdir(tmp_path / "runs")) == ["42.json", "42.trace.json", "43.json"]
    capsys.readouterr()
    (tmp_path / "gone.json").symlink_to("missing/43.json")
    line = _error(capsys, ["run", default, "--quiet", "--json-out", str(tmp_path / "gone.json")])
    assert line == (f"error: --json-out: cannot write {tmp_path / 'missing' / '43.json'}: "
                    f"{tmp_path / 'missing'} does not exist (make it first)"), line
    assert (tmp_path / "gone.json").is_symlink() and not (tmp_path / "missing").exists()


def test_a_sweeps_results_csv_that_is_a_symlink_stays_one(tmp_path):
    # results.csv linked to a kept copy became a file of its own once the sweep rewrote it (a
    # torn row, a grown header): the kept copy kept the old rows
    _simple_ring(tmp_path, "ring")
    out = tmp_path / "out"
    sweep = write_yaml(tmp_path, {"base": "s.yaml", "axes": {"network.bandwidth": [50]}}, "sweep.yaml")
    assert main(["sweep", sweep, "--out", str(out), "--no-plots"]) == 0
    (out / "results.csv").rename(tmp_path / "kept.csv")
    (out / "results.csv").symlink_to(tmp_path / "kept.csv")
    with open(tmp_path / "kept.csv", "a") as f:
        f.write("deadbeef0000,25")  # a row torn by a killed run: the file is rewritten
    wider = write_yaml(tmp_path, {"base": "s.yaml", "axes": {"network.bandwidth": [50, 100]}}, "sweep.yaml")
    assert main(["sweep", wider, "--out", str(out), "--no-plots"]) == 0
    assert (out / "results.csv").is_symlink()
    rows = (tmp_path / "kept.csv").read_text().splitlines()
    assert len(rows) == 3 and "deadbeef" not in "".join(rows), rows


@pytest.mark.parametrize("groups", [False, True])
def test_a_local_mem_bw_of_zero_warns_that_reductions_cost_nothing(tmp_path, capsys, groups):
    # local-mem-bw: 0 (typed for "unknown") ran with every reduction free without a word; ASTRA-sim
    # does the same, so the figures stay, and stderr now says so once and how to give one
    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    doc["workload"] = str(SCENARIOS / doc["workload"])
    key = "local-mem-bw"
    if groups:
        doc["system"]["npu-groups"] = [{"npus": [0, 1], "local-mem-bw": 0}]
        key = "npu-groups[0].local-mem-bw"
    else:
        doc["system"]["local-mem-bw"] = 0
    assert main(["run", write_yaml(tmp_path, doc), "--quiet"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    said = f"field '{key}' is 0, so every reduction (all-reduce, reduce-scatter) takes no time, as in ASTRA-sim"
    assert err.count(said) == 1 and "(e.g. local-mem-bw: 1600)" in err, err
    assert main(["run", str(SCENARIOS / "default.yaml"), "--quiet"]) == 0
    assert "takes no time" not in capsys.readouterr().err


def test_an_unknown_reduction_op_in_an_nccl_log_names_the_known_ones(tmp_path, capsys):
    # a data type nccl-tests does not print is refused with the known ones; an edited reduction
    # op read only "unknown reduction op 'bogus'", leaving the user to guess what it takes
    log = tmp_path / "all_reduce.log"
    log.write_text((A100 / "all_reduce.log").read_text().replace("float     sum", "float     bogus"))
    line = _error(capsys, ["calibrate", str(log), "--network", str(A100 / "network.yml"), "--out", str(tmp_path / "o")])
    assert line.startswith(f"error: {log}:") and "unknown reduction op 'bogus' (known: sum, prod, max, min" in line, line


def test_a_plugin_given_as_module_colon_name_says_to_give_the_module(tmp_path, capsys, monkeypatch):
    # --plugin algos18:fn (the form a config's fields take) read "cannot import plugin module
    # 'algos18:fn' (no module named 'algos18:fn'; searched ...)": as if the file were missing
    (tmp_path / "algos18.py").write_text("")
    monkeypatch.chdir(tmp_path)
    said = ("'algos18:fn' names one object of a module (module:NAME, as a config's fields take); a plug-in is "
            "a whole module that registers what it holds: write it as algos18")
    line = _error(capsys, ["run", str(SCENARIOS / "default.yaml"), "--plugin", "algos18:fn", "--quiet"])
    assert line == f"error: --plugin: {said}", line
    doc = dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"]), plugins=["algos18:fn"])
    line = _error(capsys, ["run", write_yaml(tmp_path, doc), "--quiet"])
    assert line.endswith(f"s.yaml: field 'plugins': {said}"), line
