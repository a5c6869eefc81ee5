"""Scenario YAML: one file that names (or inlines) every input of a run.

Schema (paths are relative to the scenario file; an inline mapping may replace
any file; lines fit 80 columns, as ``run --help`` shows them)::

    workload: ../workloads/examples/all_reduce/8npus_1MB/all_reduce
                                   # ET prefix, or
    workload: {generate: transformer, preset: llama2-7b, dp: 8}
                                   # generated and cached
    workload: {generate: gemm, mnk: layers.csv, parallel: DATA,
               num_npus: 16, array: 32x32}
    workload: models/Resnet50_DataParallel.txt
                                   # ASTRA-sim 1.0 text: converted and cached
    workload: {generate: my_gen:pipeline, stages: 4}
                                   # a generator of yours (docs/generators.md)
    num_passes: 1                  # optional: iterations of a .txt workload
    system: configs/system.json    # or an inline mapping with the JSON's keys
    network: configs/network.yml   # or inline {topology: [Ring], ...}
    remote_memory: configs/memory.json  # optional, default NO_MEMORY_EXPANSION
    comm_groups: configs/groups.json    # optional
    backend: congestion_unaware    # optional: or congestion_aware, packet
    plugins: [my_algos]            # optional: your modules, imported first;
                                   # they may register algorithms, topologies,
                                   # link models, backends, generators
    num_queues_per_dim: 1          # optional
    injection_scale: 1.0           # optional
    fold_symmetry: true            # optional: simulate symmetric NPUs once
                                   # (docs/performance.md)
    cost: {tiers: [node, pod], link: {pod: 10}}
                                   # optional: network prices (cost_model.py)
    jobs:                          # instead of workload: several jobs
      - {name: a, workload: {generate: microbench, ...}, npus: [0, 1, 2, 3]}
      - {name: b, workload: traces/b, placement: strided, start_ns: 1000000}
        # per job: npus (physical NPU of each rank) or placement
        # (contiguous | strided | random, with seed), and optionally system,
        # comm_groups, start_ns (docs/jobs.md)

Paths *inside* system configs (custom collectives) resolve from the working
directory, as they do for ASTRA-sim.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import Any

from simpy_astra.config import (
    SystemConfig,
    load_network_yaml,
    load_remote_memory_json,
    load_system_json,
    network_from_mapping,
    read_yaml_file,
    remote_memory_from_mapping,
    system_from_mapping,
    with_cost,
)
from simpy_astra.config.astra_inputs import check_backend, check_queues, run_inputs
from simpy_astra.config.cluster_system import plays_custom_collectives, refuse_unplayed_algorithms
from simpy_astra.config.inputs import SimulationInputs
from simpy_astra.config.key_homes import key_home
from simpy_astra.config.plugin_modules import load_plugins
from simpy_astra.config.scenario_cluster import (
    on_preset_routes,
    reads_gpu,
    refuse_roofline_compute,
    refuse_unread_beside_cluster,
    refuse_without_cluster,
    with_cluster,
)
from simpy_astra.config.scenario_files import comm_groups_field, read_block
from simpy_astra.config.scenario_jobs import jobs_inputs
from simpy_astra.config.scenario_workload import generator_entry, read_workload
from simpy_astra.config.unknown_keys import refuse_label_values, refuse_unknown_keys
from simpy_astra.config.unread_cluster_keys import (
    refuse_unread_cluster_keys,
    unplayed_latencies,
    unused_algorithm_shares,
)
from simpy_astra.engine.nccl_names import MODEL_ONLY
from simpy_astra.errors import InputError, integer_fix
from simpy_astra.infra.sweep_outputs import refuse_sweep_output
from simpy_astra.network.backends import DEFAULT_BACKEND
from simpy_astra.plugins import search_also

#: every top-level scenario field; any other key is an error naming the nearest of these
#: (``refuse_unknown_keys``). A new field is added here by the change that reads it.
SCENARIO_KEYS = {"workload", "system", "network", "remote_memory", "comm_groups", "backend",
                 "num_queues_per_dim", "injection_scale", "name", "description", "num_passes",
                 "fold_symmetry", "plugins", "cost", "jobs", "cluster"}


def load_scenario(path: str, backend: str | None = None, checking: bool = False,
                  doc: Any = None, backend_flag: str = "--network-backend") -> SimulationInputs:
    """Read a scenario YAML and every input it names or inlines; nothing is written but a
    generated workload's cache entry. Errors name the scenario and the field as written.
    ``checking``: only its errors are wanted (``sweep --list``), so a slow generator is not run
    (``NotGenerated`` is raised where its traces would be needed). ``doc``: the file's mapping,
    held by a caller that would write it only for this to read it back (a sweep point).
    ``backend_flag``: how the caller gave ``backend`` (Python's ``backend=``), for its errors."""
    doc = read_yaml_file(path, "scenario YAML") if doc is None else doc
    refuse_sweep_output(path, doc, "scenario")
    if not isinstance(doc, dict):  # an empty file (or comments only) reads as None
        got = "is empty (no YAML in it)" if doc is None else f"holds a {type(doc).__name__}, not fields"
        raise InputError(f"{path}: {got}; a scenario is a mapping with workload: and either cluster: "
                         f"{{preset: NAME, gpus: N}} (a real job) or system: and network: (run --help lists them)")
    _refuse_another_input(path, doc)
    refuse_unknown_keys(path, doc, SCENARIO_KEYS, "scenario", key_home)
    refuse_label_values(path, doc, "scenario")
    unknown: list[str] = []
    if "jobs" in doc and "workload" in doc:
        raise InputError(f"{path}: jobs: give either workload (one job) or jobs (several), not both")
    if "jobs" in doc and "comm_groups" in doc:  # no job read it: each job's groups name its own ranks
        raise InputError(f"{path}: comm_groups: read by no job; put it in one (jobs[i].comm_groups)")
    search_also(os.path.dirname(os.path.abspath(path)))  # plugins and module:name specs beside it
    # first: a plug-in may register the backend, generator, algorithms or topologies named below
    load_plugins(doc.get("plugins", []), f"{path}: field 'plugins'")
    user_network = "network" in doc  # the user's own network: its topology, not the preset's routes
    user_system = "system" in doc  # the user's own system: its algorithms, not the preset's
    doc, cluster, prepared = with_cluster(path, doc)
    job_layout = prepared.layout() if prepared is not None else None
    gathers = (True, False) if job_layout is None else (job_layout.gathers, job_layout.gathers_on_every_rank)
    unknown += [*cluster.idle_keys(doc["cluster"]), *unused_algorithm_shares(cluster, doc["cluster"], *gathers)] \
        if cluster is not None else []
    on_preset = cluster is not None and not user_network  # the preset's own machine
    if cluster is not None and user_network and cluster.nccl_algo in MODEL_ONLY:
        raise InputError(f"{path}: cluster.nccl_algo: {cluster.nccl_algo} runs on the preset's machine; "
                         f"with a network of your own collectives are played on it (leave out "
                         f"network, or nccl_algo)")
    if cluster is None and "jobs" not in doc:  # before the fields a cluster would have given
        refuse_without_cluster(path, doc.get("workload"))
    for key in ("workload", "system", "network") if "jobs" not in doc else ("network",):
        if key not in doc:
            raise InputError(f"{path}: field '{key}' is missing")
    queues = check_queues(f"{path}: field 'num_queues_per_dim'", doc.get("num_queues_per_dim", 1))
    injection_scale = _number(path, doc, "injection_scale", 1.0)
    num_passes = _positive_int(path, doc, "num_passes")
    if cluster is not None and num_passes != 1:  # it would be ignored, the figures those of one
        raise InputError(f"{path}: field 'num_passes': repeats an ASTRA-sim 1.0 .txt workload; a cluster's "
                         f"job is simulated for one training iteration (its figures are per iteration): "
                         f"remove num_passes")
    if cluster is not None:
        refuse_unread_beside_cluster(path, doc, queues, injection_scale, user_network)
    text = isinstance(doc.get("workload"), str) and doc["workload"].endswith(".txt")
    if num_passes != 1 and not text:  # an ET graph runs once; its passes were silently one
        raise InputError(f"{path}: field 'num_passes': repeats an ASTRA-sim 1.0 .txt workload; this workload is "
                         f"Chakra ETs, which run their graph once (a generator's own num_passes parameter writes "
                         f"iterations into its ETs): remove num_passes")
    if backend is not None:
        chosen = check_backend(backend_flag, backend)
    else:
        chosen = check_backend(f"{path}: field 'backend'", doc.get("backend", DEFAULT_BACKEND))
    if cluster is not None:
        how = backend_flag if backend is not None else "field 'backend'"
        refuse_unread_cluster_keys(path, doc["cluster"], (user_network, user_system), chosen, how,
                                    reads_gpu(prepared))
    if "fold_symmetry" in doc and not isinstance(doc["fold_symmetry"], bool):
        raise InputError(f"{path}: field 'fold_symmetry' must be true or false (got {doc['fold_symmetry']!r})")
    # the preset's network is the cluster's (its bandwidths are cluster keys): errors name that
    net = read_block(path, "cluster" if on_preset else "network", doc["network"], load_network_yaml,
                     network_from_mapping)
    if cluster is not None and user_network and net.total_npus != cluster.gpus:  # before the workload blames either
        raise InputError(f"{path}: network: has {net.total_npus} NPUs, cluster.gpus is {cluster.gpus}; make them "
                         f"one count (or leave out network: the cluster builds its own)")
    if cluster is not None and user_network and not user_system:  # the preset's system on this network
        doc = {**doc, "system": cluster.system_mapping(dims=list(net.npus_count))}
    if on_preset:  # every pair on its route through NVSwitch and rails
        net, said = on_preset_routes(path, doc, net, cluster, chosen)
        unknown += said
    memory = read_block(path, "remote_memory", doc.get("remote_memory", {"memory-type": "NO_MEMORY_EXPANSION"}),
                        load_remote_memory_json, remote_memory_from_mapping)
    if cluster is not None and prepared is not None and memory.memory_type != "NO_MEMORY_EXPANSION" \
            and not generator_entry(prepared.generator).writes_remote_memory:
        raise InputError(f"{path}: field 'remote_memory': generate {prepared.generator} writes no remote-memory "
                         f"load or store (its tensors live in the GPU's memory), so it would change nothing; "
                         f"remove remote_memory")
    groups = comm_groups_field(path, doc["comm_groups"], net.total_npus) if "comm_groups" in doc else None

    def read_system(value: Any, key: str) -> SystemConfig:
        return read_block(path, key, value, lambda p: load_system_json(p, injection_scale=injection_scale),
                          lambda d, src: system_from_mapping(d, src, injection_scale))

    # system: null is refused as any other non-mapping (it ended on an AssertionError); only
    # jobs may leave it out, each giving its own
    system = read_system(doc["system"], "system") if doc.get("system") is not None or "jobs" not in doc else None
    if "jobs" in doc:
        return jobs_inputs(path, doc, system, read_system, net, memory, chosen, queues, unknown, checking)
    assert system is not None
    if net.nccl is not None and user_system:  # NCCL's model times them: the system's algorithms never run
        refuse_unplayed_algorithms(system, cluster.system_mapping(prepared and prepared.layout().blocks), chosen,
                                   net.nccl)
    if net.nccl is not None and prepared is not None:  # a custom collective of the system plays its messages
        custom, layout = plays_custom_collectives(system), prepared.layout()
        unknown += unplayed_latencies(cluster, doc["cluster"], chosen, layout.plays_messages or custom,
                                      None if custom else layout.played_pairs)
    workload, groups, info = read_workload(path, doc["workload"], prepared, cluster is not None, net.total_npus,
                                           groups, checking)
    if cluster is not None and prepared is not None and not system.roofline_enabled:
        refuse_roofline_compute(path, prepared.generator)
    if "cost" in doc:  # over the network YAML's own cost block
        net = with_cost(net, doc["cost"], path)
    inputs = run_inputs(workload, system, net, memory, groups, chosen, queues, num_passes)
    fold = doc.get("fold_symmetry")
    if net.rails is not None and not net.rails.symmetric and fold is None:  # leaves break the grid's symmetry
        fold = False  # (asked for, the run says why it does not fold: folding.run.fold_run)
    return replace(inputs, workload=info, warnings=[*unknown, *info.warnings, *inputs.warnings],
                   fold_symmetry=fold)


#: keys that say which of ASTRA-sim's inputs a file given as a scenario is
_OTHER_INPUTS = (("network YAML", ("topology", "npus_count")),
                 ("system JSON", ("scheduling-policy", "preferred-dataset-splits", "all-reduce-implementation")),
                 ("remote-memory JSON", ("memory-type",)))


def _refuse_another_input(path: str, doc: dict) -> None:
    """One of ASTRA-sim's own inputs given where a scenario is wanted: said so, with where it
    goes, not as its every key being no scenario field."""
    if "base" in doc and "axes" in doc:  # a sweep (whose name may be a scenario's key too)
        raise InputError(f"{path}: is a sweep (it has base: and axes:), not a scenario; run it with: simpy-astra "
                         f"sweep {path} --out DIR")
    if set(doc) & SCENARIO_KEYS:
        return
    if "gpu" in doc and "node" in doc:
        raise InputError(f"{path}: is a cluster preset, not a scenario; a scenario names it (cluster: {{preset: "
                         f"{path}, gpus: N}}) beside workload: {{generate: megatron, args: ...}}")
    for what, keys in _OTHER_INPUTS:
        if any(key in doc for key in keys):
            field = what.split()[0].replace("-", "_")
            raise InputError(f"{path}: is a {what}, not a scenario; a scenario names it ({field}: {path}) beside "
                             f"workload: and the other inputs (scenarios/default.yaml is one)")


def _number(path: str, doc: dict, key: str, default: float) -> float:
    value = doc.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InputError(f"{path}: field '{key}' must be a finite number >= 0 (got {value!r})")
    return float(value)


def _positive_int(path: str, doc: dict, key: str, default: int = 1) -> int:
    value = doc.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{path}: field '{key}' must be a positive integer (got {value!r}){integer_fix(value, 1)}")
    return value
