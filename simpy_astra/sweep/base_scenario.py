"""The sweep's base scenario: read as ``run`` reads it, its relative paths made absolute (a
point runs from a temporary folder), the files an axis reaches into inlined, and a dotted path
into it set (``set_path``), as each point's scenario is built from it."""

from __future__ import annotations

import copy
import os
from typing import Any

from simpy_astra.config.cluster_fields import OLD_KEYS
from simpy_astra.config.cluster_presets import PRESET_DIR
from simpy_astra.config.file_text import short_path
from simpy_astra.config.path_words import shell_words
from simpy_astra.config.scenario_workload import generator_entry
from simpy_astra.config.yaml_reader import read_yaml_file
from simpy_astra.errors import InputError
from simpy_astra.workloads.generated import resolve_paths

#: the scenario's fields that name a file (and the format it is in)
FILE_KEYS = {"system": "json", "network": "yaml", "remote_memory": "json", "comm_groups": "json"}


def _ours(generator: Any) -> bool:
    """Whether ``generator`` names one of simpy-astra's generators, which refuse a parameter
    written null: a sweep's null leaves it out. A user's generator is given the null, as ``run``
    gives it the scenario's ``key: null``."""
    entry = generator_entry(generator) if isinstance(generator, str) else None
    return entry is not None and not entry.by_user


def absolute_preset(value: Any, folder: str) -> Any:
    """A cluster preset named by a relative path (``./my.yaml``) as ``run`` finds it: beside the
    file that names it (a point runs from a temporary folder); a preset's name stays a name."""
    if (isinstance(value, str) and value and not os.path.isabs(value)
            and (value.endswith((".yaml", ".yml")) or os.path.lexists(os.path.join(folder, value)))
            and not os.path.exists(os.path.join(PRESET_DIR, f"{value}.yaml"))):  # a copy named without .yaml too
        return os.path.join(folder, value)
    return value


def set_path(doc: dict[str, Any], dotted: str, value: Any, where: str) -> None:
    """``doc[a][b][c] = value`` for ``a.b.c``; a scalar on a list field fills every element.
    A number indexes a list: ``jobs.1.npus``, ``system.npu-groups.0.peak-perf``."""
    parts = dotted.split(".")
    node: Any = doc
    for i, part in enumerate(parts[:-1]):
        if isinstance(node, list):
            child = node[_index(node, part, parts, i, dotted, where)]
        else:
            child = node.setdefault(part, {})
        if not isinstance(child, dict | list):
            raise InputError(f"{where}: '{'.'.join(parts[:i + 1])}' is {child!r}, not a mapping, so "
                             f"'{dotted}' cannot be set")
        node = child
    last: Any = parts[-1]
    if isinstance(node, list):
        last = _index(node, last, parts, len(parts) - 1, dotted, where)
        current = node[last]
    else:
        current = node.get(last)
    if isinstance(current, list) and not isinstance(value, list):
        value = [value] * len(current)  # e.g. one bandwidth for every network dimension
    if parts[0] == "cluster" and isinstance(node, dict):  # a field the base wrote under its other name
        for old, new in OLD_KEYS.items():
            if last in (old, new):
                node.pop(new if last == old else old, None)
        if value is None:  # null on a cluster axis leaves the field out: the preset's, NCCL's choice
            node.pop(last, None)
            return
    if value is None and isinstance(node, dict) and len(parts) == 3 and parts[0] == "jobs":
        node.pop(last, None)  # null on a job's key leaves it out: the scenario's system, start at 0
        return
    if value is None and isinstance(node, dict) and last != "generate" and _ours(node.get("generate")):
        node.pop(last, None)  # null on our generator's parameter leaves it out: its default
        return
    node[last] = value


def _index(items: list, part: str, parts: list[str], i: int, dotted: str, where: str) -> int:
    """``part`` as an index into the list ``'.'.join(parts[:i])``."""
    if not part.isdigit() or int(part) >= len(items):
        named = [k for k, item in enumerate(items) if isinstance(item, dict) and item.get("name") == part]
        hint = f"; '{part}' is the name of item {named[0]}: write '{'.'.join([*parts[:i], str(named[0]), *parts[i + 1:]])}'" \
            if named else ""
        raise InputError(f"{where}: '{'.'.join(parts[:i])}' is a list of {len(items)}, so '{dotted}' needs "
                         f"an index 0..{len(items) - 1} after it (got '{part}'){hint}")
    return int(part)


