"""Sweeps: expansion, figures per point, failing points, best.json, resume, SIGINT, Dask."""

from __future__ import annotations

import csv
import glob
import io
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from simpy_astra.cli.sweep import main as sweep_main
from simpy_astra.errors import InputError
from simpy_astra.sweep.spec import load_sweep
from simpy_astra.workloads import generated
from tests.ctrl_c import sigint_by_default

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
    ({"network.bandwidth": [1]}, ["bandwidth.__class__ == 1"], r"uses .bandwidth.__class__., which is not allowed"),
    ({"network.bandwidth": [1], "system.bandwidth": [2]}, [], "several axes are called"),
    ({"workload.dp": [1, 2]}, [], "needs a generated workload"),
])
def test_bad_sweeps_are_input_errors(tmp_path, axes, constraints, message):
    path = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": axes, "constraints": constraints})
    with pytest.raises(InputError, match=message):
        load_sweep(path).points()


def test_a_sweeps_goals_have_one_home(tmp_path):
    """What a sweep asks of its points is read once into its goals, and the spec holds them
    there: a field of both (the spec's copy made by ``**vars(goals)``) could drift apart."""
    from dataclasses import fields

    from simpy_astra.sweep.spec import SweepSpec
    from simpy_astra.sweep.spec_goals import Goals

    assert not {f.name for f in fields(SweepSpec)} & {f.name for f in fields(Goals)}
    spec = load_sweep(bandwidth_sweep(tmp_path, constraints=["finish_ns <= 1e9"], report=["finish_ns"]))
    assert [e.text for e in spec.goals.result_constraints] == ["finish_ns <= 1e9"]
    assert [e.text for e in spec.goals.report] == ["finish_ns"] and spec.goals.objective.text == "finish_ns"


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
    for png in ("time.png", "split.png", "breakdown.png", "memory.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    # where the last NPU's time went: 25 us of compute, the rest the all-reduce on the default
    # communicator (no compute overlaps it), every other part 0; the parts sum to finish_ns
    parts = {k: int(v) for k, v in at50.items() if k.startswith("breakdown_")}
    assert parts["breakdown_compute_ns"] == DEFAULT_GPU_NS
    assert parts["breakdown_comm_other_ns"] == DEFAULT_FINISH_NS - DEFAULT_GPU_NS
    assert sum(parts.values()) == DEFAULT_FINISH_NS and len(parts) == 12
    for row in rows.values():
        assert sum(int(v) for k, v in row.items() if k.startswith("breakdown_")) == int(row["finish_ns"])
    # each point's scenario reproduces it with `simpy-astra run`
    assert len(list((out / "points").glob("*.yaml"))) == 3
    from simpy_astra.config.scenario import load_scenario
    from simpy_astra.simulation import Simulation

    reports = Simulation(load_scenario(str(out / "points" / f"{at50['key']}.yaml"))).run()
    assert max(r.finished_cycles for r in reports) == DEFAULT_FINISH_NS


def test_a_piped_sweep_prints_plain_lines_one_per_point(tmp_path, capsys):
    """stderr is no terminal here (a log file, ``2>&1 | grep``): no box drawing, nothing
    wrapped, however long the folder's name, and a line per finished point."""
    out = tmp_path / ("a-folder-name-long-enough-to-pass-eighty-columns-" * 2) / "out"
    code, err = cli(capsys, bandwidth_sweep(tmp_path), "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 0
    lines = err.splitlines()
    assert not set(err) & set("─│┃━┏┓└┘┡┩╇")
    assert lines[0] == "sweep sweep: 3 points, running 3 on 1 local process"
    assert lines[1] == f"0 already in {out}/results.csv"
    done = [ln for ln in lines if ln.startswith("sweep: ")]
    # the default scenario at 50 GB/s: 142,780 ns (the reference's figure)
    assert done[1] == f"sweep: 2/3 done; bandwidth=50: {DEFAULT_FINISH_NS:,} ns" and len(done) == 3
    # each path whole on its line, for grep (the folder's name is wider than the line)
    assert lines[-3:-1] == [f"wrote {out}/results.csv", f"  and {out}/best.json"]
    assert lines[-1].startswith("  ") and lines[-1].endswith(" s in all")
    row = next(ln for ln in lines if ln.split()[:1] == ["50"])
    assert row.split()[1] == f"{DEFAULT_FINISH_NS:,}"


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
    from simpy_astra.workloads.chakra import make_node, write_et
    from simpy_astra.workloads.chakra.schema import COMP_NODE

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
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert sweep_main([path, "--out", str(out), "--jobs", "2"]) == 0
    # track-local-mem does not make the (parallel) points write local_mem_trace.*.json here
    assert list(work.iterdir()) == []
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
    # stopped while points 3 and 4 are held (they cannot finish first, however fast the machine:
    # quick.yaml's 36 points raced the test's SIGINT, and a loaded test could lose), then run again
    r = start_sleepy_sweep(tmp_path)
    r.proc.send_signal(signal.SIGINT)
    _, err = r.proc.communicate(timeout=120)  # a guard against a hang, not a speed check
    assert r.proc.returncode == 130, err.decode()
    assert b"interrupted" in err and b"Traceback" not in err
    assert kept(r.out) == {("1", "ok"), ("2", "ok")}
    (r.marks / "release").touch()
    again = subprocess.run(r.cmd, cwd=ROOT, env=r.env, capture_output=True, timeout=600)
    assert again.returncode == 0, again.stderr.decode()
    assert b"2 already in" in again.stderr
    keys = [row["key"] for row in read_rows(r.out)]
    assert len(keys) == 6 and {p.key for p in load_sweep(r.path).points()} == set(keys)


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
    from simpy_astra.cli.main import main as cli_main

    assert cli_main(["sweep", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip().endswith("missing.yaml does not exist")
    path = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": {"network.bandwidth": [50]}, "minimize": "x"})
    assert cli_main(["sweep", path, "--list", "--no-plots"]) == 2  # an unknown key is an error (issue 40)
    assert "field 'minimize' is not a sweep field; did you mean 'minimise'?" in capsys.readouterr().err
    lab = str(ROOT / "scenarios" / "sweeps" / "lab_gpt175b_system2.yaml")
    assert cli_main(["sweep", lab, "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0] == "112 points, 4 invalid (each breaks a rule named below; they will not run)"
    assert "dp=1 tp=1 sp=64 pp=1 recompute=0 accounting=physical" in listed[1]


# ================================================================ trustworthy in daily use (issue 16)
# Every case: the exit status, one ``error:`` line naming the file and the field, and the exact
# set of rows results.csv keeps.
def cli(capsys, *argv: str) -> tuple[int, str]:
    from simpy_astra.cli.main import main as cli_main

    code = cli_main(["sweep", *argv])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def one_error(err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {err!r}"
    assert lines[0].startswith("error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]


def kept(out: Path) -> set[tuple[str, ...]]:
    """The rows results.csv keeps: (coordinates..., status); coordinates sit between key and finish_ns."""
    rows = read_rows(out)
    coords = list(rows[0])[1:list(rows[0]).index("finish_ns")] if rows else []
    return {(*(r[c] for c in coords), r["status"]) for r in rows}


# ---------------------------------------------------------------- results.csv is never rewritten
@pytest.mark.parametrize("damage, needles", [
    (lambda t: t.replace("finish_ns", "finish"), ("results.csv", "header", "does not match")),  # edited
    (lambda t: t[:20], ("results.csv", "header", "does not match")),  # truncated inside the header
    (lambda t: "", ("results.csv", "header", "an empty file")),  # truncated to nothing
])
def test_a_results_csv_with_a_foreign_header_is_refused_and_left_alone(tmp_path, capsys, damage, needles):
    out = tmp_path / "out"
    path = bandwidth_sweep(tmp_path)
    assert cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")[0] == 0
    damaged = damage((out / "results.csv").read_text())
    (out / "results.csv").write_text(damaged)
    code, err = cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 2
    one_error(err, str(out / "results.csv"), *needles)
    assert (out / "results.csv").read_text() == damaged  # not rewritten, not emptied


@pytest.mark.parametrize("corrupt, needles", [
    (lambda row: row.replace(f",{DEFAULT_FINISH_NS},", ",12x45,", 1), ("line 3", "finish_ns", "'12x45'")),
    (lambda row: row.replace(f",{DEFAULT_FINISH_NS},", ",nan,", 1), ("line 3", "finish_ns", "'nan'")),
    (lambda row: ",done,".join(row.rsplit(",ok,", 1)), ("line 3", "status", "'done'")),
    (lambda row: row.replace(f",{DEFAULT_FINISH_NS},", ",,", 1), ("line 3", "finish_ns", "empty in a point marked ok")),
    (lambda row: row.split(",", 3)[0] + ",50", ("line 3", "has 2 fields")),
])
def test_a_corrupt_results_row_is_refused_naming_line_and_field(tmp_path, capsys, corrupt, needles):
    out = tmp_path / "out"
    path = bandwidth_sweep(tmp_path)
    assert cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")[0] == 0
    lines = (out / "results.csv").read_text().splitlines()
    assert lines[2].split(",")[1] == "50"
    lines[2] = corrupt(lines[2])
    text = "\n".join(lines) + "\n"
    (out / "results.csv").write_text(text)
    code, err = cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 2
    one_error(err, f"{out / 'results.csv'}: line 3: ", *needles)
    assert (out / "results.csv").read_text() == text


def test_a_repeated_results_row_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    path = bandwidth_sweep(tmp_path)
    assert cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")[0] == 0
    lines = (out / "results.csv").read_text().splitlines()
    text = "\n".join([*lines, lines[1]]) + "\n"
    (out / "results.csv").write_text(text)
    code, err = cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 2
    one_error(err, "results.csv: line 5: key: ", "repeats line 2")
    assert (out / "results.csv").read_text() == text


def test_a_corrupt_workload_cache_entry_names_the_file(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(generated.GENERATORS, "copy_or_die", generated.GeneratorEntry(_copy_or_die, "1"))
    base = yaml.safe_load(DEFAULT.read_text())
    base["workload"] = {"generate": "copy_or_die", "die": 0}
    path = write_sweep(tmp_path, {"base": base, "axes": {"network.bandwidth": [50]}})
    assert cli(capsys, path, "--out", str(tmp_path / "a"), "--jobs", "1", "--no-plots")[0] == 0
    (done,) = glob.glob(str(tmp_path / "cache" / "workloads" / "*" / "done.json"))
    Path(done).write_text('{"generator": "copy_or')  # torn
    code, err = cli(capsys, path, "--out", str(tmp_path / "b"), "--jobs", "1", "--no-plots")
    assert code == 4  # the only point failed
    one_error(err.strip().splitlines()[-1], "every point failed")
    (row,) = read_rows(tmp_path / "b")
    assert row["status"] == "error"
    assert f"{done}: comm_groups: corrupt workload cache entry" in row["error"]
    assert f"delete {os.path.dirname(done)}" in row["error"]


# ---------------------------------------------------------------- what a resumed sweep may mix
def test_results_without_their_manifest_are_refused(tmp_path, capsys):
    out = tmp_path / "out"
    path = bandwidth_sweep(tmp_path)
    assert cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")[0] == 0
    before = (out / "results.csv").read_text()
    (out / "sweep.json").unlink()
    code, err = cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 2
    one_error(err, f"{out / 'results.csv'}: results without {out / 'sweep.json'}")
    assert (out / "results.csv").read_text() == before
    (out / "sweep.json").write_text("{not json")
    code, err = cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 2
    one_error(err, f"{out / 'sweep.json'}: cannot be read")
    assert (out / "results.csv").read_text() == before


def test_editing_a_named_file_reruns_the_rows_made_from_it(tmp_path, capsys):
    """Each row records the digest of its inputs; a resume after net.yml changed runs both rows
    again (naming the file), and their new figures are those of the new network."""
    net = tmp_path / "net.yml"
    net.write_text("topology: [Ring]\nnpus_count: [8]\nbandwidth: [50]\nlatency: [500]\n")
    scenario = yaml.safe_load(DEFAULT.read_text())
    scenario.update(workload=str(STEP), network=str(net))
    (tmp_path / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    path = write_sweep(tmp_path, {"base": "scenario.yaml", "axes": {"system.preferred-dataset-splits": [2, 4]}})
    out = tmp_path / "out"
    assert cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")[0] == 0
    before = (out / "results.csv").read_text()
    first = {r["system.preferred-dataset-splits"]: r for r in csv.DictReader(io.StringIO(before))}
    net.write_text(net.read_text().replace("latency: [500]", "latency: [5000]"))  # same path, other network
    code, err = cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 0, err
    assert f"note: 2 row(s) of {out / 'results.csv'} were made from other contents of {net}" in err
    assert "0 already in" in err and "running 2" in err
    again = {r["system.preferred-dataset-splits"]: r for r in csv.DictReader(io.StringIO((out / "results.csv").read_text()))}
    assert set(again) == {"2", "4"}
    for splits in ("2", "4"):
        assert again[splits]["inputs_sha256"] != first[splits]["inputs_sha256"]
        # a longer hop latency can only delay the all-reduce
        assert int(again[splits]["finish_ns"]) > int(first[splits]["finish_ns"])
    best = json.loads((out / "best.json").read_text())
    assert best["best"]["inputs_sha256"] == again[str(best["best"]["coordinates"]["system.preferred-dataset-splits"])]["inputs_sha256"]
    code, err = cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 0 and "2 already in" in err and "note:" not in err, err


def test_an_edited_file_reruns_only_the_points_that_use_it(tmp_path, capsys):
    """An axis over two network files: editing b.yml runs b's point again and keeps a's row
    (the rows record which inputs they used; issue 40: a resume blamed the file for every row)."""
    for name, latency in (("a", 500), ("b", 500)):
        (tmp_path / f"{name}.yml").write_text(f"topology: [Ring]\nnpus_count: [8]\nbandwidth: [50]\n"
                                              f"latency: [{latency}]\n")
    scenario = yaml.safe_load(DEFAULT.read_text())
    scenario["workload"] = str(STEP)
    path = write_sweep(tmp_path, {"base": scenario, "axes": {"network": ["a.yml", "b.yml"]}})
    out = tmp_path / "out"
    assert cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")[0] == 0
    before = {os.path.basename(r["network"]): r for r in read_rows(out)}
    assert before["a.yml"]["inputs_sha256"] != before["b.yml"]["inputs_sha256"]  # different files
    assert before["a.yml"]["finish_ns"] == before["b.yml"]["finish_ns"] == str(DEFAULT_FINISH_NS)
    (tmp_path / "b.yml").write_text((tmp_path / "b.yml").read_text().replace("[500]", "[5000]"))
    code, err = cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 0, err
    assert f"note: 1 row(s) of {out / 'results.csv'} were made from other contents of {tmp_path / 'b.yml'}" in err
    assert "1 already in" in err and "running 1" in err
    after = {os.path.basename(r["network"]): r for r in read_rows(out)}
    assert after["a.yml"] == before["a.yml"]
    assert int(after["b.yml"]["finish_ns"]) > DEFAULT_FINISH_NS  # ten times the hop latency
    best = json.loads((out / "best.json").read_text())
    assert os.path.basename(best["best"]["coordinates"]["network"]) == "a.yml"


def test_an_edited_plugin_module_reruns_its_points_naming_it(tmp_path, capsys, monkeypatch):
    """The points load examples/my_algos.py (``my_algos:simple_ring``): editing it changes what
    the points compute, so a resume must not reuse their rows (issue 39: '2 already in
    results.csv, running 0')."""
    monkeypatch.chdir(tmp_path)  # user modules are imported from the working directory
    shutil.copy(ROOT / "examples" / "my_algos.py", tmp_path / "my_algos.py")
    base = yaml.safe_load(DEFAULT.read_text())
    base["workload"] = str(STEP)
    base["system"]["all-reduce-implementation"] = ["my_algos:simple_ring"]
    path = write_sweep(tmp_path, {"base": base, "axes": {"network.bandwidth": [50, 100]}})
    out = tmp_path / "out"
    assert cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")[0] == 0
    assert kept(out) == {("50", "ok"), ("100", "ok")}
    plugin = str(tmp_path / "my_algos.py")
    assert plugin in json.loads((out / "sweep.json").read_text())["files"]
    code, err = cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 0 and "2 already in" in err  # unchanged: nothing runs again
    (tmp_path / "my_algos.py").write_text((tmp_path / "my_algos.py").read_text() + "\nSTEPS = 2\n")
    code, err = cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 0 and f"were made from other contents of {plugin}" in err and "running 2" in err


def test_plugins_listed_in_the_scenario_are_part_of_the_points_identity(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_plugin.py").write_text("X = 1\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "topo.py").write_text("Y = 2\n")
    base = yaml.safe_load(DEFAULT.read_text())
    base.update(workload=str(STEP), plugins=["my_plugin", "simpy_astra.collectives"])
    path = write_sweep(tmp_path, {"base": base, "axes": {"network.topology": [["Ring"], ["pkg.topo:Torus"]]}})
    files = load_sweep(path).plugin_files()
    # ours (simpy_astra.collectives) are not the user's: their version is the package's
    assert files == {str(tmp_path / "my_plugin.py"), str(tmp_path / "pkg" / "__init__.py"),
                     str(tmp_path / "pkg" / "topo.py")}


def test_a_folder_from_before_file_digests_resumes_and_records_them(tmp_path, capsys):
    out = tmp_path / "out"
    first = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": {"network.bandwidth": [50]}})
    assert cli(capsys, first, "--out", str(out), "--jobs", "1", "--no-plots")[0] == 0
    manifest = json.loads((out / "sweep.json").read_text())
    assert str(STEP) + ".0.et" in manifest["files"]  # the ET traces of the workload prefix
    del manifest["files"]
    (out / "sweep.json").write_text(json.dumps(manifest))
    assert cli(capsys, bandwidth_sweep(tmp_path), "--out", str(out), "--jobs", "1", "--no-plots")[0] == 0
    assert kept(out) == {("25", "ok"), ("50", "ok"), ("100", "ok")}
    assert str(STEP) + ".0.et" in json.loads((out / "sweep.json").read_text())["files"]


def test_duplicate_axis_values_give_one_row_each(tmp_path, capsys):
    path = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": {
        "network.bandwidth": [50, 100, 50, 50.0], "system.preferred-dataset-splits": {"values": [4, 4]}}})
    assert len(load_sweep(path).points()) == 2
    out = tmp_path / "out"
    assert cli(capsys, path, "--out", str(out), "--jobs", "2", "--no-plots")[0] == 0
    rows = read_rows(out)
    assert sorted((r["network.bandwidth"], r["system.preferred-dataset-splits"]) for r in rows) == [
        ("100", "4"), ("50", "4")]
    assert len({r["key"] for r in rows}) == 2


def test_a_sweep_whose_every_point_fails_exits_non_zero(tmp_path, capsys):
    path = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": {"system.preferred-dataset-splits": [0, -1]}})
    out = tmp_path / "out"
    code, err = cli(capsys, path, "--out", str(out), "--jobs", "2", "--no-plots")
    assert code == 4
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {path}: every point failed (2 of 2;")
    assert kept(out) == {("0", "error"), ("-1", "error")}


def test_a_failing_points_error_names_the_sweep_and_field_not_a_temporary_file(tmp_path, capsys):
    path = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": {"system.preferred-dataset-splits": [0, 4],
                                                                 "network.bandwidth": [50]}})
    out = tmp_path / "out"
    assert cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")[0] == 0
    assert kept(out) == {("0", "50", "error"), ("4", "50", "ok")}
    (row,) = [r for r in read_rows(out) if r["status"] == "error"]
    assert row["error"].startswith(
        f"InputError: {path}: point system.preferred-dataset-splits=0 network.bandwidth=50: system: field "
        f"'preferred-dataset-splits' must be an integer >= 1")
    assert "/simpy-astra-" not in row["error"] and "system.json" not in row["error"]


# ---------------------------------------------------------------- refused before any point runs
@pytest.mark.parametrize("extra, needles", [
    ({"minimise": "network_bandwidth"}, ("minimise", "unknown name")),
    ({"minimise": "finish_ns.real"}, ("minimise", "'finish_ns.real'", "not allowed")),
    ({"minimise": "'fast'"}, ("minimise", "must give a number (got 'fast')")),
    ({"minimise": "finish_ns +"}, ("minimise", "not a valid expression")),
    ({"minimise": "finsh_ns"}, ("minimise", "did you mean 'finish_ns' for 'finsh_ns'?")),
    ({"constraints": ["bandwidth = 50"]}, ("constraints[0]", "not a valid expression", "compare with '=='")),
    ({"minimise": "(4000000**4000000)*(4000000**4000000)"}, ("minimise", "beyond 2**1024")),
    ({"report": ["finish_ns", "ord(finish_ns)"]}, ("report[1]", "unknown name(s) ['ord']")),
    ({"report": ["finish_ns < 'x'"]}, ("report[0]", "cannot be evaluated", "TypeError")),
    ({"report": ["[finish_ns]"]}, ("report[0]", "'[finish_ns]'", "not allowed")),
    ({"constraints": ["(4000000**4000000)*(4000000**4000000) > 1"]}, ("constraints", "beyond 2**1024")),
    ({"constraints": ["bandwidth << 100000 > 1"]}, ("constraints", "beyond 2**1024")),
    ({"constraints": ["round(bandwidth, -10**8) > 1"]}, ("constraints", "round() takes at most")),
    ({"constraints": ["bandwidth in (1, 2)"]}, ("constraints", "not allowed")),
    ({"constraints": ["finish_ns < 'x'"]}, ("constraints", "cannot be evaluated", "TypeError")),
])
def test_bad_expressions_are_refused_before_any_point_runs(tmp_path, capsys, extra, needles):
    path = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": {"network.bandwidth": [25, 50]}, **extra})
    code, err = cli(capsys, path, "--out", str(tmp_path / "out"), "--no-plots")
    assert code == 2
    one_error(err, f"error: {path}: ", *needles)
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


@pytest.mark.parametrize("axes", ["missing", None, {}])
def test_a_sweep_without_axes_is_refused(tmp_path, capsys, axes):
    """No axes (left out, empty, or 'axes:' with nothing) ran the base alone as a one-point
    sweep, reported as a sweep's best."""
    doc = {"base": str(DEFAULT)} if axes == "missing" else {"base": str(DEFAULT), "axes": axes}
    path = write_sweep(tmp_path, doc)
    code, err = cli(capsys, path, "--out", str(tmp_path / "out"), "--no-plots")
    assert code == 2
    one_error(err, f"error: {path}: axes: ", "at least one axis", "simpy-astra run")
    assert not (tmp_path / "out").exists()


def test_a_result_constraint_no_figures_can_satisfy_is_refused_before_any_point_runs(tmp_path, capsys):
    """'finish_ns / 0 > 1' was found undefined only after every point had run (exit 2 at the
    end, the points' time wasted)."""
    path = bandwidth_sweep(tmp_path, constraints=["finish_ns / 0 > 1"])
    code, err = cli(capsys, path, "--out", str(tmp_path / "out"), "--no-plots")
    assert code == 2
    one_error(err, f"error: {path}: constraints: ", "finish_ns / 0 > 1", "no figures")
    assert not (tmp_path / "out").exists()


def test_a_result_constraint_undefined_for_one_point_leaves_that_point_out(tmp_path, capsys):
    """At 50 GB/s the default step takes DEFAULT_FINISH_NS: the constraint divides by zero
    there. That point does not satisfy it; the others are ranked (it stopped the whole sweep
    after every point had run)."""
    constraint = f"1 / (finish_ns - {DEFAULT_FINISH_NS}) != 0"
    out = tmp_path / "out"
    code, err = cli(capsys, bandwidth_sweep(tmp_path, constraints=[constraint]), "--out", str(out), "--no-plots")
    assert code == 0, err
    best = json.loads((out / "best.json").read_text())
    under = best["best_under"][constraint]
    assert under is not None and under["coordinates"]["network.bandwidth"] == 100


def test_a_constraint_that_would_take_hours_fails_at_once(tmp_path):
    """In a child with a deadline: a regression must fail this test, not hang the suite."""
    path = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": {"network.bandwidth": [25, 50]},
                                  "constraints": ["(4000000**4000000)*(4000000**4000000) > 1"]})
    run = subprocess.run([sys.executable, "-m", "simpy_astra", "sweep", path, "--list"], cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    one_error(run.stderr, f"{path}: constraints: ", "beyond 2**1024")


@pytest.mark.parametrize("axis, needles", [
    ({"from": 1, "to": 10 ** 12, "step": 1}, ("more than 100,000 values",)),
    ({"from": 1, "to": float("inf"), "step": 1}, ("to: ", "finite")),
    ({"from": 1, "to": 8, "step": float("nan")}, ("step: ", "finite")),
    ({"from": 1, "to": 8, "step": 1e-300}, ("more than 100,000 values",)),
    ({"from": 1, "to": 8, "step": 0}, ("step: must be > 0",)),
    # a range that runs backwards was one point (from) when to - from was under a step, none past it
    ({"from": 16, "to": 8, "step": 8}, ("from 16 is past to 8",)),
    ({"from": 100, "to": 50, "step": 100}, ("from 100 is past to 50",)),
    ({"values": [50, float("nan")]}, ("nan is not a finite number",)),
    ([50, float("inf")], ("inf is not a finite number",)),
    ({"named": {"a": {"network.latency": float("-inf")}}}, ("named: a", "-inf is not a finite number")),
    ({"powers_of_two": [1, 2 ** 80]}, ("powers_of_two needs",)),
])
def test_unbounded_or_non_finite_axes_are_refused(tmp_path, capsys, axis, needles):
    path = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": {"network.bandwidth": axis}})
    code, err = cli(capsys, path, "--out", str(tmp_path / "out"), "--no-plots")
    assert code == 2
    one_error(err, f"error: {path}: axes: network.bandwidth: ", *needles)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("make_out, needles", [
    (lambda t: (t / "file").write_text("x") and t / "file", ("is a file, not a folder",)),
    (lambda t: (t / "file").write_text("x") and t / "file" / "out", ("cannot create folder", "not a folder")),
])
def test_an_unwritable_out_is_refused_in_one_line(tmp_path, capsys, make_out, needles):
    out = make_out(tmp_path)
    code, err = cli(capsys, bandwidth_sweep(tmp_path), "--out", str(out), "--no-plots")
    assert code == 2
    one_error(err, "--out", str(out), *needles)


def test_a_full_disk_stops_the_sweep_in_one_line_keeping_earlier_rows(tmp_path, capsys, monkeypatch):
    real = csv.DictWriter.writerow
    calls = []

    def writerow(self, row):
        if row.get("key") != "key":  # the header is written this way too
            calls.append(row)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(self, row)

    monkeypatch.setattr(csv.DictWriter, "writerow", writerow)
    out = tmp_path / "out"
    code, err = cli(capsys, bandwidth_sweep(tmp_path), "--out", str(out), "--jobs", "1", "--no-plots")
    monkeypatch.undo()
    assert code == 2
    one_error(err.strip().splitlines()[-1], f"--out: cannot write {out / 'results.csv'} (No space left on device)")
    assert [line for line in err.splitlines() if line.startswith("error")] == [err.strip().splitlines()[-1]]
    assert kept(out) == {("25", "ok")}


def test_points_of_two_network_backends_are_never_compared(tmp_path, capsys):
    path = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": {
        "network.bandwidth": [50, 100], "backend": ["congestion_unaware", "congestion_aware"]},
        "constraints": ["finish_ns > 0"]})
    out = tmp_path / "out"
    assert sweep_main([path, "--out", str(out), "--jobs", "2"]) == 0
    assert kept(out) == {("50", "congestion_unaware", "ok"), ("100", "congestion_unaware", "ok"),
                         ("50", "congestion_aware", "ok"), ("100", "congestion_aware", "ok")}
    best = json.loads((out / "best.json").read_text())
    assert best["best"] is None and best["best_under"] == {"finish_ns > 0": None}
    assert best["backends"] == ["congestion_aware", "congestion_unaware"] and "not compared" in best["note"]
    for backend, section in best["by_backend"].items():
        assert section["best"]["backend"] == backend
        assert section["best"]["coordinates"] == {"network.bandwidth": 100, "backend": backend}
        assert section["best_under"]["finish_ns > 0"]["backend"] == backend
    answer = capsys.readouterr().out  # the best lines: the sweep's answer, on stdout
    assert "best (congestion_aware)" in answer and "best (congestion_unaware)" in answer
    # one backend: one best, as before
    one = write_sweep(tmp_path, {"base": str(DEFAULT), "axes": {"network.bandwidth": [50, 100]}}, "one.yaml")
    assert sweep_main([one, "--out", str(tmp_path / "one"), "--jobs", "1", "--no-plots"]) == 0
    best = json.loads((tmp_path / "one" / "best.json").read_text())
    assert best["best"]["coordinates"] == {"network.bandwidth": 100} and "by_backend" not in best


# ---------------------------------------------------------------- the folder lock and signals
SLEEPY_PLUGIN = '''
"""Test plugin: points 1 and 2 finish at once, later ones wait (ten minutes at most) until the
file 'release' is in the marks folder; a stopped point marks that it is unwinding and takes a
second to do so."""
import glob, os, shutil, time
from simpy_astra.workloads import generated

STEP = {step!r}


def _generate(params, prefix):
    try:  # started-N appears whole (renamed into place) and only once a stop would be marked
        started = os.path.join(params["marks"], f"started-{{params['n']}}")
        with open(started + ".part", "w") as f:
            f.write(str(os.getpid()))
        os.replace(started + ".part", started)
        held_until = time.monotonic() + (0 if params["n"] <= 2 else 600)
        while time.monotonic() < held_until and not os.path.exists(os.path.join(params["marks"], "release")):
            time.sleep(0.05)
    except BaseException:  # stopped: say so, and take a while to unwind
        open(os.path.join(params["marks"], f"stopping-{{params['n']}}"), "w").close()
        time.sleep(1)
        raise
    for src in glob.glob(STEP + ".*.et"):
        shutil.copy(src, prefix + src[len(STEP):])


generated.GENERATORS["sleepy"] = generated.GeneratorEntry(_generate, "1")
'''


@dataclass
class Running:
    proc: subprocess.Popen
    out: Path
    marks: Path
    tmp: Path  # the sweep's TMPDIR
    cache: Path
    path: str
    cmd: list[str]
    env: dict[str, str]

    def worker_pids(self) -> set[int]:
        return {int(p.read_text()) for p in self.marks.glob("started-*")}


def start_sleepy_sweep(tmp_path: Path) -> Running:
    """A sweep of 6 points on 2 workers, started as a user would, stopped once points 1 and 2
    are saved and points 3 and 4 are running (and would run for ten minutes)."""
    (tmp_path / "plug").mkdir()
    (tmp_path / "plug" / "sleepy_plugin.py").write_text(SLEEPY_PLUGIN.format(step=str(STEP)))
    marks, tmp, cache = tmp_path / "marks", tmp_path / "tmp", tmp_path / "cache"
    for folder in (marks, tmp, cache):
        folder.mkdir()
    base = yaml.safe_load(DEFAULT.read_text())
    base.update(workload={"generate": "sleepy", "n": 0, "marks": str(marks)}, plugins=["sleepy_plugin"])
    path = write_sweep(tmp_path, {"base": base, "axes": {"workload.n": [1, 2, 3, 4, 5, 6]}})
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "simpy_astra", "sweep", path, "--out", str(out), "--jobs", "2", "--no-plots"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path / "plug")]),
           "TMPDIR": str(tmp), "SIMPY_ASTRA_CACHE": str(cache)}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=sigint_by_default)
    running = Running(proc, out, marks, tmp, cache, path, cmd, env)
    deadline = time.monotonic() + 120  # a generous guard against a hang, not a speed check
    while not ((marks / "started-3").exists() and (marks / "started-4").exists()
               and (out / "results.csv").exists() and len(read_rows(out)) == 2):
        assert proc.poll() is None, proc.communicate()[1].decode()
        assert time.monotonic() < deadline, "the sweep did not reach points 3 and 4"
        time.sleep(0.05)
    return running


