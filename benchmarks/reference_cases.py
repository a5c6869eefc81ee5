"""Time simpy-astra on reference cases (or scenarios) and compare with ASTRA-sim's wall clock.

    python benchmarks/reference_cases.py [--filter REGEX] [--repeat N] [--backend NAME]
    python benchmarks/reference_cases.py --scenario scenarios/x.yaml [--repeat N]

Each run is a fresh subprocess (as a user would run it: start-up, ET reading and simulation
all count). Printed per case:

* ``wall s`` - min and median over ``--repeat`` runs of the subprocess's wall time;
* ``max RSS MB`` - the largest peak resident set size of those runs;
* ``msgs/s`` - messages sent per second of the run phase (``Simulation.run``): the same
  unit for every case, so it shows whether a slow case is slow because it has more to
  simulate or because each message costs more. ``msgs`` is the number of messages sent;
* ``ref s`` and ``ratio`` - the case's ``reference_wall_s`` and min(ours) / reference.

``--backend`` picks the cases the reference ran on that backend; a backend the reference
does not have (``packet``) runs the congestion-unaware cases' inputs (``ref s`` is then the
unaware reference's). The last line is the geometric mean of the ratios. No assertion: this measures; the parity
suite checks the figures. Environment variables (e.g. the ``SIMPY_ASTRA_*`` switches of
optimisations) pass through to the subprocesses.
"""

from __future__ import annotations

import argparse
import json
import math
import os
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


#: the backends the reference cases were run on; any other runs the unaware cases' inputs
REFERENCE_BACKENDS = ("congestion_unaware", "congestion_aware")


