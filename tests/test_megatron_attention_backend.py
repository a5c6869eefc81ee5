"""Transformer Engine's attention by shape (``attention_backend.on_gpu``): TE 2.8's
``get_attention_backend`` keeps FlashAttention 2 for head dims that are a multiple of 8 up
to 256 on compute capability 8.0+ in fp16/bf16 (cuDNN's fused attention up to 128, 256 on
Hopper) and otherwise runs ``UnfusedDotProductAttention``: two batched GEMMs forward and
four backward, which these tests derive from the GEMM kernel's own time."""

from __future__ import annotations

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.errors import InvalidConfigurationError
from simpy_astra.workloads.megatron.generator import job_and_gpu
from simpy_astra.workloads.megatron.kernels import flash_attention_seconds, gemm_seconds
from simpy_astra.workloads.megatron.layers import ChunkModel
from simpy_astra.workloads.megatron.steps import Compute

#: one layer, 8 heads, 1,024 tokens, no attention dropout; --kv-channels sets the head dim
ARGS = ("--num-layers 1 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
        "--micro-batch-size 1 --global-batch-size 8 --attention-dropout 0")
WHERE = "s.yaml: workload"


def _gpu(preset: str = "dgx-a100-80gb", name: str | None = None) -> dict:
    # the preset's figures under another GPU's name: what the rules read of a GPU is its name (a
    # scenario is refused such a GPU, whose figures would be the preset's: gpu_overrides.py)
    gpu = load_cluster({"preset": preset, "gpus": 8}, "c").gpu
    return {**gpu, "name": name} if name else gpu


def _attention_seconds(args: str, backward: bool, preset: str = "dgx-a100-80gb") -> tuple[float, tuple[str, ...]]:
    """A layer's "attention" kernel seconds (forward or backward) and the job's warnings."""
    job, gpu = job_and_gpu({"args": args, "gpus": 8, "gpu": _gpu(preset)}, WHERE)
    model, layer = ChunkModel(job, gpu), job.chunk_kinds(0, 0)
    steps = model.backward(layer, False, False) if backward else model.forward(layer, False, False)
    return sum(s.seconds.get("attention", 0.0) for s in steps if isinstance(s, Compute)), job.warnings


@pytest.mark.parametrize("backward", [False, True])
def test_head_dim_256_runs_flash_attention(backward):
    """256 is FlashAttention 2's widest head (sm80): the fused kernel's time, no warning."""
    seconds, warnings = _attention_seconds(ARGS + " --bf16 --kv-channels 256", backward)
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "c").gpu_model()
    assert seconds == pytest.approx(flash_attention_seconds(gpu, 8, 1024, 1024, 256, causal=True,
                                                            backward=backward, seq=1024), rel=1e-12)
    assert not warnings


@pytest.mark.parametrize("backward", [False, True])
def test_head_dim_320_falls_back_to_unfused_attention(backward):
    """320 is beyond both fused kernels: TE runs Q K^T and P V as batched GEMMs over the 8
    heads (forward), and their four gradients (backward); the warning says why."""
    seconds, warnings = _attention_seconds(ARGS + " --bf16 --kv-channels 320", backward)
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "c").gpu_model()
    scores, context = gemm_seconds(gpu, 1024, 1024, 320, 8), gemm_seconds(gpu, 1024, 320, 1024, 8)
    assert seconds == pytest.approx(2 * (scores + context) if backward else scores + context, rel=1e-12)
    assert warnings == (f"{WHERE}.args: Transformer Engine falls back to unfused attention on "
                        f"A100-SXM4-80GB: head dim 320 (FlashAttention: a multiple of 8 up to 256)",)


@pytest.mark.parametrize("args,gpu,reason", [
    (" --bf16 --kv-channels 100", None, "head dim 100 (FlashAttention: a multiple of 8 up to 256)"),
    (" --kv-channels 128", None, "fp32 inputs (FlashAttention and cuDNN take fp16/bf16 only)"),
    (" --fp16 --kv-channels 128", "V100-SXM2-32GB", "a GPU of compute capability under 8.0"),
    (" --bf16 --kv-channels 256", "L40S", "head dim 256 (FlashAttention: up to 192 on sm86/sm89)"),
])
def test_what_rules_out_the_fused_kernels(args, gpu, reason):
    """A head dim not a multiple of 8, fp32 inputs, a GPU before sm80, a head over 192 on an
    sm89 card (cuDNN stops at 128 there): unfused, said why."""
    job, _ = job_and_gpu({"args": ARGS + args, "gpus": 8, "gpu": _gpu(name=gpu)}, WHERE)
    assert not job.flash_attention and job.warnings[-1].endswith(f": {reason}")
    assert "\n" not in job.warnings[-1]
    if gpu == "L40S":  # 192 still runs FlashAttention there; 256 on an A100 (the first test)
        shorter = ARGS + args.replace("256", "192")
        assert job_and_gpu({"args": shorter, "gpus": 8, "gpu": _gpu(name=gpu)}, WHERE)[0].flash_attention


def test_a_chosen_kernel_that_cannot_run_is_refused():
    """``--attention-backend fused`` leaves cuDNN alone (Megatron sets NVTE_FLASH_ATTN=0 and
    NVTE_UNFUSED_ATTN=0): head dim 192 runs on an H100 (cuDNN 9.5+, up to 256) and is refused
    on an A100 (up to 128), where ``auto`` still runs FlashAttention."""
    fused = ARGS + " --bf16 --kv-channels 192 --attention-backend fused"
    assert job_and_gpu({"args": fused, "gpus": 8, "gpu": _gpu("dgx-h100")}, WHERE)[0].flash_attention
    with pytest.raises(InvalidConfigurationError, match="head dim 192 .cuDNN: a multiple of 8 up to 128"):
        job_and_gpu({"args": fused, "gpus": 8, "gpu": _gpu()}, WHERE)
    assert job_and_gpu({"args": fused.replace("fused", "auto"), "gpus": 8, "gpu": _gpu()}, WHERE)[0].flash_attention


def test_context_parallelism_without_a_fused_kernel_is_refused():
    """Unfused attention takes no context parallelism: with no fused kernel TE has none left."""
    with pytest.raises(InvalidConfigurationError) as info:
        job_and_gpu({"args": ARGS + " --bf16 --kv-channels 320 --context-parallel-size 2", "gpus": 8,
                     "gpu": _gpu()}, WHERE)
    assert info.value.rule == "context parallelism needs fused attention" and "\n" not in str(info.value)
