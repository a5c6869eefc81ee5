"""Topologies handed in as a ``networkx.DiGraph``, routed by least summed latency.

A dragonfly built here (fewest-link routing would send some pairs through a third group)
must route every NPU pair on a path of least total latency, found independently here by a
plain Dijkstra over the edge list; one transfer run from a scenario must take the closed
form of its hand-derived route on both backends; pinned routes and the tie rules are
checked on small graphs; every malformed graph is one line naming the culprit.
"""

from __future__ import annotations

import heapq
import inspect
import math
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest
import yaml

from simpy_astra.config.scenario import load_scenario
from simpy_astra.errors import InputError
from simpy_astra.simulation import Simulation
from simpy_astra.topologies import GraphSpecError, from_networkx
from tests.sim_helpers import BASE_SYSTEM

ROOT = Path(__file__).resolve().parents[1]
GIB = 1 << 30
SIZE = 1 << 20
NPU_LINK, LOCAL, GLOBAL = (100.0, 50.0), (200.0, 100.0), (50.0, 1000.0)  # (GB/s, ns)


def dragonfly(groups=5, routers=4, per_router=2, npu=(100.0, 50.0), local=(200.0, 100.0),
              glob=(50.0, 1000.0)):
    """Groups of fully connected routers; one global cable per group pair, leaving group i
    for group j from router ((j - i) mod groups - 1) mod routers; NPUs numbered router by
    router (NPU k on router k // per_router, router r in group r // routers)."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(range(groups * routers * per_router), kind="npu")

    def cable(u, v, link):
        g.add_edge(u, v, bandwidth_gbps=link[0], latency_ns=link[1])
        g.add_edge(v, u, bandwidth_gbps=link[0], latency_ns=link[1])

    for grp in range(groups):
        for a in range(routers):
            g.add_node(f"g{grp}r{a}", kind="switch")
            for b in range(a):
                cable(f"g{grp}r{a}", f"g{grp}r{b}", local)
    for i in range(groups):
        for j in range(i + 1, groups):
            cable(f"g{i}r{((j - i) % groups - 1) % routers}", f"g{j}r{((i - j) % groups - 1) % routers}", glob)
    for n in range(groups * routers * per_router):
        r = n // per_router
        cable(n, f"g{r // routers}r{r % routers}", npu)
    return g


def least_latency(g: nx.DiGraph, src) -> dict:
    """Least summed latency_ns from ``src`` to every node: a textbook Dijkstra on the edges."""
    dist = {src: 0.0}
    heap = [(0.0, 0, src)]
    order = 0
    done = set()
    while heap:
        d, _, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        for v in g.successors(u):
            nd = d + g.edges[u, v]["latency_ns"]
            if nd < dist.get(v, math.inf):
                dist[v] = nd
                order += 1
                heapq.heappush(heap, (nd, order, v))
    return dist


def path_latency(g: nx.DiGraph, path: list) -> float:
    return sum(g.edges[u, v]["latency_ns"] for u, v in zip(path, path[1:], strict=False))


def labelled(topo, path: list[int]) -> list:
    """A route of device ids as graph nodes (NPUs by id, switches by name)."""
    return [topo.device_label(d) for d in path]


def test_every_dragonfly_pair_routes_on_a_least_latency_path():
    g = dragonfly()
    topo = from_networkx(g)
    n = topo.npus_count
    assert n == 40
    detours = 0
    for src in range(n):
        best = least_latency(g, src)
        for dst in range(n):
            if src == dst:
                continue
            path = labelled(topo, topo.route(src, dst))
            assert path[0] == src and path[-1] == dst
            assert all(g.has_edge(u, v) for u, v in zip(path, path[1:], strict=False))
            assert path_latency(g, path) == best[dst], (src, dst, path)
            fewest = min(nx.all_shortest_paths(g, src, dst))  # what routing by links alone took
            detours += path_latency(g, fewest) > best[dst]
    # the graph tells the rules apart: fewest-link routing detours through a third group
    # (a router's own global link, then the next group's, skips the local hops)
    assert detours > 0


def test_a_cross_group_route_is_the_one_derived_by_hand():
    topo = from_networkx(dragonfly())
    # NPU 0 on g0r0, NPU 39 on g4r3; group 0 reaches group 4 from r3, landing on g4r0
    assert labelled(topo, topo.route(0, 39)) == [0, "g0r0", "g0r3", "g4r0", "g4r3", 39]
    assert topo.path_profile(0, 39) == (50 + 100 + 1000 + 100 + 50, 50.0)


def _ties() -> nx.DiGraph:
    """0 -> 1 three ways at 200 ns: via a (2 links), via b (2 links), via c, d (3 links);
    one way at 150 ns (via e, 2 links, but not for 1 -> 0: only 0 -> e -> 1 is one way)."""
    g = nx.DiGraph()
    g.add_nodes_from([0, 1], kind="npu")

    def edge(u, v, lat):
        g.add_edge(u, v, bandwidth_gbps=10.0, latency_ns=lat)

    for s in ("a", "b"):
        edge(0, s, 100.0), edge(s, 0, 100.0), edge(s, 1, 100.0), edge(1, s, 100.0)
    edge(0, "c", 50.0), edge("c", "d", 50.0), edge("d", 1, 100.0)
    return g


def test_ties_go_to_fewest_links_then_smallest_sequence_or_ecmp():
    g = _ties()
    # 1 -> 0: via a or b, both 200 ns and 2 links; smallest device sequence first (a is device 2)
    topo = from_networkx(g)
    assert labelled(topo, topo.route(1, 0)) == [1, "a", 0]
    # 0 -> 1: a, b (2 links) and c, d (3 links) all cost 200 ns: fewest links, then smallest
    assert labelled(topo, topo.route(0, 1)) == [0, "a", 1]
    ecmp = from_networkx(g, routing="ecmp")
    # ECMP: pair (src, dst) takes path (src * 2 + dst) mod 2 of the sorted least-cost ones
    assert labelled(ecmp, ecmp.route(0, 1)) == [0, "b", 1]  # (0 * 2 + 1) mod 2 = 1
    assert labelled(ecmp, ecmp.route(1, 0)) == [1, "a", 0]  # (1 * 2 + 0) mod 2 = 0
    spray = from_networkx(g, routing="spray")
    assert [labelled(spray, p) for p in spray.routes(0, 1)] == [[0, "a", 1], [0, "b", 1]]
    # a cheaper latency wins over fewer links
    g.edges["c", "d"]["latency_ns"] = 49.0
    assert labelled(from_networkx(g), from_networkx(g).route(0, 1)) == [0, "c", "d", 1]


def test_fractional_latencies_that_add_up_equal_tie():
    # 0.1 + 0.2 != 0.3 in floating point; in whole picoseconds they tie (then fewest links)
    g = nx.DiGraph()
    g.add_nodes_from([0, 1], kind="npu")
    for u, v, lat in ((0, "x", 0.1), ("x", "y", 0.2), ("y", 1, 0.0), (0, "z", 0.3), ("z", 1, 0.0),
                      (1, 0, 1.0)):
        g.add_edge(u, v, bandwidth_gbps=1.0, latency_ns=lat)
    topo = from_networkx(g)
    assert labelled(topo, topo.route(0, 1)) == [0, "z", 1]


def test_pinned_routes_win_and_bad_ones_are_named():
    g = dragonfly()
    detour = [0, "g0r0", "g1r3", "g1r2", "g4r1", "g4r3", 39]  # through group 1, 2,300 ns
    assert all(g.has_edge(u, v) for u, v in zip(detour, detour[1:], strict=False))
    topo = from_networkx(g, routes=[detour])
    assert labelled(topo, topo.route(0, 39)) == detour
    assert labelled(topo, topo.route(39, 0)) == [39, "g4r3", "g4r0", "g0r3", "g0r0", 0]  # not pinned
    g.graph["routes"] = [detour]  # the same through the graph's own attribute
    assert labelled(from_networkx(g), from_networkx(g).route(0, 39)) == detour
    for route, words in [([0, "g0r0", "g4r3", 39], "edge ('g0r0', 'g4r3')"),
                         ([0, "g0r0", "g0r3"], "start and end at two different NPUs"),
                         ([0, "nowhere", 39], "'nowhere', which is not a node"),
                         ([0, "g0r0", 0], "two different NPUs")]:
        with pytest.raises(GraphSpecError, match=re_escape(words)):
            from_networkx(dragonfly(), routes=[route])


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


# ------------------------------------------------------------------ runs from a scenario
def _scenario(tmp_path: Path, network: dict, src: int = 0, dst: int = 39, npus: int = 40,
              backend: str = "congestion_unaware") -> Path:
    """A scenario beside a module ``df_fabric`` holding this file's :func:`dragonfly`."""
    (tmp_path / "df_fabric.py").write_text(inspect.getsource(dragonfly))
    doc = {"workload": {"generate": "microbench", "collective": "send_recv", "size": SIZE,
                        "num_npus": npus, "src": src, "dst": dst},
           "system": BASE_SYSTEM, "network": network, "backend": backend}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def ser_ns(size: int, gbps: float) -> float:
    return size / (gbps * GIB / 1e9)


