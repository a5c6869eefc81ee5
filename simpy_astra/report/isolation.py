"""A job of a multi-job run, run alone on the same network (``--isolation``): what its
slowdown in the shared run is measured against. Apart from :mod:`simpy_astra.running.jobs` because
it builds a whole :class:`~simpy_astra.simulation.Simulation`, which builds jobs."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from simpy_astra.simulation import Simulation

if TYPE_CHECKING:
    from simpy_astra.config.inputs import SimulationInputs
    from simpy_astra.config.jobs import JobInputs


def finish_alone(inputs: SimulationInputs, job: JobInputs) -> int:
    """When ``job`` finishes run alone on the same network and backend."""
    reports = Simulation(replace(inputs, jobs=[job], warnings=[]), memory_traces=False).run()
    return max((r.finished_cycles for r in reports), default=0)
