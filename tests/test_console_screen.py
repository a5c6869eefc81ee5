"""The researcher's console as a person sees it: a command run in an 80 x 24 terminal, and the
same command piped.

Complaint: "the answer is buried". A real job printed its answer first on stdout, then 60 to
100 lines of summary and timeline on stderr: in a terminal the answer had scrolled out of view
before the command ended. Piped, a run over a second long also wrote progress lines into
stderr's log, and the ``--quiet`` headline of ASTRA-sim inputs was 98 to 106 columns wide.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.terminal import ANSI, run_in_terminal
from tests.test_console import JOB

ROOT = Path(__file__).resolve().parents[1]
ROWS, COLUMNS = 24, 80


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SIMPY_ASTRA_PROGRESS", "COLUMNS", "LINES")}
    return {**env, "SIMPY_ASTRA_CACHE": str(tmp_path / "cache"), **extra}


def _screen(argv: list[str], cwd: Path, env: dict[str, str]) -> list[str]:
    """The lines an 80 x 24 terminal holds when ``argv`` ends (stdout and stderr both on it),
    escapes dropped; a line redrawn in place (``\\r``) shows its last drawing."""
    code, text = run_in_terminal(argv, cwd, env, ROWS, COLUMNS)
    assert code == 0
    lines = [ln.split("\r")[-1] for ln in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


@pytest.fixture
def job(tmp_path: Path) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(JOB)
    return path


def test_a_real_jobs_answer_is_on_screen_when_the_command_ends(job: Path, tmp_path: Path) -> None:
    """In a 24-row terminal the last 24 lines hold the headline, the memory line and the whole
    where-the-time-went table (before: the headline was 70 lines up)."""
    lines = _screen([sys.executable, "-m", "simpy_astra", "run", str(job)], tmp_path, _env(tmp_path))
    shown = lines[-ROWS:]
    assert len(lines) > ROWS  # the summary and timeline are there too, above it
    assert [ln for ln in lines if len(ln) > COLUMNS] == []
    first = next(i for i, ln in enumerate(shown) if ln.startswith("iteration time "))
    assert "TFLOP/s" in shown[first] and "MFU" in shown[first]
    assert shown[first + 1].startswith("memory per GPU about ") and "(fits)" in shown[first + 1]
    assert any(re.match(r"[\s\u2502\u2503]*finish\s", ln) for ln in shown[first:])  # the table's last row


def test_a_piped_run_is_plain_text_with_the_answer_first_and_no_progress(job: Path, tmp_path: Path) -> None:
    """Piped (progress left at its default): stdout starts with the answer; neither stream has
    an escape, a carriage return, box drawing or a progress line; every line fits 80 columns."""
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(job)], cwd=tmp_path,
                          env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out, err = done.stdout.splitlines(), done.stderr.splitlines()
    assert out[0].startswith("iteration time ") and out[1].startswith("memory per GPU about ")
    for line in out + err:
        assert "\x1b" not in line and "\r" not in line and not re.search("[\u2500-\u259f]", line), line
        assert len(line) <= COLUMNS, line
    assert not [ln for ln in err if ln.startswith(("simulating:", "preparing the run"))]


def test_astra_sim_inputs_end_their_summary_with_the_step_time(tmp_path: Path) -> None:
    """The default scenario: stdout is the reference's 32 lines, unchanged; stderr's summary ends
    with the headline, the step's time 142,780 ns (tests/test_cli.py derives it)."""
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(ROOT / "scenarios" / "default.yaml")],
                          cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "sys[0] finished, 142780 cycles, exposed communication 117780 cycles."
    assert len(done.stdout.splitlines()) == 32
    assert done.stderr.splitlines()[-1] == "iteration time 142,780 ns (last: NPU 0 of 8, exposed comm 117,780 ns)"


def test_the_quiet_headline_fits_80_columns() -> None:
    """The two-job fat tree's figures (README): 106 columns before; the wording with its exposed
    communication fits, and one too wide for it leaves that out rather than pass 80 columns."""
    from simpy_astra.report.answer import headline

    def npu(i: int, finish: int, exposed: int) -> SimpleNamespace:
        return SimpleNamespace(npu_id=i, finished_cycles=finish, exposed_comm_cycles=exposed)

    two_jobs = [npu(i, 14_710_804, 0) for i in range(16)]
    two_jobs[2] = npu(2, 14_891_000, 13_192_716)
    assert headline(two_jobs) == "iteration time 14,891,000 ns (last: NPU 2 of 16, exposed comm 13,192,716 ns)"
    huge = [npu(i, 9_000_000_000_000_000_000, 8_000_000_000_000_000_000) for i in range(100_000)]
    assert headline(huge) == "iteration time 9,000,000,000,000,000,000 ns (last to finish: NPU 0 of 100,000)"
    assert len(headline(huge)) <= COLUMNS


