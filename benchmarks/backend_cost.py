"""What the congestion-aware backend costs against the unaware one, on the same inputs.

    python benchmarks/backend_cost.py [--filter REGEX]

Runs each one-dimensional reference case's inputs in-process with both backends (so Python
start-up is not counted) and prints both wall times, the ratio aware/unaware and the
geometric mean. No assertion: this measures.
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

import yaml

from simpy_astra.scenario import inputs_from_astra_flags
from simpy_astra.simulation import Simulation

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"


def timed(case: dict, backend: str) -> float:
    inputs = inputs_from_astra_flags(case["workload"], case["system"], case["network"], case["remote_memory"],
                                     case.get("comm_group") or "empty", backend)
    t0 = time.perf_counter()
    Simulation(inputs).run()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--filter", default=r"^(ex_cu_|knob_cu_|stage_cu_st[1-5]|grid_cu_.*_(ring|sw)16_)")
    a = ap.parse_args()
    if not (REFERENCE / "cases").is_dir():
        print(f"no reference data at {REFERENCE}")
        return 1
    os.chdir(REFERENCE)  # relative paths inside configs resolve from here, as for ASTRA-sim
    print(f"{'case':58s} {'unaware s':>10s} {'aware s':>10s} {'aware/unaware':>14s}")
    ratios = []
    for path in sorted((REFERENCE / "cases").glob("*.json")):
        case = json.loads(path.read_text())
        if case["backend"] != "congestion_unaware" or not re.search(a.filter, case["id"]):
            continue
        if len(yaml.safe_load(Path(case["network"]).read_text())["npus_count"]) != 1:
            continue
        unaware, aware = timed(case, "congestion_unaware"), timed(case, "congestion_aware")
        ratios.append(aware / unaware)
        print(f"{case['id']:58s} {unaware:10.3f} {aware:10.3f} {aware / unaware:13.2f}x", flush=True)
    if ratios:
        g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geometric mean aware/unaware over {len(ratios)} cases: {g:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
