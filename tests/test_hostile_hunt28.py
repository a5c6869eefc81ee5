"""A twenty-eighth hunt: inputs wrong in new ways, and the leftovers of the twenty-seventh. Each
test failed before its fix: a warning missed, a wrong success, a traceback, or a message naming
no place or no fix, or too long for a line."""

from __future__ import annotations

import pytest

from simpy_astra.cli.main import main
from tests.scenario_files import TINY_GPT_ARGS, headline_and_warnings, megatron_scenario, megatron_sweep

#: a tiny MoE whose all-to-all runs over 8 consecutive ranks: one DGX H100 node's GPUs
MOE_IN_A_NODE = (TINY_GPT_ARGS + " --num-experts 8 --expert-model-parallel-size 8 --moe-router-topk 2 "
                 "--moe-token-dispatcher-type alltoall")


def test_an_all_to_all_inside_one_node_is_said_not_to_read_the_rails_latency(tmp_path, capsys):
    # before: silent: the all-to-alls' pairs were not listed, so every route's latency was taken
    # as read; at 1 ns and at 1 ms the step was the same 2.487 ms
    fast = headline_and_warnings(capsys, megatron_scenario(tmp_path, MOE_IN_A_NODE, "fast.yaml", preset="dgx-h100",
                                                           gpus=16, inter_node_latency_ns=1))
    path = megatron_scenario(tmp_path, MOE_IN_A_NODE, "slow.yaml", preset="dgx-h100", gpus=16,
                             inter_node_latency_ns=10**6)
    assert headline_and_warnings(capsys, path) == (fast[0], [
        f"warning: {path}: cluster.inter_node_latency_ns changes nothing here: it is read only by messages the "
        f"network plays one by one (pipeline sends, all-to-alls), and none of this job's leaves its node"])
    sweep = megatron_sweep(tmp_path, {"cluster.inter_node_latency_ns": [1, 10**6]}, args=MOE_IN_A_NODE)
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("1 point\n")


def test_an_all_to_all_across_nodes_reads_the_rails_latency(tmp_path, capsys):
    args = MOE_IN_A_NODE.replace("--num-experts 8 --expert-model-parallel-size 8",
                                 "--num-experts 16 --expert-model-parallel-size 16")
    fast = headline_and_warnings(capsys, megatron_scenario(tmp_path, args, "fast.yaml", preset="dgx-h100", gpus=16,
                                                           inter_node_latency_ns=1))
    slow = headline_and_warnings(capsys, megatron_scenario(tmp_path, args, "slow.yaml", preset="dgx-h100", gpus=16,
                                                           inter_node_latency_ns=10**6))
    assert fast[1] == slow[1] == [] and fast[0] != slow[0]


def test_a_scenarios_comm_groups_beside_jobs_is_refused_in_a_line_that_fits(tmp_path, capsys, monkeypatch):
    # before: the line ran 165 characters beside its file ("... beside jobs:, each job gives its own
    # (in its ranks, jobs[i].comm_groups), so this one would change nothing; move it ...")
    from tests.scenario_files import DEFAULT, error_lines, write_yaml

    monkeypatch.chdir(tmp_path)
    step = {"generate": "microbench", "collective": "all_reduce", "size": 1 << 20, "num_npus": 4}
    base = {key: value for key, value in DEFAULT.items() if key != "workload"}
    write_yaml(tmp_path, {**base, "comm_groups": {1: [0, 1]},
                          "jobs": [{"name": "a", "workload": step, "npus": [0, 1, 2, 3]},
                                   {"name": "b", "workload": step, "npus": [4, 5, 6, 7]}]})
    assert error_lines(capsys, ["run", "s.yaml", "--quiet"]) == [
        "error: s.yaml: comm_groups: read by no job; put it in one (jobs[i].comm_groups)"]


