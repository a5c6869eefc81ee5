"""A sweep point's Megatron-LM job, parsed once when the point is expanded.

The sweep reads a point's job twice before any point runs: to tell points that run one step
apart (:mod:`~simpy_astra.sweep.same_run`) and to mark those Megatron refuses
(:mod:`~simpy_astra.sweep.validity`). Each parsed the command line again (three times a point
with ``--list``'s loader), so the job is parsed here once, its errors naming the point, and
both read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simpy_astra.errors import InputError
from simpy_astra.sweep.axis_paths import megatron_args_of
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.job import MegatronJob


@dataclass(frozen=True)
class PointJob:
    """A point's Megatron job, or why Megatron (or the simulator) refuses its arguments."""

    job: MegatronJob | None
    #: the refusal, an :class:`~simpy_astra.errors.InvalidConfigurationError` for a rule of
    #: Megatron's; None when ``job`` is
    refused: InputError | None = None


def point_job(scenario: dict[str, Any], where: str) -> PointJob | None:
    """The Megatron job of ``scenario`` on its cluster's GPUs, its errors naming ``where`` (the
    sweep file and the point) as ``SWEEP: point ...: workload``; None where the point is no
    Megatron job on a GPU count (it fails on its own, saying why)."""
    args = megatron_args_of(scenario)
    cluster = scenario.get("cluster")
    gpus = cluster.get("gpus") if isinstance(cluster, dict) else None
    if args is None or not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        return None
    try:
        return PointJob(parse(args, gpus, f"{where}: workload"))
    except InputError as exc:  # an invalid layout too (InvalidConfigurationError is one)
        return PointJob(None, exc.with_traceback(None))  # kept with the point: not its parser's frames
