"""Megatron-Bridge's published pre-training rows on DGX H100, predicted (a second held-out check
of the FP8 path, two years of software after NeMo 24.07's: Llama 3 70B and Llama 3.1 405B).

Source: ``NVIDIA-NeMo/Megatron-Bridge``, ``docs/performance-summary-archive.md`` at commit
``067f987df03b8355b03192d88d70f1709fedf51a`` (last changed by ``4ab94dfad``, the 26.08 summary;
the 25.11 section is also in ``docs/performance-summary.md`` at ``00b7660be025``). Of its DGX-H100
pre-training rows the dense ones with a public architecture are two configurations of Llama 3
70B and two of Llama 3.1 405B, all FP8; each is taken from the newest release that published
it (the other releases' figures for the same configuration lie within 3% for 70B and 5% for
405B of the one taken: software, not configuration). There is no dense BF16 row on H100.
Left out: Llama 3 8B (FSDP, not modelled), the MoE models (DeepSeek V3, Qwen3 30B-A3B and
235B-A22B, GPT-OSS 120B -- the only BF16 H100 row -- with sliding-window attention and sinks,
Nemotron 3, Kimi K2) and the SFT and LoRA rows (fine-tuning, not pre-training). The seconds
per step are ``global batch x sequence / (tokens/s per GPU x GPUs)``.

Each row runs as the recipe that produced it runs (``src/megatron/bridge/perf_recipes/llama/
h100/llama3.py`` ``llama3_70b_pretrain_64gpu_h100_fp8cs_config`` at ``56ae11dfffeb`` and
``llama31.py`` ``llama31_405b_pretrain_1024gpu_h100_fp8cs_config`` at ``cce4953735489``; for
25.11, ``scripts/performance/configs/llama/llama3*_workload_base_configs.py`` at ``5776a6d90b4d``
with the same parallelism): FP8 hybrid with per-tensor current scaling
(``bf16_with_fp8_current_scaling_mixed``, first and last layers in FP8 too: ``--fp8-recipe
tensorwise``), no recomputation
(``recompute_granularity = None``), no dropout and no biases (the Hugging Face Llama configs:
``--disable-bias-linear``), the fused cross entropy (``cross_entropy_loss_fusion``; the recipes
pick TE's kernel, ``cross_entropy_fusion_impl = "te"``, which today's Megatron-LM refuses, so
Megatron-Core's native one is run: 32 B a logit where TE's moves about 22), the
distributed optimizer with overlapped gradient reduce and parameter gather, sequence
parallelism with TP communication overlap (userbuffers), and the pipeline split (``SPLITS``):
405B's 126 layers are split with the embedding and the loss counted as layers
(``account_for_{embedding,loss}_in_pipeline_split`` in ``llama31_405b_pretrain_config``, at
``5776a6d90b4d`` and at ``cce4953735489``: 64 chunks of two slots); run as 128 layers, two a
chunk, the 405B rows read -0.5% and +9.5%. 70B runs the even split, two layers a chunk, as both
of its rows did: the recipe's layout ``Et*2|(t*2|)*34,t*3|(t*2|)*3,tL`` (``LATER_70B_LAYOUT``)
came with ``56ae11dff`` (2026-08-07), after 26.04.01, and no earlier configuration of the
row (``scripts/performance/configs/llama/llama3_workload_base_configs.py`` up to its removal in
``c8327cfc2``) sets one. Gradients are reduced in bf16 (``--grad-reduce-in-bf16``: the perf
configs set ``cfg.ddp.grad_reduce_in_fp32 = False``, ``scripts/performance/configs/llama/
llama3{,1}_llm_pretrain.py`` at ``5776a6d90b4d``, ``perf_recipes/_common.py`` since): half the
gradient buffer and half the data-parallel traffic, which is overlapped; the linear layers'
weights are kept and all-gathered in FP8 (``--fp8-param-gather``: ``fp8_param_gather = True``
in ``bf16_with_fp8_current_scaling_mixed``, ``src/megatron/bridge/training/mixed_precision.py``
at ``5776a6d90b4d``): no bf16 copy of them, one byte each to gather. The buckets are neither
checked nor scaled before their sync (``--no-check-for-nan-in-loss-and-grad
--ddp-average-in-collective``): the recipes' ``DistributedDataParallelConfig`` averages in the
collective (``average_in_collective=True``, ``_llama3_common`` in
``src/megatron/bridge/recipes/llama/llama3.py`` at ``5776a6d90b4d``; ``recipes/common.py`` at
``56ae11dfffeb`` and ``cce4953735489``) and the performance runs
turn the NaN check off (``cfg.ddp.check_for_nan_in_grad = False``: ``_set_common_perf_overrides``
in ``scripts/performance/utils/overrides.py`` there, ``_benchmark_common`` in
``src/megatron/bridge/perf_recipes/_common.py`` at ``56ae11dfffeb`` and ``cce4953735489``). Not expressed here, a
small effect: the parameter gather overlapped with the optimizer step.

The error is predicted / published seconds per step - 1. Nothing here is fitted: the H100
preset's efficiencies come from other tables (``fit_gpu.py``: attention on NeMo's long-sequence
rows, the bf16 pair on Megatron-Core's, FP8 on NeMo 24.07's).

    python benchmarks/bridge_h100.py [--rows 1,2,3] [--json OUT]
"""

