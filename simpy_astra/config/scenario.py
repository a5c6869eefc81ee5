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

import difflib
import math
import os
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from simpy_astra.config import (
    NetworkConfig,
    RemoteMemoryConfig,
    SystemConfig,
    comm_groups_from_mapping,
    ignored_comm_groups_warning,
    load_comm_groups_json,
    load_network_yaml,
    load_remote_memory_json,
    load_system_json,
    network_from_mapping,
    read_yaml_file,
    remote_memory_from_mapping,
    system_from_mapping,
    with_cost,
)
from simpy_astra.config.cluster_system import refuse_unplayed_algorithms
from simpy_astra.config.comm_groups import WrittenGroups
from simpy_astra.config.inputs import SimulationInputs, WorkloadInfo
from simpy_astra.config.key_homes import key_home
from simpy_astra.config.plugin_modules import load_plugins
from simpy_astra.config.readers import nearest_key, refuse_label_values, refuse_unknown_keys
from simpy_astra.config.system import REQUIRED_KEYS
from simpy_astra.config.unread_cluster_keys import refuse_unread_cluster_keys, unused_algorithm_shares
from simpy_astra.errors import InputError, integer_fix, non_ascii
from simpy_astra.infra import files
from simpy_astra.infra.sweep_outputs import refuse_sweep_output
from simpy_astra.network.backends import BACKENDS, DEFAULT_BACKEND, unread_packet_settings
from simpy_astra.network.backends import lookup as lookup_backend
from simpy_astra.plugins import NOT_LOADED_HINT, PluginError, search_also

if TYPE_CHECKING:
    from simpy_astra.workloads.generated import Prepared

T = TypeVar("T")

#: every top-level scenario field; any other key is an error naming the nearest of these
#: (``refuse_unknown_keys``). A new field is added here by the change that reads it.
SCENARIO_KEYS = {"workload", "system", "network", "remote_memory", "comm_groups", "backend",
                 "num_queues_per_dim", "injection_scale", "name", "description", "num_passes",
                 "fold_symmetry", "plugins", "cost", "jobs", "cluster"}


#: queues per dimension beyond which a run only exhausts memory (each is a Python object per
#: NPU and dimension); ASTRA-sim's examples use 1 to 4
MAX_QUEUES_PER_DIM = 4096


def check_backend(where: str, backend: Any) -> str:
    """The name of the network backend ``backend`` names (a registered name, or a plug-in's
    ``package.module:BackendSpec``); errors name ``where`` (the flag, or the scenario's
    field), so a scenario's typo is not reported as a flag the user never gave."""
    try:
        spec = lookup_backend(backend) if isinstance(backend, str) else None
    except PluginError as exc:
        raise InputError(f"{where}: {exc}") from None
    if spec is None:
        got = "an empty string" if backend == "" else repr(backend)
        near = difflib.get_close_matches(backend, list(BACKENDS), n=1) if isinstance(backend, str) else []
        loaded = (f"; did you mean '{near[0]}'?" if near else
                  f"; {NOT_LOADED_HINT}" if isinstance(backend, str) and backend.isidentifier() else "")
        raise InputError(f"{where}: must be one of {', '.join(BACKENDS)}, or package.module:BackendSpec "
                         f"(got {got}; a backend of your own: docs/backends.md{loaded})")
    return spec.name


def check_queues(where: str, queues: Any) -> int:
    if isinstance(queues, bool) or not isinstance(queues, int) or not 1 <= queues <= MAX_QUEUES_PER_DIM:
        fix = integer_fix(queues, 1, MAX_QUEUES_PER_DIM) or "; ASTRA-sim's examples use 1"
        raise InputError(f"{where}: must be an integer from 1 to {MAX_QUEUES_PER_DIM} (got {queues!r}){fix}")
    return queues


