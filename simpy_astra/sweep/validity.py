"""Points Megatron-LM would refuse to launch, found before anything runs.

Such a point is a result of the design space (``tp 8 x pp 16`` does not divide 1,000 GPUs), not
a failure of the simulator: it becomes a row with ``status: invalid`` and the rule in ``error``,
and ``--list`` marks it. Reading the arguments costs microseconds, so every point is checked
up front. A sweep with an axis over other fields (``backend``, ``network.bandwidth``,
``jobs.1.placement``) has ``--list`` read each point as its run would, with the scenario
loader (a few ms a point, no slow generator run), so that a value the loader refuses is marked
with the loader's own words. A rule on the cluster's GPU (FP8 without FP8 units) is checked on
the GPU as the cluster loads it (each cluster loaded once as the points are expanded), and so
is one of its nodes (NVLS on nodes without NVSwitch-3). A point's job is the one parsed as it
was expanded (:mod:`~simpy_astra.sweep.point_job`), and what it says is kept with the point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simpy_astra.errors import InputError, InvalidConfigurationError
from simpy_astra.plugins import PluginError
from simpy_astra.sweep.point_job import PointJob

INVALID = "invalid"


def invalid_figures(exc: InvalidConfigurationError, where: str) -> dict[str, Any]:
    """The row of a refused point: its rule first in ``error``, then Megatron's reason."""
    text = " ".join(exc.message.split())
    return {"status": INVALID, "error": f"{exc.rule}: {text}", "rule": exc.rule, "wall_s": 0.0}


@dataclass(frozen=True)
class JobVerdict:
    """What a point's Megatron job says of its run before it runs, kept with the point in
    place of the job (:mod:`~simpy_astra.sweep.point_job`)."""

    #: the row of a point Megatron refuses (:func:`invalid_figures`), or None
    invalid: dict[str, Any] | None = None
    #: why its run will fail, or ''
    failure: str = ""


def job_verdict(found: PointJob | None, where: str) -> JobVerdict | None:
    """What Megatron refuses of a point's job as it was expanded (``found``): its arguments,
    the machine NCCL cannot run as asked (NVLS on an A100's nodes), what it refuses of the
    cluster's GPU (FP8 on an A100); None where it refuses nothing, or the point has no job."""
    if found is None:
        return None
    # deferred: the generator's modules cost a sweep without Megatron's flags 0.16 s to import
    from simpy_astra.workloads.megatron.generator import on_hardware

    try:
        if found.refused is not None:
            raise found.refused
        if isinstance(found.cluster, InvalidConfigurationError):
            raise found.cluster
        if found.cluster is not None:
            on_hardware(found.job, found.cluster[0], f"{where}: workload.args")
    except InvalidConfigurationError as exc:
        return JobVerdict(invalid_figures(exc, where))
    except InputError as exc:
        return JobVerdict(None, " ".join(exc.message.split()))
    return None


def verdict(scenario: dict[str, Any], where: str, load: bool = False,
            megatron: JobVerdict | None = None, job: Any = None) -> tuple[dict[str, Any] | None, str]:
    """(the invalid row of a point Megatron refuses, or None; why a point will fail when it
    runs, or ''): a value beyond what the simulator builds, such as a trace of more nodes than
    its bound, which ``--list`` shows rather than only the run. ``load``: read the whole point
    with the scenario loader too (the sweep has axes beyond Megatron's flags). ``megatron``:
    what the point's job said as it was expanded (:func:`job_verdict`); ``job``: that job, which
    the loader then reads in place of parsing its command line again."""
    if megatron is not None:
        return megatron.invalid, megatron.failure
    return (_loaded(scenario, where, job) if load else (None, ""))


def _loaded(scenario: dict[str, Any], where: str, job: Any) -> tuple[dict[str, Any] | None, str]:
    """What the scenario loader says of a point, in the words its run would record."""
    # deferred: the loader is heavy, and a sweep of Megatron's flags alone never needs it
    from simpy_astra.running.input_checks import check_et_count
    from simpy_astra.sweep.point_inputs import load_point, relabel
    from simpy_astra.workloads.generated import NotGenerated
    from simpy_astra.workloads.megatron.arguments import parsed_before

    try:
        with parsed_before(job):
            inputs = load_point(scenario, checking=True)
        if inputs.jobs is None:  # the ET files its run checks first (an axis naming traces that are not there)
            check_et_count(inputs.workload_prefix, inputs.network.total_npus, inputs.network.source)
    except InvalidConfigurationError as exc:
        return invalid_figures(InvalidConfigurationError(relabel(exc.message, where), exc.rule), where), ""
    except (InputError, PluginError) as exc:  # a plug-in's error too: its run records it
        return None, relabel(" ".join(str(exc).split()), where)
    except NotGenerated:  # only its run can tell (minutes of a slow generator)
        pass
    return None, ""
