"""Extensions written from the docs alone, eleventh round: each differs from the docs' examples
and from the earlier rounds (``test_extensions_from_docs.py``, ``test_extensions_round2.py`` ..
``round10.py``, ``test_extension_*.py``) and is checked against a figure derived here from the
closed forms the docs state, or, for a mistake of the researcher's, against the one line the
docs promise. The researcher's module is ``tests/data/round11/r11.py``.

Links of 1 byte/ns (``bandwidth`` 10^9 / 2^30 GB/s, GB = 2^30 B) and ``L`` ns: one hop of S
bytes takes ``d(S) = trunc(L + S / B)`` = L + S; ``E`` is the endpoint delay
(collectives/README.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.researcher_folder import researcher_folder
from tests.test_extensions_round4 import E, d
from tests.test_extensions_round6 import _cli, _write
from tests.test_extensions_round7 import _bench, _net
from tests.test_extensions_round9 import _one_line

HERE = Path(__file__).resolve().parent
R11 = HERE / "data" / "round11" / "r11.py"


@pytest.fixture
def r11(tmp_path: Path, monkeypatch) -> Path:
    """A folder of the researcher's own holding r11.py and the docs' star_net.py, slow_switch.py
    and paced_link.py, the working directory; the registries are left as they were found."""
    modules = {"r11": R11.read_text(), **{name: (HERE.parent / "examples" / f"{name}.py").read_text()
                                         for name in ("star_net", "slow_switch", "paced_link")}}
    with researcher_folder(tmp_path, monkeypatch, modules) as folder:
        yield folder


# -- a switch model where there is no switch ----------------------------------------------------

def test_a_switch_model_on_a_network_without_a_switch_is_told_it_changes_nothing(r11):
    """simpy_astra/network/README.md: a switch model replaces every switch of the network. On a
    [Ring] there is none: the docs' SlowSwitch (30 ns a hop through it) changed nothing, and the
    run said nothing of it. It still ends at one hop, d(S), and now says so in one warning; on a
    [Switch] the message crosses two links and the switch's 30 ns, 2 d(S) + 30, without a word."""
    from slow_switch import SlowSwitch

    from simpy_astra.simulation import Simulation

    size = 65536
    send = f"{{generate: microbench, collective: send_recv, size: {size}, num_npus: 4, src: 0, dst: 1}}"
    for topology, expected, told in (("Ring", d(size), True), ("Switch", 2 * d(size) + 30, False)):
        path = _write(r11, f"{topology}.yaml", send, _net(topology, 4), "congestion_aware")
        sim = Simulation.from_scenario(str(path), switch_model=SlowSwitch, switch_params={"delay_ns": 30})
        assert max(r.finished_ns for r in sim.run()) == expected
        lines = [w for w in sim.warnings if "changes nothing" in w]
        assert lines == (["switch_model= (slow_switch:SlowSwitch) changes nothing: the "
                          "topology [Ring] has no switch for it to serve (a Switch dimension has one, and so "
                          "does a Graph that names switches); leave it out, or give the network a switch"]
                         if told else [])
    # the network YAML's own key, on the command line: the warning on stderr, the figure unchanged
    path = _write(r11, "ring_yaml.yaml", send, _net("Ring", 4, extra=", switch-model: {class: delay, delay_ns: 30}"),
                  "congestion_aware")
    done = _cli(r11, "run", path.name, "--quiet")
    assert done.stdout.strip().startswith(f"iteration time {d(size):,} ns")
    assert "field 'switch-model' (delay) changes nothing" in " ".join(done.stderr.split())



RING_GRAPH = """import networkx as nx


def build():
    g = nx.DiGraph()
    for i in range(4):
        for j in ((i + 1) % 4, (i - 1) % 4):
            g.add_edge(i, j, bandwidth_gbps=1.0, latency_ns=1.0)
    return g
"""


