"""The packet solver's shortcuts must not move a figure: a contended run (an all-to-all on a
4x4 mesh, where about 200 trains share links and most solves repeat the last one's routes)
gives the same deliveries and link statistics, to the bit, with the shortcuts taken and
with each answered the long way."""

from __future__ import annotations

import pytest
import simpy

from simpy_astra.network.packet import PacketNetwork, network, rates
from simpy_astra.network.packet.rates import Solutions
from simpy_astra.network.packet.trains import Train
from simpy_astra.topologies import Line


def all_to_all(size: int, buffer_bytes: int) -> tuple[list, list]:
    """Every delivery time and every port's statistics of an all-to-all on a 4x4 mesh."""
    env = simpy.Environment()
    net = PacketNetwork(env, [Line(4, 100.0, 100.0), Line(4, 100.0, 100.0)], switch_buffer_bytes=buffer_bytes)
    done = [net.send_background(s, d, size) for s in range(16) for d in range(16) if s != d]
    env.run()
    return [e.value for e in done], net.port_stats()


def test_the_last_solves_arrivals_are_those_a_look_up_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    # 32 KiB per pair into 8 KiB buffers: buffers fill and drain, about 1,000 solves
    size, buffer_bytes = 1 << 15, 1 << 13
    taken = []
    real = Solutions.arrivals_as_last

    def counted(self: Solutions, flows: list, routes: list) -> dict | None:
        got = real(self, flows, routes)
        taken.append(got is not None)
        return got

    monkeypatch.setattr(Solutions, "arrivals_as_last", counted)
    fast = all_to_all(size, buffer_bytes)
    assert sum(taken) > len(taken) / 2  # (the shortcut is what most solves take)
    monkeypatch.setattr(Solutions, "arrivals_as_last", lambda self, flows, routes: None)
    assert all_to_all(size, buffer_bytes) == fast


def test_a_trains_kept_units_are_those_made_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    # a train keeps its last two sets of units (credits hold it and let go round after round)
    # and a drained one's too: the same figures as every train's units made at every solve
    # (a new epoch each solve: no kept units match)
    size, buffer_bytes = 1 << 15, 1 << 13
    made = []
    real_units = rates.units_of

    def counted(flow: Train, *args: object) -> tuple:
        made.append(flow.buffer_hop or flow.first_hop or flow.credit_held or flow.left_bytes <= 0)
        return real_units(flow, *args)

    monkeypatch.setattr(rates, "units_of", counted)
    fast = all_to_all(size, buffer_bytes)
    kept = made.count(True)
    made.clear()
    real_rates = network.train_rates

    def each_anew(flows: object, seeds: list, solutions: Solutions, fresh: object = None) -> None:
        solutions.epoch += 1
        real_rates(flows, seeds, solutions, fresh)

    monkeypatch.setattr(network, "train_rates", each_anew)
    assert all_to_all(size, buffer_bytes) == fast
    assert kept < made.count(True) / 2  # (the kept units are what most solves take)
