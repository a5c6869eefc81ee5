"""A twelfth hunt for inputs that ran as something other than what they say, or were refused
where they would run: each is now refused before the run in one line naming the file (or
flag), the field and the fix, or runs as it says."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simpy_astra.config.cluster import PRESET_DIR, has_nvls
from simpy_astra.config.scenario import load_scenario
from tests.test_hostile_hunt7 import ARGS, SCENARIOS, _error_lines  # noqa: F401 (later cases)


def _copy_of_h100_preset(tmp_path: Path, gpu_name: str) -> str:
    """A user's copy of the H100 preset for another GPU, its node silent on NVLS."""
    doc = yaml.safe_load((Path(PRESET_DIR) / "dgx-h100.yaml").read_text())
    doc["gpu"]["name"] = gpu_name
    del doc["node"]["nvls"]
    path = tmp_path / f"{gpu_name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.parametrize("gpu, nvls", [
    ("B300-SXM6-288GB", True), ("GB300", True), ("H20", True), ("NVIDIA H20 96GB HBM3", True),
    ("GB200 NVL72", True), ("H100-SXM5-80GB", True),
    # PCIe cards: NVLink bridges between two or four cards at most, no NVSwitch, no NVLS
    ("H100-PCIe-80GB", False), ("NVIDIA H100 PCIe", False), ("H100 NVL", False), ("H200-NVL", False),
])
def test_nvls_by_the_gpus_name_knows_blackwell_ultra_h20_and_pcie_cards(tmp_path, gpu, nvls):
    # B300, GB300 and H20 (NVSwitch boards) ran with NVLS off and a warning that the name was
    # unknown; an H100 PCIe card ran NVLS all-reduces over an NVSwitch it does not have
    assert has_nvls(gpu) is nvls
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({"workload": {"generate": "megatron", "args": ARGS},
                                        "cluster": {"preset": _copy_of_h100_preset(tmp_path, gpu), "gpus": 8}}))
    inputs = load_scenario(str(scenario))
    assert not [w for w in inputs.warnings if "NVLS" in w], inputs.warnings
