"""Run a scenario folded and unfolded and compare every NPU's figures.

    python benchmarks/fold_check.py SCENARIO.yaml [--set workload.num_stacks=16 ...]

Each run is a fresh subprocess of ``simpy-astra run --json-out`` (its wall time and peak RSS
are printed); the two JSON files must agree NPU by NPU on every figure. ``--set KEY=VALUE``
edits the scenario first (dotted keys, YAML values), for a smaller faithful variant of a run
whose unfolded form would not fit in memory.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml


def run(scenario: str, fold: str, out: str) -> tuple[dict, float]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", scenario, "--quiet", "--json-out", out,
                           "--fold-symmetry", fold], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{fold}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
    if done.stderr.strip():
        print(done.stderr.strip())
    return json.loads(Path(out).read_text()), wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args()
    doc = yaml.safe_load(Path(a.scenario).read_text())
    for item in a.set:
        key, value = item.split("=", 1)
        *path, last = key.split(".")
        node = doc
        for part in path:
            node = node[part]
        node[last] = yaml.safe_load(value)
    with tempfile.TemporaryDirectory(prefix="fold-check-") as tmp:
        scenario = str(Path(tmp) / "s.yaml")
        Path(scenario).write_text(yaml.safe_dump(doc))
        figures = {}
        for fold in ("on", "off"):
            data, wall = run(scenario, fold, str(Path(tmp) / f"{fold}.json"))
            figures[fold] = data["npus"]
            print(f"fold {fold}: {len(data['npus']):,} NPUs reported, wall {wall:.1f} s, "
                  f"peak RSS {data['peak_rss_mb']:.0f} MB", flush=True)
    on, off = figures["on"], figures["off"]
    differ = [npu for npu in off if on.get(npu) != off[npu]]
    if set(on) != set(off) or differ:
        print(f"DIFFER: {len(differ)} NPU(s), first {differ[:5]}; NPUs only one side: "
              f"{sorted(set(on) ^ set(off))[:5]}")
        return 1
    print(f"equal: every figure of all {len(off):,} NPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
