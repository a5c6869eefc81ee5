"""Does folding keep every figure? A scenario run folded and unfolded, record by record.

    python benchmarks/fold_exact.py scenarios/scale/gpt3_175b_1024npus.yaml \\
        [--backend congestion_aware]

Each run is a fresh ``simpy-astra run --quiet --json-out`` subprocess (timed, with its peak
RSS from ``--json-out``); the two JSON files must agree on every NPU's record and every
link's, and the printed lines must be the same, in the same order. Exit status 1 if not.
The unfolded run of the 1,024-NPU GPT-3 scenario takes about 10 minutes idle on the aware
backend and 9 on the packet one (docs/performance.md, *Link-level folding*); a smaller
faithful variant (fewer layers and micro-batches) checks the same layout in a minute.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(scenario: str, backend: str | None, fold: str, out: Path) -> tuple[str, dict, float]:
    """(printed lines, the JSON written, wall seconds) of one run."""
    args = [sys.executable, "-m", "simpy_astra", "run", scenario, "--quiet", "--fold-symmetry", fold,
            "--json-out", str(out)]
    if backend:
        args += ["--network-backend", backend]
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr.strip().splitlines()[-1:]}")
    return done.stdout, json.loads(out.read_text()), wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario")
    ap.add_argument("--backend", default=None, help="network backend (default: the scenario's)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fold-exact-") as tmp:
        runs = {fold: run(a.scenario, a.backend, fold, Path(tmp) / f"{fold}.json") for fold in ("on", "off")}
    (lines, folded, wall), (full_lines, full, full_wall) = runs["on"], runs["off"]
    bad = [npu for npu, record in full["npus"].items() if folded["npus"].get(npu) != record]
    links_equal = folded.get("links") == full.get("links")
    for name, data, seconds in (("folded", folded, wall), ("unfolded", full, full_wall)):
        print(f"{name:9s} {seconds:8.1f} s  peak RSS {data['peak_rss_mb']:7.0f} MB")
    print(f"NPU records: {len(full['npus']) - len(bad):,} of {len(full['npus']):,} equal; links: "
          f"{'equal' if links_equal else 'differ'} ({len(full.get('links') or []):,}); printed lines: "
          f"{'identical' if lines == full_lines else 'differ'}")
    return 0 if not bad and links_equal and lines == full_lines else 1


if __name__ == "__main__":
    raise SystemExit(main())
