"""Scenario YAML: one file that names (or inlines) every input of a run.

Schema (paths are relative to the scenario file; an inline mapping may replace any file)::

    workload: ../workloads/examples/all_reduce/8npus_1MB/all_reduce   # ET prefix, or
    workload: {generate: transformer, preset: llama2-7b, dp: 8}     # generated and cached
    workload: {generate: gemm, mnk: layers.csv, parallel: DATA, num_npus: 16, array: 32x32}
    workload: models/Resnet50_DataParallel.txt   # ASTRA-sim 1.0 text: converted and cached
    num_passes: 1                        # optional: training iterations of a .txt workload
    system: configs/system.json          # or an inline mapping with the JSON's keys
    network: configs/network.yml         # or inline {topology: [Ring], npus_count: [8], ...}
    remote_memory: configs/memory.json   # optional, default NO_MEMORY_EXPANSION
    comm_groups: configs/groups.json     # optional
    backend: congestion_unaware          # optional: or congestion_aware, packet
    num_queues_per_dim: 1                # optional
    injection_scale: 1.0                 # optional
    fold_symmetry: true                  # optional: simulate symmetric NPUs once (README)
    cost: {tiers: [node, pod], link: {pod: 10}}   # optional: network prices (cost_model.py)

Paths *inside* system configs (custom collectives) resolve from the working directory, as
they do for ASTRA-sim.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import yaml

from simpy_astra.config import (
    load_comm_groups_json,
    load_network_yaml,
    load_remote_memory_json,
    load_system_json,
)
from simpy_astra.errors import InputError
from simpy_astra.simulation import SimulationInputs

SCENARIO_KEYS = {"workload", "system", "network", "remote_memory", "comm_groups", "backend",
                 "num_queues_per_dim", "injection_scale", "name", "description", "num_passes",
                 "fold_symmetry", "plugins", "cost"}


def inputs_from_astra_flags(workload: str, system: str, network: str, remote_memory: str,
                            comm_groups: str | None, backend: str, queues_per_dim: int = 1,
                            injection_scale: float = 1.0, num_passes: int = 1) -> SimulationInputs:
    """Load the four (five) ASTRA-sim input files exactly as the reference binary would.

    A ``.txt`` workload is an ASTRA-sim 1.0 text file: it is converted (and cached) for the
    network's NPU count and ``num_passes`` training iterations first.
    """
    if queues_per_dim < 1:
        raise InputError(f"--num-queues-per-dim must be >= 1 (got {queues_per_dim})")
    net = load_network_yaml(network)
    if workload.endswith(".txt"):
        from workloads.text_workload import text_workload_prefix

        workload = text_workload_prefix(workload, net.total_npus, num_passes)
    return SimulationInputs(
        workload_prefix=workload,
        system=load_system_json(system, injection_scale=injection_scale),
        network=net,
        remote_memory=load_remote_memory_json(remote_memory),
        comm_groups=load_comm_groups_json(comm_groups, net.total_npus),
        backend=backend,
        queues_per_dim=queues_per_dim,
    )


def _materialise(scenario: str, key: str, value: Any, suffix: str, tmpdir: str) -> str | None:
    """A path for ``value``: resolved relative to the scenario, or an inline mapping written out."""
    if value is None:
        return None
    base = os.path.dirname(os.path.abspath(scenario))
    if isinstance(value, str):
        return value if os.path.isabs(value) else os.path.join(base, value)
    if isinstance(value, dict):
        path = os.path.join(tmpdir, f"{key}{suffix}")
        with open(path, "w") as f:
            if suffix == ".yml":
                yaml.safe_dump(value, f)
            else:
                json.dump(value, f)
        return path
    raise InputError(f"{scenario}: field '{key}' must be a file path or a mapping")


def load_plugins(modules: Any, where: str) -> None:
    """Import the user's plugin modules (they register algorithms and topologies)."""
    from simpy_astra.plugins import PluginError, import_module

    if isinstance(modules, str):
        modules = [modules]
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        raise InputError(f"{where}: must be a list of module names, e.g. [my_pkg.algos]")
    for module in modules:
        try:
            import_module(module)
        except PluginError as exc:
            raise InputError(f"{where}: {exc}") from None


def load_scenario(path: str, backend: str | None = None) -> SimulationInputs:
    if not os.path.exists(path):
        raise InputError(f"{path}: scenario file does not exist")
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML ({exc})".replace("\n", " ")) from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: a scenario must be a mapping with keys workload, system, network")
    unknown = set(doc) - SCENARIO_KEYS
    if unknown:
        raise InputError(f"{path}: unknown field(s) {sorted(unknown)}; allowed: {sorted(SCENARIO_KEYS)}")
    for key in ("workload", "system", "network"):
        if key not in doc:
            raise InputError(f"{path}: field '{key}' is missing")
    load_plugins(doc.get("plugins", []), f"{path}: field 'plugins'")
    generated_groups = None
    if isinstance(doc["workload"], dict):
        if "generate" not in doc["workload"]:
            raise InputError(f"{path}: field 'workload' as a mapping needs 'generate: NAME' "
                             f"(or give an ET prefix)")
        from workloads.generated import materialise, resolve_paths

        spec = resolve_paths(doc["workload"], os.path.dirname(os.path.abspath(path)))
        made = materialise(spec, where=f"{path}: workload")
        doc = {**doc, "workload": made.prefix}
        generated_groups = made.comm_groups
    with tempfile.TemporaryDirectory(prefix="simpy-astra-") as tmp:
        workload = _materialise(path, "workload", doc["workload"], "", tmp)
        system = _materialise(path, "system", doc["system"], ".json", tmp)
        network = _materialise(path, "network", doc["network"], ".yml", tmp)
        memory = _materialise(path, "remote_memory",
                              doc.get("remote_memory", {"memory-type": "NO_MEMORY_EXPANSION"}), ".json", tmp)
        groups = _materialise(path, "comm_groups", doc.get("comm_groups"), ".json", tmp) or generated_groups
        inputs = inputs_from_astra_flags(
            workload, system, network, memory, groups,
            backend=backend or doc.get("backend", "congestion_unaware"),
            queues_per_dim=int(doc.get("num_queues_per_dim", 1)),
            injection_scale=float(doc.get("injection_scale", 1.0)),
            num_passes=_positive_int(path, doc, "num_passes"),
        )
    if doc.get("cost") is not None:  # over the network YAML's own cost block
        from simpy_astra.config import with_cost

        inputs.network = with_cost(inputs.network, doc["cost"], path)
    if "fold_symmetry" in doc:
        fold = doc["fold_symmetry"]
        if not isinstance(fold, bool):
            raise InputError(f"{path}: field 'fold_symmetry' must be true or false (got {fold!r})")
        inputs.fold_symmetry = fold
    return inputs


def _positive_int(path: str, doc: dict, key: str, default: int = 1) -> int:
    value = doc.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{path}: field '{key}' must be a positive integer (got {value!r})")
    return value
