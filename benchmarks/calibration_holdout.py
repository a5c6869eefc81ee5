"""Held-out accuracy of calibrate on the public nccl-tests logs: the README's table.

Each experiment fits on some logs (every other size held out where it says so) and
validates with ``--holdout``, so the fitted rows and the predicted ones are scored apart::

    python benchmarks/calibration_holdout.py [--plot docs/calibrate_holdout_a100.png]

prints one markdown row per log and role: geomean |error| from 1 MiB and the worst size.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "tests" / "data" / "nccl"
A100 = DATA / "dgx-a100-superbench"
OCI = DATA / "oci-a100-2node-roce"
H100 = DATA / "hgx-h100-2node-ib"
A100_LOGS = [A100 / f"{n}.log" for n in ("all_reduce", "all_gather", "reduce_scatter", "alltoall")]

#: (name, logs fitted on, every N-th size held out, logs tested, network, backend[, calibrate flags])
EXPERIMENTS = [
    ("DGX A100: all-reduce -> other collectives", [A100_LOGS[0]], 0, A100_LOGS, A100 / "network.yml",
     "congestion_unaware"),
    ("DGX A100: half the all-reduce sizes", [A100_LOGS[0]], 2, A100_LOGS, A100 / "network.yml",
     "congestion_unaware"),
    ("two-level A100: DGX + half of OCI", [A100_LOGS[0], OCI / "all_reduce.log"], 2,
     [*A100_LOGS, OCI / "all_reduce.log"], OCI / "network.yml", "congestion_unaware"),
    ("OCI alone (one log spans both dimensions)", [OCI / "all_reduce.log"], 2, [OCI / "all_reduce.log"],
     OCI / "network.yml", "congestion_unaware"),
    ("HGX H100 alone (one log spans both dimensions)", [H100 / "all_reduce.log"], 2,
     [H100 / "all_reduce.log"], H100 / "network.yml", "congestion_unaware"),
    ("DGX A100, congestion_aware", [A100_LOGS[0]], 0, A100_LOGS, A100 / "network.yml", "congestion_aware"),
    ("DGX A100, packet", [A100_LOGS[0]], 0, A100_LOGS, A100 / "network.yml", "packet"),
    ("two-level A100, congestion_aware", [A100_LOGS[0], OCI / "all_reduce.log"], 2,
     [OCI / "all_reduce.log"], OCI / "network.yml", "congestion_aware"),
    ("DGX A100: all-reduce + all-gather -> reduce-scatter, all-to-all", A100_LOGS[:2], 0, A100_LOGS,
     A100 / "network.yml", "congestion_unaware", ("--fit-algorithms",)),
    ("DGX A100: half of all four logs, algorithms fitted", A100_LOGS, 2, A100_LOGS, A100 / "network.yml",
     "congestion_unaware", ("--fit-algorithms",)),
    ("OCI alone, protocol regimes", [OCI / "all_reduce.log"], 2, [OCI / "all_reduce.log"], OCI / "network.yml",
     "congestion_unaware", ("--protocol-regimes",)),
    ("two-level A100, protocol regimes", [A100_LOGS[0], OCI / "all_reduce.log"], 2,
     [*A100_LOGS, OCI / "all_reduce.log"], OCI / "network.yml", "congestion_unaware", ("--protocol-regimes",)),
    ("HGX H100 alone, protocol regimes", [H100 / "all_reduce.log"], 2, [H100 / "all_reduce.log"],
     H100 / "network.yml", "congestion_unaware", ("--protocol-regimes",)),
]


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def run(name: str, fit: list[Path], every: int, test: list[Path], network: Path, backend: str,
        flags: tuple[str, ...] = (), *, out: str) -> list[str]:
    from simpy_astra.cli.main import main

    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet):
        assert main(["calibrate", *map(str, fit), "--network", str(network), "--out", out,
                     "--hold-out-every", str(every), "--backend", backend, *flags]) == 0
        regimes = os.path.join(out, "regimes.json")
        extra = ["--regimes", regimes] if os.path.exists(regimes) else []
        assert main(["validate", *extra, *map(str, test), "--network", os.path.join(out, "network.yml"),
                     "--system", os.path.join(out, "system.json"), "--out", out, "--holdout",
                     os.path.join(out, "calibration.json"), "--backend", backend]) == 0
    rows = json.loads(Path(out, "validate.json").read_text())["holdout"]
    fitted_on = " + ".join(f"{p.parent.name}/{p.name}" for p in fit) + (f" (1 size in {every} held out)"
                                                                         if every else "")
    lines = []
    for h in sorted(rows, key=lambda h: (h["log"], h["role"] != "held out")):
        log = Path(h["log"])
        lines.append(f"| {name} | {fitted_on} | {log.parent.name}/{log.name} ({h['ranks']} GPUs) | "
                     f"{h['role']} | {100 * h['geomean']:.1f}% | {_size(h['worst_size'])} "
                     f"({100 * h['worst_error']:+.1f}%) |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plot", default=None, help="copy the two-level experiment's validate.png here")
    args = parser.parse_args()
    print("| experiment | fitted on | log | sizes | geomean error >= 1 MiB | worst size |")
    print("|---|---|---|---|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("SIMPY_ASTRA_CACHE", os.path.join(tmp, "cache"))
        for i, exp in enumerate(EXPERIMENTS):
            out = os.path.join(tmp, str(i))
            for line in run(*exp, out=out):
                print(line)
            if args.plot and exp[0] == "two-level A100, protocol regimes":
                shutil.copy(os.path.join(out, "validate.png"), args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
