"""A scenario's ``workload:``: an ET prefix, an ASTRA-sim 1.0 text file, or a generator's job
(prepared once, checked against the network, written lazily), with the communicator groups
its generator wrote."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from simpy_astra.config.comm_groups import WrittenGroups
from simpy_astra.config.inputs import WorkloadInfo
from simpy_astra.config.scenario_files import scenario_path
from simpy_astra.config.unknown_keys import nearest_key
from simpy_astra.errors import InputError, non_ascii
from simpy_astra.infra import files

if TYPE_CHECKING:
    from simpy_astra.workloads.generated import Prepared


def generator_entry(name: str) -> Any:
    """The registry entry of the generator ``name`` (None: not one)."""
    # deferred: loaded already by the workload's prepare; an ASTRA-sim run does not load it
    from simpy_astra.workloads.generator_registry import GENERATORS

    return GENERATORS.get(name)


def read_workload(path: str, workload: Any, prepared: Prepared | None, on_cluster: bool, npus: int,
              groups: str | dict[int, tuple[int, ...]] | None, checking: bool = False,
              ) -> tuple[str, str | dict[int, tuple[int, ...]] | None, WorkloadInfo]:
    """``workload``: (ET prefix, comm groups, what its generator says of it). A generated
    one is prepared (unless the cluster's layout did already), checked against the network
    and written lazily (a run writes the ranks it needs); its comm groups, unless the scenario
    gives its own, come with their dimensions, for breakdowns."""
    if isinstance(workload, str) and workload:
        prefix = scenario_path(path, workload, "workload")
        odd = None if prefix.endswith(".txt") else files.odd_rank_file(prefix, npus)
        if odd:  # else 'workload file: ... is a directory', naming no field of the scenario
            raise InputError(f"{path}: workload: {odd}")
        return prefix, groups, WorkloadInfo()
    if not isinstance(workload, dict):
        raise InputError.at(path, "workload", f"must be an ET prefix, a .txt workload or a "
                                              f"{{generate: ...}} mapping (got {workload!r})")
    # deferred: only generated workloads need the registry (and its front ends)
    from simpy_astra.workloads.generated import generated_ranks, materialise

    prepared = prepared or prepare_workload(path, workload, None)
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
    written = written_groups(made.comm_groups, prepared.generator, f"{path}: workload")
    # (the generators' sends and receives run between pipeline stages)
    return made.prefix, written.read(npus) if written else None, WorkloadInfo(prepared, layout.dimensions,
                                                                     "pp" if layout.dimensions else "p2p",
                                                                     layout.warnings)


def written_groups(path: str | None, generator: str, where: str) -> WrittenGroups | None:
    """The comm-group JSON at ``path`` the generator of the workload at ``where`` wrote. A user's
    generator is named with the file (the error named only the cache's file, whose deletion
    fixes nothing); ours wrote it from checked inputs, so a fault is the cache entry's."""
    if path is None:
        return None
    from simpy_astra.workloads.cache_errors import USERS_FIX, corrupt_entry_fix
    from simpy_astra.workloads.generator_registry import GENERATORS

    if not GENERATORS[generator].by_user:
        return WrittenGroups(path, path, corrupt_entry_fix(path))
    return WrittenGroups(path, f"{where}.generate: generator '{generator}' wrote {path}", f"; {USERS_FIX}")


def _ranks_differ(path: str, generator: str, ranks: int, npus: int, on_cluster: bool) -> InputError:
    size = f"cluster.gpus is {npus}" if on_cluster else f"the network has {npus} NPUs"
    return InputError(f"{path}: workload: generate {generator} writes {ranks} ranks, but {size}; make the "
                      f"generator's parallelism (num_npus, or dp x tp x pp ...) match it")


def prepare_workload(path: str, workload: Any, cluster: Any) -> Prepared | None:
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
    check_generator_params(f"{path}: workload", workload)
    # deferred: only generated workloads need the registry (and its front ends)
    from simpy_astra.workloads.generated import prepare, resolve_paths

    return prepare(resolve_paths(workload, os.path.dirname(os.path.abspath(path))), cluster, f"{path}: workload")


def check_generator_params(where: str, workload: dict[str, Any]) -> None:
    """One of our generators' parameters written empty (``seq:`` with its value forgotten ran
    seq 1024 in silence) or misspelt near a parameter it takes (``micro-batch``, the flag's
    spelling, was told the list of all); ``where`` is the mapping's place (``s.yaml: workload``).
    A user's generator reads its own parameters."""
    name = workload["generate"]
    entry = generator_entry(name) if isinstance(name, str) else None
    if entry is None or entry.by_user:
        return
    empty = next((key for key, value in workload.items() if value is None), None)
    if empty is not None:
        raise InputError(f"{where}.{empty}: is empty (null); write its value (or leave the key out, where "
                         f"generate {name} has a default for it)")
    taken = entry.params() if entry.params is not None else ()
    for key in workload:
        near = nearest_key(str(key), taken) if key != "generate" and key not in taken else None
        if near is not None:
            raise InputError(f"{where}.{key}: generate {name} takes no parameter '{key}'; did you mean "
                             f"'{near}'?")
