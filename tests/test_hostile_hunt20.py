"""A twentieth hunt: a job that starts late, and other inputs a careless user gives. Each
test failed before its fix: a figure that wrapped, a traceback, or a run of something else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import simpy
import yaml

from simpy_astra.cli.main import main
from simpy_astra.simulation import Simulation
from tests.scenario_files import DEFAULT as DEFAULT_DOC
from tests.scenario_files import (
    SCENARIOS,
    default_with,
    error_lines,
    megatron_scenario,
    megatron_sweep,
    write_yaml,
)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = str(ROOT / "scenarios" / "default.yaml")
TWO_JOBS = ROOT / "scenarios" / "two_llm_jobs_fat_tree.yaml"


def test_an_npu_that_starts_late_reports_the_overlap_of_its_own_graph(tmp_path):
    # before: the wall time counted from 0 while compute and communication began later, so
    # GPU + Comm - wall went below zero and wrapped to 18,446,744,073,...; each job's NPU
    # overlaps its own step as it would alone (the reference subtracts from a graph at 0)
    alone = Simulation.from_scenario(DEFAULT).run()[0]
    later = Simulation.from_scenario(DEFAULT, env=simpy.Environment(initial_time=10**6)).run()[0]
    assert later.wall_time == alone.wall_time + 10**6
    assert later.overlap == alone.overlap == 0
    doc = yaml.safe_load(TWO_JOBS.read_text())
    doc["jobs"][1]["start_ns"] = 10**9  # job b waits a second for job a to finish
    (tmp_path / "late.yaml").write_text(yaml.safe_dump(doc))
    sim = Simulation.from_scenario(str(tmp_path / "late.yaml"), backend="congestion_unaware")
    reports = {r.npu_id: r for r in sim.run()}
    a, b = reports[0], reports[1]  # strided: job a on the even NPUs, b on the odd ones
    assert b.wall_time > 10**9
    assert b.overlap == a.overlap  # the same step on the same fabric, each alone
    assert 0 < b.overlap < b.times["GPU"]


@pytest.mark.parametrize("price", [1e308, 1e200])
def test_a_price_so_dear_the_total_overflows_is_refused(tmp_path, capsys, price):
    # before: the run printed "network cost: $inf" and --json-out wrote Infinity, which no
    # strict JSON reader takes
    path = write_yaml(tmp_path, default_with(cost={"link": price}))
    assert error_lines(capsys, ["run", path]) == [
        f"error: {path}: field 'cost.link' must be a price from 0 to 1e+12 in dollars per GB/s (got {price!r})"]


def test_a_packet_job_that_starts_past_two_to_the_53_ns_runs_to_its_end(tmp_path):
    # before: past 2^53 ns a float rounded a train's start + head offset down to the instant
    # its head had not yet reached, and the join event re-fired there for ever (a job with
    # start_ns: 1e17 hung the packet backend); it now runs in about 110,000 events
    doc = yaml.safe_load(TWO_JOBS.read_text())
    doc["jobs"][1]["start_ns"] = 10**17
    sim = Simulation.from_scenario(write_yaml(tmp_path, doc))
    assert sim.inputs.backend == "packet"
    for _ in range(1_000_000):  # bounded, so that a loop in one instant fails, not hangs
        if sim.finished.triggered:
            break
        sim.env.step()
    assert sim.finished.triggered
    assert sim.env.now - 10**17 < 2 * 8_268_089  # job b's step alone is 8,268,089 ns


@pytest.mark.parametrize(("kwargs", "said"), [
    ({"id": -1}, "node -1: id must be a node id"),
    ({"id": 2**64}, f"node {2**64}: id must be a node id"),
    ({"id": 1.5}, "node 1.5: id must be a node id"),
    ({"deps": [0, -3]}, "node 1: deps must list node ids"),
    ({"ctrl_deps": [2**64]}, "node 1: ctrl_deps must list node ids"),
])
def test_make_node_names_an_id_or_dependency_chakra_cannot_hold(kwargs, said):
    # before: protobuf's 'Value out of range: -1' or "'float' object cannot be interpreted
    # as an integer", naming no field of the node a user's generator built
    from simpy_astra.workloads.chakra import make_node
    from simpy_astra.workloads.chakra.types import COMP_NODE

    with pytest.raises(ValueError) as caught:
        make_node(**{"id": 1, "name": "forward", "type": COMP_NODE, **kwargs})
    assert str(caught.value).startswith(f"make_node: {said}, whole numbers from 0 to 2^64-1 (Chakra's uint64; got ")


@pytest.mark.parametrize("argv", [["--plots", "out/plots", "--json-out", "out/f.json"],
                                  ["--csv-out", "out/a/csv", "--trace-out", "out/t.json"]])
def test_a_file_output_beside_a_folder_output_that_makes_its_folder_is_written(tmp_path, capsys, monkeypatch,
                                                                             argv):
    # before: 'cannot write out/f.json: out does not exist (make it first)', though --plots
    # out/plots makes out (its parent) before anything is written there
    from simpy_astra.cli.main import main

    monkeypatch.chdir(tmp_path)
    assert main(["run", DEFAULT, "--quiet", *argv]) == 0, capsys.readouterr().err
    assert (tmp_path / argv[3]).is_file() and (tmp_path / argv[1]).is_dir()


@pytest.mark.parametrize(("name", "fix"), [("MLP Bottom", "write 'MLP_Bottom'"), ("", "give the layer a name")])
def test_a_gemm_layer_name_the_text_workload_cannot_hold_names_the_csv_line(tmp_path, capsys, name, fix):
    # before: 'MLP Bottom' was written into the text workload, whose columns split at spaces,
    # and the run failed on the generator's own output: "x.txt:3: column 3 (forward compute)
    # of layer 'MLP' is -1"
    mnk = tmp_path / "mnk.csv"
    mnk.write_text(f"Layer,m,n,k\n{name},64,64,64\n")
    err = error_lines(capsys, ["generate", "gemm", "--mnk", str(mnk), "--parallel", "DATA", "--num-npus", "4",
                               "--output", str(tmp_path / "g" / "x")])
    assert err == [f"error: {mnk}:2: layer name {name!r} must be one word (the ASTRA-sim 1.0 text workload "
                   f"splits its columns at spaces); {fix}"]


def test_a_compute_node_past_two_to_the_31_us_still_charges_each_kind_its_time(tmp_path, capsys):
    # before: a node's kind_split weights (us) past 2^31 in all were not read, and the whole
    # node went to its longest kind: at a 131,072-token sequence (a node of 19,576 s) the
    # breakdown showed no attention and no elementwise time, all of it gemm. Attention's
    # FLOPs grow against the GEMMs' as s / 6h: four times as many tokens, a larger share.
    from simpy_astra.cli.main import main

    shares = {}
    for seq in (32768, 131072):
        args = (f"--num-layers 2 --hidden-size 65536 --num-attention-heads 512 --seq-length {seq} "
                f"--max-position-embeddings {seq} --micro-batch-size 64 --global-batch-size 4096 --bf16 "
                f"--vocab-size 51200")
        path = megatron_scenario(tmp_path, args, f"s{seq}.yaml", preset="dgx-a100-40gb", gpus=2)
        out = tmp_path / f"s{seq}.json"
        assert main(["run", path, "--quiet", "--json-out", str(out)]) == 0, capsys.readouterr().err
        parts = json.loads(out.read_text())["npus"]["0"]["breakdown_ns"]
        shares[seq] = parts["compute.attention"] / parts["compute.gemm"]
        assert parts["compute.elementwise"] > 0
    assert shares[131072] > 2 * shares[32768] > 0


def test_an_npu_groups_peak_perf_without_the_roofline_is_warned_of(tmp_path, capsys):
    # peak-perf times compute only under roofline-enabled: 1; without it a group of slower
    # GPUs ran exactly as the others, in silence (its memory-capacity alone is warned of)
    from simpy_astra.cli.main import main
    from tests.wrapped_lines import plain

    system = {**DEFAULT_DOC["system"], "npu-groups": [{"npus": [0, 1], "peak-perf": 5}]}
    path = write_yaml(tmp_path, default_with(system=system))
    assert main(["run", path, "--quiet"]) == 0
    assert plain(capsys.readouterr().err).strip().splitlines() == [
        f"warning: {path}: system: field 'npu-groups[0].peak-perf' changes nothing here: only a run with "
        f"roofline-enabled: 1 times compute by peak-perf (else each node keeps its duration)"]
    system["npu-groups"] = [{"npus": [0, 1], "local-mem-bw": 25}]  # read by reductions: no warning
    path = write_yaml(tmp_path, default_with(system=system), "bandwidth.yaml")
    assert main(["run", path, "--quiet"]) == 0
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize(("field", "model", "fix"), [
    ("switch-model", {"delay_ns": 5}, "e.g. {class: delay, delay_ns: 100}"),
    ("switch-model", {"delay": {"delay_ns": 5}}, "write {class: delay, delay_ns: 5}"),
    ("link-model", {"ecn": {"threshold_bytes": 4096}}, "write {class: ecn, threshold_bytes: 4096}"),
])
def test_a_model_mapping_without_its_class_is_told_a_model_of_its_own_kind(tmp_path, capsys, field, model, fix):
    # before: every such mapping was told 'e.g. {class: ecn, threshold_bytes: 32768}', a link
    # model that a switch-model refuses, also when the model's name stood as its one key
    network = {**DEFAULT_DOC["network"], field: model}
    path = write_yaml(tmp_path, default_with(network=network, backend="congestion_aware"))
    assert error_lines(capsys, ["run", path]) == [
        f"error: {path}: network: field '{field}' needs 'class:' naming the model when it is a mapping; {fix}"]


@pytest.mark.parametrize("ranks", [[0, "x"], "0,1", [0, -1], [True, 1]])
def test_a_process_group_whose_ranks_are_no_rank_numbers_names_the_host_trace(tmp_path, capsys, ranks):
    # before: [0, "x"] was "internal error ValueError: invalid literal for int()", and "0,1"
    # or -1 were taken digit by digit or as a rank
    from tests.test_pytorch_host_trace import GROUPS, host_trace

    folder = tmp_path / "host"
    folder.mkdir()
    for rank in range(2):
        trace = host_trace(rank)
        groups = [dict(g) for g in GROUPS]
        groups[1]["ranks"] = ranks
        trace["nodes"][1]["inputs"]["values"][0] = json.dumps(groups)
        (folder / f"rank{rank}.json").write_text(json.dumps(trace))
    err = error_lines(capsys, ["convert", "pytorch", "--host", str(folder), "--output", str(tmp_path / "et" / "x")])
    assert err == [f"error: {folder / 'rank0.json'}: node '2 (## process_group:init ##)': process group 'tp' lists "
                   f"ranks {json.dumps(ranks)}; expected a list of rank numbers >= 0"]


@pytest.mark.parametrize(("call", "said"), [
    (lambda: Simulation.from_scenario(None), "from_scenario(path=...): expected a file path, a str or os.PathLike "
                                             "(got None)"),
    (lambda: Simulation.from_scenario(3), "from_scenario(path=...): expected a file path, a str or os.PathLike "
                                          "(got 3)"),
    (lambda: Simulation.from_astra_files("mb/ar", 5, "n.yml", "m.json"),
     "from_astra_files(system=...): expected a file path, a str or os.PathLike (got 5)"),
])
def test_a_path_argument_that_is_no_path_is_refused_naming_it(call, said):
    # before: None was told "<empty path>: ... (got an empty string)", 3 and 5 failed inside
    # pathlib ("expected str, bytes or os.PathLike object, not int"), naming no argument
    with pytest.raises(TypeError) as caught:
        call()
    assert str(caught.value) == f"Simulation.{said}"


def test_a_system_config_written_in_yaml_is_told_to_be_json(tmp_path, capsys):
    # before: "invalid JSON at line 1, column 1: Expecting value" and nothing more, for a
    # system file a user of YAML scenarios wrote in YAML
    (tmp_path / "system.yaml").write_text(yaml.safe_dump(DEFAULT_DOC["system"]))
    path = write_yaml(tmp_path, default_with(system="system.yaml"))
    assert error_lines(capsys, ["run", path]) == [
        f"error: {tmp_path / 'system.yaml'}: invalid JSON at line 1, column 1: Expecting value; this system JSON is "
        f"written in YAML, which ASTRA-sim's JSON reader refuses: write it in JSON, or give its fields inline in a "
        f"scenario"]
    (tmp_path / "system.yaml").write_text("ring\n")  # YAML, but no mapping: no such fix
    assert error_lines(capsys, ["run", path])[0].endswith("invalid JSON at line 1, column 1: Expecting value")


def test_an_npu_waiting_for_its_jobs_start_is_not_exposed_communication(tmp_path):
    # before: an NPU of a job with start_ns reported finish - GPU time as its exposed
    # communication, its wait for the start included (1 s of it here), while the jobs table
    # and the breakdown (idle) count from the start; a sweep over jobs.1.start_ns then drew
    # an exposed communication growing with the start
    doc = yaml.safe_load(TWO_JOBS.read_text())
    doc["jobs"][1]["start_ns"] = 10**9  # job b starts after job a has finished: each runs alone
    sim = Simulation.from_scenario(write_yaml(tmp_path, doc), backend="congestion_unaware")
    reports = {r.npu_id: r for r in sim.run()}
    a, b = reports[0], reports[1]
    assert b.finished_cycles - 10**9 == a.finished_cycles
    assert b.exposed_comm_cycles == a.exposed_comm_cycles == a.finished_cycles - a.times["GPU"]


def test_the_largest_cluster_a_run_states_is_one_a_megatron_job_is_not_refused_for(tmp_path, capsys):
    # before: cluster.gpus past the cluster's bound said "largest cluster a run builds
    # (1,048,576 GPUs)", and a Megatron job on 1,048,576 GPUs was then refused above 262,144
    import re

    too_many = error_lines(capsys, ["run", megatron_scenario(tmp_path, gpus=2**30), "--quiet"])
    stated = int(re.search(r"\(([\d,]+) GPUs", too_many[0]).group(1).replace(",", ""))
    at_bound = error_lines(capsys, ["run", megatron_scenario(tmp_path, gpus=stated, name="b.yaml"), "--quiet"])
    assert len(at_bound) == 1 and "more than this simulator builds" not in at_bound[0], at_bound
    past = error_lines(capsys, ["run", megatron_scenario(tmp_path, gpus=stated + 8, name="c.yaml"), "--quiet"])
    assert len(past) == 1 and f"({stated:,} GPUs" in past[0], past


TP_AXIS = {"workload.args.tensor-model-parallel-size": {"values": [1, 2], "as": "tp"}}


@pytest.mark.parametrize("nested", ["-" * 1990 + "tp == 1", "tp" + "+tp" * 450 + " > 1"])
def test_a_constraint_nested_past_the_evaluators_stack_names_it_and_the_fix(tmp_path, capsys, nested):
    # before: "... cannot be evaluated (RecursionError: maximum recursion depth exceeded)",
    # told only once the sweep's points were expanded, naming Python's stack, not the fix
    sweep = megatron_sweep(tmp_path, TP_AXIS, constraints=[nested])
    err = error_lines(capsys, ["sweep", sweep, "--list"])
    assert len(err) == 1 and err[0].startswith(f"error: {sweep}: constraints[0]: '{nested[:10]}"), err
    assert "' nests 4" in err[0] or "' nests 1,9" in err[0]
    assert "levels deep (at most 200)" in err[0] and "RecursionError" not in err[0]
    assert "split a test into several constraints" in err[0]
    assert len(err[0]) < 400


def test_a_constraint_nested_to_the_bound_still_selects(tmp_path, capsys):
    sweep = megatron_sweep(tmp_path, TP_AXIS, constraints=["-" * 198 + "tp == 1"])
    assert main(["sweep", sweep, "--list"]) == 0
    listed = capsys.readouterr().out
    assert "tp=1" in listed.replace(" ", "") and "tp=2" not in listed.replace(" ", ""), listed


@pytest.mark.parametrize("jobs", [False, True])
def test_a_cost_price_for_a_tier_no_dimension_has_is_warned_of(tmp_path, jobs):
    # before: a one-dimensional ring sits on the package tier, and cost.link.pod priced
    # nothing without a word (the total stayed ASTRA-sim's default price of the package);
    # a price written as one number sets every tier and is not warned of; jobs share the network
    block = {"link": {"pod": 10.0, "package": 5.0}, "switch": 20.0}
    doc = yaml.safe_load(TWO_JOBS.read_text()) if jobs else default_with()
    doc["cost"] = block
    path = write_yaml(tmp_path, doc)
    said = [w for w in Simulation.from_scenario(path).warnings if "cost." in w]
    assert said == [f"{path}: cost.link.pod prices the pod tier, which no dimension of the network is on "
                    f"(its tiers: package), so it is unused; name it in cost.tiers or remove it"], said


@pytest.mark.parametrize(("field", "axis"), [("cluster.gpus", {"from": 8, "to": 64.0, "step": 8}),
                                             ("cluster.gpus_per_node", {"from": 4, "to": 8, "step": 4.0}),
                                             ("cluster.gpu.sms", {"from": 100.0, "to": 132, "step": 16})])
def test_a_cluster_count_swept_over_a_range_in_floats_names_the_float(tmp_path, capsys, field, axis):
    # before: "axes: cluster.gpus: must be a positive integer (got 8.0); write 8", when 8 was
    # written: the range counted in floats because of its to: 64.0, as a Megatron flag's is told
    sweep = megatron_sweep(tmp_path, {field: axis})
    given = next((k, v) for k, v in axis.items() if isinstance(v, float))
    assert error_lines(capsys, ["sweep", sweep, "--list"]) == [
        f"error: {sweep}: axes: {field}: {field} takes integers, and a range with {given[0]} {given[1]!r} counts "
        f"in floats; write from, to and step as integers (e.g. {{from: 1, to: 8, step: 1}})"]


@pytest.mark.parametrize(("constraint", "said"), [
    ("tp ** 5000 > 1", "a power beyond 2**1024"),
    ("round(tp, -5000) == 0", "round() takes at most 400 digits"),
    ("1.5 ** 10000 > 1", "a number beyond 2**1024 (about 1.8e308)")])
def test_a_constraint_past_the_number_limit_says_so_without_pythons_words(tmp_path, capsys, constraint, said):
    # before: "(ExpressionLimit: a power beyond 2**1024)", an internal class's name, and
    # "(OverflowError: (34, 'Numerical result out of range'))", C's errno as a tuple
    sweep = megatron_sweep(tmp_path, TP_AXIS, constraints=[constraint])
    err = error_lines(capsys, ["sweep", sweep, "--list"])
    assert err == [f"error: {sweep}: constraints: '{constraint}' cannot be evaluated ({said}); keep its numbers "
                   f"within 2**1024 (smaller exponents or units)"], err


def test_long_job_names_sharing_links_fold_within_80_columns(tmp_path, capsys):
    # the busiest links' 'bytes by job' listed every job on a link on one line: two jobs of
    # 30-letter names made it 101 columns in a pipe; the names now fold in their column
    doc = yaml.safe_load((SCENARIOS / "two_llm_jobs_fat_tree.yaml").read_text())
    names = ["llama-7b-data-parallel-job-one", "gpt-small-tensor-parallel-job-two"]
    for job, name in zip(doc["jobs"], names, strict=True):
        job["name"] = name
    for part in (doc, *doc["jobs"]):
        for key in ("workload", "system", "network"):
            if isinstance(part.get(key), str):
                part[key] = str(SCENARIOS / part[key])
    assert main(["run", write_yaml(tmp_path, doc)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert max(len(line) for line in err) <= 80, max(err, key=len)
    start = err.index("busiest links (continued)")
    shown = " ".join(" ".join(err[start:start + 4]).split())
    assert f"{names[0]} 694,157,312, {names[1]} 694,157,312" in shown, shown
