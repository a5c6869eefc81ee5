"""Megatron-Core's DGX H100 weak-scaling table (../shared/realtables/MCORE_H100.md), predicted.

Each row runs as the table says to reproduce it: the arguments of "Arguments to reproduce a
row" (micro-batch 1, bf16, distributed optimizer, overlapped gradient reduce and parameter
gather, untied embeddings; sequence parallelism and ``--tp-comm-overlap`` where tp > 1) on
``cluster: {preset: dgx-h100, gpus, inter_node_gbit_s: 3200}``, through ``python -m simpy_astra
run FILE --json-out OUT --quiet``. Prints published against predicted seconds per iteration
and TFLOP/s per GPU, the error per row, the mean |error| and the Spearman rank correlation.

    python benchmarks/megatron_mcore_h100.py [--table PATH] [--rows 1,2,3] [--json OUT]
"""

from __future__ import annotations

import os
import re
import sys

from megatron_sc21 import table_main

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TABLE = os.path.join(HERE, "..", "..", "shared", "realtables", "MCORE_H100.md")
SEQ, VOCAB = 4096, 131072


def row_args(heads: int, hidden: int, layers: int, tp: int, pp: int, batch: int) -> str:
    """The table's "Arguments to reproduce a row" for one row."""
    args = (f"--num-layers {layers} --hidden-size {hidden} --num-attention-heads {heads} --seq-length {SEQ} "
            f"--max-position-embeddings {SEQ} --micro-batch-size 1 --global-batch-size {batch} "
            f"--tensor-model-parallel-size {tp} --pipeline-model-parallel-size {pp} --bf16 "
            f"--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather "
            f"--untie-embeddings-and-output-weights --vocab-size {VOCAB}")
    return args + (" --sequence-parallel --tp-comm-overlap" if tp > 1 else "")


def read_table(path: str) -> list[dict]:
    """The nine rows: model, GPUs, published TFLOP/s and implied s/iter, and the scenario args."""
    rows = []
    for line in open(path, encoding="utf-8").read().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 12 and re.fullmatch(r"[\d.]+B", cells[0]):
            heads, hidden, layers, tp, pp, _dp, gpus, batch = (int(c.replace(",", "")) for c in cells[1:9])
            rows.append({"model": cells[0], "gpus": gpus, "tflops": float(cells[9]), "seconds": float(cells[11]),
                         "preset": "dgx-h100", "inter_node_gbit_s": 3200,
                         "args": row_args(heads, hidden, layers, tp, pp, batch)})
    if not rows:
        raise SystemExit(f"{path}: no table rows found")
    return rows


def main() -> int:
    return table_main(read_table, DEFAULT_TABLE, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    sys.exit(main())
