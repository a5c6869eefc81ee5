"""Load the network YAML and system JSON the calibration commands start from, as mappings."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

from simpy_astra.calibration.model import check_network, default_system, refuse_unfittable
from simpy_astra.config import load_system_json, network_from_mapping
from simpy_astra.config.readers import load_json, load_yaml_mapping
from simpy_astra.errors import InputError


def load_network(path: str) -> dict[str, Any]:
    network = load_yaml_mapping(path, "network YAML", "topology: [ Ring ]")  # as the simulator reads it
    refuse_unfittable(network, path)  # before the simulator builds a graph calibrate cannot fit
    # the simulator's own checks and messages, and its warnings (a misspelt 'latncy' kept the given latency)
    for line in network_from_mapping(network, path).warnings:
        print(f"warning: {line}", file=sys.stderr)
    check_network(network, path)
    return network


def load_system(path: str | None, network: dict[str, Any]) -> dict[str, Any]:
    """The given system JSON, with calibrate's defaults for every key it leaves out."""
    if path is None:
        return default_system(network)
    if not os.path.exists(path):
        load_system_json(path)  # raises the simulator's own missing-file message
    given = load_json(path, "system JSON")  # duplicate keys, depth: the simulator's own checks
    if not isinstance(given, dict):
        raise InputError.at(path, None, "a system JSON must be an object of ASTRA-sim system keys")
    merged = {**default_system(network), **given}
    # the simulator's own checks, on what will be simulated, reported against the given file
    with tempfile.TemporaryDirectory(prefix="simpy-astra-calib-") as tmp:
        probe = os.path.join(tmp, "system.json")
        with open(probe, "w") as f:
            json.dump(merged, f)
        try:
            ignored = load_system_json(probe).ignored
        except InputError as exc:
            raise InputError(str(exc).replace(probe, path)) from None
    for line in ignored:  # a misspelt key ('endpoint-dealy') kept the default without a word, as run warns
        print(f"warning: {line.replace(probe, path)}", file=sys.stderr)
    return merged
