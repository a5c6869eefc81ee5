"""NVLS (NCCL's NVLink SHARP all-reduce) is a property of the node, stated by the preset's
``node.nvls`` or the scenario's ``cluster.nvls``; it followed ``cluster.gpu.name`` in silence, so
renaming an H100 preset's GPU turned NVLS off and a copied preset for a GPU the list did not
know ran without it, unsaid.

Outside facts: the DGX H100 datasheet (four third-generation NVSwitches, NVLink SHARP) and the
DGX A100's (six second-generation NVSwitches, no SHARP)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main
from simpy_astra.config.cluster import load_cluster
from simpy_astra.config.cluster_presets import PRESET_DIR
from simpy_astra.config.scenario import load_scenario
from simpy_astra.errors import InputError

ARGS = ("--num-layers 4 --hidden-size 4096 --num-attention-heads 32 --seq-length 2048 --micro-batch-size 1 "
        "--global-batch-size 64 --bf16 --tensor-model-parallel-size 8")


def _scenario(tmp_path: Path, cluster: dict, name: str = "s.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": ARGS}, "cluster": cluster}))
    return str(path)


def _copy_of_h100_preset(tmp_path: Path, gpu_name: str) -> str:
    """A user's copy of the H100 preset for another GPU, written before the preset said nvls."""
    doc = yaml.safe_load((Path(PRESET_DIR) / "dgx-h100.yaml").read_text())
    doc["gpu"]["name"] = gpu_name
    del doc["node"]["nvls"]
    path = tmp_path / "my-cluster.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_the_presets_state_nvls_as_their_datasheets_do():
    for preset, nvls in (("dgx-h100", True), ("dgx-a100-80gb", False), ("dgx-a100-40gb", False)):
        assert yaml.safe_load((Path(PRESET_DIR) / f"{preset}.yaml").read_text())["node"]["nvls"] is nvls
        assert load_cluster({"preset": preset, "gpus": 16}, "c").nvls is nvls


def test_renaming_the_gpu_of_an_h100_preset_keeps_its_nodes_nvls(tmp_path, capsys):
    """The name is a label: the nodes' NVSwitch-3 stays (NVLS was off with any name but H100's)."""
    times = []
    for cluster in ({"preset": "dgx-h100", "gpus": 16}, {"preset": "dgx-h100", "gpus": 16, "gpu": {"name": "Hopper-X"}}):
        assert main(["run", _scenario(tmp_path, cluster), "--quiet"]) == 0
        out = capsys.readouterr()
        times.append(out.out)
        assert "warning" not in out.err
    assert times[0] == times[1]
    assert load_cluster({"preset": "dgx-h100", "gpus": 16, "gpu": {"name": "Hopper-X"}}, "c").nvls


def test_a_gpu_name_known_neither_way_says_nvls_is_off_and_how_to_turn_it_on(tmp_path):
    preset = _copy_of_h100_preset(tmp_path, "MI300X")
    inputs = load_scenario(_scenario(tmp_path, {"preset": preset, "gpus": 16}))
    (note,) = [w for w in inputs.warnings if "NVLS" in w]
    assert note.startswith(f"{tmp_path}/s.yaml: cluster: NVLS off: GPU name 'MI300X' is none of H100, ")
    assert "set nvls: true" in note
    # said either way, it is quiet; said true, NVLS runs
    for nvls in (True, False):
        inputs = load_scenario(_scenario(tmp_path, {"preset": preset, "gpus": 16, "nvls": nvls}))
        assert not [w for w in inputs.warnings if "NVLS" in w]
    assert load_cluster({"preset": preset, "gpus": 16, "nvls": True}, "c").nvls
    # a GPU known to have no NVSwitch-3 says nothing (an A100 copy is no news)
    inputs = load_scenario(_scenario(tmp_path, {"preset": _copy_of_h100_preset(tmp_path, "A100-SXM4-80GB"),
                                                "gpus": 16}))
    assert not [w for w in inputs.warnings if "NVLS" in w]


def test_a_forced_nvls_on_nodes_said_without_it_is_refused_naming_the_field_and_why():
    with pytest.raises(InputError) as caught:
        load_cluster({"preset": "dgx-h100", "nvls": False, "gpus": 16, "nccl_algo": "nvls"}, "s: cluster")
    message = caught.value.message
    assert message.startswith("s: cluster.nccl_algo: nvls needs NVSwitch-3 (NVLink SHARP) in the nodes, and ")
    assert "s: cluster.nvls is false" in message
    assert message.endswith("use ring or tree (or nvls: true, for nodes that have it)")


def test_a_forced_nvls_on_a100_nodes_names_their_switch_and_an_h100_preset():
    """nvls: true is no fix there: the DGX A100's NVSwitch has no NVLink SHARP."""
    with pytest.raises(InputError) as caught:
        load_cluster({"preset": "dgx-a100-80gb", "gpus": 16, "nccl_algo": "nvls"}, "s: cluster")
    message = caught.value.message
    assert message.startswith("s: cluster.nccl_algo: nvls, but preset dgx-a100-80gb's A100-SXM4-80GB nodes have "
                              "a 2nd-generation NVSwitch")
    assert message.endswith("use ring or tree, or an H100 preset (preset: dgx-h100)")


def test_a_forced_nvls_on_a_copied_preset_of_an_unknown_gpu_says_the_name_decided(tmp_path):
    with pytest.raises(InputError, match=r"nvls needs NVSwitch-3 .* the GPU MI300X has none"):
        load_cluster({"preset": _copy_of_h100_preset(tmp_path, "MI300X"), "gpus": 16, "nccl_algo": "nvls"}, "c")


def test_nvls_must_be_true_or_false(tmp_path):
    with pytest.raises(InputError, match=r"^c.nvls: must be true or false .*got 'yes'"):
        load_cluster({"preset": "dgx-h100", "gpus": 16, "nvls": "yes"}, "c")
