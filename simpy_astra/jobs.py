"""Several jobs on one network, at run time: each job's view of the network, and its figures.

A job's NPUs, system layers and collectives number its ranks ``0..n-1`` as its traces do;
:class:`JobNetwork` is the one place a rank becomes a physical NPU id (``npus[rank]``), on
every send and receive. Messages are matched on physical ids, and jobs run on disjoint NPUs,
so two jobs' messages never match each other whatever tags they use. A single-job run has no
JobNetwork at all: its NPUs talk to the network directly, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simpy_astra.network.messages import Handler

if TYPE_CHECKING:
    from simpy_astra.config.jobs import JobInputs
    from simpy_astra.statistics import NpuReport


class JobNetwork:
    """A job's view of the network: its ranks in, physical NPU ids out. Everything else
    (``env``, ``board``, ``link``, ``graph`` ...) is the shared network's."""

    def __init__(self, network: Any, npus: tuple[int, ...]) -> None:
        self._network = network
        self._npus = npus

    def send(self, src: int, dst: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        npus = self._npus
        self._network.send(npus[src], npus[dst], tag, size, fn, arg)

    def recv(self, dst: int, src: int, tag: int, size: int, fn: Handler, arg: Any) -> None:
        npus = self._npus
        self._network.recv(npus[dst], npus[src], tag, size, fn, arg)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._network, name)


@dataclass
class JobResult:
    """One job's figures: when its last NPU finished, and its largest exposed communication
    (counted from the job's start: an NPU waiting for ``start_ns`` is not communicating)."""

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
                             max((r.exposed_comm_cycles for r in mine), default=0) - job.start_ns, job.start_ns))
    return out


def finish_alone(inputs: Any, job: JobInputs) -> int:
    """When ``job`` finishes run alone on the same network and backend (``--isolation``)."""
    from dataclasses import replace

    from simpy_astra.simulation import Simulation

    reports = Simulation(replace(inputs, jobs=[job], warnings=[]), memory_traces=False).run()
    return max((r.finished_cycles for r in reports), default=0)


class LinkBytesByJob:
    """Bytes each job put on each directed link (link-level backends), counted as a message
    starts on a link; a message belongs to the job that owns its source NPU. Installed only
    in multi-job runs, so a single-job run's links run the code they always ran."""

    def __init__(self, network: Any, owner: dict[int, str]) -> None:
        from simpy_astra.network.link import Link

        self.network = network
        self.bytes: dict[Any, dict[str, int]] = {}
        for link in network.links():
            counts: dict[str, int] = {}
            self.bytes[link] = counts
            if isinstance(link, Link):
                def begin(item, _orig=link._start, _counts=counts) -> None:
                    key = getattr(item, "key", None)
                    if key is not None:
                        job = owner.get(key.ident[1])
                        if job is not None:
                            _counts[job] = _counts.get(job, 0) + item.size
                    _orig(item)

                link._start = begin
            elif hasattr(link, "request"):  # a packet port: a train joins it
                def join(flow, hop, _orig=link.request, _counts=counts) -> None:
                    key = flow.message.key
                    if key is not None:
                        job = owner.get(key.ident[1])
                        if job is not None:
                            _counts[job] = _counts.get(job, 0) + flow.size_bytes
                    _orig(flow, hop)

                link.request = join

    def of(self, link: Any) -> dict[str, int]:
        return self.bytes.get(link, {})

    def by_label(self) -> dict[tuple[Any, Any], dict[str, int]]:
        """(from, to) device labels -> job -> bytes, for the links any job used."""
        label = self.network.fabric.label
        return {(label(lk.src), label(lk.dst)): {job: round(n) for job, n in c.items()}
                for lk, c in self.bytes.items() if c}  # packet trains may carry a fraction each
