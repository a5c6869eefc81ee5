"""Sweeps: expansion, figures per point, failing points, best.json, resume, SIGINT, Dask."""

from __future__ import annotations

import csv
import glob
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from simpy_astra.errors import InputError
from simpy_astra.sweep.spec import load_sweep
from simpy_astra.sweep_cli import main as sweep_main
from simpy_astra.workloads import generated

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "scenarios" / "default.yaml"
STEP = ROOT / "scenarios" / "workloads" / "step_8npus_1MB" / "step"
# the default scenario's figures at 50 GB/s (tests/test_generated_workloads.py, the reference run)
DEFAULT_FINISH_NS, DEFAULT_GPU_NS, DEFAULT_COMM_NS = 142780, 25000, 117780


def write_sweep(tmp_path: Path, doc: dict, name: str = "sweep.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def read_rows(out: Path) -> list[dict[str, str]]:
    with open(out / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def bandwidth_sweep(tmp_path: Path, **extra) -> str:
    return write_sweep(tmp_path, {"base": str(DEFAULT), "axes": {"network.bandwidth": [25, 50, 100]}, **extra})


# ---------------------------------------------------------------- expansion
def test_value_forms_named_bundles_and_list_broadcast(tmp_path):
    path = write_sweep(tmp_path, {
        "base": str(DEFAULT),
        "axes": {
            "system.endpoint-delay": {"from": 10, "to": 30, "step": 10},
            "system.preferred-dataset-splits": {"powers_of_two": [2, 8], "as": "splits"},
            "machine": {"named": {"slow": {"network.bandwidth": 25, "network.latency": 900},
                                  "fast": {"network.bandwidth": 400}}},
        },
        "constraints": ["endpoint_delay != 20 or machine == 'fast'"],
    })
    points = load_sweep(path).points()
    coords = [tuple(p.coordinates.values()) for p in points]
    # 3 delays x {2, 4, 8} x 2 machines = 18, minus delay 20 on the slow machine (3)
    assert len(points) == 15
    assert (20, 4, "slow") not in coords and (20, 4, "fast") in coords
    slow = next(p for p in points if p.coordinates["machine"] == "slow")
    assert slow.scenario["network"]["bandwidth"] == [25] and slow.scenario["network"]["latency"] == [900]
    # the base scenario's relative workload path was made absolute
    assert slow.scenario["workload"] == str(STEP)


@pytest.mark.parametrize("axes, constraints, message", [
    ({"network.bandwidth": {"powers_of_two": [0, 4]}}, [], "powers_of_two needs"),
    ({"network.bandwidth": [1]}, ["bw == 1"], r"unknown name\(s\) \['bw'\]"),
    ({"network.bandwidth": [1]}, ["__import__('os').system('true')"], "unknown name"),
    ({"network.bandwidth": [1]}, ["bandwidth.__class__ == 1"], "cannot be evaluated"),
    ({"network.bandwidth": [1], "system.bandwidth": [2]}, [], "several axes are called"),
    ({"workload.dp": [1, 2]}, [], "needs a generated workload"),
])
def test_bad_sweeps_are_input_errors(tmp_path, axes, constraints, message):
    path = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": axes, "constraints": constraints})
    with pytest.raises(InputError, match=message):
        load_sweep(path).points()


# ---------------------------------------------------------------- running
def test_sweep_rows_match_the_scenario_and_best_respects_constraints(tmp_path, capsys):
    out = tmp_path / "out"
    path = bandwidth_sweep(tmp_path, constraints=[f"finish_ns >= {DEFAULT_FINISH_NS}"],
                           report=["finish_ns", "finish_ns / 1000"])
    assert sweep_main([path, "--out", str(out), "--jobs", "2"]) == 0
    table = capsys.readouterr().err
    assert "finish_ns / 1000" in table and f"{DEFAULT_FINISH_NS / 1000:.2f}" in table
    rows = {int(r["network.bandwidth"]): r for r in read_rows(out)}
    assert sorted(rows) == [25, 50, 100]
    at50 = rows[50]
    assert (int(at50["finish_ns"]), int(at50["compute_ns"]), int(at50["comm_ns"])) == (
        DEFAULT_FINISH_NS, DEFAULT_GPU_NS, DEFAULT_COMM_NS)
    assert int(at50["exposed_comm_ns"]) == DEFAULT_FINISH_NS - DEFAULT_GPU_NS  # nothing overlaps
    assert int(rows[100]["finish_ns"]) < DEFAULT_FINISH_NS < int(rows[25]["finish_ns"])
    best = json.loads((out / "best.json").read_text())
    assert best["best"]["coordinates"] == {"network.bandwidth": 100}
    # the only points with finish >= 142780 are 25 and 50 GB/s; 50 is the faster
    under = best["best_under"][f"finish_ns >= {DEFAULT_FINISH_NS}"]
    assert under["coordinates"] == {"network.bandwidth": 50} and under["objective"] == DEFAULT_FINISH_NS
    for png in ("time.png", "split.png", "memory.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    # each point's scenario reproduces it with `simpy-astra run`
    assert len(list((out / "points").glob("*.yaml"))) == 3
    from simpy_astra.scenario import load_scenario
    from simpy_astra.simulation import Simulation

    reports = Simulation(load_scenario(str(out / "points" / f"{at50['key']}.yaml"))).run()
    assert max(r.finished_cycles for r in reports) == DEFAULT_FINISH_NS


def test_a_failing_point_is_recorded_and_the_sweep_goes_on(tmp_path):
    out = tmp_path / "out"
    path = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": {"system.preferred-dataset-splits": [0, 4]}})
    assert sweep_main([path, "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    rows = {r["system.preferred-dataset-splits"]: r for r in read_rows(out)}
    assert rows["0"]["status"] == "error" and "preferred-dataset-splits" in rows["0"]["error"]
    assert rows["4"]["status"] == "ok" and int(rows["4"]["finish_ns"]) == DEFAULT_FINISH_NS
    assert json.loads((out / "best.json").read_text())["failed"] == 1


def test_an_axis_of_whole_files_resolves_them_beside_the_sweep(tmp_path):
    system = yaml.safe_load(DEFAULT.read_text())["system"]
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "same.json").write_text(json.dumps(system))
    (tmp_path / "configs" / "half_bw.json").write_text(json.dumps({**system, "local-mem-bw": 25}))
    path = write_sweep(tmp_path, {"base": str(DEFAULT),
                                  "axes": {"system": ["configs/same.json", "configs/half_bw.json"]}})
    assert sweep_main([path, "--out", str(tmp_path / "out"), "--jobs", "1", "--no-plots"]) == 0
    rows = {r["system"]: r for r in read_rows(tmp_path / "out")}
    assert int(rows["configs/same.json"]["finish_ns"]) == DEFAULT_FINISH_NS
    # half the local memory bandwidth: each reduction of a 1 MiB / 4 chunks / 8 ranks = 32 KiB
    # message takes 3 * (int(32768 / 25e9 * 1e9) - int(32768 / 50e9 * 1e9)) = 3 * 655 ns longer, and
    # the 4 chunks' 7 reduce-scatter steps are in series
    assert int(rows["configs/half_bw.json"]["finish_ns"]) == DEFAULT_FINISH_NS + 4 * 7 * 3 * 655


def test_resume_runs_only_missing_points_and_drops_a_torn_row(tmp_path):
    out = tmp_path / "out"
    first = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": {"network.bandwidth": [50]}})
    assert sweep_main([first, "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    with open(out / "results.csv", "a") as f:
        f.write("deadbeef0000,25,999")  # a row torn by a killed run: no newline, fields missing
    wider = bandwidth_sweep(tmp_path)
    stamp = read_rows(out)[0]["wall_s"]
    assert sweep_main([wider, "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    rows = read_rows(out)
    assert sorted(int(r["network.bandwidth"]) for r in rows) == [25, 50, 100]
    assert next(r for r in rows if r["network.bandwidth"] == "50")["wall_s"] == stamp  # not run again


def test_a_different_base_in_the_same_out_is_an_input_error(tmp_path, capsys):
    out = tmp_path / "out"
    assert sweep_main([bandwidth_sweep(tmp_path), "--out", str(out), "--no-plots"]) == 0
    other = write_sweep(tmp_path, {"base": str(ROOT / "scenarios" / "torus3d_all_reduce.yaml"),
                                   "axes": {"network.bandwidth": [25, 50, 100]}}, "other.yaml")
    with pytest.raises(InputError, match="holds results of a different sweep"):
        sweep_main([other, "--out", str(out)])


@pytest.fixture()
def copying_generator(monkeypatch, tmp_path):
    """A generator that copies the default scenario's traces (forked workers inherit it)."""

    def copy_step(params: dict, prefix: str) -> None:
        time.sleep(0.2)  # long enough for racing workers to overlap
        for src in glob.glob(f"{STEP}.*.et"):
            shutil.copy(src, prefix + src[len(str(STEP)):])

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(generated.GENERATORS, "copy", generated.GeneratorEntry(copy_step, "1"))


def test_workload_axes_reach_the_generator(copying_generator, tmp_path):
    base = yaml.safe_load(DEFAULT.read_text())
    base["workload"] = {"generate": "copy", "size": 1}
    path = write_sweep(tmp_path, {"base": base, "axes": {"workload.size": [1, 2, 3]}})
    assert sweep_main([path, "--out", str(tmp_path / "out"), "--jobs", "2", "--no-plots"]) == 0
    rows = read_rows(tmp_path / "out")
    assert [int(r["finish_ns"]) for r in rows] == [DEFAULT_FINISH_NS] * 3
    cached = sorted(os.listdir(tmp_path / "cache" / "workloads"))
    assert len(cached) == 3 and all(c.startswith("copy-") for c in cached)


def _materialise_in_child(queue) -> None:
    queue.put(generated.materialise({"generate": "copy", "size": 7}).prefix)


def test_parallel_workers_share_one_cached_trace(copying_generator, tmp_path):
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    workers = [ctx.Process(target=_materialise_in_child, args=(queue,)) for _ in range(4)]
    for w in workers:
        w.start()
    prefixes = {queue.get(timeout=60) for _ in workers}
    for w in workers:
        w.join()
    assert len(prefixes) == 1
    folders = os.listdir(tmp_path / "cache" / "workloads")
    assert len(folders) == 1  # the losers' private folders are gone
    assert len(glob.glob(f"{prefixes.pop()}.*.et")) == 8


def _activation_step(params: dict, prefix: str) -> None:
    """8 NPUs: a forward pass writes one activation of ``gib`` GiB, a backward pass reads it."""
    from simpy_astra.workloads.chakra_et import make_node, write_et
    from simpy_astra.workloads.chakra_schema import COMP_NODE

    size = str(params["gib"] << 30)
    for rank in range(8):
        write_et(f"{prefix}.{rank}.et", [
            make_node(1, "fwd", COMP_NODE, duration_micros=10,
                      attrs={"inputs": ("string_list", []), "outputs": ["act", size]}),
            make_node(2, "bwd", COMP_NODE, deps=[1], duration_micros=10,
                      attrs={"inputs": ["act", size], "outputs": ("string_list", [])}),
        ])


def test_peak_memory_and_the_cap_in_best_json(monkeypatch, tmp_path):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(generated.GENERATORS, "activations", generated.GeneratorEntry(_activation_step, "1"))
    base = yaml.safe_load(DEFAULT.read_text())
    base["workload"] = {"generate": "activations", "gib": 1}
    base["system"]["track-local-mem"] = 1
    path = write_sweep(tmp_path, {"base": base, "axes": {"workload.gib": [10, 50, 100]},
                                  "constraints": ["peak_memory_gb <= 80"], "minimise": "-peak_memory_gb"})
    out = tmp_path / "out"
    assert sweep_main([path, "--out", str(out), "--jobs", "2"]) == 0
    rows = {int(r["workload.gib"]): r for r in read_rows(out)}
    # the peak is the one live activation; both passes take 10 us
    assert {g: float(r["peak_memory_gb"]) for g, r in rows.items()} == {10: 10.0, 50: 50.0, 100: 100.0}
    assert {int(r["finish_ns"]) for r in rows.values()} == {20_000}
    best = json.loads((out / "best.json").read_text())
    assert best["best"]["coordinates"] == {"workload.gib": 100}
    assert best["best_under"]["peak_memory_gb <= 80"]["coordinates"] == {"workload.gib": 50}
    assert (out / "memory.png").read_bytes()[:4] == b"\x89PNG"


def _copy_or_die(params: dict, prefix: str) -> None:
    """Copies the default traces, or kills its worker process (as the OOM killer would)."""
    if params["die"]:
        os._exit(9)
    for src in glob.glob(f"{STEP}.*.et"):
        shutil.copy(src, prefix + src[len(str(STEP)):])


def test_a_killed_worker_stops_the_sweep_with_finished_points_saved(monkeypatch, tmp_path):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(generated.GENERATORS, "copy_or_die", generated.GeneratorEntry(_copy_or_die, "1"))
    base = yaml.safe_load(DEFAULT.read_text())
    base["workload"] = {"generate": "copy_or_die", "die": 0}
    path = write_sweep(tmp_path, {"base": base, "axes": {"workload.die": [0, 1]}})
    with pytest.raises(InputError, match="a worker process died"):
        sweep_main([path, "--out", str(tmp_path / "out"), "--jobs", "1", "--no-plots"])
    rows = read_rows(tmp_path / "out")
    assert [(r["workload.die"], r["finish_ns"]) for r in rows] == [("0", str(DEFAULT_FINISH_NS))]


# ---------------------------------------------------------------- SIGINT, then start again
def test_sigint_then_restart_runs_every_point_exactly_once(tmp_path):
    path = str(ROOT / "scenarios" / "sweeps" / "quick.yaml")
    total = len(load_sweep(path).points())
    assert total == 36  # 3 bandwidths x 3 algorithms x 2 chunkings x 2 backends
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "simpy_astra", "sweep", path, "--out", str(out), "--jobs", "2", "--no-plots"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # a runner that starts us in the background (nohup, `&` in a script) hands down SIGINT as
    # ignored, and Python then never turns it into KeyboardInterrupt: give the child the default
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    csv_path = out / "results.csv"
    while proc.poll() is None and (not csv_path.exists() or len(read_rows(out)) < 3):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err.decode()
    saved = len(read_rows(out))
    assert 3 <= saved < total
    assert b"interrupted" in err and b"Traceback" not in err
    again = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, timeout=600)
    assert again.returncode == 0, again.stderr.decode()
    assert f"{saved} already in".encode() in again.stderr
    keys = [r["key"] for r in read_rows(out)]
    assert len(keys) == total and len(set(keys)) == total
    assert {p.key for p in load_sweep(path).points()} == set(keys)


# ---------------------------------------------------------------- Dask
def test_dask_cluster_gives_the_local_results(tmp_path):
    distributed = pytest.importorskip("distributed")
    path = bandwidth_sweep(tmp_path)
    assert sweep_main([path, "--out", str(tmp_path / "local"), "--jobs", "2", "--no-plots"]) == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        code = sweep_main([path, "--out", str(tmp_path / "dask"), "--cluster", cluster.scheduler_address,
                           "--no-plots"])
    assert code == 0

    def figures(out: str) -> dict:
        return {r["key"]: {k: v for k, v in r.items() if k != "wall_s"} for r in read_rows(tmp_path / out)}

    local = figures("local")
    assert len(local) == 3 and figures("dask") == local


def test_unreachable_cluster_is_an_input_error(tmp_path):
    pytest.importorskip("distributed")
    with pytest.raises(InputError, match="cannot connect to a Dask scheduler"):
        sweep_main([bandwidth_sweep(tmp_path), "--out", str(tmp_path / "o"), "--cluster",
                    "tcp://127.0.0.1:1", "--no-plots"])


def test_cli_reports_a_bad_sweep_in_one_line(tmp_path, capsys):
    from simpy_astra.cli import main as cli_main

    assert cli_main(["sweep", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip().endswith("missing.yaml does not exist")
    path = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": {"network.bandwidth": [50]}, "minimize": "x"})
    assert cli_main(["sweep", path, "--out", str(tmp_path / "o")]) == 2
    assert "unknown field(s) ['minimize']" in capsys.readouterr().err
    lab = str(ROOT / "scenarios" / "sweeps" / "lab_gpt175b_system2.yaml")
    assert cli_main(["sweep", lab, "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0] == "112 points" and "dp=1 tp=1 sp=64 pp=1 recompute=0 accounting=physical" in listed[1]
