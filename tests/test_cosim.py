"""The public co-simulation API: user SimPy processes beside the NPUs, on live links.

Every expected figure is derived here by hand. The examples of ``examples/`` run as the
README shows them; the small cases use a link of exactly 1 byte/ns so that times are exact.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from simpy_astra.errors import StalledError
from simpy_astra.infra.units import network_gbps_to_bytes_per_ns
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.schema import COMM_RECV_NODE, COMM_SEND_NODE
from tests.sim_helpers import run_sim

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import cosim_background  # noqa: E402
import cosim_fault  # noqa: E402
import cosim_monitor  # noqa: E402

# the examples' scenario: ring all-reduce of 1 MiB on 4 NPUs, one chunk, 50 GB/s, 500 ns, E = 10
N, SIZE, E = 4, 1 << 20, 10
MSG = SIZE // N  # ring all-reduce messages carry S/n
SER = int(MSG / network_gbps_to_bytes_per_ns(50.0))  # 4882 ns on the wire per message

ONE_BYTE_PER_NS_GBPS = 1e9 / (1 << 30)  # GB = 2^30 B, so this is exactly 1 byte/ns
LAT = 100


def test_monitor_samples_add_up_to_the_link_statistics() -> None:
    samples, sim = cosim_monitor.main()
    link = sim.network.link(0, 1)
    # link 0->1 carries each of the 2(n-1) ring messages of NPU 0 once
    assert link.bytes == 2 * (N - 1) * MSG
    assert link.busy_ns == 2 * (N - 1) * SER == 29_292
    assert sum(samples) == link.busy_ns
    stats = {(s.src, s.dst): s.busy_ns for s in sim.network.link_stats()}
    assert stats[(0, 1)] == sum(samples)
    assert all(0 <= s <= 1000 for s in samples)
    # the monitor never ends, yet the run stopped when the NPUs finished, not later
    assert sim.env.now == max(r.finished_cycles for r in sim.reports)
    assert len(samples) == sim.env.now // 1000 + 1


def test_background_traffic_slows_the_collective_by_its_serialisation_time() -> None:
    quiet, loaded, done = cosim_background.main(size_bytes=1 << 20, start_ns=0)
    background_ser = int((1 << 20) / network_gbps_to_bytes_per_ns(50.0))  # 19,531 ns
    # NPU 0's first message on 0->1 would start after the endpoint delay E; it now waits
    # for the background bytes, which hold the wire from t=0. Every later ring step waits
    # on its predecessor, so the whole all-reduce moves by the same amount.
    assert loaded - quiet == background_ser - E == 19_521
    assert done == [background_ser + 500]  # serialised, then one hop of latency


def test_an_outage_on_the_critical_link_delays_the_collective_by_its_length() -> None:
    quiet = max(r.finished_cycles for r in Simulation.from_scenario(str(cosim_fault.SCENARIO)).run())
    # at 2 us, link 0->1 is serialising its first message (10 .. 10 + 4,882 ns); its bytes
    # stop for 10 us and then continue, and the ring's chain of steps moves by 10 us
    assert cosim_fault.main("outage") - quiet == 10_000


def _one_message(tmp_path: Path, size: int):
    send = make_node(1, "s", COMM_SEND_NODE, attrs={"comm_src": 0, "comm_dst": 1, "comm_size": size, "comm_tag": 1})
    recv = make_node(1, "r", COMM_RECV_NODE, attrs={"comm_src": 0, "comm_dst": 1, "comm_size": size, "comm_tag": 1})
    net = {"topology": ["Ring"], "npus_count": [2], "bandwidth": [ONE_BYTE_PER_NS_GBPS], "latency": [LAT]}
    _r, sim = run_sim(tmp_path, [[send], [recv]], net, backend="congestion_aware", run=False)
    return sim


def test_halving_bandwidth_mid_message_retimes_the_bytes_not_yet_sent(tmp_path: Path) -> None:
    sim = _one_message(tmp_path, 10_000)
    link = sim.network.link(0, 1)
    assert network_gbps_to_bytes_per_ns(link.bandwidth_gbps) == 1.0
    sim.env.process(cosim_fault.halve_bandwidth(sim.env, link, at_ns=4_000))
    reports = {r.npu_id: r for r in sim.run()}
    # 4,000 B left at 1 B/ns by t=4,000 -> the other 6,000 B at 0.5 B/ns take 12,000 ns
    assert reports[1].finished_cycles == 4_000 + 12_000 + LAT
    assert link.busy_ns == 16_000 and link.bytes == 10_000


def test_a_link_taken_down_holds_its_bytes_until_it_is_up(tmp_path: Path) -> None:
    sim = _one_message(tmp_path, 10_000)
    link = sim.network.link(0, 1)
    sim.env.process(cosim_fault.outage(sim.env, link, down_ns=4_000, up_ns=9_000))
    reports = {r.npu_id: r for r in sim.run()}
    assert reports[1].finished_cycles == 10_000 + 5_000 + LAT  # 5 us of outage
    assert link.busy_ns == 10_000  # time down is not busy time


def test_a_speed_change_while_down_waits_for_the_link_to_come_up(tmp_path: Path) -> None:
    sim = _one_message(tmp_path, 10_000)
    link = sim.network.link(0, 1)

    def fault(env):
        yield env.timeout(4_000)
        link.take_down()
        link.set_bandwidth(link.bandwidth_gbps / 2)  # still down: nothing moves
        yield env.timeout(1_000)
        link.bring_up()

    sim.env.process(fault(sim.env))
    reports = {r.npu_id: r for r in sim.run()}
    # 4,000 B by t=4,000; down until 5,000; the other 6,000 B at 0.5 B/ns take 12,000 ns
    assert reports[1].finished_cycles == 5_000 + 12_000 + LAT


def test_run_until_stops_early_and_goes_on(tmp_path: Path) -> None:
    sim = _one_message(tmp_path, 10_000)
    node = sim.node_finished(1, 1)
    assert sim.run(until=5_000) == []
    assert sim.env.now == 5_000 and not node.triggered
    assert sim.network.link(0, 1).busy_ns == 5_000  # live: half the bytes are on the wire
    reports = sim.run()
    assert [r.finished_cycles for r in reports] == [10_000 + LAT] * 2
    assert node.value == 10_000 + LAT
    assert sim.npu_finished(0).value.finished_cycles == 10_000 + LAT


def test_background_traffic_needs_a_non_negative_size(tmp_path: Path) -> None:
    sim = _one_message(tmp_path, 10)
    with pytest.raises(ValueError):
        sim.network.send_background(0, 1, -1)
    with pytest.raises(KeyError):
        sim.network.link(0, 7)


def _stuck_receive(tmp_path: Path, backend: str):
    """NPU 1 waits for a message NPU 0 never sends; NPU 0 computes for 1 us and finishes."""
    from simpy_astra.workloads.chakra.schema import COMP_NODE

    comp = make_node(1, "c", COMP_NODE, duration_micros=1)
    recv = make_node(1, "r", COMM_RECV_NODE, attrs={"comm_src": 0, "comm_dst": 1, "comm_size": 64, "comm_tag": 1})
    net = {"topology": ["Ring"], "npus_count": [2], "bandwidth": [ONE_BYTE_PER_NS_GBPS], "latency": [LAT]}
    _r, sim = run_sim(tmp_path, [[comp], [recv]], net, backend=backend, run=False)
    return sim


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
def test_a_stall_is_reported_even_while_a_user_process_loops_forever(tmp_path: Path, backend: str) -> None:
    sim = _stuck_receive(tmp_path, backend)
    ticks = []

    def monitor(env):
        while True:  # never ends: only the watchdog can tell the model is stuck
            ticks.append(env.now)
            yield env.timeout(100)

    sim.env.process(monitor(sim.env))
    with pytest.raises(StalledError, match="NPU 1"):
        sim.run()
    # the watchdog wakes at 1 us (NPU 0's compute ends first: its event is older) and 3 us:
    # both find nothing pending and no progress between them
    assert sim.env.now == 3_000 and ticks[-1] == 3_000


def test_the_watchdog_does_not_stop_a_long_quiet_compute(tmp_path: Path) -> None:
    # one 50 us compute node: the model is busy (its clock has a pending bucket) while a
    # monitor loops; the run must end at 50 us, not be stopped as a stall
    from simpy_astra.workloads.chakra.schema import COMP_NODE

    comp = make_node(1, "c", COMP_NODE, duration_micros=50)
    net = {"topology": ["Ring"], "npus_count": [2], "bandwidth": [ONE_BYTE_PER_NS_GBPS], "latency": [LAT]}
    _r, sim = run_sim(tmp_path, [[comp], [comp]], net, run=False, fold=False)

    def monitor(env):
        while True:
            yield env.timeout(100)

    sim.env.process(monitor(sim.env))
    assert [r.finished_cycles for r in sim.run()] == [50_000, 50_000]
