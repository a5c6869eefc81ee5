"""The researcher's console, round 4: a large sweep in a pipe, --quiet, and what the audit of
every scenario at 80 and 60 columns found."""

from __future__ import annotations

import io
from pathlib import Path

import yaml

from simpy_astra.report.console import PLAIN_WIDTH
from simpy_astra.sweep.runner import PLAIN_EVERY_S, PLAIN_POINT_LINES, Finished, _PlainProgress

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "scenarios" / "default.yaml"


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _point(i: int, ok: bool = True) -> Finished:
    score = (1000.0 - i, f"{1000 - i:,} ns") if ok else None
    return Finished(f"bandwidth={i}", f"{1000 - i:,} ns" if ok else "error", ok, score=score)


def test_a_large_sweep_in_a_pipe_prints_summary_lines_not_one_per_point():
    """Before: a 500-point sweep printed 500 lines into a log. Now a line at each tenth and the
    best so far when it changes; failures counted; every line within 80 columns."""
    stream, clock = io.StringIO(), _Clock()
    progress = _PlainProgress(stream, clock)
    progress.add_task("sweep", total=500, last=None)
    for i in range(1, 501):
        clock.now += 0.01
        progress.update(0, advance=1, last=_point(i, ok=i % 100 != 7))
    lines = stream.getvalue().splitlines()
    assert lines[0] == f"sweep: 500 points: a line at each tenth done and every {PLAIN_EVERY_S:.0f} s"
    counts = [ln for ln in lines if "/500 done" in ln]
    assert [ln.split()[1] for ln in counts] == [f"{50 * k}/500" for k in range(1, 10)]  # the end: the summary's
    assert counts[0] == "sweep: 50/500 done, 1 failed; 0:00:00 elapsed, eta 0:00:04"
    assert counts[-1].startswith("sweep: 450/500 done, 5 failed; ")
    best = [ln for ln in lines if ln.startswith("  best so far: ")]
    assert best[0] == "  best so far: bandwidth=50: 950 ns" and len(best) == 9
    assert len(lines) < 25 and all(len(ln) <= PLAIN_WIDTH for ln in lines)


def test_a_slow_large_sweep_in_a_pipe_still_says_how_far_it_is():
    """A point every 20 s: a tenth of 500 points is 17 minutes; a line comes every 30 s."""
    stream, clock = io.StringIO(), _Clock()
    progress = _PlainProgress(stream, clock)
    progress.add_task("sweep", total=500, last=None)
    for i in range(1, 5):
        clock.now += 20
        progress.update(0, advance=1, last=_point(i))
    counts = [ln for ln in stream.getvalue().splitlines() if "/500 done" in ln]
    assert counts == ["sweep: 2/500 done; 0:00:40 elapsed, eta 2:46:00",
                      "sweep: 4/500 done; 0:01:20 elapsed, eta 2:45:20"]


def test_a_small_sweep_in_a_pipe_keeps_a_line_per_point():
    stream = io.StringIO()
    progress = _PlainProgress(stream, _Clock())
    progress.add_task("sweep", total=PLAIN_POINT_LINES, last=None)
    for i in range(1, PLAIN_POINT_LINES + 1):
        progress.update(0, advance=1, last=_point(i))
    lines = stream.getvalue().splitlines()
    assert len(lines) == PLAIN_POINT_LINES and lines[1] == "sweep: 2/50 done; bandwidth=2: 998 ns"


