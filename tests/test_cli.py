"""The two command-line forms end to end, on the shipped default scenario."""

from __future__ import annotations

import json
from pathlib import Path

from simpy_astra.cli.main import main
from tests.wrapped_lines import unwrapped

ROOT = Path(__file__).resolve().parents[1]


def default_step_ns() -> int:
    # 20 us compute + ring all-reduce of 1 MiB on 8 NPUs in 4 chunks + 5 us optimizer step
    n, chunk = 8, (1 << 20) // 4
    msg = chunk // n
    d = int(500 + msg / (50 * 2**30 / 1e9))
    reduce = 3 * int(msg / 50e9 * 1e9)
    return 20_000 + 4 * (10 + 2 * (n - 1) * (d + 10) + (n - 1) * reduce) + 5_000


def test_run_scenario_prints_reference_lines_and_json(tmp_path: Path, capsys) -> None:
    out_json = tmp_path / "figures.json"
    code = main(["run", str(ROOT / "scenarios" / "default.yaml"), "--json-out", str(out_json), "--reference-lines",
                 "--quiet"])
    assert code == 0
    stdout = capsys.readouterr().out
    total = default_step_ns()
    assert f"sys[0] finished, {total} cycles, exposed communication {total - 25_000} cycles." in stdout
    assert "sys[7], GPU time: 25000" in stdout
    figures = json.loads(out_json.read_text())["npus"]
    assert sorted(figures, key=int) == [str(i) for i in range(8)]
    assert figures["3"]["finished_cycles"] == total
    assert figures["3"]["gpu_time"] == 25_000


def test_astra_sim_flags(tmp_path: Path, capsys, monkeypatch) -> None:
    scenario = ROOT / "scenarios"
    (tmp_path / "sys.json").write_text(json.dumps({
        "scheduling-policy": "LIFO", "collective-optimization": "localBWAware", "endpoint-delay": 10,
        "active-chunks-per-dimension": 1, "preferred-dataset-splits": 4, "local-mem-bw": 50,
        "all-reduce-implementation": ["ring"]}))
    (tmp_path / "net.yml").write_text("topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n")
    (tmp_path / "mem.json").write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    monkeypatch.chdir(tmp_path)
    flags = [f"--workload-configuration={scenario}/workloads/step_8npus_1MB/step",
             "--system-configuration=sys.json", "--network-configuration=net.yml",
             "--remote-memory-configuration=mem.json", "--network-backend=congestion_unaware"]
    # ASTRA-sim ignores a flag it does not know; a mistyped one would then silently keep its
    # default, so here it is an error naming the flag (issue 27)
    assert main([*flags, "--some-flag-astra-sim-ignores=1"]) == 2
    assert "error: simpy-astra: --some-flag-astra-sim-ignores: unknown flag" in capsys.readouterr().err
    code = main(flags)
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.endswith(f"finished, {default_step_ns()} cycles, exposed communication "
                             f"{default_step_ns() - 25_000} cycles.") for line in lines) == 8


def test_aware_run_reports_link_statistics(tmp_path: Path, capsys) -> None:
    # ring all-reduce, 4 chunks: every clockwise link carries 4 x 14 messages of 32 KiB
    out_json = tmp_path / "figures.json"
    code = main(["run", str(ROOT / "scenarios" / "default.yaml"), "--network-backend", "congestion_aware",
                 "--json-out", str(out_json), "--quiet"])
    assert code == 0
    capsys.readouterr()
    links = json.loads(out_json.read_text())["links"]
    msg, messages = (1 << 20) // 4 // 8, 4 * 14
    clockwise = [lk for lk in links if lk["to"] == (lk["from"] + 1) % 8]
    assert len(clockwise) == 8
    for lk in clockwise:
        assert lk["bytes"] == messages * msg
        assert lk["busy_ns"] == messages * int(msg / (50 * 2**30 / 1e9))
    assert all(lk["bytes"] == 0 for lk in links if lk not in clockwise)


def test_accepted_but_unused_flags_warn(capsys) -> None:
    code = main(["--workload-configuration=x", "--system-configuration=missing.json",
                 "--network-configuration=n.yml", "--remote-memory-configuration=m.json",
                 "--compute-scale=2"])
    err = capsys.readouterr().err
    assert code == 2  # the missing files still stop the run
    assert "warning: --compute-scale 2 is accepted but changes nothing" in err


