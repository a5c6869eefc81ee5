"""How wall time and memory grow with NPUs: GPT-3-175B iterations from 64 to 1,024 NPUs.

    python benchmarks/scaling.py [--sizes 64,128,256,512,1024] [--repeat 1]

Each size is a generated GPT-3-175B training iteration (batch 1536 in 16 micro-batches, 1F1B)
on a dp x tp x pp layout, congestion-unaware, one ring per parallel axis (the layout of
``scenarios/scale/gpt3_175b_1024npus.yaml``, which is the 1,024 row). Traces are generated
first (cached), so the table times loading and simulating only. Uses the same subprocess
measurement as ``reference_cases.py``: wall time, peak RSS and messages.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.reference_cases import measure  # noqa: E402

BASE = Path(__file__).resolve().parents[1] / "scenarios" / "scale" / "gpt3_175b_1024npus.yaml"
LAYOUTS = {64: (1, 8, 8), 128: (2, 8, 8), 256: (4, 8, 8), 512: (8, 8, 8), 1024: (8, 8, 16)}  # dp, tp, pp


def scenario_for(npus: int) -> dict:
    """The base scenario with the dp x tp x pp of ``npus`` and one ring per axis of size > 1."""
    dp, tp, pp = LAYOUTS[npus]
    doc = yaml.safe_load(BASE.read_text())
    doc["name"] = f"gpt3_175b_{npus}npus"
    doc["workload"].update(dp=dp, tp=tp, pp=pp)
    axes = [(n, bw, lat) for n, bw, lat in zip((dp, tp, pp), (200.0, 200.0, 100.0), (500.0, 500.0, 1000.0),
                                                strict=True) if n > 1]
    doc["network"] = {"topology": ["Ring"] * len(axes), "npus_count": [a[0] for a in axes],
                      "bandwidth": [a[1] for a in axes], "latency": [a[2] for a in axes]}
    for key in ("all-reduce-implementation", "all-gather-implementation", "reduce-scatter-implementation"):
        doc["system"][key] = ["ring"] * len(axes)
    doc["system"]["all-to-all-implementation"] = ["direct"] * len(axes)
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default=",".join(map(str, LAYOUTS)), help="NPU counts, comma-separated")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--fold", choices=("on", "off"), default=None, help="symmetry folding (default: on)")
    a = ap.parse_args()
    from simpy_astra.config.scenario import load_scenario

    if a.fold is not None:
        os.environ["SIMPY_ASTRA_FOLD"] = "1" if a.fold == "on" else "0"  # inherited by the runs
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs")
    print("| NPUs | dp x tp x pp | simulated | wall min/median s | load s | run s | peak RSS MB "
          "| messages | messages/s |")
    print("|---|---|---|---|---|---|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory(prefix="scaling-") as tmp:
        for npus in (int(s) for s in a.sizes.split(",")):
            if npus not in LAYOUTS:
                print(f"no layout for {npus} NPUs (known: {sorted(LAYOUTS)})")
                return 2
            path = Path(tmp) / f"gpt3_{npus}.yaml"
            path.write_text(yaml.safe_dump(scenario_for(npus)))
            load_scenario(str(path))  # generate the trace once, outside the timed runs
            m = measure("scenario", str(path), tmp, a.repeat)
            if m is None:
                print(f"| {npus} | run failed |")
                continue
            dp, tp, pp = LAYOUTS[npus]
            print(f"| {npus} | {dp} x {tp} x {pp} | {m['simulated']} | {m['min']:.1f} / {m['median']:.1f} | "
                  f"{m['load_s']:.1f} | {m['run_s']:.1f} | {m['rss_kb'] / 1024:.0f} | "
                  f"{m['messages']:,} | {m['msgs_per_s']:,.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
