"""A fourteenth hunt for inputs that ran as something other than what they say: each is now
refused before the run in one line naming the file, the field and the fix, or runs with a
warning that says what it changes."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from simpy_astra.cli.main import main
from tests.test_hostile_hunt7 import SCENARIOS, _error_lines

DEFAULT = yaml.safe_load((SCENARIOS / "default.yaml").read_text())


def _write(tmp_path: Path, doc: dict, name: str = "s.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def test_a_path_from_the_home_folder_written_with_a_tilde_gets_the_full_path(tmp_path, capsys):
    # 'workload: ~/traces/step' looked for SCENARIO_FOLDER/~/traces/step.0.et and said that
    # file did not exist; ~ is the shell's, and no shell reads a scenario
    doc = dict(DEFAULT, workload="~/traces/step")
    path = _write(tmp_path, doc)
    home = os.path.expanduser("~/traces/step")
    assert _error_lines(capsys, ["run", path, "--quiet"]) == [
        f"error: {path}: field 'workload' is ~/traces/step, but ~ means the home folder only to a shell; a "
        f"scenario's relative paths resolve from its own folder: write {home}"]
    # a job's, and the network's, alike
    jobs = dict(DEFAULT, network="~/net.yml")
    assert "field 'network' is ~/net.yml, but ~ means" in _error_lines(capsys, ["run", _write(tmp_path, jobs)])[0]
    # a folder named ~ beside the scenario is what the path names
    (tmp_path / "~").mkdir()
    prefix = SCENARIOS / DEFAULT["workload"]
    for rank in range(8):
        (tmp_path / "~" / f"step.{rank}.et").write_bytes(Path(f"{prefix}.{rank}.et").read_bytes())
    doc["network"] = DEFAULT["network"]
    assert main(["run", _write(tmp_path, dict(doc, workload="~/step")), "--quiet"]) == 0
