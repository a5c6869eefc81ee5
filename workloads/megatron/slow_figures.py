"""Which of a GPU's figures make a Megatron job's compute too long to simulate: a horizon
error that said "check the GPU's figures" left the user to find an efficiency of 1e-300 among
a dozen. Each figure a kernel of the step's slowest kind reads is raised alone to the most a
GPU may state (:data:`~simpy_astra.config.cluster_fields.GPU_RANGES`), and the kernel timed
again by the model's own formulas: the figures whose raise shortens it enough are named."""

from __future__ import annotations

from dataclasses import replace

from simpy_astra.config.cluster_fields import GPU_RANGES
from simpy_astra.workloads.megatron.job import MegatronJob
from simpy_astra.workloads.megatron.kernels import (
    Gpu,
    flash_attention_seconds,
    gemm_seconds,
    streaming_seconds,
)

#: the GPU's figures a kernel runs faster for, the higher they are
RATES = ("tensor_tflops", "tensor_efficiency", "fp8_tflops", "fp8_efficiency", "attention_efficiency", "l2_gb_s",
         "hbm_gb_s", "memory_efficiency")


def kernel_seconds(job: MegatronJob, gpu: Gpu, kind: str) -> float:
    """One kernel of ``kind`` (a compute node's ``op_type``) of ``job``'s layers on ``gpu``: a
    projection's GEMM, a micro-batch's causal attention, or a pass over its activations; 0 for
    a kind no GPU figure times (the host's)."""
    tokens = job.micro_batch * job.seq // job.cp
    if kind == "gemm":
        return gemm_seconds(gpu, tokens, job.hidden, job.hidden, 1, 1 if job.fp8 else job.element_bytes, job.fp8)
    if kind == "attention":
        return flash_attention_seconds(gpu, job.micro_batch * job.heads, job.seq // job.cp, job.seq, job.head_dim,
                                       True, False)
    if kind in ("elementwise", "optimizer"):
        return streaming_seconds(gpu, tokens * job.hidden * job.element_bytes)
    return 0.0


def slow_figures(job: MegatronJob, gpu: Gpu, kind: str, over: float) -> list[str]:
    """The figures of ``gpu`` whose raise alone (to the most a GPU may state) makes a kernel of
    ``kind`` ``over`` times as fast; if none does, those that speed it up at all, the most first."""
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
