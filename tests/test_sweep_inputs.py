"""A sweep sees what it ran on: an input edited while the points run stops the sweep, naming
the file, before a row made from other contents is saved beside the earlier ones."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "scenarios" / "default.yaml"
STEP = ROOT / "scenarios" / "workloads" / "step_8npus_1MB" / "step"

#: a generator that, in point 2, edits the sweep's network file (as a user might mid-sweep)
EDITING_PLUGIN = textwrap.dedent('''
    import glob, shutil
    from simpy_astra.workloads import generated

    def _generate(params, prefix):
        if params["n"] == 2:
            with open(params["net"], "a") as f:
                f.write("# edited while the sweep ran\\n")
        for src in glob.glob({step!r} + ".*.et"):
            shutil.copy(src, prefix + src[len({step!r}):])

    generated.GENERATORS["editing"] = generated.GeneratorEntry(_generate, "1")
''')


def _editing_sweep(tmp_path: Path) -> tuple[Path, Path]:
    """A sweep of four points whose second one appends a line to the sweep's network file."""
    (tmp_path / "plug").mkdir()
    (tmp_path / "plug" / "editing_plugin.py").write_text(EDITING_PLUGIN.format(step=str(STEP)))
    base = yaml.safe_load(DEFAULT.read_text())
    net = tmp_path / "net.yml"
    net.write_text(yaml.safe_dump(base.pop("network")))
    base.update(network=str(net), plugins=["editing_plugin"],
                workload={"generate": "editing", "n": 0, "net": str(net)})
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": base, "axes": {"workload.n": [1, 2, 3, 4]}}))
    return sweep, net


def test_an_input_edited_mid_sweep_stops_it_naming_the_file(tmp_path):
    sweep, net = _editing_sweep(tmp_path)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path / "plug")]),
           "SIMPY_ASTRA_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "sweep", str(sweep), "--out", str(out),
                           "--jobs", "1", "--no-plots"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "net.yml: changed while the sweep ran" in errors[0], done.stderr
    rows = (out / "results.csv").read_text().splitlines()
    assert len(rows) == 2  # the header and point 1: point 2 ran on the edited file and is not saved


def test_a_point_is_judged_by_its_inputs_when_it_ended_not_when_the_sweep_saves_it(tmp_path, monkeypatch):
    """The sweep's process may take its time over point 1 (a loaded machine) while the worker
    already runs point 2, which edits the file: point 1 ended on the starting contents and is
    kept; point 2 ended on other contents and is not. Checking at save time refused point 1."""
    from simpy_astra.report.console import Output
    from simpy_astra.sweep.inputs import InputSnapshot
    from simpy_astra.sweep.runner import run_local
    from simpy_astra.sweep.spec import load_sweep

    sweep, net = _editing_sweep(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path / "plug"))
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    spec = load_sweep(str(sweep))
    points = spec.points()[:2]
    inputs = InputSnapshot.take(spec.named_files())
    assert str(net) in inputs.digests
    seen: list[tuple[int, list[str]]] = []

    def on_result(point, figures, changed) -> None:
        assert figures["status"] == "ok", figures
        n = point.coordinates["workload.n"]
        if n == 1:  # hold the sweep's process until point 2 has edited the file
            deadline = time.monotonic() + 300
            while "edited while the sweep ran" not in net.read_text():
                assert time.monotonic() < deadline, "point 2 never edited the file"
                time.sleep(0.05)
        seen.append((n, changed))

    outcome = run_local(points, 1, inputs, on_result, Output(io.StringIO()))
    assert not outcome.interrupted
    assert seen == [(1, []), (2, [str(net)])]


# ------------------------------------------------------------------------------ a full disk
def _sweep_under_file_size_limit(tmp_path: Path, out: Path, limit_bytes: int | None) -> subprocess.CompletedProcess:
    """The sweep in a child whose files may not grow past ``limit_bytes`` (RLIMIT_FSIZE: a
    write past it fails with EFBIG, as one on a full disk fails with ENOSPC; Python ignores the
    SIGXFSZ that comes with it). Portable where setrlimit is, no file system to fill."""
    import resource

    def limit() -> None:
        if limit_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": str(DEFAULT),
                                     "axes": {"network.bandwidth": [10 * i for i in range(1, 61)]}}))
    env = {**os.environ, "SIMPY_ASTRA_CACHE": str(tmp_path / "cache"), "SIMPY_ASTRA_PROGRESS": "0"}
    return subprocess.run([sys.executable, "-m", "simpy_astra", "sweep", str(sweep), "--out", str(out),
                           "--jobs", "1", "--no-plots"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600, preexec_fn=limit)


def _one_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr
    return errors[0]


def test_a_full_disk_before_the_points_run_is_one_line_and_leaves_no_lock(tmp_path):
    out = tmp_path / "out"
    done = _sweep_under_file_size_limit(tmp_path, out, 100)  # sweep.json is larger
    line = _one_error(done)
    assert f"cannot write {out / 'sweep.json'} (File too large)" in line, line
    assert sorted(p.name for p in out.iterdir()) == []  # no sweep.lock, no sweep.json.tmp


def test_a_disk_that_fills_up_mid_sweep_keeps_the_rows_saved_and_leaves_no_lock(tmp_path):
    """The limit lies between the largest other file a sweep writes and the results.csv it
    would finish with (both measured on the same sweep without a limit): results.csv stops
    growing part way, the rows before are whole, and the lock file is gone."""
    free = tmp_path / "free"
    assert _sweep_under_file_size_limit(tmp_path, free, None).returncode == 0
    assert not (free / "sweep.lock").exists()  # a finished sweep removes its lock too
    written = [p for p in (*free.rglob("*"), *(tmp_path / "cache").rglob("*")) if p.is_file()]
    limit = max(p.stat().st_size for p in written if p.name != "results.csv") + 64
    assert (free / "results.csv").stat().st_size > limit  # the precondition of this case
    out = tmp_path / "out"
    line = _one_error(_sweep_under_file_size_limit(tmp_path, out, limit))
    assert f"cannot write {out / 'results.csv'} (File too large)" in line, line
    assert not (out / "sweep.lock").exists() and not list(out.glob("*.tmp"))
    text = (out / "results.csv").read_text()
    assert text.endswith("\n") and len(text) <= limit
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(text)))
    assert 0 < len(rows) < 60 and all(r["status"] == "ok" for r in rows)
    again = _sweep_under_file_size_limit(tmp_path, out, None)  # room again: the rest runs
    assert again.returncode == 0, again.stderr
    assert f"{len(rows)} already in" in again.stderr
