"""Fit a GPU preset's two sustained efficiencies once, on a public table: the A100's on the
SC'21 table's rows that run in seconds (1.7B to 145.6B; the three largest are left out of the
fit and only scored), the H100's on Megatron-Core's table's rows without pipeline
parallelism whose gradient sync the last backward can hide (1.7B to 16B: the table does not
publish micro-batch or interleaving, which matter least there).

    python benchmarks/fit_gpu.py [--preset dgx-a100-80gb|dgx-h100] [--table PATH]

Tries every pair of ``tensor_efficiency`` (the fraction of tensor-core peak a GEMM's main
loop sustains) and ``memory_efficiency`` (the fraction of HBM bandwidth a streaming kernel
sustains) on a grid and prints the mean |error| of each, best last. The presets
``simpy_astra/config/clusters/dgx-a100-80gb.yaml`` and ``dgx-h100.yaml`` carry the best pairs.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile

import megatron_mcore_h100
import megatron_sc21
from megatron_sc21 import predict

#: preset -> (table reader, default table, rows fitted, tensor grid, memory grid)
FITS = {
    "dgx-a100-80gb": (megatron_sc21.read_table, megatron_sc21.DEFAULT_TABLE, 7,
                      (0.70, 0.75, 0.80), (0.60, 0.65, 0.70)),
    "dgx-h100": (megatron_mcore_h100.read_table, megatron_mcore_h100.DEFAULT_TABLE, 3,
                 (0.65, 0.70, 0.75), (0.55, 0.60, 0.65)),
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="dgx-a100-80gb", choices=sorted(FITS))
    p.add_argument("--table", default=None)
    a = p.parse_args()
    read, table, fit_rows, tensors, memories = FITS[a.preset]
    rows = read(a.table or table)[:fit_rows]
    scores = []
    with tempfile.TemporaryDirectory() as folder:
        for tensor, memory in itertools.product(tensors, memories):
            gpu = {"tensor_efficiency": tensor, "memory_efficiency": memory}
            errors = [predict(row, folder, gpu)[0]["iteration_time_ns"] / 1e9 / row["seconds"] - 1 for row in rows]
            mean = sum(abs(e) for e in errors) / len(errors)
            scores.append((mean, tensor, memory))
            print(f"tensor {tensor:.2f} memory {memory:.2f}: mean |error| {mean:.1%} "
                  f"({' '.join(f'{e:+.1%}' for e in errors)})", flush=True)
    best = min(scores)
    print(f"best: tensor_efficiency {best[1]:.2f}, memory_efficiency {best[2]:.2f} (mean |error| {best[0]:.1%} "
          f"over the first {fit_rows} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