def test_calibrate_and_validate_piped_print_lines_within_80_columns(tmp_path, capsys, monkeypatch):
    # before: 'fitted on 15 sizes >= 1048576 bytes: simulated with the fitted values, geomean
    # error 6.0%, ...' ran to 137 columns in a pipe, and validate's summaries to 121-150
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COLUMNS", raising=False)
    logs = Path(__file__).resolve().parent / "data" / "nccl" / "hgx-h100-2node-ib"
    (tmp_path / "all_reduce.log").write_text((logs / "all_reduce.log").read_text())
    (tmp_path / "network.yml").write_text((logs / "network.yml").read_text())
    assert main(["calibrate", "all_reduce.log", "--network", "network.yml", "--out", "cal", "--hold-out-every",
                 "3"]) == 0
    assert main(["validate", "all_reduce.log", "--network", "cal/network.yml", "--system", "cal/system.json",
                 "--holdout", "cal/calibration.json", "--out", "v"]) == 0
    printed = capsys.readouterr().out
    assert "geomean error" in printed and "HELD OUT" in printed
    assert max(map(len, printed.splitlines())) <= 80


def _two_jobs(tmp_path, **job_b) -> str:
    from tests.scenario_files import DEFAULT, write_yaml

    step = {"generate": "microbench", "collective": "all_reduce", "size": 1 << 20, "num_npus": 4}
    base = {key: value for key, value in DEFAULT.items() if key != "workload"}
    return write_yaml(tmp_path, {**base, "jobs": [{"name": "a", "workload": step, "npus": [0, 1, 2, 3]},
                                                  {"name": "b", "workload": step, **job_b}]})


