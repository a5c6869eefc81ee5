"""BigScience's search for BLOOM's fastest 3D layout on 48 nodes of 8 A100 80GB, predicted (held out).

Source: ``bigscience-workshop/bigscience``, ``train/tr11-176B-ml/chronicles-prequel.md`` (commit
``9e64ede``), sections "GBS Variations", "some more configs with lower PP" and "Tweaking TP"
(all dated 02-25, 2022, after that day's PCIe/NUMA fix, which the page says moved every figure
by 1-5%, so earlier days are left out): one 181B model (``NHIDDEN=14336 / NLAYERS=72``, 64 heads:
"all NHEADS=64 (above too)", the page's "Final round comparison"; sequence 2,048, the 250,680-token
BLOOM tokenizer padded by Megatron to a multiple of 128 x tp) on 384 GPUs in 10 layouts of
dp x tp x pp (17 with the micro-batch, 1 to 6) and global batch 1,568, 2,016 or 2,048, each a
second iteration's "Sec/it" as Megatron-DeepSpeed logged it. The rows the page marks OOM are
left out; one layout measured twice (dp 8, tp 4, pp 12, micro-batch 2: 110.48 and 113.54 s) is
kept twice, the spread of two runs of one command.

How they ran (the page and ``train/tr11-176B-ml/README.md``), and the Megatron-LM arguments that say
the same: Megatron-DeepSpeed, a fork of Megatron-LM of 2021 (``--checkpoint-activations --DDP-impl
local``: that release's kernels; DeepSpeed's activation checkpointing recomputes every layer, the
README's throughput counting "the `4*2` co-efficient"); DeepSpeed's ZeRO stage 1 with 16-bit
gradients (the page's next section: until 02-28 "fp16 which grad accumulates in fp16"), gradients
reduce-scattered and parameters all-gathered over dp (``--fp16 --use-distributed-optimizer``);
DeepSpeed's pipeline engine (1F1B; each stage sends its whole activation from every tensor-parallel
rank, ``--no-scatter-gather-tensors-in-pipeline``). Left out, each a small memory-bound kernel a
layer or a step: ALiBi's bias (BLOOM's later ``--position-embedding-type alibi``, added in the
attention-score GEMM), the embedding layer norm, and a learned position embedding in their place.

The machine (``README.md``, "Hardware"; ``jz/hpc-specs.md``, "JZ3"): 8 A100 80GB a node on
NVLink, "4 OmniPath links" a node, "Inter-node connect: Omni-Path Architecture (OPA)", NCCL on "a
fully dedicated subnet"; ``experiments/bandwidth/README.md`` puts the OPA's full bandwidth at
"400Gbps max" a node. Written as the DGX A100 preset with ``inter_node_gbit_s: 400`` (50 Gb/s a
GPU's rail, where a DGX A100 has 200): the NVSwitch figures, the NICs' 94% efficiency and their
latency stay the preset's, since the repository gives none for Jean Zay (its all-reduce benchmarks
on 4 A100 nodes, January 2022, read 15-42 Gb/s of "algo throughput", before the fixes the page
mentions, and are not used by default). Nothing was fitted on this table.

``--measured-network`` runs the rows on the network the team measured instead: the same
repository's ``experiments/bandwidth/all_reduce_bench-a100-n4.txt`` (2022-01-28, NCCL 2.10.3, the
OPA adapters ``hfi1_0`` to ``hfi1_3`` driven as InfiniBand) all-reduces 4 GB of fp32 over 4 of these
nodes (32 GPUs) in 1.529 s (the median of its 160 timings, 1.519 to 4.222), a bus bandwidth of
``4e9 x 2 x 31/32 / 1.529`` = 5.07 GB/s, 40.5 Gb/s a node: 10.1% of the 400. The simulator's
all-reduce of that size on 4 such nodes runs at the NICs' ``inter_node_gbit_s x
inter_node_efficiency`` (0.164 s at 400 x 0.94), so the log reads as ``inter_node_efficiency:
0.101`` (1.53 s). It predates the table by four weeks; the page does not say whether the network
changed in between.

    python benchmarks/bloom_a100.py [--rows 1,2,3] [--json OUT] [--measured-network]
"""

