"""NeMo's published long-sequence table on DGX H100, predicted: Llama 2 7B (FP8) at 4K to 1M
tokens a sequence with context parallelism, where attention grows to nearly the whole step.
It is the H100's one public measurement of a fused attention kernel's rate, and the source of
the preset's ``attention_efficiency`` (``benchmarks/fit_gpu.py --fit attention``, on its rows
of 128K tokens and more, where attention is over 95% of the step); the shorter rows are only
scored.

Source: ``NVIDIA/NeMo``, ``docs/source/performance/performance_long_sequence.md`` at commit
``a2c4cc8ee6`` (2025-05-08; the H100 section unchanged since ``8275bf6cfd``, 2024-10-21):
"LLAMA2-7B (FP8) - H100", container NeMo 24.03.01, DGX-H100. Per row: sequence length, GPUs,
global batch, and with context parallelism the TP, PP, DP, CP and TFLOP/s per GPU (the
"without CP" column's layouts are not published and are left out). Every row trains the
same 4,194,304 tokens a step.

The table gives TFLOP/s, not time: the seconds per step are NeMo's model FLOPs of the step
over (TFLOP/s x GPUs). NeMo counted a Llama step as ``B s l h^2 (12 + 12 g/a + 18 f/h + 12
s/h + 6 V/(l h))`` (``nemo/utils/flops_formulas.py`` ``llama2``; the causal mask's half of the
attention was discounted only in ``6251117f4c``, 2025-08-09, after the table), so the score
products are counted whole. The other count is not possible: at 1M tokens it would put the
attention alone at more than the H100's fused-attention kernels run (about 600 TFLOP/s).

The page gives no other setting, so each row runs as the Llama rows of NeMo's 24.07 FP8 table
do (``nemo_h100_fp8.py``: micro-batch 1, FP8 hybrid with delayed scaling, the distributed
optimizer with overlapped gradient reduce and parameter gather, gradients synced in bf16, no
recomputation or dropout, sequence parallelism with ``--tp-comm-overlap`` where TP > 1) with
context parallelism's default p2p ring; Llama 2 7B: 32 layers, hidden 4,096, 32 heads, SwiGLU
width 11,008, vocabulary 32,000, RMSNorm, rotary positions.

    python benchmarks/nemo_long_context.py [--rows 1,2,3] [--json OUT]
"""

from __future__ import annotations

import sys

from megatron_sc21 import table_main
from nemo_h100_fp8 import MODELS, row_args

#: sequence (K tokens), GPUs, global batch, TP, PP, DP, CP, TFLOP/s per GPU (with CP)
TABLE = (
    (4, 4, 1024, 1, 1, 4, 1, 768),
    (8, 8, 512, 1, 2, 4, 1, 730),
    (16, 16, 256, 2, 1, 8, 1, 660),
    (32, 32, 128, 2, 1, 8, 2, 610),
    (64, 64, 64, 4, 1, 8, 2, 574),
    (128, 128, 32, 4, 1, 8, 4, 555),
    (256, 256, 16, 4, 1, 8, 8, 549),
    (512, 512, 8, 8, 1, 4, 16, 549),
    (1024, 1024, 4, 8, 1, 4, 32, 536),
)

#: the rows the preset's attention efficiency is fitted on (128K tokens and more)
ATTENTION_ROWS = 4


def nemo_llama_flops(batch: int, seq: int) -> float:
    """NeMo's model FLOPs of a Llama 2 7B step of ``batch`` sequences (attention uncut)."""
    layers, hidden, heads, groups, ffn, vocab, _ = MODELS["LLAMA2-7B"]
    groups = groups or heads
    return batch * seq * layers * hidden ** 2 * (12 + 12 * groups / heads + 18 * ffn / hidden
                                                 + 12 * seq / hidden + 6 * vocab / (layers * hidden))


def read_table(_path: str = "") -> list[dict]:
    """The rows as ``table_main`` scores them (the table is in this file)."""
    rows = []
    for k, gpus, batch, tp, pp, dp, cp, tflops in TABLE:
        seq = k * 1024
        if tp * pp * dp * cp != gpus:
            raise SystemExit(f"{k}K row: tp x pp x dp x cp is not its {gpus} GPUs")
        rows.append({"model": f"LLAMA2-7B {k}K", "gpus": gpus, "tflops": float(tflops),
                     "seconds": nemo_llama_flops(batch, seq) / (tflops * 1e12 * gpus),
                     "preset": "dgx-h100", "inter_node_gbit_s": 3200,
                     "args": row_args("LLAMA2-7B", 1, batch, seq, tp, pp, cp, 1)})
    return rows


def main() -> int:
    return table_main(read_table, "", __doc__.split("\n\n")[0])


if __name__ == "__main__":
    sys.exit(main())
