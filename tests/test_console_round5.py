"""The researcher's console, round 5: one plain width for everything printed in a pipe, and
the warnings a run's summary prints wrapped within it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from simpy_astra.report.console import PLAIN_WIDTH
from simpy_astra.sweep.runner import PLAIN_EVERY_S, Finished, _PlainProgress
from tests.wrapped_lines import unwrapped

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "scenarios" / "default.yaml"


def _columns(monkeypatch, columns: str | None) -> int:
    """Set COLUMNS (None: unset) and return the width a pipe's text must keep to."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
        return PLAIN_WIDTH
    monkeypatch.setenv("COLUMNS", columns)
    return int(columns)


@pytest.mark.parametrize("columns, width", [(None, 80), ("80", 80), ("60", 60), ("200", 80), ("10", 40),
                                            ("wide", 80), ("", 80)])
def test_the_plain_width_is_columns_held_within_40_and_80(columns, width, monkeypatch):
    from simpy_astra.report.console import PLAIN_MIN_WIDTH, plain_width

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert plain_width() == width and PLAIN_MIN_WIDTH <= width <= PLAIN_WIDTH


@pytest.mark.parametrize("columns", ["60", "80", None])
def test_a_piped_runs_tables_are_as_wide_as_its_timeline(columns, monkeypatch, capsys):
    """Before: at COLUMNS=60 in a pipe the run's tables were 80 wide (79 columns of NPU table)
    while its timeline was 60. Now the tables, the timeline and the breakdown keep to one width
    (only the headline, the answer's own line, is written for 80 columns)."""
    from simpy_astra.cli.main import main

    width = _columns(monkeypatch, columns)
    assert main(["run", str(DEFAULT)]) == 0
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    out = [ln for ln in captured.out.splitlines() + err if not ln.startswith(("sys[", "iteration time "))]
    rows = [ln for ln in err if ln.startswith("NPU ") and ln[4:5].isdigit()]
    assert rows and {len(r) for r in rows} == {width}  # the timeline fills the width
    assert [ln for ln in out if len(ln) > width] == []
    npu_table = err[err.index(next(ln for ln in err if ln.startswith("simpy-astra: 8 NPUs"))) + 1]
    # the NPU table's whole header fits 80 columns; at 60 its last columns go on below it
    assert npu_table.rstrip().endswith("overlap (ns)") == (width == 80)
    assert any(ln.startswith("where the time went") for ln in out)


def _point(i: int) -> Finished:
    return Finished(f"bandwidth={i} all_reduce_implementation=halvingDoubling", f"{1000 - i:,} ns", True,
                    terse=f"bw={i} ar=hD", score=(1000.0 - i, f"{1000 - i:,} ns"))


@pytest.mark.parametrize("columns", ["40", "60", "80", None])
def test_a_large_sweeps_lines_in_a_pipe_keep_to_the_plain_width(columns, monkeypatch):
    """Before: the counts line of a large sweep and its 'still running' line were written for
    80 columns whatever COLUMNS said (10,000 points: 61 and 67 columns at COLUMNS=60). Now each
    takes the longest wording that fits; the counts are never cut."""
    width = _columns(monkeypatch, columns)
    now = [0.0]
    stream = io.StringIO()
    progress = _PlainProgress(stream, lambda: now[0])
    progress.add_task("sweep", total=10_000, last=None)
    for i in range(1, 1001):
        now[0] += 40
        progress.update(0, advance=1, last=_point(i))
    now[0] += 2 * PLAIN_EVERY_S
    progress.waiting(16)
    lines = stream.getvalue().splitlines()
    assert [ln for ln in lines if len(ln) > width] == []
    assert sum("1000/10000 done" in ln for ln in lines) == 2
    assert lines[-1].startswith("sweep: 1000/10000 done; ") and lines[-1].endswith(" running")
    assert lines[0].startswith("sweep: 10000 points: a line")


