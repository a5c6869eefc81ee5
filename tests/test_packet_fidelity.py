"""The packet backend's trains against a per-packet simulator (``tests/packet_reference.py``):
output ports serving their inputs round robin, each transit input FIFO, 4 KiB packets,
100 ns links, unbounded buffers (the backend gets buffers too large to fill). Each flow's
delivery time must be within 5% of the per-packet one.
"""

from __future__ import annotations

import pytest
import simpy

from simpy_astra.network.packet import PacketNetwork
from simpy_astra.topologies import Line, Ring, Switch
from tests.packet_reference import Flow, simulate

BW, LAT = 50.0, 100.0
S = 256 * 1024
BIG_BUFFER = 1 << 40


def backend_times(dims, flows: list[Flow]) -> list[float]:
    env = simpy.Environment()
    net = PacketNetwork(env, dims, packet_size_bytes=4096, switch_buffer_bytes=BIG_BUFFER)
    out: list[float] = [0.0] * len(flows)

    def one(k: int, flow: Flow):
        yield env.timeout(flow.start_ns)
        out[k] = yield net.send_background(flow.src, flow.dst, flow.size_bytes)

    for k, flow in enumerate(flows):
        env.process(one(k, flow))
    env.run()
    return out


def _ring_all_pairs(n: int) -> list[Flow]:
    return [Flow(s, d, S) for s in range(n) for d in range(n) if s != d]


SCENARIOS = {
    "incast": (lambda: [Switch(5, BW, LAT)], lambda: [Flow(k, 0, S) for k in range(1, 5)]),
    "unequal_incast": (lambda: [Switch(4, BW, LAT)], lambda: [Flow(1, 0, S), Flow(2, 0, 2 * S), Flow(3, 0, 4 * S)]),
    "parking_lot": (lambda: [Line(4, BW, LAT)], lambda: [Flow(0, 3, S), Flow(1, 3, S), Flow(2, 3, S)]),
    "all_to_all_switch": (lambda: [Switch(4, BW, LAT)],
                          lambda: [Flow(s, d, S) for s in range(4) for d in range(4) if s != d]),
    # flows of 4, 2 and 1 hops (clockwise) that all end on the link 3 -> 4
    "ring_mixed_hops": (lambda: [Ring(8, BW, LAT)], lambda: [Flow(0, 4, S), Flow(2, 4, S), Flow(3, 4, S)]),
    "ring_all_pairs": (lambda: [Ring(8, BW, LAT)], lambda: _ring_all_pairs(8)),
    "late_join": (lambda: [Switch(3, BW, LAT)], lambda: [Flow(1, 0, 2 * S), Flow(2, 0, S, start_ns=3000.0)]),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_each_flow_within_5_percent_of_the_per_packet_simulator(name: str) -> None:
    dims, flows = SCENARIOS[name]
    want = simulate(dims(), flows())
    got = backend_times(dims(), flows())
    worst = max(abs(g - w) / w for g, w in zip(got, want, strict=True))
    assert worst <= 0.05, f"{name}: worst flow off by {worst:.1%} (backend {got}, per packet {want})"
