"""One networkx graph carries every topology (``simpy_astra/network/fabric.py``).

Node and edge counts are derived by hand in each case; every backend returns the same graph
from ``network.graph``, the link-level ones with their live links on its edges, and the
closed-form backend never imports networkx unless the graph is asked for.
"""

from __future__ import annotations

import subprocess
import sys

import networkx as nx
import pytest
import simpy

from simpy_astra.network import BACKENDS, LinkStats
from simpy_astra.network.link import LinkResource
from simpy_astra.topologies import FullyConnected, Line, Ring, Switch, from_networkx

BW, LAT = 50.0, 500.0


def _fat_tree(k: int = 4) -> nx.DiGraph:
    """A k-ary fat tree: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores,
    k/2 hosts per edge switch; every cable is two directed edges."""
    g = nx.DiGraph()
    half = k // 2
    hosts = 0
    cables = []
    for pod in range(k):
        for e in range(half):
            edge = f"edge{pod}.{e}"
            for _ in range(half):
                cables.append((hosts, edge, 100.0))
                hosts += 1
            for a in range(half):
                cables.append((edge, f"agg{pod}.{a}", 200.0))
        for a in range(half):
            for c in range(half):
                cables.append((f"agg{pod}.{a}", f"core{a * half + c}", 400.0))
    g.add_nodes_from(range(hosts), kind="npu")
    for u, v, bw in cables:
        g.add_edge(u, v, bandwidth_gbps=bw, latency_ns=100.0)
        g.add_edge(v, u, bandwidth_gbps=bw, latency_ns=100.0)
    return g


# (dims, NPUs, switches, directed edges) -- counted by hand:
CASES = {
    "ring8": ([Ring(8, BW, LAT)], 8, 0, 16),  # 8 cables, both ways
    "ring2": ([Ring(2, BW, LAT)], 2, 0, 2),  # one cable: one link each way, not two
    "switch8": ([Switch(8, BW, LAT)], 8, 1, 16),  # an up- and a downlink per NPU
    "fully4": ([FullyConnected(4, BW, LAT)], 4, 0, 12),  # 4 * 3 ordered pairs
    # 4 x 3 mesh: 3 rows of 3 cables, 4 columns of 2 cables, both ways: 2 * (9 + 8)
    "mesh4x3": ([Line(4, BW, LAT), Line(3, BW, LAT)], 12, 0, 34),
    # 4 x 4 torus: 4 rings of 4 per dimension, 8 links each: 2 * 4 * 8
    "torus4x4": ([Ring(4, BW, LAT), Ring(4, BW, LAT)], 16, 0, 64),
    # rings of 2 (4 of them, 2 links each) under 2 switches of 4 (8 links each)
    "ring2_switch4": ([Ring(2, BW, LAT), Switch(4, BW, LAT)], 8, 2, 4 * 2 + 2 * 8),
    # 24 NPUs: 6 rings of 4 (8 links), 12 switches of 2 (4 links), 8 switches of 3 (6 links)
    "ring4_switch2_switch3": ([Ring(4, BW, LAT), Switch(2, BW, LAT), Switch(3, BW, LAT)],
                              24, 12 + 8, 6 * 8 + 12 * 4 + 8 * 6),
    # k=4 fat tree: 16 hosts, 8 edge + 8 aggregation + 4 core switches, 3 * 16 cables
    "fat_tree4": ([from_networkx(_fat_tree(4))], 16, 20, 2 * 48),
}


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("case", list(CASES))
def test_every_backend_gives_the_graph_counted_by_hand(case: str, backend: str) -> None:
    dims, npus, switches, edges = CASES[case]
    network = BACKENDS[backend](simpy.Environment(), dims, "<test>", None)
    g = network.graph
    assert isinstance(g, nx.DiGraph)
    kinds = nx.get_node_attributes(g, "kind")
    assert sorted(n for n, k in kinds.items() if k == "npu") == list(range(npus))
    assert sum(k == "switch" for k in kinds.values()) == switches
    assert set(kinds) == set(g.nodes)
    assert g.number_of_edges() == edges
    assert all("bandwidth_gbps" in d and "latency_ns" in d for _, _, d in g.edges(data=True))
    if backend != "congestion_unaware":  # the live links, and one process per switch
        for u, v, data in g.edges(data=True):
            link = data["link"]
            assert isinstance(link, LinkResource) and (link.src, link.dst) == (u, v)
            assert link.bandwidth_gbps == data["bandwidth_gbps"]
            assert isinstance(link.process, simpy.Process) and link.process.is_alive  # (issue 24)
        for s in (n for n, k in kinds.items() if k == "switch"):
            assert isinstance(g.nodes[s]["device"].process, simpy.Process)
        stats = network.link_stats()
        assert len(stats) == edges and all(isinstance(s, LinkStats) for s in stats)
        assert (stats[0].max_queue_bytes is not None) == (backend == "packet")


