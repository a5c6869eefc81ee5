"""Start-up cost: wall time of the default scenario, run as a user runs it, many times.

A tiny run is almost all start-up (interpreter, imports, reading the inputs), and one run
varies by tens of milliseconds on a shared machine, so this runs the command ``--runs`` times
in fresh processes, alternating with the floor (the interpreter importing only the libraries
every run needs: simpy, protobuf, yaml), and prints min / median / max of both::

    python benchmarks/startup.py [--runs 30] [--scenario scenarios/default.yaml]

Run it from an environment that writes bytecode (unset PYTHONDONTWRITEBYTECODE), or every run
compiles the package again.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLOOR = "import simpy, google.protobuf.descriptor_pool, yaml, json, argparse"


def _wall_s(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--scenario", default="scenarios/default.yaml")
    args = parser.parse_args()
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("warning: PYTHONDONTWRITEBYTECODE is set: every run compiles the package again", file=sys.stderr)
    run = [sys.executable, "-m", "simpy_astra", args.scenario]
    floor = [sys.executable, "-c", FLOOR]
    _wall_s(run)  # writes bytecode, warms the file cache
    times: dict[str, list[float]] = {"default scenario": [], "floor (" + FLOOR + ")": []}
    for _ in range(args.runs):
        for label, argv in zip(times, (run, floor), strict=True):
            times[label].append(_wall_s(argv))
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {args.runs} runs each")
    for label, walls in times.items():
        print(f"{label}: min {min(walls):.3f} s, median {statistics.median(walls):.3f} s, "
              f"max {max(walls):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