def test_a_piped_sweep_past_the_per_point_lines_ranks_by_its_objective(tmp_path, capsys):
    """The sweep's own best so far, from the real runner: the objective, with its unit."""
    from simpy_astra.cli.sweep import main as sweep_main

    sweep = tmp_path / "big.yaml"
    values = list(range(10, 10 * (PLAIN_POINT_LINES + 2), 10))
    sweep.write_text(yaml.safe_dump({"base": str(DEFAULT), "axes": {"network.bandwidth": values}}))
    assert sweep_main([str(sweep), "--out", str(tmp_path / "out"), "--no-plots", "--jobs", "1"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert sum("/51 done" in ln for ln in err) == 9
    first = next(i for i, ln in enumerate(err) if "/51 done" in ln)
    assert err[first].startswith("sweep: 6/51 done; ") and err[first + 1].startswith("  best so far: bandwidth=60: ")
    assert err[first + 1].endswith(" ns")
    assert all(len(ln) <= PLAIN_WIDTH for ln in err if str(tmp_path) not in ln)  # a path stays whole


def test_quiet_prints_the_answer_and_no_folding_note(capsys):
    """Before: ``run two_llm_jobs_fat_tree.yaml --quiet`` printed 'note: symmetry folding is off:
    several jobs share the network' above the headline; --quiet prints the answer alone."""
    from simpy_astra.cli.main import main

    scenario = str(ROOT / "scenarios" / "two_llm_jobs_fat_tree.yaml")
    assert main(["run", scenario, "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith("iteration time ") and len(out.splitlines()) == 1
    assert main(["run", scenario, "--quiet", "--verbose"]) == 0  # asked for: said
    assert "note: symmetry folding is off: several jobs share the network" in capsys.readouterr().err


def test_a_job_that_does_not_fit_says_what_its_memory_is_made_of_and_what_to_cut():
    """Before: 'memory per GPU about 88.1 GiB of 80 GiB (DOES NOT FIT)' and nothing more (the
    16,384-GPU Megatron run); now its parts, largest first, and what shrinks the largest."""
    from simpy_astra.workloads.megatron.report import CURES, TrainingFigures

    def figures(**parts: float) -> TrainingFigures:
        return TrainingFigures(9_134_402_867, 299.0, 0.302, 112.0, parts, 80)

    big = figures(weights=6.7, gradients=13.4, optimizer=0.3, activations=67.8)
    assert big.fit_advice() == [
        "  made of (GiB): activations 67.8, gradients 13.4, weights 6.7, optimizer 0.3",
        "  to fit, shrink activations: recomputation, a smaller micro-batch, more TP/PP"]
    assert figures(weights=6.7, activations=3.0).fit_advice() == []  # fits: nothing to say
    for part in CURES:  # every part's advice, and five parts of four digits, within 80 columns
        lines = figures(**{p: 1111.1 if p == part else 999.9 for p in CURES}).fit_advice()
        assert lines[-1].startswith(f"  to fit, shrink {part.replace('_', ' ')}: ")
        assert all(len(ln) <= PLAIN_WIDTH for ln in lines), lines


def test_a_quiet_run_that_does_not_fit_warns_with_the_advice(tmp_path, capsys):
    from simpy_astra.cli.main import main

    scenario = tmp_path / "big.yaml"
    scenario.write_text(yaml.safe_dump({
        "workload": {"generate": "megatron", "args": "--num-layers 8 --hidden-size 8192 --num-attention-heads 64 "
                     "--seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 8 --global-batch-size 8 "
                     "--tensor-model-parallel-size 2 --bf16 --vocab-size 32000"},
        "cluster": {"preset": "dgx-h100", "gpus": 2}}))
    assert main(["run", str(scenario), "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1
    lines = err.splitlines()
    assert lines[0].startswith("warning: memory per GPU about ") and lines[0].endswith("(DOES NOT FIT)")
    assert lines[1].startswith("  made of (GiB): activations ") and lines[-1].startswith("  to fit, shrink ")


def test_nodes_csv_exposed_time_is_the_walk_over_compute_intervals_it_replaced():
    """--csv-out of the 1,536-GPU SC'21 step spent 1.8 s walking compute intervals inside each
    communication node (longer than the simulation); the prefix sums give the same integers."""
    import random

    from simpy_astra.report.csv_tables import Cover
    from simpy_astra.report.recorder import merged

    def walked(start: int, end: int, cover: list[tuple[int, int]]) -> int:
        covered = sum(max(0, min(hi, end) - max(lo, start)) for lo, hi in cover)
        return end - start - covered

    rng = random.Random(4)
    for _ in range(200):
        raw = [(s, s + rng.randrange(0, 30)) for s in (rng.randrange(0, 1000) for _ in range(rng.randrange(0, 40)))]
        cover = merged(raw)
        compute = Cover(cover)
        for _ in range(20):
            start = rng.randrange(-50, 1100)
            end = start + rng.randrange(0, 300)
            assert compute.uncovered_ns(start, end) == walked(start, end, cover)


def test_quiet_leaves_out_the_ran_unfolded_note(capsys):
    """Before: ``run fat_tree_all_to_all.yaml --quiet`` printed 'note: ran unfolded: symmetric
    NPUs' messages met on a link (--verbose: where)' above its headline; it changes no figure."""
    from simpy_astra.cli.main import main

    scenario = str(ROOT / "scenarios" / "fat_tree_all_to_all.yaml")
    assert main(["run", scenario, "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith("iteration time ")
    assert main(["run", scenario]) == 0  # without --quiet the note stays
    assert "note: ran unfolded: " in capsys.readouterr().err


def test_a_best_under_a_long_constraint_that_nobody_meets_fits_80_columns():
    """Before: the lab sweep's 'best with peak_memory_gb <= 80 and accounting == 'physical': no
    finished point qualifies' was one line of 88 columns in a pipe."""
    from simpy_astra.report.console import Output
    from simpy_astra.sweep.summary import _winner

    stream = io.StringIO()
    title = "best with peak_memory_gb <= 80 and accounting == 'physical'"
    _winner(Output(stream, rich=False), None, title, None, set())  # type: ignore[arg-type]
    lines = stream.getvalue().splitlines()
    assert lines == ["best with peak_memory_gb <= 80 and accounting == 'physical': no finished point",
                     "  qualifies"]


def test_two_bests_whose_runs_warned_alike_say_the_warning_once(tmp_path):
    """Before: the lab sweep's 'best' and 'best with ... == 'stage'' each printed the same four
    lines 'warned: 64 MiB all-gather: 1.83x below its link-bandwidth floor | ...'."""
    from simpy_astra.report.console import Output
    from simpy_astra.sweep.spec import load_sweep
    from simpy_astra.sweep.summary import _winner

    sweep = tmp_path / "s.yaml"
    sweep.write_text(yaml.safe_dump({"base": str(DEFAULT), "axes": {"network.bandwidth": [25, 50]}}))
    spec = load_sweep(str(sweep))
    words = "64 MiB all-gather: 1.83x below its link-bandwidth floor | network: Ring(4) x Ring(4) x Ring(4)"
    stream, named = io.StringIO(), set()
    for key, bandwidth in (("a", 25), ("b", 50)):
        entry = {"key": key, "coordinates": {"network.bandwidth": bandwidth}, "objective": 5,
                 "figures": {"warnings": words}}
        _winner(Output(stream, rich=False), spec, f"best {key}", entry, named)
    lines = stream.getvalue().splitlines()
    assert sum(ln.startswith("  warned: 64 MiB all-gather") for ln in lines) == 1
    assert lines[-1] == "  warned: as above" and all(len(ln) <= PLAIN_WIDTH for ln in lines)


def test_an_output_in_a_missing_folder_says_what_to_do(tmp_path, capsys, monkeypatch):
    """Before: 'error: --json-out: cannot write x/m.json: x does not exist', the fix left unsaid."""
    from simpy_astra.cli.main import main

    monkeypatch.chdir(tmp_path)
    for flag in ("--json-out", "--trace-out"):
        assert main(["run", str(DEFAULT), "--quiet", flag, "x/m.json"]) == 2
        err = capsys.readouterr().err.splitlines()
        assert err == [f"error: {flag}: cannot write x/m.json: x does not exist (make it first)"], err


def test_a_piped_timeline_is_not_as_wide_as_stdouts_terminal(monkeypatch):
    """Before: with stderr sent to a log and stdout left on a 200-column terminal, the log's
    timeline was 200 wide (its width was asked of stdout's terminal); now COLUMNS, else 80."""
    import os

    from simpy_astra.config.scenario import load_scenario
    from simpy_astra.report.breakdown import npu_breakdowns
    from simpy_astra.report.console import Output
    from simpy_astra.report.recorder import attach
    from simpy_astra.report.timeline import print_timeline
    from simpy_astra.simulation import Simulation

    sim = Simulation(load_scenario(str(DEFAULT)))
    record = attach(sim)
    sim.run()
    breakdowns = npu_breakdowns(record, segments=True)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(os, "get_terminal_size", lambda *a: os.terminal_size((200, 50)))
    text = io.StringIO()
    print_timeline(breakdowns, Output(text, rich=False))
    rows = [ln for ln in text.getvalue().splitlines() if ln.startswith("NPU ")]
    assert rows and {len(r) for r in rows} == {80}


def test_a_long_point_in_a_pipe_is_not_silent_until_it_ends():
    """Before: a 3-point sweep whose points took 10 minutes each printed nothing into a log for
    10 minutes. Now, after PLAIN_EVERY_S without a line, one says points still run."""
    stream, clock = io.StringIO(), _Clock()
    progress = _PlainProgress(stream, clock)
    progress.add_task("sweep", total=3, last=None)
    clock.now = PLAIN_EVERY_S - 1
    progress.waiting(2)
    assert stream.getvalue() == ""
    clock.now = PLAIN_EVERY_S + 5
    progress.waiting(2)
    assert stream.getvalue() == "sweep: 0/3 done; 0:00:35 elapsed; 2 points running\n"
    clock.now += 1
    progress.update(0, advance=1, last=_point(1))  # a point's line restarts the wait
    clock.now += PLAIN_EVERY_S - 1
    progress.waiting(1)
    clock.now += 2
    progress.waiting(1)
    assert stream.getvalue().splitlines()[1:] == ["sweep: 1/3 done; bandwidth=1: 999 ns",
                                                  "sweep: 1/3 done; 0:01:07 elapsed; 1 point running"]


def test_the_runner_says_a_point_still_runs_while_it_waits(tmp_path, capsys, monkeypatch):
    """The real runner calls waiting() while no point finishes: the point below cannot end
    until the sweep's process has said, in the pipe, that it still runs."""
    from simpy_astra.cli.sweep import main as sweep_main
    from simpy_astra.sweep import runner

    said = tmp_path / "said"
    real_waiting, real_run_point = _PlainProgress.waiting, runner.run_point

    def waiting(self: _PlainProgress, running: int) -> None:
        real_waiting(self, running)
        said.touch()

    def slow_point(scenario, where):  # in the forked worker: wait for the sweep's line
        import time

        while not said.exists():
            time.sleep(0.02)
        return real_run_point(scenario, where)

    monkeypatch.setattr(runner, "WAKE_EVERY_S", 0.05)
    monkeypatch.setattr(runner, "PLAIN_EVERY_S", 0.0)
    monkeypatch.setattr(_PlainProgress, "waiting", waiting)
    monkeypatch.setattr(runner, "run_point", slow_point)
    sweep = tmp_path / "one.yaml"
    sweep.write_text(yaml.safe_dump({"base": str(DEFAULT), "axes": {"network.bandwidth": [50]}}))
    assert sweep_main([str(sweep), "--out", str(tmp_path / "out"), "--no-plots", "--jobs", "1"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert any(ln.startswith("sweep: 0/1 done; ") and ln.endswith(" elapsed; 1 point running") for ln in err)
