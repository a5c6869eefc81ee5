"""results.csv has a row for every point of the sweep, and holds only what the sweep wrote.

A point that runs the step of an earlier one (``bandwidth: 50`` beside ``[50.0]``: the loader
reads them alike) runs once; it had no row, so a table of the sweep's coordinates lacked it
and its figures were nowhere. It now has a row with status ``same`` whose ``same_run_as`` is
the key of the point whose row holds the run's figures (its own figures empty: a table never
holds one run twice, so no tie is crowned). A figure edited in results.csv was trusted on
resume, ranked in best.json as a run's; each row now records a digest of what the sweep wrote
(``row_sha256``), and a row that no longer matches it is refused in one line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import yaml

from simpy_astra.cli.main import main
from simpy_astra.cli.sweep import main as sweep_main

DEFAULT = Path(__file__).resolve().parents[1] / "scenarios" / "default.yaml"
AXES = {"network.bandwidth": [[50.0], 50, 25]}


def _sweep(tmp_path: Path) -> tuple[str, Path]:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": str(DEFAULT), "axes": AXES}))
    return str(sweep), tmp_path / "out"


def _rows(out: Path) -> list[dict[str, str]]:
    with open(out / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_a_point_that_runs_anothers_step_has_a_row_pointing_at_it(tmp_path, capsys):
    sweep, out = _sweep(tmp_path)
    assert sweep_main([sweep, "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    rows = _rows(out)
    assert [r["network.bandwidth"] for r in rows] == ["[50.0]", "50", "25"]  # every point, in sweep order
    first, same, other = rows
    assert (first["status"], same["status"], other["status"]) == ("ok", "same", "ok")
    assert same["same_run_as"] == first["key"] and first["same_run_as"] == other["same_run_as"] == ""
    assert same["finish_ns"] == "" and first["finish_ns"] != ""
    assert "bandwidth=[50.0]" in same["warnings"]
    # ranked once: the run is one, however many points share it
    best = json.loads((out / "best.json").read_text())
    assert best["best"]["key"] != same["key"]
    # a second start runs nothing again and keeps the pointer
    capsys.readouterr()
    assert sweep_main([sweep, "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    assert "running 0" in capsys.readouterr().err
    assert _rows(out) == rows


def test_an_edited_figure_is_refused_on_resume(tmp_path, capsys):
    sweep, out = _sweep(tmp_path)
    assert sweep_main([sweep, "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    text = (out / "results.csv").read_text()
    rows = _rows(out)
    edited = text.replace(f",{rows[2]['finish_ns']},", ",1,", 1)  # the slow point made best
    assert edited != text
    (out / "results.csv").write_text(edited)
    capsys.readouterr()
    assert main(["sweep", sweep, "--out", str(out), "--jobs", "1", "--no-plots"]) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines()
           if not line.startswith(("warning:", "  "))]  # the axes' warning of the alike points first
    assert len(err) == 1, err
    assert "results.csv: line 4:" in err[0] and "row_sha256" in err[0] and "left as it is" in err[0]
    assert (out / "results.csv").read_text() == edited  # never rewritten


def test_a_row_deleted_by_hand_runs_again(tmp_path, capsys):
    """The store's own way to redo a point still works: a deleted line's point runs again."""
    sweep, out = _sweep(tmp_path)
    assert sweep_main([sweep, "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    lines = (out / "results.csv").read_text().splitlines(keepends=True)
    (out / "results.csv").write_text("".join(lines[:3]))
    capsys.readouterr()
    assert sweep_main([sweep, "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    assert "running 1" in capsys.readouterr().err
    assert [r["network.bandwidth"] for r in _rows(out)] == ["[50.0]", "50", "25"]