def inputs_from_astra_flags(workload: str, system: str, network: str, remote_memory: str,
                            comm_groups: str | None, backend: str, queues_per_dim: int = 1,
                            injection_scale: float = 1.0, num_passes: int = 1) -> SimulationInputs:
    """Load the four (five) ASTRA-sim input files exactly as the reference binary would.

    A ``.txt`` workload is an ASTRA-sim 1.0 text file: it is converted (and cached) for the
    network's NPU count and ``num_passes`` training iterations first.
    """
    check_queues("--num-queues-per-dim", queues_per_dim)
    backend = check_backend("--network-backend", backend)
    _check_injection_scale("--injection-scale", injection_scale)
    net = load_network_yaml(network)
    return _inputs(workload, load_system_json(system, injection_scale=injection_scale), net,
                   load_remote_memory_json(remote_memory), comm_groups, backend, queues_per_dim, num_passes)


def _check_injection_scale(where: str, value: float) -> None:
    if not math.isfinite(value) or value < 0:
        raise InputError(f"{where}: must be a finite number >= 0 (got {value!r})")


def _inputs(workload: str, system: SystemConfig, net: NetworkConfig, memory: RemoteMemoryConfig,
            comm_groups: str | dict[int, tuple[int, ...]] | None, backend: str, queues_per_dim: int,
            num_passes: int) -> SimulationInputs:
    """The inputs of a run from parsed configs; comm groups as a path (read here) or parsed."""
    memory.check_total_npus(net.total_npus)
    system.check_npu_groups(net.total_npus)
    warnings = [*net.warnings, *unread_packet_settings(net, backend), *memory.warnings]
    if isinstance(comm_groups, dict):
        groups = comm_groups
    else:
        groups = load_comm_groups_json(comm_groups, net.total_npus)
        ignored = ignored_comm_groups_warning(comm_groups)
        if ignored:
            warnings.append(ignored)
    if workload.endswith(".txt"):
        # deferred: only a text workload needs its reader; an ASTRA-sim run does not load it
        from simpy_astra.workloads.text_workload import text_workload_prefix

        workload = text_workload_prefix(workload, net.total_npus, num_passes)
    return SimulationInputs(
        workload_prefix=workload,
        system=system,
        network=net,
        remote_memory=memory,
        comm_groups=groups,
        backend=backend,
        queues_per_dim=queues_per_dim,
        warnings=warnings,
    )


def _path(scenario: str, value: str, field: str) -> str:
    """A path written in a scenario, resolved relative to the scenario's folder. A leading
    ``~`` is not the home folder here (no shell reads a scenario): unless the scenario's folder
    holds a ``~``, it is refused with the full path to write, else the error was a missing
    ``SCENARIO_FOLDER/~/...`` file."""
    if os.path.isabs(value):
        return value
    folder = os.path.dirname(os.path.abspath(scenario))
    home = value.split(os.sep, 1)[0]
    if home.startswith("~") and os.path.expanduser(home) != home and not os.path.lexists(os.path.join(folder, home)):
        raise InputError.at(scenario, field, f"is {value}, but ~ means the home folder only to a shell; a "
                                             f"scenario's relative paths resolve from its own folder: write "
                                             f"{os.path.expanduser(value)}")
    return os.path.join(folder, value)


def _block(scenario: str, key: str, value: Any, from_path: Callable[[str], T],
           from_mapping: Callable[[Any, str], T]) -> T:
    """One input of a scenario: a file path (read with its own name in errors) or an inline
    mapping (errors name the scenario and the key, e.g. ``scenario.yaml: network``)."""
    if isinstance(value, str) and value:
        return from_path(_path(scenario, value, key))
    if isinstance(value, dict):
        return from_mapping(value, f"{scenario}: {key}")
    raise InputError.at(scenario, key, f"must be a file path or a mapping (got {value!r})")


