"""Several training jobs on one network: a scenario's ``jobs:`` list, read and checked.

Each job keeps its own rank numbering (its traces name ranks ``0..n-1``), communicator
groups and system settings; ``npus`` (or a ``placement``) says which physical NPU each rank
runs on. The only place a job rank becomes a physical NPU id is the job's network view
(:class:`simpy_astra.running.jobs.JobNetwork`), so the system layer and the collectives never learn
that other jobs exist.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simpy_astra.config.field_values import show_value
from simpy_astra.config.system import SystemConfig
from simpy_astra.config.unknown_keys import refuse_unknown_keys
from simpy_astra.errors import InputError, integer_fix
from simpy_astra.infra import files, horizon
from simpy_astra.workloads.generated import lazy_traces

PLACEMENTS = ("contiguous", "strided", "random")

JOB_KEYS = {"name", "workload", "npus", "placement", "seed", "system", "comm_groups", "start_ns"}
#: a job key's value when it is left out, the run's own: written so, the job runs as without it
JOB_DEFAULTS = {"start_ns": 0}


def without_defaults(job: dict[str, Any]) -> dict[str, Any]:
    """``job`` (a scenario's mapping) less the keys written at their value when left out
    (:data:`JOB_DEFAULTS`; an integer as an integer: ``0.0`` is refused, so never alike): two
    jobs that differ only so run alike (a sweep's ``jobs.1.start_ns: [null, 0]``)."""
    return {key: value for key, value in job.items()
            if not (key in JOB_DEFAULTS and type(value) is type(JOB_DEFAULTS[key]) and value == JOB_DEFAULTS[key])}


@dataclass
class JobInputs:
    """One job of a multi-job run, parsed and placed."""

    name: str
    workload_prefix: str
    system: SystemConfig
    #: physical NPU of each rank: ``npus[rank]``
    npus: tuple[int, ...]
    #: communicator groups in the job's own ranks
    comm_groups: dict[int, tuple[int, ...]] = field(default_factory=dict)
    #: when the job's NPUs start their graphs
    start_ns: int = 0
    #: where the scenario writes the job (``s.yaml: jobs[1]``), for errors found as it runs
    where: str = field(default="", compare=False)

    @property
    def num_ranks(self) -> int:
        return len(self.npus)


def rank_count(prefix: str, where: str = "workload") -> int:
    """How many ranks a workload has: a generated one's summary, else its ET files, which must
    be ranks 0..N-1 with no gap (``gap.0.et gap.1.et gap.3.et`` is an error, not 2 ranks)."""
    lazy = lazy_traces(prefix)
    if lazy is not None:
        return lazy.npus
    return files.check_no_gaps(files.numbered_files(prefix), prefix, where)


def place(where: str, placement: Any, ranks: int, free: list[int], seed: Any, total: int = 0,
          others: str = "") -> tuple[int, ...]:
    """Physical NPUs for ``ranks`` ranks among the ``free`` ones (ascending ids).

    contiguous: the first ``ranks`` free NPUs; strided: every k-th free NPU from the first,
    k = free // ranks (two 4-rank jobs on 8 NPUs get the even and the odd ones); random:
    ``ranks`` free NPUs drawn with ``random.Random(seed)`` (rank order as drawn). ``total`` and
    ``others`` (the network's NPUs, the jobs that take some) say why too few are free."""
    if placement not in PLACEMENTS:
        raise InputError(f"{where}.placement: must be one of {', '.join(PLACEMENTS)} (got {placement!r})")
    if ranks > len(free):
        taken = f" (jobs {others} take the rest)" if others else ""
        raise InputError(f"{where}.placement: the job has {ranks} ranks but only {len(free)} of the network's "
                         f"{total or len(free)} NPUs are free{taken}; give the network more NPUs, or the job "
                         f"fewer ranks")
    if placement == "contiguous":
        return tuple(free[:ranks])
    if placement == "strided":
        stride = len(free) // ranks
        return tuple(free[i * stride] for i in range(ranks))
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"{where}.seed: must be an integer (got {seed!r}){integer_fix(seed)}")
    return tuple(random.Random(seed).sample(free, ranks))


def read_jobs(path: str, value: Any, total_npus: int, default_system: SystemConfig | None,
              workload_of: Callable[[Any, str], tuple[str, Any]],
              system_of: Callable[[Any, str], SystemConfig],
              groups_of: Callable[[Any, str, int], dict[int, tuple[int, ...]]],
              warnings: list[str]) -> list[JobInputs]:
    """A scenario's ``jobs:`` list. ``workload_of(value, where) -> (prefix, comm groups or
    None)`` and ``system_of(value, where)`` read a job's workload and system as the scenario
    reads its own; ``groups_of(value, where, ranks)`` reads communicator groups. Explicit
    ``npus`` are taken first, then placements fill the NPUs left, in the jobs' order; an unknown
    key is an error naming the nearest known one."""
    if not isinstance(value, list) or not value:
        raise InputError(f"{path}: jobs: must be a non-empty list of jobs, each with name, workload and "
                         f"npus or placement")
    names: dict[int, str] = {}  # job index -> its name
    parsed: list[dict[str, Any]] = []
    for i, job in enumerate(value):
        where = f"{path}: jobs[{i}]"
        if not isinstance(job, dict):
            raise InputError(f"{where}: must be a mapping with name, workload and npus or placement")
        refuse_unknown_keys(f"{path}: jobs[{i}]", job, JOB_KEYS, "job")
        empty = next((key for key in job if job[key] is None), None)
        if empty is not None:  # else a null system or comm_groups ran as if left out, in silence
            raise InputError(f"{where}.{empty}: is empty (YAML's null: its value left out); give one, or remove "
                             f"{empty}")
        name = names[i] = _job_name(where, job.get("name", f"job{i}"), names)
        if "workload" not in job:
            raise InputError(f"{where}.workload: is missing (an ET prefix or a {{generate: ...}} mapping)")
        prefix, groups = workload_of(job["workload"], f"{where}.workload")
        ranks = rank_count(prefix, f"{where}.workload")
        odd = files.odd_rank_file(prefix, ranks)
        if odd:
            raise InputError(f"{where}.workload: {odd}")
        if ranks == 0:
            problem = files.rank_file_problem(prefix)  # named by one of its files
            raise InputError(f"{where}.workload: {problem}" if problem else f"{where}.workload: no ET files "
                             f"{prefix}.0.et ... (relative paths resolve from the scenario's folder)")
        if ranks == 1:  # no network run takes one NPU (every dimension holds 2 or more), nor a job
            raise InputError(f"{where}.workload: has 1 rank, and no run takes a 1-NPU trace: it sends nothing "
                             f"over the network the jobs share; give it 2 or more ranks (a generator's dp, tp, pp "
                             f"or num_npus)")
        start = job.get("start_ns", JOB_DEFAULTS["start_ns"])
        if isinstance(start, bool) or not isinstance(start, int | float) or not math.isfinite(start) or start < 0:
            raise InputError(f"{where}.start_ns: must be a number of ns >= 0 (got {start!r})")
        horizon.check_ns(start, where, "start_ns")  # first: 1e19 is past it, whatever its type
        if isinstance(start, float):  # the clock ticks in whole ns: 1.5 would start at 1
            raise InputError(f"{where}.start_ns: must be a whole number of ns (the clock ticks in ns; got "
                             f"{start!r}){integer_fix(start)}")
        if job.get("system") is not None:
            system = system_of(job["system"], f"{where}.system")
        elif default_system is not None:
            system = default_system
        else:
            raise InputError(f"{where}.system: is missing, and the scenario has no system for it")
        if job.get("comm_groups") is not None and groups is not None:  # its traces name the written ones
            raise InputError(f"{where}.comm_groups: the job's generated workload writes its own communicator "
                             f"groups, which its traces name and these would replace; remove comm_groups")
        if job.get("comm_groups") is not None:
            groups = job["comm_groups"]
        comm = groups_of(groups, f"{where}.comm_groups", ranks) if groups is not None else {}
        parsed.append({"where": where, "name": name, "prefix": prefix, "ranks": ranks, "system": system,
                       "groups": comm, "start": int(start), "job": job})
    owner: dict[int, str] = {}
    npus: list[tuple[int, ...] | None] = []
    for p in parsed:
        job, where = p["job"], p["where"]
        if "npus" in job and "placement" in job:
            raise InputError(f"{where}: give npus or placement, not both")
        if "seed" in job and job.get("placement") != "random":
            raise InputError(f"{where}.seed: only placement: random draws NPUs with a seed; this job's "
                             f"{'npus' if 'npus' in job else 'placement ' + str(job.get('placement', 'contiguous'))} "
                             f"never reads it (remove seed, or use placement: random)")
        if "npus" not in job:
            npus.append(None)
            continue
        ids = job["npus"]
        if not isinstance(ids, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in ids):
            fix = next((integer_fix(n) for n in ids if isinstance(n, float)), "") if isinstance(ids, list) else ""
            raise InputError(f"{where}.npus: must be a list of NPU ids, one per rank (got {ids!r}){fix}")
        if len(ids) != p["ranks"]:
            # as the user wrote it: a generated workload's prefix is the cache's, never theirs
            given = job["workload"]
            shown = f"generate {given.get('generate')}" if isinstance(given, dict) else show_value(given)
            raise InputError(f"{where}.npus: lists {len(ids)} NPUs but {where.rpartition(': ')[2]}.workload "
                             f"({shown}) has {p['ranks']} ranks; give one NPU per rank")
        for n in ids:
            _claim(where, p["name"], n, total_npus, owner)
        npus.append(tuple(ids))
    for k, p in enumerate(parsed):
        if npus[k] is not None:
            continue
        job, where = p["job"], p["where"]
        free = [n for n in range(total_npus) if n not in owner]
        ids = place(where, job.get("placement", "contiguous"), p["ranks"], free, job.get("seed", 0), total_npus,
                    ", ".join(dict.fromkeys(owner.values())))
        for n in ids:
            _claim(where, p["name"], n, total_npus, owner)
        npus[k] = ids
    return [JobInputs(p["name"], p["prefix"], p["system"], ids, p["groups"], p["start"], p["where"])
            for p, ids in zip(parsed, npus, strict=True) if ids is not None]


def _job_name(where: str, name: Any, names: dict[int, str]) -> str:
    """A job's ``name``: printable, one line, unlike the names of the jobs before it."""
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}.name: must be a non-empty string (got {name!r})")
    if not name.isprintable() or name != name.strip():
        # a newline would forge a line of output (a fake "sys[0] finished")
        raise InputError(f"{where}.name: must be printable text without newlines, control "
                         f"characters or surrounding spaces (got {name!r})")
    before = next((i for i, other in names.items() if other == name), None)
    if before is not None:
        raise InputError(f"{where}.name: '{name}' is also the name of jobs[{before}]; job names "
                         f"must differ")
    return name


def _claim(where: str, name: str, npu: int, total_npus: int, owner: dict[int, str]) -> None:
    """NPU ``npu`` runs job ``name``: in range, and no other job's."""
    if not 0 <= npu < total_npus:
        raise InputError(f"{where}.npus: NPU {npu} does not exist (the network has NPUs 0..{total_npus - 1})")
    if owner.get(npu) == name:  # job names differ: this is the job's own list
        raise InputError(f"{where}.npus: lists NPU {npu} twice; give each rank its own NPU")
    if npu in owner:
        raise InputError(f"{where}.npus: NPU {npu} is already used by job '{owner[npu]}'; jobs '{owner[npu]}' "
                         f"and '{name}' overlap")
    owner[npu] = name