# the hand-derived route 0 -> g0r0 -> g0r3 -> g4r0 -> g4r3 -> 39, link by link (GB/s, ns)
ROUTE_0_39 = [NPU_LINK, LOCAL, GLOBAL, LOCAL, NPU_LINK]
UNAWARE_0_39 = int(sum(lat for _, lat in ROUTE_0_39) + ser_ns(SIZE, min(bw for bw, _ in ROUTE_0_39)))
AWARE_0_39 = sum(int(lat + ser_ns(SIZE, bw)) for bw, lat in ROUTE_0_39)


@pytest.mark.parametrize("backend, expected", [("congestion_unaware", UNAWARE_0_39),
                                               ("congestion_aware", AWARE_0_39)])
def test_a_transfer_across_the_dragonfly_takes_its_closed_form(tmp_path, monkeypatch, backend, expected):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    path = _scenario(tmp_path, {"topology": {"networkx": "df_fabric:dragonfly"}}, backend=backend)
    reports = {r.npu_id: r.finished_cycles for r in Simulation(load_scenario(str(path))).run()}
    assert reports[0] == reports[39] == expected
    assert {t for n, t in reports.items() if n not in (0, 39)} == {0}  # idle NPUs


def test_the_python_api_takes_the_graph_and_pinned_routes(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    # the scenario's own network only sets the NPU count (40) the workload was checked against
    path = _scenario(tmp_path, {"topology": ["Switch"], "npus_count": [40], "bandwidth": [1], "latency": [1]},
                     backend="congestion_aware")
    sim = Simulation.from_scenario(str(path), topology=dragonfly())
    assert max(r.finished_cycles for r in sim.run()) == AWARE_0_39
    detour = [0, "g0r0", "g1r3", "g1r2", "g4r1", "g4r3", 39]
    links = [NPU_LINK, GLOBAL, LOCAL, GLOBAL, LOCAL, NPU_LINK]
    sim = Simulation.from_scenario(str(path), topology=dragonfly(), routes=[detour])
    assert max(r.finished_cycles for r in sim.run()) == sum(int(lat + ser_ns(SIZE, bw)) for bw, lat in links)
    used = {(s.src, s.dst) for s in sim.network.link_stats() if s.bytes}
    assert used == set(zip(detour, detour[1:], strict=False))
    with pytest.raises(InputError, match=r"topology=: the graph has 20 NPUs but .* has 40"):
        Simulation.from_scenario(str(path), topology=dragonfly(per_router=1))


def test_exact_numbers_on_edges_time_as_their_floats(tmp_path, monkeypatch):
    """A graph built with ``Decimal`` or ``Fraction`` figures (the exact numbers a researcher's
    own code may count in, and which plug-ins' delays take: ``infra.horizon.finite_real``) times
    as the same figures given as floats: graph edges refused them as not numbers."""
    from decimal import Decimal
    from fractions import Fraction

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    path = _scenario(tmp_path, {"topology": ["Switch"], "npus_count": [40], "bandwidth": [1], "latency": [1]},
                     backend="congestion_aware")
    exact = dragonfly()
    for _u, _v, data in exact.edges(data=True):
        data["bandwidth_gbps"] = Decimal(str(data["bandwidth_gbps"]))
        data["latency_ns"] = Fraction(data["latency_ns"])
    sim = Simulation.from_scenario(str(path), topology=exact)
    assert max(r.finished_cycles for r in sim.run()) == AWARE_0_39


def _broken(kind: str):
    g = dragonfly()
    if kind == "nan":
        g.edges["g0r0", "g0r1"]["latency_ns"] = math.nan
    elif kind == "missing":
        del g.edges[8, "g1r0"]["bandwidth_gbps"]
    elif kind == "negative":
        g.edges["g1r0", 8]["latency_ns"] = -5
    elif kind == "gap":
        g.remove_node(7)
    elif kind == "one_way":
        g.remove_edge("g0r0", 0)
    elif kind == "undirected":
        g = nx.Graph(g)
    return g


@pytest.mark.parametrize("kind, words", [
    ("nan", "edge ('g0r0', 'g0r1') has latency_ns nan; it must be a finite number >= 0 (ns)"),
    ("missing", "edge (8, 'g1r0') has no bandwidth_gbps"),
    ("negative", "edge ('g1r0', 8) has latency_ns -5"),
    ("gap", "NPU 7 is missing"),
    ("one_way", "has no path from NPU 1 to NPU 0"),
    ("undirected", "is a Graph, not a networkx.DiGraph"),
])
def test_a_bad_graph_is_one_line_naming_function_culprit_and_field(tmp_path, kind, words):
    (tmp_path / "bad_fabric.py").write_text(
        "from tests.test_networkx_topology import _broken\n\n\ndef build():\n"
        f"    return _broken({kind!r})\n")
    (tmp_path / "net.yml").write_text("topology: {networkx: 'bad_fabric:build'}\n")
    sys.path.insert(0, str(tmp_path))
    sys.modules.pop("bad_fabric", None)
    try:
        with pytest.raises(InputError) as err:
            from simpy_astra.config import load_network_yaml

            load_network_yaml(str(tmp_path / "net.yml"))
    finally:
        sys.path.remove(str(tmp_path))
    message = err.value.message
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'net.yml'}: field 'topology.networkx' bad_fabric:build returned")
    assert words in message
    with pytest.raises(InputError, match=re_escape(words)):  # the same from Python
        from simpy_astra.config.network import NetworkConfig
        from simpy_astra.config.python_overrides import with_graph

        with_graph(NetworkConfig(("Ring",), (40,), (1.0,), (1.0,)), _broken(kind))