def gone(pid: int) -> bool:
    """No such process, or only its exit status left (a zombie nobody reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def assert_stopped_cleanly(r: Running) -> None:
    """Points 1 and 2 kept, 3 and 4 stopped, 5 and 6 never started; no worker and no temporary
    folder left behind."""
    assert kept(r.out) == {("1", "ok"), ("2", "ok")}
    # 3 and 4 were stopped by SIGTERM and unwound (their with/finally blocks ran), not killed
    assert sorted(p.name for p in r.marks.iterdir()) == [
        *(f"started-{n}" for n in (1, 2, 3, 4)), "stopping-3", "stopping-4"]
    pids = r.worker_pids()
    assert len(pids) == 2 and os.getpid() not in pids
    deadline = time.monotonic() + 60  # workers unwind after SIGTERM; wait, do not time them
    while not all(gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(gone(p) for p in pids), f"workers {pids} outlived the sweep"
    assert list(r.tmp.iterdir()) == []
    assert [p.name for p in (r.cache / "workloads").iterdir() if p.name.startswith(".")] == []


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc to find workers")


@needs_proc
def test_a_second_sweep_on_the_same_folder_is_refused(tmp_path):
    r = start_sleepy_sweep(tmp_path)
    try:
        before = (r.out / "results.csv").read_bytes()
        # a child with a deadline: without the lock it would run points 3 to 6 for ten minutes each
        second = subprocess.run(r.cmd, cwd=ROOT, env=r.env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2
        one_error(second.stderr, f"--out {r.out}: another sweep (pid {r.proc.pid}) is using this folder")
        assert (r.out / "results.csv").read_bytes() == before
        assert r.proc.poll() is None  # the first goes on
    finally:
        r.proc.terminate()
        r.proc.communicate(timeout=120)
    assert r.proc.returncode == 143
    assert_stopped_cleanly(r)


@needs_proc
def test_ctrl_c_stops_at_once_and_a_second_ctrl_c_prints_no_traceback(tmp_path):
    r = start_sleepy_sweep(tmp_path)
    r.proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 60
    while not list(r.marks.glob("stopping-*")) and time.monotonic() < deadline:
        time.sleep(0.01)
    r.proc.send_signal(signal.SIGINT)  # while the sweep waits for its workers to unwind
    _, err = r.proc.communicate(timeout=120)  # points 3 and 4 would take ten minutes
    assert r.proc.returncode == 130, err.decode()
    assert b"interrupted" in err and b"Traceback" not in err
    assert_stopped_cleanly(r)


def read_stderr_until(r: Running, needle: bytes) -> tuple[threading.Event, list[bytes]]:
    """Read the sweep's stderr in a thread; the event is set once a line contains ``needle``
    (the sweep itself says which phase it is in: no sleeping for a guessed time)."""
    seen, lines = threading.Event(), []

    def read() -> None:
        for line in r.proc.stderr:
            lines.append(line)
            if needle in line:
                seen.set()
        seen.set()  # the stream ended: stop waiting either way

    threading.Thread(target=read, daemon=True).start()
    return seen, lines


@needs_proc
@pytest.mark.parametrize("phase", ["at once", "after the summary"])
def test_a_second_ctrl_c_soon_after_the_first_is_as_clean_as_one(tmp_path, phase):
    """The second Ctrl-C lands right behind the first (before the handler has run, or while the
    pool is being stopped), or after the sweep has printed its summary and is shutting the
    interpreter down (where Python < 3.12 raced the pool's manager thread into ``OSError: [Errno 9]
    Bad file descriptor``). While the workers unwind: the test above."""
    r = start_sleepy_sweep(tmp_path)
    seen, lines = read_stderr_until(r, b"interrupted")
    r.proc.send_signal(signal.SIGINT)
    if phase == "after the summary":
        assert seen.wait(120), "the sweep never said it was interrupted"  # a guard against a hang
    try:
        r.proc.send_signal(signal.SIGINT)
    except ProcessLookupError:  # already gone: nothing left to interrupt
        pass
    r.proc.wait(timeout=120)
    seen.wait(120)
    err = b"".join(lines)
    assert r.proc.returncode == 130, err.decode()  # not killed by SIGINT (-2)
    assert b"interrupted" in err and b"Traceback" not in err and b"Exception ignored" not in err
    assert_stopped_cleanly(r)


def test_a_stopped_pool_leaves_no_manager_thread_for_the_interpreter_exit():
    """Python < 3.12 wakes a pool's manager thread at exit without its lock; if the thread is
    still closing its pipe then, the exit prints ``OSError: [Errno 9] Bad file descriptor``.
    Stopping the workers therefore waits for that thread too."""
    from concurrent.futures import ProcessPoolExecutor

    from simpy_astra.sweep.runner import _stop_workers, _worker_context

    pool = ProcessPoolExecutor(max_workers=2, mp_context=_worker_context())
    futures = [pool.submit(time.sleep, 600) for _ in range(3)]
    while not any(f.running() for f in futures):
        time.sleep(0.01)
    manager, wakeup = pool._executor_manager_thread, pool._executor_manager_thread_wakeup
    _stop_workers(pool)
    assert not manager.is_alive()
    assert wakeup._closed  # what the interpreter's exit checks before writing to the pipe


@needs_proc
def test_ctrl_c_held_down_until_the_sweep_is_gone(tmp_path):
    """SIGINT every 10 ms, through the clean-up and the interpreter's shutdown."""
    r = start_sleepy_sweep(tmp_path)
    deadline = time.monotonic() + 120
    while r.proc.poll() is None and time.monotonic() < deadline:
        try:
            r.proc.send_signal(signal.SIGINT)
        except ProcessLookupError:
            break
        time.sleep(0.01)
    _, err = r.proc.communicate(timeout=120)
    assert r.proc.returncode == 130, err.decode()
    assert b"Traceback" not in err and b"Exception ignored" not in err
    assert_stopped_cleanly(r)


