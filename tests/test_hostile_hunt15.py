"""A fifteenth hunt for inputs that ran as something other than what they say: each is now
refused before the run in one line naming the file, the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest  # noqa: F401 (later cases)
import yaml

from simpy_astra.cli.main import main
from tests.test_hostile_hunt7 import SCENARIOS, _error_lines

DEFAULT = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
SMALL = ["--num-stacks", "1", "--dmodel", "64", "--dff", "64", "--head", "4", "--batch", "8"]


def _write(tmp_path: Path, doc: dict, name: str = "s.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def _base(tmp_path: Path) -> str:
    """The default scenario, its workload's path made absolute, as a sweep's base."""
    return _write(tmp_path, dict(DEFAULT, workload=str(SCENARIOS / DEFAULT["workload"])), "base.yaml")


def test_a_transformer_of_one_npu_is_refused_after_its_other_flags(tmp_path, capsys):
    # generate transformer at its default dp 1 wrote w.0.et, which no run takes (every network
    # has 2 or more NPUs); a bad flag beside it is still the one told
    argv = ["generate", "transformer", *SMALL, "--output", str(tmp_path / "t" / "w")]
    assert _error_lines(capsys, argv) == [
        "error: generate transformer: --dp x --tp x --pp x --sp is 1 NPU, and no run takes a 1-NPU trace (every "
        "network has 2 or more NPUs); give --dp 2 or more (or --tp, --pp)"]
    assert not (tmp_path / "t").exists()
    assert "'micro_batch' (3) must divide batch (8)" in _error_lines(capsys, [*argv, "--micro-batch", "3"])[0]
    assert main([*argv, "--tp", "2"]) == 0
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["w.0.et", "w.1.et", "w.json"]