@pytest.mark.parametrize("body, words", [
    ("raise ValueError('no such size')", "function 'fab:build' raised ValueError: no such size"),
    ("return 5", "fab:build returned a value that is a int, not a networkx.DiGraph"),
])
def test_the_users_function_failing_is_reported_as_theirs(tmp_path, body, words):
    (tmp_path / "fab.py").write_text(f"def build():\n    {body}\n")
    (tmp_path / "net.yml").write_text("topology: {networkx: 'fab:build'}\nbandwidth: [1]\n")
    sys.path.insert(0, str(tmp_path))
    sys.modules.pop("fab", None)
    try:
        from simpy_astra.config import load_network_yaml

        with pytest.raises(InputError, match="field 'bandwidth' is not read with topology"):
            load_network_yaml(str(tmp_path / "net.yml"))
        (tmp_path / "net.yml").write_text("topology: {networkx: 'fab:build'}\n")
        with pytest.raises(InputError, match=re_escape(words)):
            load_network_yaml(str(tmp_path / "net.yml"))
    finally:
        sys.path.remove(str(tmp_path))


def test_the_shipped_dragonfly_scenario_gives_its_stated_figures(tmp_path):
    """scenarios/dragonfly_send_recv.yaml states 20,831 ns here and 50,125 ns aware."""
    assert (UNAWARE_0_39, AWARE_0_39) == (20_831, 50_125)
    for backend, expected in (("congestion_unaware", UNAWARE_0_39), ("congestion_aware", AWARE_0_39)):
        done = subprocess.run([sys.executable, "-m", "simpy_astra", "run", "scenarios/dragonfly_send_recv.yaml",
                               "--network-backend", backend], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "SIMPY_ASTRA_CACHE": str(tmp_path),
                                   "SIMPY_ASTRA_PROGRESS": "0"})
        assert done.returncode == 0, done.stderr
        assert f"sys[39] finished, {expected} cycles" in done.stdout


def test_the_yaml_pins_routes_and_names_a_bad_one(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    detour = [0, "g0r0", "g1r3", "g1r2", "g4r1", "g4r3", 39]
    links = [NPU_LINK, GLOBAL, LOCAL, GLOBAL, LOCAL, NPU_LINK]
    network = {"topology": {"networkx": "df_fabric:dragonfly", "routing": "ecmp", "routes": [detour]}}
    path = _scenario(tmp_path, network)
    reports = Simulation(load_scenario(str(path))).run()
    assert max(r.finished_cycles for r in reports) == int(sum(lat for _, lat in links) + ser_ns(SIZE, 50.0))
    network["topology"]["routes"] = [[0, "g0r0", "g2r0", 39]]
    path = _scenario(tmp_path, network)
    with pytest.raises(InputError, match=re_escape("field 'topology.routes[0]' uses the edge ('g0r0', 'g2r0'), "
                                                   "which the graph does not have")):
        load_scenario(str(path))