def test_a_switch_model_on_a_graph_without_a_switch_is_told_so_without_contradiction(r11):
    """A Graph with no switch (a ring written as a graph: in the YAML, or as a networkx graph)
    given a switch model: before, the warning said the topology [GraphTopology] had no switch
    "(a Switch or Graph dimension has)" -- a Graph dimension it had. It now names the
    topology as the YAML does and says where a Graph's switches are named."""
    (r11 / "ring_graph.py").write_text(RING_GRAPH)
    send = "{generate: microbench, collective: send_recv, size: 65536, num_npus: 4, src: 0, dst: 1}"
    graph = "graph: {links: [[0, 1], [1, 2], [2, 3], [3, 0]]}"
    told = ("field 'switch-model' (delay) changes nothing: the topology [Graph] has no switch for it to serve "
            "(its graph names none; a switch is one of graph.switches, or a networkx graph's node of kind: "
            "switch); leave it out, or give the network a switch")
    model = "switch-model: {class: delay, delay_ns: 30}"
    for name, network in (("yaml_graph.yaml", _net("Graph", 4, extra=f", {graph}, {model}")),
                          ("nx_graph.yaml", f"{{topology: {{networkx: 'ring_graph:build'}}, {model}}}")):
        done = _cli(r11, "run", _write(r11, name, send, network, "congestion_aware").name, "--quiet")
        assert done.returncode == 0, done.stderr
        assert told in " ".join(done.stderr.split())

# -- a switch failed by its number ---------------------------------------------------------------

def test_fail_switch_given_an_npu_is_refused_naming_the_switches(r11):
    """docs/cosimulation.md: ``sim.fail_switch(device)`` fails a switch for good; switches are
    numbered from N (or named: the star's ``"sw"``). ``fail_switch(0)`` failed NPU 0's links in
    silence: the send 0 -> 3 stalled, reported as held by link 0->4. Now it is a ValueError
    naming the NPUs and the fix, raised out of ``sim.run()``; ``fail_switch("sw")`` still fails
    the switch, and ``fail_device(0)`` NPU 0. Untouched, 0 -> 3 crosses two links store-and-
    forward: 2 x trunc(500 + 65,536 / (50 x 2^30 / 10^9)) = 3,440 ns."""
    from simpy_astra.errors import StalledError
    from simpy_astra.simulation import Simulation

    scenario = r11 / "star.yaml"
    scenario.write_text((HERE.parent / "examples" / "star_send.yaml").read_text()
                        .replace("backend: congestion_unaware", "backend: congestion_aware"))

    def run_failing(device, method: str = "fail_switch"):
        sim = Simulation.from_scenario(str(scenario))

        def fault(env):
            yield env.timeout(100)
            getattr(sim, method)(device)

        sim.env.process(fault(sim.env))
        return sim.run()

    assert max(r.finished_ns for r in Simulation.from_scenario(str(scenario)).run()) == 3_440
    with pytest.raises(ValueError, match=r"^fail_switch\(0\): device 0 is an NPU \(NPUs 0\.\.3\), not a switch: "
                                         r"switches are numbered from 4 on or named by their label; "
                                         r"fail_device\(0\) fails an NPU's links$"):
        run_failing(0)
    for device, method, held in (("sw", "fail_switch", "link 0->4"), (4, "fail_switch", "link 0->4"),
                                 (0, "fail_device", "link 0->4")):
        with pytest.raises(StalledError, match=f"held by {held}, which is failed"):
            run_failing(device, method)


# -- a backend of one's own whose __init__ forgets the base's ---------------------------------------

def test_a_backend_whose_init_skips_the_bases_is_told_to_call_it(r11):
    """docs/backends.md: the smallest backend subclasses the analytical one. r11's Lagging keeps
    a figure of its own in ``__init__`` and never calls ``super().__init__``: the run said the
    built network has no ``board`` and told the researcher to return a CongestionUnawareNetwork
    subclass, which it is; now it names the call that is missing."""
    path = _write(r11, "lag.yaml", _bench("all_reduce", 4096, 4), _net("Ring", 4), "r11:LAGGING")
    line = _one_line(_cli(r11, "run", path.name, "--quiet", status=2))
    assert line == ("error: network backend 'lagging': build returned Lagging, which has no board; "
                    "Lagging.__init__ must call super().__init__(env, dims), which sets them (docs/backends.md)")


# -- a report of one's own on a fabric with a named switch ------------------------------------------

