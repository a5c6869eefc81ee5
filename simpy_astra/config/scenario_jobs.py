"""The inputs of a scenario with ``jobs:`` (several jobs on one network,
:mod:`simpy_astra.config.jobs`): each job's workload, system and groups read from the
scenario's folder, errors naming the job's field."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from simpy_astra.config import (
    NetworkConfig,
    RemoteMemoryConfig,
    SystemConfig,
    load_comm_groups_json,
    with_cost,
)
from simpy_astra.config.comm_groups import WrittenGroups
from simpy_astra.config.inputs import SimulationInputs
from simpy_astra.config.scenario_files import inline_groups, scenario_path
from simpy_astra.config.scenario_workload import check_generator_params, written_groups
from simpy_astra.errors import InputError
from simpy_astra.infra.npu_lists import npu_list
from simpy_astra.network.backends import unread_packet_settings


def jobs_inputs(path: str, doc: dict, system: SystemConfig | None,
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
            check_generator_params(where, value)
            try:  # worded for a scenario's workload: field, then named as the job's
                made = materialise(resolve_paths(value, folder), where=f"{path}: workload", lazy=True,
                                   checking=checking)
            except InputError as exc:
                raise InputError(exc.message.replace(f"{path}: workload", where, 1)) from None
            return made.prefix, written_groups(made.comm_groups, value["generate"], where)
        if isinstance(value, str) and value.endswith(".txt"):  # else 'no ET files X.txt.0.et ...'
            raise InputError(f"{where}: a job runs ET files, not a text workload; give the PREFIX of "
                             f"'simpy-astra convert text --input {value} --output PREFIX --num-npus RANKS "
                             f"--num-passes 1'")
        if isinstance(value, str) and value:
            return scenario_path(path, value, where.removeprefix(f"{path}: ")), None
        raise InputError(f"{where}: must be an ET prefix or a {{generate: ...}} mapping (got {value!r})")

    def groups_of(value: Any, where: str, ranks: int) -> dict[int, tuple[int, ...]]:
        if isinstance(value, WrittenGroups):
            return value.read(ranks, job=True)
        if isinstance(value, dict):
            return inline_groups(value, where, ranks, job=True)
        if isinstance(value, str) and value:
            return load_comm_groups_json(scenario_path(path, value, where.removeprefix(f"{path}: ")), ranks, job=True)
        raise InputError(f"{where}: must be a file path or a mapping (got {value!r})")

    if doc.get("fold_symmetry") is True:  # asked for in words, and dropped with a note --quiet hid
        raise InputError(f"{path}: field 'fold_symmetry': a scenario with jobs: runs unfolded (each job's ranks are "
                         f"placed apart, so no symmetry is known); remove it")
    if "cost" in doc:  # before the warnings: a price no tier reads is one
        net = with_cost(net, doc["cost"], path)
    warnings = [*unknown, *net.warnings, *unread_packet_settings(net, backend), *memory.warnings]
    memory.check_total_npus(net.total_npus)
    jobs = read_jobs(path, doc["jobs"], net.total_npus, system, workload_of,
                     lambda value, where: read_system(value, where.removeprefix(f"{path}: ")), groups_of, warnings)
    if system is not None and all("system" in written for written in doc["jobs"]):
        raise InputError(f"{path}: field 'system': every job gives its own system (jobs[i].system), so this one "
                         f"is read by none; remove it, or a job's system: to run that job on it")
    for job in jobs:
        job.system.check_npu_groups(net.total_npus)
    refuse_groups_no_reader_runs(jobs)
    return SimulationInputs(workload_prefix=jobs[0].workload_prefix, system=jobs[0].system, network=net,
                            remote_memory=memory, backend=backend, queues_per_dim=queues, warnings=warnings,
                            jobs=jobs, fold_symmetry=doc.get("fold_symmetry"))


def refuse_groups_no_reader_runs(jobs: list[Any]) -> None:
    """An ``npu-groups`` entry naming an NPU that no job reading its system runs, refused: each
    NPU takes its hardware from its own job's system, so such an entry changed nothing, in
    silence (a job's own system naming its ranks 0..3 where it runs on NPUs 4..7)."""
    for job in jobs:
        readers = [other for other in jobs if other.system == job.system]
        run = {npu for other in readers for npu in other.npus}
        for i, group in enumerate(job.system.npu_groups):
            outside = [npu for npu in group.npus if npu not in run]
            if outside:
                named = "; ".join(f"{other.name}: {npu_list(other.npus)}" for other in readers[:3])
                raise InputError.at(job.system.source, f"npu-groups[{i}].npus",
                                    f"names NPU{'s' if len(outside) > 1 else ''} {npu_list(outside)}, "
                                    f"which no job on this system runs; name physical NPUs of its jobs ({named})")
