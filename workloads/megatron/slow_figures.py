"""Which of a GPU's figures make a Megatron job's compute too long to simulate: a horizon
error that said "check the GPU's figures" left the user to find an efficiency of 1e-300 among
a dozen. Each figure the step's kernels of its slowest kind read is raised alone to the most a
GPU may state (:data:`~simpy_astra.config.cluster_fields.GPU_RANGES`), and those kernels timed
again by the layer code itself, on the step's own shapes: the figures whose raise shortens
them enough are named."""

from __future__ import annotations

from dataclasses import replace

from simpy_astra.config.cluster_fields import GPU_RANGES
from simpy_astra.workloads.megatron.job import MegatronJob
from simpy_astra.workloads.megatron.kernels import Gpu
from simpy_astra.workloads.megatron.layers import middle_chunk
from simpy_astra.workloads.megatron.schedule import StageSchedule
from simpy_astra.workloads.megatron.steps import Compute

#: the GPU's figures a kernel runs faster for, the higher they are
RATES = ("tensor_tflops", "tensor_efficiency", "fp8_tflops", "fp8_efficiency", "attention_efficiency", "l2_gb_s",
         "hbm_gb_s", "memory_efficiency")


def kernel_seconds(job: MegatronJob, gpu: Gpu, kind: str) -> float:
    """The kernels of ``kind`` (a compute node's ``op_type``) of ``job`` on ``gpu``, as the
    step times them: a micro-batch's forward and backward through a middle stage's first
    chunk (its GEMMs, attention, memory-bound passes), or the optimizer step; 0 for a kind no
    GPU figure times (the host's)."""
    if kind == "optimizer":
        return StageSchedule(job, gpu, min(1, job.pp - 1)).optimizer_step_seconds()
    model, layers = middle_chunk(job, gpu)
    steps = [*model.forward(layers, False, False), *model.backward(layers, False, False)]
    return sum(step.seconds.get(kind, 0.0) for step in steps if isinstance(step, Compute))


def slow_figures(job: MegatronJob, gpu: Gpu, kind: str, over: float) -> list[str]:
    """The figures of ``gpu`` whose raise alone (to the most a GPU may state) makes the kernels
    of ``kind`` ``over`` times as fast; if none does, those that speed them up at all, the most
    first."""
    now_s = kernel_seconds(job, gpu, kind)
    if now_s <= 0:
        return []
    gains = {}
    for name in RATES:
        top = GPU_RANGES[name][1]
        if getattr(gpu, name) < top:
            faster_s = kernel_seconds(job, replace(gpu, **{name: top}), kind)
            gains[name] = now_s / faster_s if faster_s > 0 else float("inf")
    enough = [name for name, gain in gains.items() if gain >= over]
    return enough or sorted((name for name, gain in gains.items() if gain > 1.01), key=lambda n: -gains[n])
