"""A nineteenth hunt, part b: the Python scripting API and the calibration logs. A bad
argument to ``Simulation(...)`` or its co-simulation calls is refused in one line naming the
argument and what it takes, never run as something else or failed deep inside the run."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import simpy
import yaml

from simpy_astra.cli.main import main
from simpy_astra.errors import InputError, StalledError
from simpy_astra.simulation import Simulation
from tests.wrapped_lines import plain

ROOT = Path(__file__).resolve().parents[1]
RING = str(ROOT / "examples" / "cosim_ring.yaml")  # 4 NPUs on a ring, congestion-aware
FAT_TREE = str(ROOT / "scenarios" / "fat_tree_all_to_all.yaml")
A100 = ROOT / "tests" / "data" / "nccl" / "dgx-a100-superbench"


@pytest.mark.parametrize("patience", [math.nan, math.inf, -1, "1e6", None, True])
def test_a_stall_patience_that_is_not_a_time_is_refused_naming_it(patience):
    # nan or inf never let the watchdog call a stall (a looping user process then ran to the
    # horizon); '1e6' failed as a TypeError inside run(); -1, None and True ran as if 0
    with pytest.raises(ValueError, match=r"stall_patience_ns must be a finite number >= 0 \(got "):
        Simulation.from_scenario(RING, stall_patience_ns=patience)
    sim = Simulation.from_scenario(RING, stall_patience_ns=1e6)  # and set later, as an attribute
    with pytest.raises(ValueError, match="stall_patience_ns"):
        sim.stall_patience_ns = patience
    assert sim.stall_patience_ns == 1e6


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"env": "env"}, r"Simulation\(env=...\): expected a simpy.Environment .* \(got 'env'\)"),
    ({"env": simpy.Environment}, r"Simulation\(env=...\): expected a simpy.Environment"),
    ({"on_report": 3}, r"Simulation\(on_report=...\): expected a function taking one NpuReport"),
    ({"memory_traces": "no"}, r"Simulation\(memory_traces=...\): expected True or False \(got 'no'\)"),
])
def test_a_simulation_argument_of_the_wrong_kind_is_refused_naming_it(kwargs, needle):
    # before: env='env' an AttributeError inside the build, on_report=3 "'int' object is not
    # callable" at the first NPU's end, memory_traces='no' (truthy) wrote the traces
    with pytest.raises(TypeError, match=needle):
        Simulation.from_scenario(RING, **kwargs)


@pytest.mark.parametrize("inputs", [RING, None, {"workload": "w"}])
def test_a_scenario_path_given_as_the_inputs_points_to_from_scenario(inputs):
    # before: "AttributeError: 'str' object has no attribute 'system'"
    with pytest.raises(TypeError, match=r"Simulation\(inputs\): expected SimulationInputs .*"
                                        r"Simulation.from_scenario\(path\)"):
        Simulation(inputs)


def test_a_realtime_environment_of_ones_own_still_runs():
    env = simpy.rt.RealtimeEnvironment(factor=1e-12, strict=False)  # a subclass: accepted
    reports = Simulation.from_scenario(RING, env=env).run()
    assert max(r.finished_ns for r in reports) == 32_362  # docs/cosimulation.md's figure


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"link_model": "fifo", "link_params": [1]}, r"link_params=: expected a dict .* \(got \[1\]\)"),
    ({"switch_params": "x"}, r"switch_params=: expected a dict .* \(got 'x'\)"),
])
def test_model_parameters_that_are_not_a_dict_are_refused_naming_them(kwargs, needle):
    # before: "cannot convert dictionary update sequence element #0 to a sequence"
    with pytest.raises(InputError, match=needle):
        Simulation.from_scenario(RING, **kwargs)


def test_a_missing_link_or_device_names_what_the_network_has():
    sim = Simulation.from_scenario(RING)
    with pytest.raises(KeyError, match="no link 0 -> 2 in this network; links out of 0 lead to 1, 3"):
        sim.network.link(0, 2)
    with pytest.raises(KeyError, match=r"device 99; devices are named by id \(NPUs 0..3\) or by"):
        sim.fail_device(99)
    fat = Simulation.from_scenario(FAT_TREE, "congestion_aware")
    with pytest.raises(KeyError, match="links out of 0 lead to leaf0"):
        fat.network.link(0, 1)
    with pytest.raises(KeyError, match=r"\(NPUs 0..15, switches 16..21\)"):
        fat.fail_device(999)


def test_a_missing_node_names_the_ids_the_npu_has():
    sim = Simulation.from_scenario(RING)
    with pytest.raises(KeyError, match=r"NPU 0 has no node -1; its nodes are ids 0..0 \(1 in all\)"):
        sim.node_finished(0, -1)


def test_a_copy_of_a_log_under_another_name_is_refused_as_the_same_log_is(tmp_path, capsys):
    # the same path twice was refused (every size would count twice in the fit and the
    # scores); a copy of it counted twice: 28 sizes of one 14-size table
    copy = tmp_path / "all_reduce_copy.log"
    shutil.copyfile(A100 / "all_reduce.log", copy)
    assert main(["calibrate", str(A100 / "all_reduce.log"), str(copy), "--network",
                 str(A100 / "network.yml"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "all_reduce_copy.log: this log has the same contents as" in err and "give each log once" in err


def test_an_algorithms_bad_simpy_call_names_its_own_line_not_simpys(tmp_path, capsys, monkeypatch):
    # before: "raised ValueError: Negative delay -1 (at .../site-packages/simpy/events.py:237)",
    # a line of SimPy's the author cannot fix; now the algorithm's line that made the call
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "neg_timeout.py").write_text("def algo(ctx):\n    yield ctx.env.timeout(-1)\n")
    scenario = Path(RING).read_text().replace("all-reduce-implementation: [ring]",
                                               'all-reduce-implementation: ["neg_timeout:algo"]')
    (tmp_path / "s.yaml").write_text(scenario)
    assert main(["run", str(tmp_path / "s.yaml"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "raised ValueError: Negative delay -1 (at " in err and "neg_timeout.py:2)" in err


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> Path:
    """A calibration of the A100 all-reduce log holding out every third size."""
    out = tmp_path_factory.mktemp("cal")
    assert main(["calibrate", str(A100 / "all_reduce.log"), "--network", str(A100 / "network.yml"),
                 "--out", str(out), "--hold-out-every", "3"]) == 0
    return out


def _validate(cal: Path, tmp_path: Path, record: dict, log: Path) -> int:
    (tmp_path / "record.json").write_text(json.dumps(record))
    return main(["validate", str(log), "--network", str(cal / "network.yml"), "--system",
                 str(cal / "system.json"), "--out", str(tmp_path / "v"), "--holdout", str(tmp_path / "record.json")])


@pytest.mark.parametrize(("edit", "field"), [
    ({"fitted_lines": ["abc"]}, "logs[0]"),  # an internal error (int('abc'))
    ({"sha256_16": ["x"]}, "logs[0]"),  # an internal error (unhashable list)
    ({"fitted_lines": [37.5, 38.9]}, "logs[0]"),  # read as lines 37 and 38
    ({"fitted_lines": [True]}, "logs[0]"),  # read as line 1
])
def test_a_hand_edited_calibration_record_is_refused_naming_the_entry(calibrated, tmp_path, capsys, edit, field):
    record = json.loads((calibrated / "calibration.json").read_text())
    record["logs"][0].update(edit)
    capsys.readouterr()
    assert _validate(calibrated, tmp_path, record, A100 / "all_reduce.log") == 2
    err = capsys.readouterr().err
    assert f"field '{field}' expected the log's checksum" in err and "internal error" not in err


def test_a_record_of_other_times_is_refused_not_taken_for_either(calibrated, tmp_path, capsys):
    record = json.loads((calibrated / "calibration.json").read_text()) | {"times": "sideways"}
    assert _validate(calibrated, tmp_path, record, A100 / "all_reduce.log") == 2
    assert "field 'times' expected 'in-place' or 'out-of-place'" in capsys.readouterr().err


def test_a_log_changed_since_its_calibration_warns_that_its_fitted_sizes_count_as_held_out(
        calibrated, tmp_path, capsys):
    # before: every size silently scored HELD OUT, the fit's own rows among the predictions
    log = tmp_path / "all_reduce.log"
    log.write_text((A100 / "all_reduce.log").read_text().replace("68.4048", "68.4049"))  # a summary line
    record = json.loads((calibrated / "calibration.json").read_text())
    record["logs"][0]["path"] = str(log)  # as if calibrated on it before the edit
    capsys.readouterr()
    assert _validate(calibrated, tmp_path, record, log) == 0
    err = plain(capsys.readouterr().err)
    assert "all_reduce.log: changed since the calibration fitted it (checksum " in err
    # a log the calibration never saw is held out as it should be, without a word
    record["logs"][0]["path"] = str(tmp_path / "elsewhere.log")
    assert _validate(calibrated, tmp_path, record, log) == 0
    assert "warning" not in capsys.readouterr().err


def test_a_results_row_whose_key_was_edited_is_refused_not_kept_beside_a_rerun(tmp_path, capsys):
    # before: the row under the edited key stayed, its point ran again, and results.csv
    # held two rows of bandwidth 50; a row of a point the axes no longer have is still kept
    sweep = tmp_path / "q.yaml"
    sweep.write_text(yaml.safe_dump({"name": "q", "base": str(ROOT / "scenarios" / "torus3d_all_reduce.yaml"),
                                     "axes": {"network.bandwidth": [50, 100]}, "minimise": "finish_ns"}))
    out = tmp_path / "o"
    assert main(["sweep", str(sweep), "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    results = out / "results.csv"
    lines = results.read_text().splitlines()
    key = lines[1].split(",")[0]
    written = results.read_text()
    results.write_text("\n".join([lines[0], lines[1].replace(key, "0" * 12, 1), *lines[2:]]) + "\n")
    capsys.readouterr()
    assert main(["sweep", str(sweep), "--out", str(out), "--jobs", "1", "--no-plots"]) == 2
    assert f"line 2: key: '000000000000' is not the key of its coordinates ({key})" in capsys.readouterr().err
    sweep.write_text(sweep.read_text().replace("- 50\n", ""))  # bandwidth 50 is no point any more
    # the edited row is still one the sweep did not write (its digest), point or no point
    assert main(["sweep", str(sweep), "--out", str(out), "--jobs", "1", "--no-plots"]) == 2
    assert "line 2: was changed after the sweep wrote it" in capsys.readouterr().err
    results.write_text(written)  # as the sweep wrote it: a row of a point the axes no longer have is kept
    assert main(["sweep", str(sweep), "--out", str(out), "--jobs", "1", "--no-plots"]) == 0
    assert f"{key}," in results.read_text()


@pytest.mark.parametrize(("edit", "found"), [("remove", 3), ("add", 5)])
def test_a_cache_entry_that_lost_or_gained_a_rank_says_so_not_blaming_the_scenario(
        tmp_path, monkeypatch, capsys, edit, found):
    # before: "generate microbench writes 3 ranks, but the network has 4 NPUs; make the
    # generator's parallelism (num_npus, ...) match it", of a scenario that asks for 4
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    assert main(["run", RING, "--quiet"]) == 0
    (entry,) = (tmp_path / "cache" / "workloads").iterdir()
    if edit == "remove":
        (entry / "microbench.3.et").unlink()
    else:
        shutil.copyfile(entry / "microbench.3.et", entry / "microbench.4.et")
    capsys.readouterr()
    assert main(["run", RING, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"corrupt workload cache entry: its generator wrote 4 ranks' traces and {found} are there now" in err
    assert f"delete {entry} to generate it again" in plain(err).replace("\n", "")


def test_the_unfolded_rerun_of_a_run_without_memory_traces_writes_none_either(tmp_path, monkeypatch):
    # a folded run that stalls (or breaks its symmetry) runs again unfolded; that run took the
    # default memory_traces=True, so a sweep point (memory_traces=False) with track-local-mem
    # wrote local_mem_trace.*.json into the working directory when the rerun finished
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "waits.py").write_text(
        "from simpy_astra.collectives.base import CollectiveAlgorithm, ring_final_size\n"
        "def waits(ctx):\n"
        "    yield ctx.recv(ctx.members[(ctx.index - 1) % len(ctx.members)], 8)\n"
        "WAITS = CollectiveAlgorithm('waits', waits, ring_final_size, rotation_symmetric=True)\n")
    scenario = yaml.safe_load(Path(RING).read_text())
    scenario["system"] |= {"all-reduce-implementation": ["waits:WAITS"], "track-local-mem": 1}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(scenario | {"fold_symmetry": True}))
    for memory_traces in (False, True):
        sim = Simulation.from_scenario(str(tmp_path / "s.yaml"), memory_traces=memory_traces)
        reruns: list = []
        sim.rerun_watchers.append(reruns.append)
        assert sim.folding is not None
        with pytest.raises(StalledError):
            sim.run()
        assert [full.local_mem_trace_prefix is not None for full in reruns] == [memory_traces]
