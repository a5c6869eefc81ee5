"""Time simpy-astra on reference cases and compare with ASTRA-sim's own wall clock.

    python benchmarks/reference_cases.py [--filter REGEX] [--repeat N] [--backend NAME]

Each case runs in a fresh subprocess (as a user would run it). Printed per case: our wall
time (min and median of --repeat runs), peak RSS, simulated events per second, the
reference's wall time from the case file and the ratio. The last line is the geometric
mean of the ratios. No assertion: this measures, the parity suite checks figures.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"
DEFAULT_FILTER = r"^(ex_cu_|stage_cu_st[1-6]|knob_cu_)"


def run_once(case: dict) -> tuple[float, int, bool]:
    args = [
        sys.executable, "-m", "simpy_astra",
        f"--workload-configuration={case['workload']}",
        f"--system-configuration={case['system']}",
        f"--network-configuration={case['network']}",
        f"--remote-memory-configuration={case['remote_memory']}",
        f"--network-backend={case['backend']}",
    ]
    if case.get("comm_group"):
        args.append(f"--comm-group-configuration={case['comm_group']}")
    with tempfile.TemporaryDirectory(prefix="bench-") as cwd:
        for entry in REFERENCE.iterdir():
            Path(cwd, entry.name).symlink_to(entry)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        r = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(rss, before), r.returncode == 0 and "finished" in r.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--filter", default=DEFAULT_FILTER, help=f"regex on case id (default {DEFAULT_FILTER})")
    ap.add_argument("--backend", default="congestion_unaware")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    if not (REFERENCE / "cases").is_dir():
        print(f"no reference data at {REFERENCE}")
        return 1
    cases = []
    for p in sorted((REFERENCE / "cases").glob("*.json")):
        c = json.loads(p.read_text())
        if re.search(a.filter, c["id"]) and c["backend"] == a.backend and c.get("reference_wall_s"):
            cases.append(c)
    print(f"{'case':58s} {'ours min/med s':>16s} {'ref s':>8s} {'ratio':>7s} {'max RSS MB':>10s}")
    ratios = []
    for c in cases:
        walls, rss, ok = [], 0, True
        for _ in range(a.repeat):
            w, r, good = run_once(c)
            walls.append(w)
            rss = max(rss, r)
            ok = ok and good
        best, med = min(walls), statistics.median(walls)
        ratio = best / max(c["reference_wall_s"], 1e-3)
        ratios.append(ratio)
        flag = "" if ok else "  (run failed)"
        print(f"{c['id']:58s} {best:7.2f}/{med:<8.2f} {c['reference_wall_s']:8.3f} {ratio:6.2f}x "
              f"{rss / 1024:10.0f}{flag}", flush=True)
    if ratios:
        g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geometric mean wall-clock ratio (ours / ASTRA-sim) over {len(ratios)} cases: {g:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