@pytest.mark.parametrize("key", ["system", "comm_groups", "npus"])
def test_a_jobs_key_written_empty_is_refused_not_run_as_left_out(tmp_path, capsys, key):
    # before: 'system:' with its path forgotten ran job b on the scenario's system, and
    # 'comm_groups:' with no groups, in silence; 'npus:' beside a placement was told it gave both
    from tests.scenario_files import error_lines

    extra = {"placement": "contiguous"} if key == "npus" else {"npus": [4, 5, 6, 7]}
    path = _two_jobs(tmp_path, **extra, **{key: None})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: jobs[1].{key}: is empty (YAML's null: its value left out); give one, or remove {key}"]


def test_comm_groups_written_as_an_empty_mapping_are_refused(tmp_path, capsys):
    # before: 'comm_groups: {}' ran as if left out, in silence, where an empty cost or
    # remote_memory is refused; a job's too
    from tests.scenario_files import default_with, error_lines, write_yaml

    path = write_yaml(tmp_path, default_with(comm_groups={}))
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: comm_groups: is empty; list a group, e.g. {{1: [0, 1]}}, or leave it out"]
    path = _two_jobs(tmp_path, npus=[4, 5, 6, 7], comm_groups={})
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: jobs[1].comm_groups: is empty; list a group, e.g. {{1: [0, 1]}}, or leave it out"]


def test_scenario_comm_groups_written_empty_is_refused(tmp_path, capsys):
    # before: 'comm_groups:' (YAML's null) ran as if left out, where 'remote_memory:' is refused;
    # beside a cluster too, where groups of the scenario's own are refused
    from tests.scenario_files import default_with, error_lines, write_yaml

    path = write_yaml(tmp_path, default_with(comm_groups=None))
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: field 'comm_groups' must be a file path or a mapping (got None)"]
    path = megatron_scenario(tmp_path)
    with open(path, "a") as f:
        f.write("comm_groups:\n")
    assert error_lines(capsys, ["run", path, "--quiet"])[-1].startswith(
        f"error: {path}: field 'comm_groups': a cluster's job brings its own communicator groups")


def _cluster_on_own_network(tmp_path, network: dict, system: dict | None = None, name: str = "s.yaml") -> str:
    from tests.scenario_files import write_yaml

    doc = {"workload": {"generate": "megatron", "args": TINY_GPT_ARGS}, "cluster": {"preset": "dgx-h100", "gpus": 16},
           "network": network}
    return write_yaml(tmp_path, {**doc, "system": system} if system else doc, name)


def test_a_cluster_on_a_network_of_its_own_runs_the_presets_system_on_each_of_its_dimensions(tmp_path, capsys):
    # before: the preset's system listed an algorithm for each of the preset's 2 dimensions, so on
    # a network of 3 its collectives ran over the first 2 only (8 of 16 GPUs), in silence:
    # 1.736 ms against 1.829 ms with the same system written for all 3; on one dimension the
    # run was refused naming 'system', a field the scenario does not have
    from simpy_astra.config.cluster import load_cluster

    three = {"topology": ["Ring", "Switch", "Switch"], "npus_count": [2, 4, 2], "bandwidth": [370.0, 370.0, 50.0],
             "latency": [500.0, 500.0, 500.0]}
    # the preset's system with its rule written out for 3 dimensions: halvingDoubling on a
    # power-of-two dimension, rings for the gathers, direct all-to-alls
    system = load_cluster({"preset": "dgx-h100", "gpus": 16}, "cluster").system_mapping()
    system.update({"all-reduce-implementation": ["halvingDoubling"] * 3, "all-gather-implementation": ["ring"] * 3,
                   "reduce-scatter-implementation": ["ring"] * 3, "all-to-all-implementation": ["direct1"] * 3})
    written = headline_and_warnings(capsys, _cluster_on_own_network(tmp_path, three, system, "written.yaml"))
    assert headline_and_warnings(capsys, _cluster_on_own_network(tmp_path, three)) == written
    one = {"topology": ["Switch"], "npus_count": [16], "bandwidth": [50.0], "latency": [500.0]}
    assert main(["run", _cluster_on_own_network(tmp_path, one, name="one.yaml"), "--quiet"]) == 0


def test_a_short_algorithm_list_is_warned_of_for_a_group_of_every_npu(tmp_path, capsys):
    # before: silent: a collective naming a group was passed over, though a group of every NPU
    # runs as an unnamed one, on the list's first dimensions only (Megatron's dp group of all 16
    # here: 1.736 ms, its all-reduces over 8 GPUs, against 1.829 ms over all)
    from simpy_astra.config.cluster import load_cluster

    three = {"topology": ["Ring", "Switch", "Switch"], "npus_count": [2, 4, 2], "bandwidth": [370.0, 370.0, 50.0],
             "latency": [500.0, 500.0, 500.0]}
    system = load_cluster({"preset": "dgx-h100", "gpus": 16}, "cluster").system_mapping()  # two dimensions'
    path = _cluster_on_own_network(tmp_path, three, system)
    assert headline_and_warnings(capsys, path)[1] == [
        f"warning: {path}: system: field 'all-reduce-implementation' lists 2 algorithm(s), but the network has 3 "
        f"dimensions: as in ASTRA-sim, the workload's all-reduces run over the first 2 only, 8 of the 16 NPUs; give "
        f"one per dimension (e.g. [halvingDoubling, halvingDoubling, halvingDoubling]) to run them over every NPU"]


@pytest.mark.parametrize(("launcher", "started"), [
    ("torchrun --nproc_per_node=8 --nnodes=4 pretrain_gpt.py", "32 GPUs (--nproc_per_node 8 x --nnodes 4)"),
    ("python -m torch.distributed.launch --nproc-per-node 8 pretrain_gpt.py", "8 GPUs (--nproc-per-node 8)"),
    # (hunt 28b) mpirun's, srun's and deepspeed's counts were dropped unread, and only torchrun's read
    ("mpirun -np 8 -x NCCL_DEBUG=INFO python pretrain_gpt.py", "8 GPUs (-np 8)"),
    ("/usr/bin/mpiexec -n 32 python pretrain_gpt.py", "32 GPUs (-n 32)"),
    ("srun -N 2 --ntasks-per-node=4 python pretrain_gpt.py", "8 GPUs (-N 2 x --ntasks-per-node 4)"),
    ("srun --ntasks 32 python pretrain_gpt.py", "32 GPUs (--ntasks 32)"),
    ("deepspeed --num_nodes 4 --num_gpus 8 pretrain_gpt.py", "32 GPUs (--num_nodes 4 x --num_gpus 8)"),
    # of launchers nested, the last starts the workers
    ("srun -N 2 --ntasks-per-node 1 torchrun --nnodes 2 --nproc_per_node 4 pretrain_gpt.py",
     "8 GPUs (--nnodes 2 x --nproc_per_node 4)"),
    # (hunt 29) a short flag with its count joined on, as getopt reads it, was dropped unread
    ("srun -N4 --ntasks-per-node=8 python pretrain_gpt.py", "32 GPUs (-N 4 x --ntasks-per-node 8)"),
    ("srun -n32 python pretrain_gpt.py", "32 GPUs (-n 32)"),
    ("mpiexec -n32 python pretrain_gpt.py", "32 GPUs (-n 32)")])
def test_a_pasted_launcher_starting_another_gpu_count_is_refused(tmp_path, capsys, launcher, started):
    # before: the launcher's words were dropped unread, so a job launched on 32 GPUs (or 8) ran
    # on cluster.gpus' 16 in silence
    from tests.scenario_files import error_lines

    path = megatron_scenario(tmp_path, f"{launcher} {TINY_GPT_ARGS}", preset="dgx-h100", gpus=16)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: the pasted launcher starts {started}, but the job runs on 16 ({path}: "
        f"cluster.gpus); make them one count, or drop the launcher's words"]
    agreeing = megatron_scenario(tmp_path, f"torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py {TINY_GPT_ARGS}",
                                 "agreeing.yaml", preset="dgx-h100", gpus=16)
    assert main(["run", agreeing, "--quiet"]) == 0


def test_a_transformer_batch_dp_cannot_split_names_the_batch_written(tmp_path, capsys):
    # before: "workload.dp: (8) must divide micro_batch (3)", of a micro_batch never written
    # (left out, it is the batch: 'batch: 3' was the value to change)
    from tests.scenario_files import default_with, error_lines, write_yaml

    workload = {"generate": "transformer", "preset": "llama2-7b", "dp": 8, "batch": 3}
    path = write_yaml(tmp_path, default_with(workload=workload))
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.dp: (8) must divide batch (3: micro_batch, not given, is the whole batch); each "
        f"replica needs whole samples"]