# ------------------------------------------------------------------ issue 16: the card's command, honest output
def test_scenario_path_without_subcommand_runs_it(capsys) -> None:
    code = main([str(ROOT / "scenarios" / "default.yaml"), "--reference-lines", "--quiet"])
    assert code == 0
    total = default_step_ns()
    assert f"sys[7] finished, {total} cycles" in capsys.readouterr().out


def test_run_help_points_at_documentation_that_exists(capsys) -> None:
    import pytest

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    assert "num_queues_per_dim" in text and "workload:" in text  # the schema itself
    for doc in ("scenarios/README.md",):
        assert doc not in text or (ROOT / doc).exists()


def test_json_lists_every_link_and_names_switches_by_strings(tmp_path: Path, capsys, monkeypatch) -> None:
    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.schema import COMM_COLL_NODE

    monkeypatch.chdir(tmp_path)
    # 2 x 4 NPUs: rings of 2 in dimension 0, a switch per group of 4 in dimension 1; the
    # all-reduce runs on dimension 0 only, so every switch link carries nothing
    for npu in range(8):
        write_et(f"w.{npu}.et", [make_node(0, "ar", COMM_COLL_NODE, attrs={
            "comm_type": 0, "comm_size": 4096, "involved_dim": [True, False], "is_cpu_op": False})])
    Path("s.yaml").write_text(
        "workload: w\nsystem: {preferred-dataset-splits: 1, all-reduce-implementation: [ring, ring]}\n"
        "network: {topology: [Ring, Switch], npus_count: [2, 4], bandwidth: [50, 50], latency: [500, 500]}\n"
        "backend: congestion_aware\n")
    assert main(["s.yaml", "--quiet", "--json-out", "f.json"]) == 0
    capsys.readouterr()
    links = json.loads(Path("f.json").read_text())["links"]
    devices = {d for lk in links for d in (lk["from"], lk["to"])}
    assert all(isinstance(d, int | str) for d in devices)
    switches = {d for d in devices if isinstance(d, str)}
    assert len(switches) == 2 and all("switch" in d for d in switches)
    assert len(links) == 4 * 2 + 2 * 4 * 2  # 4 rings of 2 (a link each way), 2 switches x 4 NPUs x 2
    assert [lk for lk in links if lk["bytes"] == 0] == [lk for lk in links if isinstance(lk["to"], str)
                                                        or isinstance(lk["from"], str)]


def test_local_memory_traces_are_announced(tmp_path: Path, capsys, monkeypatch) -> None:
    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.schema import COMP_NODE

    monkeypatch.chdir(tmp_path)
    Path("traces").mkdir()
    a = make_node(1, "a", COMP_NODE, duration_micros=1, attrs={"inputs": ("string_list", []), "outputs": ["t1", "1024"]})
    b = make_node(2, "b", COMP_NODE, deps=[1], duration_micros=1, attrs={"inputs": ["t1", "1024"],
                                                                         "outputs": ("string_list", [])})
    for npu in range(2):
        write_et(f"w.{npu}.et", [a, b])
    text = ("workload: w\nsystem: {preferred-dataset-splits: 1, track-local-mem: 1, "
            "local-mem-trace-filename: traces/mem}\n"
            "network: {topology: [Ring], npus_count: [2], bandwidth: [50], latency: [500]}\n")
    Path("s.yaml").write_text(text)
    assert main(["run", "--quiet", "s.yaml"]) == 0
    err = capsys.readouterr().err
    assert "note: wrote 2 local-memory trace(s)" in err and str(tmp_path / "traces" / "mem.0.json") in err
    assert sorted(p.name for p in Path("traces").iterdir()) == ["mem.0.json", "mem.1.json"]
    assert not list(Path().glob("local_mem_trace*"))
    Path("s.yaml").write_text(text.replace("traces/mem", "missing/mem"))
    assert main(["run", "--quiet", "s.yaml"]) == 2
    assert "s.yaml: system: field 'local-mem-trace-filename'" in capsys.readouterr().err


