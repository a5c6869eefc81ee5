"""``points/KEY.yaml`` of a sweep whose own modules sit beside its files: ``run`` looks for a
module in the working directory and beside the scenario it runs (``points/``), so a point file
says where its modules are, and run from there (or with them on PYTHONPATH) it reproduces the
point's row."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys

import yaml

from tests.test_sweep import DEFAULT, ROOT, STEP, cli, write_sweep

#: examples/my_algos.py under a name of this test's own: other tests leave folders holding a
#: my_algos.py on sys.path, where the sweep would find it first
MODULE = "point_file_algos"


def _run_point(point: str, cwd, extra_path: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, SIMPY_ASTRA_PROGRESS="0")
    if extra_path:
        env["PYTHONPATH"] = extra_path
    return subprocess.run([sys.executable, "-m", "simpy_astra", "run", point, "--quiet"], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=300)


def test_a_point_file_says_where_its_modules_are_and_runs_from_there(tmp_path, capsys, monkeypatch):
    here, elsewhere = tmp_path / "study", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    shutil.copy(ROOT / "examples" / "my_algos.py", here / f"{MODULE}.py")
    base = yaml.safe_load(DEFAULT.read_text())
    base["workload"] = str(STEP)
    base["system"]["all-reduce-implementation"] = [f"{MODULE}:simple_ring"]
    sweep = write_sweep(here, {"base": base, "axes": {"network.bandwidth": [50]}})
    monkeypatch.chdir(elsewhere)  # the sweep finds the module beside its file
    out = tmp_path / "out"
    code, err = cli(capsys, sweep, "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 0, err
    (row,) = list(csv.DictReader(open(out / "results.csv", encoding="utf-8")))
    (point,) = (out / "points").glob("*.yaml")
    assert f"# its modules are in {here}: run it from there, or with PYTHONPATH={here}\n" in point.read_text()
    assert f"cannot import plugin module '{MODULE}'" in _run_point(str(point), elsewhere).stderr
    for cwd, extra in ((here, ""), (elsewhere, str(here))):
        done = _run_point(str(point), cwd, extra)
        assert done.returncode == 0, done.stderr
        assert f"{int(row['finish_ns']):,}" in done.stdout + done.stderr


def test_a_point_file_of_modules_in_the_working_directory_has_no_such_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "examples" / "my_algos.py", tmp_path / "my_algos.py")
    base = yaml.safe_load(DEFAULT.read_text())
    base["workload"] = str(STEP)
    base["system"]["all-reduce-implementation"] = ["my_algos:simple_ring"]
    sweep = write_sweep(tmp_path, {"base": base, "axes": {"network.bandwidth": [50]}})
    assert cli(capsys, sweep, "--out", str(tmp_path / "out"), "--jobs", "1", "--no-plots")[0] == 0
    (point,) = (tmp_path / "out" / "points").glob("*.yaml")
    assert "its modules are in" not in point.read_text()
