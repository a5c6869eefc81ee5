"""The inputs of a run from ASTRA-sim's own files and flags, read as the reference binary reads
them, and the checks of the knobs a scenario shares with those flags (backend, queues per
dimension, injection scale): a flag and a scenario field are refused alike."""

from __future__ import annotations

import difflib
import math
from typing import Any

from simpy_astra.config import (
    NetworkConfig,
    RemoteMemoryConfig,
    SystemConfig,
    ignored_comm_groups_warning,
    load_comm_groups_json,
    load_network_yaml,
    load_remote_memory_json,
    load_system_json,
)
from simpy_astra.config.inputs import SimulationInputs
from simpy_astra.errors import InputError, integer_fix
from simpy_astra.infra.registry_names import same_definition
from simpy_astra.network.backends import BACKENDS, BackendSpec, unread_packet_settings
from simpy_astra.network.backends import lookup as lookup_backend
from simpy_astra.plugins import NOT_LOADED_HINT, PluginError, shown

#: queues per dimension beyond which a run only exhausts memory (each is a Python object per
#: NPU and dimension); ASTRA-sim's examples use 1 to 4
MAX_QUEUES_PER_DIM = 4096


def check_backend(where: str, backend: Any) -> str:
    """The name of the network backend ``backend`` names (a registered name, a plug-in's
    ``package.module:BackendSpec``, or from Python the registered spec itself); errors name
    ``where`` (the flag, or the scenario's field), so a scenario's typo is not reported as a
    flag the user never gave."""
    if isinstance(backend, BackendSpec):  # from Python: the spec register() returned, as its name
        registered = BACKENDS.get(backend.name)
        if registered is None or not same_definition(registered.build, backend.build):
            raise InputError(f"{where}: BackendSpec {shown(backend.name, 40)} is not registered: pass the spec "
                             f"simpy_astra.network.backends.register() returned, or its name (docs/backends.md)")
        backend = backend.name
    try:
        spec = lookup_backend(backend) if isinstance(backend, str) else None
    except PluginError as exc:
        raise InputError(f"{where}: {exc}") from None
    if spec is None:
        got = "an empty string" if backend == "" else shown(backend, 60)
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
    return run_inputs(workload, load_system_json(system, injection_scale=injection_scale), net,
                   load_remote_memory_json(remote_memory), comm_groups, backend, queues_per_dim, num_passes)


def _check_injection_scale(where: str, value: float) -> None:
    if not math.isfinite(value) or value < 0:
        raise InputError(f"{where}: must be a finite number >= 0 (got {value!r})")


def run_inputs(workload: str, system: SystemConfig, net: NetworkConfig, memory: RemoteMemoryConfig,
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
