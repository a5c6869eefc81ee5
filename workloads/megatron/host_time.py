"""The host's side of a task: when it enqueues each of the task's kernels and collectives.

PyTorch issues a task (a micro-batch's forward, recomputation or backward through a chunk)
eagerly: the host walks the modules' Python and launches each kernel and NCCL call onto its
CUDA stream, and returns at once; the GPU runs what is enqueued as its stream allows. So the
host runs ahead of the GPU where the kernels are long, and the GPU waits for the host where
they are short, kernel by kernel: a step's kernels start at the later of their enqueue and
what they wait for, and a blocking collective holds up the compute after it, never the host.
"""

from __future__ import annotations

from dataclasses import dataclass

from simpy_astra.workloads.megatron.kernels import host_seconds
from simpy_astra.workloads.megatron.steps import Collective, Compute, Step
from simpy_astra.workloads.transformer.graph import COMP, Op, StageGraph


def step_host_seconds(step: Step) -> float:
    """Time the host needs to issue ``step``: each kernel's launch plus the step's ``host_s``
    (Transformer Engine modules' Python), or a tensor- or context-parallel collective as one
    more launch (c10d's NCCL call: its stream and event handling and NCCL's enqueue of the
    collective's kernel); markers take none."""
    if isinstance(step, Compute):
        return host_seconds(step.kernels) + step.host_s
    return host_seconds(1) if isinstance(step, Collective) else 0.0


def task_host_seconds(steps: list[Step]) -> float:
    """Time the host needs to issue one task's ``steps``."""
    return sum(map(step_host_seconds, steps))


@dataclass(frozen=True)
class TaskIssue:
    """When the host enqueues a task's steps, in seconds from the task's start: from the
    enqueue of its first kernel where the host ran ahead of the GPU into it, or from the
    start of that launch (``after_sync``) where the host had waited for the GPU (Megatron's
    synchronisations: the GPU is idle until the host's first launch after one).
    ``enqueued_s[i]``: when step ``i``'s first kernel or call is on its stream (a compute
    step's host work spread evenly over its kernels: its first kernel is enqueued after one
    share); None for a marker. ``done_s``: when the host has issued the whole task.
    ``reached_s[i]``: when the host reaches step ``i`` (a marker: a module's forward pre-hook)."""

    enqueued_s: list[float | None]
    done_s: float
    reached_s: list[float]


def task_issue(steps: list[Step], after_sync: bool = False) -> TaskIssue:
    """:class:`TaskIssue` of ``steps``, the host issuing them one after the other (from a
    synchronisation with the GPU: ``after_sync``)."""
    out: list[float | None] = []
    reached: list[float] = []
    done_s = 0.0
    for step in steps:
        reached.append(done_s)
        cost_s = step_host_seconds(step)
        if isinstance(step, Compute):
            out.append(done_s + cost_s / max(1, step.kernels))
        else:
            out.append(done_s + cost_s if isinstance(step, Collective) else None)
        done_s += cost_s
    first = 0.0 if after_sync else next((at for at in out if at is not None), 0.0)
    return TaskIssue([None if at is None else at - first for at in out], done_s - first,
                     [max(0.0, at - first) for at in reached])


class HostChain:
    """The host's time through one task as CPU nodes of ``graph`` (``is_cpu_op``: they hold
    the host, not the GPU), one after the other from ``start`` (what the task waits for; the
    host waits for it too, at the synchronisation that ends the previous task). A unit of
    GPU work (a compute node, a collective) enqueued at ``at_s`` waits for the node the chain
    reaches ``at_s`` with. Only where the GPU could be there sooner: the GPU has at least the
    compute before the unit to run first (``gpu_us``, on its one compute stream), so where
    that outlasts ``at_s`` no node is needed and none is written (a task whose kernels keep
    ahead of the host has the graph it would have without one)."""

    def __init__(self, graph: StageGraph, prefix: str, start: list[int]) -> None:
        self.graph = graph
        self.prefix = prefix
        self.start = list(start)
        self.last: int | None = None  # the chain's last node
        self.at_us = 0  # where it ends, from the task's start

    def gate(self, at_s: float, gpu_us: int) -> list[int]:
        """What a unit enqueued at ``at_s`` waits for, when at least ``gpu_us`` of compute runs
        before it: the chain's node that ends at ``at_s``, or nothing."""
        at_us = round(at_s * 1e6)
        if at_us <= gpu_us:
            return []
        if at_us > self.at_us:
            deps = self.start if self.last is None else [self.last]
            op = Op(f"{self.prefix}.host", COMP, list(deps), [], [], op_type="host",
                    duration_us=at_us - self.at_us, cpu=True)
            self.last, self.at_us = self.graph.add(op), at_us
        return [self.last] if self.last is not None else []