@pytest.mark.parametrize("columns", ["60", "80", None])
def test_a_small_sweep_in_a_pipe_keeps_to_the_plain_width(columns, tmp_path, monkeypatch, capsys):
    """A real 4-point sweep: its point lines, best table and best line keep to one width (only
    the line naming the files written, whose paths stay whole for grep, may be wider)."""
    from simpy_astra.cli.sweep import main as sweep_main

    width = _columns(monkeypatch, columns)
    sweep = tmp_path / "s.yaml"
    sweep.write_text(yaml.safe_dump({
        "base": str(ROOT / "scenarios" / "torus3d_all_reduce.yaml"), "minimise": "finish_ns",
        "axes": {"network.bandwidth": [50, 200], "system.all-reduce-implementation": ["ring", "halvingDoubling"]},
        "report": ["finish_ns", "exposed_comm_ns", "wall_s"]}))
    assert sweep_main([str(sweep), "--out", str(tmp_path / "out"), "--no-plots", "--jobs", "1"]) == 0
    captured = capsys.readouterr()
    lines = [ln for ln in (captured.err + captured.out).splitlines() if str(tmp_path) not in ln]
    assert [ln for ln in lines if len(ln) > width] == []
    assert lines[0] == "sweep s: 4 points, running 4 on 1 local process"  # was '1 local processes'
    assert sum(ln.startswith("sweep: ") and "/4 done; " in ln for ln in lines) == 4
    assert any(ln.startswith("best") and "(continued)" in ln for ln in lines) == (width < 72)


@pytest.mark.parametrize("columns", ["60", "80", None])
def test_a_runs_warnings_wrap_within_the_plain_width_in_a_pipe(columns, tmp_path, monkeypatch, capsys):
    """Before: in a pipe each warning of a run's summary was one line however long (a
    memory-capacity without track-local-mem: 173 columns; an ignored system key: 148), while
    the bound check's and a sweep's warnings keep to 80. Now they wrap within the plain width,
    later lines indented, no path broken."""
    from simpy_astra.cli.main import main

    width = _columns(monkeypatch, columns)
    doc = yaml.safe_load(DEFAULT.read_text())
    doc["workload"] = str(DEFAULT.parent / doc["workload"])
    doc["system"].update({"npu-groups": [{"npus": [0, 1], "memory-capacity": 1000}], "endpoint-dealy": 10})
    monkeypatch.chdir(tmp_path)
    scenario = "s.yaml"  # named as given: no long path on the lines
    (tmp_path / scenario).write_text(yaml.safe_dump(doc))
    assert main(["run", scenario, "--quiet"]) == 0
    err = capsys.readouterr().err
    assert [ln for ln in err.splitlines() if len(ln) > width] == []
    assert unwrapped(err) == [
        f"warning: {scenario}: system: field 'endpoint-dealy' is not a system setting and is ignored (as in "
        f"ASTRA-sim); did you mean 'endpoint-delay'?",
        f"warning: {scenario}: system: field 'npu-groups[0].memory-capacity' changes nothing here: only a run with "
        f"track-local-mem: 1 measures the memory it is checked against"]


def test_ignored_astra_sim_flags_are_warned_of_within_the_plain_width(monkeypatch, capsys):
    """The ASTRA-sim flag form's ignored-flag warnings went through the same one-line print
    (--num-passes 2: 148 columns); the error that follows stays one line."""
    from simpy_astra.cli.main import main

    monkeypatch.delenv("COLUMNS", raising=False)
    code = main(["--workload-configuration", str(DEFAULT.parent / "workloads" / "step_8npus_1MB" / "step"),
                 "--system-configuration", "missing.json", "--network-configuration", "x.yml",
                 "--remote-memory-configuration", "m.json", "--num-passes", "2", "--rendezvous-protocol", "true"])
    err = capsys.readouterr().err
    assert code == 2 and [ln for ln in err.splitlines() if len(ln) > PLAIN_WIDTH and not ln.startswith("error: ")] == []
    assert unwrapped(err)[:2] == [
        "warning: --num-passes 2 is accepted but changes nothing (it repeats an ASTRA-sim 1.0 .txt workload; a "
        "Chakra ET prefix runs its graph once)",
        "warning: --rendezvous-protocol true is accepted but not modelled: sends go eagerly, so the figures lack "
        "ASTRA-sim's handshake delay"]


def test_the_local_memory_trace_note_keeps_its_words_within_60_columns(tmp_path, monkeypatch, capsys):
    """Before: at COLUMNS=60 in a pipe the note's first line stayed 68 columns (it was cut for
    80 by hand); now its words wrap within the plain width, the trace paths stay whole."""
    from simpy_astra.cli.main import main

    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(ROOT / "scenarios" / "transformer_llama_16npus.yaml"), "--quiet", "--trace-dir", "t"]) == 0
    err = capsys.readouterr().err.splitlines()
    at = next(i for i, line in enumerate(err) if line.startswith("note: wrote 16 local-memory trace(s)"))
    note = err[at:]
    # a path is never broken: a line naming one (the trace's, the scenario's) may be longer
    assert [ln for ln in note if len(ln) > 60 and str(tmp_path) not in ln and str(ROOT) not in ln] == []
    assert "  " + str(tmp_path / "t" / "local_mem_trace.0.json") in note and note[-1] == "  .. local_mem_trace.15.json"
