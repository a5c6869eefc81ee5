"""Load the network YAML and system JSON the calibration commands start from, as mappings."""

from __future__ import annotations

import json
from typing import Any

import yaml

from simpy_astra.calibration.model import check_network, default_system
from simpy_astra.config import load_network_yaml, load_system_json
from simpy_astra.errors import InputError


def load_network(path: str) -> dict[str, Any]:
    load_network_yaml(path)  # the simulator's own checks and messages
    with open(path) as f:
        network = yaml.safe_load(f)
    check_network(network, path)
    return network


def load_system(path: str | None, network: dict[str, Any]) -> dict[str, Any]:
    """The given system JSON, with calibrate's defaults for every key it leaves out."""
    if path is None:
        return default_system(network)
    load_system_json(path)
    with open(path) as f:
        given = json.load(f)
    return {**default_system(network), **given}


def require_matplotlib(command: str) -> None:
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise InputError(f"{command} draws its plot with matplotlib, which is not installed: "
                         f"pip install 'simpy-astra[calibrate]'")
