"""A Dask worker's heap is frozen once, at its first point, as the local pool's workers freeze
theirs at start (simpy_astra/sweep/point.py: heap_frozen_first): Dask workers never froze, so
every point's collection scanned the worker's whole heap again (13-16 ms a point in the pool
before it froze, 80% of a small point's CPU). Tested on the function a Dask task calls
(run_point_checked), in a process of its own as a worker is: what it freezes is what the worker
held before the point, nothing the point's run made."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

WORKER = """
import gc, json, sys
from simpy_astra.sweep.inputs import InputSnapshot
from simpy_astra.sweep.runner import run_point_checked
from simpy_astra.sweep.spec import load_sweep

points = load_sweep(sys.argv[1]).points()[:2]
gc.collect()
held = len(gc.get_objects())  # what the worker holds before its first point
counts, statuses = [], []
for p in points:
    figures, _ = run_point_checked(p.scenario, p.key, InputSnapshot({}, {}))
    statuses.append(figures["status"])
    counts.append(gc.get_freeze_count())
print(json.dumps({"held": held, "frozen": counts, "statuses": statuses}))
"""


def test_a_dask_workers_heap_is_frozen_once_before_its_first_points_run(tmp_path):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"base: {ROOT / 'scenarios' / 'default.yaml'}\naxes:\n  network.bandwidth: [50, 100]\n"
                     f"minimise: finish_ns\n")
    done = subprocess.run([sys.executable, "-c", WORKER, str(sweep)], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["statuses"] == ["ok", "ok"]
    first, second = found["frozen"]
    assert first > 0  # frozen (0 before: each run froze and thawed its own)
    assert second == first  # once, not again at the next point
    # what the worker held, and the point's inputs: nothing its run built (the run's graphs,
    # events and engine objects number thousands)
    assert first <= found["held"] + 200, found


def _worker_state() -> tuple[bool, int]:
    """(whether this process ran a sweep point, its heap's frozen objects)."""
    import gc

    return "simpy_astra.sweep.runner" in sys.modules, gc.get_freeze_count()


def test_a_sweep_on_a_dask_cluster_runs_its_points_on_the_workers_whose_heap_is_then_frozen(tmp_path):
    # --cluster's connect returned no client: the sweep printed 'running 2 on cluster ADDRESS'
    # and ran every point in local processes (the same figures, so the Dask test above passed)
    distributed = pytest.importorskip("distributed")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"base: {ROOT / 'scenarios' / 'default.yaml'}\naxes:\n  network.bandwidth: [50, 100]\n"
                     f"minimise: finish_ns\n")
    from simpy_astra.cli.main import main

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        assert main(["sweep", str(sweep), "--out", str(tmp_path / "o"), "--cluster", cluster.scheduler_address,
                     "--no-plots"]) == 0
        with distributed.Client(cluster.scheduler_address) as client:
            [(ran, frozen)] = client.run(_worker_state).values()
    assert ran and frozen > 0
