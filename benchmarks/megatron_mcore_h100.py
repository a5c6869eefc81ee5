"""Megatron-Core's DGX H100 weak-scaling table (../shared/realtables/MCORE_H100.md), predicted.

Each row runs with the arguments of "Arguments to reproduce a row" (bf16, distributed
optimizer, overlapped gradient reduce and parameter gather, untied embeddings; sequence
parallelism and ``--tp-comm-overlap`` where tp > 1) and the micro-batch and interleaving the
runs show, which the table does not publish (:func:`row_args`; ``--as-given``: the file's
micro-batch 1 and 1F1B), on ``cluster: {preset: dgx-h100, gpus, inter_node_gbit_s: 3200}``,
through ``python -m simpy_astra run FILE --json-out OUT --quiet``. Prints published against
predicted seconds per iteration and TFLOP/s per GPU, the error per row, the mean |error| and
the Spearman rank correlation.

    python benchmarks/megatron_mcore_h100.py [--table PATH] [--rows 1,2,3] [--as-given] [--json OUT]
"""

from __future__ import annotations

import os
import re
import sys

from megatron_sc21 import table_main

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TABLE = os.path.join(HERE, "..", "..", "shared", "realtables", "MCORE_H100.md")
SEQ, VOCAB, DP = 4096, 131072, 48


def row_args(heads: int, hidden: int, layers: int, tp: int, pp: int, batch: int, as_given: bool = False,
             chunk_layers: int = 1) -> str:
    """One row's arguments: the table's "Arguments to reproduce a row" (micro-batch 1, 1F1B)
    with ``as_given``; else with the two it does not publish read from what the runs show
    (``DP``: every row's data-parallel size). Without a pipeline, one micro-batch of the
    replica's whole batch (4): at micro-batch 1 the 32B row's gradient sync alone needs more
    than its published step (docs/megatron.md, "The 32B row"). With one, interleaved 1F1B of
    one layer a model chunk: the README overlaps pipeline communication, which Megatron-LM's
    ``validate_args`` turns off unless the schedule is interleaved; the strong-scaling figure
    loses 3.6% from 576 to 48 micro-batches a pipeline, where 1F1B's bubble alone loses 9.5%
    and two chunks a stage 4.8% (the figure is the 177B row's runs; the other rows are taken to
    run alike); and one layer a chunk is the only interleaving the 119B and 462B rows' 23 and 7
    layers a stage admit. ``chunk_layers``: layers a chunk instead (a stage's all: 1F1B)."""
    micro_batch = 1 if as_given or pp > 1 else batch // DP
    interleaved = pp > 1 and not as_given and chunk_layers < layers // pp
    chunk = f" --num-layers-per-virtual-pipeline-stage {chunk_layers}" if interleaved else ""
    args = (f"--num-layers {layers} --hidden-size {hidden} --num-attention-heads {heads} --seq-length {SEQ} "
            f"--max-position-embeddings {SEQ} --micro-batch-size {micro_batch} --global-batch-size {batch} "
            f"--tensor-model-parallel-size {tp} --pipeline-model-parallel-size {pp} --bf16 "
            f"--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather "
            f"--untie-embeddings-and-output-weights --vocab-size {VOCAB}{chunk}")
    return args + (" --sequence-parallel --tp-comm-overlap" if tp > 1 else "")


def read_table(path: str, as_given: bool = False) -> list[dict]:
    """The nine rows: model, GPUs, published TFLOP/s and implied s/iter, and the scenario args
    (:func:`row_args`)."""
    rows = []
    for line in open(path, encoding="utf-8").read().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 12 and re.fullmatch(r"[\d.]+B", cells[0]):
            heads, hidden, layers, tp, pp, _dp, gpus, batch = (int(c.replace(",", "")) for c in cells[1:9])
            rows.append({"model": cells[0], "gpus": gpus, "tflops": float(cells[9]), "seconds": float(cells[11]),
                         "preset": "dgx-h100", "inter_node_gbit_s": 3200,
                         "args": row_args(heads, hidden, layers, tp, pp, batch, as_given)})
    if not rows:
        raise SystemExit(f"{path}: no table rows found")
    return rows


def main() -> int:
    return table_main(read_table, DEFAULT_TABLE, __doc__.split("\n\n")[0],
                      {"--as-given": "the table file's arguments as given (micro-batch 1, 1F1B)"})


if __name__ == "__main__":
    sys.exit(main())
