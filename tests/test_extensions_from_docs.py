"""Extensions written from the docs alone (issue 52): a link model, a switch model, a
collective and a topology, as a newcomer writes them after reading
``simpy_astra/network/README.md``, ``collectives/README.md``, ``docs/collectives.md`` and
``docs/cosimulation.md`` -- nothing else of the code. Each is checked against a figure derived
by hand from the closed forms those pages state.

The fabric: two NPUs on one switch ``"sw"`` (a networkx star, the topology extension), links
of exactly 1 byte/ns (GB = 2^30 B) and ``LAT`` ns. On the congestion-aware backend one hop of
S bytes starting at t reaches the far end at ``t + LAT + S`` (network/README.md: ``t +
trunc(latency + S / B)``); the closed-form backend charges a route ``trunc(summed latency +
S / slowest bandwidth)`` = ``2 LAT + S``.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

LAT = 100
S = 1_000
GAP = 50  # the link model's hold before each item (ns)
DELAY = 30  # the switch model's pipeline delay (ns)
E = 10  # the system's endpoint delay

#: the user's module, written from the docs: a topology builder, a link model, a switch model,
#: a collective algorithm
USER_CODE = textwrap.dedent(f'''
    import networkx as nx

    from simpy_astra.network.link import LinkElement
    from simpy_astra.network.switch import SwitchElement

    ONE_BYTE_PER_NS = 1e9 / 2**30  # GB/s, GB = 2^30 B


    def star():
        """docs/collectives.md: NPUs 0..N-1, switches any other name, both directions."""
        g = nx.DiGraph()
        for npu in (0, 1):
            g.add_edge(npu, "sw", bandwidth_gbps=ONE_BYTE_PER_NS, latency_ns={LAT})
            g.add_edge("sw", npu, bandwidth_gbps=ONE_BYTE_PER_NS, latency_ns={LAT})
        return g


    class PacedLink(LinkElement):
        """network/README.md, "The link contract": wait gap_ns before each item starts."""

        def __init__(self, env, src, dst, bandwidth_gbps, latency_ns, on_arrival, gap_ns: int = 0):
            if gap_ns < 0:
                raise ValueError(f"gap_ns must be >= 0 (got {{gap_ns}})")
            super().__init__(env, src, dst, bandwidth_gbps, latency_ns, on_arrival)
            self.gap_ns = gap_ns

        def hold_ns(self, item):
            return self.gap_ns


    class SlowSwitch(SwitchElement):
        """network/README.md, "The switch contract": an item leaves delay_ns after it came."""

        def __init__(self, env, device, forward, delay_ns: int = 0):
            self.delay_ns = delay_ns
            super().__init__(env, device, forward)

        def release_ns(self, item, arrived_ns):
            return arrived_ns + self.delay_ns


    def swap(ctx):
        """collectives/README.md: an all-reduce on 2 NPUs without reduction cost: 2(n-1)
        steps of send S/n right, receive from the left, endpoint delay."""
        n, i = len(ctx.members), ctx.index
        right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
        msg = ctx.size_bytes // n
        for _ in range(2 * (n - 1)):
            ctx.send(right, msg)
            yield ctx.recv(left, msg)
            yield ctx.endpoint()
''')

SYSTEM = ("{scheduling-policy: LIFO, collective-optimization: baseline, endpoint-delay: " f"{E}, "
          "active-chunks-per-dimension: 1, preferred-dataset-splits: 1, all-reduce-implementation: [ring], "
          "all-gather-implementation: [ring], reduce-scatter-implementation: [ring], "
          "all-to-all-implementation: [direct]}")


@pytest.fixture
def user(tmp_path: Path, monkeypatch) -> Path:
    sys.modules.pop("my_ext", None)
    (tmp_path / "my_ext.py").write_text(USER_CODE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _scenario(folder: Path, workload: str, network_extra: str = "", backend: str = "congestion_aware",
              system: str = SYSTEM) -> str:
    path = folder / "s.yaml"
    path.write_text(f"workload: {workload}\nsystem: {system}\n"
                    f"network: {{topology: {{networkx: 'my_ext:star'}}{network_extra}}}\nbackend: {backend}\n")
    return str(path)


SEND = f"{{generate: microbench, collective: send_recv, size: {S}, num_npus: 2, src: 0, dst: 1}}"


def test_link_and_switch_models_from_the_yaml_and_from_python(user: Path) -> None:
    from simpy_astra.simulation import Simulation

    # hold, hop to the switch, its delay, hold, hop to NPU 1
    expected = GAP + (LAT + S) + DELAY + GAP + (LAT + S)
    path = _scenario(user, SEND, ", link-model: {class: 'my_ext:PacedLink', gap_ns: 50}, "
                                 "switch-model: {class: 'my_ext:SlowSwitch', delay_ns: 30}")
    assert max(r.finished_cycles for r in Simulation.from_scenario(path).run()) == expected

    import my_ext

    sim = Simulation.from_scenario(_scenario(user, SEND), link_model=my_ext.PacedLink,
                                   link_params={"gap_ns": GAP}, switch_model=my_ext.SlowSwitch,
                                   switch_params={"delay_ns": DELAY})
    ends = []
    sim.on("link_end", lambda o: ends.append((o.time_ns, o.what.src, o.npu, o.peer, o.size_bytes)))
    assert max(r.finished_cycles for r in sim.run()) == expected
    # cosimulation.md: link_end at the far-end arrival; npu and peer None, the link in what
    first = GAP + LAT + S
    assert ends == [(first, 0, None, None, S), (expected, sim.network.link("sw", 1).src, None, None, S)]


def test_a_models_own_parameter_check_is_an_input_error(user: Path, capsys) -> None:
    from simpy_astra.cli.main import EXIT_INPUT_ERROR, main

    path = _scenario(user, SEND, ", link-model: {class: 'my_ext:PacedLink', gap_ns: -5}")
    assert main(["run", path, "--quiet"]) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {path}: network: field 'link-model' (my_ext:PacedLink) gap_ns must be >= 0 (got -5)"]


def test_a_collective_of_ones_own_on_ones_own_topology(user: Path) -> None:
    from simpy_astra.simulation import Simulation

    system = SYSTEM.replace("all-reduce-implementation: [ring]", "all-reduce-implementation: ['my_ext:swap']")
    workload = f"{{generate: microbench, collective: all_reduce, size: {2 * S}, num_npus: 2}}"
    path = _scenario(user, workload, backend="congestion_unaware", system=system)
    # 2(n-1) = 2 steps of one message of S bytes (2S / n) and the endpoint delay; a message
    # crosses both links: trunc(2 LAT + S / 1 byte/ns)
    hop = 2 * LAT + S
    reports = Simulation.from_scenario(path).run()
    assert [r.finished_cycles for r in reports] == [2 * (hop + E)] * 2


def test_a_failed_switch_by_its_name_ends_in_a_stall_report(user: Path) -> None:
    from simpy_astra.errors import StalledError  # cosimulation.md names the module
    from simpy_astra.simulation import Simulation

    sim = Simulation.from_scenario(_scenario(user, SEND))
    sim.fail_switch("sw")  # the name network.link(0, "sw") takes
    with pytest.raises(StalledError, match="which is failed"):
        sim.run()