@pytest.mark.parametrize("streams", ["stdout", "both"])
def test_a_closed_pipe_still_leaves_best_json(tmp_path, streams):
    """``sweep ... | head -1`` (and ``2>&1 | head -1``): the reader leaves, the sweep finishes."""
    path = bandwidth_sweep(tmp_path)
    out = tmp_path / "out"
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is already gone: every write fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "simpy_astra", "sweep", path, "--out", str(out), "--jobs",
                               "1", "--no-plots"], cwd=ROOT, stdout=write_end,
                              stderr=write_end if streams == "both" else subprocess.PIPE, timeout=300)
    finally:
        os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "best.json").read_text())["best"]["coordinates"] == {"network.bandwidth": 100}
    assert len(read_rows(out)) == 3


def test_a_minimise_that_ranks_no_finished_point_is_not_success(tmp_path, capsys):
    """Stand-in figures give a number, the real ones do not: the sweep must not end with exit 0
    and a best.json without a best."""
    path = bandwidth_sweep(tmp_path, minimise="1 / 0 if finish_ns > 1000 else finish_ns")
    code, err = cli(capsys, path, "--out", str(tmp_path / "out"), "--jobs", "1", "--no-plots")
    assert code == 2
    line = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert len(line) == 1 and "minimise" in line[0] and "no number" in line[0] and path in line[0]
    assert json.loads((tmp_path / "out" / "best.json").read_text())["best"] is None


