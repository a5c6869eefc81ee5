"""NeMo Megatron's published GPT-3 scaling on DGX A100 80GB, predicted (held out).

Source: ``NVIDIA/NeMo-Framework-Launcher``, ``README.md`` at ``3579cdb3`` (2022-09-07, the first
README with these figures), "Training Performance Results": tokens per second of the whole
machine for NeMo's GPT-3 5B on 1 to 32 DGX A100 80GB nodes and 175B on 8 to 128, with the
training configurations of that commit (``conf/training/gpt3/5b.yaml`` and ``175b.yaml``, last
changed 2022-08-30): sequence 2,048, global batch 2,048, micro-batch 2, bf16 with O2 master
weights, Apex's distributed fused Adam, gradient-accumulation fusion, unfused attention (NeMo
22.09 had no flash attention); 5B at tp 1 and pp 1 without recomputation
(``activations_checkpoint_num_layers: 0``); 175B at tp 8 and pp 8 with selective recomputation
and sequence parallelism. Seconds per step are ``2,048 x 2,048 / tokens/s``.
Nothing was fitted on this table.

Two of those settings NeMo 1.11.0 (the release in the table's container, "NeMo 1.11.0+718d5d2"
in the same README) overrode at start-up, and the rows run what it ran. The 5B rows have no
pipeline, and ``MegatronBaseModel._validate_config`` turns the fusion off there ("Gradient
accumulation fusion can only be used with pipeline parallel size > 1.", then
``self.cfg.gradient_accumulation_fusion = False``): each weight gradient is written in bf16 and
added into the fp32 gradient buffer by a kernel (``--no-gradient-accumulation-fusion``; Apex's
distributed Adam does it in its gradient hook, ``_grad_copy``: ``grad_out.add_(grad_in)``). The
175B rows are pipelined, and ``MegatronGPTModel.configure_optimizers`` turns the overlapped
sync off ("Overlapped communication interferes with grad reductions for pipeline parallelism
and sequence parallelism", then ``self._optimizer.overlap_grad_sync = False``): the gradients
are reduce-scattered after the backward, not beside it (no ``--overlap-grad-reduce``).

``--release-22-06`` runs the table the same README published two months earlier instead
(``README.md`` at ``d4317ddd``, 2022-07-14, container ``bignlp-training:22.06-py3``, "NeMo
1.10.0+aadcd1c"): the same 175B layout (tp 8, pp 8, micro-batch 2, selective recomputation,
sequence parallelism, gradient-accumulation fusion) on 16, 32 and 128 nodes with global batch
1,536 and Apex's fused Adam (``optim: name: fused_adam`` in ``175b.yaml`` there): fp32 main
gradients all-reduced after the pipeline, as NeMo's ``MegatronGPTModel.training_step`` does
under pipeline parallelism (``self._optimizer.allreduce_main_grads()``), no distributed
optimizer. That README labels the 175B table's row "5B", and says "When scaling from 16 nodes
to 128 nodes with a 175B model, we achieve 6.85x speedup". Its 5B table (tp 2) is left out: its
figures date from 2022-06-03, before the configuration the README gives.

    python benchmarks/nemo_a100.py [--rows 1,2,3] [--json OUT] [--release-22-06]
"""

from __future__ import annotations

import sys

from megatron_sc21 import gpt_step_flops, table_main

#: what every row runs but its global batch (2,048 in the 22.09 table, 1,536 in the 22.06 one)
SEQUENCE = "--seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 2 "
COMMON = SEQUENCE + "--global-batch-size 2048 --bf16 --transformer-impl local --use-distributed-optimizer"
#: the 175B layout both tables ran: one copy, so the two releases' rows cannot drift apart
LAYOUT_175B = ("--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --tensor-model-parallel-size 8 "
               "--pipeline-model-parallel-size 8 --recompute-activations --sequence-parallel ")
#: model -> its arguments as NeMo 1.11.0 ran them (the two overrides in the docstring)
ARGS = {
    "5B": ("--num-layers 24 --hidden-size 4096 --num-attention-heads 32 --overlap-grad-reduce "
           "--no-gradient-accumulation-fusion " + COMMON),
    "175B": LAYOUT_175B + COMMON,
}
#: model -> Megatron's FLOPs of its step (GPT-2's 50,257 tokens padded to a multiple of 128 x tp)
STEP_FLOPS = {"5B": gpt_step_flops(2048, 2048, 24, 4096, 50304),
              "175B": gpt_step_flops(2048, 2048, 96, 12288, 51200)}
#: model -> {nodes: tokens per second of the whole machine}, as published
TOKENS_PER_S = {
    "5B": {1: 40345, 2: 79815, 4: 161754, 8: 312774, 16: 659481, 32: 1159288},
    "175B": {8: 7500, 16: 14950, 32: 29537, 64: 58211, 128: 109684},
}


#: the 22.06 table's 175B points, {nodes: tokens per second of the whole machine}, and their arguments
TOKENS_PER_S_22_06 = {16: 20642, 32: 38025, 128: 141306}
ARGS_22_06 = LAYOUT_175B + SEQUENCE + "--global-batch-size 1536 --bf16 --transformer-impl local"


def read_table(_path: str, release_22_06: bool = False) -> list[dict]:
    """The eleven points, or with ``release_22_06`` the earlier table's three (the figures are
    in this file, from the READMEs cited above)."""
    if release_22_06:
        flops = gpt_step_flops(1536, 2048, 96, 12288, 51200)
        return [{"model": f"175B-{nodes * 8} 22.06", "gpus": nodes * 8, "seconds": 1536 * 2048 / tokens,
                 "args": ARGS_22_06, "group": "175B", "tflops": flops * tokens / (1536 * 2048 * nodes * 8) / 1e12}
                for nodes, tokens in TOKENS_PER_S_22_06.items()]
    rows = []
    for model, points in TOKENS_PER_S.items():
        for nodes, tokens in points.items():
            seconds, gpus = 2048 * 2048 / tokens, nodes * 8
            rows.append({"model": f"{model}-{gpus}", "group": model, "gpus": gpus, "seconds": seconds, "args": ARGS[model],
                         "tflops": STEP_FLOPS[model] / (seconds * gpus) / 1e12})
    return rows


def main() -> int:
    return table_main(read_table, "", __doc__.split("\n\n")[0], {
        "--release-22-06": "run the 175B table of the 22.06 container instead (same layout, fused Adam)"})


if __name__ == "__main__":
    sys.exit(main())
