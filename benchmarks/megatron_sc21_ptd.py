"""SC'21's other published A100 figures: Table 2's PTD-P rows and Section 5.8's fused operators.

Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM" (SC'21), beside the weak-scaling table of ``../shared/realtables/``:

- Table 2, "PTD Parallelism": GPT-3 175B (tp 8 x pp 12) on 384, 768 and 1,536 A100s at a
  batch of 1,536, and the 530B model (tp 8 x pp 35) on 560, 1,120 and 2,240 at 2,240, micro-
  batch 1: 153, 149, 141 and 171, 167, 159 TFLOP/s per GPU (the table's days for 300B tokens
  follow from them by the paper's FLOP count). Interleaved as the paper's scripts run these
  models: 2 layers a virtual stage for 175B at tp 8 x pp 12 (``run_figure_12.sh``,
  ``run_figure_18.sh``), 1 for 530B (``run_table_1.sh``).
- Section 5.8: fusing scale-mask-softmax, bias-GeLU and bias-dropout-add raised 175B from 113
  to 135 TFLOP/s per GPU and 530B from 133 to 148. Its layouts are not given, so only the
  speed-up is compared, on the Table 2 layouts at their largest GPU count, where
  ``--no-masked-softmax-fusion --no-bias-gelu-fusion --no-bias-dropout-fusion`` turns the three
  fusions off.

Every row is a scenario run as a user runs it (``megatron_sc21.predict``): SC'21's flags
(``--checkpoint-activations --DDP-impl local --fp16``, sequence 2,048) on ``dgx-a100-80gb``
with 1,600 Gbit/s a node. About 4 minutes.

    python benchmarks/megatron_sc21_ptd.py [--fusion-only] [--json OUT]
"""

from __future__ import annotations

import argparse
import sys
import tempfile

from megatron_sc21 import predict, score

SEQ, VOCAB = 2048, 51200
COMMON = ("--checkpoint-activations --DDP-impl local --fp16 --loss-scale 8192 --seq-length 2048 "
          "--max-position-embeddings 2048 --micro-batch-size 1 --tensor-model-parallel-size 8")
MODELS = {  # name: layers, hidden, heads, pp, layers a virtual stage, global batch
    "175B": (96, 12288, 96, 12, 2, 1536),
    "530B": (105, 20480, 128, 35, 1, 2240),
}
TABLE_2 = [("175B", 384, 153), ("175B", 768, 149), ("175B", 1536, 141),
           ("530B", 560, 171), ("530B", 1120, 167), ("530B", 2240, 159)]
FUSION = {"175B": (113, 135), "530B": (133, 148)}  # TFLOP/s per GPU unfused, fused (Section 5.8)
UNFUSED = " --no-masked-softmax-fusion --no-bias-gelu-fusion --no-bias-dropout-fusion"


def sc21_step_flops(batch: int, layers: int, hidden: int) -> float:
    """The paper's FLOPs of a step with full recomputation: ``96 B s l h^2 (1 + s/6h + V/16lh)``."""
    return 96 * batch * SEQ * layers * hidden ** 2 * (1 + SEQ / (6 * hidden) + VOCAB / (16 * layers * hidden))


def row(model: str, gpus: int, tflops: float, extra: str = "") -> dict:
    """A published row: its arguments and the seconds its TFLOP/s per GPU imply."""
    layers, hidden, heads, pp, per_virtual, batch = MODELS[model]
    args = (f"{COMMON} --pipeline-model-parallel-size {pp} --num-layers-per-virtual-pipeline-stage {per_virtual} "
            f"--global-batch-size {batch} --num-layers {layers} --hidden-size {hidden} "
            f"--num-attention-heads {heads}{extra}")
    seconds = sc21_step_flops(batch, layers, hidden) / (tflops * 1e12 * gpus)
    return {"model": f"{model}-{gpus}", "gpus": gpus, "tflops": tflops, "seconds": seconds, "args": args}


def fusion_speedups() -> dict[str, tuple[float, float]]:
    """Each model's published and predicted speed-up from the three fusions."""
    out = {}
    print(f"{'model':>6} {'GPUs':>5} {'fused s':>8} {'unfused s':>9} {'speed-up':>8} {'published':>9} {'error':>7}")
    with tempfile.TemporaryDirectory() as folder:
        for model, (slow, fast) in FUSION.items():
            gpus = max(g for m, g, _ in TABLE_2 if m == model)
            fused = predict(row(model, gpus, fast), folder)[0]["iteration_time_ns"]
            unfused = predict(row(model, gpus, slow, UNFUSED), folder)[0]["iteration_time_ns"]
            out[model] = (fast / slow, unfused / fused)
            print(f"{model:>6} {gpus:>5} {fused / 1e9:>8.3f} {unfused / 1e9:>9.3f} {unfused / fused:>8.3f} "
                  f"{fast / slow:>9.3f} {unfused / fused / (fast / slow) - 1:>+7.1%}", flush=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fusion-only", action="store_true", help="only Section 5.8's speed-ups (about 1 minute)")
    p.add_argument("--json", default=None, help="write Table 2's rows and scores here")
    a = p.parse_args()
    if not a.fusion_only:
        score([row(m, g, tf) for m, g, tf in TABLE_2], a.json)
    fusion_speedups()
    return 0


if __name__ == "__main__":
    sys.exit(main())
