"""What a ``--json-out`` file says about itself: the simulator's version, the backend, the
content of every input it was made from, and every time in nanoseconds under a name that says
so (``finished_ns``; the reference's ``*_cycles`` names stay beside them for one release).

A figures file that names its inputs by content can be matched to them later, after the files
were edited or moved: the same digests mean the same inputs.
"""

from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Iterable
from typing import Any


def _sha256(paths: list[str], named: bool = False) -> str:
    """One digest over the files' contents; ``named``: each preceded by its base name (a set of
    ET files, where renaming a rank's file changes the set)."""
    sha = hashlib.sha256()
    for path in paths:
        if named:
            sha.update(os.path.basename(path).encode() + b"\0")
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                sha.update(block)
    return sha.hexdigest()


def input_digests(files: Iterable[str], workload_prefixes: Iterable[str] = ()) -> list[dict[str, Any]]:
    """``{"path", "sha256"}`` for each input file that exists (inline configs have none), and
    ``{"path": "PREFIX.*.et", "files": N, "sha256"}`` for each workload's ET set."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for path in files:
        full = os.path.abspath(path)
        if full not in seen and os.path.isfile(full):
            seen.add(full)
            out.append({"path": full, "sha256": _sha256([full])})
    for prefix in workload_prefixes:
        full = os.path.abspath(prefix)
        if full in seen:
            continue
        seen.add(full)
        ranks = sorted(glob.glob(glob.escape(full) + ".*.et"),
                       key=lambda p: int(p[len(full) + 1:-3]) if p[len(full) + 1:-3].isdigit() else -1)
        if ranks:
            out.append({"path": f"{full}.*.et", "files": len(ranks), "sha256": _sha256(ranks, named=True)})
    return out


def files_named_in(scenario: str) -> list[str]:
    """The files a scenario YAML names (configs, comm groups, a generator's input), resolved
    from its folder, and the source of the plug-in modules it loads."""
    import yaml

    from simpy_astra.plugins import module_files

    folder = os.path.dirname(os.path.abspath(scenario))
    try:
        with open(scenario) as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError):
        return []
    found: list[str] = []

    def visit(value: Any, key: str | None) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                visit(v, str(k))
        elif isinstance(value, list):
            for v in value:
                visit(v, key)
        elif isinstance(value, str) and 0 < len(value) < 4096 and "\0" not in value:
            if key == "plugins":
                found.extend(module_files(value, [folder]))
                return
            path = value if os.path.isabs(value) else os.path.join(folder, value)
            if os.path.isfile(path):
                found.append(path)

    visit(doc, None)
    return found


def inputs_of(inputs: Any, given: Iterable[str], plugins: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The digests of a run's inputs: the files given on the command line (and, for a
    scenario, every file it names), the configs as read, the ET sets and plug-in modules."""
    from simpy_astra.plugins import module_files

    files: list[str] = []
    for path in given:
        files.append(path)
        if path.endswith((".yaml", ".yml")) and os.path.isfile(path):
            files += files_named_in(path)
    jobs = inputs.jobs or []
    files += [inputs.system.source, inputs.network.source, inputs.remote_memory.source,
              *(job.system.source for job in jobs)]
    files += [f for name in plugins for f in module_files(name)]
    return input_digests(files, [inputs.workload_prefix, *(job.workload_prefix for job in jobs)])
