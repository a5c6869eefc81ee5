"""Which attention kernel Transformer Engine runs on this GPU, once the GPU is known.

``get_attention_backend`` (TE 2.8, ``pytorch/attention/dot_product_attention/utils.py``,
with cuDNN's rules in ``common/fused_attn/fused_attn.cpp``) filters FlashAttention 2 and
cuDNN's fused attention by the shape, and runs ``UnfusedDotProductAttention`` when neither
is left. For the arguments priced here (training, causal, no bias, q and v heads of one
width, cuDNN 9.5 or newer): both fused kernels need compute capability 8.0 or more and
fp16/bf16 inputs; FlashAttention 2 a head dim that is a multiple of 8 up to 256, cuDNN one
up to 128, or 256 on Hopper. Megatron's ``--attention-backend flash`` or ``fused`` turns
the other kernels off (``NVTE_*_ATTN``), so there no kernel is left and TE refuses.
FlashAttention 2 takes head dims above 192 on sm80/90/100/120 only, not on the sm86/sm89
cards (A40, A10, L40, L4, RTX), known here by their names."""

from __future__ import annotations

import re
from dataclasses import replace

from simpy_astra.config.gpu_names import gpu_generation
from simpy_astra.errors import refuse
from simpy_astra.workloads.megatron.job import MegatronJob

#: FlashAttention 2's and cuDNN's widest head (cuDNN's above 128 on Hopper only)
FLASH_MAX_HEAD_DIM, CUDNN_MAX_HEAD_DIM, CUDNN_HOPPER_MAX_HEAD_DIM = 256, 128, 256
#: FlashAttention 2's widest head on sm86/sm89, and those cards' names ("A10" but not "A100")
FLASH_SM86_MAX_HEAD_DIM, _SM86_89 = 192, re.compile(r"A40|A10(?!0)|A6000|L40|L4(?!\d)|RTX")


def _common_refusal(job: MegatronJob, generation: str) -> str:
    """Why neither fused kernel runs whatever the head dim ("" if both may)."""
    if job.precision == "fp32":
        return "fp32 inputs (FlashAttention and cuDNN take fp16/bf16 only)"
    if generation == "volta":
        return "a GPU of compute capability under 8.0"
    return ""


def _flash_refusal(job: MegatronJob, generation: str, gpu_name: str) -> str:
    """Why FlashAttention 2 does not run ("" if it does)."""
    d = job.head_dim
    if d % 8 or d > FLASH_MAX_HEAD_DIM:
        return f"head dim {d} (FlashAttention: a multiple of 8 up to {FLASH_MAX_HEAD_DIM})"
    if d > FLASH_SM86_MAX_HEAD_DIM and _SM86_89.search(gpu_name.upper()):
        return f"head dim {d} (FlashAttention: up to {FLASH_SM86_MAX_HEAD_DIM} on sm86/sm89)"
    return _common_refusal(job, generation)


def _cudnn_refusal(job: MegatronJob, generation: str) -> str:
    """Why cuDNN's fused attention does not run ("" if it does)."""
    d, widest = job.head_dim, CUDNN_HOPPER_MAX_HEAD_DIM if generation == "hopper" else CUDNN_MAX_HEAD_DIM
    if d % 8 or d > widest:
        return f"head dim {d} (cuDNN: a multiple of 8 up to {widest} on this GPU)"
    return _common_refusal(job, generation)


def on_gpu(job: MegatronJob, gpu_name: str, where: str) -> MegatronJob:
    """``job`` with the attention Transformer Engine picks on ``gpu_name``: unchanged while a
    fused kernel runs, else unfused with a warning saying why (or refused, see the module)."""
    if not (job.transformer_engine and job.flash_attention):
        return job
    generation = gpu_generation(gpu_name)
    flash, cudnn = _flash_refusal(job, generation, gpu_name), _cudnn_refusal(job, generation)
    allowed = {"flash": (flash,), "fused": (cudnn,)}.get(job.attention_backend, (flash, cudnn))
    if not all(allowed):
        return job
    reason = _common_refusal(job, generation) or flash
    if job.attention_backend in ("flash", "fused"):
        refuse(where, "attention backend unsupported by the shape",
               f"--attention-backend {job.attention_backend} on {gpu_name}: {allowed[0]}, and Megatron turns "
               f"the other kernels off (Transformer Engine: No dot product attention backend is available); "
               f"use --attention-backend auto or change the head dim (--kv-channels)")
    if job.cp > 1:
        refuse(where, "context parallelism needs fused attention",
               f"--context-parallel-size {job.cp} on {gpu_name}: {reason} rules out the fused kernels and "
               f"unfused attention does not support context parallelism (Transformer Engine: No dot product "
               f"attention backend is available); change the head dim (--kv-channels) or set cp to 1")
    return replace(job, flash_attention=False, warnings=(
        *job.warnings, f"{where}: Transformer Engine falls back to unfused attention on {gpu_name}: {reason}"))
