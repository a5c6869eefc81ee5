"""NeMo Megatron's published GPT-3 scaling on DGX A100 80GB, predicted (held out).

Source: ``NVIDIA/NeMo-Framework-Launcher``, ``README.md`` at ``3579cdb3`` (2022-09-07, the first
README with these figures), "Training Performance Results": tokens per second of the whole
machine for NeMo's GPT-3 5B on 1 to 32 DGX A100 80GB nodes and 175B on 8 to 128, with the
training configurations of that commit (``conf/training/gpt3/5b.yaml`` and ``175b.yaml``, last
changed 2022-08-30): sequence 2,048, global batch 2,048, micro-batch 2, bf16 with O2 master
weights, Apex's distributed fused Adam (overlapped gradient sync), gradient-accumulation
fusion, unfused attention (NeMo 22.09 had no flash attention); 5B at tp 1 and pp 1 without
recomputation (``activations_checkpoint_num_layers: 0``); 175B at tp 8 and pp 8 with selective
recomputation and sequence parallelism. Seconds per step are ``2,048 x 2,048 / tokens/s``.
Nothing was fitted on this table.

    python benchmarks/nemo_a100.py [--rows 1,2,3] [--json OUT]
"""

from __future__ import annotations

import sys

from megatron_sc21 import gpt_step_flops, table_main

COMMON = ("--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 2 --global-batch-size 2048 "
          "--bf16 --transformer-impl local --use-distributed-optimizer --overlap-grad-reduce")
ARGS = {
    "5B": "--num-layers 24 --hidden-size 4096 --num-attention-heads 32 " + COMMON,
    "175B": ("--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --tensor-model-parallel-size 8 "
             "--pipeline-model-parallel-size 8 --recompute-activations --sequence-parallel " + COMMON),
}
#: model -> Megatron's FLOPs of its step (GPT-2's 50,257 tokens padded to a multiple of 128 x tp)
STEP_FLOPS = {"5B": gpt_step_flops(2048, 2048, 24, 4096, 50304),
              "175B": gpt_step_flops(2048, 2048, 96, 12288, 51200)}
#: model -> {nodes: tokens per second of the whole machine}, as published
TOKENS_PER_S = {
    "5B": {1: 40345, 2: 79815, 4: 161754, 8: 312774, 16: 659481, 32: 1159288},
    "175B": {8: 7500, 16: 14950, 32: 29537, 64: 58211, 128: 109684},
}


def read_table(_path: str) -> list[dict]:
    """The eleven points (the figures are in this file, from the README cited above)."""
    rows = []
    for model, points in TOKENS_PER_S.items():
        for nodes, tokens in points.items():
            seconds, gpus = 2048 * 2048 / tokens, nodes * 8
            rows.append({"model": f"{model}-{gpus}", "gpus": gpus, "seconds": seconds, "args": ARGS[model],
                         "tflops": STEP_FLOPS[model] / (seconds * gpus) / 1e12})
    return rows


def main() -> int:
    return table_main(read_table, "", __doc__.split("\n\n")[0])


if __name__ == "__main__":
    sys.exit(main())
