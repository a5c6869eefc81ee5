"""A sweep's console in a pipe, as a researcher reads it.

Complaint: each piped progress line showed a point's values without their axes
(``sweep: 3 of 8 points done; 2 4 False: ...``), virtual pipelining off read ``False``, and the
summary's headers were the flags' long names, so the table of a three-axis Megatron sweep came
in three pieces with the answer in the middle one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.main import main as cli_main
from simpy_astra.sweep.spec import load_sweep

# a 4-layer model on 16 GPUs: a point runs in a fraction of a second
SMALL = ("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 512 --micro-batch-size 1 "
         "--global-batch-size 16 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --bf16")


pytestmark = pytest.mark.usefixtures("own_cache")


def _sweep(tmp_path: Path, axes: dict) -> str:
    base = {"workload": {"generate": "megatron", "args": SMALL}, "cluster": {"preset": "dgx-a100-80gb", "gpus": 16}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"base": base, "axes": axes}, sort_keys=False))
    return str(path)


LAYOUT_AXES = {"workload.args.tensor-model-parallel-size": [2, 4],
               "workload.args.pipeline-model-parallel-size": [2],
               "workload.args.virtual-pipeline-model-parallel-size": [False, 2]}


def test_each_piped_progress_line_names_its_axes_compactly_within_80_columns(tmp_path, capsys):
    code = cli_main(["sweep", _sweep(tmp_path, LAYOUT_AXES), "--out", str(tmp_path / "out"), "--jobs", "1",
                     "--no-plots"])
    captured = capsys.readouterr()
    err = captured.err + captured.out  # the summary, then the answer (stdout)
    assert code == 0 and "Traceback" not in err
    done = [ln for ln in err.splitlines() if ln.startswith("sweep: ")]
    assert [ln.split("; ", 1)[1].split(":")[0] for ln in done] == \
        ["tp=2 pp=2 vp=off", "tp=2 pp=2 vp=2", "tp=4 pp=2 vp=off", "tp=4 pp=2 vp=2"]
    assert all(len(ln) <= 80 for ln in err.splitlines() if str(tmp_path) not in ln)  # a path is never cut
    assert "\x1b" not in err and "False" not in err
    # the summary's table is one piece: its header names the axes as the progress lines do
    header = next(ln for ln in err.splitlines() if ln.startswith("#"))
    assert header.split()[:4] == ["#", "tp", "pp", "vp"] and "iteration_time_ns" in header
    assert any(ln.startswith("best: tp=") and "vp=" in ln for ln in err.splitlines())


def test_list_names_points_as_the_progress_does(tmp_path, capsys):
    assert cli_main(["sweep", _sweep(tmp_path, LAYOUT_AXES), "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [ln.split()[1:] for ln in listed[1:]] == [["tp=2", "pp=2", "vp=off"], ["tp=2", "pp=2", "vp=2"],
                                                     ["tp=4", "pp=2", "vp=off"], ["tp=4", "pp=2", "vp=2"]]


def test_a_short_name_is_a_name_in_expressions_and_the_flag_name_stays_one(tmp_path):
    spec = load_sweep(_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2, 4],
                                        "workload.args.micro-batch-size": {"values": [1, 2], "as": "micro"}}))
    assert [a.name for a in spec.axes] == ["tp", "micro"]  # as: wins
    path = Path(_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2, 4]}))
    doc = yaml.safe_load(path.read_text())
    for constraint in ("tp <= 2", "tensor_model_parallel_size <= 2"):
        path.write_text(yaml.safe_dump({**doc, "constraints": [constraint]}))
        assert sorted(p.coordinates["workload.args.tensor-model-parallel-size"]
                      for p in load_sweep(str(path)).points()) == [1, 2]


def test_a_short_name_another_axis_has_keeps_the_flag_name(tmp_path):
    spec = load_sweep(_sweep(tmp_path, {"tp": {"named": {"a": {"workload.args.micro-batch-size": 1}}},
                                        "workload.args.tensor-model-parallel-size": [1, 2]}))
    assert [a.name for a in spec.axes] == ["tp", "tensor_model_parallel_size"]


def test_the_summary_is_printed_before_the_plots_are_drawn(tmp_path, capsys, monkeypatch):
    """Drawing the plots (matplotlib's import alone is 0.6 to 0.8 s) took longer than a small
    sweep's points, and the answer waited for it; now the summary comes first."""
    from simpy_astra.sweep import plots

    seen = []
    monkeypatch.setattr(plots, "write_plots", lambda *a, **k: seen.append(capsys.readouterr().out) or [])
    code = cli_main(["sweep", _sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [2, 4]}), "--out",
                     str(tmp_path / "out"), "--jobs", "1"])
    assert code == 0 and len(seen) == 1
    assert "best: tp=" in seen[0] and "step " in seen[0]  # the winner and its answer (stdout), already printed
    assert capsys.readouterr().err.startswith("wrote ")  # only the closing line after the plots


