"""Megatron-Core's strong scaling of its 177B GPT on DGX H100, predicted.

Megatron-LM's README (the commit ``../shared/realtables/MCORE_H100.md`` cites) strong-scales
the 177B model of its weak-scaling table from 96 to 4,608 H100 GPUs at 1,152 sequences a
step, MFU falling from 47% to 42% (its text gives only those two). The
2,304-GPU point is the table's 177B row (432.8 TFLOP/s). Its figure
(``images/strong_scaling.png`` at the same commit) plots eight points; ``--figure`` adds the
five the text does not give, read off the figure's pixels (``FIGURE``). Each point runs that row's
arguments (tp 8, pp 6) on its GPU count, as ``megatron_mcore_h100.py`` runs the table: the
table does not publish interleaving, which these points show (``row_args``), and ``--vp N``
runs N model chunks per stage instead of 16 (one layer each).

At 96 GPUs each pipeline runs 576 micro-batches: the bubble is 1%, the data-parallel sync
is over two replicas, so that point measures a 177B layer's compute alone.

    python benchmarks/megatron_mcore_strong_scaling.py [--vp 4] [--figure] [--json OUT]
"""

from __future__ import annotations

import argparse
import sys

from megatron_mcore_h100 import SEQ, VOCAB, row_args
from megatron_sc21 import gpt_step_flops, score

H100_PEAK_TFLOPS = 989  # dense bf16, the table's MFU denominator
HEADS, HIDDEN, LAYERS, TP, PP, BATCH = 96, 12288, 96, 8, 6, 1152
#: GPUs -> published TFLOP/s per GPU (the ends from the README's MFU, the middle the table's)
PUBLISHED = {96: 0.47 * H100_PEAK_TFLOPS, 2304: 432.8, 4608: 0.42 * H100_PEAK_TFLOPS}
#: GPUs -> TFLOP/s per GPU of the figure's other points: each dot's centre on the 4,737 x
#: 2,125 image, on its log axes through the gridlines (x: 100 GPUs at pixel 647.5, 1,000 at
#: 2,993.5; y: 1,000 PFLOP/s at 593.5, 100 at 1,305.5), over the GPUs. The same reading gives
#: the text's three within 0.7% (96: 462.6 for 464.8; 2,304: 435.8 for 432.8; 4,608: 414.4 for
#: 415.4): a pixel of the y axis is 0.3%.
FIGURE = {144: 463.9, 288: 459.3, 576: 456.9, 1152: 448.7, 3072: 425.3}


def rows(vp: int = LAYERS // PP, figure: bool = False) -> list[dict]:
    """The points, each with the 177B row's arguments at ``vp`` model chunks a stage."""
    args = row_args(HEADS, HIDDEN, LAYERS, TP, PP, BATCH, chunk_layers=LAYERS // PP // vp)
    return [{"model": f"177B-{gpus}", "gpus": gpus, "tflops": tflops, "preset": "dgx-h100",
             "inter_node_gbit_s": 3200, "seconds": gpt_step_flops(BATCH, SEQ, LAYERS, HIDDEN, VOCAB) / (tflops * 1e12 * gpus), "args": args}
            for gpus, tflops in sorted({**PUBLISHED, **(FIGURE if figure else {})}.items())]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vp", type=int, default=LAYERS // PP, choices=(1, 2, 4, 8, 16),
                   help="model chunks per pipeline stage (16 layers a stage; default 16, one layer a "
                        "chunk, as megatron_mcore_h100.py reads the table; 1: 1F1B, the table as given)")
    p.add_argument("--figure", action="store_true",
                   help="also the figure's five points the text does not give (read off its pixels)")
    p.add_argument("--json", default=None, help="write the points and scores here")
    a = p.parse_args()
    score(rows(a.vp, a.figure), a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
