"""What limits the all-reduce-only fit on the DGX A100: latency rules, bounds and the own-chunk copy.

Fits the DGX A100 all-reduce as ``calibrate`` does, reads each collective's linear model off
the simulator at the fitted point (``model.probe``: time = intercept + slope x size), and
scores the other logs (geomean |error| from 1 MiB, as ``validate``) under alternative
rules for the fixed cost, with and without the local copy of each rank's own chunk
(``calibration/local_copy.py``)::

    python benchmarks/calibration_bounds.py

The "best intercept" rows are a bound for every rule that changes only the fixed cost (how
latency is charged, per step or per collective, or which bandwidth-optimal algorithm runs):
the best any fixed cost can do with the bandwidth the all-reduce fitted. docs/calibration.md
("What the held-out rows say") quotes this output.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
A100 = ROOT / "tests" / "data" / "nccl" / "dgx-a100-superbench"
LOGS = {"all_reduce": "all_reduce.log", "all_gather": "all_gather.log", "reduce_scatter": "reduce_scatter.log",
        "all_to_all": "alltoall.log"}
MIB = 1 << 20
#: the largest size whose bytes cost nothing next to NCCL's fixed cost (the log's floor)
FLOOR_MAX_BYTES = 64 * 1024


def main() -> int:
    import yaml

    from simpy_astra.calibration import model, simulator_adapter, system_defaults
    from simpy_astra.calibration.local_copy import memory_gbps, own_chunk_copy_ns
    from simpy_astra.calibration.nccl_log import parse_log
    from simpy_astra.calibration.report import gm_abs_error

    logs = {c: parse_log(str(A100 / f)) for c, f in LOGS.items()}
    network = yaml.safe_load((A100 / "network.yml").read_text())
    system = system_defaults.default_system(network)
    cal = model.calibrate([logs["all_reduce"]], network, system)
    lat, bw = cal.network["latency"], cal.network["bandwidth"]
    e0 = float(system["endpoint-delay"])
    lines: dict[str, tuple[float, float]] = {}  # collective -> (intercept ns, ns per nccl-tests byte)
    for coll, log in logs.items():
        m = model.probe(cal.network, system, coll, log.ranks)
        per_byte = simulator_adapter.comm_size(coll, 1 << 30, log.ranks) / (1 << 30)
        lines[coll] = (m.time_ns(0, lat, bw, e0), (m.time_ns(1e9, lat, bw, e0) - m.time_ns(0, lat, bw, e0))
                       / 1e9 * per_byte)
    steps_ar = lines["all_reduce"][0]
    floor_ns = 1e3 * statistics.median(r.time_us for r in logs["all_reduce"].rows
                                       if 0 < r.size_bytes <= FLOOR_MAX_BYTES)
    print(f"all-reduce fit: {bw[0]:.1f} GiB/s, {lat[0]:.0f} ns per hop; intercept {steps_ar / 1e3:.1f} us, "
          f"its log's floor (median <= {FLOOR_MAX_BYTES // 1024} KiB) {floor_ns / 1e3:.1f} us")

    def score(coll: str, intercept_ns: float, mem: float | None, slope_scale: float = 1.0) -> float:
        log = logs[coll]
        errs = [(intercept_ns + slope_scale * lines[coll][1] * r.size_bytes
                 + own_chunk_copy_ns(coll, r.size_bytes, log.ranks, mem, False)) / (1e3 * r.time_us) - 1
                for r in log.rows if r.size_bytes >= MIB]
        return gm_abs_error(errs)

    def best_intercept(coll: str, mem: float | None) -> tuple[float, float]:
        return min((score(coll, k * 100.0, mem), k * 100.0) for k in range(0, 2001))

    rules: list[tuple[str, Callable[[str], float]]] = [
        ("per step (calibrate's rule)", lambda c: lines[c][0]),
        ("once per collective (all of the all-reduce's)", lambda c: steps_ar),
        ("the floor once, the rest per step", lambda c: floor_ns + (lines[c][0] / steps_ar) * (steps_ar - floor_ns)),
    ]
    mem_a100 = memory_gbps(logs["all_gather"].devices)
    others = ("all_gather", "reduce_scatter", "all_to_all")
    print("\n| fixed cost rule | own-chunk copy | all-gather | reduce-scatter | all-to-all |")
    print("|---|---|---:|---:|---:|")
    for name, intercept in rules:
        for mem in (None, mem_a100):
            cells = " | ".join(f"{100 * score(c, intercept(c), mem):.1f}%" for c in others)
            print(f"| {name} | {'no' if mem is None else f'{mem:.0f} GB/s'} | {cells} |")
    for mem in (None, mem_a100):
        cells = " | ".join(f"{100 * g:.1f}% ({k / 1e3:.0f} us)"
                           for g, k in (best_intercept(c, mem) for c in others))
        print(f"| best intercept (a bound) | {'no' if mem is None else f'{mem:.0f} GB/s'} | {cells} |")
    print("\nown-chunk copy at other memory bandwidths (per-step rule):")
    for mem in (1300.0, 1555.0, 1800.0, 2039.0):
        print(f"  {mem:.0f} GB/s: " + ", ".join(f"{c} {100 * score(c, lines[c][0], mem):.1f}%" for c in others))
    print("\nout-of-place / in-place time from 64 MiB (min-max), busbw at 8 GiB out-of-place / in-place:")
    for coll, log in logs.items():
        q = [r.time_us / r.inplace_time_us for r in log.rows if r.size_bytes >= 64 * MIB]
        top = log.rows[-1]
        factor = 2 * (log.ranks - 1) / log.ranks if coll == "all_reduce" else (log.ranks - 1) / log.ranks
        bus = [top.size_bytes / (t * 1e3) * factor for t in (top.time_us, top.inplace_time_us)]
        print(f"  {coll}: {min(q):.3f}-{max(q):.3f}; {bus[0]:.1f} / {bus[1]:.1f} GB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
