"""The sweep's own lines fit 80 columns in a pipe: the stop line's advice and the note that no
point fits ran to 99 and 150 columns. A line naming a path stays whole (grep finds it), so the
advice after it goes on a line of its own."""

from __future__ import annotations

from pathlib import Path

import yaml

from simpy_astra.cli.sweep import main as sweep_main
from simpy_astra.report.console import Output
from simpy_astra.sweep import runner
from simpy_astra.sweep.point import run_point

DEFAULT = Path(__file__).resolve().parents[1] / "scenarios" / "default.yaml"
STEP = DEFAULT.parent / "workloads" / "step_8npus_1MB" / "step"


def _stopped_after_one(points, jobs, inputs, on_result, out, where=lambda p: p.key, close_fds=(), score=None,
                       best=None):
    """run_local stopped by Ctrl-C after its first point."""
    on_result(points[0], run_point(points[0].scenario, where(points[0])), [])
    return runner.RunOutcome(1, interrupted=True)


def test_a_stopped_sweep_says_so_within_80_columns(tmp_path, monkeypatch, capsys):
    base = {**yaml.safe_load(DEFAULT.read_text()), "workload": str(STEP)}  # runs from any folder
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump({"base": base, "axes": {"network.bandwidth": [25, 50]}}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "run_local", _stopped_after_one)
    assert sweep_main(["sweep.yaml", "--out", "a-ring-study/out", "--no-plots"]) == 130
    lines = capsys.readouterr().err.splitlines()
    assert all(len(line) <= 80 for line in lines), [line for line in lines if len(line) > 80]
    assert lines[-2:] == ["interrupted: 1 of 2 points saved in a-ring-study/out/results.csv",
                          "  run the same command again to finish the rest"]


def test_a_line_without_a_path_is_wrapped_within_80_columns_in_a_pipe(tmp_path):
    from simpy_astra.cli.sweep import _say

    path = tmp_path / "said.txt"
    with open(path, "w") as stream:
        _say(Output(stream, rich=False), "no finished point fits its GPU's memory (36 of 36 ran): best.json names "
             "no best; try more pipeline or tensor parallelism, recomputation or a smaller micro-batch")
    lines = path.read_text().splitlines()
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    assert " ".join(line.strip() for line in lines).endswith("recomputation or a smaller micro-batch")


def test_each_point_line_shows_the_figure_the_sweep_minimises(tmp_path, monkeypatch, capsys):
    """A sweep that minimises exposed communication said each point's finish time instead: the
    line now reads the objective as results.csv holds it (the figure the best is chosen by)."""
    import csv

    base = {**yaml.safe_load(DEFAULT.read_text()), "workload": str(STEP)}
    spec = {"base": base, "axes": {"network.bandwidth": [25, 50]}, "minimise": "exposed_comm_ns"}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(spec))
    monkeypatch.chdir(tmp_path)
    assert sweep_main(["sweep.yaml", "--out", "out", "--no-plots", "--jobs", "1"]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if " done; " in ln]
    with open(tmp_path / "out" / "results.csv") as f:
        rows = {row["network.bandwidth"]: row for row in csv.DictReader(f)}
    assert {r["exposed_comm_ns"] for r in rows.values()}.isdisjoint(r["finish_ns"] for r in rows.values())
    expected = [f"sweep: {i}/2 done; bandwidth={bw}: {int(rows[bw]['exposed_comm_ns']):,} ns"
                for i, bw in enumerate(("25", "50"), 1)]
    assert lines == expected and all(len(ln) <= 80 for ln in lines)


def test_a_point_too_large_shows_its_objective_and_is_never_ranked():
    from types import SimpleNamespace

    point = SimpleNamespace(label="tp=2", terse="")
    figures = {"status": "ok", "fits": 0, "finish_ns": 5}
    label = runner._label(point, figures, lambda p, f: (-0.25, "-mfu = -0.25"))
    assert (label.result, label.score) == ("-mfu = -0.25 (too large)", None)
