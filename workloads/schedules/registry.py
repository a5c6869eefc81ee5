"""Pipeline schedules by name: what the Megatron and transformer generators look up. A new
schedule is a file with one function returning :class:`~.task.Task` lists, and a line here."""

from __future__ import annotations

from simpy_astra.workloads.schedules.interleaved import interleaved
from simpy_astra.workloads.schedules.one_f_one_b import one_f_one_b
from simpy_astra.workloads.schedules.task import Schedule

SCHEDULES: dict[str, Schedule] = {
    "1f1b": one_f_one_b,
    "interleaved-1f1b": interleaved,
}


def register(name: str, schedule: Schedule) -> None:
    """Add a schedule under ``name`` (a plug-in's or a test's); names are unique."""
    if name in SCHEDULES and SCHEDULES[name] is not schedule:
        raise ValueError(f"pipeline schedule {name!r} is already registered")
    SCHEDULES[name] = schedule


def default_schedule(chunks: int) -> str:
    """Megatron-LM's choice: interleaved 1F1B with virtual pipeline stages, else 1F1B."""
    return "1f1b" if chunks == 1 else "interleaved-1f1b"


def schedule(name: str) -> Schedule:
    if name not in SCHEDULES:
        raise ValueError(f"unknown pipeline schedule {name!r} (known: {', '.join(sorted(SCHEDULES))})")
    return SCHEDULES[name]
