"""How wall time and memory grow with NPUs: GPT-3-175B iterations from 64 to 16,384 NPUs.

    python benchmarks/scaling.py [--sizes 64,128,256,512,1024,4096,16384,16384pp] [--repeat 1]
                                 [--backends congestion_unaware,congestion_aware,packet]

Each size is a generated GPT-3-175B training iteration (16 micro-batches, 1F1B) on a
dp x tp x pp layout, congestion-unaware, one ring per parallel axis (the layout of
``scenarios/scale/gpt3_175b_1024npus.yaml``, which is the 1,024 row; 4,096 and 16,384 are
its dp32 and dp128, and ``16384pp`` a pipeline-heavy dp64 x tp8 x pp32). Batch 1536 in
micro-batches of 96 up to dp32; dp64 and dp128 need micro-batches of 384 (batch 6144),
as every replica needs whole samples. Each size is run first with an empty trace cache
(``cold``: generating the trace is timed too) and then ``--repeat`` times with it warm,
each run a fresh subprocess measured as in ``reference_cases.py``: wall time, peak RSS
(the larger of the cold and warm runs') and messages. With several ``--backends`` each size
runs on each backend in turn (the same sitting, as the figures must be compared); the
congestion-aware and packet backends fold their links too (``simpy_astra/folding/links.py``,
``simpy_astra/folding/packet.py``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.reference_cases import measure  # noqa: E402

BASE = Path(__file__).resolve().parents[1] / "scenarios" / "scale" / "gpt3_175b_1024npus.yaml"
#: size name -> dp, tp, pp
LAYOUTS = {"64": (1, 8, 8), "128": (2, 8, 8), "256": (4, 8, 8), "512": (8, 8, 8), "1024": (8, 8, 16),
           "2048": (16, 8, 16), "4096": (32, 8, 16), "16384": (128, 8, 16), "16384pp": (64, 8, 32)}


def scenario_for(size: str, backend: str = "congestion_unaware") -> dict:
    """The base scenario with the dp x tp x pp of ``size`` and one ring per axis of size > 1."""
    dp, tp, pp = LAYOUTS[size]
    doc = yaml.safe_load(BASE.read_text())
    doc["name"] = f"gpt3_175b_{size}npus"
    doc["backend"] = backend
    doc["workload"].update(dp=dp, tp=tp, pp=pp)
    if 96 % dp:  # whole samples per replica, still 16 micro-batches
        doc["workload"].update(batch=6144, micro_batch=384)
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
    ap.add_argument("--sizes", default=",".join(LAYOUTS), help="sizes, comma-separated (keys of LAYOUTS)")
    ap.add_argument("--repeat", type=int, default=1, help="warm runs per size")
    ap.add_argument("--fold", choices=("on", "off"), default=None, help="symmetry folding (default: on)")
    ap.add_argument("--backends", default="congestion_unaware",
                    help="network backends, comma-separated; each size runs on each in turn")
    a = ap.parse_args()
    if a.fold is not None:
        os.environ["SIMPY_ASTRA_FOLD"] = "1" if a.fold == "on" else "0"  # inherited by the runs
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs")
    print("| NPUs | dp x tp x pp | backend | simulated | wall s cold | wall s warm min/median | load s | run s "
          "| peak RSS MB | messages | messages/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    runs = [(size, backend) for size in a.sizes.split(",") for backend in a.backends.split(",")]
    with tempfile.TemporaryDirectory(prefix="scaling-") as tmp:
        for size, backend in runs:
            if size not in LAYOUTS:
                print(f"no layout for {size} (known: {', '.join(LAYOUTS)})")
                return 2
            path = Path(tmp) / f"gpt3_{size}_{backend}.yaml"
            path.write_text(yaml.safe_dump(scenario_for(size, backend)))
            cache = Path(tmp) / f"cache-{size}-{backend}"  # empty: the first run generates
            os.environ["SIMPY_ASTRA_CACHE"] = str(cache)  # inherited by the runs
            cold = measure("scenario", str(path), tmp, 1)
            warm = measure("scenario", str(path), tmp, a.repeat) if cold is not None else None
            shutil.rmtree(cache, ignore_errors=True)
            if cold is None or warm is None:
                print(f"| {size} | {backend} | run failed |")
                continue
            dp, tp, pp = LAYOUTS[size]
            rss_mb = max(cold["rss_kb"], warm["rss_kb"]) / 1024
            short = backend.replace("congestion_", "")
            print(f"| {dp * tp * pp:,} | {dp} x {tp} x {pp} | {short} | {warm['simulated']} | {cold['min']:.1f} | "
                  f"{warm['min']:.1f} / {warm['median']:.1f} | {warm['load_s']:.1f} | {warm['run_s']:.1f} | "
                  f"{rss_mb:.0f} | {warm['messages']:,} | {warm['msgs_per_s']:,.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
