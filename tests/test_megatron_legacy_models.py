"""``--use-legacy-models`` priced as the legacy model's layers run (``megatron/legacy/model``,
Megatron-LM 2024-05 to 2026-05): ``ParallelTransformer.build_layer`` makes Megatron's own
``ParallelTransformerLayer`` with ``--transformer-impl local`` and Transformer Engine's
``TransformerLayer`` otherwise, so the layers cost what the era table's two columns cost, and
the legacy ``ParallelMLP`` runs SwiGLU unfused. Figures derived by hand from the kernels."""

from __future__ import annotations

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.kernels import flash_attention_seconds, gemm_seconds, streaming_seconds
from simpy_astra.workloads.megatron.schedule import build_stage

L, H, HEADS, S = 2, 1024, 16, 2048
BASE = (f"--num-layers {L} --hidden-size {H} --num-attention-heads {HEADS} --seq-length {S} --micro-batch-size 1 "
        f"--vocab-size 128 --make-vocab-size-divisible-by 1 --bf16")
LEGACY = " --use-legacy-models --ckpt-format torch"


def _gpu():
    return load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "c").gpu_model()


def _task_us(args: str) -> list[int]:
    """The stage's tasks (forward, backward, optimizer step), in microseconds."""
    return [op.duration_us for op in build_stage(parse(args, 1), _gpu(), 0).ops]


def test_legacy_layers_cost_what_the_local_or_transformer_engine_layers_cost():
    """With ``--transformer-impl local`` the legacy layer runs ``CoreAttention`` (score GEMM,
    fused scale-mask-softmax, dropout, context GEMM, the context's transpose) unless
    ``--use-flash-attn`` (``FlashSelfAttention``); by default Transformer Engine's layer and
    its fused attention. Forward, a layer's unfused core against the flash kernel: two
    batched GEMMs of 16 heads (2,048 x 2,048 x 64 and 2,048 x 64 x 2,048), 4 B a score for
    the fused softmax and 5 for the dropout (bf16: 2 B an element, so bytes x 1), 4 B an
    element of the 2,048 x 1,024 context; everything else in the step is the same kernels."""
    gpu, d, scores = _gpu(), H // HEADS, HEADS * S * S
    unfused_s = (gemm_seconds(gpu, S, S, d, HEADS) + streaming_seconds(gpu, scores * 4)
                 + streaming_seconds(gpu, scores * 5) + gemm_seconds(gpu, S, d, S, HEADS)
                 + streaming_seconds(gpu, S * H * 4))
    flash_s = flash_attention_seconds(gpu, HEADS, S, S, d, causal=True, backward=False, seq=S)
    local, te = _task_us(BASE + " --transformer-impl local"), _task_us(BASE)
    assert _task_us(BASE + LEGACY + " --transformer-impl local") == local
    assert _task_us(BASE + LEGACY + " --attention-softmax-in-fp32") == te
    assert local[0] - te[0] == pytest.approx(L * (unfused_s - flash_s) * 1e6, abs=2)
    flash = BASE + " --transformer-impl local --use-flash-attn"
    assert parse(flash + LEGACY, 1).flash_attention and _task_us(flash + LEGACY) == _task_us(flash)
    assert not parse(BASE + LEGACY + " --transformer-impl local", 1).flash_attention


def test_legacy_mlp_runs_swiglu_unfused_and_has_no_query_key_norm():
    """``ParallelMLP`` runs ``--swiglu`` as ``silu(x1) * x2`` after adding the bias (no
    bias-SwiGLU fusion in the legacy model): forward 18 B an element of ffn against the fused
    kernel's 6 (10 for SiLU and the product, 8 for the bias on both halves), backward 24
    against 10. ``ParallelAttention`` has no query-key layer norm: ``--qk-layernorm`` changes
    nothing, with a warning, as Megatron takes it and runs without."""
    swiglu = BASE + " --transformer-impl local --swiglu"
    ffn = 2688  # 8h/3 rounded down to 64
    per_byte_us = L * S * ffn / (2039e9 * 0.65) * 1e6  # 1 B an element of ffn, every token and layer
    fused, legacy = _task_us(swiglu), _task_us(swiglu + LEGACY)
    assert [b - a for a, b in zip(fused, legacy, strict=True)] == [
        pytest.approx((18 - 6) * per_byte_us, abs=2), pytest.approx((24 - 10) * per_byte_us, abs=2), 0]
    assert legacy == _task_us(swiglu + " --no-bias-swiglu-fusion")
    job = parse(BASE + LEGACY + " --transformer-impl local --qk-layernorm", 1)
    assert not job.qk_layernorm and _task_us(BASE + LEGACY + " --transformer-impl local --qk-layernorm") == _task_us(
        BASE + " --transformer-impl local")
    assert any("--qk-layernorm changes nothing with --use-legacy-models" in w for w in job.warnings)
    assert parse(BASE + " --transformer-impl local --qk-layernorm", 1).qk_layernorm


def test_legacy_transformer_engine_layers_take_no_query_groups_nor_userbuffers():
    """The legacy ``ParallelTransformer`` builds ``transformer_engine.pytorch.TransformerLayer``
    without ``num_gqa_groups`` (so every one of the 16 heads keeps its keys and values: QKV is
    3h wide, not h + 2 x 4 x 64) nor ``ub_*`` arguments (``--tp-comm-overlap`` overlaps nothing);
    its own ``ParallelAttention`` takes the groups."""
    gqa = " --group-query-attention --num-query-groups 4 --attention-softmax-in-fp32"
    te, local = parse(BASE + LEGACY + gqa, 1), parse(BASE + LEGACY + gqa + " --transformer-impl local", 1)
    assert te.kv_heads == HEADS and local.kv_heads == 4
    assert any("--group-query-attention changes nothing" in w for w in te.warnings) and not local.warnings
    assert _task_us(BASE + LEGACY + gqa) == _task_us(BASE)
    # keys and values 2 x 1,024 wide against 2 x 256: 1,536 columns more of QKV's weight and bias a layer
    assert te.parameters() - local.parameters() == L * (H * 1536 + 1536)
    overlap = " --tensor-model-parallel-size 2 --sequence-parallel --tp-comm-overlap --attention-softmax-in-fp32"
    assert parse(BASE + overlap, 2).tp_comm_overlap
    job = parse(BASE + LEGACY + overlap, 2)
    assert not job.tp_comm_overlap and any("--tp-comm-overlap changes nothing" in w for w in job.warnings)
