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


def _rewritten(out, edit) -> None:
    """results.csv with ``edit`` made to its rows, each row's digest made again (as an earlier
    version's sweep would have written it)."""
    from simpy_astra.sweep.result_row import DIGEST_COLUMN, row_digest

    with open(out / "results.csv", newline="") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames, list(reader)
    edit(rows)
    for row in rows:
        row[DIGEST_COLUMN] = row_digest(row)
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, header)
        writer.writeheader()
        writer.writerows(rows)


def test_a_null_coordinate_is_written_null_and_an_empty_cell_is_not_its_value(tmp_path, capsys):
    # before: a null coordinate was an empty cell in results.csv, as a figure a point has not,
    # while the summary and every label say null. A folder an earlier version wrote so is
    # refused as another simulator's (sweep.json), so the empty cell was read as null only in
    # a file edited by hand, digest and all: it is refused as any edited coordinate is
    import json

    sweep = _two_jobs_sweep(tmp_path, "[null, 1000]")
    out = tmp_path / "out"
    assert main(["sweep", sweep, "--out", str(out)]) == 0
    with open(out / "results.csv", newline="") as f:
        assert [r["jobs.1.start_ns"] for r in csv.DictReader(f)] == ["null", "1000"]
    manifest = json.loads((out / "sweep.json").read_text())
    _rewritten(out, lambda rows: rows[0].update({"jobs.1.start_ns": ""}))
    capsys.readouterr()
    assert main(["sweep", sweep, "--out", str(out)]) == 2
    assert "line 2: jobs.1.start_ns: '' is not the value of its key" in capsys.readouterr().err
    (out / "sweep.json").write_text(json.dumps({**manifest, "simulator": {**manifest["simulator"],
                                                                          "source_sha256": "0" * 64}}))
    assert main(["sweep", sweep, "--out", str(out)]) == 2  # an earlier version's folder
    assert "were made by another simulator" in capsys.readouterr().err


def test_a_switch_coordinate_is_written_as_the_sweep_file_and_labels_write_it(tmp_path, capsys):
    # before: True and False, Python's words, where the sweep file, the labels and the summary
    # say true and false (and a null, null)
    from tests.scenario_files import megatron_sweep

    sweep = megatron_sweep(tmp_path, {"workload.args.use-distributed-optimizer": [True, False]})
    out = tmp_path / "out"
    assert main(["sweep", sweep, "--out", str(out), "--no-plots"]) == 0
    with open(out / "results.csv", newline="") as f:
        assert [(r["workload.args.use-distributed-optimizer"], r["status"]) for r in csv.DictReader(f)] == [
            ("true", "ok"), ("false", "ok")]
    _rewritten(out, lambda rows: rows[0].update({"workload.args.use-distributed-optimizer": "True"}))
    assert main(["sweep", sweep, "--out", str(out), "--no-plots"]) == 2  # one writing, as for any value
    assert "'True' is not the value of its key" in capsys.readouterr().err


def test_a_float_zero_start_is_not_taken_for_the_default(tmp_path, capsys):
    # 0.0 is refused by the loader (the clock ticks in whole ns): it stays a point of its own
    sweep = _two_jobs_sweep(tmp_path, "[null, 0.0]")
    assert main(["sweep", sweep, "--list"]) == 0
    assert capsys.readouterr().out.startswith("2 points")
