"""The leftovers of the twenty-sixth hunt: a plug-in named as a path, counts of one worded as
many, and a preset's field that changes nothing. Each test failed before its fix."""

from __future__ import annotations

import pytest
import yaml

from simpy_astra.cli.main import main
from simpy_astra.config.cluster import load_cluster
from simpy_astra.config.network import load_network_yaml
from simpy_astra.errors import InputError
from simpy_astra.plugins import PluginError, import_module
from tests.scenario_files import SCENARIOS, error_lines

PRESETS = SCENARIOS.parent / "simpy_astra" / "config" / "clusters"


@pytest.mark.parametrize(("given", "meant"), [("./myplug", "myplug"), ("./myplug.py", "myplug"),
                                              ("sub/myplug", "sub.myplug")])
def test_a_plugin_named_as_a_path_is_told_the_module_name_it_meant(given, meant):
    # before: "... is not a module name; write it as package.module" (for ./myplug: not what it meant)
    with pytest.raises(PluginError) as err:
        import_module(given)
    assert str(err.value) == (f"{given!r} is not a module name; write it as {meant} (a module is named without "
                              f"./ or .py)")


def test_a_network_list_of_one_entry_says_entry(tmp_path):
    # before: "'latency' has 1 entries but topology has 2"
    net = tmp_path / "net.yml"
    net.write_text("topology: [Ring, Switch]\nnpus_count: [2, 2]\nbandwidth: [50, 50]\nlatency: [500]\n")
    with pytest.raises(InputError) as err:
        load_network_yaml(str(net))
    assert "'latency' has 1 entry but topology has 2" in str(err.value)


def test_a_text_workload_header_of_one_layer_says_layer(tmp_path, capsys):
    # before: "the header says 1 layers but 2 layer lines follow"
    path = tmp_path / "w.txt"
    line = "l -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 10\n"
    path.write_text("DATA\n1\n" + line * 2)
    err = error_lines(capsys, ["convert", "text", "--input", str(path), "--output", str(tmp_path / "w"),
                               "--num-npus", "4", "--num-passes", "1"])
    assert err == [f"error: {path}:2: the header says 1 layer but 2 layer lines follow; make the number on "
                   f"line 2 match the layer lines"]
    path.write_text("DATA\n2\n" + line)
    err = error_lines(capsys, ["convert", "text", "--input", str(path), "--output", str(tmp_path / "w"),
                               "--num-npus", "4", "--num-passes", "1"])
    assert err == [f"error: {path}:2: the header says 2 layers but 1 layer line follows; make the number on "
                   f"line 2 match the layer lines"]


def test_a_converted_text_workload_of_one_layer_says_layer(tmp_path, capsys):
    # before: "wrote ... (DATA, 1 layers, 1 pass(es))"
    from simpy_astra.cli.main import main
    path = tmp_path / "w.txt"
    path.write_text("DATA\n1\nl -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 10\n")
    assert main(["convert", "text", "--input", str(path), "--output", str(tmp_path / "w"), "--num-npus", "2",
                 "--num-passes", "1"]) == 0
    assert "(DATA, 1 layer, 1 pass)" in capsys.readouterr().out


def _preset_without_scale(tmp_path) -> str:
    doc = yaml.safe_load((PRESETS / "dgx-h100.yaml").read_text())
    del doc["node"]["nccl_latency_scale"]
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_a_presets_latency_scale_algorithm_without_a_scale_is_refused(tmp_path):
    # before: accepted; the scale is then 1 (NCCL's own latencies) whatever algorithm it names
    path = _preset_without_scale(tmp_path)
    with pytest.raises(InputError) as err:
        load_cluster({"preset": path, "gpus": 16}, "s.yaml: cluster")
    assert str(err.value) == (f"{path}: node.nccl_latency_scale_algo: names the algorithm nccl_latency_scale was "
                              f"fitted on, but no nccl_latency_scale is given (1: NCCL's own latencies), so it "
                              f"would change nothing; give nccl_latency_scale or remove nccl_latency_scale_algo")
    load_cluster({"preset": path, "gpus": 16, "nccl_latency_scale": 2}, "s.yaml: cluster")  # given beside it: read


