"""Fit a GPU preset's sustained efficiencies once, each on the public table that measures it:

- ``tensor`` (``tensor_efficiency`` and ``memory_efficiency``, the fraction of tensor-core
  peak a GEMM's main loop sustains and of HBM bandwidth a streaming kernel sustains, as a
  pair): the A100's on the SC'21 table's rows that run in seconds (1.7B to 145.6B; the three
  largest are only scored), the H100's on Megatron-Core's bf16 table, all nine rows, with the
  micro-batch and interleaving the runs show (``megatron_mcore_h100.row_args``);
- ``attention`` (``attention_efficiency``, a fused attention kernel's share of the peak): the
  H100's on NeMo's long-sequence table's rows of 128K tokens and more, where attention is
  over 95% of the step (``nemo_long_context.py``);
- ``fp8`` (``fp8_efficiency``, an FP8 GEMM's share of the FP8 peak): the H100's on NeMo 24.07's
  FP8 table (``nemo_h100_fp8.py``).

    python benchmarks/fit_gpu.py [--preset dgx-a100-80gb|dgx-h100] [--fit tensor|attention|fp8]

Tries every value (pair) on a grid with the preset's other figures and prints the mean |error|
of each, best last. ``simpy_astra/config/clusters/*.yaml`` carry the best. Fit ``attention``
first (the others barely move it), then ``tensor``, then ``fp8``.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile

import megatron_mcore_h100
import megatron_sc21
import nemo_h100_fp8
import nemo_long_context
from megatron_sc21 import predict

#: (preset, what) -> (rows fitted, {figure: grid})
FITS = {
    ("dgx-a100-80gb", "tensor"): (lambda: megatron_sc21.read_table(megatron_sc21.DEFAULT_TABLE)[:7],
                                  {"tensor_efficiency": (0.70, 0.75, 0.80),
                                   "memory_efficiency": (0.60, 0.65, 0.70)}),
    ("dgx-h100", "tensor"): (lambda: megatron_mcore_h100.read_table(megatron_mcore_h100.DEFAULT_TABLE),
                             {"tensor_efficiency": (0.60, 0.65, 0.70),
                              "memory_efficiency": (0.45, 0.50, 0.55)}),
    ("dgx-h100", "attention"): (lambda: nemo_long_context.read_table()[-nemo_long_context.ATTENTION_ROWS:],
                                {"attention_efficiency": (0.34, 0.36, 0.38, 0.40)}),
    ("dgx-h100", "fp8"): (lambda: nemo_h100_fp8.read_table(""),
                          {"fp8_efficiency": (0.60, 0.65, 0.70, 0.75)}),
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="dgx-a100-80gb", choices=sorted({k[0] for k in FITS}))
    p.add_argument("--fit", default="tensor", choices=sorted({k[1] for k in FITS}))
    a = p.parse_args()
    if (a.preset, a.fit) not in FITS:
        raise SystemExit(f"{a.preset}: no public table fits its {a.fit} efficiency "
                         f"(fits: {', '.join(f'{p} {w}' for p, w in FITS)})")
    read, grid = FITS[(a.preset, a.fit)]
    rows = read()
    scores = []
    with tempfile.TemporaryDirectory() as folder:
        for values in itertools.product(*grid.values()):
            gpu = dict(zip(grid, values, strict=True))
            errors = [predict(row, folder, gpu)[0]["iteration_time_ns"] / 1e9 / row["seconds"] - 1 for row in rows]
            mean = sum(abs(e) for e in errors) / len(errors)
            scores.append((mean, values))
            named = " ".join(f"{k} {v:.2f}" for k, v in gpu.items())
            print(f"{named}: mean |error| {mean:.1%} ({' '.join(f'{e:+.1%}' for e in errors)})", flush=True)
    mean, values = min(scores)
    best = ", ".join(f"{k} {v:.2f}" for k, v in zip(grid, values, strict=True))
    print(f"best: {best} (mean |error| {mean:.1%} over {len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
