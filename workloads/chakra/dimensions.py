"""Which parallel dimension each communicator group is, as an ET's GlobalMetadata records it.

The project's generators write it (ASTRA-sim ignores it), so that a trace read back from its
files breaks its time down by ``tp``/``dp``/``pp`` rather than by group id.
"""

from __future__ import annotations

import json
import os
from typing import Any

from simpy_astra.workloads.chakra import et_path
from simpy_astra.workloads.chakra.reader import EtError, read_metadata

#: GlobalMetadata attributes that name the parallel dimensions, so that reports of a trace read
#: back from its files say ``comm.tp`` rather than ``comm.group 5`` (ASTRA-sim ignores them)
GROUP_NAMES_ATTR = "pg_names"  # JSON: [[dimension, first group id, last group id], ...]
P2P_DIMENSION_ATTR = "p2p_dimension"  # what sends and receives are: pp


def recorded_dimensions(prefix: str) -> tuple[dict[int, str], str | None, list[str]]:
    """(group id -> dimension, what sends are, notes) as rank 0's file of ``prefix`` records
    them; empty and None for a trace that does not (or a file that cannot be read: the run says
    why). A ``pg_names`` of another shape names no group, and a note says so: a generator of the
    user's that wrote it another way saw ``comm.group 1`` in its breakdown with no word why."""
    path = et_path(prefix, 0)
    try:
        attrs = read_metadata(path)["attrs"]
    except (EtError, ValueError):
        return {}, None, []
    names: dict[int, str] = {}
    found = attrs.get(GROUP_NAMES_ATTR)
    try:
        for dim, first, last in json.loads(found[1]) if found is not None and found[0] == "string_val" else ():
            if not (isinstance(dim, str) and dim and isinstance(first, int) and isinstance(last, int)
                    and 0 < first <= last and last - first < 1 << 20):
                raise ValueError(dim)
            names.update(dict.fromkeys(range(first, last + 1), dim))
    except (ValueError, TypeError):  # not the shape the docs give: no names
        shown = found[1] if len(found[1]) <= 60 else found[1][:57] + "..."
        return {}, None, [f"{os.path.basename(path)} (rank 0's trace): metadata '{GROUP_NAMES_ATTR}' is {shown!r}, "
                          f"not JSON runs of group ids "
                          f"[[dimension, first group id, last group id], ...] with 0 < first <= last "
                          f"(docs/generators.md): the breakdown names its groups by number (comm.group 1)"]
    p2p = attrs.get(P2P_DIMENSION_ATTR)
    return names, (p2p[1] if p2p is not None and p2p[0] == "string_val" and p2p[1] else None), []


def group_names(inputs: Any) -> tuple[dict[int, str], str, list[str]]:
    """(communicator group id -> parallel dimension, what plain sends are, notes) of a run, for
    its breakdown: as the generator said, else as rank 0's file records (:func:`recorded_dimensions`)."""
    names, p2p = dict(inputs.workload.group_names), inputs.workload.p2p_name
    if not names and inputs.jobs is None and inputs.workload_prefix:
        names, recorded, notes = recorded_dimensions(inputs.workload_prefix)
        return names, recorded or p2p, notes
    if not names and inputs.jobs:  # each job numbers its own groups: a name they agree on
        recorded = [recorded_dimensions(job.workload_prefix) for job in inputs.jobs]
        return (*_agreed([(n, sends) for n, sends, _ in recorded], p2p), [n for *_, ns in recorded for n in ns])
    return names, p2p, []


def _agreed(recorded: list[tuple[dict[int, str], str | None]], p2p: str) -> tuple[dict[int, str], str]:
    """The group names (and what sends are) that every job which records them gives alike: the
    breakdown names group 1 for all jobs at once, so a group id two jobs name differently stays
    a number."""
    names: dict[int, str] = {}
    clash: set[int] = set()
    for job_names, _ in recorded:
        for gid, dim in job_names.items():
            if names.setdefault(gid, dim) != dim:
                clash.add(gid)
    sends = {job_p2p for _, job_p2p in recorded if job_p2p}
    return {gid: dim for gid, dim in names.items() if gid not in clash}, sends.pop() if len(sends) == 1 else p2p
