"""An eleventh hunt for inputs that ran as something other than what they say, or were refused in
words that sent the user elsewhere: each is now refused (or shown) before the run in one line
naming the file (or flag), the field and the fix."""

from __future__ import annotations

import pytest

from simpy_astra.cli.main import main
from tests.test_hostile_hunt7 import ARGS, SCENARIOS, _error_lines  # noqa: F401 (ARGS: later cases)


@pytest.mark.parametrize("argv, flag", [
    (["run", str(SCENARIOS / "default.yaml"), "--quiet", "--json-out", "a.json", "--json-out", "b.json"], "--json-out"),
    (["run", str(SCENARIOS / "default.yaml"), "--quiet", "--network-backend=packet", "--network-backend",
      "congestion_aware"], "--network-backend"),
    (["generate", "microbench", "--collective", "all_reduce", "--size", "1024", "--num-npus", "8", "--num-npus", "4",
      "--output", "t/ar"], "--num-npus"),
])
def test_a_flag_given_twice_is_refused_not_silently_replaced(tmp_path, capsys, monkeypatch, argv, flag):
    # argparse kept the later value: the run wrote b.json only, or ran on congestion_aware, or
    # generated 4 traces, and the earlier value vanished without a word
    monkeypatch.chdir(tmp_path)
    err = _error_lines(capsys, argv)
    assert len(err) == 1 and err[0].startswith("error: simpy-astra "), err
    assert f": {flag}: given twice; give it once" in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_a_switch_given_twice_and_a_repeatable_flag_still_run(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(SCENARIOS / "default.yaml"), "--quiet", "--quiet"]) == 0
    # the default scenario's step, 142,780 ns (tests/test_cli.py derives it)
    assert "iteration time 142,780 ns" in capsys.readouterr().out


NCCL = SCENARIOS.parent / "tests" / "data" / "nccl" / "dgx-a100-superbench"


@pytest.mark.parametrize("argv", [
    ["calibrate", str(NCCL / "all_reduce.log"), "--network", str(NCCL / "network.yml"), "--out", "-"],
    ["sweep", str(SCENARIOS / "sweeps" / "quick.yaml"), "--out", "-"],
])
def test_a_dash_for_an_output_folder_is_not_taken_as_a_folder_named_dash(tmp_path, capsys, monkeypatch, argv):
    # '--out -' (stdout to many tools) fitted or swept and wrote network.yml (results.csv) into
    # a folder named '-'; run's outputs refuse it since the eighth hunt
    monkeypatch.chdir(tmp_path)
    err = _error_lines(capsys, argv)
    assert err == ["error: --out: '-' would be a folder named '-' here, not stdout (stdout carries the answer); "
                   "give a folder path"], err
    assert not (tmp_path / "-").exists()