def test_stacked_switches_are_ints_named_by_where_they_are() -> None:
    network = BACKENDS["congestion_aware"](simpy.Environment(), CASES["ring2_switch4"][0], "<t>", None)
    g = network.graph
    assert [g.nodes[s]["label"] for s in (8, 9)] == ["switch 4 of dim 1 at NPU 0", "switch 4 of dim 1 at NPU 1"]
    assert sorted(g.successors(8)) == [0, 2, 4, 6] and sorted(g.successors(9)) == [1, 3, 5, 7]
    # dimension order: the ring of 2 first (0 -> 1), then 1's switch (9) down to 7
    assert [(lk.src, lk.dst) for lk in network.route(0, 7)] == [(0, 1), (1, 9), (9, 7)]
    assert network.link("switch 4 of dim 1 at NPU 1", 7) is g.edges[9, 7]["link"]


def test_routes_follow_the_graph_on_a_handed_in_fat_tree() -> None:
    network = BACKENDS["congestion_aware"](simpy.Environment(), CASES["fat_tree4"][0], "<t>", None)
    g = network.graph
    path = [network.route(0, 15)[0].src] + [lk.dst for lk in network.route(0, 15)]
    assert len(path) == 7 and nx.is_path(g, path)  # host, edge, agg, core, agg, edge, host
    assert g.nodes[path[3]]["label"].startswith("core")
    assert len(network.route(0, 1)) == 2  # two hosts of one edge switch
    assert g.edges[0, path[1]]["bandwidth_gbps"] == 100.0


def test_unaware_backend_imports_networkx_only_for_the_graph() -> None:
    code = ("import sys, simpy\n"
            "from simpy_astra.network import BACKENDS\n"
            "from simpy_astra.topologies import Ring, Switch\n"
            "net = BACKENDS['congestion_unaware'](simpy.Environment(), [Ring(4, 50, 500), Switch(2, 50, 500)], 'x')\n"
            "net.delay_ns(0, 7, 1 << 20)\n"
            "assert 'networkx' not in sys.modules, 'imported too early'\n"
            "assert net.graph.number_of_edges() == 2 * 8 + 4 * 4\n"
            "assert 'networkx' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_folded_run_gives_the_whole_networks_graph(tmp_path) -> None:
    from simpy_astra.folding.network import FoldedNetwork
    from simpy_astra.workloads.chakra import make_node
    from simpy_astra.workloads.chakra.schema import ALL_REDUCE, COMM_COLL_NODE
    from tests.sim_helpers import net, run_sim

    coll = make_node(1, "ar", COMM_COLL_NODE, attrs={"comm_type": ALL_REDUCE, "comm_size": 1 << 20})
    _, sim = run_sim(tmp_path, [[coll]] * 8, net("Ring", 8), fold=True)
    assert isinstance(sim.network, FoldedNetwork)  # only representatives ran ...
    assert sim.network.graph.number_of_nodes() == 8  # ... but the graph is every NPU's
    assert sim.network.graph.number_of_edges() == 16