@pytest.mark.parametrize("first, second", [("finish_ns", "compute_ns"), ("status", "error"),
                                           ("exposed_comm_ns", "comm_ns")])
def test_a_results_csv_with_two_columns_swapped_is_refused(tmp_path, capsys, first, second):
    out = tmp_path / "out"
    path = bandwidth_sweep(tmp_path)
    assert cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")[0] == 0
    lines = (out / "results.csv").read_text().splitlines()
    header = lines[0].split(",")
    i, j = header.index(first), header.index(second)
    header[i], header[j] = header[j], header[i]
    swapped = "\n".join([",".join(header), *lines[1:]]) + "\n"
    (out / "results.csv").write_text(swapped)
    code, err = cli(capsys, path, "--out", str(out), "--jobs", "1", "--no-plots")
    assert code == 2
    one_error(err, str(out / "results.csv"), "header", f"'{second}' where this sweep writes '{first}'")
    assert (out / "results.csv").read_text() == swapped  # left as it is
    assert json.loads((out / "best.json").read_text())["best"]["coordinates"] == {"network.bandwidth": 100}


@needs_proc
def test_sigterm_stops_the_sweep_and_its_workers(tmp_path):
    r = start_sleepy_sweep(tmp_path)
    r.proc.terminate()
    _, err = r.proc.communicate(timeout=120)
    assert r.proc.returncode == 143, err.decode()
    assert b"terminated" in err and b"Traceback" not in err
    assert_stopped_cleanly(r)


@needs_proc
def test_kill_9_of_the_sweep_leaves_no_worker_and_no_temporary_folder(tmp_path):
    r = start_sleepy_sweep(tmp_path)
    r.proc.kill()
    r.proc.communicate(timeout=120)
    assert r.proc.returncode == -signal.SIGKILL
    assert_stopped_cleanly(r)
    # the lock died with the sweep (no worker inherited it): the folder can be taken again
    from simpy_astra.sweep.store import FolderLock

    FolderLock(str(r.out)).release()