from __future__ import annotations

import sys

from megatron_sc21 import h100_row, table_main

#: model -> (layers as run, hidden, heads, query groups, FFN hidden, vocab) -- Llama 3 / 3.1:
#: SwiGLU, RMSNorm, untied embeddings, grouped-query attention, 128,256-token vocabulary
MODELS = {
    "LLAMA3-70B": (80, 8192, 64, 8, 28672, 128256),
    "LLAMA3.1-405B": (126, 16384, 128, 8, 53248, 128256),
}

#: model -> the recipe's pipeline split when the rows were measured: 405B's embedding and loss
#: counted as layers (128 slots over 64 chunks, two each, the first and last chunk one
#: transformer layer); 70B's even split (two layers a chunk)
SPLITS = {
    "LLAMA3-70B": "",
    "LLAMA3.1-405B": "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split",
}

#: the layout the 70B recipe has pinned since ``56ae11dff`` (2026-08-07), after both 70B rows were
#: published: one layer moved from the last chunk (the one with the output layer) to the 36th.
#: Not run in the table; substituted for the even split it reads +8.3% and +11.6%.
LATER_70B_LAYOUT = "--pipeline-model-parallel-layout 'Et*2|(t*2|)*34,t*3|(t*2|)*3,tL'"

#: the published rows: release, model, precision, GPUs, global batch, micro batch, sequence,
#: TP, PP, CP, VP, tokens/s per GPU, model TFLOP/s per GPU
TABLE = (
    ("25.11", "LLAMA3-70B", "FP8-CS", 64, 128, 1, 8192, 4, 8, 1, 5, 1602, 719),
    ("26.04.01", "LLAMA3-70B", "FP8-CS", 64, 256, 1, 8192, 4, 8, 1, 5, 1664, 731),
    ("25.11", "LLAMA3.1-405B", "FP8-CS", 1024, 512, 1, 8192, 8, 8, 2, 8, 292, 737),
    ("26.06", "LLAMA3.1-405B", "FP8-CS", 1024, 1536, 1, 8192, 8, 8, 2, 8, 326, 822),
)


def row_args(model: str, mb: int, gbs: int, seq: int, tp: int, pp: int, cp: int, vp: int) -> str:
    layers, hidden, heads, groups, ffn, vocab = MODELS[model]
    args = (f"--num-layers {layers} --hidden-size {hidden} --num-attention-heads {heads} "
            f"--ffn-hidden-size {ffn} --seq-length {seq} --max-position-embeddings {seq} "
            f"--micro-batch-size {mb} --global-batch-size {gbs} --tensor-model-parallel-size {tp} "
            f"--pipeline-model-parallel-size {pp} --context-parallel-size {cp} --bf16 --fp8-format hybrid "
            f"--fp8-recipe tensorwise --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather "
            f"--grad-reduce-in-bf16 --fp8-param-gather --no-check-for-nan-in-loss-and-grad --ddp-average-in-collective "
            f"--vocab-size {vocab} --make-vocab-size-divisible-by 128 "
            f"--group-query-attention --num-query-groups {groups} --swiglu "
            f"--untie-embeddings-and-output-weights --hidden-dropout 0 --attention-dropout 0 "
            f"--disable-bias-linear --cross-entropy-loss-fusion --position-embedding-type rope --normalization RMSNorm")
    if vp > 1:
        args += f" --virtual-pipeline-model-parallel-size {vp}"
    if SPLITS[model]:
        args += " " + SPLITS[model]
    if tp > 1:
        args += " --sequence-parallel --tp-comm-overlap"
    return args


def read_table(_path: str) -> list[dict]:
    """The rows as ``table_main`` scores them (the table is in this file)."""
    return [h100_row(f"{model} {precision} {release}", gpus, gbs, seq, tokens, tflops,
                     row_args(model, mb, gbs, seq, tp, pp, cp, vp))
            for release, model, precision, gpus, gbs, mb, seq, tp, pp, cp, vp, tokens, tflops in TABLE]


def main() -> int:
    return table_main(read_table, "", __doc__.split("\n\n")[0])


if __name__ == "__main__":
    sys.exit(main())
