"""Issue 51, the researcher's console: the answer first, reports that cost nothing, pictures
that scale, help that finds the Megatron path, quiet where nothing can be done.

The real job here is a small Megatron step on 64 H100s, tp8 x pp2 x dp4 (0.3 s to simulate):
32 identical GPUs per pipeline stage, so two distinct breakdowns.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from simpy_astra.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "scenarios" / "default.yaml"
DEFAULT_STEP_NS = 142_780  # the default scenario's step (README; tests/test_cli.py derives it)
TP, PP, GPUS, SEQ, BATCH = 8, 2, 64, 512, 32
JOB = f"""\
workload:
  generate: megatron
  args: >-
    --num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length {SEQ}
    --max-position-embeddings {SEQ} --micro-batch-size 1 --global-batch-size {BATCH}
    --tensor-model-parallel-size {TP} --pipeline-model-parallel-size {PP} --bf16 --vocab-size 32000
cluster:
  preset: dgx-h100
  gpus: {GPUS}
"""
REFERENCE_LINE = re.compile(r"^sys\[\d+\]")


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")
    monkeypatch.setenv("COLUMNS", "80")
    path = tmp_path / "job.yaml"
    path.write_text(JOB)
    return path


def _run(capsys, *argv: str) -> tuple[list[str], str]:
    assert main(list(argv)) == 0
    out, err = capsys.readouterr()
    return out.splitlines(), err


def test_a_real_job_prints_the_answer_first_and_no_per_gpu_lines(job: Path, tmp_path: Path, capsys) -> None:
    """stdout: the headline (tokens/s = global batch x sequence / (step x GPUs)), memory, then
    where the time went; no ASTRA-sim line; the headline within the first 20 lines."""
    figures = tmp_path / "f.json"
    out, _err = _run(capsys, "run", str(job), "--json-out", str(figures))
    step_ns = json.loads(figures.read_text())["iteration_time_ns"]
    tokens = BATCH * SEQ / (step_ns / 1e9 * GPUS)
    assert not [ln for ln in out if REFERENCE_LINE.match(ln)]
    assert out[0].startswith(f"iteration time {step_ns / 1e6:,.3f} ms, ")  # an 11.8 ms step
    assert f" and {tokens:,.0f} tokens/s per GPU, MFU " in out[0]
    assert all(len(ln) <= 80 for ln in out)  # the answer fits a terminal's 80 columns
    assert out[1].startswith("memory per GPU about ") and out[1].endswith("(fits)")
    assert out[2].startswith("where the time went") and any(ln.split()[0] == "comm.tp" for ln in out[3:])
    assert len(out) < 20


def test_reference_lines_and_quiet_on_a_real_job(job: Path, capsys) -> None:
    out, _ = _run(capsys, "run", str(job), "--reference-lines")
    assert sum(bool(REFERENCE_LINE.match(ln)) and "finished" in ln for ln in out) == GPUS
    headline = next(ln for ln in out if ln.startswith("iteration time"))
    quiet, err = _run(capsys, "run", str(job), "--quiet")
    assert quiet == [headline] and "NPU" not in err  # no tables either
    lines_only, _ = _run(capsys, "run", str(job), "--reference-lines", "--quiet")
    assert lines_only and all(REFERENCE_LINE.match(ln) for ln in lines_only)  # the old --quiet


def test_a_real_jobs_answer_comes_before_its_reference_lines_in_a_pipe(job: Path, capsys) -> None:
    """README: a real job's answer is first on stdout in a file. With --reference-lines it
    came below 4 x GPUS reference lines (printed as each GPU finished: 6,000 lines down on the
    SC'21 job); now the answer and its breakdown come first, every GPU's lines after them."""
    out, _ = _run(capsys, "run", str(job), "--reference-lines")
    first = next(i for i, ln in enumerate(out) if REFERENCE_LINE.match(ln))
    assert out[0].startswith("iteration time ") and out[1].startswith("memory per GPU about ")
    assert out[first - 1].split()[0] == "finish"  # the breakdown's last row, then the lines
    assert all(REFERENCE_LINE.match(ln) for ln in out[first:])
    assert sum("finished" in ln for ln in out[first:]) == GPUS


def test_astra_sim_inputs_keep_their_lines_and_quiet_is_the_headline(capsys) -> None:
    out, _ = _run(capsys, "run", str(DEFAULT))
    assert out and all(REFERENCE_LINE.match(ln) for ln in out)
    assert f"sys[7] finished, {DEFAULT_STEP_NS} cycles, exposed communication {DEFAULT_STEP_NS - 25_000} cycles." in out
    quiet, _ = _run(capsys, "run", str(DEFAULT), "--quiet")
    assert quiet == [f"iteration time {DEFAULT_STEP_NS:,} ns (last: NPU 0 of 8, exposed comm "
                     f"{DEFAULT_STEP_NS - 25_000:,} ns)"]
    old, _ = _run(capsys, "run", str(DEFAULT), "--reference-lines", "--quiet")
    assert old == out


def test_the_flag_form_has_quiet_too(tmp_path: Path, capsys, monkeypatch) -> None:
    """ASTRA-sim's flag form prints its lines as the binary does; --quiet, the headline."""
    (tmp_path / "sys.json").write_text(json.dumps({
        "scheduling-policy": "LIFO", "collective-optimization": "localBWAware", "endpoint-delay": 10,
        "active-chunks-per-dimension": 1, "preferred-dataset-splits": 4, "local-mem-bw": 50,
        "all-reduce-implementation": ["ring"]}))
    (tmp_path / "net.yml").write_text("topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n")
    (tmp_path / "mem.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    monkeypatch.chdir(tmp_path)
    flags = [f"--workload-configuration={ROOT}/scenarios/workloads/step_8npus_1MB/step",
             "--system-configuration=sys.json", "--network-configuration=net.yml",
             "--remote-memory-configuration=mem.json"]
    out, _ = _run(capsys, *flags)
    assert len(out) > 8 and all(REFERENCE_LINE.match(ln) for ln in out)
    quiet, _ = _run(capsys, *flags, "--quiet")
    assert quiet == [f"iteration time {DEFAULT_STEP_NS:,} ns (last: NPU 0 of 8, exposed comm "
                     f"{DEFAULT_STEP_NS - 25_000:,} ns)"]


def test_breakdown_png_groups_identical_gpus_into_one_bar_with_a_count(job: Path, tmp_path: Path, capsys) -> None:
    """64 GPUs, tp8 x pp2 x dp4: a stage's 32 GPUs are alike, so two bars, 'x32' each."""
    from PIL import Image

    plots = tmp_path / "plots"
    _run(capsys, "run", str(job), "--plots", str(plots))
    from simpy_astra.config.scenario import load_scenario
    from simpy_astra.report.breakdown import npu_breakdowns
    from simpy_astra.report.plots import breakdown_figure
    from simpy_astra.report.recorder import attach
    from simpy_astra.simulation import Simulation

    sim = Simulation(load_scenario(str(job)))
    record = attach(sim)
    reports = sim.run()
    breakdowns = npu_breakdowns(record, {r.npu_id: r.finished_cycles for r in reports}, segments=True)
    ax = breakdown_figure(breakdowns).axes[0]
    labels = [t.get_text() for t in ax.texts]  # a text per bar
    per_stage = GPUS // PP
    assert labels == [f"{stage * per_stage} x{per_stage}" for stage in range(PP)]
    assert Image.open(plots / "breakdown.png").size[0] < 1000  # two bars, not 64


def test_timeline_png_legend_lies_inside_the_figure() -> None:
    """A two-row Gantt chart with a dozen parts: every legend entry within the figure."""
    from simpy_astra.report.breakdown import Breakdown
    from simpy_astra.report.plots import timeline_figure

    parts = ["compute.gemm", "compute.attention", "compute.elementwise", "compute.optimizer", "comm.tp",
             "comm.sp", "comm.cp", "comm.ep", "comm.dp", "comm.edp", "comm.pp", "bubble"]
    segments = [(100 * k, 100 * (k + 1), p) for k, p in enumerate(parts)]
    b = Breakdown(1200, {p: 100 for p in parts}, segments=segments)
    fig = timeline_figure({0: b, 1: Breakdown(1200, {"bubble": 1200}, segments=[(0, 1200, "bubble")])})
    fig.canvas.draw()
    legend = fig.legends[0]
    box, frame = legend.get_window_extent(), fig.bbox
    assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
    assert len(legend.get_texts()) == len(parts)
    axes = fig.axes[0].get_window_extent()
    assert box.y1 <= axes.y0  # below the axes, not over the rows


def test_the_terminal_legend_names_a_part_too_short_to_fill_a_column() -> None:
    """comm.tp between kernels never fills most of a column, but it is drawn time: named."""
    import io

    from simpy_astra.report.breakdown import Breakdown
    from simpy_astra.report.console import Output
    from simpy_astra.report.timeline import print_timeline

    segments = [(0, 990, "compute.gemm"), (990, 1000, "comm.tp"), (1000, 2000, "compute.gemm")]
    b = Breakdown(2000, {"compute.gemm": 1990, "comm.tp": 10}, segments=segments)
    text = io.StringIO()
    print_timeline({0: b}, Output(text, rich=False), width=20)
    lines = text.getvalue().splitlines()
    assert lines[1].split() == ["#", "compute", "t", "comm.tp"]
    assert lines[2] == "NPU 0 " + "#" * 20


def test_timeline_rows_are_computed_once_per_shared_breakdown(monkeypatch: pytest.MonkeyPatch) -> None:
    """A folded run's 1,024 NPUs share two breakdown objects: two rows computed, not 1,024."""
    from simpy_astra.report import timeline
    from simpy_astra.report.breakdown import Breakdown

    a = Breakdown(100, {"compute.gemm": 100}, segments=[(0, 100, "compute.gemm")])
    b = Breakdown(100, {"bubble": 100}, segments=[(0, 100, "bubble")])
    breakdowns = {n: a if n < 512 else b for n in range(1024)}
    calls = []
    real = timeline._cells
    monkeypatch.setattr(timeline, "_cells", lambda *args: calls.append(1) or real(*args))
    rows, end = timeline.timeline_rows(breakdowns, width=10)
    assert end == 100 and len(rows) == 1024 and len(calls) == 2
    assert rows[0][1] == ["compute"] * 10 and rows[-1][1] == ["bubble"] * 10


def test_a_column_shows_the_part_that_filled_most_of_it() -> None:
    """100,000 stretches of 1 ns, every third comm.tp, in 2,000 columns of 50 ns: each column
    is 2/3 compute; a row ending at 60% of the width leaves the rest empty (or idle)."""
    from simpy_astra.report.columns import dominant

    segments = [(k, k + 1, "compute.gemm" if k % 3 else "comm.tp") for k in range(100_000)]
    assert dominant(segments, 2000, 100_000) == ["compute.gemm"] * 2000
    # 0..30 comm.tp, 30..60 bubble, past 60 nothing: columns of 10 ns
    row = [(0, 30, "comm.tp"), (30, 60, "bubble")]
    assert dominant(row, 10, 100) == ["comm.tp"] * 3 + ["bubble"] * 3 + [""] * 4
    assert dominant(row, 10, 100, past="idle")[5:] == ["bubble"] + ["idle"] * 4
    # 0..14 gemm, 14..20 tp in the 10-ns columns: 4 of gemm and 6 of tp -> tp has the second
    assert dominant([(0, 14, "compute.gemm"), (14, 20, "comm.tp")], 2, 20) == ["compute.gemm", "comm.tp"]



@pytest.mark.parametrize("seed", range(6))
def test_the_array_columns_pick_a_part_that_filled_most_of_each(seed: int) -> None:
    """Random rows (gaps, stretches shorter and longer than a column): per column the array
    sums pick a part whose exact share of it is the largest (any of them on a tie), idle past
    the row's end when asked, and nothing where nothing is drawn."""
    import random

    from simpy_astra.report.columns import as_arrays, dominant_codes

    rng = random.Random(seed)
    parts = ["compute.gemm", "comm.tp", "comm.dp", "bubble", "memory"]
    t, row = 0, []
    for _ in range(rng.randrange(1, 400)):
        t += rng.choice((0, 0, rng.randrange(1, 50)))  # a gap, sometimes
        length = rng.choice((1, rng.randrange(1, 30), rng.randrange(1, 3000)))
        row.append((t, t + length, rng.choice(parts)))
        t += length
    for width in (1, 7, 60, 2000):
        bucket = -(-t * 5 // 4 // width)  # whole ns per column, the row ending before the last
        for past in (None, "idle"):
            best, order = dominant_codes(None, width, width * bucket, past=past, arrays=as_arrays(row))
            for col, k in enumerate(best.tolist()):
                lo, hi = col * bucket, (col + 1) * bucket
                share: dict[str, int] = {}
                for s, e, part in row:
                    if min(e, hi) > max(s, lo):
                        share[part] = share.get(part, 0) + min(e, hi) - max(s, lo)
                if past is not None and bucket > sum(share.values()):
                    share[past] = share.get(past, 0) + bucket - sum(share.values())
                most = max(share.values(), default=0)
                assert (k < 0) if not most else order[k] in {p for p, ns in share.items() if ns == most}


def test_top_level_help_lists_every_generator_and_run_help_shows_cluster(capsys) -> None:
    from simpy_astra.workloads.generated import GENERATORS

    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    for name, entry in GENERATORS.items():
        if entry.command:
            assert re.search(rf"\b{name}\b", text.split("ASTRA-sim's flag form")[0]), name
    assert "megatron" in text
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    run_help = capsys.readouterr().out
    assert "cluster:" in run_help and "preset: dgx-a100-80gb" in run_help and "generate: megatron" in run_help


@pytest.mark.parametrize(("argv", "where"), [
    (["generate", "megatron", "--gpus", "8", "--output", "x", "--num-layers", "4"], "after --"),
    (["run", "s.yaml", "--tensor-model-parallel-size", "2"], "workload: {generate: megatron"),
])
def test_megatron_flags_among_our_own_say_where_they_go(capsys, argv: list[str], where: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "it is a Megatron-LM argument" in err[0] and where in err[0], err


FOUR_DIMS = """\
workload: {generate: microbench, collective: all_reduce, size: 65536, num_npus: 16}
system: {scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: 10,
         active-chunks-per-dimension: 1, preferred-dataset-splits: 1,
         all-reduce-implementation: [ring, ring, ring, ring], all-gather-implementation: [ring, ring, ring, ring],
         reduce-scatter-implementation: [ring, ring, ring, ring], all-to-all-implementation: [direct, direct, direct, direct]}
network: {topology: [Switch, Ring, Ring, Ring], npus_count: [2, 2, 2, 2], bandwidth: [50, 50, 50, 50],
          latency: [500, 500, 500, 500]}
"""


def test_an_unpriced_network_is_quiet_unless_cost_was_asked_for(tmp_path: Path, capsys, monkeypatch) -> None:
    """Four dimensions put the first on a tile, where the default table prices no switch:
    nothing said unless the scenario has a cost: block; a priced table is in GiB/s."""
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    plain, asked = tmp_path / "plain.yaml", tmp_path / "asked.yaml"
    plain.write_text(FOUR_DIMS)
    asked.write_text(FOUR_DIMS + "cost: {link: 5.0}\n")
    _, err = _run(capsys, "run", str(plain))
    assert "network cost" not in err
    _, err = _run(capsys, "run", str(asked))
    assert "network cost: unknown (dimension 0 (Switch, tier tile) has switchs" in err
    _, err = _run(capsys, "run", str(DEFAULT))
    header = next(ln for ln in err.splitlines() if ln.lstrip().startswith("dim "))
    assert "GiB/s" in header.split() and "GB/s" not in header.split()


def test_folding_that_falls_back_says_so_in_one_short_line(capsys, monkeypatch) -> None:
    """The fat tree's folded run meets a tie it cannot keep and runs unfolded: one short note;
    --verbose gives the reason in full."""
    monkeypatch.setenv("COLUMNS", "80")
    argv = ["run", str(ROOT / "scenarios" / "fat_tree_all_to_all.yaml"), "--network-backend", "congestion_aware"]
    _, err = _run(capsys, *argv)
    notes = [ln for ln in err.splitlines() if "unfolded" in ln]
    assert len(notes) == 1 and notes[0].startswith("note: ") and len(notes[0]) <= 80
    _, err = _run(capsys, *argv, "--verbose")
    assert "warning: symmetry folding undone: messages of NPUs" in err



@pytest.mark.parametrize(("bars", "alike", "upright"), [(16, 64, True), (4, 8, False), (17, 1, False), (48, 64, True)])
def test_breakdown_png_bar_labels_stand_upright_exactly_when_flat_ones_would_overlap(
        bars: int, alike: int, upright: bool) -> None:
    """breakdown.png's x labels stand upright whenever, laid flat, the longest would be wider than
    a bar's slot (16 bars of '128 x64' overlapped flat: labels used to turn only past 16 bars),
    and stay flat when they fit (17 bars '0' .. '16')."""
    from simpy_astra.report.breakdown import Breakdown
    from simpy_astra.report.plots import CHAR_IN, LABEL_GAP_IN, breakdown_figure, labels_overlap

    distinct = [Breakdown(1000 + k, {"compute.gemm": 1000 + k}) for k in range(bars)]
    fig = breakdown_figure({n: distinct[n // alike] for n in range(bars * alike)})
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.texts]  # a text per bar
    assert len(labels) == bars and labels[1] == (f"{alike} x{alike}" if alike > 1 else "1")
    slot = ax.get_position().width * fig.get_figwidth() / bars  # inches per bar
    assert labels_overlap(labels, slot * bars) is upright
    assert bool(CHAR_IN * max(map(len, labels)) + LABEL_GAP_IN > slot) is upright
    assert {t.get_rotation() for t in ax.texts} == {90.0 if upright else 0.0}


def test_timeline_png_past_16_rows_labels_about_16_evenly_and_draws_every_row() -> None:
    """A 64-stage pipeline's Gantt chart: 64 rows, every fourth labelled from stage 0 on (each
    label is a tick and a text: most of the chart's cost, issue 51); up to 16 rows, each one."""
    from simpy_astra.report.breakdown import Breakdown
    from simpy_astra.report.plots import label_every, timeline_figure

    assert [label_every(n) for n in (1, 16, 17, 32, 64, 65)] == [1, 1, 2, 2, 4, 5]
    stages = {n: Breakdown(100 + n, {"compute.gemm": 100 + n}, segments=[(0, 100 + n, "compute.gemm")])
              for n in range(64)}
    ax = timeline_figure(stages, replica=list(range(64))).axes[0]
    labels = [t.get_text() for t in ax.texts]  # a text per labelled row
    assert labels == [f"stage {s}: NPU {s}" for s in range(0, 64, 4)]
    assert ax.get_ylim() == (63.5, -0.5) and ax.images[0].get_array().shape[0] == 64 * 5  # every row drawn


def test_timeline_png_draws_a_row_whose_arrays_name_a_part_it_never_shows() -> None:
    """The sweep's arrays name every part of the run (idle among them) whether or not a row
    shows it; the Gantt image colours only what fills its columns."""
    import numpy as np

    from simpy_astra.report.breakdown import Breakdown
    from simpy_astra.report.plots import timeline_figure

    arrays = (np.array([0, 60]), np.array([60, 100]), np.array([0, 1]), ["compute.gemm", "bubble", "idle", "comm.tp"])
    b = Breakdown(100, {"compute.gemm": 60, "bubble": 40}, arrays=arrays)
    assert b.segments == [(0, 60, "compute.gemm"), (60, 100, "bubble")]
    fig = timeline_figure({0: b})
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["compute.gemm", "bubble"]


def test_quick_legend_draws_what_matplotlibs_legend_would() -> None:
    """The plots' legend is a few plain artists (issue 51: matplotlib's Legend was about a fifth
    of a picture's cost): with the same settings, the same picture pixel for pixel as
    matplotlib's, beside the axes (one column, framed, boxes without edges, as breakdown.png's)
    and below them (columns of unequal length, no frame, boxes edged, as timeline.png's)."""
    import numpy as np
    from matplotlib.patches import Patch

    from simpy_astra.report.plots import agg_figure
    from simpy_astra.report.quick_artists import QuickLegend, attach

    names = ["compute.gemm", "compute.elementwise", "compute.optimizer", "comm.tp", "comm.dp", "comm.pp", "bubble"]
    colours = ["#2ca02c", "#bcbd22", "#17becf", "#d62728", "#1f77b4", "#ff7f0e", "#7f7f7f"]
    for beside in (True, False):
        pictures, boxes = [], []
        for quick in (True, False):
            fig, ax = agg_figure(8.0, 5.0)
            if quick:
                legend = attach(QuickLegend(ax if beside else fig, names, colours, (1.0, 0.5) if beside else (0.5, 0.0),
                                            "center left" if beside else "lower center", ncols=1 if beside else 5,
                                            frame=beside, box_edge=0.0 if beside else 1.0))
                assert (ax.get_legend() if beside else fig.legends[0]) is legend
            elif beside:
                handles = [Patch(facecolor=c, edgecolor="none", linewidth=0, label=n)
                           for n, c in zip(names, colours, strict=True)]
                legend = ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
            else:
                handles = [Patch(color=c, label=n) for n, c in zip(names, colours, strict=True)]
                legend = fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.0), ncol=5,
                                    fontsize=8, frameon=False)
            fig.canvas.draw()
            assert [t.get_text() for t in legend.get_texts()] == names
            boxes.append(legend.get_window_extent().bounds)
            frame = legend.get_window_extent()
            for text in legend.get_texts():  # each name where it is drawn, within the legend
                box = text.get_window_extent()
                assert frame.x0 < box.x0 and box.x1 < frame.x1 and frame.y0 < box.y0 and box.y1 < frame.y1
            pictures.append(np.asarray(fig.canvas.buffer_rgba()).copy())
        assert all(abs(a - b) < 0.5 for a, b in zip(*boxes, strict=True)), boxes
        assert (pictures[0] == pictures[1]).all()


@pytest.mark.parametrize("top", [1.0, 21.84, 20_800.0])
def test_numeric_ticks_draw_what_matplotlibs_ticks_would(top: float) -> None:
    """The plots' numeric axes are a text per tick and a line of marks (issue 51: a matplotlib
    tick is two lines and two texts, about a millisecond each): the same picture, pixel for
    pixel, as matplotlib's MaxNLocator(5) ticks with their labels, on either axis."""
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    from simpy_astra.report.plots import agg_figure
    from simpy_astra.report.quick_artists import TickLabels, numeric_ticks

    for axis in ("x", "y"):
        pictures = []
        for quick in (True, False):
            fig, ax = agg_figure(6.0, 4.0)
            (ax.set_xlim if axis == "x" else ax.set_ylim)(0.0, top)
            ax.set_xlabel("time (ms)")
            ax.set_ylabel("time (s)")
            if quick:
                ticks = numeric_ticks(ax, axis)
                assert isinstance(ticks, TickLabels) and ticks in ax.artists and not ax.texts
                labels = [t.get_text() for t in ticks.texts]
            else:
                (ax.xaxis if axis == "x" else ax.yaxis).set_major_locator(MaxNLocator(nbins=5))
            fig.canvas.draw()
            if not quick:
                which = ax.xaxis if axis == "x" else ax.yaxis
                shown = zip(which.get_majorticklocs(), which.get_ticklabels(), strict=True)
                assert labels == [t.get_text() for loc, t in shown if 0.0 <= loc <= top]  # those drawn
            pictures.append(np.asarray(fig.canvas.buffer_rgba()).copy())
        assert (pictures[0] == pictures[1]).all()


def test_a_long_preparation_says_so_before_time_starts(job: Path, capsys, monkeypatch) -> None:
    """Reading a large job's inputs and writing its traces took a minute or two before the
    run's own progress line, with no sign. The notice starts before the inputs are read and
    stops once the simulation is built, before time starts."""
    from simpy_astra.cli import run as run_module
    from simpy_astra.simulation import Simulation

    order: list[str] = []

    class Notice:
        def __enter__(self):
            order.append("start")
            return self

        def stop(self) -> None:
            order.append("stop")

        def __exit__(self, *exc) -> None:
            self.stop()

    real_run = Simulation.run
    monkeypatch.setattr(run_module, "PreparingNotice", Notice)
    monkeypatch.setattr(Simulation, "run", lambda self: order.append("time starts") or real_run(self))
    assert main(["run", str(job), "--quiet"]) == 0
    assert order[:3] == ["start", "stop", "time starts"]


def test_the_preparing_notice_prints_after_its_delay_and_clears_itself(monkeypatch) -> None:
    import io
    import threading

    from simpy_astra.report.preparing import PreparingNotice

    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "1")  # a log file that asked for progress lines
    stream = io.StringIO()
    notice = PreparingNotice(stream, after_s=0.0, every_s=0.01)
    printed = threading.Event()
    real_show = notice.show
    notice.show = lambda elapsed_s: (real_show(elapsed_s), printed.set())
    with notice:
        assert printed.wait(30)  # a bound for a loaded machine, not a timing claim
    lines = stream.getvalue().splitlines()
    assert lines and all(re.fullmatch(r"preparing the run \(inputs and traces\): \d+ s elapsed", x) for x in lines)
    quiet = io.StringIO()
    with PreparingNotice(quiet, after_s=3600.0):
        pass
    assert quiet.getvalue() == ""  # a short preparation prints nothing
