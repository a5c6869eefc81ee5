"""CSV reports, the Chrome/Perfetto trace and the terminal timeline, checked against the run's figures.

The figures come from the reference (ASTRA-sim 2.0's GPU time, Comm time, finish cycles) or,
for the default scenario, from its closed form (20 us compute, 117.78 us all-reduce, 5 us).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from simpy_astra.config.astra_inputs import inputs_from_astra_flags
from simpy_astra.config.scenario import load_scenario
from simpy_astra.engine.statistics import union_length
from simpy_astra.report.breakdown import npu_breakdowns
from simpy_astra.report.csv_tables import write_csv_reports
from simpy_astra.report.recorder import attach
from simpy_astra.report.timeline import timeline_rows, write_chrome_trace
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.chakra import read_et

ROOT = Path(__file__).resolve().parents[1]
RESNET_CASE = "text_cu_Resnet50_DataParallel_8npus_p2_sw8"


def _case_run(reference_dir: Path, tmp_path: Path, monkeypatch, case_id: str, chunks: bool):
    case = json.loads((reference_dir / "cases" / f"{case_id}.json").read_text())
    for entry in reference_dir.iterdir():
        (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    inputs = inputs_from_astra_flags(workload=case["workload"], system=case["system"], network=case["network"],
                                     remote_memory=case["remote_memory"], comm_groups="empty",
                                     backend=case["backend"])
    inputs = dataclasses.replace(inputs, fold_symmetry=False)  # the trace and CSV files list every NPU's own events
    sim = Simulation(inputs)
    record = attach(sim, record_chunks=chunks)
    reports = {str(r.npu_id): r for r in sim.run()}
    return case, sim, record, reports


def test_trace_events_agree_with_reference_figures(reference_dir: Path, tmp_path: Path, monkeypatch) -> None:
    case, sim, record, reports = _case_run(reference_dir, tmp_path, monkeypatch, RESNET_CASE, chunks=True)
    write_chrome_trace(record, str(tmp_path / "trace.json"))
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert {e["pid"] for e in spans} == set(range(8))
    for npu, want in case["expected"].items():
        mine = [e for e in spans if e["pid"] == int(npu)]

        def ns(e: dict) -> tuple[int, int]:
            start = round(e["ts"] * 1000)
            return start, start + round(e["dur"] * 1000)

        compute = [ns(e) for e in mine if e["cat"] == "compute"]
        comm = [ns(e) for e in mine if e["cat"] == "comm"]
        assert union_length(compute) == want["gpu_time"]
        assert union_length(comm) == want["comm_time"]
        assert max(end for _s, end in compute + comm) == want["finished_cycles"]
        # every workload node appears once; chunks of a collective end exactly when it does
        assert len(compute) + len(comm) == len(sim.npus[int(npu)].nodes)
        coll_end = {e["args"]["node_id"]: ns(e)[1] for e in mine if e["cat"] == "comm"}
        chunk_end: dict[int, int] = {}
        for e in mine:
            if e["cat"] == "chunk":
                node = e["args"]["node_id"]
                chunk_end[node] = max(chunk_end.get(node, 0), ns(e)[1])
        assert chunk_end == coll_end
        # a track never holds overlapping events (Perfetto would mis-nest them)
        by_track: dict[int, list] = {}
        for e in mine:
            by_track.setdefault(e["tid"], []).append(ns(e))
        for track in by_track.values():
            track.sort()
            assert all(a[1] <= b[0] for a, b in zip(track, track[1:], strict=False))
    assert reports["0"].finished_cycles == case["expected"]["0"]["finished_cycles"]


def _read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_csv_reports_of_a_text_workload(reference_dir: Path, tmp_path: Path, monkeypatch) -> None:
    case, sim, record, _reports = _case_run(reference_dir, tmp_path, monkeypatch, RESNET_CASE, chunks=False)
    paths = write_csv_reports(record, str(tmp_path / "csv"))
    assert [Path(p).name for p in paths] == ["nodes.csv", "npus.csv", "layers.csv"]
    nodes = _read_csv(tmp_path / "csv" / "nodes.csv")
    layers = _read_csv(tmp_path / "csv" / "layers.csv")
    src = (reference_dir / "workloads" / "text" / "src" / "Resnet50_DataParallel.txt").read_text().split("\n")
    layer_names = [line.split()[0] for line in src[2:] if line.strip()]
    for npu, want in case["expected"].items():
        mine = [r for r in nodes if r["npu"] == npu]
        _meta, et = read_et(f"{sim.inputs.workload_prefix}.{npu}.et")
        assert sorted(int(r["node_id"]) for r in mine) == sorted(n.id for n in et)
        assert all(int(r["end_ns"]) - int(r["start_ns"]) == int(r["duration_ns"]) for r in mine)
        per_layer = [r for r in layers if r["npu"] == npu]
        assert [r["layer"] for r in per_layer] == layer_names
        assert all(r["passes"] == "2" for r in per_layer)
        # compute never overlaps compute on an NPU, so the per-layer compute adds up to GPU time
        total = sum(int(r[k]) for r in per_layer for k in ("fwd_compute_ns", "ig_compute_ns", "wg_compute_ns"))
        assert total == want["gpu_time"]
        # the ET field is microseconds: conv1 computes 13003 us forward and 32291 us weight gradient per pass
        conv1 = per_layer[0]
        assert (conv1["fwd_compute_ns"], conv1["wg_compute_ns"], conv1["ig_compute_ns"]) == ("26006000", "64582000", "0")


def test_exposed_comm_of_a_lone_collective_is_the_reported_figure(reference_dir: Path, tmp_path: Path,
                                                                   monkeypatch) -> None:
    case, _sim, record, _reports = _case_run(reference_dir, tmp_path, monkeypatch,
                                             "grid_ca_all_reduce_1MB_fc8_direct", chunks=False)
    write_csv_reports(record, str(tmp_path / "csv"))
    rows = _read_csv(tmp_path / "csv" / "nodes.csv")
    assert not (tmp_path / "csv" / "layers.csv").exists()  # not a text workload
    assert {r["npu"]: int(r["exposed_comm_ns"]) for r in rows} == \
           {npu: f["exposed_comm_cycles"] for npu, f in case["expected"].items()}


def test_terminal_timeline_of_the_default_scenario() -> None:
    sim = Simulation(load_scenario(str(ROOT / "scenarios" / "default.yaml")))
    record = attach(sim)
    sim.run()
    # 60 buckets of 142780/60 ns: compute 0..20000 fills 8 of them, the all-reduce (on the
    # default communicator: comm.all) until 137780 dominates the next 50, the optimizer the last 2
    rows, end = timeline_rows(npu_breakdowns(record, segments=True), width=60)
    assert end == 142_780
    assert rows == [(npu, ["compute"] * 8 + ["comm.all"] * 50 + ["compute"] * 2) for npu in range(8)]


def test_terminal_timeline_rows_of_shared_and_separate_breakdowns_agree() -> None:
    """A folded run's orbit members share their representative's breakdown and its row is
    drawn once; copies of it (as an unfolded run has) give the same rows. NPU 2 finishes at
    60 of 120 ns: buckets of 12 ns, its last 5 of 10 idle."""
    from simpy_astra.report.breakdown import Breakdown

    rep = Breakdown(120, segments=[(0, 60, "compute.gemm"), (60, 120, "comm.dp")])
    short = Breakdown(60, segments=[(0, 36, "compute.gemm"), (36, 60, "bubble")])
    shared = {0: rep, 1: rep, 2: short, 3: rep}
    separate = {k: dataclasses.replace(b) for k, b in shared.items()}
    rows, end = timeline_rows(shared, width=10)
    assert end == 120 and rows == timeline_rows(separate, width=10)[0]
    assert rows[0][1] == ["compute"] * 5 + ["comm.dp"] * 5
    assert rows[2] == (2, ["compute"] * 3 + ["bubble"] * 2 + ["idle"] * 5)


@pytest.mark.parametrize("columns", [60, 80])
def test_terminal_timeline_fills_the_width(columns: int, monkeypatch) -> None:
    """Piped (plain text), the timeline is as wide as COLUMNS (held within 80, as the tables
    are: tests/test_console_round5.py): "NPU 0 " and a character per bucket; the legend names
    each part drawn; drawn by rich, as wide as the console."""
    import io

    from simpy_astra.report.console import Output
    from simpy_astra.report.timeline import print_timeline

    sim = Simulation(load_scenario(str(ROOT / "scenarios" / "default.yaml")))
    record = attach(sim)
    sim.run()
    breakdowns = npu_breakdowns(record, segments=True)
    monkeypatch.setenv("COLUMNS", str(columns))
    text = io.StringIO()
    print_timeline(breakdowns, Output(text, rich=False))
    lines = text.getvalue().splitlines()
    assert lines[1].split() == ["#", "compute", "a", "comm.all"]
    rows = [line for line in lines if line.startswith("NPU ")]
    assert len(rows) == 8 and {len(r) for r in rows} == {columns}
    # buckets of 142,780 / w ns: compute (0-20,000 ns) fills most of the first, the optimizer step
    # (137,780-142,780) most of the last ones, the all-reduce the rest
    w = columns - len("NPU 0 ")
    bucket = 142_780 / w
    first, last = math.ceil(20_000 / bucket - 0.5), w - math.floor(137_780 / bucket - 0.5) - 1
    assert rows[0] == "NPU 0 " + "#" * first + "a" * (w - first - last) + "#" * last
    wide = io.StringIO()
    out = Output(wide, rich=True)
    out.console.width = 2 * columns  # a terminal wider than 80 columns is filled
    print_timeline(breakdowns, out)
    assert max(map(len, wide.getvalue().splitlines())) == 2 * columns


@pytest.mark.parametrize("end_ns", [142_780, 24_690_412_345, 1_056_492_763_192])
def test_the_timeline_keeps_to_the_narrowest_plain_width(end_ns: int, monkeypatch) -> None:
    """docs/reports.md: in a pipe every line keeps to the plain width, 40 at its narrowest
    (COLUMNS=10), errors, paths and the answer's lines aside. The timeline's heading read
    'timeline 0 .. 142,780 ns, one column = 4.2 us:' (46 columns) there; it goes on a second
    line when one does not hold it."""
    import io

    from simpy_astra.report.breakdown import Breakdown
    from simpy_astra.report.console import Output
    from simpy_astra.report.timeline import print_timeline

    monkeypatch.setenv("COLUMNS", "10")
    b = Breakdown(end_ns, {"compute.gemm": end_ns}, segments=[(0, end_ns, "compute.gemm")])
    text = io.StringIO()
    print_timeline({0: b}, Output(text, rich=False))
    lines = text.getvalue().splitlines()
    assert max(map(len, lines)) <= 40, lines
    assert " ".join(" ".join(lines[:2]).split()).startswith(f"timeline 0 .. {end_ns:,} ns, one column = "), lines


def test_recording_is_off_unless_attached() -> None:
    sim = Simulation(load_scenario(str(ROOT / "scenarios" / "default.yaml")))
    assert all(npu.probe_node_start is None and npu.probe_node_end is None for npu in sim.npus)
    assert all(system.probe_stream_moved is None and system.probe_phase_started is None for system in sim.systems)
    attach(sim, record_chunks=True)  # recording is a subscriber of those probe points
    assert all(len(npu.probe_node_end) == 1 for npu in sim.npus)
    assert all(len(system.probe_phase_started) == 1 for system in sim.systems)


@pytest.mark.parametrize("flags", [["--csv-out", "{tmp}/csv"], ["--trace-out", "{tmp}/t.json"]])
def test_report_flags_do_not_change_printed_figures(flags: list[str], tmp_path: Path) -> None:
    base = [sys.executable, "-m", "simpy_astra", "run", str(ROOT / "scenarios" / "default.yaml"), "--quiet"]
    plain = subprocess.run(base, capture_output=True, text=True, cwd=ROOT)
    extra = [f.format(tmp=tmp_path) for f in flags]
    with_reports = subprocess.run(base + extra, capture_output=True, text=True, cwd=ROOT)
    assert plain.returncode == with_reports.returncode == 0, with_reports.stderr
    assert plain.stdout == with_reports.stdout
    assert Path(extra[1]).exists()


def test_layers_csv_of_a_micro_text_workload(reference_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """MICRO: one collective per pass and no compute, so all of it is exposed weight-gradient comm."""
    case, _sim, record, _reports = _case_run(reference_dir, tmp_path, monkeypatch,
                                             "text_cu_microAllReduce_8npus_p2_sw8", chunks=False)
    write_csv_reports(record, str(tmp_path / "csv"))
    rows = _read_csv(tmp_path / "csv" / "layers.csv")
    assert [(r["npu"], r["layer"], r["passes"], r["wg_comm_ns"], r["wg_exposed_comm_ns"]) for r in rows] == \
           [(npu, "conv1", "2", str(f["comm_time"]), str(f["exposed_comm_cycles"]))
            for npu, f in case["expected"].items()]


def test_a_table_on_an_80_column_terminal_never_cuts_a_number(monkeypatch):
    """The two-job run's busiest links (scenarios/two_llm_jobs_fat_tree.yaml on the packet
    backend, as printed at 200 columns): at 80 columns every figure shown is whole, and the
    column that does not fit goes on in a second table with the links' names, not cut or left
    out (issue 39: 'stalled (ns)' showed '1,362,26', 'bytes by job' was gone)."""
    import io

    from simpy_astra.report.console import Output

    monkeypatch.setenv("COLUMNS", "80")
    stream = io.StringIO()
    out = Output(stream, rich=True)
    assert out.console.width == 80
    columns = ("link", "bytes", "busy (ns)", "busy share", "max queue (B)", "stalled (ns)", "bytes by job")
    rows = [(f"leaf{i} -> spine0", "1,388,314,624", "12,954,691", "85.7%", "1,048,576", "1,362,262",
             "a 694,157,312, b 694,157,312") for i in range(4)]
    out.table("busiest links", columns, rows)
    text = stream.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    for figure in ("1,388,314,624", "12,954,691", "85.7%", "1,048,576", "1,362,262"):
        assert text.count(figure) == 4, figure
    assert text.count("a 694,157,312, b 694,157,312") == 4 and "not shown" not in text
    second = text[text.index("busiest links (continued)"):]
    assert all(f"leaf{i} -> spine0" in second for i in range(4)) and "1,388,314,624" not in second
    # at 200 columns all of it, on one line per row
    monkeypatch.setenv("COLUMNS", "200")
    wide = io.StringIO()
    Output(wide, rich=True).table("busiest links", columns, rows)
    assert wide.getvalue().count("a 694,157,312, b 694,157,312") == 4


def test_text_columns_fold_before_a_figure_column_is_left_out(monkeypatch):
    import io

    from simpy_astra.report.console import Output

    monkeypatch.setenv("COLUMNS", "80")
    stream = io.StringIO()
    columns = ("network.bandwidth", "system.all-reduce-implementation", "backend", "finish_ns", "wall_s")
    rows = [("200", "halvingDoubling", "congestion_unaware", "33,884", "0.05")]
    Output(stream, rich=True).table("sweep", columns, rows, align=("left", "left", "left", "right", "right"))
    text = stream.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "33,884" in text and "0.05" in text and "not shown" not in text


def test_notes_wrap_on_an_80_column_terminal_and_stay_one_line_in_a_pipe(monkeypatch):
    """say(): a line a script reads stays whole in a pipe (a run's own warnings and notes wrap
    there: say_wrapped, tests/test_console_round5.py)."""
    import io

    from simpy_astra.report.console import say

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    note = ("note: symmetry folding off: the congestion_aware backend couples NPUs through shared links; "
            "simulating 64 of 64 NPUs")  # scenarios/torus3d_all_reduce.yaml's, 115 characters
    monkeypatch.setenv("COLUMNS", "80")
    tty, pipe = Terminal(), io.StringIO()
    say(note, tty)
    say(note, pipe)
    lines = tty.getvalue().splitlines()
    assert len(lines) == 2 and max(map(len, lines)) <= 80 and " ".join(" ".join(lines).split()) == note
    assert pipe.getvalue() == note + "\n"


def test_a_plain_table_wider_than_80_columns_goes_on_in_a_block_that_repeats_the_key():
    """Piped (issue 39): no line over 80, every figure whole and once, each row on one line."""
    import io

    from simpy_astra.report.console import Output

    stream = io.StringIO()
    columns = ("link", "a" * 30, "b" * 30, "c" * 30)  # 6 + 2 + 30 + 2 + 30 = 70; + 32 would be 102
    rows = [("0 -> 1", "1", "22", "333"), ("1 -> 2", "4,444", "5", "6")]
    Output(stream, rich=False).table("links", columns, rows)
    assert stream.getvalue().splitlines() == [
        "links",
        "  link  " + "a" * 30 + "  " + "b" * 30,
        "0 -> 1" + " " * 31 + "1" + " " * 30 + "22",
        "1 -> 2" + " " * 27 + "4,444" + " " * 31 + "5",
        "links (continued)",
        "  link  " + "c" * 30,
        "0 -> 1  " + " " * 27 + "333",
        "1 -> 2  " + " " * 29 + "6",
    ]


def test_a_plain_table_without_a_key_numbers_its_rows_when_split():
    import io

    from simpy_astra.report.console import Output

    stream = io.StringIO()
    Output(stream, rich=False).table("t", ("x" * 40, "y" * 40), [("1", "2")], key=0)
    assert stream.getvalue().splitlines() == [
        "t", "#  " + "x" * 40, "1  " + " " * 39 + "1",
        "t (continued)", "#  " + "y" * 40, "1  " + " " * 39 + "2"]
    narrow = io.StringIO()
    Output(narrow, rich=False).table("t", ("x", "y"), [("1", "2")], key=0)
    assert narrow.getvalue().splitlines() == ["t", "x  y", "1  2"]  # fits: no numbers


def test_progress_lines_take_the_longest_wording_that_fits():
    from simpy_astra.report.console import fit_words, progress_text

    assert progress_text(1, 3, 1234.0, 0.4) == "simulating: 1 of 3 nodes done, simulated time 1,234 ns, 0 s elapsed"
    # the megatron step's counts at 19 s simulated: the first wording is 85 characters
    assert progress_text(43_687, 52_386, 19_369_971_058, 6) == \
        "simulating: 43,687 of 52,386 nodes, at 19,369,971,058 ns, 6 s elapsed"
    assert progress_text(43_687, 52_386, 19_369_971_058, 6, width=50) == "43,687/52,386 nodes, 19,369,971,058 ns"
    # a sweep point's coordinates lose whole words; its figure stays whole
    assert fit_words("100 halvingDoubling 64 congestion_aware", ": 122,112 ns", 40) == \
        "100 halvingDoubling 64 ...: 122,112 ns"
    assert fit_words("100 ring", ": 1 ns", 40) == "100 ring: 1 ns"
    assert fit_words("100 ring", ": 122,112 ns", 5) == "...: 122,112 ns"


def test_a_report_line_printed_during_a_run_clears_the_live_progress_line_first():
    """On a terminal the progress line ends with no newline: a report line written then would
    land at its end (issue 39's 'elapsedsys[9] finished'); it is cleared first."""
    import io

    from simpy_astra.report.console import ProgressLine

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen, stdout = Terminal(), io.StringIO()
    line = ProgressLine(screen)
    line.show(1, 3, 1234.0, 0.0)
    line.above("sys[0] finished", stdout)
    line.above("sys[1] finished", stdout)  # nothing drawn since: nothing to clear
    assert screen.getvalue() == "\rsimulating: 1 of 3 nodes done, simulated time 1,234 ns, 0 s elapsed\x1b[K" \
                                "\r\x1b[K"
    assert stdout.getvalue() == "sys[0] finished\nsys[1] finished\n"
