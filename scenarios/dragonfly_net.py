"""A dragonfly as a networkx.DiGraph, for ``topology: {networkx: dragonfly_net:build}``.

``groups`` groups of ``routers`` routers, the routers of a group fully connected by local
links; one global link between every two groups; ``npus_per_router`` NPUs on each router.
Group ``i``'s link to group ``j`` leaves from router ``(j - i) mod groups - 1`` (mod
``routers``), so with ``routers = groups - 1`` every router has one global link. Every cable
is two directed edges carrying ``bandwidth_gbps`` and ``latency_ns``.
"""

from __future__ import annotations

import networkx as nx

NPU_LINK = (100.0, 50.0)  # (GB/s, ns): NPU <-> its router
LOCAL_LINK = (200.0, 100.0)  # router <-> router of the same group
GLOBAL_LINK = (50.0, 1000.0)  # between groups: slow and long


def build(groups: int = 5, routers: int = 4, npus_per_router: int = 2) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(groups * routers * npus_per_router), kind="npu")

    def cable(u: object, v: object, link: tuple[float, float]) -> None:
        for a, b in ((u, v), (v, u)):
            g.add_edge(a, b, bandwidth_gbps=link[0], latency_ns=link[1])

    for grp in range(groups):
        names = [f"g{grp}r{r}" for r in range(routers)]
        g.add_nodes_from(names, kind="switch")
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                cable(a, b, LOCAL_LINK)
    for i in range(groups):
        for j in range(i + 1, groups):
            k = j - i
            cable(f"g{i}r{(k - 1) % routers}", f"g{j}r{(groups - k - 1) % routers}", GLOBAL_LINK)
    for npu in range(groups * routers * npus_per_router):
        router = npu // npus_per_router
        cable(npu, f"g{router // routers}r{router % routers}", NPU_LINK)
    return g
