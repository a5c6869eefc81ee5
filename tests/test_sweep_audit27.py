"""Audit 27: sweeps of real jobs and the researcher's console (docs/sweeps.md)."""

from __future__ import annotations

from pathlib import Path

import yaml

from simpy_astra.sweep.best import Outcome
from simpy_astra.sweep.spec import Point, load_sweep

ROOT = Path(__file__).resolve().parents[1]


def _spec(tmp_path: Path):
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"base": str(ROOT / "scenarios" / "default.yaml"),
                                    "axes": {"network.bandwidth": [1, 2]}}))
    return load_sweep(str(path))


def _outcomes(n: int) -> list[Outcome]:
    """``n`` finished points of a bandwidth axis, with the figures the plots read."""
    figures = {"status": "ok", "error": "", "finish_ns": 0, "compute_ns": 25_000, "exposed_comm_ns": 0,
               "peak_memory_gb": 1.0, "breakdown_compute_ns": 25_000, "breakdown_comm_other_ns": 0,
               "memory_per_gpu_gib": 2.0, "iteration_time_ns": 0, "memory_capacity_gib": 80, "fits": 1}
    return [Outcome(Point(f"k{i}", {"network.bandwidth": i + 1}, {}),
                    {**figures, "finish_ns": 50_000 + i, "iteration_time_ns": 50_000 + i,
                     "breakdown_comm_other_ns": 25_000 + i}) for i in range(n)]


def _drawn(monkeypatch, spec, n: int, tmp_path: Path) -> dict[str, tuple[int, int]]:
    """Per picture: (the artists its axes hold, the tick labels on its x axis)."""
    from simpy_astra.sweep import plots

    seen: dict[str, tuple[int, int]] = {}

    def look(fig, out_dir: str, name: str) -> str:
        ax = fig.axes[0]
        labelled = [t for t in ax.get_xticklabels() if t.get_text()]
        seen[name] = (len(ax.patches) + len(ax.collections), len(labelled))
        return name

    monkeypatch.setattr(plots, "_save", look)
    plots.write_plots(spec, _outcomes(n), str(tmp_path), {"k0"})
    return seen


def test_a_sweeps_pictures_cost_the_same_at_any_number_of_points(monkeypatch, tmp_path):
    """A sweep of 2,000 quick points spent 62 to 88 s drawing its four bar charts (a patch and a
    tick per bar, 8,000 of each), a third of its simulations' time. Each series is now one
    artist, and the x axis labels at most the bars a 7-point label fits under: the picture's
    width (40 in at most, 100 dpi) over a label's height."""
    spec = _spec(tmp_path)
    few = _drawn(monkeypatch, spec, 20, tmp_path)
    many = _drawn(monkeypatch, spec, 2000, tmp_path)
    assert set(few) == set(many) == {"time.png", "split.png", "breakdown.png", "memory.png", "time_memory.png"}
    for name in few:
        assert many[name][0] == few[name][0], name  # artists: as many at 2,000 points as at 20
    # every bar of 20 is labelled; of 2,000 at most 4,000 px / (7 pt at 100 dpi = 9.7 px) = 411
    assert few["time.png"][1] == 20
    assert 0 < many["time.png"][1] <= 40 * 100 // (7 * 100 / 72)


def _bandwidth_sweep(tmp_path: Path, values: list[int]) -> str:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"name": "bw", "base": str(ROOT / "scenarios" / "default.yaml"),
                                    "axes": {"network.bandwidth": values}, "minimise": "finish_ns"}))
    return str(path)


