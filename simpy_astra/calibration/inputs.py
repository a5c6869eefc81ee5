"""Load the network YAML and system JSON the calibration commands start from, as mappings."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from typing import Any

from simpy_astra.calibration.model import check_network, default_system
from simpy_astra.cli.args import ArgumentParser
from simpy_astra.config import load_network_yaml, load_system_json
from simpy_astra.config.readers import load_json, read_yaml_file
from simpy_astra.errors import InputError


def log_parser(command: str, description: str, network_help: str, system_help: str, out_help: str,
               system_required: bool) -> argparse.ArgumentParser:
    """The flags ``calibrate`` and ``validate`` share: logs, network, system, out, collective."""
    p = ArgumentParser(prog=f"simpy-astra {command}", description=description)
    p.add_argument("logs", nargs="+", metavar="LOG", help="nccl-tests output (all_reduce_perf, ...)")
    p.add_argument("--network", required=True, help=network_help)
    p.add_argument("--system", required=system_required, default=None, help=system_help)
    p.add_argument("--out", required=True, help=out_help)
    p.add_argument("--collective", default=None,
                   help="the collective of every log, when the logs do not name it")
    p.add_argument("--backend", default="congestion_unaware",
                   choices=["congestion_unaware", "congestion_aware", "packet"],
                   help="network backend to simulate with (default congestion_unaware)")
    p.add_argument("--gpu-memory-bw", type=float, default=None, metavar="GBPS",
                   help="GPU memory bandwidth in GB/s (1e9 B/s) for the local copy out-of-place "
                        "all-gathers and all-to-alls make (default: the datasheet value of the "
                        "logged GPU model; none if unknown)")
    return p


def load_network(path: str) -> dict[str, Any]:
    load_network_yaml(path)  # the simulator's own checks and messages
    network = read_yaml_file(path, "network YAML")  # read as the simulator reads it (YAML 1.2)
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
            load_system_json(probe)
        except InputError as exc:
            raise InputError(str(exc).replace(probe, path)) from None
    return merged