def child(kind: str, spec: str, backend: str | None = None) -> int:
    """Run one case or scenario in this process and print one JSON line of measurements."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    try:
        from simpy_astra.config.astra_inputs import inputs_from_astra_flags
        from simpy_astra.config.scenario import load_scenario
    except ImportError:  # a commit before simpy_astra/config/ (timed as a baseline)
        from simpy_astra.scenario import inputs_from_astra_flags, load_scenario
    from simpy_astra.simulation import Simulation

    t0 = time.perf_counter()
    if kind == "case":
        c = json.loads(Path(spec).read_text())
        inputs = inputs_from_astra_flags(c["workload"], c["system"], c["network"], c["remote_memory"],
                                         c.get("comm_group") or "empty", backend or c["backend"])
    else:
        inputs = load_scenario(spec)
    try:  # folding as ``simpy-astra run`` decides it (it runs no script: links fold too)
        from simpy_astra.folding.run import resolve_fold
    except ImportError:  # a commit before it
        resolve_fold = None
    if resolve_fold is not None:
        inputs = resolve_fold(inputs) or inputs  # (before it returned them: changed in place)
    sim = Simulation(inputs)
    t1 = time.perf_counter()
    sim.run()
    t2 = time.perf_counter()
    print(json.dumps({
        "load_s": t1 - t0, "run_s": t2 - t1, "npus": sim.total_npus, "simulated": len(sim.npus),
        "messages": messages_sent(sim.network.board),
        "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }))
    return 0


def messages_sent(board) -> int:
    """Sends posted (what the message board counts)."""
    return board.messages_sent()


def run_once(kind: str, spec: str, cwd: str, backend: str | None = None) -> dict | None:
    args = [sys.executable, str(Path(__file__).resolve()), f"--child-{kind}", spec]
    if backend is not None:
        args += ["--child-backend", backend]
    t0 = time.perf_counter()
    r = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        print(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}")
        return None
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["wall_s"] = wall
    return out


def measure(kind: str, spec: str, cwd: str, repeat: int, backend: str | None = None) -> dict | None:
    runs = []
    for _ in range(repeat):
        got = run_once(kind, spec, cwd, backend)
        if got is None:
            return None
        runs.append(got)
    walls = [r["wall_s"] for r in runs]
    best = min(runs, key=lambda r: r["wall_s"])
    return {"min": min(walls), "median": statistics.median(walls), "rss_kb": max(r["rss_kb"] for r in runs),
            "messages": best["messages"], "npus": best["npus"],
            "simulated": best.get("simulated", best["npus"]), "load_s": best["load_s"], "run_s": best["run_s"],
            "msgs_per_s": best["messages"] / max(best["run_s"], 1e-9)}


HEADER = (f"{'case':52s} {'npus':>9s} {'wall min/med s':>15s} {'max RSS MB':>10s} "
          f"{'msgs/s':>9s} {'msgs':>9s} {'ref s':>8s} {'ratio':>7s}")


def row(name: str, m: dict, ref_s: float | None) -> str:
    ratio = f"{m['min'] / max(ref_s, 1e-3):6.2f}x" if ref_s else f"{'-':>7s}"
    ref = f"{ref_s:8.2f}" if ref_s else f"{'-':>8s}"
    npus = f"{m['simulated']}/{m['npus']}" if m["simulated"] != m["npus"] else str(m["npus"])
    return (f"{name:52s} {npus:>9s} {m['min']:7.2f}/{m['median']:<7.2f} {m['rss_kb'] / 1024:10.0f} "
            f"{m['msgs_per_s']:9.0f} {m['messages']:9d} {ref} {ratio}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--filter", default=DEFAULT_FILTER, help=f"regex on case id (default {DEFAULT_FILTER})")
    ap.add_argument("--backend", default="congestion_unaware")
    ap.add_argument("--repeat", type=int, default=1, help="runs per case; min and median are printed")
    ap.add_argument("--reference", type=Path, default=REFERENCE, help=f"reference data (default {REFERENCE})")
    ap.add_argument("--scenario", action="append", default=[],
                    help="a scenario YAML (e.g. with a generated workload) instead of reference cases")
    ap.add_argument("--fold", choices=("on", "off"), default=None,
                    help="symmetry folding for every run (default: the simulator's default); "
                         "npus shows simulated/total when a run folds")
    ap.add_argument("--child-case", help=argparse.SUPPRESS)
    ap.add_argument("--child-scenario", help=argparse.SUPPRESS)
    ap.add_argument("--child-backend", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child_case:
        return child("case", a.child_case, a.child_backend)
    if a.child_scenario:
        return child("scenario", a.child_scenario)
    if a.fold is not None:
        os.environ["SIMPY_ASTRA_FOLD"] = "1" if a.fold == "on" else "0"  # inherited by the runs
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs")
    print(HEADER, flush=True)
    if a.scenario:
        for path in a.scenario:
            m = measure("scenario", str(Path(path).resolve()), os.getcwd(), a.repeat)
            print(row(Path(path).stem, m, None) if m else f"{path}: run failed", flush=True)
        return 0
    reference = a.reference
    if not (reference / "cases").is_dir():
        print(f"no reference data at {reference}")
        return 1
    ratios = []
    # (a backend the reference lacks runs the unaware cases' inputs)
    of_cases = a.backend if a.backend in REFERENCE_BACKENDS else "congestion_unaware"
    override = None if a.backend in REFERENCE_BACKENDS else a.backend
    with tempfile.TemporaryDirectory(prefix="bench-") as cwd:
        for entry in reference.iterdir():  # relative paths in the configs resolve from here
            Path(cwd, entry.name).symlink_to(entry)
        for p in sorted((reference / "cases").glob("*.json")):
            c = json.loads(p.read_text())
            if not re.search(a.filter, c["id"]) or c["backend"] != of_cases or c.get("expect_error"):
                continue
            m = measure("case", str(p), cwd, a.repeat, override)
            if m is None:
                print(f"{c['id']}: run failed", flush=True)
                continue
            ref_s = c.get("reference_wall_s")
            if ref_s:
                ratios.append(m["min"] / max(ref_s, 1e-3))
            print(row(c["id"], m, ref_s), flush=True)
    if ratios:
        g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geometric mean wall-clock ratio (ours / ASTRA-sim) over {len(ratios)} cases: {g:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