def test_a_count_of_one_byte_or_one_pass_is_worded_singular(tmp_path, capsys):
    # before: "wrote ... (all_gather, 1 bytes)" and "wrote ... (DATA, 1 layer, 1 pass(es))"
    assert main(["generate", "microbench", "--collective", "all_gather", "--size", "1", "--num-npus", "4",
                 "--output", str(tmp_path / "mb")]) == 0
    assert capsys.readouterr().out.strip().endswith("(all_gather, 1 byte)")
    text = tmp_path / "w.txt"
    text.write_text("DATA\n1\nl -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 10\n")
    assert main(["convert", "text", "--input", str(text), "--output", str(tmp_path / "t"), "--num-npus", "4",
                 "--num-passes", "1"]) == 0
    assert capsys.readouterr().out.strip().endswith("(DATA, 1 layer, 1 pass)")


def test_a_pasted_launcher_of_another_node_size_is_told_gpus_per_node(tmp_path, capsys):
    # before: 4 nodes of 4 GPUs (--nproc_per_node 4 --nnodes 4) ran on the preset's 2 nodes of 8,
    # its NVLink groups and rails not the job's: 1.862 ms, where gpus_per_node 4 gives 1.858 ms
    from tests.scenario_files import error_lines

    args = f"torchrun --nproc_per_node 4 --nnodes 4 pretrain_gpt.py {TINY_GPT_ARGS}"
    path = megatron_scenario(tmp_path, args, preset="dgx-h100", gpus=16)
    assert error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: workload.args: the pasted launcher starts 4 GPUs a node (--nproc_per_node 4 x --nnodes 4), "
        f"but the cluster's nodes hold 8; give cluster.gpus_per_node: 4, or drop the launcher's words"]
    told = headline_and_warnings(capsys, megatron_scenario(tmp_path, args, "told.yaml", preset="dgx-h100", gpus=16,
                                                           gpus_per_node=4))
    assert told == headline_and_warnings(capsys, megatron_scenario(tmp_path, TINY_GPT_ARGS, "plain.yaml",
                                                                   preset="dgx-h100", gpus=16, gpus_per_node=4))


