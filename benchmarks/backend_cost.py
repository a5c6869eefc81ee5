"""What the congestion-aware and packet backends cost against the unaware one, on the same inputs.

    python benchmarks/backend_cost.py [--filter REGEX] [--backends a,b,c]

Runs each selected reference case's inputs in-process with every backend (so Python start-up
is not counted) and prints, per backend, the wall time and the simulated finish time (the
latest NPU's finished cycles), then the geometric mean of each backend's wall time over the
unaware one's. No assertion: this measures. The packet backend's finish times are its
own (it pipelines packets, serves each port's inputs round robin, fills and drains
buffers); the other two reproduce the reference.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tree this script belongs to

from simpy_astra.config.astra_inputs import inputs_from_astra_flags  # noqa: E402
from simpy_astra.simulation import Simulation  # noqa: E402

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"
BACKENDS = ("congestion_unaware", "congestion_aware", "packet")


def timed(case: dict, backend: str) -> tuple[float, int]:
    """(wall seconds, simulated finish ns) of one run of ``case`` on ``backend``."""
    inputs = inputs_from_astra_flags(case["workload"], case["system"], case["network"], case["remote_memory"],
                                     case.get("comm_group") or "empty", backend)
    t0 = time.perf_counter()
    reports = Simulation(inputs).run()
    return time.perf_counter() - t0, max(r.finished_cycles for r in reports)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--filter", default=r"^(ex_cu_|knob_cu_|stage_cu_st[1-5]|grid_cu_.*_(ring|sw)16_)")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated, unaware first for ratios")
    a = ap.parse_args()
    backends = a.backends.split(",")
    if not (REFERENCE / "cases").is_dir():
        print(f"no reference data at {REFERENCE}")
        return 1
    os.chdir(REFERENCE)  # relative paths inside configs resolve from here, as for ASTRA-sim
    print(f"{'case':52s} " + " ".join(f"{b + ' s':>20s} {'finish ns':>12s}" for b in backends))
    ratios: dict[str, list[float]] = {b: [] for b in backends[1:]}
    for path in sorted((REFERENCE / "cases").glob("*.json")):
        case = json.loads(path.read_text())
        if case["backend"] != "congestion_unaware" or not re.search(a.filter, case["id"]):
            continue
        runs = [timed(case, b) for b in backends]
        for b, (wall, _) in zip(backends[1:], runs[1:], strict=True):
            ratios[b].append(wall / runs[0][0])
        print(f"{case['id']:52s} " + " ".join(f"{w:20.3f} {f:12,d}" for w, f in runs), flush=True)
    for b, rs in ratios.items():
        if rs:
            g = math.exp(sum(math.log(r) for r in rs) / len(rs))
            print(f"geometric mean {b}/{backends[0]} wall time over {len(rs)} cases: {g:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
