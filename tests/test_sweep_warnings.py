"""A sweep point keeps the warnings its run gave (results.csv's ``warnings`` column, the summary's
count); a folder written before the column existed still resumes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.sweep import main as sweep_main

# a 4-layer model on 16 GPUs asking for sequence parallelism: at tp 1 Megatron's validate_args
# prints "Disabling sequence parallelism because tensor model parallelism is disabled" and runs
# without it (megatron/training/arguments.py); at tp 2 it keeps it, and says nothing
SMALL = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --micro-batch-size 1 "
         "--global-batch-size 32 --bf16 --sequence-parallel")
MEGATRON_WORDS = "Disabling sequence parallelism because tensor model parallelism is disabled"


pytestmark = pytest.mark.usefixtures("own_cache")


def _sweep(tmp_path: Path) -> str:
    doc = {"base": {"workload": {"generate": "megatron", "args": SMALL},
                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}},
           "axes": {"workload.args.tensor-model-parallel-size": [1, 2]}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def _rows(out: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(out / "results.csv", newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def test_a_point_that_warned_keeps_its_warning_and_the_summary_counts_it(tmp_path, capsys):
    out = tmp_path / "out"
    assert sweep_main([_sweep(tmp_path), "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    err = capsys.readouterr().err
    header, rows = _rows(out)
    assert header[header.index("error") + 1] == "warnings"
    by_tp = {r["workload.args.tensor-model-parallel-size"]: r for r in rows}
    assert by_tp["2"]["warnings"] == ""
    warned = by_tp["1"]["warnings"]
    assert MEGATRON_WORDS in warned and " | " not in warned  # one warning, on one line
    assert "\n" not in warned and "simpy-astra-point-" not in warned  # named as the sweep names the point
    assert str(tmp_path / "sweep.yaml") in warned
    line = next(x for x in err.splitlines() if "point(s) warned" in x)
    assert line == "1 point(s) warned: results.csv's warnings column has their words" and len(line) <= 80


def test_a_folder_from_before_the_warnings_column_resumes(tmp_path, capsys):
    """An interrupted sweep's folder written by a version without the column: its rows are read,
    only the missing point runs, and the file gains the column (old rows' cell empty)."""
    sweep, out = _sweep(tmp_path), tmp_path / "out"
    assert sweep_main([sweep, "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    header, rows = _rows(out)
    old = [c for c in header if c != "warnings"]
    kept = next(r for r in rows if r["workload.args.tensor-model-parallel-size"] == "2")
    with open(out / "results.csv", "w", newline="") as f:  # as the older version left it: one point done
        writer = csv.DictWriter(f, fieldnames=old, extrasaction="ignore")
        writer.writeheader()
        writer.writerow(kept)
    manifest = json.loads((out / "sweep.json").read_text())
    manifest["columns"] = old
    (out / "sweep.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert sweep_main([sweep, "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert "2 points, running 1 on" in err and "1 already in" in err
    header, rows = _rows(out)
    assert "warnings" in header and len(rows) == 2
    by_tp = {r["workload.args.tensor-model-parallel-size"]: r for r in rows}
    assert by_tp["2"]["wall_s"] == kept["wall_s"]  # the old row kept, not run again
    assert by_tp["2"]["warnings"] == "" and MEGATRON_WORDS in by_tp["1"]["warnings"]


@pytest.mark.parametrize("name", ["status", "warnings", "key", "finish_ns"])
def test_a_bundle_axis_named_as_a_column_of_results_csv_is_refused(tmp_path, name):
    """A bundle axis's key is its CSV column: one called status gave results.csv two columns of
    that name, and the sweep's second start refused its own file."""
    from simpy_astra.errors import InputError
    from simpy_astra.sweep.spec import load_sweep

    doc = {"base": str(Path(__file__).resolve().parents[1] / "scenarios" / "default.yaml"),
           "axes": {name: {"values": {"named": {"a": {"network.bandwidth": 50}, "b": {"network.bandwidth": 100}}},
                           "as": "fabric"}}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match=rf"^{path}: axes: {name}: results.csv has a column of that name"):
        load_sweep(str(path))


def test_the_columns_no_axis_may_take_are_those_the_store_writes_beside_axes_and_figures(tmp_path):
    from simpy_astra.sweep.result_names import RESULT_NAMES, ROW_COLUMNS
    from simpy_astra.sweep.spec import load_sweep
    from simpy_astra.sweep.store import ResultsStore

    spec = load_sweep(_sweep(tmp_path))
    store = ResultsStore(str(tmp_path / "out"), spec)
    store.close()
    assert set(store.columns) - {a.column for a in spec.axes} - set(RESULT_NAMES) == set(ROW_COLUMNS)


def test_a_points_cell_is_the_warning_lines_run_prints_for_it(tmp_path, capsys):
    """The bound check's warning (a direct all-reduce on the 4x4x4 torus at 50 GB/s finishes
    below its link-bandwidth floor; the ring does not), as run prints it for the point's own
    scenario (points/KEY.yaml), line by line."""
    from simpy_astra.cli.main import main

    root = Path(__file__).resolve().parents[1]
    doc = {"base": str(root / "scenarios" / "torus3d_all_reduce.yaml"),
           "axes": {"network.bandwidth": [50], "system.all-reduce-implementation": ["direct", "ring"],
                    "system.preferred-dataset-splits": [4], "backend": ["congestion_unaware"]}}
    sweep, out = tmp_path / "sweep.yaml", tmp_path / "out"
    sweep.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert sweep_main([str(sweep), "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    capsys.readouterr()
    _, rows = _rows(out)
    by_algorithm = {r["system.all-reduce-implementation"]: r for r in rows}
    assert by_algorithm["ring"]["warnings"] == ""
    row = by_algorithm["direct"]
    assert main(["run", str(out / "points" / f"{row['key']}.yaml")]) == 0
    printed = [line.removeprefix("warning: ") for line in capsys.readouterr().err.splitlines()
               if line.startswith("warning: ")]
    assert len(printed) >= 2 and "below its link-bandwidth floor" in printed[0]
    assert row["warnings"] == " | ".join(printed)