def load_scenario(path: str, backend: str | None = None, checking: bool = False,
                  doc: Any = None) -> SimulationInputs:
    """Read a scenario YAML and every input it names or inlines; nothing is written but a
    generated workload's cache entry. Errors name the scenario and the field as written.
    ``checking``: only its errors are wanted (``sweep --list``), so a slow generator is not run
    (``NotGenerated`` is raised where its traces would be needed). ``doc``: the file's mapping,
    held by a caller that would write it only for this to read it back (a sweep point)."""
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
    search_also(os.path.dirname(os.path.abspath(path)))  # plugins and module:name specs beside it
    # first: a plug-in may register the backend, generator, algorithms or topologies named below
    load_plugins(doc.get("plugins", []), f"{path}: field 'plugins'")
    user_network = "network" in doc  # the user's own network: its topology, not the preset's routes
    user_system = "system" in doc  # the user's own system: its algorithms, not the preset's
    doc, cluster, prepared = _with_cluster(path, doc)
    unknown += [*cluster.idle_keys(doc["cluster"]), *unused_algorithm_shares(cluster.where, doc["cluster"])] \
        if cluster is not None else []
    cluster_routes = cluster.rails() if cluster is not None and not user_network else None
    if cluster is not None and user_network and cluster.nccl_algo in ("tree", "nvls"):
        raise InputError(f"{path}: cluster.nccl_algo: {cluster.nccl_algo} runs on the preset's machine; "
                         f"with a network of your own collectives are played on it (leave out "
                         f"network, or nccl_algo)")
    if cluster is None and "jobs" not in doc:  # before the fields a cluster would have given
        _refuse_without_cluster(path, doc.get("workload"))
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
        _refuse_unread_beside_cluster(path, doc, queues, injection_scale, user_network)
    text = isinstance(doc.get("workload"), str) and doc["workload"].endswith(".txt")
    if num_passes != 1 and not text:  # an ET graph runs once; its passes were silently one
        raise InputError(f"{path}: field 'num_passes': repeats an ASTRA-sim 1.0 .txt workload; this workload is "
                         f"Chakra ETs, which run their graph once (a generator's own num_passes parameter writes "
                         f"iterations into its ETs): remove num_passes")
    if backend is not None:
        chosen = check_backend("--network-backend", backend)
    else:
        chosen = check_backend(f"{path}: field 'backend'", doc.get("backend", DEFAULT_BACKEND))
    if cluster is not None:
        how = "--network-backend" if backend is not None else "field 'backend'"
        refuse_unread_cluster_keys(path, doc["cluster"], (user_network, user_system), chosen, how,
                                    _reads_gpu(prepared))
    if "fold_symmetry" in doc and not isinstance(doc["fold_symmetry"], bool):
        raise InputError(f"{path}: field 'fold_symmetry' must be true or false (got {doc['fold_symmetry']!r})")
    # the preset's network is the cluster's (its bandwidths are cluster keys): errors name that
    net = _block(path, "network" if cluster_routes is None else "cluster", doc["network"], load_network_yaml,
                 network_from_mapping)
    if cluster is not None and user_network and net.total_npus != cluster.gpus:  # before the workload blames either
        raise InputError(f"{path}: network: has {net.total_npus} NPUs, cluster.gpus is {cluster.gpus}; make them "
                         f"one count (or leave out network: the cluster builds its own)")
    if cluster_routes is not None:  # every pair on its route through NVSwitch and rails
        # the analytical backend times an all-reduce as NCCL does; the others play its messages
        timed = BACKENDS[chosen].times_nccl
        if not timed and cluster.nccl_algo in ("tree", "nvls"):
            raise InputError(f"{path}: cluster.nccl_algo: {cluster.nccl_algo} is timed by the "
                             f"{DEFAULT_BACKEND} backend only; the {chosen} backend plays collectives as "
                             f"messages (leave out nccl_algo, or the backend)")
        if not timed and not cluster_routes.symmetric:  # its links are the dimensions': no spine
            mine = "oversubscription" in doc["cluster"]  # else the preset's own: name its file, and the override
            raise InputError(f"{path}: cluster.{'' if mine else f'preset: {cluster.preset}: node.'}oversubscription: "
                             f"a spine of {cluster_routes.oversubscription:g}:1 over leaves of "
                             f"{cluster_routes.nodes_per_leaf} node(s) is charged by the {DEFAULT_BACKEND} backend only; "
                             f"the {chosen} backend plays the rails as a full fat tree (" + (
                                 "leave out oversubscription" if mine else "cluster: {oversubscription: 1} for this run")
                             + ", or the backend)")
        net = replace(net, rails=cluster_routes, nccl=cluster.nccl_all_reduce() if timed else None)
        unknown += [cluster.nvls_note] if timed and cluster.nvls_note else []  # only NCCL's model reads NVLS
    memory = _block(path, "remote_memory", doc.get("remote_memory", {"memory-type": "NO_MEMORY_EXPANSION"}),
                    load_remote_memory_json, remote_memory_from_mapping)
    if cluster is not None and prepared is not None and memory.memory_type != "NO_MEMORY_EXPANSION" \
            and not _generator_entry(prepared.generator).writes_remote_memory:
        raise InputError(f"{path}: field 'remote_memory': generate {prepared.generator} writes no remote-memory "
                         f"load or store (its tensors live in the GPU's memory), so it would change nothing; "
                         f"remove remote_memory")
    groups = _comm_groups(path, doc.get("comm_groups"), net.total_npus)

    def read_system(value: Any, key: str) -> SystemConfig:
        return _block(path, key, value, lambda p: load_system_json(p, injection_scale=injection_scale),
                      lambda d, src: system_from_mapping(d, src, injection_scale))

    # system: null is refused as any other non-mapping (it ended on an AssertionError); only
    # jobs may leave it out, each giving its own
    system = read_system(doc["system"], "system") if doc.get("system") is not None or "jobs" not in doc else None
    if "jobs" in doc:
        return _jobs_inputs(path, doc, system, read_system, net, memory, chosen, queues, unknown, checking)
    assert system is not None
    if net.nccl is not None and user_system:  # NCCL's model times them: the system's algorithms never run
        refuse_unplayed_algorithms(system, cluster.system_mapping(prepared and prepared.layout().blocks), chosen)
    workload, groups, info = _workload(path, doc["workload"], prepared, cluster is not None, net.total_npus,
                                       groups, checking)
    if cluster is not None and prepared is not None and not system.roofline_enabled:
        _refuse_roofline_compute(path, prepared.generator)
    if doc.get("cost") is not None:  # over the network YAML's own cost block
        net = with_cost(net, doc["cost"], path)
    inputs = _inputs(workload, system, net, memory, groups, chosen, queues, num_passes)
    fold = doc.get("fold_symmetry")
    if net.rails is not None and not net.rails.symmetric:  # leaves break the grid's symmetry
        fold = False
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


