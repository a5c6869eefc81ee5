"""A sweep point's Megatron-LM job, parsed once when the point is expanded.

The sweep reads a point's job twice before any point runs: to tell points that run one step
apart (:mod:`~simpy_astra.sweep.same_run`) and to mark those Megatron refuses
(:mod:`~simpy_astra.sweep.validity`). Each parsed the command line again (three times a point
with ``--list``'s loader), so the job is parsed here once, its errors naming the point, and
both read it as the point is expanded: the point keeps what they found, not the job (4.4 KB a
point, 440 MB held for a whole sweep at its 100,000-point cap). The job is parsed on the
cluster's nodes, as its run parses it: a pasted launcher's count a node that the nodes do not
hold is found before the point runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simpy_astra.errors import InputError, InvalidConfigurationError
from simpy_astra.sweep.axis_paths import megatron_args_of
from simpy_astra.sweep.cluster_loads import ClusterLoads
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.job import MegatronJob
from simpy_astra.workloads.megatron.kernels import Gpu

#: a point's cluster as its run loads it: (its GPU, its GPUs a node); the rule of Megatron's
#: NCCL the machine breaks (NVLS on an A100's nodes); None where the loader refuses it (the
#: point fails on its own, saying why)
LoadedNodes = tuple[Gpu, int] | InvalidConfigurationError | None


@dataclass(frozen=True)
class PointJob:
    """A point's Megatron job, or why Megatron (or the simulator) refuses its arguments, and
    its cluster as loaded; read while the point is expanded, then let go."""

    job: MegatronJob | None
    #: the refusal, an :class:`~simpy_astra.errors.InvalidConfigurationError` for a rule of
    #: Megatron's; None when ``job`` is
    refused: InputError | None = None
    cluster: LoadedNodes = None


def point_job(scenario: dict[str, Any], where: str, clusters: ClusterLoads | None = None) -> PointJob | None:
    """The Megatron job of ``scenario`` on its cluster's GPUs and nodes, its errors naming
    ``where`` (the sweep file and the point) as ``SWEEP: point ...: workload.args``; None where the
    point is no Megatron job on a GPU count (it fails on its own, saying why). ``clusters``
    keeps each cluster loaded, for the next point: a sweep's points share a few."""
    args = megatron_args_of(scenario)
    cluster = scenario.get("cluster")
    gpus = cluster.get("gpus") if isinstance(cluster, dict) else None
    if args is None or not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        return None
    clusters = ClusterLoads() if clusters is None else clusters
    nodes = _loaded(cluster, where, clusters)
    per_node = nodes[1] if isinstance(nodes, tuple) else None
    try:
        job = parse(args, gpus, f"{where}: workload.args", f"{where}: cluster.gpus", per_node)
    except InputError as exc:  # an invalid layout too (InvalidConfigurationError is one)
        return PointJob(None, exc.with_traceback(None), nodes)  # not its parser's frames
    stop = _broadcast_stop(job, clusters.load(cluster), where)
    return PointJob(None, stop, nodes) if stop is not None else PointJob(job, None, nodes)


def _broadcast_stop(job: MegatronJob, loaded: Any, where: str) -> InvalidConfigurationError | None:
    """Where the cluster forces an algorithm NCCL has no broadcast by (all but the ring), NCCL's
    refusal of the job's first batch broadcast (``get_batch`` broadcasts over each tp group of
    two or more GPUs), in the words its run stops with: the run is refused as Megatron's rules
    refuse a point, so ``--list`` marks it and it never runs (it ran to that row)."""
    from simpy_astra.engine.nccl_names import BROADCAST  # deferred, with the cluster's loader

    if job.tp < 2 or isinstance(loaded, InputError) or loaded.nccl_algo is None:  # NCCL's choice: the ring
        return None
    timer = loaded.nccl_all_reduce()
    name = f"batch.{'sizes' if job.legacy else 'tokens'}.broadcast"
    try:
        timer.algorithm(timer.shape(tuple(range(job.tp))), 1, BROADCAST, name)
    except InvalidConfigurationError as exc:
        return InvalidConfigurationError(f"{where}: {exc.message}", exc.rule)
    return None


def _loaded(cluster: dict[str, Any], where: str, clusters: ClusterLoads) -> LoadedNodes:
    """The GPU and GPUs a node of ``cluster`` as its run loads them; a rule of NCCL's it breaks
    in words naming the point ``where``."""
    loaded = clusters.load(cluster)
    if isinstance(loaded, InvalidConfigurationError):  # named "cluster.nccl_algo: ..." by the load
        return InvalidConfigurationError(f"{where}: {loaded.message}", loaded.rule)
    return None if isinstance(loaded, InputError) else (loaded.gpu_model(), loaded.gpus_per_node)