def test_trace_dir_takes_the_local_memory_traces(tmp_path: Path, capsys, monkeypatch) -> None:
    """--trace-dir: the traces of track-local-mem go there (made if missing), not into the
    working directory; an absolute local-mem-trace-filename stays where it says, and --trace-dir
    beside it, which nothing would read, is refused."""
    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.schema import COMP_NODE

    monkeypatch.chdir(tmp_path)
    a = make_node(1, "a", COMP_NODE, duration_micros=1, attrs={"inputs": ("string_list", []), "outputs": ["t1", "1024"]})
    for npu in range(2):
        write_et(f"w.{npu}.et", [a])
    text = ("workload: w\nsystem: {preferred-dataset-splits: 1, track-local-mem: 1}\n"
            "network: {topology: [Ring], npus_count: [2], bandwidth: [50], latency: [500]}\n")
    Path("s.yaml").write_text(text)
    assert main(["run", "--quiet", "s.yaml", "--trace-dir", "out/mem"]) == 0
    err = capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "out" / "mem").iterdir()) == ["local_mem_trace.0.json",
                                                                            "local_mem_trace.1.json"]
    assert str(tmp_path / "out" / "mem" / "local_mem_trace.0.json") in err
    assert not list(tmp_path.glob("local_mem_trace*"))
    Path("s.yaml").write_text(text.replace("track-local-mem: 1", f"track-local-mem: 1, local-mem-trace-filename: "
                                                                 f"{tmp_path}/abs/m"))
    (tmp_path / "abs").mkdir()
    assert main(["run", "--quiet", "s.yaml", "--trace-dir", "out/other"]) == 2
    assert "--trace-dir: " in capsys.readouterr().err and not (tmp_path / "out" / "other").exists()
    assert main(["run", "--quiet", "s.yaml"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in (tmp_path / "abs").iterdir()) == ["m.0.json", "m.1.json"]


def test_local_memory_traces_default_to_the_runs_output_folder(tmp_path: Path, capsys, monkeypatch) -> None:
    """Without --trace-dir, ASTRA-sim's bare file name (local_mem_trace) goes with the run's
    other outputs (--json-out's folder), or into runs/SCENARIO without any: never into the
    working directory (issue 39)."""
    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.schema import COMP_NODE

    monkeypatch.chdir(tmp_path)
    a = make_node(1, "a", COMP_NODE, duration_micros=1, attrs={"inputs": ("string_list", []), "outputs": ["t1", "1024"]})
    for npu in range(2):
        write_et(f"w.{npu}.et", [a])
    Path("s.yaml").write_text("workload: w\nsystem: {preferred-dataset-splits: 1, track-local-mem: 1}\n"
                              "network: {topology: [Ring], npus_count: [2], bandwidth: [50], latency: [500]}\n")
    names = ["local_mem_trace.0.json", "local_mem_trace.1.json"]
    assert main(["run", "--quiet", "s.yaml"]) == 0
    assert sorted(p.name for p in (tmp_path / "runs" / "s").iterdir()) == names
    assert str(tmp_path / "runs" / "s" / "local_mem_trace.0.json") in capsys.readouterr().err
    (tmp_path / "out").mkdir()
    assert main(["run", "--quiet", "s.yaml", "--json-out", "out/f.json"]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["f.json", *names]
    assert not list(tmp_path.glob("local_mem_trace*"))


def _small_transformer(roofline: bool) -> str:
    system = "preferred-dataset-splits: 1, all-reduce-implementation: [ring], all-gather-implementation: [ring], " \
             "reduce-scatter-implementation: [ring], all-to-all-implementation: [direct]"
    if roofline:
        system += ", roofline-enabled: 1, peak-perf: 900, local-mem-bw: 3000"
    return ("workload: {generate: transformer, dp: 2, dmodel: 64, dff: 128, head: 2, kvhead: 2, num_stacks: 1, "
            "seq: 16, batch: 2, dvocal: 100}\n"
            f"system: {{{system}}}\n"
            "network: {topology: [Ring], npus_count: [2], bandwidth: [50], latency: [500]}\n")


def test_generated_trace_without_roofline_warns_with_the_fix(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    Path("s.yaml").write_text(_small_transformer(roofline=False))
    assert main(["run", "--quiet", "s.yaml"]) == 0
    warnings = [ln for ln in unwrapped(capsys.readouterr().err) if ln.startswith("warning:")]
    assert len(warnings) == 1
    assert "compute nodes have FLOPs (num_ops) but no duration" in warnings[0]
    assert "roofline-enabled: 1" in warnings[0] and "s.yaml: system" in warnings[0]
    Path("s.yaml").write_text(_small_transformer(roofline=True))
    assert main(["run", "--quiet", "s.yaml"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_ignored_system_keys_warn(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "scenarios" / "default.yaml").read_text().replace(
        "workload: workloads/", f"workload: {ROOT}/scenarios/workloads/").replace(
        "  local-mem-bw: 50\n", "  local-mem-bw: 50\n  peak-pref: 900\n  boost-mode: 1\n  boost-mode-x: 0\n")
    Path("s.yaml").write_text(text)
    assert main(["run", "--quiet", "s.yaml"]) == 0
    err = capsys.readouterr().err
    assert "warning: s.yaml: system: field 'peak-pref' is not a system setting" in err
    assert "did you mean 'peak-perf'?" in err
    assert "warning: s.yaml: system: field 'boost-mode' is accepted but changes nothing" in err
    assert "field 'boost-mode-x' is not a system setting" in err


def test_summary_keeps_every_figure_when_stderr_is_not_a_terminal(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "scenarios" / "default.yaml").read_text().replace(
        "workload: workloads/", f"workload: {ROOT}/scenarios/workloads/").replace(
        "bandwidth: [50.0]", "bandwidth: [0.0000001]")
    Path("s.yaml").write_text(text)
    assert main(["run", "s.yaml"]) == 0
    captured = capsys.readouterr()
    finished = int(captured.out.splitlines()[0].split("finished, ")[1].split(" cycles")[0])
    assert finished > 10**12  # 16+ characters with separators: rich cut these to "…" at 80 columns
    rows = [ln for ln in captured.err.splitlines() if ln.strip()[:1].isdigit()]
    assert sum(f"{finished:,}" in ln for ln in rows) == 8
    assert "…" not in captured.err


def test_timeline_without_colour_uses_distinct_glyphs(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["run", str(ROOT / "scenarios" / "default.yaml")]) == 0
    err = capsys.readouterr().err
    import re

    rows = [ln[len("NPU 0 "):] for ln in err.splitlines() if re.match(r"NPU +\d+ ", ln)]
    assert len(rows) == 8 and all(len(r) == 80 - len("NPU 0 ") for r in rows)
    # compute and the all-reduce on the default communicator: told apart without colour
    assert set(rows[0]) == {"#", "a"}
    assert "█" not in err and "\n  # compute  a comm.all\n" in err


def test_long_runs_show_progress() -> None:
    import io
    import time
    from types import SimpleNamespace

    from simpy_astra.report.console import run_with_progress

    npu = SimpleNamespace(nodes=[0, 1, 2], completed=1)

    log = io.StringIO()

    def slow_run() -> list:  # runs until the progress line is out: as long as that takes here
        deadline = time.monotonic() + 60  # a guard against a hang, not a speed check
        while not log.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
        return []

    sim = SimpleNamespace(npus=[npu], now_ns=1234.0, run=slow_run)
    assert run_with_progress(sim, stream=log, after_s=0.05, every_s=0.01) == []
    lines = log.getvalue().splitlines()
    assert lines and lines[0].startswith("simulating: 1 of 3 nodes done, simulated time 1,234 ns")
    quick = io.StringIO()
    run_with_progress(SimpleNamespace(npus=[npu], now_ns=sim.now_ns, run=lambda: []), stream=quick, after_s=3600)
    assert quick.getvalue() == ""  # a short run prints nothing


def test_default_scenario_imports_no_heavy_module() -> None:
    """networkx (~0.2 s), rich (~0.05 s) and friends are imported only where used; so are
    the CSV writers and the memory tracker, which a run without those options never needs,
    the cluster presets and NCCL's tuning tables (only ``cluster:`` runs; the run parser's help
    listed the presets on every run) and hashlib (OpenSSL: only sweeps and calibrations digest)."""
    from tests.fresh_imports import imported_of

    code = ("import io, contextlib\n"
            "from simpy_astra.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['run', {str(ROOT / 'scenarios' / 'default.yaml')!r}]) == 0\n")
    heavy = {"networkx", "rich", "matplotlib", "numpy", "dask", "scalesim", "xml",
             "simpy_astra.engine.memory_tracker", "simpy_astra.report.csv_tables",
             "simpy_astra.config.cluster", "simpy_astra.engine.nccl_tuning", "hashlib"}
    assert imported_of(code, heavy) == []


def test_start_up_pauses_the_collector_and_the_run_resumes_it() -> None:
    """``python -m simpy_astra`` reads its inputs with the cyclic collector paused (start-up
    objects live as long as the run), collects during the run as usual, and leaves it on."""
    import subprocess
    import sys

    code = ("import gc, io, contextlib, sys\n"
            "from simpy_astra.engine import events as engine\n"
            "seen = []\n"
            "real = engine.fast_collection\n"
            "@contextlib.contextmanager\n"
            "def spy():\n"
            "    seen.append(('load', gc.isenabled()))\n"
            "    with real():\n"
            "        seen.append(('run', gc.isenabled()))\n"
            "        yield\n"
            "engine.fast_collection = spy\n"
            "import simpy_astra.simulation as s\n"
            "s.fast_collection = spy\n"
            "import simpy_astra.__main__ as m\n"
            f"sys.argv = ['simpy-astra', {str(ROOT / 'scenarios' / 'default.yaml')!r}]\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
            "    assert m.main() == 0\n"
            "print(seen, gc.isenabled())\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[('load', False), ('run', True)] True"


def test_output_piped_into_a_reader_that_stops_early_ends_quietly() -> None:
    """``simpy-astra ... | head -1``: when the reader closes the pipe, the run stops without
    an "internal error" line or a traceback, with the status a shell gives SIGPIPE (141)."""
    import subprocess
    import sys

    for argv in (["scenarios/default.yaml"], ["run", "scenarios/default.yaml", "--quiet"]):
        child = subprocess.Popen([sys.executable, "-m", "simpy_astra", *argv], cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        child.stdout.close()  # closed before the child prints its first line (start-up takes ~0.2 s)
        stderr = child.stderr.read().decode()
        assert child.wait(timeout=120) == 141, stderr
        assert stderr == ""


def test_an_input_flag_where_the_input_is_the_first_argument_is_told_so(capsys):
    # 'run --input s.yaml' was told only "unknown flag": run, sweep, calibrate and validate
    # take their input as the first argument, which no flag's spelling suggests
    for argv, usage in ((["run", "--input", "s.yaml"], "simpy-astra run SCENARIO"),
                        (["sweep", "s.yaml", "-i", "t.yaml"], "simpy-astra sweep SWEEP"),
                        (["calibrate", "--network", "n.yml", "--out", "o.json", "--in", "a.log"],
                         "simpy-astra calibrate LOG"),
                        (["validate", "a.log", "--network", "n.yml", "--out", "o", "--file", "b"],
                         "simpy-astra validate LOG")):
        assert main(argv) == 2
        prog = usage.rsplit(" ", 1)[0]
        flag = next(a for a in argv if a.startswith("-") and a not in ("--network", "--out"))
        assert capsys.readouterr().err.strip() == (
            f"error: {prog}: {flag}: unknown flag; give the input as the first argument: {usage} "
            f"(see {prog} --help)")


def test_jobs_beside_a_dask_cluster_is_refused_as_changing_nothing(capsys, tmp_path):
    # 'sweep --cluster ADDR --jobs 8' ran as if --jobs were not there: the Dask path submits
    # every point and the workers' threads set how many run at once. Refused before anything
    # connects or is written, as --jobs beside --list is
    out = tmp_path / "out"
    for jobs in (["--jobs", "2"], ["--jobs=1"]):
        assert main(["sweep", str(ROOT / "scenarios/sweeps/quick.yaml"), "--out", str(out), "--cluster", "tcp://127.0.0.1:1",
                     *jobs]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --jobs: the points run on the Dask cluster's workers") and "--nthreads" in err
    assert not out.exists()