def _refuse_unread_beside_cluster(path: str, doc: dict, queues: int, injection_scale: float,
                                  user_network: bool) -> None:
    """ASTRA-sim's knobs that a cluster's job does not take, refused rather than run as if set:
    its own communicator groups (tp, dp, pp...), and, on the preset's machine, the system
    model's endpoint-delay scaling and dimension queues: the preset sets its system to run
    collectives as NCCL does (timed by NCCL's model; all-to-all and broadcast played as
    messages), and on a dense step x 1000 and 16 changed nothing to the ns."""
    if doc.get("comm_groups") is not None:
        raise InputError(f"{path}: field 'comm_groups': a cluster's job brings its own communicator groups "
                         f"(tp, dp, pp...), which these would replace; remove comm_groups")
    models = sorted({"link-model", "switch-model"} & set(doc["network"])) if isinstance(doc.get("network"), dict) else []
    if models and "topology" not in doc["network"]:  # read as a network of its own, it lacked its topology
        kind = models[0].removesuffix("-model")  # Simulation's keywords: link_model=, switch_model=
        raise InputError(f"{path}: network: beside cluster: replaces the preset's whole network, so {models[0]} alone "
                         f"is not added to it; run the preset's network with your model from Python: "
                         f"Simulation.from_scenario(path, backend='congestion_aware', {kind}_model=..., {kind}_params=...)")
    if user_network:
        return
    if injection_scale != 1.0:
        raise InputError(f"{path}: field 'injection_scale': it scales ASTRA-sim's system endpoint-delay, which "
                         f"a cluster preset sets itself to run collectives as NCCL does; remove injection_scale")
    if queues != 1:
        raise InputError(f"{path}: field 'num_queues_per_dim': a cluster's machine runs its collectives "
                         f"side by side as NCCL's streams do, not in ASTRA-sim's queues; remove num_queues_per_dim")


