"""Sweep files a researcher writes that run every point and then misread the results: each
ranks the points it can, or stops in one line naming the file and the field, never after
every point ran without a best.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from simpy_astra.cli.main import main

TORUS = os.path.join(os.path.dirname(__file__), "..", "scenarios", "torus3d_all_reduce.yaml")


def _sweep(tmp_path: Path, minimise: str) -> tuple[Path, Path]:
    sweep = tmp_path / "s.yaml"
    sweep.write_text(yaml.safe_dump({"base": os.path.abspath(TORUS), "axes": {"network.bandwidth": [50, 100]},
                                     "minimise": minimise}))
    return sweep, tmp_path / "out"


def test_a_minimise_past_the_number_bound_for_one_point_leaves_that_point_out(tmp_path, capsys):
    # finish_ns is about 125,756 ns at 50 GB/s and 67,172 at 100: x ** 30 fits 2**1024, x ** 80 does not
    sweep, out = _sweep(tmp_path, "finish_ns ** (bandwidth - 20)")
    assert main(["sweep", str(sweep), "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    best = json.loads((out / "best.json").read_text())["best"]
    assert best["coordinates"] == {"network.bandwidth": 50}
    assert "Traceback" not in capsys.readouterr().err


def test_a_minimise_past_the_number_bound_for_every_point_says_so_and_writes_best_json(tmp_path, capsys):
    sweep, out = _sweep(tmp_path, "finish_ns ** 100")
    assert main(["sweep", str(sweep), "--out", str(out), "--jobs", "1", "--no-plots"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("error: ")]
    assert len(errors) == 1 and "minimise" in errors[0] and "2**1024" in errors[0], err
    assert json.loads((out / "best.json").read_text())["best"] is None


def _outcome(spec, point, finish_ns: int, peak_gb: float):
    from simpy_astra.sweep.best import Outcome

    figures = {name: None for name in ("exposed_comm_ns", "compute_ns", "comm_ns")}
    return Outcome(point, {**figures, "finish_ns": finish_ns, "peak_memory_gb": peak_gb, "status": "ok",
                           "error": ""})


def test_a_memory_cap_selects_a_best_under_it(tmp_path):
    # memory_cap_gb only drew a line on memory.png: best.json crowned a point of 120 GB under a
    # cap of 80 without a word; it is the constraint peak_memory_gb <= cap
    from simpy_astra.sweep.best import best_summary
    from simpy_astra.sweep.spec import load_sweep

    sweep = tmp_path / "s.yaml"
    sweep.write_text(yaml.safe_dump({"base": os.path.abspath(TORUS), "axes": {"network.bandwidth": [50, 100]},
                                     "memory_cap_gb": 80}))
    spec = load_sweep(str(sweep))
    slow_small, fast_big = spec.points()
    summary = best_summary(spec, [_outcome(spec, slow_small, 125_756, 40.0), _outcome(spec, fast_big, 67_172, 120.0)],
                           2)
    assert summary["best"]["key"] == fast_big.key
    assert summary["best_under"]["peak_memory_gb <= 80"]["key"] == slow_small.key
