"""A sweep's null on a job's key leaves the key out: the point runs the job as without it. A
value written at what the job has without it is then the same run (config/jobs.py
JOB_DEFAULTS), run once, as a null on a cluster axis beside the preset's value is."""

from __future__ import annotations

import csv

from simpy_astra.cli.main import main


def _two_jobs_sweep(tmp_path, values: str) -> str:
    from tests.test_extensions_round6 import _system
    from tests.test_extensions_round7 import _net
    from tests.test_extensions_round14 import TWO_JOBS

    (tmp_path / "base.yaml").write_text(f"{TWO_JOBS}system: {_system()}\nnetwork: {_net('Ring', 4)}\n")
    (tmp_path / "sweep.yaml").write_text(f"base: base.yaml\naxes:\n  jobs.1.start_ns: {values}\n")
    return str(tmp_path / "sweep.yaml")


def test_null_and_zero_on_a_jobs_start_run_once(tmp_path, capsys):
    # before: start_ns=null and start_ns=0 ran as two points, two rows of one run (6,246 ns
    # each), the first named best of a tie
    sweep = _two_jobs_sweep(tmp_path, "[null, 0, 1000]")
    assert main(["sweep", sweep, "--out", str(tmp_path / "out")]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert ("warning: axes: start_ns=0 runs the step start_ns=null runs (jobs.1.start_ns 0 is what the job has "
            "without it); it runs once, as start_ns=null") in err
    with open(tmp_path / "out" / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["jobs.1.start_ns"], r["status"], r["finish_ns"]) for r in rows] == [
        ("null", "ok", "6246"), ("0", "same", ""), ("1000", "ok", "7246")]
    assert rows[1]["same_run_as"] == rows[0]["key"]


def test_a_null_coordinate_is_written_null_and_an_earlier_empty_cell_still_resumes(tmp_path, capsys):
    # before: a null coordinate was an empty cell in results.csv, as a figure a point has not,
    # while the summary and every label say null
    from simpy_astra.sweep.result_row import DIGEST_COLUMN, row_digest

    sweep = _two_jobs_sweep(tmp_path, "[null, 1000]")
    out = tmp_path / "out"
    assert main(["sweep", sweep, "--out", str(out)]) == 0
    with open(out / "results.csv", newline="") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames, list(reader)
    assert [r["jobs.1.start_ns"] for r in rows] == ["null", "1000"]
    rows[0]["jobs.1.start_ns"] = ""  # as an earlier version wrote it, digest and all
    rows[0][DIGEST_COLUMN] = row_digest(rows[0])
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, header)
        writer.writeheader()
        writer.writerows(rows)
    capsys.readouterr()
    assert main(["sweep", sweep, "--out", str(out)]) == 0
    assert capsys.readouterr().err.splitlines()[0] == "sweep sweep: 2 points, running 0 on 1 local process"
    with open(out / "results.csv", newline="") as f:
        assert [r["finish_ns"] for r in csv.DictReader(f)] == ["6246", "7246"]


def test_a_float_zero_start_is_not_taken_for_the_default(tmp_path, capsys):
    # 0.0 is refused by the loader (the clock ticks in whole ns): it stays a point of its own
    sweep = _two_jobs_sweep(tmp_path, "[null, 0.0]")
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("2 points")
