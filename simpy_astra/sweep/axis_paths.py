"""Whether a sweep axis names something a run reads: a field of the scenario, the system or
network file, the cluster, a generator's parameter or a Megatron-LM argument (checked when the
sweep is loaded, so that a misspelt axis does not run every point the same, or fail each)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any

from simpy_astra.config.cluster_fields import CLUSTER_KEYS, OLD_KEYS
from simpy_astra.config.jobs import JOB_KEYS
from simpy_astra.config.network import KNOWN_NETWORK_KEYS
from simpy_astra.config.scenario import SCENARIO_KEYS
from simpy_astra.config.system import KNOWN_SYSTEM_KEYS
from simpy_astra.config.unknown_keys import nearest_key
from simpy_astra.errors import InputError
from simpy_astra.sweep.megatron_args import check_flag, is_args_path
from simpy_astra.workloads.generated import GENERATORS
from simpy_astra.workloads.megatron.flag_kinds import nearest_flag
from simpy_astra.workloads.megatron.kernels import Gpu

#: a scenario's keys no run reads (text for the person who wrote it)
LABELS = ("name", "description")


def megatron_args_of(scenario: dict[str, Any]) -> Any:
    """A scenario's Megatron-LM arguments, or None when its workload is not Megatron."""
    workload = scenario.get("workload")
    name = workload.get("generate") if isinstance(workload, dict) else None
    entry = GENERATORS.get(name) if isinstance(name, str) else None
    if entry is not None and entry.command_line_args:
        return workload.get("args")
    return None


def check_axis_path(dotted: str, base: dict[str, Any], where: str, generator_fixed: bool = True,
                    paths: Collection[str] = ()) -> None:
    """An axis must name a field some reader uses: a misspelt ``network.bandwith`` would give
    points that all run the same scenario, and ``workload.sizee`` of a generator that takes no
    such parameter would fail every point alike (checked while no axis changes the generator;
    ``paths``: every axis's, which tell whether one changes a job's)."""
    jobs = base.get("jobs")
    if dotted.split(".")[0] in ("workload", "comm_groups") and jobs is not None and "jobs" not in paths:
        raise InputError(f"{where}: '{dotted}' sets the scenario's one workload, but the base runs jobs:, so every "
                         f"point would fail on both; sweep a job's field, e.g. 'jobs.0.{dotted}'")
    if dotted.split(".")[0] == "jobs" and isinstance(jobs, list):
        _check_job_path(dotted, jobs, where, paths)
        return
    if dotted.split(".")[0] == "jobs" and jobs is None and not {"workload", "jobs"} & set(paths) - {dotted}:
        raise InputError(f"{where}: '{dotted}' sets a job, but the base scenario runs one workload, not jobs:, so "
                         f"every point would fail on both; sweep its own field (e.g. 'workload.size'), or give the "
                         f"base jobs:")
    if is_args_path(dotted):
        if megatron_args_of(base) is None:
            raise InputError(f"{where}: '{dotted}' sets a Megatron-LM argument, but the base scenario's workload "
                             f"is not {{generate: megatron, args: \"...\"}}")
        check_flag(dotted, where)
        return
    parts = dotted.split(".")
    if parts[0] in LABELS:
        raise InputError(f"{where}: '{dotted}' is the scenario's label, which no run reads: points that differ only "
                         f"in it run the same scenario; remove it (an axis's name, or a bundle's, labels its points)")
    known: set[str] = set(SCENARIO_KEYS)
    fields = {"system": KNOWN_SYSTEM_KEYS, "network": KNOWN_NETWORK_KEYS}
    if parts[0] in fields and len(parts) > 1:
        present = base.get(parts[0])
        known = set(fields[parts[0]]) | (set(map(str, present)) if isinstance(present, dict) else set())
        at = 1
    elif parts[0] == "workload" and len(parts) == 2 and generator_fixed and \
            (taken := _generator_params(base.get("workload"))) is not None:
        known, wrong, prefix = set(taken) | {"generate"}, parts[1], "workload."
        if wrong not in known:
            near = nearest_key(wrong, known)
            # a Megatron-LM argument written as the generator's parameter: its path is workload.args.FLAG
            flag = nearest_flag("--" + wrong.lstrip("-")) if megatron_args_of(base) is not None else None
            hint = (f"a Megatron-LM argument is swept as 'workload.args.{flag}'" if flag and (flag == wrong.lstrip("-")
                    or not near) else f"did you mean '{prefix}{near}'?" if near else f"it takes {', '.join(taken)}")
            raise InputError(f"{where}: '{dotted}': generate {base['workload']['generate']} takes no parameter "
                             f"{wrong!r}, so every point would fail on it; {hint}")
        return
    elif parts[0] == "cluster" and len(parts) > 1:  # every point would fail on the key, after running
        gpu = parts[1] == "gpu" and len(parts) > 2
        known = {f.name for f in dataclasses.fields(Gpu)} if gpu else set(CLUSTER_KEYS)
        at = 2 if gpu else 1
        parts[at] = OLD_KEYS.get(parts[at], parts[at])  # read as its name with units
    else:
        at = 0
    wrong = parts[at]
    if wrong not in known:
        near = nearest_key(wrong, known)
        # the whole path with the part replaced: 'sytem.preferred-dataset-splits' was told 'system'
        hint = f"; did you mean '{'.'.join([*parts[:at], near, *parts[at + 1:]])}'?" if near else ""
        # a scenario or cluster key a run does not know is refused; a system or network one, warned of
        why = "every point would fail on it" if parts[0] == "cluster" or not at else "every point would run the same"
        raise InputError(f"{where}: '{dotted}' names no field of the scenario ({why}){hint}")