def _with_cluster(path: str, doc: dict) -> tuple[dict, Any, Prepared | None]:
    """``cluster:``: a preset builds system, network and backend (fields the scenario gives
    win), laid out as the generated job's layout says; the cluster and that job (None, None:
    no cluster)."""
    if "cluster" not in doc:  # an empty ``cluster:`` is the user's cluster, refused as such
        return doc, None, None
    # deferred: only a scenario with a cluster reads it; an ASTRA-sim run does not load it
    from simpy_astra.config.cluster import load_cluster

    if "jobs" in doc:
        raise InputError(f"{path}: cluster: give it with workload (one job), not with jobs")
    cluster = load_cluster(doc["cluster"], f"{path}: cluster", os.path.dirname(os.path.abspath(path)))
    system = doc.get("system")
    missing = [key for key in REQUIRED_KEYS if isinstance(system, dict) and key not in system]
    if missing:
        raise InputError(f"{path}: system: beside cluster: it replaces the preset's whole system rather than "
                         f"adding to it, and it has no {missing[0]}; leave system out to use the "
                         f"preset's, or give a whole system")
    prepared = _prepare(path, doc.get("workload"), cluster)
    blocks = None if prepared is None else prepared.layout().blocks
    return ({"system": cluster.system_mapping(blocks), "network": cluster.network_mapping(blocks),
             "backend": DEFAULT_BACKEND, **doc}, cluster, prepared)


def _generator_entry(name: str) -> Any:
    """The registry entry of the generator ``name`` (None: not one)."""
    # deferred: loaded already by the workload's prepare; an ASTRA-sim run does not load it
    from simpy_astra.workloads.generated import GENERATORS

    return GENERATORS.get(name)


def _refuse_without_cluster(path: str, workload: Any) -> None:
    """A generator that runs beside a cluster (Megatron's) without one, nor the GPU count and
    GPU it would give: ask for the cluster (not for the system the preset would build)."""
    if not isinstance(workload, dict) or not isinstance(workload.get("generate"), str):
        return
    entry = _generator_entry(workload["generate"])
    gpus = workload.get("gpus")
    given = isinstance(gpus, int) and not isinstance(gpus, bool) and isinstance(workload.get("gpu"), dict)
    if entry is not None and entry.needs_cluster and not given:
        raise InputError(f"{path}: workload: needs a cluster: beside it (cluster: {{preset: dgx-a100-80gb, gpus: "
                         f"N}}); it gives the GPU count and the GPU")


def _reads_gpu(prepared: Prepared | None) -> bool:
    """The workload times its kernels on the cluster's GPU (a generator that runs only beside a
    cluster, which gives it the GPU: Megatron's)."""
    entry = None if prepared is None else _generator_entry(prepared.generator)
    return entry is not None and entry.needs_cluster


def _refuse_roofline_compute(path: str, generator: str) -> None:
    """A generator whose compute nodes carry FLOPs for a roofline (not durations) on a cluster
    whose system runs none: every kernel would take 1 ns, the step all communication."""
    entry = _generator_entry(generator)
    if entry is not None and entry.roofline_compute:
        raise InputError(f"{path}: workload: generate {generator} writes compute nodes with FLOPs for a roofline "
                         f"to time, and the cluster's system times each node by its duration, so every kernel "
                         f"would take 1 ns; run generate megatron on a cluster, or give system: with "
                         f"roofline-enabled: 1, peak-perf and local-mem-bw")


def _comm_groups(path: str, value: Any, npus: int) -> str | dict[int, tuple[int, ...]] | None:
    """``comm_groups``: a file (read with the workload's, :func:`_inputs`) or a mapping."""
    if value is None:
        return None
    if isinstance(value, dict):
        return comm_groups_from_mapping(value, f"{path}: comm_groups", npus)
    if isinstance(value, str) and value:
        return _path(path, value, "comm_groups")
    raise InputError.at(path, "comm_groups", f"must be a file path or a mapping (got {value!r})")


