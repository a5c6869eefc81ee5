"""Several jobs on one network, at run time: each job's view of the network, and its figures.

A job's NPUs, system layers and collectives number its ranks ``0..n-1`` as its traces do;
:class:`JobNetwork` is the one place a rank becomes a physical NPU id (``npus[rank]``), on
every send and receive. Messages are matched on physical ids, and jobs run on disjoint NPUs,
so two jobs' messages never match each other whatever tags they use. A single-job run has no
JobNetwork at all: its NPUs talk to the network directly, as before.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import simpy

from simpy_astra.engine.collective_plans import CollectivePlanner
from simpy_astra.engine.npu import Npu, NpuServices
from simpy_astra.errors import InputError
from simpy_astra.folding.run import FoldOutcome, load_traces
from simpy_astra.infra.units import local_mem_gbps_to_bytes_per_s, tflops_to_flops
from simpy_astra.network.checked_models import system_side
from simpy_astra.network.messages import Handler

if TYPE_CHECKING:
    from simpy_astra.config.inputs import SimulationInputs
    from simpy_astra.config.jobs import JobInputs
    from simpy_astra.engine.statistics import NpuReport
    from simpy_astra.network import Network


class JobNetwork:
    """A job's view of the network: its ranks in, physical NPU ids out. A job's NPUs and
    system layers use ``send`` and ``recv`` only; the rest of the
    :class:`~simpy_astra.network.Network` is the shared network's (``network``)."""

    def __init__(self, network: Network, npus: tuple[int, ...]) -> None:
        self.network = network
        self._npus = npus

    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        npus = self._npus
        self.network.send(npus[src], npus[dst], tag, size, fn, arg)

    def recv(self, dst: int, src: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        npus = self._npus
        self.network.recv(npus[dst], npus[src], tag, size, fn, arg)


@dataclass
class JobResult:
    """One job's figures: when its last NPU finished, and its largest exposed communication
    (counted from the job's start, as each NPU's report counts it: an NPU waiting for
    ``start_ns`` is not communicating)."""

    name: str
    npus: tuple[int, ...]
    finished_cycles: int
    exposed_comm_cycles: int
    start_ns: int = 0
    #: when run alone on the same network (``--isolation``), and shared / alone
    alone_cycles: int | None = None

    @property
    def duration_ns(self) -> int:
        """From the job's start to its last NPU's finish."""
        return self.finished_cycles - self.start_ns

    @property
    def slowdown(self) -> float | None:
        """Shared duration / alone duration (both from the job's start)."""
        if self.alone_cycles is None:
            return None
        alone = self.alone_cycles - self.start_ns
        return self.duration_ns / alone if alone else float("inf")

    def line(self) -> str:
        return f"job {self.name} finished, {self.finished_cycles} cycles"

    def as_dict(self) -> dict:
        out: dict[str, Any] = {"npus": list(self.npus), "start_ns": self.start_ns,
                               "finished_cycles": self.finished_cycles,
                               "exposed_comm_cycles": self.exposed_comm_cycles}
        if self.alone_cycles is not None:
            out["alone_cycles"] = self.alone_cycles
            out["slowdown"] = round(self.slowdown, 6)
        return out


def job_results(jobs: list[JobInputs], reports: list[NpuReport]) -> list[JobResult]:
    """Per job (in the scenario's order), from the per-NPU reports (physical ids): a job
    finishes with its last NPU; its exposed communication is its NPUs' largest."""
    by_npu = {r.npu_id: r for r in reports}
    out = []
    for job in jobs:
        mine = [by_npu[n] for n in job.npus if n in by_npu]
        out.append(JobResult(job.name, job.npus, max((r.finished_cycles for r in mine), default=0),
                             max((r.exposed_comm_cycles for r in mine), default=0), job.start_ns))
    return out


class LinkBytesByJob:
    """Bytes each job put on each directed link (link-level backends), counted as a message
    starts on a link (every link's ``link_start`` probe point, so a ``link-model`` of the
    user's is counted as the built-in one is); a message belongs to the job that owns its
    source NPU. Subscribed only in multi-job runs, so a single-job run's links pay one
    attribute test per hop."""

    def __init__(self, network: Any, owner: dict[int, str]) -> None:
        self.network = network
        self.bytes: dict[Any, dict[str, int]] = {}
        for link in network.links():
            self.bytes[link] = {}

        def count(link: Any, key: Any, size_bytes: float) -> None:
            if key is not None:  # (background traffic is no job's)
                job = owner.get(key.ident[1])
                if job is not None:
                    counts = self.bytes[link]
                    counts[job] = counts.get(job, 0) + size_bytes

        for link in network.links():
            link.watch("link_start", count)

    def of(self, link: Any) -> dict[str, int]:
        return self.bytes.get(link, {})

    def by_label(self) -> dict[tuple[Any, Any], dict[str, int]]:
        """(from, to) device labels -> job -> bytes, for the links any job used."""
        label = self.network.label
        return {(label(lk.src), label(lk.dst)): {job: round(n) for job, n in c.items()}
                for lk, c in self.bytes.items() if c}  # packet trains may carry a fraction each


def build_jobs(sim: Any, inputs: SimulationInputs, npu_done: Callable[[Npu], None]) -> dict[int, int]:
    """Build every job's NPUs into ``sim`` (in NPU-id order), each on its own NPUs with its own
    ranks, groups and system config, talking through its :class:`JobNetwork` (``npu_done``: called
    as each NPU's graph finishes); returns the
    NPUs whose job starts later (NPU -> ``start_ns``). Folding is off: it assumes one
    workload on every NPU."""
    assert inputs.jobs is not None
    sim.local_mem_trace_prefix = None  # one file per NPU id: jobs' rank ids would collide
    owner: dict[int, JobInputs] = {}  # physical NPU -> its job
    built: dict[int, Npu] = {}
    side = sim.system_side = system_side(sim.network)  # one for every job: their sends share the board
    for index, job in enumerate(inputs.jobs):
        n = job.num_ranks
        cfg = job.system
        job_dims = sim.network_dims if n == sim.total_npus else [n]
        identity = job.npus == tuple(range(sim.total_npus))
        network = side if identity else JobNetwork(side, job.npus)
        planner = CollectivePlanner(cfg, n)
        planner.add_file_groups(job.comm_groups, f"jobs[{index}].comm_groups")
        if job is inputs.jobs[0]:
            sim.planner = planner
        traces, _ = load_traces(job.workload_prefix, n, None, planner.file_group_members(),
                                planner.parse_process_groups, FoldOutcome())
        services = NpuServices(cfg, n, network, sim.remote_memory, planner,
                               local_mem_gbps_to_bytes_per_s(cfg.local_mem_bw_gbps),
                               tflops_to_flops(cfg.peak_perf_tflops), npu_done, sim.failed)
        for rank in range(n):
            device = job.npus[rank]
            npu = services.build_npu(rank, device, traces[rank], job_dims, inputs.queues_per_dim, sim.env)
            npu.job = job.name
            built[device] = npu
            owner[device] = job
        if len(job_dims) < len(sim.network_dims):
            refuse_lists_per_network_dimension(job, sim.network_dims, built[job.npus[0]])
    for device in sorted(built):  # processes start in NPU-id order
        npu = built[device]
        sim.npus.append(npu)
        sim.systems.append(npu.system)
    if sim.network.has_links:
        sim.link_bytes_by_job = LinkBytesByJob(sim.network, {d: j.name for d, j in owner.items()})
    return {d: j.start_ns for d, j in owner.items() if j.start_ns}


def refuse_lists_per_network_dimension(job: JobInputs, network_dims: list[int], npu: Npu) -> None:
    """A job on part of a network of several dimensions sees one dimension of its ranks, so
    a system listing one algorithm per network dimension (the scenario's, shared) cannot
    plan its collectives: refused before the run, naming the job, the field and the fix
    (the system layer would name only a 1-dimension network, which the scenario does not
    have). Checked on the collectives its first rank runs over its whole job."""
    # deferred: the registry and the engine's tables are needed only by a job on part of the NPUs
    from simpy_astra.collectives import resolve
    from simpy_astra.engine.npu_communication import COLLECTIVE_KINDS
    from simpy_astra.workloads.chakra.schema import COMM_COLL_NODE

    cfg = job.system
    if cfg.custom_implementations or cfg.per_node_custom:
        return
    for node in npu.nodes.values():
        if node.type != COMM_COLL_NODE or node.attrs.get("pg_name", (None, ""))[1] not in ("", "0"):
            continue  # a named group's collective runs on rings of its group
        kind = COLLECTIVE_KINDS.get(node.attrs.get("comm_type", (None, None))[1])
        names = cfg.implementations.get(kind) or ()
        first = resolve(names[0]) if names else None
        if len(names) < 2 or first is None or first.spans_all_npus:
            continue  # one algorithm, or one that spans every NPU (an unknown name is refused when run)
        key = kind.replace("_", "-") + "-implementation"
        raise InputError(
            f"{job.where}: job {job.name} runs on {len(job.npus)} of the network's {math.prod(network_dims)} NPUs, "
            f"which it sees as one dimension of {len(job.npus)} ranks, but its system ({cfg.source}) lists "
            f"{len(names)} {key} algorithms, one per network dimension; give the job a system of its own "
            f"({job.where.rpartition(': ')[2]}.system) whose {key} lists one, e.g. [\"{names[0]}\"]")


def job_warnings(inputs: SimulationInputs, network: Any) -> list[str]:
    """What each job's own system file ignores (once per file), and that jobs do not
    interfere on a backend whose delays depend on a message's two NPUs alone (not on a
    backend of one's own whose delays depend on the messages in flight, a shared trunk)."""
    out: list[str] = []
    seen = {inputs.system.source}
    for job in inputs.jobs or ():
        if job.system.source not in seen:
            seen.add(job.system.source)
            out.extend(job.system.ignored)
    if not network.has_links and network.pair_delays_only and len(inputs.jobs or ()) > 1:  # one job: no other
        out.append(f"the {network.name} backend has no shared links: the jobs do not "
                   f"interfere there (use congestion_aware or packet)")
    return out


def _waited(_arg: Any) -> None:
    """A late job's start came (its clock item only kept the NPU from looking stalled)."""


def start_later(env: simpy.Environment, npu: Npu, delay_ns: int):
    """An NPU's process that starts its graph ``delay_ns`` from now (its job's ``start_ns``);
    an item in its clock until then tells the stall watchdog that it has something to do."""
    npu.clock.register(delay_ns, _waited, None)
    yield env.timeout(delay_ns)
    return (yield from npu.execute())
