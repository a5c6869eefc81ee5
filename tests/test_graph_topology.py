"""Topologies given as explicit graphs in the network YAML (``topologies/graph.py``).

Checked three ways: a Graph that spells out a reference topology reproduces the reference's
own figures; small congested fat-tree cases against delays derived here by hand; and every
malformed graph is one InputError naming the field.
"""

from __future__ import annotations

import json

import pytest
import yaml

from simpy_astra.config import load_network_yaml
from simpy_astra.errors import InputError
from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.schema import COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE
from tests.conftest import REFERENCE
from tests.sim_helpers import run, run_sim
from tests.test_reference_parity import simulate_case

GIB = 1 << 30


def as_graph(network: dict) -> dict:
    """The same one-dimensional Switch / FullyConnected / Ring network, spelled as a Graph."""
    (kind,), (n,) = network["topology"], network["npus_count"]
    if kind == "Switch":
        graph = {"switches": ["sw"], "links": [[i, "sw"] for i in range(n)]}
    elif kind == "FullyConnected":
        graph = {"links": [[i, j] for i in range(n) for j in range(i + 1, n)]}
    else:
        graph = {"links": [[i, (i + 1) % n] for i in range(n)]}
    return {**network, "topology": ["Graph"], "graph": graph}


def _equivalence_cases() -> list:
    folder = REFERENCE / "cases"
    if not folder.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no reference data at {REFERENCE}"))]
    out = []
    for path in sorted(folder.glob("*.json")):
        case = json.loads(path.read_text())
        topo = yaml.safe_load((REFERENCE / case["network"]).read_text())["topology"]
        one_path = topo in (["Switch"], ["FullyConnected"])  # routes are unique: both backends
        ring_unaware = topo == ["Ring"] and case["backend"] == "congestion_unaware"
        small = "_st" not in case["id"] and ("_1MB_" in case["id"] or case["id"].startswith("ex_"))
        if (one_path or ring_unaware) and small and not case.get("expect_error"):
            out.append(pytest.param(case, id=case["id"]))
    return out


@pytest.mark.parametrize("case", _equivalence_cases())
def test_graph_spelling_of_a_reference_network_gives_its_figures(case, reference_dir, tmp_path, monkeypatch):
    network = as_graph(yaml.safe_load((reference_dir / case["network"]).read_text()))
    (tmp_path / "graph.yml").write_text(yaml.safe_dump(network))
    got = simulate_case(case, reference_dir, tmp_path, monkeypatch, network=str(tmp_path / "graph.yml"))
    for npu, figures in case["expected"].items():
        for key in ("finished_cycles", "exposed_comm_cycles"):
            assert got[npu][key] == figures[key], (npu, key)


# --------------------------------------------------------------- hand-derived small cases
# Two leaves, two spines: NPUs 0,1 under leaf0 and 2,3 under leaf1; NPU links 100 GB/s
# 100 ns, leaf-spine links 50 GB/s 200 ns.
FAT_TREE = {
    "topology": ["Graph"], "npus_count": [4], "bandwidth": [100.0], "latency": [100.0],
    "graph": {
        "switches": ["leaf0", "leaf1", "spine0", "spine1"],
        "links": [[0, "leaf0"], [1, "leaf0"], [2, "leaf1"], [3, "leaf1"]]
        + [{"between": [leaf, spine], "bandwidth": 50, "latency": 200}
           for leaf in ("leaf0", "leaf1") for spine in ("spine0", "spine1")],
    },
}
SIZE = 1 << 20  # 1 MiB


def ser(size: int, gbps: float) -> float:
    return size / (gbps * GIB / 1e9)


def _sends(pairs: list[tuple[int, int]], n: int = 4) -> list[list]:
    ranks: list[list] = [[] for _ in range(n)]
    for tag, (src, dst) in enumerate(pairs):
        ranks[src].append(make_node(len(ranks[src]), "send", COMM_SEND_NODE,
                                    attrs={"comm_dst": dst, "comm_size": SIZE, "comm_tag": tag}))
        ranks[dst].append(make_node(len(ranks[dst]), "recv", COMM_RECV_NODE,
                                    attrs={"comm_src": src, "comm_size": SIZE, "comm_tag": tag}))
    return [nodes or [make_node(0, "idle", COMP_NODE, duration_micros=1)] for nodes in ranks]


def test_routes_shortest_path_and_ecmp():
    from simpy_astra.topologies import GraphSpec, GraphTopology

    spec = GraphSpec.parse(FAT_TREE["graph"], 4)
    topo = GraphTopology(4, 100.0, 100.0, spec)
    # devices: NPUs 0-3, leaf0=4, leaf1=5, spine0=6, spine1=7; ties go to the smaller sequence
    assert topo.route(0, 2) == [0, 4, 6, 5, 2] and topo.route(1, 3) == [1, 4, 6, 5, 3]
    assert topo.route(0, 1) == [0, 4, 1] and topo.hops(0, 2) == 4
    assert topo.path_profile(0, 2) == (600.0, 50.0)  # 100 + 200 + 200 + 100 ns; slowest 50 GB/s
    ecmp = GraphTopology(4, 100.0, 100.0, GraphSpec.parse({**FAT_TREE["graph"], "routing": "ecmp"}, 4))
    # pair (src, dst) takes path (src * 4 + dst) mod 2: 0->2 is 2 -> spine0, 1->3 is 7 -> spine1
    assert ecmp.route(0, 2)[2] == 6 and ecmp.route(1, 3)[2] == 7