from __future__ import annotations

import sys

from megatron_sc21 import table_main

#: what every row runs but its layout and batch
COMMON = ("--num-layers 72 --hidden-size 14336 --num-attention-heads 64 --vocab-size 250680 "
          "--seq-length 2048 --max-position-embeddings 2048 --fp16 --checkpoint-activations --DDP-impl local "
          "--use-distributed-optimizer --no-scatter-gather-tensors-in-pipeline")
#: dp, tp, pp, micro-batch, global batch, published seconds a step and TFLOP/s a GPU (the page's
#: TFLOP/s count the recomputed forward, as the simulator's do)
ROWS = [
    (8, 8, 6, 4, 1568, 113.01, 109.22), (8, 8, 6, 4, 2048, 114.11, 141.27),
    (8, 8, 6, 6, 2016, 123.57, 128.43), (4, 8, 12, 4, 1568, 92.75, 133.08),
    (4, 8, 12, 4, 2048, 117.07, 137.70), (4, 8, 12, 2, 1568, 99.93, 123.51),
    (4, 8, 12, 2, 2048, 128.82, 125.15), (6, 8, 8, 4, 2016, 113.16, 140.24),
    (12, 8, 4, 2, 2016, 125.52, 126.43), (12, 8, 4, 4, 2016, 114.81, 138.22),
    (24, 8, 2, 1, 2016, 145.45, 109.11), (24, 8, 2, 2, 2016, 136.13, 116.58),
    (8, 4, 12, 4, 2048, 111.89, 144.08), (8, 4, 12, 2, 2048, 110.48, 145.92),
    (8, 4, 12, 2, 2048, 113.54, 141.99), (16, 4, 6, 4, 2048, 117.11, 137.66),
    (16, 4, 6, 2, 2048, 111.71, 144.31), (16, 2, 12, 2, 2048, 112.50, 143.30),
    (8, 2, 24, 1, 2048, 119.53, 134.88), (8, 2, 24, 2, 2048, 122.75, 131.33),
    (4, 4, 24, 1, 2048, 130.60, 123.44),
]


#: the OPA's share of its 400 Gb/s that NCCL sustained in the team's own all-reduce benchmark
#: (``--measured-network``; the docstring derives it)
MEASURED_EFFICIENCY = 0.101


def read_table(_path: str, measured_network: bool = False) -> list[dict]:
    """The 21 measured rows (the figures are in this file, from the page cited above); a row's
    ``group`` is its global batch, so that the layouts ranked against each other ran one batch.
    ``measured_network``: the NICs at the efficiency of the team's all-reduce benchmark."""
    cluster = {"inter_node_efficiency": MEASURED_EFFICIENCY} if measured_network else {}
    rows = []
    for dp, tp, pp, mbs, gbs, seconds, tflops in ROWS:
        args = (f"{COMMON} --tensor-model-parallel-size {tp} --pipeline-model-parallel-size {pp} "
                f"--micro-batch-size {mbs} --global-batch-size {gbs}")
        rows.append({"model": f"d{dp}t{tp}p{pp}m{mbs}b{gbs}", "group": str(gbs), "gpus": dp * tp * pp,
                     "seconds": seconds, "tflops": tflops, "args": args, "inter_node_gbit_s": 400,
                     "cluster": cluster})
    return rows


def main() -> int:
    return table_main(read_table, "", __doc__.split("\n\n")[0], {
        "--measured-network": "the NICs at the share of their rate the team's NCCL all-reduce benchmark "
                              "reached"})


if __name__ == "__main__":
    sys.exit(main())