def load_yaml(path: str, where: str, what: str) -> Any:
    """A YAML (or JSON: JSON is YAML too) file read as ``run`` reads it (YAML 1.2, duplicate keys,
    depth and alias bounds); a missing file names where the sweep names it."""
    if path and path != "-" and not os.path.lexists(path) and len(path) < 4096 and "\0" not in path:
        raise InputError(f"{short_path(where)}: file {short_path(path)} does not exist")
    if path != where and os.path.isdir(path):
        raise InputError(f"{short_path(where)}: {short_path(path)} is a directory; name the {what} file in it")
    return read_yaml_file(path, what)


def resolve_base(raw: Any, spec_path: str, axis_paths: list[str]) -> tuple[dict[str, Any], str]:
    """The base scenario as one mapping: relative paths made absolute, and every file an axis
    reaches into inlined (so the axis can set a field in it); and the folder it sits in (its
    user modules are found there, as ``run`` finds them)."""
    where = f"{spec_path}: base"
    if isinstance(raw, str):
        problem = shell_words(raw, os.path.dirname(os.path.abspath(spec_path)))
        if problem:
            raise InputError(f"{where}: {raw!r}: {problem}")
        scenario_path = raw if os.path.isabs(raw) else os.path.join(os.path.dirname(spec_path), raw)
        doc = load_yaml(scenario_path, where, "base scenario")
        base_dir = os.path.dirname(os.path.abspath(scenario_path))
    elif isinstance(raw, dict):
        doc, base_dir = copy.deepcopy(raw), os.path.dirname(os.path.abspath(spec_path))
    else:
        raise InputError(f"{where}: give a scenario file path or an inline scenario mapping")
    if isinstance(doc, dict) and "axes" in doc and "workload" not in doc and "jobs" not in doc:
        inner = f" (such as its base, {doc['base']})" if isinstance(doc.get("base"), str) and doc["base"] != raw else ""
        raise InputError(f"{where}: {raw if isinstance(raw, str) else 'it'} is a sweep (it has axes:), not a "
                         f"scenario; name a scenario{inner}, and put the axes in this sweep")
    if not isinstance(doc, dict) or ("workload" not in doc and "jobs" not in doc):
        named = f"{raw} " if isinstance(raw, str) else ""
        got = (f"{named}holds no workload: or jobs:" if isinstance(doc, dict) else
               f"{named}is empty" if doc is None else f"{named}holds a {type(doc).__name__}, not fields")
        raise InputError(f"{where}: {got}; a base scenario is a mapping with workload: (or jobs:) and either "
                         f"cluster: {{preset: NAME, gpus: N}} or system: and network:")
    if isinstance(doc.get("jobs"), list):  # each job's workload and system, as above for the scenario's
        _resolve_jobs(doc["jobs"], base_dir)
    if isinstance(doc.get("cluster"), dict) and "preset" in doc["cluster"]:  # ./my.yaml beside the scenario
        doc["cluster"] = {**doc["cluster"], "preset": absolute_preset(doc["cluster"]["preset"], base_dir)}
    if isinstance(doc.get("workload"), dict):  # a generator's input files, e.g. gemm's mnk CSV
        doc["workload"] = resolve_paths(doc["workload"], base_dir)
    reached = {p.split(".")[0] for p in axis_paths if "." in p}
    for key in ("workload", *FILE_KEYS):
        value = doc.get(key)
        if not isinstance(value, str):
            continue
        path = value if os.path.isabs(value) else os.path.join(base_dir, value)
        if key in reached:
            if key == "workload":
                raise InputError(f"{spec_path}: axes: 'workload.*' needs a generated workload in the base "
                                 f"(workload: {{generate: NAME, ...}}), not the ET prefix {value}")
            doc[key] = load_yaml(path, f"{where}: {key}", f"{key} file")
        else:
            doc[key] = path
    return doc, base_dir


def _resolve_jobs(jobs: list, base_dir: str) -> None:
    """A base scenario's jobs with absolute paths (a point runs from a temporary folder); a
    job's system file is inlined so that ``jobs.N.system.KEY`` may be an axis."""
    for job in jobs:
        if not isinstance(job, dict):
            continue
        workload = job.get("workload")
        if isinstance(workload, dict):
            job["workload"] = resolve_paths(workload, base_dir)
        elif isinstance(workload, str) and not os.path.isabs(workload):
            job["workload"] = os.path.join(base_dir, workload)
        for key in ("system", "comm_groups"):
            value = job.get(key)
            if isinstance(value, str):
                path = value if os.path.isabs(value) else os.path.join(base_dir, value)
                job[key] = load_yaml(path, f"job {job.get('name')}: {key}", f"{key} file") if key == "system" else path
