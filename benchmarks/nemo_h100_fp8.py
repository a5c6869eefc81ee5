"""NeMo 24.07's published FP8 pre-training table on DGX H100, predicted (a public check of the
FP8 path: FP8 GEMMs, Transformer Engine's casts, context parallelism, GQA and SwiGLU models).

Source: ``NVIDIA/NeMo``, ``docs/source/performance/performance_summary.md`` at commit
``070a0bb168d405d653b9734c0017cf5078e77c0d`` ("Pretraining", container NeMo 24.07, system
DGX-H100, FP8). The table gives each row's GPUs, global and micro batch, sequence length,
TP, PP, CP, virtual stages and measured tokens/s per GPU; the seconds per step follow as
``global batch x sequence / (tokens/s per GPU x GPUs)``. The three Nemotron rows are left out:
their architectures are not in the table. The models' shapes are the public configurations
of GPT-3 (NeMo's 5B, 20B, 175B: GELU, tied embeddings, GPT-2 vocabulary padded to 50,304) and
Llama 2 / Llama 3 (SwiGLU, RMSNorm, untied embeddings, grouped-query attention for 70B and
Llama 3). Each row runs as NeMo's recipes of that release run it (``NVIDIA/NeMo-Framework-
Launcher``, ``launcher_scripts/conf/training/gpt3/*_fp8_performance.yaml`` and ``llama/*.yaml``):
FP8 hybrid, the distributed optimizer with overlapped gradient reduce and parameter gather,
sequence parallelism with ``--tp-comm-overlap`` where TP > 1, gradients synced in bf16
(``+training.model.optim.grad_sync_dtype=bf16`` in every H100 FP8 script of that release,
``examples/training/{gpt,llama}/h100/*_fp8*.sh`` at ``fee1762f``: ``--grad-reduce-in-bf16``);
GPT-3 with selective recomputation and dropout 0.1, Llama without recomputation or dropout;
on ``cluster: {preset: dgx-h100, gpus}``.

The error is predicted / published seconds per step - 1. The H100 preset's ``fp8_efficiency``
is fitted on this table (``fit_gpu.py --fit fp8``); its other efficiencies come from NeMo's
long-sequence rows (attention) and Megatron-Core's bf16 table.

    python benchmarks/nemo_h100_fp8.py [--rows 1,2,3] [--json OUT]
"""

from __future__ import annotations

import sys

from megatron_sc21 import h100_row, table_main

#: NeMo's GPT-3 vocabulary: GPT-2's 50,257 padded to a multiple of 128
GPT_VOCAB = 50304

#: model -> (layers, hidden, heads, query groups (0: none), FFN hidden, vocab, Llama-style)
MODELS = {
    "GPT3-5B": (24, 4096, 32, 0, 16384, GPT_VOCAB, False),
    "GPT3-20B": (44, 6144, 48, 0, 24576, GPT_VOCAB, False),
    "GPT3-175B": (96, 12288, 96, 0, 49152, GPT_VOCAB, False),
    "LLAMA2-7B": (32, 4096, 32, 0, 11008, 32000, True),
    "LLAMA2-13B": (40, 5120, 40, 0, 13824, 32000, True),
    "LLAMA2-70B": (80, 8192, 64, 8, 28672, 32000, True),
    "LLAMA3-8B": (32, 4096, 32, 8, 14336, 128256, True),
    "LLAMA3-70B": (80, 8192, 64, 8, 28672, 128256, True),
}

#: the published rows: model, GPUs, global batch, micro batch, sequence, TP, PP, CP, VP,
#: tokens/s per GPU, model TFLOP/s per GPU (the table, in its order, Nemotron rows left out)
TABLE = (
    ("GPT3-5B", 64, 2048, 4, 2048, 1, 1, 1, 1, 22521, 736),
    ("GPT3-20B", 64, 256, 2, 2048, 2, 1, 1, 1, 5851, 750),
    ("GPT3-175B", 128, 256, 1, 2048, 4, 8, 1, 6, 726, 782),
    ("GPT3-175B", 512, 2048, 2, 2048, 4, 8, 1, 6, 782, 842),
    ("LLAMA2-7B", 8, 128, 1, 4096, 1, 1, 1, 1, 16847, 776),
    ("LLAMA2-13B", 16, 128, 1, 4096, 1, 4, 1, 10, 8646, 754),
    ("LLAMA2-70B", 64, 128, 1, 4096, 4, 4, 1, 20, 1707, 759),
    ("LLAMA3-8B", 8, 128, 1, 8192, 1, 1, 2, 1, 12036, 697),
    ("LLAMA3-70B", 64, 128, 1, 8192, 4, 4, 2, 5, 1533, 738),
)


def row_args(model: str, mb: int, gbs: int, seq: int, tp: int, pp: int, cp: int, vp: int) -> str:
    layers, hidden, heads, groups, ffn, vocab, llama = MODELS[model]
    args = (f"--num-layers {layers} --hidden-size {hidden} --num-attention-heads {heads} "
            f"--ffn-hidden-size {ffn} --seq-length {seq} --max-position-embeddings {seq} "
            f"--micro-batch-size {mb} --global-batch-size {gbs} --tensor-model-parallel-size {tp} "
            f"--pipeline-model-parallel-size {pp} --context-parallel-size {cp} --bf16 --fp8-format hybrid "
            f"--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --grad-reduce-in-bf16 "
            f"--vocab-size {vocab} --make-vocab-size-divisible-by 128")
    if vp > 1:
        args += f" --num-layers-per-virtual-pipeline-stage {layers // (pp * vp)}"
    if tp > 1:
        args += " --sequence-parallel --tp-comm-overlap"
    if groups:
        args += f" --group-query-attention --num-query-groups {groups}"
    if llama:
        args += (" --swiglu --untie-embeddings-and-output-weights --hidden-dropout 0 --attention-dropout 0"
                 " --disable-bias-linear --position-embedding-type rope --normalization RMSNorm")
        if model.startswith("LLAMA3"):  # the Llama 3 recipes of 24.07 fuse the cross entropy
            args += " --cross-entropy-loss-fusion"
    else:
        # NeMo's GPT-3 recipes: selective recomputation
        args += " --recompute-activations"
    return args


def read_table(_path: str) -> list[dict]:
    """The rows as ``table_main`` scores them (the table is in this file)."""
    return [h100_row(model, gpus, gbs, seq, tokens, tflops, row_args(model, mb, gbs, seq, tp, pp, cp, vp))
            for model, gpus, gbs, mb, seq, tp, pp, cp, vp, tokens, tflops in TABLE]


def main() -> int:
    return table_main(read_table, "", __doc__.split("\n\n")[0])


if __name__ == "__main__":
    sys.exit(main())
