"""The congestion-aware backend: closed forms derived by hand.

Rules (ASTRA_SEMANTICS.md section 10): every directed link is a FIFO server; a message that
starts on a link at ``t`` reaches the next device at ``t + trunc(lat + S/B')`` and frees the
link at ``t + trunc(S/B')``; store-and-forward per hop. Expected values are computed here
from those rules, never read back from the simulator. The aware reference cases run in
``test_reference_parity.py`` with the unaware ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import simpy

from simpy_astra.engine.statistics import NpuReport
from simpy_astra.network.congestion_aware import CongestionAwareNetwork
from simpy_astra.network.link import Link
from simpy_astra.simulation import Simulation
from simpy_astra.topologies import FullyConnected, Line, Ring, Switch
from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.schema import (
    ALL_REDUCE,
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
)
from tests.sim_helpers import net, run_sim

E = 10
AWARE = "congestion_aware"


# ------------------------------------------------------------------------------ helpers
def bytes_per_ns(gbps: float) -> float:
    return gbps * 2**30 / 1e9


def hop(latency: float, size: int, gbps: float) -> int:
    """One uncontended hop: trunc(lat + S/B')."""
    return int(latency + size / bytes_per_ns(gbps))


def ser(size: int, gbps: float) -> int:
    """How long a message keeps a link busy: trunc(S/B')."""
    return int(size / bytes_per_ns(gbps))


def run(tmp: Path, ranks: list[list], network: dict, system: dict | None = None,
        backend: str = AWARE) -> tuple[dict[int, NpuReport], Simulation]:
    return run_sim(tmp, ranks, network, system, backend=backend)


def send(dst: int, size: int, tag: int = 7, node_id: int = 1):
    return make_node(node_id, "send", COMM_SEND_NODE, attrs={"comm_dst": dst, "comm_size": size, "comm_tag": tag})


def recv(src: int, size: int, tag: int = 7, node_id: int = 1):
    return make_node(node_id, "recv", COMM_RECV_NODE, attrs={"comm_src": src, "comm_size": size, "comm_tag": tag})


# sizes and links chosen so that both truncations matter: S/B' = 18626.45 ns
SIZE, LAT, BW = 1_000_000, 500.5, 50.0


# ------------------------------------------------------------------------------ closed forms
@pytest.mark.parametrize("topology", ["FullyConnected", "Ring"])
def test_one_hop_costs_latency_plus_serialisation(tmp_path: Path, topology: str) -> None:
    d = hop(LAT, SIZE, BW)
    assert d == 19126
    reports, _ = run(tmp_path, [[send(1, SIZE)], [recv(0, SIZE)]], net(topology, 2, BW, LAT))
    assert reports[0].finished_cycles == d  # a send completes when its message arrives
    assert reports[1].finished_cycles == d


def test_switch_pays_serialisation_on_both_hops(tmp_path: Path) -> None:
    d = hop(LAT, SIZE, BW)
    reports, _ = run(tmp_path, [[send(1, SIZE)], [recv(0, SIZE)]], net("Switch", 2, BW, LAT))
    assert reports[0].finished_cycles == reports[1].finished_cycles == 2 * d
    # the unaware backend pays the serialisation once and truncates once
    unaware, _ = run(tmp_path, [[send(1, SIZE)], [recv(0, SIZE)]], net("Switch", 2, BW, LAT),
                     backend="congestion_unaware")
    assert unaware[0].finished_cycles == int(2 * LAT + SIZE / bytes_per_ns(BW)) != 2 * d


@pytest.mark.parametrize(("dst", "hops"), [(1, 1), (3, 3), (4, 4), (5, 3), (7, 1)])
def test_ring_store_and_forward_per_hop(tmp_path: Path, dst: int, hops: int) -> None:
    n = 8
    ranks: list[list] = [[make_node(1, "idle", COMP_NODE, duration_micros=1)] for _ in range(n)]
    ranks[0] = [send(dst, SIZE)]
    ranks[dst] = [recv(0, SIZE)]
    reports, sim = run(tmp_path, ranks, net("Ring", n, BW, LAT))
    assert reports[0].finished_cycles == hops * hop(LAT, SIZE, BW)
    used = {(s.src, s.dst) for s in sim.network.link_stats() if s.bytes}
    step = 1 if hops == dst else -1  # clockwise unless anticlockwise is strictly shorter
    assert used == {(k * step % n, (k + 1) * step % n) for k in range(hops)}


def test_two_messages_share_the_switch_downlink(tmp_path: Path) -> None:
    # NPUs 0 and 1 both send to NPU 2 at t=0; both reach the switch at d; NPU 0's message
    # (its send was issued first) takes the downlink, NPU 1's waits until the link is free
    d, s = hop(LAT, SIZE, BW), ser(SIZE, BW)
    ranks = [[send(2, SIZE, tag=1)], [send(2, SIZE, tag=2)],
             [recv(0, SIZE, tag=1, node_id=1), recv(1, SIZE, tag=2, node_id=2)]]
    reports, sim = run(tmp_path, ranks, net("Switch", 3, BW, LAT))
    assert reports[0].finished_cycles == d + d
    assert reports[1].finished_cycles == d + s + d
    assert reports[2].finished_cycles == d + s + d
    stats = {(s.src, s.dst): (s.bytes, s.busy_ns) for s in sim.network.link_stats()}
    assert stats[(0, 3)] == stats[(1, 3)] == (SIZE, s)
    assert stats[(3, 2)] == (2 * SIZE, 2 * s)
    assert stats[(2, 3)] == stats[(3, 0)] == stats[(3, 1)] == (0, 0)


def _deliveries(topology, sends: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """Post (src, dst, size) sends at t=0 with matching receives; (tag, arrival ns) in order."""
    env = simpy.Environment()
    network = CongestionAwareNetwork(env, [topology])
    out: list[tuple[int, int]] = []
    for tag, (src, dst, size) in enumerate(sends):
        network.recv(dst, src, tag, size, None, None)
        network.send(src, dst, tag, size, lambda t: out.append((t, env.now)), tag)
    env.run()
    return out


def test_second_message_on_a_link_waits_for_the_first_serialisation() -> None:
    d, s = hop(LAT, SIZE, BW), ser(SIZE, BW)
    got = _deliveries(FullyConnected(2, BW, LAT), [(0, 1, SIZE), (0, 1, SIZE)])
    assert got == [(0, d), (1, s + d)]
    # FIFO, not shortest first: a small message queued behind a big one waits for all of it
    small = 1000
    got = _deliveries(FullyConnected(2, BW, LAT), [(0, 1, SIZE), (0, 1, small), (1, 0, small)])
    assert sorted(got) == [(0, d), (1, s + hop(LAT, small, BW)), (2, hop(LAT, small, BW))]


def test_two_npu_ring_keeps_one_link_per_direction() -> None:
    network = CongestionAwareNetwork(simpy.Environment(), [Ring(2, BW, LAT)])
    assert sorted((s.src, s.dst) for s in network.link_stats()) == [(0, 1), (1, 0)]
    d, s = hop(LAT, SIZE, BW), ser(SIZE, BW)
    got = _deliveries(Ring(2, BW, LAT), [(0, 1, SIZE), (0, 1, SIZE), (1, 0, SIZE)])
    assert sorted(got) == [(0, d), (1, s + d), (2, d)]


def test_a_contended_switch_uplink_serialises_the_whole_route() -> None:
    # three messages leave NPU 0 at t=0 for three different NPUs: they share the uplink, then
    # each has its own downlink: message k reaches the switch at k*s + d, its NPU at k*s + 2d
    d, s = hop(LAT, SIZE, BW), ser(SIZE, BW)
    got = _deliveries(Switch(4, BW, LAT), [(0, 1, SIZE), (0, 2, SIZE), (0, 3, SIZE)])
    assert got == [(k, k * s + 2 * d) for k in range(3)]


class _UsersLink(Link):
    """A user's link model (defined outside simpy-astra), behaving as the built-in one: its
    ``offer`` might raise or hand a message on within the call, for all the switch knows."""


@pytest.mark.parametrize("watched, link_model", [(False, None), (True, None), (False, _UsersLink)])
def test_an_unwatched_switch_forwards_in_the_arrival_without_resuming_its_process(watched: bool,
                                                                                  link_model: type | None) -> None:
    # the switch's process waits on its bell, and ringing it would resume the process in
    # place only to forward: unwatched, with our own links, the arrival forwards itself (the
    # bell stays unrung); a switch_forward watcher or a user's link model goes through the
    # process. Same times either way.
    env = simpy.Environment()
    network = CongestionAwareNetwork(env, [Switch(2, BW, LAT)], link_model=link_model)
    (switch,) = network.switches.values()
    seen: list[int] = []
    if watched:
        switch.watch("switch_forward", lambda sw, key, size: seen.append(size))
    bell = switch._doorbell.bell
    out: list[tuple[int, int]] = []
    network.recv(1, 0, 7, SIZE, None, None)
    network.send(0, 1, 7, SIZE, lambda t: out.append((t, env.now)), 7)
    env.run()
    assert out == [(7, 2 * hop(LAT, SIZE, BW))]
    resumed = watched or link_model is not None
    assert (switch._doorbell.bell is not bell) is resumed and switch.process.is_alive
    assert seen == ([SIZE] if watched else [])


def test_reference_regression_ring_all_reduce(tmp_path: Path) -> None:
    # ASTRA-sim's regression test runs on the aware binary: one message per link at a time
    n, size, splits = 8, 1 << 20, 4
    msg = size // splits // n
    p = 3 * int(msg / (50 * 1e9) * 1e9)
    chunk = E + 2 * (n - 1) * (hop(500, msg, 50) + E) + (n - 1) * p
    coll = make_node(1, "ar", COMM_COLL_NODE, attrs={"comm_type": ALL_REDUCE, "comm_size": size})
    reports, _ = run(tmp_path, [[coll]] * n, net("Ring", n), {"preferred-dataset-splits": splits})
    assert splits * chunk == 117780
    assert {(r.finished_cycles, r.exposed_comm_cycles) for r in reports.values()} == {(117780, 117780)}


def _mesh_network(shape: list[int], kind: str = "Line", gbps: float = 50.0, lat: float = 500.0):
    dims = [{"Line": Line, "Ring": Ring}[kind](n, gbps, lat) for n in shape]
    return CongestionAwareNetwork(simpy.Environment(), dims)


def test_mesh_degrees_and_xy_route() -> None:
    net4 = _mesh_network([4, 4])
    degrees = dict(net4.graph.out_degree())
    corners, edges = {0, 3, 12, 15}, {1, 2, 4, 7, 8, 11, 13, 14}
    assert all(degrees[n] == (2 if n in corners else 3 if n in edges else 4) for n in range(16))
    route = [(lk.src, lk.dst) for lk in net4.route(1, 7)]
    assert route == [(1, 2), (2, 3), (3, 7)]  # X first, then Y


def test_xy_route_on_a_3x3_mesh_pays_every_hop(tmp_path: Path) -> None:
    network = {"topology": ["Line", "Line"], "npus_count": [3, 3], "bandwidth": [50.0, 50.0],
               "latency": [500.0, 500.0]}
    ranks = [[make_node(1, "idle", COMP_NODE, duration_micros=1)] for _ in range(9)]
    ranks[0] = [send(8, SIZE)]
    ranks[8] = [recv(0, SIZE)]
    reports, sim = run(tmp_path, ranks, network)
    assert reports[8].finished_cycles == 4 * hop(500, SIZE, 50)  # (0,0) -> (2,0) -> (2,2)
    used = sorted((s.src, s.dst) for s in sim.network.link_stats() if s.bytes)
    assert used == [(0, 1), (1, 2), (2, 5), (5, 8)]


def test_torus_wraps_around_in_each_dimension(tmp_path: Path) -> None:
    torus = _mesh_network([4, 4], kind="Ring")
    assert [(lk.src, lk.dst) for lk in torus.route(0, 15)] == [(0, 3), (3, 15)]
    assert [(lk.src, lk.dst) for lk in torus.route(0, 2)] == [(0, 1), (1, 2)]  # tie: clockwise


def test_two_flows_share_a_mesh_link(tmp_path: Path) -> None:
    # on a 3-NPU line, 0 -> 2 crosses 1 -> 2, where NPU 1's large message is still serialising
    big, small = 1 << 22, 1 << 12
    network = {"topology": ["Line"], "npus_count": [3], "bandwidth": [50.0], "latency": [500.0]}
    ranks = [[send(2, small, tag=1)], [send(2, big, tag=2)],
             [recv(0, small, tag=1, node_id=1), recv(1, big, tag=2, node_id=2)]]
    reports, _ = run(tmp_path, ranks, network)
    first_hop = hop(500, small, 50)
    assert ser(big, 50) > first_hop  # the small message reaches NPU 1 while the link is busy
    assert reports[0].finished_cycles == ser(big, 50) + hop(500, small, 50)
    assert reports[1].finished_cycles == hop(500, big, 50)


# ------------------------------------------------------------------------------ the link's process
ONE_BYTE_PER_NS_GBPS = 1e9 / 2**30  # GB = 2^30 B: exactly 1 byte/ns


class _Item:
    """What the network offers a link: only ``size`` matters to a FIFO link."""

    def __init__(self, size: int) -> None:
        self.size = size


def _link(env: simpy.Environment, got: list) -> Link:
    """Link 0 -> 1 at 1 B/ns and 100 ns that records (size, arrival ns) of each item."""
    return Link(env, 0, 1, ONE_BYTE_PER_NS_GBPS, 100, lambda item: got.append((item.size, env.now)))


def test_the_link_is_a_process_serving_offers_and_puts_in_one_fifo() -> None:
    env, got = simpy.Environment(), []
    link = _link(env, got)
    assert isinstance(link.process, simpy.Process) and link.process.is_alive
    link.offer(_Item(1000))  # idle: on the wire at once, before the run starts
    assert link.busy and link.on_wire.size == 1000 and link.bytes == 1000 and not link.queue
    link.offer(_Item(500))

    def user(env):
        got.append(("put", (yield link.put(200))))

    env.process(user(env))  # its put joins the queue behind the 500 B
    env.run()
    assert got == [(1000, 1100), (500, 1600), ("put", 1800)]
    assert link.bytes == 1700 and link.busy_ns == 1700 and not link.busy
    assert link.process.is_alive  # idle again, waiting for the next item


def _two_items_changed_at(at_ns: int, change) -> tuple[Link, list]:
    """10,000 B then 1,000 B offered to one link at t = 0; ``change(link)`` at ``at_ns``."""
    env, got = simpy.Environment(), []
    link = _link(env, got)
    link.offer(_Item(10_000))
    link.offer(_Item(1_000))

    def later(env):
        yield env.timeout(at_ns)
        change(link)

    env.process(later(env))
    env.run()
    return link, got


def test_a_speed_up_mid_transmission_frees_the_link_earlier() -> None:
    link, got = _two_items_changed_at(4_000, lambda link: link.set_bandwidth(2 * ONE_BYTE_PER_NS_GBPS))
    # 6,000 B left at 2 B/ns: free at 7,000 (not 10,000), where the next item starts
    assert got == [(10_000, 7_100), (1_000, 7_600)]
    assert link.busy_ns == 7_500


def test_an_offer_from_a_process_starts_the_idle_link_and_keeps_that_process_active() -> None:
    env, got = simpy.Environment(), []
    link = _link(env, got)

    def sender(env):
        yield env.timeout(5)
        link.offer(_Item(1000))  # on the wire in this instant and place; the link's process
        assert link.on_wire.size == 1000 and env.active_process is me  # waits for its end
        assert link.process.target is not None and link.process.is_alive

    me = env.process(sender(env))
    env.run()
    assert got == [(1000, 1105)]


def test_down_and_up_in_one_instant_loses_no_time() -> None:
    def blip(link):
        link.take_down()
        assert link.on_wire.size == 10_000 and not link.up  # held on the wire
        link.bring_up()

    link, got = _two_items_changed_at(4_000, blip)
    assert got == [(10_000, 10_100), (1_000, 11_100)]
    assert link.busy_ns == 11_000