def _workload(path: str, workload: Any, prepared: Prepared | None, on_cluster: bool, npus: int,
              groups: str | dict[int, tuple[int, ...]] | None, checking: bool = False,
              ) -> tuple[str, str | dict[int, tuple[int, ...]] | None, WorkloadInfo]:
    """``workload``: (ET prefix, comm groups, what its generator says of it). A generated
    one is prepared (unless the cluster's layout did already), checked against the network
    and written lazily (a run writes the ranks it needs); its comm groups, unless the scenario
    gives its own, come with their dimensions, for breakdowns."""
    if isinstance(workload, str) and workload:
        prefix = _path(path, workload, "workload")
        odd = None if prefix.endswith(".txt") else files.odd_rank_file(prefix, npus)
        if odd:  # else 'workload file: ... is a directory', naming no field of the scenario
            raise InputError(f"{path}: workload: {odd}")
        return prefix, groups, WorkloadInfo()
    if not isinstance(workload, dict):
        raise InputError.at(path, "workload", f"must be an ET prefix, a .txt workload or a "
                                              f"{{generate: ...}} mapping (got {workload!r})")
    # deferred: only generated workloads need the registry (and its front ends)
    from simpy_astra.workloads.generated import generated_ranks, materialise

    prepared = prepared or _prepare(path, workload, None)
    assert prepared is not None
    layout = prepared.layout()
    if layout.ranks is not None and on_cluster and npus != layout.ranks:
        raise InputError(f"{path}: network: has {npus} NPUs, cluster.gpus is {layout.ranks}")
    if layout.ranks is not None and layout.ranks != npus:  # before a slow generator (gemm) runs
        raise _ranks_differ(path, prepared.generator, layout.ranks, npus, on_cluster)
    made = materialise(prepared, where=f"{path}: workload", lazy=True, checking=checking)
    ranks = layout.ranks if layout.ranks is not None else generated_ranks(made.prefix)
    if ranks != npus:  # else the error names a file in the cache, and deleting it as the fix
        raise _ranks_differ(path, prepared.generator, ranks, npus, on_cluster)
    if groups is not None and made.comm_groups is not None:  # its traces name the generator's groups
        raise InputError(f"{path}: field 'comm_groups': generate {prepared.generator} writes its own communicator "
                         f"groups, which its traces name and these would replace (its collectives would run on other "
                         f"members); remove comm_groups")
    if groups is not None:
        return made.prefix, groups, WorkloadInfo(prepared, warnings=layout.warnings)
    written = _written_groups(made.comm_groups, prepared.generator, f"{path}: workload")
    # (the generators' sends and receives run between pipeline stages)
    return made.prefix, written.read(npus) if written else None, WorkloadInfo(prepared, layout.dimensions,
                                                                     "pp" if layout.dimensions else "p2p",
                                                                     layout.warnings)


def _written_groups(path: str | None, generator: str, where: str) -> WrittenGroups | None:
    """The comm-group JSON at ``path`` the generator of the workload at ``where`` wrote. A user's
    generator is named with the file (the error named only the cache's file, whose deletion
    fixes nothing); ours wrote it from checked inputs, so a fault is the cache entry's."""
    if path is None:
        return None
    from simpy_astra.workloads.generated import GENERATORS, USERS_FIX, corrupt_entry_fix

    if not GENERATORS[generator].by_user:
        return WrittenGroups(path, path, corrupt_entry_fix(path))
    return WrittenGroups(path, f"{where}.generate: generator '{generator}' wrote {path}", f"; {USERS_FIX}")


def _ranks_differ(path: str, generator: str, ranks: int, npus: int, on_cluster: bool) -> InputError:
    size = f"cluster.gpus is {npus}" if on_cluster else f"the network has {npus} NPUs"
    return InputError(f"{path}: workload: generate {generator} writes {ranks} ranks, but {size}; make the "
                      f"generator's parallelism (num_npus, or dp x tp x pp ...) match it")


def _prepare(path: str, workload: Any, cluster: Any) -> Prepared | None:
    """A generated workload's job, parsed once (its generator's ``prepare``, with the
    scenario's cluster), its file parameters resolved from the scenario's folder; None for ET
    files."""
    if not isinstance(workload, dict):
        return None
    if "generate" not in workload:
        near = next((k for k in workload if nearest_key(str(k), ["generate"])), None)
        if near is not None:  # a misspelt generate: its other keys would be blamed on a missing one
            raise InputError(f"{path}: field 'workload.{near}'{non_ascii(near)} is not a workload field; did you mean "
                             f"'generate'?")
        raise InputError(f"{path}: field 'workload' as a mapping needs 'generate: NAME' "
                         f"(or give an ET prefix)")
    # deferred: only generated workloads need the registry (and its front ends)
    from simpy_astra.workloads.generated import prepare, resolve_paths

    return prepare(resolve_paths(workload, os.path.dirname(os.path.abspath(path))), cluster, f"{path}: workload")


