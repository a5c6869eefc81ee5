"""results.csv lists the sweep's points in sweep order once they all ran, whatever order they
finished in (parallel workers, a resumed run): two runs of one sweep give the same file but
for the time each point took (``wall_s``)."""

from __future__ import annotations

import csv
from pathlib import Path

import yaml

from simpy_astra.cli.sweep import main as sweep_main
from simpy_astra.sweep import runner
from simpy_astra.sweep.point import run_point
from simpy_astra.sweep.spec import load_sweep

DEFAULT = Path(__file__).resolve().parents[1] / "scenarios" / "default.yaml"


def _finishing_backwards(points, jobs, inputs, on_result, out, where=lambda p: p.key, close_fds=(), score=None,
                         best=None):
    """run_local as a busy machine may run it: the last point finishes first."""
    for p in reversed(points):
        on_result(p, run_point(p.scenario, where(p)), [])
    return runner.RunOutcome(len(points), interrupted=False)


def _keys(out: Path) -> list[str]:
    with open(out / "results.csv", newline="") as f:
        return [row["key"] for row in csv.DictReader(f)]


def test_rows_are_in_sweep_order_whatever_finished_first(tmp_path, monkeypatch):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": str(DEFAULT), "axes": {"network.bandwidth": [25, 50, 100]}}))
    monkeypatch.setattr(runner, "run_local", _finishing_backwards)
    out = tmp_path / "out"
    assert sweep_main([str(sweep), "--out", str(out), "--no-plots"]) == 0
    assert _keys(out) == [p.key for p in load_sweep(str(sweep)).points()]


def test_a_resumed_sweep_ends_in_sweep_order(tmp_path):
    # the point added before the one already run was appended after it
    out = tmp_path / "out"
    first, wider = tmp_path / "first.yaml", tmp_path / "wider.yaml"
    first.write_text(yaml.safe_dump({"base": str(DEFAULT), "axes": {"network.bandwidth": [50]}}))
    wider.write_text(yaml.safe_dump({"base": str(DEFAULT), "axes": {"network.bandwidth": [25, 50]}}))
    assert sweep_main([str(first), "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    assert sweep_main([str(wider), "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    assert _keys(out) == [p.key for p in load_sweep(str(wider)).points()]