def test_a_scenarios_latency_scale_algorithm_without_any_scale_is_refused(tmp_path):
    doc = yaml.safe_load((PRESETS / "dgx-h100.yaml").read_text())
    del doc["node"]["nccl_latency_scale"], doc["node"]["nccl_latency_scale_algo"]
    path = tmp_path / "bare.yaml"
    path.write_text(yaml.safe_dump(doc))
    load_cluster({"preset": str(path), "gpus": 16}, "s.yaml: cluster")
    with pytest.raises(InputError, match=r"^s\.yaml: cluster\.nccl_latency_scale_algo: names the algorithm"):
        load_cluster({"preset": str(path), "gpus": 16, "nccl_latency_scale_algo": "ring"}, "s.yaml: cluster")


def _scenario_with_memory(tmp_path, memory) -> str:
    from tests.scenario_files import default_with, write_yaml
    return write_yaml(tmp_path, default_with(remote_memory=memory))


def test_an_empty_remote_memory_is_refused(tmp_path, capsys):
    # before: ran as NO_MEMORY_EXPANSION, unsaid (ASTRA-sim leaves memory-type unset)
    path = _scenario_with_memory(tmp_path, {})
    assert error_lines(capsys, ["run", path]) == [
        f"error: {path}: remote_memory: is empty; write memory-type (NO_MEMORY_EXPANSION for no remote memory), "
        f"or leave it out"]


@pytest.mark.parametrize(("nodes", "per_node", "fix"), [(4, 4, "lower num-nodes to 2"),
                                                        (1, 16, "make num-npus-per-node divide the 8 NPUs"),
                                                        (3, 3, "make num-npus-per-node divide the 8 NPUs")])
def test_per_node_memory_whose_nodes_do_not_hold_the_npus_is_refused(tmp_path, capsys, nodes, per_node, fix):
    # before: accepted (memory nodes with no NPU, or nodes of fewer NPUs than said); 8 NPUs here
    memory = {"memory-type": "PER_NODE_MEMORY_EXPANSION", "num-nodes": nodes, "num-npus-per-node": per_node,
              "remote-mem-bw": 10}
    path = _scenario_with_memory(tmp_path, memory)
    assert error_lines(capsys, ["run", path]) == [
        f"error: {path}: remote_memory: field 'num-nodes' is {nodes} with num-npus-per-node {per_node}: "
        f"{nodes * per_node} NPUs, but the network has 8; {fix} (num-nodes x num-npus-per-node = the NPUs)"]


def test_an_nvlink_latency_no_pipeline_send_crosses_is_said_and_swept_once(tmp_path, capsys):
    # before: tp 2, pp 2 on 2 DGX nodes ran 16.709 ms at 1 ns and at 1e9 ns, in silence. Megatron's
    # stages are tp x dp = 8 ranks apart, one node: each send goes to the same local GPU of the other
    # node, over its own rail (no PXN hop over NVLink), so no played message reads NVLink's latency
    from tests.scenario_files import SMALL_GPT_ARGS, headline_and_warnings, megatron_scenario, megatron_sweep
    cluster = {"preset": "dgx-h100", "gpus": 16}
    fast = headline_and_warnings(capsys, megatron_scenario(tmp_path, SMALL_GPT_ARGS, "fast.yaml", **cluster,
                                                           nvlink_latency_ns=1))
    path = megatron_scenario(tmp_path, SMALL_GPT_ARGS, "slow.yaml", **cluster, nvlink_latency_ns=10**9)
    assert headline_and_warnings(capsys, path) == (fast[0], [
        f"warning: {path}: cluster.nvlink_latency_ns changes nothing here: it is read only by messages the "
        f"network plays one by one (pipeline sends, all-to-alls), and none of this job's crosses NVLink (each "
        f"leaves its node on its own rail)"])
    sweep = megatron_sweep(tmp_path, {"cluster.nvlink_latency_ns": [1, 10**9]})
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("1 point\n")
    # stages 2 ranks apart (Megatron's tp-pp-dp order): each send stays in its node, on NVLink
    sweep = megatron_sweep(tmp_path, {"cluster.nvlink_latency_ns": [1, 10**9]},
                           args=SMALL_GPT_ARGS + " --use-tp-pp-dp-mapping")
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("2 points\n")
    # ... and none leaves its node: the rails' latency is the one not read then
    sweep = megatron_sweep(tmp_path, {"cluster.inter_node_latency_ns": [1, 10**9]},
                           args=SMALL_GPT_ARGS + " --use-tp-pp-dp-mapping")
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("1 point\n")