def test_progress_is_for_a_terminal_unless_asked_for(monkeypatch) -> None:
    from simpy_astra.report.console import progress_wanted

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("SIMPY_ASTRA_PROGRESS", raising=False)
    assert progress_wanted(Terminal()) and not progress_wanted(io.StringIO())
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "1")  # a batch run's log that wants them
    assert progress_wanted(io.StringIO())
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")
    assert not progress_wanted(Terminal())


def test_a_sweeps_winner_is_named_by_its_axes_short_names_with_its_answer_within_80_columns() -> None:
    """megatron_layouts' best (docs/sweeps.md): 162 to 177 columns before, the axes by their
    dotted paths (``workload.args.tensor-model-parallel-size=8, ...``) and no TFLOP/s, MFU or
    memory; now the names the table uses and run's answer below, shown once per point."""
    from simpy_astra.report.console import Output
    from simpy_astra.sweep.axes import Axis
    from simpy_astra.sweep.summary import _winner

    args = "workload.args."
    spec = SimpleNamespace(axes=[Axis(f"{args}tensor-model-parallel-size", "tp", (4, 8)),
                                 Axis(f"{args}pipeline-model-parallel-size", "pp", (8, 16)),
                                 Axis(f"{args}micro-batch-size", "mb", (2, 4)),
                                 Axis("recompute", "recompute", ("full", "selective"))],
                           goals=SimpleNamespace(objective=SimpleNamespace(text="iteration_time_ns")))
    entry = {"key": "ca6dd9947bed", "objective": 28_307_589_178,
             "coordinates": {f"{args}tensor-model-parallel-size": 8, f"{args}pipeline-model-parallel-size": 8,
                             f"{args}micro-batch-size": 2, "recompute": "full"},
             "figures": {"iteration_time_ns": 28_307_589_178, "tflops_per_gpu": 155.621, "mfu": 0.37442,
                         "memory_per_gpu_gib": 62.219, "memory_capacity_gib": 80, "fits": 1}}
    stream = io.StringIO()
    out, named = Output(stream, rich=False), set()
    _winner(out, spec, "best", entry, named)
    _winner(out, spec, "best with mfu > 0.3", entry, named)
    _winner(out, spec, "best with tflops_per_gpu * mfu > 50 and memory_per_gpu_gib < 70", entry, named)
    assert stream.getvalue().splitlines() == [
        "best: tp=8 pp=8 mb=2 recompute=full -> 28,307,589,178 ns",
        "  step 28.308 s; per GPU 155.6 TFLOP/s, MFU 37.4%, 62.2 of 80 GiB (fits)",
        "best with mfu > 0.3: tp=8 pp=8 mb=2 recompute=full -> 28,307,589,178 ns",
        "best with tflops_per_gpu * mfu > 50 and memory_per_gpu_gib < 70: tp=8 pp=8 mb=2",
        "  recompute=full -> 28,307,589,178 ns"]


def test_a_continued_tables_title_is_one_line_on_a_terminal() -> None:
    """The per-NPU table of a 1,536-GPU run goes on in a narrow table (NPU, overlap): its title,
    'simpy-astra: 1536 NPUs simulated in 0.85 s (continued)', was wrapped by rich into three
    lines over it. A title wider than its table is '(continued)' alone."""
    from simpy_astra.report.console import Output

    stream = io.StringIO()
    out = Output(stream, rich=True)
    out.console.width = COLUMNS
    figure = "24,682,731,151"
    out.table("simpy-astra: 1536 NPUs simulated in 0.85 s", ("NPU", "finished (ns)", "exposed comm (ns)",
              "GPU time", "Comm time", "overlap"), [(str(i), *[figure] * 5) for i in range(3)])
    lines = ANSI.sub("", stream.getvalue()).splitlines()
    titles = [ln.strip() for ln in lines if ln.strip() and not re.match("[\u2500-\u259f]", ln.strip())
              and not re.match("[\u2500-\u259f]", ln.strip()[0])]
    assert titles == ["simpy-astra: 1536 NPUs simulated in 0.85 s", "(continued)"]
    assert all(len(ln) <= COLUMNS for ln in lines)


