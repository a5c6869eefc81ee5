"""The packet backend against figures derived by hand (each test states its derivation).

Rules (``simpy_astra/network/packet/__init__.py``): a message of S bytes is cut into packets
of P = min(packet-size, S) bytes; a link serialises a packet in P/B and it propagates for the
link's latency; a device forwards a packet once it has received it; an output port serves its
inputs round robin, a transit input its flows as they arrive (FIFO); no link with bytes
for it and credits to send them stays idle; nothing is dropped. B is in
bytes/ns with GB = 2^30 bytes. Delivery happens at whole nanoseconds (rounded up), so exact
figures are checked to within 2 ns, shared ones to within 1%.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import simpy

import simpy_astra.network.packet as packet_docs
from simpy_astra.network import BACKENDS
from simpy_astra.network.packet import DEFAULT_PACKET_SIZE_BYTES, PacketNetwork
from simpy_astra.topologies import FullyConnected, Line, Ring, Switch
from simpy_astra.topologies.graph import GraphSpec, GraphTopology
from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.schema import ALL_GATHER, ALL_REDUCE, ALL_TO_ALL, COMM_COLL_NODE
from tests.packet_reference import Flow, simulate
from tests.sim_helpers import run_sim

P = DEFAULT_PACKET_SIZE_BYTES
S = 1 << 20  # 1 MiB: 256 packets


def bytes_per_ns(gbps: float) -> float:
    return gbps * 2**30 / 1e9


class CountingEnvironment(simpy.Environment):
    """Counts the events processed, to show what a run costs."""

    steps = 0

    def step(self) -> None:
        self.steps += 1
        super().step()


def deliver_all(net: PacketNetwork, pairs: list[tuple[int, int]], size: int = S) -> dict[tuple[int, int], float]:
    """Post every (src, dst) message at time 0 (tag 1) and run; returns delivery times."""
    done: dict[tuple[int, int], float] = {}
    env = net.env
    for src, dst in pairs:
        net.send(src, dst, 1, size, lambda pair: done.__setitem__(pair, env.now), (src, dst))
        net.recv(dst, src, 1, size, None, None)
    env.run()
    assert len(done) == len(pairs)
    return done


def fat_tree(spines: int, routing: str, gbps: float = 100.0, lat: float = 100.0) -> GraphTopology:
    """16 NPUs under 4 leaves of 4; every leaf wired to every spine; links ``gbps`` each way.
    4 spines: non-blocking (4 NPU links down, 4 up per leaf); 2 spines: 2:1 oversubscribed."""
    leaves = [f"leaf{i}" for i in range(4)]
    tops = [f"spine{i}" for i in range(spines)]
    links = [[n, leaves[n // 4]] for n in range(16)] + [[leaf, top] for leaf in leaves for top in tops]
    spec = GraphSpec.parse({"switches": leaves + tops, "links": links, "routing": routing}, 16)
    return GraphTopology(16, gbps, lat, spec)


# ------------------------------------------------------------------------------ one message
@pytest.mark.parametrize("hops", [1, 2, 5])
def test_one_message_is_pipelined_across_hops(hops: int) -> None:
    # Packet k (0-based) leaves NPU 0 at k*P/B and each hop adds P/B + latency for the packet
    # that follows it; the last packet (k = S/P - 1) reaches hop h at
    # (S/P - 1)*P/B + h*(P/B + lat) = h*lat + S/B + (h-1)*P/B.
    lat, gbps = 500.0, 50.0
    net = PacketNetwork(simpy.Environment(), [Line(8, gbps, lat)])
    t = deliver_all(net, [(0, hops)])[(0, hops)]
    b = bytes_per_ns(gbps)
    expected = hops * lat + S / b + (hops - 1) * P / b
    assert expected <= t <= expected + 2


@pytest.mark.parametrize("dims, src, dst, hops", [
    ([Ring(8, 50.0, 500.0)], 0, 6, 2),  # the shorter way round: 0 -> 7 -> 6
    ([FullyConnected(8, 50.0, 500.0)], 0, 6, 1),
    ([Switch(8, 50.0, 500.0)], 0, 6, 2),  # up to the switch, down to 6
    ([Line(4, 50.0, 500.0), Line(4, 50.0, 500.0)], 0, 15, 6),  # XY: 3 hops in x, then 3 in y
    ([Ring(4, 50.0, 500.0), Ring(4, 50.0, 500.0), Ring(4, 50.0, 500.0)], 0, 63, 3),  # one wrap per dim
])
def test_every_topology_pipelines_the_same_way(dims, src, dst, hops) -> None:
    # Same derivation as above with each topology's hop count: h*lat + S/B + (h-1)*P/B.
    t = deliver_all(PacketNetwork(simpy.Environment(), dims), [(src, dst)])[(src, dst)]
    b = bytes_per_ns(50.0)
    expected = hops * 500.0 + S / b + (hops - 1) * P / b
    assert expected <= t <= expected + 2


def test_store_and_forward_would_be_much_slower() -> None:
    # The same 5 hops store-and-forward (the congestion-aware model) cost 5*(lat + S/B); the
    # pipeline saves 4*(S - P)/B of it: check the packet figure is the pipelined one.
    lat, b = 500.0, bytes_per_ns(50.0)
    t = deliver_all(PacketNetwork(simpy.Environment(), [Line(8, 50.0, lat)]), [(0, 5)])[(0, 5)]
    assert 5 * (lat + S / b) - t == pytest.approx(4 * (S - P) / b, abs=2)


def test_message_smaller_than_a_packet_is_one_packet() -> None:
    # One 1000-byte packet over 3 ring hops: 3*(lat + 1000/B)
    size, lat, b = 1000, 100.0, bytes_per_ns(25.0)
    t = deliver_all(PacketNetwork(simpy.Environment(), [Ring(8, 25.0, lat)]), [(0, 3)], size)[(0, 3)]
    expected = 3 * (lat + size / b)
    assert expected <= t <= expected + 2


def test_an_uncontended_message_costs_the_same_events_whatever_its_size() -> None:
    # Trains, not packets: 4 KiB (1 packet) and 1 GiB (262,144 packets) over 3 hops both cost
    # the same handful of events (drain, delivery), besides each link's process starting.
    steps = []
    for size in (P, 1 << 30):
        env = CountingEnvironment()
        net = PacketNetwork(env, [Line(4, 50.0, 500.0)])
        deliver_all(net, [(0, 3)], size)
        steps.append(env.steps - len(list(net.links())))
    assert steps[0] == steps[1] <= 3


# ------------------------------------------------------------------------------ sharing
@pytest.mark.parametrize("k", [2, 3, 4])
def test_k_flows_share_one_bottleneck_fairly(k: int) -> None:
    # NPUs 0..3 -> switch a -> (one link) -> switch b -> NPUs 4..7, every link B. k flows
    # i -> 4+i start together; the a->b link carries all k, interleaving packets, so each
    # gets B/k and all finish at about k*S/B (one after the other, the first would finish at
    # S/B). With S = 8 MiB, pipeline and latencies (3*lat + 2*P/B = 452 ns) are 0.15% of
    # k*S/B = 312,500 ns at k = 2.
    lat, gbps, size = 100.0, 50.0, 8 << 20
    links = [[i, "a"] for i in range(4)] + [["a", "b"]] + [["b", 4 + i] for i in range(4)]
    topo = GraphTopology(8, gbps, lat, GraphSpec.parse({"switches": ["a", "b"], "links": links}, 8))
    net = PacketNetwork(simpy.Environment(), [topo])
    done = deliver_all(net, [(i, 4 + i) for i in range(k)], size)
    bound = k * size / bytes_per_ns(gbps)
    for t in done.values():
        assert t == pytest.approx(bound, rel=0.01)


def test_incast_through_a_switch() -> None:
    # n NPUs send S to NPU n through one switch: the downlink switch -> n is shared by n
    # inputs (one flow each), B/n each, and is busy from start to end: each finishes at
    # n*S/B + 2*lat + P/B (the last packet's second hop), within 2 ns. Meanwhile the uplinks
    # first run at B, so the switch's buffer Q (1 MiB = S) towards n fills at n*B - B:
    # full at t_f = Q/((n-1)B) = S/(5B). From then credits hold every uplink to B/n until its
    # source is drained, at t_f + (S - B*t_f)*n/B = n*S/B - (n-1)*t_f; so each uplink is held
    # back (stalled) for n*S/B - n*t_f = 4.8 S/B (events on whole ns: t_f rounded up, within 6 ns).
    n, lat, gbps = 6, 100.0, 50.0
    net = PacketNetwork(simpy.Environment(), [Switch(n + 1, gbps, lat)])
    done = deliver_all(net, [(i, n) for i in range(n)])
    b = bytes_per_ns(gbps)
    expected = n * S / b + 2 * lat + P / b
    for t in done.values():
        assert expected - 2 <= t <= expected + 2
    stats = {(s.src, s.dst): (s.bytes, s.busy_ns, s.max_queue_bytes, s.stall_ns) for s in net.link_stats()}
    switch = n + 1
    assert stats[(switch, n)][:3] == (n * S, round(n * S / b), net.switch_buffer_bytes)
    t_fill = net.switch_buffer_bytes / ((n - 1) * b)
    for i in range(n):
        assert stats[(i, switch)][3] == pytest.approx(n * S / b - n * t_fill, abs=6)
        assert stats[(i, switch)][2] == 0  # the NPU's own queue is not a switch buffer


def test_permutation_on_a_non_blocking_fat_tree_runs_at_line_rate() -> None:
    # 4 leaves x 4 NPUs, 4 spines: each leaf has 4 links up for its 4 NPUs. The shift
    # permutation i -> i+4 sends every flow across the spines; sprayed over the 4 spines each
    # leaf uplink carries 4 quarter-flows = B, so every flow runs at line rate:
    # S/B + 4 hops' pipeline (4*lat + 3*P'/B with P' = P, each sprayed part being >= P).
    lat, gbps = 100.0, 100.0
    net = PacketNetwork(simpy.Environment(), [fat_tree(4, "spray", gbps, lat)])
    done = deliver_all(net, [(i, (i + 4) % 16) for i in range(16)])
    b = bytes_per_ns(gbps)
    line_rate = S / b + 4 * lat + 3 * P / b
    for t in done.values():
        assert t == pytest.approx(line_rate, rel=0.01)
    # shortest_path puts all 4 cross-leaf flows of a leaf on spine0: 4*S/B plus the same tail
    slow = deliver_all(PacketNetwork(simpy.Environment(), [fat_tree(4, "shortest_path", gbps, lat)]),
                       [(i, (i + 4) % 16) for i in range(16)])
    assert max(slow.values()) == pytest.approx(4 * S / b + 4 * lat + 3 * P / b, rel=0.01)


@pytest.mark.parametrize("routing, cross_end, intra_end", [("spray", 25, 5), ("ecmp", 26, 4)])
def test_all_to_all_on_a_2_to_1_oversubscribed_fat_tree(routing: str, cross_end: int, intra_end: int) -> None:
    # 4 leaves x 4 NPUs, 2 spines: a leaf's 4 NPUs share 2 uplinks; all-to-all of S per pair.
    # An output port serves its inputs round robin. Spray: NPU d's downlink has 5 inputs (2
    # spines carrying 12 half-flows each towards d, 3 intra-leaf NPUs with 1 flow each): B/5
    # each, so a cross-leaf flow gets 2*(B/5)/12 = B/30 (the uplinks, B/4 per NPU input over
    # 12 half-flows = B/24 per flow, are not the bottleneck) and the intra flows B/5 each
    # (their NPU's link carries 12*B/30 + 3*B/5 = B): intra flows end at 5 S/B. Then every
    # downlink serves only the spines, and the uplinks bound the cross flows at B/24 (B/2 per
    # NPU, half its line rate): the S - 5 S/B * B/30 = 5S/6 left take 20 S/B, so the all-to-all
    # ends at 25 S/B (per-flow sharing would give 24 S/B). ECMP picks spine dst mod 2: all 12
    # cross flows towards d come in by one spine, so d's downlink has 4 inputs, B/4 each:
    # cross flows B/48, intra B/4 (end at 4 S/B); then B/24 for the 11S/12 left: 26 S/B.
    # Small buffers (2 packets, above the credit loop's 2*lat*B + P at lat = 10 ns) keep the
    # fill transients small; the intra flows' ends are staggered by the order in which the
    # 240 flows start at t = 0 and by the cross flows taking their share of the NPU links
    # while buffers fill and drain (within 2%).
    gbps = 100.0
    net = PacketNetwork(simpy.Environment(), [fat_tree(2, routing, gbps, lat=10.0)], switch_buffer_bytes=2 * P)
    done = deliver_all(net, [(s, d) for s in range(16) for d in range(16) if s != d])
    b = bytes_per_ns(gbps)
    assert max(done.values()) == pytest.approx(cross_end * S / b, rel=0.01)
    intra = [t for (s, d), t in done.items() if s // 4 == d // 4]
    assert min(intra) == pytest.approx(intra_end * S / b, rel=0.01)
    assert max(intra) == pytest.approx(intra_end * S / b, rel=0.02)
    uplinks = [s for s in net.link_stats() if str(s.src).startswith("leaf") and str(s.dst).startswith("spine")]
    assert {s.bytes for s in uplinks} == {24 * S}  # every uplink carries half of its leaf's 48 S


def test_small_buffer_caps_a_link_by_its_credit_loop() -> None:
    # A credit returns one latency after its packet left the buffer: a link into a switch with
    # a buffer of Q bytes carries at most Q / (2*lat + P/B). With Q = 2 packets, lat = 500 ns
    # at 50 GB/s that is 8192/1076.3 = 7.6 B/ns (1/7 of B): the first hop paces the message,
    # S/cap + pipeline tail (2*lat + P/B), to within 1%.
    lat, gbps = 500.0, 50.0
    net = PacketNetwork(simpy.Environment(), [Switch(2, gbps, lat)], switch_buffer_bytes=2 * P)
    t = deliver_all(net, [(0, 1)])[(0, 1)]
    b = bytes_per_ns(gbps)
    cap = 2 * P / (2 * lat + P / b)
    assert t == pytest.approx(S / cap + 2 * lat + P / b, rel=0.01)
    stall = {(s.src, s.dst): s.stall_ns for s in net.link_stats()}[(0, 2)]
    assert stall > 0.8 * t  # waiting for credits nearly all the time


def test_default_buffer_never_caps_a_fast_link() -> None:
    # 2000 GB/s with 1 us latency: the credit loop's bandwidth-delay product (4.3 MB) exceeds
    # 1 MiB, but an unset switch-buffer is taken as sized for it, so the message runs at line
    # rate: 2*lat + S/B + P/B, as the pipelined formula with h = 2.
    lat, gbps = 1000.0, 2000.0
    t = deliver_all(PacketNetwork(simpy.Environment(), [Switch(2, gbps, lat)]), [(0, 1)])[(0, 1)]
    b = bytes_per_ns(gbps)
    expected = 2 * lat + S / b + P / b
    assert expected <= t <= expected + 2


# ------------------------------------------------------------------------------ whole runs
def _collective(comm_type: int, size: int, npus: int = 16) -> list[list]:
    return [[make_node(1, "coll", COMM_COLL_NODE, attrs={"comm_type": comm_type, "comm_size": size})]
            for _ in range(npus)]


MESH = {"topology": ["Line", "Line"], "npus_count": [4, 4], "bandwidth": [100.0, 100.0], "latency": [100.0, 100.0]}
ONE_RING = {"all-reduce-implementation": ["oneRing"], "all-gather-implementation": ["oneRing"],
            "reduce-scatter-implementation": ["oneRing"]}


def test_halving_the_packet_size_barely_changes_a_mesh_ring_all_reduce(tmp_path: Path) -> None:
    # A ring all-reduce of 24 MiB on the 4x4 mesh moves 1.5 MiB messages: the packet size only
    # enters through (h-1)*P/B per message (76 ns for 2 extra hops at 4 KiB, 100 GB/s) against
    # S/B = 14.6 us, so halving it changes the run by well under 1%.
    finish = []
    for packet in (4096, 2048):
        network = dict(MESH, **{"packet-size": packet})
        reports, _ = run_sim(tmp_path, _collective(ALL_REDUCE, 24 << 20), network, ONE_RING, backend="packet")
        finish.append(max(r.finished_cycles for r in reports.values()))
    assert finish[1] < finish[0]  # smaller packets pipeline a little better
    assert (finish[0] - finish[1]) / finish[0] < 0.01


def test_ring_all_reduce_on_a_mesh_is_close_to_the_analytical_figure(tmp_path: Path) -> None:
    # No link carries two flows of a ring all-reduce on the mesh, so pipelined packets finish
    # within 1% of the analytical backend, far below the store-and-forward figure.
    finish = {}
    for backend in ("congestion_unaware", "congestion_aware", "packet"):
        reports, _ = run_sim(tmp_path, _collective(ALL_REDUCE, 24 << 20), MESH, ONE_RING, backend=backend)
        finish[backend] = max(r.finished_cycles for r in reports.values())
    assert finish["packet"] == pytest.approx(finish["congestion_unaware"], rel=0.01)
    assert finish["congestion_aware"] > 1.1 * finish["packet"]


def test_scenario_yaml_selects_the_packet_backend_and_json_has_queue_and_stall(tmp_path: Path) -> None:
    from simpy_astra.cli.main import main

    reports, _ = run_sim(tmp_path, _collective(ALL_TO_ALL, 1 << 20), MESH, backend="packet", run=False)
    scenario = tmp_path / "s.yaml"
    network = dict(MESH, **{"packet-size": 2048, "switch-buffer": 65536})
    scenario.write_text(json.dumps({"workload": str(tmp_path / "wl" / "w"), "system": str(tmp_path / "sys.json"),
                                    "network": network, "backend": "packet"}))
    out = tmp_path / "out.json"
    assert main(["run", str(scenario), "--quiet", "--json-out", str(out)]) == 0
    links = json.loads(out.read_text())["links"]
    assert {"from", "to", "bytes", "busy_ns", "max_queue_bytes", "stall_ns"} <= set(links[0])
    assert max(row["max_queue_bytes"] for row in links) <= 65536
    assert "packet" in BACKENDS


@pytest.mark.parametrize("key, value", [("packet-size", 0), ("switch-buffer", "big")])
def test_bad_packet_settings_are_input_errors(tmp_path: Path, key: str, value) -> None:
    from simpy_astra.config import load_network_yaml
    from simpy_astra.errors import InputError

    path = tmp_path / "net.yml"
    path.write_text(json.dumps(dict(MESH, **{key: value})))
    with pytest.raises(InputError, match=key):
        load_network_yaml(path)


# ------------------------------------------------------------------------------ co-simulation
def _one_link(gbps: float = 50.0, lat: float = 500.0) -> PacketNetwork:
    return PacketNetwork(simpy.Environment(), [Line(2, gbps, lat)])


def test_put_on_a_link_shares_it_with_a_message() -> None:
    # A background put of S on link 0->1 alone: lat + S/B. Together with a message of S on the
    # same link from t = 0, both interleave at B/2 and arrive at lat + 2S/B.
    b, lat = bytes_per_ns(50.0), 500.0
    net = _one_link()
    alone = []
    net.env.process(_put_and_note(net, S, alone))
    net.env.run()
    assert lat + S / b <= alone[0] <= lat + S / b + 2
    net = _one_link()
    shared: list = []
    net.env.process(_put_and_note(net, S, shared))
    t = deliver_all(net, [(0, 1)])[(0, 1)]
    for got in (t, shared[0]):
        assert lat + 2 * S / b <= got <= lat + 2 * S / b + 2


def _put_and_note(net: PacketNetwork, size: int, out: list):
    out.append((yield net.link(0, 1).put(size)))


def test_halving_the_bandwidth_mid_message_re_times_its_remaining_bytes() -> None:
    # At t1 = 5,000 ns, B*t1 bytes have left; the rest goes at B/2:
    # t1 + 2*(S - B*t1)/B + lat.
    b, lat, t1 = bytes_per_ns(50.0), 500.0, 5_000
    net = _one_link()

    def slow_down(env):
        yield env.timeout(t1)
        net.link(0, 1).set_bandwidth(25.0)

    net.env.process(slow_down(net.env))
    t = deliver_all(net, [(0, 1)])[(0, 1)]
    expected = t1 + 2 * (S - b * t1) / b + lat
    assert expected <= t <= expected + 2


def test_a_solution_kept_for_a_set_of_trains_is_not_reused_at_a_new_speed() -> None:
    # Line 0-1-2, flows 0 -> 2 and 1 -> 2 of S = 128 KiB share link 1->2 from its two inputs, as in
    # test_a_longer_flow_takes_a_ports_share_once_its_head_is_there: 0 -> 2 arrives at
    # t_j + (2S - 1.5*B*t_j)/B + 2*lat + P/B. The same two flows again at T, after link 1->2
    # went to B/2 (every rate on it halves, the head's way t_j does not): T + t_j +
    # (2S - 0.75*B*t_j)/(B/2) + 2*lat + P/B (1/B + 2/B over the hops, less the slowest's
    # 2/B). A sharing kept from the first round would give the first round's time again.
    b, lat, t_again, size = bytes_per_ns(50.0), 100.0, 1_000_000, 128 << 10
    net = PacketNetwork(simpy.Environment(), [Line(3, 50.0, lat)])
    env, got = net.env, {}

    def round_of_two(at_ns: int, name: str):
        yield env.timeout(at_ns)
        first = net.send_background(0, 2, size)
        net.send_background(1, 2, size)
        got[name] = (yield first)

    def slow_down():
        yield env.timeout(t_again - 1)
        net.link(1, 2).set_bandwidth(25.0)

    env.process(round_of_two(0, "before"))
    env.process(slow_down())
    env.process(round_of_two(t_again, "after"))
    env.run()
    t_j = math.ceil(lat + P / b)
    before = t_j + (2 * size - 1.5 * b * t_j) / b + 2 * lat + P / b
    after = t_again + t_j + (2 * size - 0.75 * b * t_j) / (b / 2) + 2 * lat + P / b
    assert before <= got["before"] <= before + 2
    assert after <= got["after"] <= after + 2


def test_a_longer_flow_takes_a_ports_share_once_its_head_is_there() -> None:
    # Line 0-1-2: A = 0 -> 2 (two hops) and Y = 1 -> 2 (one hop), S = 128 KiB each (A's
    # head's way, lat + P/B, is 6.7% of S/B: above START_UP_SHARE), start together and meet at
    # the port 1->2 (two inputs: link 0->1 and NPU 1's own). A's head reaches it only
    # o_1 = lat + P/B after the start (an event at t_j = o_1 rounded up to a whole ns): until
    # then Y has the link alone, at B, and A runs at B on link 0->1. From t_j each input gets
    # B/2. A is limited there, so what it sent faster waits in that port's buffer, all but
    # what the hop passes on at B/2 in A's time so far (B/2 * t_j: the bytes in flight in its
    # head's time, which its delivery charges as 2*lat + P/B). So:
    #   Y: S - B*t_j left at B/2, done at t_j + 2(S - B*t_j)/B, one latency later there;
    #   A: the link is busy from 0, carrying Y's S and A's S - B*t_j/2 at B: its last byte
    #      leaves at t_j + (2S - 1.5*B*t_j)/B (alone at B after Y is done), and arrives
    #      2*lat + P/B later.
    # (Before, A held link 1->2 from t = 0: both at B/2 from the start, Y done one latency
    # after 2S/B and A at 2S/B + 2*lat + P/B.)
    b, lat, size = bytes_per_ns(50.0), 100.0, 128 << 10
    net = PacketNetwork(simpy.Environment(), [Line(3, 50.0, lat)])
    long, short = net.send_background(0, 2, size), net.send_background(1, 2, size)
    net.env.run()
    t_j = math.ceil(lat + P / b)
    y = t_j + 2 * (size - b * t_j) / b + lat
    a = t_j + (2 * size - 1.5 * b * t_j) / b + 2 * lat + P / b
    assert y <= short.value <= y + 2
    assert a <= long.value <= a + 2
    # the port 1->2 is busy from start to end: its busy time is the bytes it carried at B
    assert net.link(1, 2).busy_ns == pytest.approx(2 * size / b, abs=2)


def _outage(net: PacketNetwork, link, start_ns: int, length_ns: int) -> None:
    """A co-simulation process that takes ``link`` down at ``start_ns`` for ``length_ns``."""

    def outage(env):
        yield env.timeout(start_ns)
        link.take_down()
        yield env.timeout(length_ns)
        link.bring_up()

    net.env.process(outage(net.env))


def test_an_outage_delays_a_message_by_its_length() -> None:
    # Down from 2,000 to 12,000 ns: nothing moves for 10 us, so S/B + lat + 10,000; the link
    # was busy S/B in all (busy time counts serialising only).
    b, lat = bytes_per_ns(50.0), 500.0
    net = _one_link()
    link = net.link(0, 1)
    _outage(net, link, 2_000, 10_000)
    t = deliver_all(net, [(0, 1)])[(0, 1)]
    expected = S / b + lat + 10_000
    assert expected <= t <= expected + 2
    assert abs(link.busy_ns - S / b) <= 2


# ------------------------------------------------------------------------------ buffers, inputs, processes


def test_a_buffer_fills_at_in_minus_out_then_credits_hold_the_uplinks() -> None:
    # Flows 0 -> 2 and 1 -> 2 meet at the switch's port towards 2 (two inputs, B/2 each).
    # Each uplink is alone, so until the buffer Q = S/4 is full each runs at B: the buffer
    # fills at 2B - B = B, full at t_f = Q/B. From then credits hold each uplink to B/2: the
    # S - B*t_f left at each source drain at t_f + 2(S - B*t_f)/B = 2S/B - t_f, which frees
    # the uplinks; each keeps Q/2 in the buffer, drained at B/2 in Q/B: the last bytes leave
    # at 2S/B (the port was busy all along) and arrive 2*lat + P/B later. Uplinks are held
    # back by credits from t_f to 2S/B - t_f: 2S/B - 2Q/B = 1.5 S/B.
    b, lat, q = bytes_per_ns(50.0), 100.0, S // 4
    net = PacketNetwork(simpy.Environment(), [Switch(3, 50.0, lat)], switch_buffer_bytes=q)
    env = net.env
    up, down = net.link(0, 3), net.link(3, 2)
    t_f = q / b
    samples = {}

    def probe():
        yield env.timeout(round(t_f / 2))
        samples["filling"] = down.queued_bytes
        yield env.timeout(round(2 * S / b - t_f / 2) - env.now)
        samples["draining"] = (down.queued_bytes, up.busy, down.busy)

    env.process(probe())
    done = deliver_all(net, [(0, 2), (1, 2)])
    assert samples["filling"] == pytest.approx(b * round(t_f / 2), rel=1e-3)  # (2B - B) * t
    queued, up_busy, down_busy = samples["draining"]
    assert queued == pytest.approx(q - b * (t_f / 2), rel=0.01)  # draining at B from Q
    assert not up_busy and down_busy
    expected = 2 * S / b + 2 * lat + P / b
    for t in done.values():
        assert expected <= t <= expected + 2
    stats = {(s.src, s.dst): (s.bytes, s.busy_ns, s.max_queue_bytes, s.stall_ns) for s in net.link_stats()}
    assert stats[(3, 2)][::2] == (2 * S, q) and stats[(3, 2)][3] == 0
    assert stats[(3, 2)][1] == pytest.approx(2 * S / b, abs=2)
    for src in (0, 1):
        assert stats[(src, 3)][1] == pytest.approx(S / b, abs=2)  # busy: S bytes at B
        assert stats[(src, 3)][3] == pytest.approx(2 * S / b - 2 * t_f, abs=3)


def test_unequal_flows_behind_a_full_buffer_follow_the_derivation() -> None:
    # Flows 0 -> 2 (S) and 1 -> 2 (2S) meet at the switch's port towards 2, buffer Q = S/4.
    # Until it is full (t_f = Q/B, filling at 2B - B) each uplink runs at B; then credits hold
    # each to its input's B/2. Flow 0's source drains at 2S/B - t_f, its Q/2 then leaves at
    # B/2 by 2S/B. Flow 1 is held to B/2 until then (its backlog Q/2 neither grows nor
    # drains), then runs alone at B: S + Q/2 had left its source, the other S - Q/2 follow at
    # B, and its Q/2 leaves last, at 3S/B (the port was busy all along). Uplink 0 is held back
    # from t_f to 2S/B - t_f, uplink 1 from t_f to 2S/B; the port's queue peaks at Q.
    b, lat, q = bytes_per_ns(50.0), 100.0, S // 4
    net = PacketNetwork(simpy.Environment(), [Switch(3, 50.0, lat)], switch_buffer_bytes=q)
    env, done = net.env, {}
    for src, size in ((0, S), (1, 2 * S)):
        net.send(src, 2, 1, size, lambda key: done.__setitem__(key, env.now), src)
        net.recv(2, src, 1, size, None, None)
    env.run()
    tail, t_f = 2 * lat + P / b, q / b
    assert 2 * S / b + tail <= done[0] <= 2 * S / b + tail + 2
    assert 3 * S / b + tail <= done[1] <= 3 * S / b + tail + 2
    stats = {(s.src, s.dst): s for s in net.link_stats()}
    assert stats[(0, 3)].stall_ns == pytest.approx(2 * S / b - 2 * t_f, abs=3)
    assert stats[(1, 3)].stall_ns == pytest.approx(2 * S / b - t_f, abs=3)
    assert stats[(3, 2)].max_queue_bytes == q and stats[(3, 2)].stall_ns == 0


@pytest.mark.parametrize("buffer_bytes, max_queue", [(S // 4, S // 4), (4 * S, S)])
def test_the_largest_queue_is_the_buffer_when_the_bottleneck_outlasts_the_fill(buffer_bytes: int,
                                                                                max_queue: int) -> None:
    # As above, the port towards 2 fills at B. With Q = S/4 it is full at Q/B, long before
    # the sources could drain (S/B): the largest queue is Q. With Q = 4S it never fills: both
    # sources drain at B by S/B, leaving (2B - B) * S/B = S queued, the largest queue. Either
    # way the port is busy from start to end: delivery at 2S/B + 2*lat + P/B.
    b, lat = bytes_per_ns(50.0), 100.0
    net = PacketNetwork(simpy.Environment(), [Switch(3, 50.0, lat)], switch_buffer_bytes=buffer_bytes)
    done = deliver_all(net, [(0, 2), (1, 2)])
    assert net.link(3, 2).max_queue_bytes == pytest.approx(max_queue, abs=64)
    expected = 2 * S / b + 2 * lat + P / b
    for t in done.values():
        assert expected <= t <= expected + 2


def test_an_output_port_serves_its_inputs_round_robin_not_its_flows() -> None:
    # Two messages 0 -> 3 (input: link 0 -> switch) and one 1 -> 3 (input: link 1 -> switch)
    # share the port towards 3. Round robin over inputs gives each input B/2: the 1 -> 3 flow
    # B/2, the two 0 -> 3 flows B/4 each (per-flow sharing would give all three B/3 and end
    # them together at 3S/B). So 1 -> 3 ends at 2S/B; then the two 0 -> 3 flows, having sent
    # 2 * B/4 * 2S/B = S of their 2S, get B/2 each: S more bytes at B, ending at 3S/B. The port
    # is busy all along, whatever the buffer does; arrivals 2*lat + P/B later.
    b, lat = bytes_per_ns(50.0), 100.0
    net = PacketNetwork(simpy.Environment(), [Switch(4, 50.0, lat)], switch_buffer_bytes=S // 4)
    env, done = net.env, {}
    for src, tag in ((0, 1), (0, 2), (1, 1)):
        net.send(src, 3, tag, S, lambda key: done.__setitem__(key, env.now), (src, tag))
        net.recv(3, src, tag, S, None, None)
    env.run()
    tail = 2 * lat + P / b
    assert 2 * S / b + tail <= done[(1, 1)] <= 2 * S / b + tail + 2
    for tag in (1, 2):
        assert 3 * S / b + tail <= done[(0, tag)] <= 3 * S / b + tail + 2


def test_links_are_simpy_resources_and_switches_are_processes() -> None:
    # Every directed link is a SimPy BaseResource (the congestion-aware Link's base class
    # too); the switch is a live SimPy process, woken by the network when trains start or
    # end on its ports and by its own buffer timers.
    from simpy.resources.base import BaseResource

    from simpy_astra.network.link import Link, LinkResource

    net = PacketNetwork(simpy.Environment(), [Switch(3, 50.0, 100.0)], switch_buffer_bytes=S // 4)
    assert all(isinstance(link, BaseResource) and isinstance(link, LinkResource) for link in net.links())
    assert issubclass(Link, LinkResource)
    switch = net.switches[3]
    assert isinstance(switch.process, simpy.Process) and switch.process.is_alive
    deliver_all(net, [(0, 2), (1, 2)])
    assert switch.wakes >= 3  # trains started, the buffer filled, the sources drained, ...
    assert net.link(3, 2).max_queue_bytes == S // 4


def test_contention_costs_events_not_bytes() -> None:
    # Two flows into one port: a handful of events (start, fill, drains, empty, deliveries,
    # the switch's wakes), the same for 1 MiB and 256 MiB per flow (a buffer of S/4 fills in
    # both cases before the sources drain).
    steps = []
    for size in (S, 256 * S):
        env = CountingEnvironment()
        deliver_all(PacketNetwork(env, [Switch(3, 50.0, 100.0)], switch_buffer_bytes=S // 4), [(0, 2), (1, 2)], size)
        steps.append(env.steps)
    assert steps[0] == steps[1] < 40


def test_a_downlink_outage_fills_the_buffer_then_holds_the_uplink() -> None:
    # One message 0 -> 1 through a 2-NPU switch; the switch's link to 1 is down from 2,000 to
    # 12,000 ns. The uplink keeps sending at B into the switch's buffer (Q = 64 KiB) until it
    # is full, Q/B after the outage began, then credits hold it until the link is back: held
    # back 10,000 - Q/B. Then both run at B (the buffered Q stays ahead of the rest): the
    # downlink, the bottleneck, idled exactly 10 us, so delivery is the lone message's
    # 2*lat + S/B + P/B plus 10,000.
    b, lat, q = bytes_per_ns(50.0), 100.0, 64 << 10
    net = PacketNetwork(simpy.Environment(), [Switch(2, 50.0, lat)], switch_buffer_bytes=q)
    down = net.link(2, 1)
    _outage(net, down, 2_000, 10_000)
    t = deliver_all(net, [(0, 1)])[(0, 1)]
    expected = 2 * lat + S / b + P / b + 10_000
    assert expected <= t <= expected + 2
    assert down.max_queue_bytes == q
    assert net.link(0, 2).stall_ns == pytest.approx(10_000 - q / b, abs=2)


# ------------------------------------------------------------------------------ work conservation
def recursive_doubling_all_gather(ctx):
    """All-gather by recursive doubling along the ring: at distance d = 1, 2, 4, ... each NPU
    sends the d chunks it holds to the NPU d positions clockwise (and receives as many from d
    positions back), then takes the endpoint delay."""
    n, i, members = len(ctx.members), ctx.index, ctx.members
    chunk = ctx.size_bytes // n
    d = 1
    while d < n:
        ctx.send(members[(i + d) % n], d * chunk)
        yield ctx.recv(members[(i - d) % n], d * chunk)
        yield ctx.endpoint()
        d *= 2


RD_LAT, RD_GBPS, RD_CHUNK = 700.0, 50.0, 1 << 20


def recursive_doubling_closed_form_ns(n: int = 8, endpoint_ns: float = 10.0) -> float:
    """At distance d every NPU sends d chunks d hops clockwise, so every clockwise link carries
    d flows of d hops: each gets B/d (max-min; per-input FIFO agrees, every flow arriving at
    a transit input being cut alike), and a step takes d*L + d*(d*C)/B + (d-1)*P/B (the
    packet backend's pipelined message at B/d), plus the endpoint delay. For 8 NPUs:
    7L + 21C/B + 4P/B + 3E = 415,391 ns at 50 GB/s, 700 ns, 1 MiB chunks, 4 KiB packets."""
    b = bytes_per_ns(RD_GBPS)
    total, d = 0.0, 1
    while d < n:
        total += d * RD_LAT + d * (d * RD_CHUNK) / b + (d - 1) * P / b + endpoint_ns
        d *= 2
    return total


@pytest.mark.parametrize("buffer_bytes", [65536, 262144, 1 << 20])
def test_recursive_doubling_on_a_ring_keeps_every_link_busy(tmp_path: Path, buffer_bytes: int) -> None:
    # A link whose trains are held by credits while it has spare capacity (an input's part
    # that the flows it was kept for cannot use) made this 525,101 ns (26% over) at the
    # default buffer and up to 587 us at 32 KiB: every flow is a transit flow at three of
    # its four ports, and each port's transit part froze them all at B/6, 2/3 of each link.
    want = recursive_doubling_closed_form_ns()
    assert round(want) == 415391
    network = {"topology": ["Ring"], "npus_count": [8], "bandwidth": [RD_GBPS], "latency": [RD_LAT],
               "switch-buffer": buffer_bytes}
    system = {k: [f"{__name__}:recursive_doubling_all_gather"] for k in ("all-gather-implementation",)}
    reports, sim = run_sim(tmp_path, _collective(ALL_GATHER, 8 * RD_CHUNK, npus=8), network, system,
                           backend="packet")
    assert max(r.finished_cycles for r in reports.values()) == pytest.approx(want, rel=0.02)
    clockwise = [s for s in sim.network.link_stats() if s.dst == (s.src + 1) % 8]
    assert all(s.stall_ns == 0 for s in clockwise)


def _makespan(dims, pairs: list[tuple[int, int]], size: int, buffer_bytes: int) -> float:
    env = simpy.Environment()
    net = PacketNetwork(env, dims, switch_buffer_bytes=buffer_bytes)
    done = [net.send_background(s, d, size) for s, d in pairs]
    env.run()
    return max(e.value for e in done)


@pytest.mark.parametrize("buffer_bytes", [65536, 1 << 20])
def test_a_uniform_shift_on_a_ring_meets_its_max_min_closed_form(buffer_bytes: int) -> None:
    # 16 NPUs, each sends S to the NPU 5 positions clockwise: every clockwise link carries 5
    # flows of 5 hops, max-min B/5 each, so all end at 5L + 5S/B + 4P/B (pipelined at B/5).
    lat, gbps = 100.0, 50.0
    b = bytes_per_ns(gbps)
    got = _makespan([Ring(16, gbps, lat)], [(k, (k + 5) % 16) for k in range(16)], S, buffer_bytes)
    assert got == pytest.approx(5 * lat + 5 * S / b + 4 * P / b, rel=0.02)


def test_an_all_to_all_on_a_torus_meets_its_max_min_closed_form() -> None:
    # 4x4 torus (two Ring(4) dimensions, X then Y), S per ordered pair. In a ring of 4, a
    # flow goes 1 hop clockwise (dx = 1), 2 clockwise (dx = 2: ties go clockwise) or 1
    # anticlockwise (dx = 3), and each (source, dx) has 4 flows (one per destination row).
    # A clockwise X link x -> x+1 carries dx = 1 and 2 from x and dx = 2 from x-1: 12 flows;
    # the same for every clockwise Y link; anticlockwise links carry 4. Max-min: every flow
    # that crosses a clockwise link gets B/12 there, and a clockwise link's 12 S end together
    # at 12 S/B; the longest of them (2 + 2 hops) adds its head's way 4L + 3P/B. (The buffer
    # is finite: 1 MiB, below the 12 S a link carries. With smaller buffers the run ends
    # later, at the packet level too: the next test.)
    lat, gbps = 100.0, 50.0
    b = bytes_per_ns(gbps)
    pairs = [(s, d) for s in range(16) for d in range(16) if s != d]
    got = _makespan([Ring(4, gbps, lat), Ring(4, gbps, lat)], pairs, S, 1 << 20)
    assert got == pytest.approx(12 * S / b + 4 * lat + 3 * P / b, rel=0.02)


#: what simpy_astra/network/packet/__init__.py says the per-packet simulator ends the torus
#: all-to-all after its max-min bound, by buffer (it said 9.6% and 4.4%: figures of a reference
#: that woke ports in memory-address order, 7.5% to 13% and 4.6% to 4.8% from run to run)
PER_PACKET_PAST_BOUND = {65536: "8.7%", 262144: "4.6%", 1 << 20: "3.8%"}


@pytest.mark.parametrize("buffer_bytes", [65536, 262144, 1 << 20])
def test_a_torus_all_to_all_with_finite_buffers_lies_between_max_min_and_per_packet(buffer_bytes: int) -> None:
    # The all-to-all above, against the per-packet simulator with the same buffers and
    # credits (tests/packet_reference.py). Per input round robin is not per-flow max-min
    # here: a clockwise Y link's four inputs carry 2, 4, 2 and 4 flows, so its round robin
    # cuts the flows that come in on the busy X input below the B/12 they arrive at. With
    # unbounded buffers their backlog keeps the Y link busy later and the run meets the
    # max-min bound (the per-packet simulator exactly); a finite buffer holds that backlog
    # back by credits instead, and links go short of work at the end: per packet the run
    # ends 3.8%, 4.6% and 8.7% after the bound at 1 MiB, 256 KiB and 64 KiB. So the bound
    # is a floor here, not a target, and the trains must not end later than the packets.
    lat, gbps = 100.0, 50.0
    b = bytes_per_ns(gbps)
    dims = [Ring(4, gbps, lat), Ring(4, gbps, lat)]
    pairs = [(s, d) for s in range(16) for d in range(16) if s != d]
    bound = 12 * S / b + 4 * lat + 3 * P / b
    per_packet = max(simulate([Ring(4, gbps, lat), Ring(4, gbps, lat)], [Flow(s, d, S) for s, d in pairs],
                              buffer_bytes=buffer_bytes))
    assert per_packet > 1.02 * bound  # (what finite buffers cost this pattern, packet by packet)
    assert f"{per_packet / bound - 1:.1%}" == PER_PACKET_PAST_BOUND[buffer_bytes]
    a, b, c = PER_PACKET_PAST_BOUND.values()
    assert f"ends it {a}, {b} and {c} after it" in " ".join(packet_docs.__doc__.split())
    got = _makespan(dims, pairs, S, buffer_bytes)
    assert bound * (1 - 0.005) <= got <= per_packet * 1.02