def test_a_resumed_sweeps_best_so_far_counts_the_rows_it_already_has(monkeypatch, tmp_path, capsys):
    """Resumed with an axis widened, a sweep's progress said 'best so far' of the best new point
    (here bandwidth=3), though results.csv already held a faster one (bandwidth=100) that the
    summary then named best: the progress now starts from the rows it has."""
    from simpy_astra.cli.sweep import main as sweep_main
    from simpy_astra.sweep import runner

    out = str(tmp_path / "out")
    assert sweep_main([_bandwidth_sweep(tmp_path, [100]), "--out", out, "--jobs", "1", "--no-plots"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(runner, "PLAIN_POINT_LINES", 1)  # the tenths' lines, with their best so far
    assert sweep_main([_bandwidth_sweep(tmp_path, [100, 1, 2, 3]), "--out", out, "--jobs", "1", "--no-plots"]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "best so far" in line]
    assert said and all("bandwidth=100:" in line for line in said), said


def test_the_shipped_layout_sweeps_page_output_is_what_its_best_point_runs():
    """docs/sweeps.md's output of megatron_layouts.yaml said 27,978,974,178 ns for its best point
    (tp 8, pp 8, mb 2, full recomputation) after the model moved to 27,977,691,703 ns (no embedding
    rerun under full recomputation): its table's first row and its best lines are held to that
    point run as the sweep runs it (the whole sweep takes minutes, one point seconds)."""
    import re

    from simpy_astra.sweep.point import run_point

    page = (ROOT / "docs" / "sweeps.md").read_text()
    block = page[page.index("sweep megatron_layouts: "):]
    block = block[:block.index("```")]
    # the table's two halves, as the page joins them
    row = re.search(r"^ 1  8   8   2   full +yes +([\d,]+) +([\d.]+) +([\d.]+) +([\d.]+)$", block, re.M)
    best = re.search(r"^best: tp=8 pp=8 mb=2 recompute=full -> ([\d,]+) ns$", block, re.M)
    assert row and best, "the page's output no longer names tp 8 pp 8 mb 2 full first"
    spec = load_sweep(str(ROOT / "scenarios" / "sweeps" / "megatron_layouts.yaml"))
    point = next(p for p in spec.points() if p.label == "tp=8 pp=8 mb=2 recompute=full")
    figures = run_point(point.scenario, point.where(spec.path))
    assert figures["status"] == "ok", figures["error"]
    assert row.group(1) == best.group(1) == f"{figures['iteration_time_ns']:,}"
    assert (row.group(2), row.group(3)) == (f"{figures['tflops_per_gpu']:.2f}", f"{figures['mfu']:.3f}")
    assert row.group(4) == f"{figures['memory_per_gpu_gib']:.2f}"
    line = f"  step {figures['iteration_time_ns'] / 1e9:.3f} s; per GPU {figures['tflops_per_gpu']:.1f} TFLOP/s"
    assert line in block


def test_a_sweeps_answer_is_its_standard_output_as_runs_is(tmp_path, capsys):
    """A sweep wrote nothing on stdout: `sweep ... > best.txt` kept an empty file, and its
    answer came last on stderr, under the progress lines and both halves of the table. The best
    lines are now its stdout (alone in a file; on a terminal under the table, as run's answer,
    only the closing 'wrote ...' line after them), and the progress and table stay on stderr."""
    from simpy_astra.cli.sweep import main as sweep_main

    path = _bandwidth_sweep(tmp_path, [50, 100])
    assert sweep_main([path, "--out", str(tmp_path / "out"), "--jobs", "1", "--no-plots"]) == 0
    said = capsys.readouterr()
    assert said.out.startswith("best: bandwidth=100 -> "), said
    assert "best:" not in said.err and said.err.startswith("sweep bw: 2 points")
    assert "\x1b" not in said.out and all(len(line) <= 80 for line in said.out.splitlines())


def test_the_memory_picture_marks_the_layouts_that_do_not_fit_their_gpu(monkeypatch, tmp_path):
    """megatron_layouts' memory.png drew its ten layouts that do not fit 80 GiB (up to 249 GiB)
    as blue as the six that do, and no capacity: only a cap the sweep wrote was drawn. A
    point's own fits and its GPU's capacity now mark it, as time_memory.png does."""
    from matplotlib.colors import to_rgba

    from simpy_astra.sweep import plots

    drawn = {}
    monkeypatch.setattr(plots, "_save", lambda fig, out_dir, name: drawn.setdefault(name, fig.axes[0]) and name)
    done = _outcomes(3)
    for o, gib in zip(done, (60.0, 120.0, 79.0), strict=True):
        o.figures.update(peak_memory_gb=gib, memory_per_gpu_gib=gib, fits=int(gib <= 80))
    plots.write_plots(_spec(tmp_path), done, str(tmp_path), {"k0"})
    ax = drawn["memory.png"]
    red = to_rgba("tab:red")
    assert [tuple(c) == red for c in ax.collections[0].get_facecolors()] == [False, True, False]
    assert [line.get_ydata()[0] for line in ax.get_lines()] == [80]  # the GPU's capacity


def test_a_progress_line_says_when_its_point_does_not_fit(tmp_path, capsys):
    """In a pipe each finished point's line read 'hbm_gib=1: 36,844,283 ns', a layout too large
    for its GPU as plain as one that fits (it is never named best, and the faster selective
    layouts of megatron_layouts all read so); the line now says '(too large)', as the answer's
    memory does."""
    from simpy_astra.cli.sweep import main as sweep_main
    from tests.scenario_files import megatron_sweep

    path = megatron_sweep(tmp_path, {"cluster.gpu.hbm_gib": [1, 80]})
    assert sweep_main([path, "--out", str(tmp_path / "out"), "--jobs", "1", "--no-plots"]) == 0
    done = [line for line in capsys.readouterr().err.splitlines() if line.startswith("sweep: ")]
    assert len(done) == 2, done
    assert done[0].startswith("sweep: 1/2 done; hbm_gib=1: ") and done[0].endswith(" ns (too large)")
    assert done[1].startswith("sweep: 2/2 done; hbm_gib=80: ") and done[1].endswith(" ns")