def _check_job_path(dotted: str, jobs: list, where: str, paths: Collection[str]) -> None:
    """``jobs.N.KEY...``: a job's field, a parameter of its generator, a key of its system, as
    the scenario's own are checked (a misspelt one failed every point alike). The index is
    checked as each point is built."""
    parts = dotted.split(".")
    if len(parts) < 3 or not parts[1].isdigit() or int(parts[1]) >= len(jobs) or not isinstance(jobs[int(parts[1])], dict):
        return
    job, key, prefix = jobs[int(parts[1])], parts[2], f"jobs.{parts[1]}."
    if {"jobs", f"jobs.{parts[1]}"} & set(paths):  # the job is set whole by another axis
        return
    fixed = not {f"{prefix}workload", f"{prefix}workload.generate"} & set(paths)
    if key not in JOB_KEYS:
        near = nearest_key(key, JOB_KEYS)
        hint = f"; did you mean '{'.'.join([*parts[:2], near, *parts[3:]])}'?" if near else \
            f" (a job has {', '.join(sorted(JOB_KEYS))})"
        raise InputError(f"{where}: '{dotted}' names no field of a job (every point would fail on it){hint}")
    if key == "workload" and len(parts) == 4 and fixed and (taken := _generator_params(job.get("workload"))):
        if parts[3] not in {*taken, "generate"}:
            near = nearest_key(parts[3], {*taken, "generate"})
            hint = f"did you mean '{prefix}workload.{near}'?" if near else f"it takes {', '.join(taken)}"
            raise InputError(f"{where}: '{dotted}': generate {job['workload']['generate']} takes no parameter "
                             f"{parts[3]!r}, so every point would fail on it; {hint}")
    other = {"npus": "placement", "placement": "npus"}.get(key)
    if other in job and f"{prefix}{other}" not in paths:
        raise InputError(f"{where}: '{dotted}': job {job.get('name', parts[1])} has {other} in the base, and a job "
                         f"takes npus or placement, not both, so every point would fail on it; remove {other} from "
                         f"the base's job")
    if key == "system" and len(parts) > 3 and f"{prefix}system" not in paths:
        if not isinstance(job.get("system"), dict):
            raise InputError(f"{where}: '{dotted}': job {job.get('name', parts[1])} has no system of its own (it "
                             f"runs the scenario's), so the axis would make one of {parts[3]} alone, which every "
                             f"point would fail on; sweep 'system.{parts[3]}', or give the job a system")
        known = set(KNOWN_SYSTEM_KEYS) | set(map(str, job["system"]))
        if parts[3] not in known:
            near = nearest_key(parts[3], known)
            hint = f"; did you mean '{prefix}system.{near}'?" if near else ""
            raise InputError(f"{where}: '{dotted}' names no field of the job's system (every point would run the "
                             f"same){hint}")


def _generator_params(workload: Any) -> tuple[str, ...] | None:
    """The parameters the base's ``{generate: NAME, ...}`` takes, if its generator lists them."""
    entry = GENERATORS.get(workload.get("generate")) if isinstance(workload, dict) else None
    return entry.params() if entry is not None and entry.params is not None else None
