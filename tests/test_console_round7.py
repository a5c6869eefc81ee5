"""The researcher's console, round 7: the README's tour and docs/reports.md, docs/sweeps.md
run in a pipe and on a terminal at COLUMNS 60 and 80."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main
from tests.scenario_files import megatron_sweep

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


@pytest.fixture(autouse=True)
def _quiet_progress(monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")


def test_the_summarys_headline_is_within_a_narrow_pipes_width(monkeypatch, capsys):
    # at COLUMNS=60 the stderr summary's last line, the run's answer, was 69 columns: its
    # wording was chosen for 80 whatever the width
    monkeypatch.setenv("COLUMNS", "60")
    assert main(["run", str(SCENARIOS / "default.yaml")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == "iteration time 142,780 ns (last to finish: NPU 0 of 8)"
    assert max(len(line) for line in err) <= 60


def test_a_quiet_runs_headline_keeps_its_exposed_comm_where_80_columns_hold_it(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["run", str(SCENARIOS / "default.yaml"), "--quiet"]) == 0
    assert capsys.readouterr().out == "iteration time 142,780 ns (last: NPU 0 of 8, exposed comm 117,780 ns)\n"


def test_a_large_runs_notes_of_npus_not_shown_are_within_a_narrow_pipes_width(tmp_path, monkeypatch, capsys):
    # 64 NPUs on a ring: the timeline and the summary show 16; the timeline's note of the rest
    # was 64 columns at COLUMNS=60
    monkeypatch.setenv("COLUMNS", "60")
    doc = yaml.safe_load((SCENARIOS / "default.yaml").read_text())
    doc["workload"] = {"generate": "microbench", "collective": "all_reduce", "size": 1048576, "num_npus": 64}
    doc["network"]["npus_count"] = [64]
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(doc))
    assert main(["run", str(scenario)]) == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "NPUs not shown; --trace-out --trace-npus LIST shows" in err
    assert max(len(line) for line in err.splitlines()) <= 60


def test_a_sweeps_last_lines_name_its_plots_within_a_narrow_pipes_width(tmp_path, monkeypatch, capsys):
    # 'wrote DIR/results.csv and DIR/best.json in 2.6 s' (62 columns at COLUMNS=60) said nothing
    # of the four plots beside them, and 'N point(s) warned: ...' was 64 columns
    monkeypatch.setenv("COLUMNS", "60")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": str(SCENARIOS / "default.yaml"),
                                     "axes": {"network.bandwidth": [50, 100]}, "minimise": "finish_ns"}))
    out = tmp_path / "o"
    assert main(["sweep", str(sweep), "--out", str(out), "--jobs", "1"]) == 0
    lines = capsys.readouterr().err.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"wrote {out}/results.csv"))
    said = " ".join(" ".join(lines[at:]).split()).removeprefix(f"wrote {out}/results.csv and {out}/best.json ")
    plots = sorted(p.name for p in out.glob("*.png"))
    assert plots and said.startswith(f"and {len(plots)} plots (") and all(name in said for name in plots)
    assert max(len(line) for line in lines if str(out) not in line) <= 60  # (a path stays whole, for grep)


def test_a_sweeps_objective_stays_in_the_first_table_and_its_best_line_keeps_the_expression_whole(
        tmp_path, monkeypatch, capsys):
    # cost_topology reports [finish_ns, cost_usd, finish_ns * cost_usd] and minimises the last:
    # at COLUMNS=60 the column that orders the rows went to the table below the coordinates,
    # and its best line broke 'finish_ns *' from 'cost_usd = ...'
    monkeypatch.setenv("COLUMNS", "60")
    out = tmp_path / "o"
    assert main(["sweep", str(SCENARIOS / "sweeps" / "cost_topology.yaml"), "--out", str(out), "--no-plots"]) == 0
    captured = capsys.readouterr()
    best = captured.out.splitlines()
    assert best[0].startswith("best: fabric=") and best[1].startswith("  -> finish_ns * cost_usd = ")
    err = captured.err.splitlines()
    first = err.index("best 12 by finish_ns * cost_usd")
    assert err[first + 1].split() == ["#", "fabric", "bandwidth", "finish_ns", "*", "cost_usd"]
    below = err.index("best 12 by finish_ns * cost_usd (continued)")
    assert err[below + 1].split() == ["#", "finish_ns", "cost_usd"]
    # each row's objective is the product of its figures in the table below
    for row, rest in zip(err[first + 2:first + 14], err[below + 2:below + 14], strict=True):
        finish, cost = (int(v.replace(",", "")) for v in rest.split()[1:])
        assert int(row.split()[-1].replace(",", "")) == finish * cost


def test_lists_count_and_rule_lines_are_within_a_narrow_pipes_width(monkeypatch, capsys):
    # megatron_layouts --list at COLUMNS=60: its first line was 72 columns, its rule's 67
    monkeypatch.setenv("COLUMNS", "60")
    assert main(["sweep", str(SCENARIOS / "sweeps" / "megatron_layouts.yaml"), "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 60
    assert lines[0].startswith("24 points, 8 invalid ")
    assert lines[-2:] == ["invalid: 8 point(s) break the rule", "  'gpus divisible by tp x pp x cp'"]


def test_a_megatron_sweeps_lines_are_within_a_narrow_pipes_width(tmp_path, monkeypatch, capsys):
    # megatron_layouts at COLUMNS=60: the best point's step line was 72 columns, the line of
    # points that do not fit 76, "0 already in DIR/results.csv; 8 invalid, not run" 66, and the
    # rule broke as 'gpus divisible by tp x pp' / 'x cp'
    monkeypatch.setenv("COLUMNS", "60")
    sweep = megatron_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2, 3],
                                      "workload.args.micro-batch-size": [1, 2]},
                           cluster={"preset": "dgx-a100-80gb", "gpus": 16}, memory_cap_gb=1.5)
    out = tmp_path / "a-folder-named-at-some-length" / "out"
    assert main(["sweep", sweep, "--out", str(out), "--no-plots", "--jobs", "1"]) == 0
    captured = capsys.readouterr()
    best = captured.out.splitlines()
    assert max(len(line) for line in best) <= 60
    assert any(re.search(r"^    [\d.]+ of 80 GiB \(fits\)$|, [\d.]+ of 80 GiB \(fits\)$", line) for line in best), best
    err = captured.err.splitlines()
    assert max(len(line) for line in err if str(out) not in line) <= 60
    assert f"0 already in {out}/results.csv" in err and "  2 invalid, not run" in err
    assert any("'gpus divisible by tp x pp x cp'" in line for line in err)


def test_the_overview_is_within_a_narrow_terminals_width(monkeypatch, capsys):
    # 'simpy-astra --help' at COLUMNS=60: its prose and command lines were written for 80 (75 to
    # 80 columns); argparse's own part below wraps to the width
    monkeypatch.setenv("COLUMNS", "60")
    assert main(["--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    overview = lines[:lines.index("ASTRA-sim's flag form (its binary's flags: scripts switch by")]
    assert max(len(line) for line in overview) <= 60
    at = overview.index("commands:")
    assert overview[at + 1].split()[:2] == ["run", "SCENARIO.yaml"]
    assert " ".join(" ".join(overview[at + 1:at + 3]).split()) == "run SCENARIO.yaml simulate a scenario (the default)"