def test_unaware_charges_summed_latency_and_slowest_link(tmp_path):
    reports = run(tmp_path, _sends([(0, 2)]), FAT_TREE)
    assert reports[2].finished_cycles == int(600 + ser(SIZE, 50))


def test_aware_two_flows_share_a_spine_under_shortest_path(tmp_path):
    # 0->2 and 1->3 both take leaf0->spine0->leaf1; the NPU uplinks are separate.
    reports = run(tmp_path, _sends([(0, 2), (1, 3)]), FAT_TREE, backend="congestion_aware")
    up, core = ser(SIZE, 100), ser(SIZE, 50)
    # hop 1 in parallel; hop 2 (leaf0->spine0): first flow at t1, second queues until t1 + core;
    # hops 3 and 4 follow store-and-forward, the second flow behind the first on leaf0->spine0.
    t1 = int(100 + up)
    first = t1 + int(200 + core) + int(200 + core) + int(100 + up)
    second_hop2_start = t1 + int(core)
    second = second_hop2_start + int(200 + core) + int(200 + core) + int(100 + up)
    assert reports[2].finished_cycles == first
    assert reports[3].finished_cycles == second


def test_aware_ecmp_and_given_routes_avoid_the_shared_spine(tmp_path):
    alone = int(100 + ser(SIZE, 100)) + 2 * int(200 + ser(SIZE, 50)) + int(100 + ser(SIZE, 100))
    ecmp = {**FAT_TREE, "graph": {**FAT_TREE["graph"], "routing": "ecmp"}}
    reports = run(tmp_path, _sends([(0, 2), (1, 3)]), ecmp, backend="congestion_aware")
    assert reports[2].finished_cycles == reports[3].finished_cycles == alone
    given = {**FAT_TREE, "graph": {**FAT_TREE["graph"], "routes": [[1, "leaf0", "spine1", "leaf1", 3]]}}
    (tmp_path / "b").mkdir()
    reports, sim = run_sim(tmp_path / "b", _sends([(0, 2), (1, 3)]), given, backend="congestion_aware")
    assert reports[2].finished_cycles == reports[3].finished_cycles == alone
    used = {(s.src, s.dst) for s in sim.network.link_stats() if s.bytes}
    assert ("leaf0", "spine1") in used and ("leaf0", "spine0") in used  # switches by name


def test_physical_graph_carries_each_links_own_speed(tmp_path):
    _, sim = run_sim(tmp_path, _sends([(0, 2)]), FAT_TREE, backend="congestion_aware")
    g = sim.network.graph
    assert g.edges[0, 4]["bandwidth_gbps"] == 100.0 and g.edges[4, 6]["latency_ns"] == 200.0
    assert g.nodes[6]["label"] == "spine0" and g.out_degree(4) == 4  # leaf0: two NPUs, two spines


# --------------------------------------------------------------- bad graphs
@pytest.mark.parametrize("graph, field, words", [
    (None, "graph", "needs a graph mapping"),
    ({"links": [[0, "nowhere"]]}, "graph.links[0]", "neither an NPU"),
    ({"links": [[0, 1], [1, 0]]}, "graph.links[1]", "repeats the link"),
    ({"links": [[0, 0]]}, "graph.links[0]", "to itself"),
    ({"links": [[0, 1]]}, "graph.links", "no path to NPU 2"),
    ({"links": [{"between": [0, 1], "bandwidth": 0}]}, "graph.links[0].bandwidth", "> 0"),
    ({"links": [[0, 1], [1, 2]], "routing": "random"}, "graph.routing", "shortest_path, ecmp"),
    ({"links": [[0, 1], [1, 2]], "routes": [[0, 2]]}, "graph.routes[0]", "does not have"),
    ({"links": [[0, 1], [1, 2]], "bogus": 1}, "graph", "unknown key"),
    ({"switches": [3], "links": [[0, 1], [1, 2]]}, "graph.switches", "names (strings)"),
])
def test_bad_graph_is_one_input_error(tmp_path, graph, field, words):
    network = {"topology": ["Graph"], "npus_count": [3], "bandwidth": [50], "latency": [500]}
    if graph is not None:
        network["graph"] = graph
    path = tmp_path / "net.yml"
    path.write_text(yaml.safe_dump(network))
    with pytest.raises(InputError) as err:
        load_network_yaml(path)
    assert str(path) in str(err.value) and field in str(err.value) and words in str(err.value)


def test_graph_mapping_without_a_graph_dimension_is_refused(tmp_path):
    path = tmp_path / "net.yml"
    path.write_text(yaml.safe_dump({"topology": ["Ring"], "npus_count": [4], "bandwidth": [50],
                                    "latency": [500], "graph": {"links": [[0, 1]]}}))
    with pytest.raises(InputError, match="only read for a 'Graph' dimension"):
        load_network_yaml(path)