def test_the_docs_bus_bandwidth_report_names_a_switch_as_the_runs_tables_do(r11):
    """docs/reports.md's report of one's own (examples/report_busbw.py) over a networkx star
    (docs/collectives.md's star_net.py, its switch named "sw"): it printed the busiest link as
    ``4->3``, a number the run's own tables never show (they say ``sw -> 3``); now it names
    the ends as the reports do (``sim.network.label``). 4 NPUs all-reduce 1 MiB by the ring,
    congestion-aware: every step crosses NPU -> sw -> NPU, so every link of the star carries
    one message of S/4 a step."""
    import importlib.util
    import re

    spec = importlib.util.spec_from_file_location("report_busbw", HERE.parent / "examples" / "report_busbw.py")
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    scenario = r11 / "star_ring.yaml"
    scenario.write_text((HERE.parent / "examples" / "star_send.yaml").read_text()
                        .replace("collective: send_recv, size: 65536, num_npus: 4, src: 0, dst: 3",
                                 "collective: all_reduce, size: 1048576, num_npus: 4")
                        .replace("backend: congestion_unaware", "backend: congestion_aware"))
    line = report.bus_bandwidth_report(str(scenario), 1048576)
    assert re.fullmatch(r"4 NPUs, 1,048,576 B all-reduce in [\d,]+ ns: bus bandwidth [\d.]+ GB/s; "
                        r"busiest link (\d->sw|sw->\d) busy \d+% of the time", line), line


# -- a script's figures under the names the file holds -------------------------------------------

def test_a_reports_as_dict_is_what_json_out_writes_for_its_npu(r11):
    """docs/cosimulation.md: each report's ``as_dict()`` is "what ``--json-out`` writes for it";
    docs/reports.md: times are under ``_ns`` names (``finished_ns``), the reference's beside
    them for one more release. ``as_dict()`` held the reference's names alone, so a script
    reading ``as_dict()["finished_ns"]`` met a KeyError. Now it is the file's NPU entry but
    the breakdown (made from a record of the run). A 4 KiB ring all-reduce on 4 NPUs:
    6 steps of a hop of 1 KiB and E, and E before the first, 3 of them reducing 1 KiB
    (``reduce_ns``)."""
    import json

    from simpy_astra.simulation import Simulation
    from tests.test_extensions_round4 import reduce_ns

    path = _write(r11, "ar.yaml", _bench("all_reduce", 4096, 4), _net("Ring", 4), "congestion_unaware")
    reports = {r.npu_id: r.as_dict() for r in Simulation.from_scenario(str(path)).run()}
    _cli(r11, "run", path.name, "--quiet", "--json-out", "figures.json")
    written = json.loads((r11 / "figures.json").read_text())["npus"]
    assert {int(npu): {k: v for k, v in entry.items() if k != "breakdown_ns"}
            for npu, entry in written.items()} == reports
    finish = 6 * (d(1024) + E) + 3 * reduce_ns(1024) + E
    assert {npu: (r["finished_ns"], r["comm_time_ns"]) for npu, r in reports.items()} == dict.fromkeys(
        range(4), (finish, finish))


# -- a link model handed in from Python beside a backend that has no such links ---------------------

def test_a_link_model_from_python_beside_another_backend_names_the_argument_given(r11):
    """simpy_astra/network/README.md: ``Simulation.from_scenario(path, link_model=PacedLink,
    link_params={"gap_ns": 50})`` hands the class in from Python; element models are the
    congestion-aware backend's. Beside the analytical or packet backend the refusal named the
    scenario's network and a YAML field, ``cosim.yaml: network: field 'link-model' is read by
    the congestion_aware backend only``, which the scenario does not have; now it names the
    argument the script gave. On the congestion-aware backend the docs' ring runs, each of the
    6 messages of its all-reduce held 50 ns before it starts: 32,362 + 6 x 50 = 32,662 ns."""
    from paced_link import PacedLink
    from slow_switch import SlowSwitch

    from simpy_astra.errors import InputError
    from simpy_astra.simulation import Simulation

    scenario = r11 / "cosim.yaml"
    scenario.write_text((HERE.parent / "examples" / "cosim_ring.yaml").read_text())
    for backend, given, models in (("congestion_unaware", "link_model=", {"link_model": PacedLink,
                                                                          "link_params": {"gap_ns": 50}}),
                                   ("packet", "switch_model=", {"switch_model": SlowSwitch})):
        with pytest.raises(InputError) as refused:
            Simulation.from_scenario(str(scenario), backend=backend, **models)
        assert str(refused.value) == (f"{given}: element models replace the links and switches of the "
                                      f"congestion_aware backend only, and this run's is {backend}; pass "
                                      f"backend='congestion_aware'")
    sim = Simulation.from_scenario(str(scenario), link_model=PacedLink, link_params={"gap_ns": 50})
    assert max(r.finished_ns for r in sim.run()) == 32_362 + 6 * 50