def test_a_point_whose_named_axes_do_not_fit_keeps_every_value():
    """The quick sweep's points named in full (``bandwidth=50 all_reduce_implementation=ring
    splits=4 backend=congestion_unaware``) are wider than the line: a word value then says itself
    and no axis is cut off."""
    import io

    from simpy_astra.report.console import PLAIN_WIDTH
    from simpy_astra.sweep.runner import Finished, _PlainProgress

    stream = io.StringIO()
    progress = _PlainProgress(stream)
    progress.add_task("sweep", total=36, last=None)
    named = "bandwidth=50 all_reduce_implementation=ring splits=4 backend=congestion_unaware"
    progress.update(0, advance=1, last=Finished(named, "125,756 ns", True, "bandwidth=50 ring splits=4 congestion_unaware"))
    progress.update(0, advance=1, last=Finished("tp=4 pp=2 vp=off", "32,815,460 ns", True, "tp=4 pp=2 vp=off"))
    assert stream.getvalue().splitlines() == [
        "sweep: 1/36 done; bandwidth=50 ring splits=4 congestion_unaware: 125,756 ns",
        "sweep: 2/36 done; tp=4 pp=2 vp=off: 32,815,460 ns"]
    assert all(len(line) <= PLAIN_WIDTH for line in stream.getvalue().splitlines())


def test_terse_names_drop_only_a_word_values_axis_name(tmp_path):
    spec = load_sweep(_sweep(tmp_path, {**LAYOUT_AXES, "workload.args.recompute-granularity": ["selective", "full"]}))
    point = spec.points()[0]
    assert point.label == "tp=2 pp=2 vp=off recompute=selective"
    assert point.terse == "tp=2 vp=off selective"  # pp, of one value, left out


def test_terse_names_leave_out_an_axis_of_one_value(tmp_path):
    """An axis of one value tells no point from another: the short form (a line too narrow for
    the whole) leaves it out; the whole label keeps it."""
    spec = load_sweep(_sweep(tmp_path, {**LAYOUT_AXES, "workload.args.recompute-granularity": ["selective"]}))
    point = spec.points()[0]
    assert point.label == "tp=2 pp=2 vp=off recompute=selective"
    assert point.terse == "tp=2 vp=off"


def test_a_sweep_of_invalid_points_prints_no_empty_table_and_a_short_error(tmp_path, capsys):
    """It printed 'best 0 by finish_ns' over bare headers, and an error of 420 characters that
    repeated the sweep file, the first point and Megatron's whole reason, which the lines
    above it and results.csv already give."""
    path = _sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [3, 5]})
    assert cli_main(["sweep", path, "--out", str(tmp_path / "out"), "--no-plots"]) == 4
    err = capsys.readouterr().err.splitlines()
    assert not any(line.startswith("best 0") or line.split()[:1] == ["tp"] for line in err)
    assert [line for line in err if line.startswith("invalid")] == [
        "invalid: 2 points break the rule 'gpus divisible by tp x pp x cp', e.g. tp=3"]
    (error,) = [line for line in err if line.startswith("error: ")]
    assert error.count(path) == 1 and "'gpus divisible by tp x pp x cp'" in error
    assert len(error) - len(path) < 200, error


def test_a_plots_bar_label_says_off_as_the_console_does(tmp_path):
    from simpy_astra.sweep.best import Outcome
    from simpy_astra.sweep.plots import _label

    spec = load_sweep(_sweep(tmp_path, LAYOUT_AXES))
    point = spec.points()[0]
    assert _label(Outcome(point, {"status": "ok"})) == "2 2 off"


def test_a_column_of_fractions_gets_a_third_decimal(tmp_path):
    """MFUs of 0.103, 0.101 and 0.099 all read 0.10 in the summary, so rows ranked apart looked
    tied; a column whose every figure is below 1 now has three decimals, the others two."""
    import io

    from simpy_astra.report.console import Output
    from simpy_astra.sweep.best import Outcome, best_summary
    from simpy_astra.sweep.summary import print_summary

    spec = load_sweep(_sweep(tmp_path, {"workload.args.tensor-model-parallel-size": [1, 2, 4]}))
    done = [Outcome(p, {"status": "ok", "finish_ns": t, "iteration_time_ns": t, "tflops_per_gpu": tf, "mfu": m,
                        "memory_per_gpu_gib": 40.0, "wall_s": 1.5, "fits": 1})
            for p, t, tf, m in zip(spec.points(), (10, 11, 12), (32.29, 31.66, 30.95), (0.1034, 0.1014, 0.0992),
                                   strict=True)]
    text = io.StringIO()
    print_summary(spec, done, best_summary(spec, done, 3), Output(text, rich=False), 1.0)
    lines = text.getvalue().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("best 3"))
    header = lines[at + 1].split()
    rows = [line.split() for line in lines[at + 2:at + 5]]
    assert [r[header.index("mfu")] for r in rows] == ["0.103", "0.101", "0.099"]
    assert [r[header.index("tflops_per_gpu")] for r in rows] == ["32.29", "31.66", "30.95"]
