"""The host's side of a task: how long it takes to issue the task's kernels and collectives,
and how long the GPU idles waiting for it where the kernels run faster.
"""

from __future__ import annotations

from simpy_astra.workloads.megatron.kernels import host_seconds
from simpy_astra.workloads.megatron.steps import Collective, Compute, Step


def task_host_seconds(steps: list[Step]) -> float:
    """Time the host needs to issue one task's ``steps``: each kernel's launch, each tensor-
    or context-parallel collective as one more kernel (c10d's NCCL call: its stream and event
    handling and NCCL's enqueue of the collective's kernel), plus each compute step's
    ``host_s`` (Transformer Engine modules' Python)."""
    compute = [step for step in steps if isinstance(step, Compute)]
    calls = sum(1 for step in steps if isinstance(step, Collective))
    return host_seconds(sum(step.kernels for step in compute) + calls) + sum(step.host_s for step in compute)


def host_idle_seconds(steps: list[Step]) -> float:
    """How long the GPU idles in a task whose kernels run faster than the host issues them
    (0 when they do not). The host cannot run ahead across tasks: with pp > 1 Megatron
    synchronises the device after each point-to-point exchange, and a task that is host
    bound in itself is so in any order."""
    gpu = sum(step.total_s for step in steps if isinstance(step, Compute))
    return max(0.0, task_host_seconds(steps) - gpu)