def test_a_sweeps_pictures_are_drawn_without_pyplot_and_carry_their_title(tmp_path: Path) -> None:
    """The pictures at a sweep's end took 2.3 to 2.6 s for 16 points (pyplot's import, its text
    layout, Pillow's PNG filter search): now drawn as run --plots draws, whole PNGs that say
    what they show, the x axis named by the axes' short names."""
    sweep = tmp_path / "bw.yaml"
    sweep.write_text(f"base: {ROOT / 'scenarios' / 'default.yaml'}\n"
                     "axes:\n  network.bandwidth: {values: [25, 50], as: bw}\n")
    code = ("import sys; from simpy_astra.cli.sweep import main; "
            f"code = main([{str(sweep)!r}, '--out', {str(tmp_path / 'out')!r}, '--jobs', '1']); "
            "print(code, 'matplotlib.pyplot' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                          text=True, timeout=600)
    assert done.stdout.splitlines()[-1].split() == ["0", "False"], done.stderr  # below the answer
    from PIL import Image

    for name, title in (("time.png", "bw: time per point"), ("breakdown.png", "bw: where the last NPU's time went")):
        with Image.open(tmp_path / "out" / name) as picture:
            assert picture.size == (600, 480) and picture.text["Title"] == title


def test_json_out_is_the_standard_librarys_indented_text() -> None:
    """--json-out encodes each distinct NPU entry once (a folded run's NPUs share their
    representative's figures): the text must be json.dump(data, indent=1)'s, byte for byte,
    whatever the values (nested, empty, non-ASCII, floats, None, non-mappings under 'npus')."""
    from simpy_astra.report.json_text import indented_json

    npu = {"finished_ns": 24_682_731_151, "breakdown_ns": {"compute.gemm": 15_659_136_000, "bubble": 0},
           "roofline": {"x": 0.5, "y": None}, "peak_memory": "65.98 GB", "empty": {}, "list": [1, [], {"a": True}]}
    data = {"simpy_astra_version": "0.1", "inputs": {"scénario.yaml": "ab" * 32}, "units": "ns",
            "iteration_time_ns": 24_682_731_151, "npus": {str(i): dict(npu, npu=i % 3) for i in range(7)},
            "simulator_wall_s": 1.25, "links": [], "jobs": {}, "cost": {"items": [{"usd": 1.5e-3}]}}
    for case in (data, {**data, "npus": {"0": 1, "1": [1, 2], "2": {}}}, {**data, "npus": {}}, {}, {1: "a"}):
        assert indented_json(case) == json.dumps(case, indent=1)


def test_a_runs_json_out_reads_back_to_the_same_text(job: Path, tmp_path: Path) -> None:
    figures = tmp_path / "figures.json"
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(job), "--quiet", "--json-out",
                           str(figures)], cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    text = figures.read_text()
    assert len(json.loads(text)["npus"]) == 64 and text == json.dumps(json.loads(text), indent=1)


def test_a_sweeps_megatron_winner_says_what_its_memory_is_made_of_within_80_columns() -> None:
    """The best layout's memory per GPU with its parts (results.csv's memory_<part>_gib), so the
    console says which part to cut; before, only the total and whether it fits."""
    from simpy_astra.report.console import Output
    from simpy_astra.sweep.axes import Axis
    from simpy_astra.sweep.summary import _winner

    spec = SimpleNamespace(axes=[Axis("workload.args.tensor-model-parallel-size", "tp", (2, 8))],
                           goals=SimpleNamespace(objective=SimpleNamespace(text="iteration_time_ns")))
    figures = {"iteration_time_ns": 12_880_347_025, "tflops_per_gpu": 565.4, "mfu": 0.57169,
               "memory_per_gpu_gib": 72.22, "memory_capacity_gib": 80, "fits": 1, "memory_weights_gib": 8.213,
               "memory_gradients_gib": 16.426, "memory_optimizer_gib": 3.08, "memory_activations_gib": 44.5,
               "memory_fp8_buffers_gib": 1234.5, "memory_total_gib": None}
    entry = {"key": "a0fbb626d28c", "objective": 12_880_347_025,
             "coordinates": {"workload.args.tensor-model-parallel-size": 2}, "figures": figures}
    stream = io.StringIO()
    _winner(Output(stream, rich=False), spec, "best", entry, set())
    lines = stream.getvalue().splitlines()
    assert lines[1] == "  step 12.880 s; per GPU 565.4 TFLOP/s, MFU 57.2%, 72.2 of 80 GiB (fits)"
    assert " ".join(line.strip() for line in lines[2:]) == (
        "memory GiB: weights 8.2, gradients 16.4, optimizer 3.1, activations 44.5, fp8 buffers 1234.5")
    assert all(len(line) <= 80 for line in lines) and len(lines) == 4
