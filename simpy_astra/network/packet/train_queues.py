"""Where a train stands along its hops, between re-shares: how long until one of its queues
runs out at the current rates, whether one has, and the leading hops all its bytes have
crossed, let go (:mod:`simpy_astra.network.packet` describes trains and their buffers).
"""

from __future__ import annotations

import math

from simpy_astra.network.packet.port import Port
from simpy_astra.network.packet.solver import TOLERANCE
from simpy_astra.network.packet.trains import EMPTY_BYTES, Train


def release_crossed(flow: Train) -> list[Port]:
    """A drained train lets go of its leading hops that all its bytes have crossed (the
    last hop stays until it is delivered); returns the freed links others still use."""
    busy = []
    while True:
        port = flow.ports[flow.first_hop]
        if not flow.leave_crossed_hop():
            return busy
        port.release(flow)
        if port.flows:
            busy.append(port)


def next_empty_ns(flow: Train) -> float:
    """How long until the first of the train's queues at its hops from the buffer on runs
    out at the current rates (inf: none does)."""
    shares, crossed = flow.hop_shares, flow.crossed_bytes
    b, first, left = flow.buffer_hop, flow.first_hop, flow.left_bytes
    start = b if b > first else first
    # (:meth:`Train.waiting_bytes` hop by hop: this runs after every re-share of a train
    # cut at several hops, so what arrives at each hop is carried over from the one before)
    upstream = flow.size_bytes - left if start == b else crossed[start - 1]
    inflow = flow.in_bytes_per_ns if left > 0 else 0.0
    packet_bytes = flow.packet_bytes
    soonest = math.inf
    for k in range(start, flow.reach_hops):
        here = crossed[k]
        rate = shares[k].bytes_per_ns
        queue = upstream - here - (EMPTY_BYTES if k <= first else packet_bytes)
        if queue > 0:
            net = rate - inflow
            if net > 0 and queue / net < soonest:
                soonest = queue / net
        upstream, inflow = here, rate
    return soonest


def ran_out(flow: Train) -> bool:
    """Whether a queue the train was draining at one of its hops is empty now (or all its
    bytes crossed its first hop), so that its rates must be shared again."""
    shares = flow.hop_shares
    start = max(flow.buffer_hop, flow.first_hop)
    if flow.left_bytes <= 0 and flow.crossed_bytes[start] >= flow.size_bytes - EMPTY_BYTES:
        return True
    for k in range(start, flow.reach_hops):
        if flow.waiting_bytes(k) <= EMPTY_BYTES:
            if k == start:
                inflow = flow.in_bytes_per_ns if flow.left_bytes > 0 else 0.0
            else:
                inflow = shares[k - 1].bytes_per_ns
            if shares[k].bytes_per_ns > inflow * (1 + TOLERANCE):
                return True
    return False
