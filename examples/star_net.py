"""A fabric built in Python (docs/collectives.md, "Topologies"; simpy_astra/network/README.md,
"Handing in your own graph"): examples/star_send.yaml names it as star_net:star."""

import networkx as nx


def star(n=4, bandwidth_gbps=50.0, latency_ns=500.0):
    """n NPUs around one switch "sw", each on a cable (two directed edges)."""
    g = nx.DiGraph()
    g.add_node("sw", kind="switch")
    for npu in range(n):
        g.add_edge(npu, "sw", bandwidth_gbps=bandwidth_gbps, latency_ns=latency_ns)
        g.add_edge("sw", npu, bandwidth_gbps=bandwidth_gbps, latency_ns=latency_ns)
    return g
