"""Co-simulation you can build on: SimPy events everywhere, faults that end, stragglers, your
own environment, observation hooks.

Every expected figure is derived here by hand: links of exactly 1 byte/ns and 100 ns latency
(unaware delay of M bytes = M + 100 ns), or the examples' scenarios.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import simpy

from simpy_astra.errors import StalledError
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.schema import (
    ALL_REDUCE,
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
)
from tests.sim_helpers import run_sim

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import cosim_link_failure  # noqa: E402
import cosim_straggler  # noqa: E402

ONE_BYTE_PER_NS_GBPS = 1e9 / (1 << 30)  # GB = 2^30 B, so this is exactly 1 byte/ns
LAT = 100
NET2 = {"topology": ["Ring"], "npus_count": [2], "bandwidth": [ONE_BYTE_PER_NS_GBPS], "latency": [LAT]}
S = 2_000  # all-reduce bytes; on 2 NPUs a phase's message carries S/2
WAIT_NS = 5_000

SEEN: list = []  # what the algorithms below saw, by the test that ran them


def _peer(ctx) -> int:
    return ctx.members[(ctx.index + 1) % len(ctx.members)]


def wait_late(ctx):
    """Sends, receives, waits 5 us, then waits on its sends (arrived long ago) in every way."""
    part = ctx.size_bytes // len(ctx.members)
    sends = [ctx.send(_peer(ctx), part)]
    yield ctx.recv(_peer(ctx), part)
    yield ctx.env.timeout(WAIT_NS)
    send = sends[0]
    SEEN.append((send.triggered, send.processed, send.ok, send.value))
    yield send  # already processed: goes on at once
    yield ctx.env.all_of(sends)
    yield ctx.env.any_of(sends) & ctx.env.timeout(0)
    SEEN.append(ctx.env.now)


def wait_forever(ctx):
    """Waits for a message nobody sends, unless interrupted."""
    try:
        yield ctx.recv(_peer(ctx), 7)
    except simpy.Interrupt as interrupt:
        SEEN.append((ctx.npu_id, ctx.env.now, interrupt.cause))


def long_timeout(ctx):
    """Only waits 50 us of SimPy time: nothing of the model moves meanwhile."""
    yield ctx.env.timeout(50_000)


def _all_reduce(tmp_path: Path, algorithm: str, backend: str = "congestion_unaware", size: int = S, **kw):
    ar = make_node(1, "ar", COMM_COLL_NODE, attrs={"comm_type": ALL_REDUCE, "comm_size": size})
    return run_sim(tmp_path, [[ar], [ar]], NET2, {"all-reduce-implementation": [algorithm]}, backend=backend,
                   fold=False, run=False, **kw)[1]


# ---------------------------------------------------------------------------- SimPy events
def test_all_of_over_sends_that_already_arrived(tmp_path: Path) -> None:
    SEEN.clear()
    sim = _all_reduce(tmp_path, "tests.test_cosim_events:wait_late")
    reports = sim.run()
    # the recv arrives at S/2 + 100; 5 us later every wait on the sends returns at once
    done = S // 2 + LAT + WAIT_NS
    assert [r.finished_cycles for r in reports] == [done, done]
    assert sorted(SEEN, key=str) == sorted([(True, True, True, None), done] * 2, key=str)


def test_a_phase_is_a_simpy_process_that_can_be_interrupted(tmp_path: Path) -> None:
    SEEN.clear()
    sim = _all_reduce(tmp_path, "tests.test_cosim_events:wait_forever")
    phases = []

    def stop_phases(env):
        yield env.timeout(3_000)
        for npu in (0, 1):
            for phase in sim.running_phases(npu):
                assert isinstance(phase, simpy.Process) and phase.is_alive and not phase.triggered
                phases.append(phase)
                phase.interrupt("give up")

    sim.env.process(stop_phases(sim.env))
    reports = sim.run()
    assert sorted(SEEN) == [(0, 3_000, "give up"), (1, 3_000, "give up")]
    assert [r.finished_cycles for r in reports] == [3_000, 3_000]  # the phase ended: the node completes
    assert len(phases) == 2 and all(p.processed and not p.is_alive for p in phases)
    with pytest.raises(RuntimeError):
        phases[0].interrupt()
    assert any("never sent" in w for w in sim.warnings)  # the receives nobody matched


# ---------------------------------------------------------------------------- faults end
@pytest.mark.parametrize("backend", ["congestion_aware", "packet"])
@pytest.mark.parametrize("forever", [True, False])
def test_a_link_down_for_good_ends_in_a_stall_report(tmp_path: Path, backend: str, forever: bool) -> None:
    sim = _all_reduce(tmp_path, "ring", backend)
    sim.network.link(0, 1).take_down()  # before anything is sent, never brought up
    if forever:
        def heartbeat(env):
            while True:
                yield env.timeout(100)

        sim.env.process(heartbeat(sim.env))
    with pytest.raises(StalledError) as stall:
        sim.run()
    text = str(stall.value)
    assert "held by link 0->1, which is down" in text
    assert f"NPU 0 all_reduce phase of chunk stream 0 sent {S // 2} B to NPU 1" in text
    assert "NPU 1 all_reduce phase of chunk stream 0 waits for it" in text
    assert "NPU 1 waits on node 1 (COMM_COLL 'ar', ALL_REDUCE" in text
    # NPU 1's message reaches NPU 0 at 10 + 1,000 + 100 ns; from then on nothing moves. The
    # watchdog wakes at 1, 3, 7 us: alone on the queue it stops at its first quiet wake (3 us);
    # beside a heartbeat, at the second one that finds nothing changed (7 us)
    assert sim.env.now == (7_000 if forever else 3_000)


def test_the_link_failure_example_reports_the_link_and_the_phases() -> None:
    for backend in (None, "packet"):
        report, sim = cosim_link_failure.main(backend=backend)
        assert "held by link 0->1, which is down" in report
        assert "NPU 0 all_reduce phase of chunk stream 0 sent 262144 B to NPU 1" in report
        assert "NPU 1 all_reduce phase of chunk stream 0 waits for it" in report
        assert sim.env.now < 100_000  # found within a few wakes, with a heartbeat running
        # four chunks held on link 0->1: the one NPU 1 waits for, and three that read alike,
        # said once with their count (the report said the same line four times)
        held = "NPU 0 all_reduce phase of chunk stream 0 sent 262144 B to NPU 1 (tag 500000000): held by link 0->1"
        assert report.count(held) == 2 and f"{held}, which is down (x3)" in report


def _one_message(tmp_path: Path, size: int = 10_000, **sim_kwargs) -> Simulation:
    send = make_node(1, "s", COMM_SEND_NODE, attrs={"comm_src": 0, "comm_dst": 1, "comm_size": size, "comm_tag": 1})
    recv = make_node(1, "r", COMM_RECV_NODE, attrs={"comm_src": 0, "comm_dst": 1, "comm_size": size, "comm_tag": 1})
    return run_sim(tmp_path, [[send], [recv]], NET2, backend="congestion_aware", run=False, **sim_kwargs)[1]


@pytest.mark.parametrize("patience_ns", [0, 100_000])
def test_a_long_outage_needs_patience(tmp_path: Path, patience_ns: int) -> None:
    def outage(env, link):
        link.take_down()
        yield env.timeout(50_000)
        link.bring_up()

    def heartbeat(env):
        while True:
            yield env.timeout(100)

    sim = _one_message(tmp_path, stall_patience_ns=patience_ns)
    sim.env.process(outage(sim.env, sim.network.link(0, 1)))
    sim.env.process(heartbeat(sim.env))
    if not patience_ns:  # quiet and unchanged at 1 and 3 us: taken as down for good
        with pytest.raises(StalledError, match="held by link 0->1, which is down"):
            sim.run()
        assert sim.env.now == 3_000
        return
    # the 10,000 bytes leave when the link comes up: 50 us late
    assert _finish(sim) == [50_000 + 10_000 + LAT] * 2


@pytest.mark.parametrize("backend", ["congestion_aware", "packet"])
def test_a_failed_switch_ends_in_a_stall_report(tmp_path: Path, backend: str) -> None:
    ar = make_node(1, "ar", COMM_COLL_NODE, attrs={"comm_type": ALL_REDUCE, "comm_size": 4_000})
    net = {"topology": ["Switch"], "npus_count": [4], "bandwidth": [ONE_BYTE_PER_NS_GBPS], "latency": [LAT]}
    sim = run_sim(tmp_path, [[ar]] * 4, net, backend=backend, fold=False, run=False)[1]
    sim.fail_switch(4)  # the 4-NPU switch is device 4

    def heartbeat(env):
        while True:
            yield env.timeout(100)

    sim.env.process(heartbeat(sim.env))
    with pytest.raises(StalledError, match="held by link 0->4, which is failed"):
        sim.run()


def test_a_phase_waiting_on_a_long_timeout_is_not_a_stall(tmp_path: Path) -> None:
    sim = _all_reduce(tmp_path, "tests.test_cosim_events:long_timeout")
    assert _finish(sim) == [50_000, 50_000]  # the watchdog's wakes at 1, 3, 7, ... us see it pending


# ---------------------------------------------------------------------------- stragglers
def _compute_then_send(tmp_path: Path, compute_us: int = 10, size: int = 1_000, **sim_kwargs):
    comp = make_node(1, "c", COMP_NODE, duration_micros=compute_us)
    send = make_node(2, "s", COMM_SEND_NODE, deps=[1],
                     attrs={"comm_src": 0, "comm_dst": 1, "comm_size": size, "comm_tag": 1})
    recv = make_node(1, "r", COMM_RECV_NODE, attrs={"comm_src": 0, "comm_dst": 1, "comm_size": size, "comm_tag": 1})
    return run_sim(tmp_path, [[comp, send], [recv]], NET2, fold=False, run=False, **sim_kwargs)[1]


def _finish(sim: Simulation) -> list[int]:
    return [r.finished_cycles for r in sorted(sim.run(), key=lambda r: r.npu_id)]


@pytest.mark.parametrize("factor, at_ns", [(2.0, None), (3.0, 4_000), (0.5, 2_000)])
def test_a_slowed_npu_moves_the_figures_by_the_extra_compute(tmp_path: Path, factor: float, at_ns) -> None:
    base = 10_000 + 1_000 + LAT  # compute, then the message (sends complete on arrival)
    sim = _compute_then_send(tmp_path)
    sim.npu(0).slow_down(factor, at_ns=at_ns)
    start = at_ns or 0
    compute_end = start + int((10_000 - start) * factor)  # the rest of the work at the new speed
    assert _finish(sim) == [compute_end + 1_000 + LAT] * 2
    assert compute_end + 1_000 + LAT - base == int((10_000 - start) * (factor - 1))


def test_a_paused_npu_moves_the_figures_by_the_pause(tmp_path: Path) -> None:
    sim = _compute_then_send(tmp_path)
    sim.npu(0).pause(3_000, at_ns=4_000)
    assert _finish(sim) == [10_000 + 3_000 + 1_000 + LAT] * 2


def test_compute_issued_during_a_pause_starts_when_it_ends(tmp_path: Path) -> None:
    a = make_node(1, "a", COMP_NODE, duration_micros=2)
    b = make_node(2, "b", COMP_NODE, duration_micros=5, deps=[1])
    sim = run_sim(tmp_path, [[a, b], [a]], NET2, fold=False, run=False)[1]
    sim.npu(0).pause(1_500, at_ns=1_000)  # a ends at 2,000 + 1,500; b runs 3,500 .. 8,500
    sim.npu(1).pause(10_000, at_ns=500)  # a ends at 12,000
    sim.npu(1).pause(1_000, at_ns=13_000)  # nothing computes then: no effect
    assert _finish(sim) == [2_000 + 1_500 + 5_000, 2_000 + 10_000]


def test_a_failed_npu_is_reported_as_such(tmp_path: Path) -> None:
    sim = _compute_then_send(tmp_path)
    sim.npu(0).fail(at_ns=4_000)
    with pytest.raises(StalledError) as stall:
        sim.run()
    text = str(stall.value)
    assert "NPU 0 failed at 4000 ns" in text
    assert "NPU 1 waits on node 1 (COMM_RECV 'r')" in text


def test_stragglers_need_an_unfolded_run(tmp_path: Path) -> None:
    comp = make_node(1, "c", COMP_NODE, duration_micros=1)
    sim = run_sim(tmp_path, [[comp]] * 4, {**NET2, "npus_count": [4]}, fold=True, run=False)[1]
    if sim.folding is None:
        pytest.skip("not folded")
    with pytest.raises(ValueError, match="fold_symmetry: false"):
        sim.npu(0).slow_down(2.0)


def test_the_straggler_example_moves_the_step_by_the_extra_compute() -> None:
    times = cosim_straggler.main()
    assert times["slow"] - times["none"] == 20_000  # 2 x 10 us of compute, twice as slow
    assert times["pause"] - times["none"] == 5_000


# ---------------------------------------------------------------------------- your own environment
def test_a_users_environment_and_sim_finished(tmp_path: Path) -> None:
    quiet = _finish(_compute_then_send(tmp_path))
    assert quiet == [10_000 + 1_000 + LAT] * 2
    env = simpy.Environment()
    log = []

    def user(env, sim):
        yield env.timeout(500)
        at = yield sim.finished
        log.append(("finished", at, env.now))
        yield env.timeout(1_000)  # goes on under a plain env.run() only
        log.append(("later", env.now))

    sim = _compute_then_send(tmp_path, env=env)
    assert sim.env is env
    env.process(user(env, sim))
    assert _finish(sim) == quiet  # same figures on the user's environment
    assert log == [("finished", quiet[0], quiet[0])]  # resumed before run() returned
    env.run(until=quiet[0] + 2_000)  # the user's own processes go on after the NPUs finished
    assert log[-1] == ("later", quiet[0] + 1_000)


def test_every_constructor_takes_a_users_environment() -> None:
    env = simpy.Environment()
    sim = Simulation.from_scenario(str(ROOT / "examples" / "cosim_ring.yaml"), env=env)
    assert sim.env is env
    quiet = max(r.finished_cycles for r in Simulation.from_scenario(str(ROOT / "examples" / "cosim_ring.yaml")).run())
    env.run(until=sim.finished)
    assert env.now == quiet == max(r.finished_cycles for r in sim.run())


def test_a_users_env_run_until_finished(tmp_path: Path) -> None:
    env = simpy.Environment()
    sim = _compute_then_send(tmp_path, env=env)
    env.run(until=sim.finished)
    assert env.now == 10_000 + 1_000 + LAT and sim.finished.value == env.now
    assert [r.finished_cycles for r in sim.run()] == [env.now] * 2


# ---------------------------------------------------------------------------- hooks
def test_hooks_fire_the_derived_number_of_times() -> None:
    sim = Simulation.from_scenario(str(ROOT / "examples" / "cosim_ring.yaml"))
    assert "_release" not in vars(sim.npus[0]) and "send" not in vars(sim.network)  # nothing wrapped yet
    seen: dict[str, list] = {}
    for kind in ("message_sent", "message_delivered", "link_start", "link_end", "collective_start",
                 "collective_end", "node_end"):
        sim.on(kind, lambda o, kind=kind: seen.setdefault(kind, []).append(o))
    ends = sim.stream("node_end")
    got = []

    def reader(env):
        while True:
            got.append((yield ends.get()))

    sim.env.process(reader(sim.env))
    reports = sim.run()
    n = 4  # ring all-reduce, one chunk: every NPU sends 2(n-1) messages of S/n, one hop each
    count = {kind: len(v) for kind, v in seen.items()}
    assert count == {"message_sent": 2 * (n - 1) * n, "message_delivered": 2 * (n - 1) * n,
                     "link_start": 2 * (n - 1) * n, "link_end": 2 * (n - 1) * n,
                     "collective_start": n, "collective_end": n, "node_end": n}
    assert {o.size_bytes for o in seen["message_sent"]} == {(1 << 20) // n}
    assert sorted(o.time_ns for o in seen["node_end"]) == sorted(r.finished_cycles for r in reports)
    assert [o.what for o in seen["collective_start"]] == ["all_reduce"] * n
    link01 = sim.network.link(0, 1)
    assert sum(1 for o in seen["link_start"] if o.what is link01) == 2 * (n - 1)
    # the reader is resumed by SimPy after the event that fed the stream: run() stops at the
    # NPUs' end (all four at once) before it read all of that instant; a plain env.run goes on
    sim.env.run(until=sim.env.now + 1)
    assert sorted(o.npu for o in got) == [0, 1, 2, 3] and all(o.kind == "node_end" for o in got)


def test_hooks_on_a_backend_without_links(tmp_path: Path) -> None:
    sim = _compute_then_send(tmp_path)
    delivered = []
    sim.on("message_delivered", lambda o: delivered.append((o.time_ns, o.npu, o.peer, o.size_bytes)))
    with pytest.raises(ValueError, match="congestion_aware and packet"):
        sim.on("link_start", print)
    sim.run()
    assert delivered == [(10_000 + 1_000 + LAT, 0, 1, 1_000)]


# ---------------------------------------------------------------------------- clear answers
def test_link_on_a_backend_without_links_names_those_with_links(tmp_path: Path) -> None:
    sim = _compute_then_send(tmp_path)
    with pytest.raises(AttributeError, match="links exist in the congestion_aware and packet backends"):
        sim.network.link(0, 1)


def test_plugin_modules_resolve_beside_the_scenario(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "study_algos.py").write_text(
        "from simpy_astra import collectives\n"
        "def quick(ctx):\n"
        "    yield ctx.wait(123)\n"
        "collectives.register('quickFromStudy', quick)\n")
    scenario = (ROOT / "examples" / "cosim_ring.yaml").read_text()
    scenario = scenario.replace("all-reduce-implementation: [ring]", "all-reduce-implementation: [quickFromStudy]")
    (folder / "study.yaml").write_text(scenario + "plugins: [study_algos]\n")
    monkeypatch.chdir(tmp_path)  # not the scenario's folder
    reports = Simulation.from_scenario(str(folder / "study.yaml")).run()
    assert [r.finished_cycles for r in reports] == [123] * 4


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "examples").glob("*.py")))
def test_every_example_runs_as_a_script(script: str) -> None:
    import os
    import subprocess

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(ROOT / "examples" / script)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