def test_a_number_written_with_digit_groups_is_told_the_number_to_write(tmp_path, capsys):
    # before: "cluster.gpus: must be a positive integer (got '1_6')" and "field 'bandwidth[0]'
    # must be a number > 0 (GB/s per link; got "1_000")": Python's 1_000 is text in YAML 1.2,
    # and no fix was named
    from tests.scenario_files import DEFAULT, default_with, error_lines, write_yaml

    path = tmp_path / "s.yaml"
    path.write_text(f"workload: {{generate: megatron, args: '{TINY_GPT_ARGS}'}}\n"
                    f"cluster: {{preset: dgx-h100, gpus: 1_6}}\n")
    assert error_lines(capsys, ["run", str(path), "--quiet"]) == [
        f"error: {path}: cluster.gpus: must be a positive integer (got '1_6'); write 16 (YAML 1.2 reads a number "
        f"with '_' in it as text)"]
    path.write_text(path.read_text().replace("1_6", "16, inter_node_gbit_s: 3_200"))
    assert error_lines(capsys, ["run", str(path), "--quiet"])[-1].endswith(
        "(got '3_200'); write 3200 (YAML 1.2 reads a number with '_' in it as text)")
    text = write_yaml(tmp_path, default_with(network={**DEFAULT["network"], "bandwidth": ["1_000"]}), "n.yaml")
    network = (tmp_path / "n.yaml").read_text().replace("'1_000'", "1_000")
    (tmp_path / "n.yaml").write_text(network)
    assert error_lines(capsys, ["run", text, "--quiet"]) == [
        f"error: {text}: network: field 'bandwidth[0]' must be a number > 0 (GB/s per link; got \"1_000\"); write "
        f"1000 (YAML 1.2 reads a number with '_' in it as text)"]


def test_a_jobs_file_on_a_sweep_axis_resolves_from_the_sweeps_folder(tmp_path, capsys):
    # before: 'jobs.1.system: [own.json]' beside the sweep was looked for beside the point's
    # temporary scenario ("own: system JSON file does not exist"), where the scenario's own
    # 'system: [own.json]' resolves from the sweep's folder
    import json

    from tests.scenario_files import DEFAULT, write_yaml

    (tmp_path / "own.json").write_text(json.dumps(DEFAULT["system"]))
    step = {"generate": "microbench", "collective": "all_reduce", "size": 1 << 20, "num_npus": 4}
    base = {key: value for key, value in DEFAULT.items() if key != "workload"}
    write_yaml(tmp_path, {**base, "jobs": [{"name": "a", "workload": step, "npus": [0, 1, 2, 3]},
                                           {"name": "b", "workload": step, "npus": [4, 5, 6, 7]}]}, "base.yaml")
    sweep = write_yaml(tmp_path, {"base": "base.yaml", "axes": {"jobs.1.system": ["own.json"]}}, "sweep.yaml")
    assert main(["sweep", sweep, "--list"]) == 0
    assert "will fail" not in capsys.readouterr().out
