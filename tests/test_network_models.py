"""Replaceable link and switch models (``simpy_astra/network/models``) against closed forms.

A link model serialises an item for ``trunc(S/B')`` and delivers it ``trunc(lat + S/B')``
after it started, as the built-in link; only the order it serves its queue in (strict
priority) or what it marks (ECN) differs. Expected values are derived here.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import simpy

from simpy_astra.errors import InputError
from simpy_astra.network.congestion_aware import CongestionAwareNetwork
from simpy_astra.network.models import EcnLink, ProcessLink, StrictPriorityLink
from simpy_astra.topologies import FullyConnected
from tests.sim_helpers import net, run_sim
from tests.test_congestion_aware import BW, LAT, SIZE, hop, recv, send, ser


def _background(model: type, sends: list[tuple[int, int]]) -> list[int]:
    """(start ns, priority) background messages of SIZE from NPU 0 to 1 over one link;
    their arrival times, in the order given."""
    env = simpy.Environment()
    network = CongestionAwareNetwork(env, [FullyConnected(2, BW, LAT)], link_model=model)
    out: list[int] = [0] * len(sends)

    def one(k: int, start_ns: int, priority: int):
        yield env.timeout(start_ns)
        out[k] = yield network.send_background(0, 1, SIZE, priority=priority)

    for k, (start_ns, priority) in enumerate(sends):
        env.process(one(k, start_ns, priority))
    env.run()
    if model is not None:  # a model's link is a SimPy process
        assert isinstance(network.graph.edges[0, 1]["link"].process, simpy.Process)
    return out


@pytest.mark.parametrize("low_load", [1, 5])
def test_strict_priority_high_class_waits_only_for_the_item_on_the_wire(low_load: int) -> None:
    d, s = hop(LAT, SIZE, BW), ser(SIZE, BW)
    # low_load low-class messages at t=0, then one high-class message at t=1
    sends = [(0, 1)] * low_load + [(1, 0)]
    got = _background(StrictPriorityLink, sends)
    assert got[-1] == s + d  # after the first low message's serialisation, whatever the load
    assert got[:-1] == [d] + [(k + 1) * s + d for k in range(1, low_load)]
    fifo = _background(ProcessLink, sends)
    assert fifo[-1] == low_load * s + d  # FIFO: behind the whole low-class load


def test_process_fifo_link_times_as_the_built_in_link() -> None:
    sends = [(0, 0), (0, 0), (5, 0)]
    d, s = hop(LAT, SIZE, BW), ser(SIZE, BW)
    assert _background(ProcessLink, sends) == _background(None, sends) == [d, s + d, 2 * s + d]


def test_ecn_marks_an_incast_from_a_scenario(tmp_path: Path) -> None:
    # NPUs 0, 1, 2 send SIZE to NPU 3 over a switch (device 4). All reach the switch at d; the
    # downlink takes the first, the second joins an empty queue (unmarked), the third a
    # queue of SIZE >= 64 KiB (marked). Timing is FIFO's: the last arrives at 2d + 2s.
    d, s = hop(LAT, SIZE, BW), ser(SIZE, BW)
    ranks = [[send(3, SIZE, tag=k)] for k in range(3)]
    ranks.append([recv(k, SIZE, tag=k, node_id=k + 1) for k in range(3)])
    network = {**net("Switch", 4, BW, LAT), "link-model": "ecn"}
    reports, sim = run_sim(tmp_path, ranks, network, backend="congestion_aware")
    assert reports[3].finished_cycles == 2 * d + 2 * s
    links = sim.network.links()
    assert all(isinstance(lk, EcnLink) for lk in links)
    assert sim.network.link(4, 3).marked == 1
    assert sum(lk.marked for lk in links) == 1
    assert sim.network.link(4, 3).bytes == 3 * SIZE and sim.network.link(4, 3).busy_ns == 3 * s


def test_a_switch_model_and_a_plugin_link_from_a_scenario(tmp_path: Path, monkeypatch) -> None:
    # a user's module, named package.module:Class: a FIFO link of its own, and our delay switch
    (tmp_path / "my_links.py").write_text(textwrap.dedent("""
        from simpy_astra.network.models import ProcessLink

        class CountingLink(ProcessLink):
            def offer(self, item):
                self.seen = getattr(self, "seen", 0) + 1
                super().offer(item)
    """))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    d = hop(LAT, SIZE, BW)
    network = {**net("Switch", 2, BW, LAT), "link-model": "my_links:CountingLink", "switch-model": "delay"}
    reports, sim = run_sim(tmp_path, [[send(1, SIZE)], [recv(0, SIZE)]], network, backend="congestion_aware")
    assert reports[1].finished_cycles == 2 * d + 100  # DelaySwitch.delay_ns
    assert sim.network.link(0, 2).seen == sim.network.link(2, 1).seen == 1
    assert isinstance(sim.network.graph.nodes[2]["device"].process, simpy.Process)


def test_unknown_models_and_other_backends_are_input_errors(tmp_path: Path) -> None:
    ranks = [[send(1, SIZE)], [recv(0, SIZE)]]
    with pytest.raises(InputError, match="link-model"):
        run_sim(tmp_path, ranks, {**net("Ring", 2), "link-model": "nope"}, backend="congestion_aware")
    with pytest.raises(InputError, match="congestion_aware backend only"):
        run_sim(tmp_path, ranks, {**net("Ring", 2), "link-model": "ecn"}, backend="packet")
