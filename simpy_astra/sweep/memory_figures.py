"""A sweep's figures of memory where no point measures memory, refused before any point runs.

``peak_memory_gb`` and its parts (``peak_weights_gb``, ...) come from a run whose system has
``track-local-mem`` on, or from a Megatron job's model; any other point leaves them empty. A
``minimise: peak_memory_gb`` over such points ran every point and then ended on 'gave no
number', a ``memory_cap_gb`` or constraint held no point to it, and a report column was empty.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from simpy_astra.errors import InputError
from simpy_astra.sweep.result_names import PEAK_PARTS
from simpy_astra.sweep.spec import reports_training

if TYPE_CHECKING:
    from simpy_astra.sweep.spec import Point, SweepSpec

MEMORY_NAMES = frozenset({"peak_memory_gb", *PEAK_PARTS})


def check_memory_figures(spec: SweepSpec, points: list[Point]) -> None:
    """Refuse an expression over :data:`MEMORY_NAMES` when no point of ``points`` can report
    them (a point whose system is a file not readable here, or a plug-in's, may)."""
    if any(_may_track_memory(p.scenario) for p in points):
        return
    used = spec.goals.first_use(MEMORY_NAMES)
    if used:
        where, expr, name = used
        raise InputError(f"{spec.path}: {where}: '{expr.text}' reads {name}, which only a run with system "
                         f"track-local-mem: 1 (or a Megatron job) measures, and no point of this sweep sets it, "
                         f"so it would be empty for every point; set track-local-mem: 1 in the base's system, or "
                         f"use finish_ns, exposed_comm_ns, ...")


def _may_track_memory(scenario: dict[str, Any]) -> bool:
    """Whether a point's run may measure memory: a training job, a system (or a job's) with
    track-local-mem on, or one this cannot tell (a cluster's preset, a system file not read)."""
    if reports_training(scenario) or "cluster" in scenario:
        return True
    jobs = scenario.get("jobs")
    systems = [scenario.get("system"), *(j.get("system") for j in jobs if isinstance(j, dict))] \
        if isinstance(jobs, list) else [scenario.get("system")]
    return any(_tracks(system) for system in systems)


def _tracks(system: Any) -> bool:
    if system is None:
        return False
    if isinstance(system, str):
        try:
            with open(system, encoding="utf-8") as f:
                system = json.load(f)
        except (OSError, ValueError):
            return True  # not readable here: its run will say, or measure
    return not isinstance(system, dict) or system.get("track-local-mem") not in (None, 0, False)
