"""Hostile hunt 31: the last merges (a broadcast on a preset timed whatever custom all-gather
or per-node custom the system gives; sweeps' cluster loads and parse once; console round 7)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from simpy_astra.config.cluster import load_cluster
from tests.scenario_files import custom_ring

MIB = 2**20


def _broadcast_trace(folder, npus: int) -> None:
    """A trace of one 1 MiB broadcast over ``npus`` ranks that records no duration."""
    from simpy_astra.workloads.chakra.types import BROADCAST, COMM_COLL_NODE
    from simpy_astra.workloads.chakra.writer import make_node, write_et

    for rank in range(npus):
        write_et(str(folder / f"bc.{rank}.et"), [make_node(1, "bc", COMM_COLL_NODE, attrs={
            "comm_type": BROADCAST, "comm_size": MIB})])


def _run(folder, system: dict) -> subprocess.CompletedProcess:
    scenario = folder / "s.yaml"
    scenario.write_text(json.dumps({"workload": "bc", "cluster": {"preset": "dgx-a100-80gb", "gpus": 8},
                                    "system": system}))
    env = {**os.environ, "SIMPY_ASTRA_CACHE": str(folder / "cache"), "SIMPY_ASTRA_PROGRESS": "0"}
    return subprocess.run([sys.executable, "-m", "simpy_astra", "run", str(scenario), "--quiet"],
                          capture_output=True, text=True, cwd=folder, env=env)


def test_a_broadcast_timed_beside_a_custom_all_gather_is_not_said_to_take_1_ns(tmp_path):
    # before: a preset whose system gives all-gathers (or a node) a custom collective warned
    # that its broadcasts without a duration take 1 ns and never cross the network, though
    # NCCL's ring times them whatever the all-gathers run (the 1 MiB broadcast took tens of us)
    _broadcast_trace(tmp_path, 8)
    base = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "cluster").system_mapping()
    ring = custom_ring(tmp_path, 8)
    (tmp_path / "per_node.yaml").write_text(f"7: {ring}\n")  # a node of another trace's
    for system in ({**base, "all-gather-implementation-custom": [ring]},
                   {**base, "per-node-custom-implementation": str(tmp_path / "per_node.yaml")}):
        done = _run(tmp_path, system)
        assert done.returncode == 0, done.stderr
        assert "takes 1 ns" not in done.stderr, done.stderr
        time_ns = int(done.stdout.split("iteration time ")[1].split(" ns")[0].replace(",", ""))
        assert time_ns > 1_000  # timed (1 MiB over NVLink at under 300 GB/s: over 3,500 ns), not 1 ns


def test_a_sweeps_point_line_breaks_between_coordinates_never_in_one(monkeypatch, capsys):
    # before: 'sweep: 1/2 done; tp=8 pp=16 mb=2 recompute=selec' over '    tive sp=on: 142,780 ns'
    # at COLUMNS=60 (the figure's line took the last line's end cut between characters), and at
    # COLUMNS=40 'network.latency=500 syst' over 'em.x=1' (a coordinate cut beside the line's start)
    from simpy_astra.sweep.runner import Finished, _PlainProgress

    for columns, names, want in (
            ("60", "tp=8 pp=16 mb=2 recompute=selective sp=on",
             ["sweep: 1/1 done; tp=8 pp=16 mb=2 recompute=selective", "    sp=on: 142,780 ns"]),
            ("40", "network.bandwidth=100 network.latency=500 system.x=1",
             ["sweep: 1/1 done; network.bandwidth=100", "    network.latency=500", "    system.x=1: 142,780 ns"]),
            ("40", "pp=2 recompute-granularity=selective",
             ["sweep: 1/1 done; pp=2", "    recompute-granularity=selective: 142,780 ns"])):
        monkeypatch.setenv("COLUMNS", columns)
        stream = io.StringIO()
        progress = _PlainProgress(stream, clock=lambda: 0.0)
        progress.add_task("sweep", total=1, last=None)
        progress.update(0, 1, Finished(names, "142,780 ns", True))
        assert stream.getvalue().splitlines() == want


EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def _stdout(columns: str, *args: str, cwd: str = EXAMPLES) -> list[str]:
    env = {**os.environ, "COLUMNS": columns, "SIMPY_ASTRA_PROGRESS": "0"}
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", *args], capture_output=True, text=True,
                          env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_megatron_runs_answer_keeps_every_figure_at_a_narrow_pipes_width():
    # the answer's headline is written for 80 columns whatever COLUMNS says (docs/reports.md):
    # at COLUMNS=60 and 40 it kept tokens/s and TFLOP/s out for a while, a figure not made to a
    # reader or a script; its memory line, all figures kept, takes fewer words
    full = _stdout("80", "weights_last.yaml", "--quiet")[0]
    for columns in ("60", "40"):
        quiet = _stdout(columns, "weights_last.yaml", "--quiet")
        answer = _stdout(columns, "weights_last.yaml")[:2]
        assert answer[0] == quiet[0] == full, (quiet, full)
        assert answer[1].startswith("memory per GPU ") and len(answer[1]) <= 60, answer


def test_a_trace_runs_headline_is_within_40_columns():
    # before: 'iteration time 142,780 ns (last to finish: NPU 0 of 8)', 54 columns at COLUMNS=40
    scenarios = os.path.join(os.path.dirname(EXAMPLES), "scenarios")
    line = _stdout("40", os.path.join(scenarios, "default.yaml"), "--quiet")[0]
    assert line.startswith("iteration time ") and len(line) <= 40, line


def test_a_sweep_that_loses_its_dask_scheduler_stops_and_keeps_the_rest_to_run(tmp_path):
    # before: every point left was a row 'error: FutureCancelledError ... scheduler-connection-lost',
    # the sweep exited 0 under Dask's logged tracebacks, and a resume ran none of them again
    pytest.importorskip("distributed")
    import csv
    import time

    sweep = tmp_path / "sweep.yaml"
    bandwidths = list(range(10, 410, 10))  # 40 points: the scheduler goes at the first row
    scenarios = os.path.join(os.path.dirname(EXAMPLES), "scenarios")
    sweep.write_text(json.dumps({"base": os.path.join(scenarios, "default.yaml"),
                                 "axes": {"network.bandwidth": bandwidths}, "minimise": "finish_ns"}))
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler", "--port", "0", "--no-dashboard",
            "--scheduler-file", str(tmp_path / "scheduler.json")]
    scheduler = subprocess.Popen(dask, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = run = None
    try:
        started = time.monotonic()
        while not (tmp_path / "scheduler.json").exists():  # a scheduler that cannot start fails, never hangs
            assert scheduler.poll() is None and time.monotonic() - started < 120, "the Dask scheduler did not start"
            time.sleep(0.1)
        address = json.loads((tmp_path / "scheduler.json").read_text())["address"]
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                                   "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        env = {**os.environ, "SIMPY_ASTRA_PROGRESS": "0"}
        run = subprocess.Popen([sys.executable, "-m", "simpy_astra", "sweep", str(sweep), "--out", str(tmp_path / "o"),
                                "--cluster", address, "--no-plots"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env)
        results = tmp_path / "o" / "results.csv"
        while run.poll() is None and not (results.exists() and len(results.read_text().splitlines()) > 1):
            assert time.monotonic() - started < 600, "no point finished on the Dask worker"
            time.sleep(0.05)
        scheduler.kill()
        out, err = run.communicate(timeout=300)
    finally:
        for process in (run, worker, scheduler):
            if process is not None:
                process.kill()
                process.wait()
    assert run.returncode == 2, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith(
        "error: --cluster: the sweep lost its Dask scheduler after "), err
    with open(results) as f:
        rows = list(csv.DictReader(f))
    assert 0 < len(rows) < len(bandwidths) and {r["status"] for r in rows} == {"ok"}, rows


def test_a_result_lost_with_the_scheduler_is_the_schedulers_loss_not_the_points():
    # before: the point whose result was being gathered as the scheduler went became a row
    # 'error: CommClosedError ... Stream is closed' (the client still said running), which a
    # resumed sweep skips: seen once in the whole suite's run of the test above
    pytest.importorskip("distributed")
    from types import SimpleNamespace

    from distributed.comm import CommClosedError

    from simpy_astra.errors import InputError
    from simpy_astra.sweep.runner import _scheduler_kept

    running = SimpleNamespace(status="running")
    with pytest.raises(InputError, match="lost its Dask scheduler after 4 of 40 points"):
        _scheduler_kept(CommClosedError("in <TCP (closed) ConnectionPool.gather>: Stream is closed"), running, 4, 40)
    assert _scheduler_kept(FileNotFoundError("a point's own"), running, 4, 40) is None  # the point's: its row
