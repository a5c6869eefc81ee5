"""Load the network YAML and system JSON the calibration commands start from, as mappings, the
backend they simulate with, and the records ``calibrate`` wrote that ``validate`` reads back
(``--holdout``, ``--regimes``)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

from simpy_astra.calibration.network_dims import check_network, refuse_unfittable
from simpy_astra.calibration.system_defaults import default_system
from simpy_astra.config import load_system_json, network_from_mapping
from simpy_astra.config.astra_inputs import check_backend
from simpy_astra.config.json_reader import load_json, parse_json
from simpy_astra.config.plugin_modules import load_plugins
from simpy_astra.config.yaml_reader import load_yaml_mapping
from simpy_astra.errors import InputError
from simpy_astra.infra import files


def load_backend(backend: str, plugins: list[str]) -> str:
    """``--backend``, read as ``run`` reads ``--network-backend``: the ``--plugin`` modules
    loaded first, so a plug-in's backend is taken by its name (or as
    ``package.module:BackendSpec``); the name it runs under."""
    load_plugins(plugins, "--plugin")
    return check_backend("--backend", backend)


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


def read_record(path: str, flag: str, what: str, name: str) -> Any:
    """A JSON file ``calibrate`` wrote (``name``, given as ``flag``), read as the configs are (a key
    given twice, NaN, an empty file are refused). Another of its files given instead (its
    network.yml) was told 'JSON has no comments: remove it' of the YAML's first comment."""
    text = files.read_text(path, what)
    if text.strip() and not text.lstrip().startswith("{"):
        raise InputError(f"{path}: {flag}: is not a JSON object, so not calibrate's {name}; give the {name} "
                         f"calibrate wrote (beside its network.yml and system.json)")
    return parse_json(path, text, what)
