"""The horizon: simulated time must fit 2^63 ns. Values past it are refused naming the field,
and values below it cost the stall watchdog a few wakes, however far apart events lie."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import simpy

from simpy_astra.cli.main import EXIT_INPUT_ERROR, main
from simpy_astra.infra.horizon import HORIZON_MICROS, HORIZON_NS
from simpy_astra.running.stall import watch_for_stall
from simpy_astra.workloads.chakra import make_node, write_et
from simpy_astra.workloads.chakra.schema import COMM_COLL_NODE, COMP_NODE

SYSTEM = {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
          "preferred-dataset-splits": 1, "all-reduce-implementation": ["ring"],
          "all-gather-implementation": ["ring"], "reduce-scatter-implementation": ["ring"],
          "all-to-all-implementation": ["ring"], "collective-optimization": "baseline"}


def _scenario(folder: Path, bandwidth="50", latency="500", size=1024, micros=5, extra="") -> Path:
    for rank in range(2):
        write_et(str(folder / f"w.{rank}.et"), [
            make_node(0, "c", COMP_NODE, duration_micros=micros),
            make_node(1, "ar", COMM_COLL_NODE, deps=[0], attrs={"comm_type": 0, "comm_size": size,
                                                                 "is_cpu_op": False})])
    path = folder / "s.yaml"
    path.write_text(f"system: {json.dumps(SYSTEM)}\n"
                    f"network: {{topology: [Ring], npus_count: [2], bandwidth: [{bandwidth}], "
                    f"latency: [{latency}]}}\nremote_memory: {{memory-type: NO_MEMORY_EXPANSION}}\n"
                    + (extra or f"workload: {folder / 'w'}\n"))
    return path


def _one_error(capsys, path: Path, *words: str) -> None:
    code = main(["run", str(path), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_INPUT_ERROR, err
    assert len(err) == 1, err
    for word in words:
        assert word in err[0], (word, err[0])


@pytest.mark.parametrize("latency", ["1e19", "1e300"])
def test_latency_past_the_horizon_is_refused(tmp_path, capsys, latency):
    _one_error(capsys, _scenario(tmp_path, latency=latency), "latency[0]", "past the horizon")


@pytest.mark.parametrize("bandwidth", ["1e-20", "1e-300"])
def test_bandwidth_so_low_one_byte_passes_the_horizon_is_refused(tmp_path, capsys, bandwidth):
    _one_error(capsys, _scenario(tmp_path, bandwidth=bandwidth), "bandwidth[0]", "past the horizon")


def test_sizes_over_bandwidth_past_the_horizon_are_refused(tmp_path, capsys):
    # each value alone is fine; 1 MiB at 1e-13 GB/s takes 1.7e19 ns
    _one_error(capsys, _scenario(tmp_path, bandwidth="1e-13", size=2**20), "past the horizon",
               "raise the bandwidth")


def test_duration_past_the_horizon_is_refused(tmp_path, capsys):
    _one_error(capsys, _scenario(tmp_path, micros=HORIZON_MICROS + 1), "duration_micros", "past the horizon")


@pytest.mark.parametrize("start", ["1e19", "1e25"])
def test_job_start_past_the_horizon_is_refused(tmp_path, capsys, start):
    _scenario(tmp_path)
    jobs = (f"jobs:\n  - {{name: a, workload: {tmp_path / 'w'}, npus: [0, 1], start_ns: {start}}}\n")
    path = _scenario(tmp_path, extra=jobs)
    _one_error(capsys, path, "start_ns", "past the horizon")


@pytest.mark.parametrize("kwargs", [{"latency": "1e17"}, {"micros": 2**44}, {"size": 2**62}])
def test_far_apart_events_below_the_horizon_run_to_the_end(tmp_path, capsys, kwargs):
    assert main(["run", str(_scenario(tmp_path, **kwargs)), "--reference-lines", "--quiet"]) == 0
    assert "sys[1] finished" in capsys.readouterr().out


def test_watchdog_wakes_grow_with_the_clock():
    """A model busy with one event 1e17 ns away: the watchdog wakes about log2(1e17) times,
    not 1e8 times (once per simulated second)."""
    env = simpy.Environment()
    finished, stalled = env.event(), env.event()
    wakes = []

    def model():
        yield env.timeout(10**17)
        finished.succeed()

    def busy():
        wakes.append(env.now)
        return None  # never quiet

    env.process(model())
    env.process(watch_for_stall(env, finished, stalled, busy))
    env.run(until=finished)
    assert len(wakes) < 200 and not stalled.triggered


def test_watchdog_never_looks_past_the_horizon():
    env = simpy.Environment(initial_time=HORIZON_NS - 10)
    finished, stalled = env.event(), env.event()

    def model():
        yield env.timeout(5)
        finished.succeed()

    env.process(model())
    env.process(watch_for_stall(env, finished, stalled, lambda: None))
    env.run()
    assert env.now <= HORIZON_NS


# ----------------------------------------------------------------------- the Python API's boundary
def _sim(tmp_path):
    from simpy_astra.config.scenario import load_scenario
    from simpy_astra.simulation import Simulation

    inputs = load_scenario(str(_scenario(tmp_path)))
    inputs = dataclasses.replace(inputs, fold_symmetry=False)  # stragglers need their own NPU
    return Simulation(inputs)


@pytest.mark.parametrize("call, words", [
    (lambda s: s.npu(99), "NPU 99 does not exist"),
    (lambda s: s.npu(-1), "NPU -1 does not exist"),
    (lambda s: s.npu(0).pause(float("nan")), "pause duration_ns must be a finite number"),
    (lambda s: s.npu(0).pause(1e30), "past the horizon"),
    (lambda s: s.npu(0).slow_down(float("inf")), "slow-down factor must be a finite number"),
    (lambda s: s.npu(0).slow_down(2.0, at_ns=float("nan")), "at_ns must be a finite number"),
    (lambda s: s.npu(0).fail(at_ns=float("nan")), "at_ns must be a finite number"),
    (lambda s: s.run(until=float("nan")), "run(until=...) must be a finite number"),
    (lambda s: s.run(until="100"), "run(until=...) must be a finite number"),
])
def test_api_arguments_are_checked_at_the_boundary(tmp_path, call, words):
    with pytest.raises(ValueError) as info:
        call(_sim(tmp_path))
    assert words in str(info.value)


@pytest.mark.parametrize("args, words", [
    ((0, 99, 1024), "dst NPU 99 does not exist"),
    ((0, 0, 1024), "both NPU 0"),
    ((0, 1, 2**63), "0 .. 2^63-1"),
    ((0, 1, float("nan")), "0 .. 2^63-1"),
])
@pytest.mark.parametrize("backend", ["congestion_aware", "packet"])
def test_background_traffic_arguments_are_checked(tmp_path, args, words, backend):
    from simpy_astra.config.scenario import load_scenario
    from simpy_astra.simulation import Simulation

    sim = Simulation(load_scenario(str(_scenario(tmp_path)), backend=backend))
    with pytest.raises(ValueError) as info:
        sim.network.send_background(*args)
    assert words in str(info.value)


@pytest.mark.parametrize("micros", [5, 10**12])
def test_a_stall_is_reported_at_the_time_of_the_last_progress(tmp_path, capsys, micros):
    """NPU 1 computes for ``micros`` us, then waits on a receive nobody sends: the model last
    moved at micros * 1000 ns (the receive starts then), whenever the watchdog notices it
    (it wakes at doubling intervals, so later, by up to the clock's reading)."""
    from simpy_astra.cli.main import EXIT_STALLED
    from simpy_astra.workloads.chakra.schema import COMM_RECV_NODE

    comp = make_node(0, "c", COMP_NODE, duration_micros=micros)
    recv = make_node(1, "r", COMM_RECV_NODE, deps=[0], attrs={"comm_src": 0, "comm_size": 1024, "comm_tag": 7,
                                                              "is_cpu_op": False})
    path = _scenario(tmp_path)  # its network and system; the traces are these
    write_et(str(tmp_path / "w.0.et"), [comp])
    write_et(str(tmp_path / "w.1.et"), [comp, recv])
    code = main(["run", str(path), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_STALLED and len(err) == 1, err
    assert f"simulation stalled at {micros * 1000} ns (its last progress; noticed at " in err[0], err[0]
    assert "NPU 1 waits on node 1" in err[0]