def _jobs_inputs(path: str, doc: dict, system: SystemConfig | None,
                 read_system: Callable[[Any, str], SystemConfig], net: NetworkConfig,
                 memory: RemoteMemoryConfig, backend: str, queues: int, unknown: list[str],
                 checking: bool = False) -> SimulationInputs:
    """The inputs of a multi-job scenario (:mod:`simpy_astra.config.jobs`)."""
    # deferred: only a scenario with jobs reads them; an ASTRA-sim run does not load it
    from simpy_astra.config.jobs import read_jobs

    folder = os.path.dirname(os.path.abspath(path))

    def workload_of(value: Any, where: str) -> tuple[str, Any]:
        if isinstance(value, dict):
            if "generate" not in value:
                raise InputError(f"{where}: as a mapping needs 'generate: NAME' (or give an ET prefix)")
            # deferred: only generated workloads need the registry (and its front ends)
            from simpy_astra.workloads.generated import GENERATORS, materialise, resolve_paths

            entry = GENERATORS.get(value["generate"]) if isinstance(value["generate"], str) else None
            if entry is not None and entry.needs_cluster:  # and a cluster is refused beside jobs:
                raise InputError(f"{where}: generate {value['generate']} runs on a cluster:, which a scenario "
                                 f"gives with one workload, not jobs:; run this job as its own scenario with "
                                 f"cluster: {{preset: NAME, gpus: N}}")
            try:  # worded for a scenario's workload: field, then named as the job's
                made = materialise(resolve_paths(value, folder), where=f"{path}: workload", lazy=True,
                                   checking=checking)
            except InputError as exc:
                raise InputError(exc.message.replace(f"{path}: workload", where, 1)) from None
            return made.prefix, _written_groups(made.comm_groups, value["generate"], where)
        if isinstance(value, str) and value:
            return _path(path, value, where.removeprefix(f"{path}: ")), None
        raise InputError(f"{where}: must be an ET prefix or a {{generate: ...}} mapping (got {value!r})")

    def groups_of(value: Any, where: str, ranks: int) -> dict[int, tuple[int, ...]]:
        if isinstance(value, WrittenGroups):
            return value.read(ranks, job=True)
        if isinstance(value, dict):
            return comm_groups_from_mapping(value, where, ranks, job=True)
        if isinstance(value, str) and value:
            return load_comm_groups_json(_path(path, value, where.removeprefix(f"{path}: ")), ranks, job=True)
        raise InputError(f"{where}: must be a file path or a mapping (got {value!r})")

    if doc.get("fold_symmetry") is True:  # asked for in words, and dropped with a note --quiet hid
        raise InputError(f"{path}: field 'fold_symmetry': a scenario with jobs: runs unfolded (each job's ranks are "
                         f"placed apart, so no symmetry is known); remove it")
    if doc.get("cost") is not None:  # before the warnings: a price no tier reads is one
        net = with_cost(net, doc["cost"], path)
    warnings = [*unknown, *net.warnings, *unread_packet_settings(net, backend), *memory.warnings]
    memory.check_total_npus(net.total_npus)
    jobs = read_jobs(path, doc["jobs"], net.total_npus, system, workload_of,
                     lambda value, where: read_system(value, where.removeprefix(f"{path}: ")), groups_of, warnings)
    for job in jobs:
        job.system.check_npu_groups(net.total_npus)
    return SimulationInputs(workload_prefix=jobs[0].workload_prefix, system=jobs[0].system, network=net,
                            remote_memory=memory, backend=backend, queues_per_dim=queues, warnings=warnings,
                            jobs=jobs, fold_symmetry=doc.get("fold_symmetry"))


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
