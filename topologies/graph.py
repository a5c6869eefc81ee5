"""A topology given as an explicit graph: NPUs, named switches, links with their own speeds.

Lets a fat-tree, a DGX-like box or any irregular fabric be described in the network YAML
without code (beyond ASTRA-sim, whose files never name it)::

    topology: [Graph]
    npus_count: [8]
    bandwidth: [50]          # GB/s of links that do not give their own
    latency: [500]           # ns of links that do not give their own
    graph:
      switches: [leaf0, leaf1, spine0, spine1]
      links:                 # both directions unless `directed: true`
        - [0, leaf0]
        - {between: [leaf0, spine0], bandwidth: 200, latency: 100}
        - {between: [3, leaf1], bandwidth: 25, directed: true}
      routing: shortest_path # or ecmp, or spray (packet backend: every packet of a flow
                             # on the next equal path; other backends: as ecmp)
      routes:                # optional: these pairs take exactly this path
        - [0, leaf0, spine1, leaf1, 5]

NPUs are ``0 .. npus_count-1``; switch ``k`` of ``switches`` is device ``npus_count + k``.

Routing picks, for each (src, dst) pair, among the **least-cost paths**: a path's cost is the
sum of its links' latencies (compared in whole picoseconds, so 0.1 + 0.2 ns ties with 0.3 ns),
and among equal latency the fewest links. So a high-latency global link is crossed only when
no cheaper way exists, and on uniform links this is the fewest-link path. Then
``shortest_path`` takes the least-cost path whose device sequence is smallest (deterministic
and easy to predict); ``ecmp`` spreads (src, dst) pairs over all least-cost paths by
``(src * npus_count + dst) mod #paths`` (paths sorted by device sequence); ``spray`` sprays
each flow's packets evenly over all least-cost paths on the packet backend
(:meth:`GraphTopology.routes`) and acts as ``ecmp`` on the others, which move whole messages.
A pair listed in ``routes`` takes exactly that path, whatever it costs.
The congestion-unaware backend charges a route ``sum(link latencies) + bytes / slowest link
bandwidth``, which for uniform links is the reference's ``hops * latency + bytes / bandwidth``.

A ``networkx.DiGraph`` becomes the same spec through :func:`spec_from_networkx` (the
network YAML's ``topology: {networkx: pkg.mod:build}``, ``Simulation(..., topology=G)``) or
:func:`from_networkx`.
"""

from __future__ import annotations

import heapq
import numbers
from dataclasses import dataclass
from typing import Any

from simpy_astra.infra.horizon import finite_real
from simpy_astra.topologies.base import BasicTopology

ROUTING_MODES = ("shortest_path", "ecmp", "spray")


class GraphSpecError(ValueError):
    """A problem in the ``graph`` mapping; ``field`` is where (``graph.links[2]``)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field} {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class LinkSpec:
    src: int  # device index
    dst: int
    bandwidth_gbps: float | None  # None: the dimension's default
    latency_ns: float | None


@dataclass(frozen=True)
class GraphSpec:
    """The validated ``graph`` mapping with devices turned into indices."""

    switches: tuple[str, ...]
    links: tuple[LinkSpec, ...]  # one per direction
    routing: str
    routes: tuple[tuple[int, ...], ...]

    @classmethod
    def parse(cls, data: Any, npus_count: int) -> GraphSpec:
        if not isinstance(data, dict):
            raise GraphSpecError("graph", "must be a mapping with 'links' (and 'switches', 'routing', 'routes')")
        unknown = set(data) - {"switches", "links", "routing", "routes"}
        if unknown:
            raise GraphSpecError("graph", f"has unknown key(s) {sorted(unknown)}; "
                                          f"allowed: switches, links, routing, routes")
        switches = data.get("switches", []) or []
        if not isinstance(switches, list) or not all(isinstance(s, str) and s for s in switches):
            raise GraphSpecError("graph.switches", "must be a list of switch names (strings), e.g. [leaf0, spine0]")
        if len(set(switches)) != len(switches):
            raise GraphSpecError("graph.switches", "names a switch twice")
        index = {name: npus_count + k for k, name in enumerate(switches)}

        def device(value: Any, where: str) -> int:
            if isinstance(value, bool):
                pass
            elif isinstance(value, int) and 0 <= value < npus_count:
                return value
            elif isinstance(value, str) and value in index:
                return index[value]
            raise GraphSpecError(where, f"names {value!r}, which is neither an NPU 0..{npus_count - 1} "
                                        f"nor a switch listed in graph.switches")

        def number(value: Any, where: str, strict: bool) -> float:
            if not finite_real(value) or (value <= 0 if strict else value < 0):
                raise GraphSpecError(where, f"must be a finite number {'> 0' if strict else '>= 0'} (got {value!r})")
            return float(value)

        raw_links = data.get("links")
        if not isinstance(raw_links, list) or not raw_links:
            raise GraphSpecError("graph.links", "must be a non-empty list of links, e.g. [[0, leaf0], ...]")
        links: dict[tuple[int, int], LinkSpec] = {}
        for i, item in enumerate(raw_links):
            where = f"graph.links[{i}]"
            bw = lat = None
            directed = False
            if isinstance(item, list):
                ends = item
            elif isinstance(item, dict):
                extra = set(item) - {"between", "bandwidth", "latency", "directed"}
                if extra:
                    raise GraphSpecError(where, f"has unknown key(s) {sorted(extra)}; "
                                                f"allowed: between, bandwidth, latency, directed")
                ends = item.get("between")
                if "bandwidth" in item:
                    bw = number(item["bandwidth"], f"{where}.bandwidth", strict=True)
                if "latency" in item:
                    lat = number(item["latency"], f"{where}.latency", strict=False)
                directed = item.get("directed", False)
                if not isinstance(directed, bool):
                    raise GraphSpecError(f"{where}.directed", f"must be true or false (got {directed!r})")
            else:
                ends = None
            if not isinstance(ends, list) or len(ends) != 2:
                raise GraphSpecError(where, "must be [a, b] or {between: [a, b], bandwidth: GB/s, "
                                            "latency: ns, directed: false}")
            a, b = device(ends[0], where), device(ends[1], where)
            if a == b:
                raise GraphSpecError(where, "links a device to itself")
            for u, v in ((a, b),) if directed else ((a, b), (b, a)):
                if (u, v) in links:
                    raise GraphSpecError(where, f"repeats the link {ends[0]!r} -> {ends[1]!r}")
                links[(u, v)] = LinkSpec(u, v, bw, lat)

        linked = {device for pair in links for device in pair}
        idle = next((name for name in switches if index[name] not in linked), None)
        if idle is not None:  # a switch left out of the links (a typo in them) was dropped in silence
            raise GraphSpecError("graph.switches", f"lists {idle!r}, which no link in graph.links names; link it, "
                                                   f"or remove it")
        routing = data.get("routing", "shortest_path")
        if routing not in ROUTING_MODES:
            raise GraphSpecError("graph.routing", f"must be one of {', '.join(ROUTING_MODES)} (got {routing!r})")

        routes = []
        for i, path in enumerate(data.get("routes", []) or []):
            where = f"graph.routes[{i}]"
            if not isinstance(path, list) or len(path) < 2:
                raise GraphSpecError(where, "must be a list of devices from an NPU to another NPU")
            hops = [device(v, where) for v in path]
            if hops[0] >= npus_count or hops[-1] >= npus_count or hops[0] == hops[-1]:
                raise GraphSpecError(where, "must start and end at two different NPUs")
            if len(set(hops)) != len(hops):
                raise GraphSpecError(where, "visits a device twice")
            for u, v in zip(hops, hops[1:], strict=False):
                if (u, v) not in links:
                    raise GraphSpecError(where, f"uses a link {u} -> {v} that graph.links does not have")
            routes.append(tuple(hops))
        pairs = [(r[0], r[-1]) for r in routes]
        if len(set(pairs)) != len(pairs):
            raise GraphSpecError("graph.routes", "gives two routes for the same (source, destination)")
        return cls(tuple(switches), tuple(links.values()), routing, tuple(routes))


class GraphTopology(BasicTopology):
    """One dimension whose devices and links come from a :class:`GraphSpec`."""

    name = "Graph"

    def __init__(self, npus_count: int, bandwidth_gbps: float, latency_ns: float, spec: GraphSpec) -> None:
        super().__init__(npus_count, bandwidth_gbps, latency_ns)
        import networkx as nx  # here, not at module level: most runs have no Graph dimension

        self.spec = spec
        self._g = nx.DiGraph()
        self._g.add_nodes_from(range(npus_count + len(spec.switches)))
        self._params: dict[tuple[int, int], tuple[float, float]] = {}
        #: device -> [(next device, link latency in whole picoseconds)]: the routing costs
        self._out: dict[int, list[tuple[int, int]]] = {d: [] for d in self._g.nodes}
        for link in spec.links:
            bw = bandwidth_gbps if link.bandwidth_gbps is None else link.bandwidth_gbps
            lat = latency_ns if link.latency_ns is None else link.latency_ns
            self._params[(link.src, link.dst)] = (bw, lat)
            self._g.add_edge(link.src, link.dst)
            self._out[link.src].append((link.dst, round(lat * 1000)))
        self._pinned = {(r[0], r[-1]) for r in spec.routes}
        self._routes: dict[tuple[int, int], list[int]] = {(r[0], r[-1]): list(r) for r in spec.routes}
        self._trees: dict[int, dict[int, list[int]]] = {}
        for npu in range(npus_count):
            missing = set(range(npus_count)) - nx.descendants(self._g, npu) - {npu}
            if missing:
                raise GraphSpecError("graph.links", f"leave NPU {npu} with no path to NPU {min(missing)}; "
                                                    f"add links so every NPU reaches every other")

    def device_label(self, device: int) -> int | str:
        return device if device < self.npus_count else self.spec.switches[device - self.npus_count]

    def links(self) -> list[tuple[int, int]]:
        return list(self._params)

    def link_params(self, src: int, dst: int) -> tuple[float, float]:
        return self._params[(src, dst)]

    def _predecessors(self, src: int) -> dict[int, list[int]]:
        """Dijkstra from ``src`` on (summed latency ps, links): each device's predecessors on
        its least-cost paths. Exact (integer) costs, so equal-cost paths are found as equal."""
        preds = self._trees.get(src)
        if preds is None:
            best: dict[int, tuple[int, int]] = {src: (0, 0)}
            preds = {src: []}
            heap = [(0, 0, src)]
            done: set[int] = set()
            while heap:
                cost_ps, hops, u = heapq.heappop(heap)
                if u in done:
                    continue
                done.add(u)
                for v, link_ps in self._out[u]:
                    key = (cost_ps + link_ps, hops + 1)
                    old = best.get(v)
                    if old is None or key < old:
                        best[v], preds[v] = key, [u]
                        heapq.heappush(heap, (*key, v))
                    elif key == old:
                        preds[v].append(u)
            self._trees[src] = preds
        return preds

    def least_cost_paths(self, src: int, dst: int) -> list[list[int]]:
        """Every path from ``src`` to ``dst`` of least summed latency and, among those, fewest
        links, sorted by device sequence (what ``shortest_path``, ``ecmp`` and ``spray`` pick from)."""
        preds = self._predecessors(src)
        paths: list[list[int]] = []
        stack = [[dst]]
        while stack:  # walk the predecessor DAG back from dst; every walk reaches src
            tail = stack.pop()
            if tail[-1] == src:
                paths.append(tail[::-1])
            else:
                stack.extend(tail + [u] for u in preds[tail[-1]])
        return sorted(paths)

    def route(self, src: int, dst: int) -> list[int]:
        path = self._routes.get((src, dst))
        if path is None:
            paths = self.least_cost_paths(src, dst)
            pick = 0 if self.spec.routing == "shortest_path" else (src * self.npus_count + dst) % len(paths)
            path = self._routes[(src, dst)] = paths[pick]
        return path

    @property
    def sprays(self) -> bool:  # type: ignore[override]
        """``routing: spray`` (see BasicTopology)."""
        return self.spec.routing == "spray"

    def routes(self, src: int, dst: int) -> list[list[int]]:
        """Every path a flow's packets take: all least-cost paths when spraying (a fixed
        route in ``routes`` still wins), else the one :meth:`route`."""
        if self.spec.routing != "spray" or (src, dst) in self._pinned:
            return [self.route(src, dst)]
        return self.least_cost_paths(src, dst)

    def hops(self, src: int, dst: int) -> int:
        return len(self.route(src, dst)) - 1

    def path_profile(self, src: int, dst: int) -> tuple[float, float]:
        path = self.route(src, dst)
        params = [self._params[(u, v)] for u, v in zip(path, path[1:], strict=False)]
        return sum(lat for _, lat in params), min(bw for bw, _ in params)


def spec_from_networkx(g: Any, routing: str | None = None,
                       routes: list[list[Any]] | None = None) -> tuple[int, GraphSpec]:
    """(NPU count, :class:`GraphSpec`) of a ``networkx.DiGraph``; :class:`GraphSpecError` names
    the node, edge or route at fault (its ``field``: ``edge ('r0', 'r1')``, ``routes[2]``;
    ``graph`` for the whole graph, ``value`` when ``g`` is no DiGraph).

    NPUs are the int nodes ``0..N-1`` not marked ``kind: switch``; every other node is a
    switch, named ``str(node)``. Each directed edge is a link and must carry ``bandwidth_gbps``
    (> 0) and ``latency_ns`` (>= 0); an undirected cable needs both edges. ``routing``
    (default ``G.graph["routing"]``, else ``shortest_path``) and ``routes`` (default
    ``G.graph["routes"]``: node sequences, each from an NPU to another NPU along edges of
    ``g``) are those of the YAML ``graph`` mapping."""
    # deferred: networkx is an optional extra; only networkx-built topologies need it
    import networkx as nx

    if not isinstance(g, nx.DiGraph) or g.is_multigraph():
        kind = type(g).__name__
        fix = " (G.to_directed() makes one)" if isinstance(g, nx.Graph) and not g.is_multigraph() else ""
        raise GraphSpecError("value", f"is a {kind}, not a networkx.DiGraph{fix}")
    for node, kind in g.nodes(data="kind"):
        if kind not in (None, "npu", "switch"):
            raise GraphSpecError(f"node {node!r}", f"has kind {kind!r}; it must be 'npu', 'switch' or absent")
    npus = sorted(int(n) for n, kind in g.nodes(data="kind") if isinstance(n, numbers.Integral)
                  and not isinstance(n, bool) and kind != "switch")
    npu_set = set(npus)
    odd = next((n for n, kind in g.nodes(data="kind") if kind == "npu" and n not in npu_set), None)
    if odd is not None:
        raise GraphSpecError(f"node {odd!r}", "is marked kind: npu, but NPUs are the int nodes 0..N-1")
    if not npus or npus != list(range(len(npus))):
        gap = next((i for i, n in enumerate(npus) if n != i), len(npus))
        raise GraphSpecError("graph", f"has NPUs {npus[:6]}{'...' if len(npus) > 6 else ''}; NPUs must be the "
                                      f"int nodes 0..N-1 (NPU {gap} is missing); mark other nodes kind: switch")
    switches = [n for n in g.nodes if n not in npu_set]
    names: dict[Any, int | str] = {n: str(n) for n in switches}
    if len(set(names.values())) != len(names):
        raise GraphSpecError("graph", "has two switches whose names (str(node)) are equal")
    names.update((n, int(n)) for n in g.nodes if n in npu_set)  # an NPU is its int id
    links = []
    for u, v, data in g.edges(data=True):
        where = f"edge ({u!r}, {v!r})"
        if u == v:
            raise GraphSpecError(where, "links a node to itself")
        for key, strict, unit in (("bandwidth_gbps", True, "GB/s"), ("latency_ns", False, "ns")):
            rule = "> 0" if strict else ">= 0"
            if key not in data:
                raise GraphSpecError(where, f"has no {key}; every edge needs {key}, a number {rule} ({unit})")
            value = data[key]
            if not finite_real(value) or (value <= 0 if strict else value < 0):
                raise GraphSpecError(where, f"has {key} {value!r}; it must be a finite number {rule} ({unit})")
        links.append({"between": [names[u], names[v]], "directed": True,
                      "bandwidth": float(data["bandwidth_gbps"]), "latency": float(data["latency_ns"])})
    for npu in npus:
        missing = npu_set - nx.descendants(g, npu) - {npu}
        if missing:
            raise GraphSpecError("graph", f"has no path from NPU {npu} to NPU {min(missing)}; every NPU "
                                          f"must reach every other along directed edges")
    routing = g.graph.get("routing", "shortest_path") if routing is None else routing
    if routing not in ROUTING_MODES:
        raise GraphSpecError("routing", f"must be one of {', '.join(ROUTING_MODES)} (got {routing!r})")
    routes = g.graph.get("routes", []) if routes is None else routes
    if not isinstance(routes, list | tuple):
        raise GraphSpecError("routes", f"must be a list of paths, each a list of nodes (got {routes!r})")
    pinned: list[list[Any]] = []
    pairs: set[tuple[Any, Any]] = set()
    for i, path in enumerate(routes):
        where = f"routes[{i}]"
        if not isinstance(path, list | tuple) or len(path) < 2:
            raise GraphSpecError(where, f"must be a list of nodes from an NPU to another NPU (got {path!r})")
        path = list(path)
        unknown = next((n for n in path if not _has_node(g, n)), None)
        if unknown is not None:
            raise GraphSpecError(where, f"names {unknown!r}, which is not a node of the graph")
        if path[0] not in npu_set or path[-1] not in npu_set or path[0] == path[-1]:
            raise GraphSpecError(where, f"goes from {path[0]!r} to {path[-1]!r}; a route must start and end "
                                        f"at two different NPUs")
        if len(set(path)) != len(path):
            raise GraphSpecError(where, "visits a node twice")
        gap = next(((u, v) for u, v in zip(path, path[1:], strict=False) if not g.has_edge(u, v)), None)
        if gap is not None:
            raise GraphSpecError(where, f"uses the edge ({gap[0]!r}, {gap[1]!r}), which the graph does not have")
        if (path[0], path[-1]) in pairs:
            raise GraphSpecError(where, f"is a second route from NPU {path[0]} to NPU {path[-1]}")
        pairs.add((path[0], path[-1]))
        pinned.append([names[n] for n in path])
    spec = GraphSpec.parse({"switches": [names[s] for s in switches], "links": links, "routing": routing,
                            "routes": pinned}, len(npus))
    return len(npus), spec


def _has_node(g: Any, node: Any) -> bool:
    try:
        return node in g
    except TypeError:  # an unhashable "node" (a list)
        return False


def networkx_dimension_values(spec: GraphSpec) -> tuple[float, float]:
    """The dimension-wide (GB/s, ns) of a spec whose links all give their own (a networkx
    graph's), which no link uses: the slowest bandwidth and the largest latency, what
    horizon checks and messages quote."""
    return (min(link.bandwidth_gbps for link in spec.links if link.bandwidth_gbps is not None),
            max(link.latency_ns for link in spec.links if link.latency_ns is not None))


def from_networkx(g: Any, routing: str | None = None, routes: list[list[Any]] | None = None) -> GraphTopology:
    """A ``networkx.DiGraph`` handed in from Python as a one-dimension network (see
    :func:`spec_from_networkx` for what the graph must hold); ``routes`` pins paths."""
    npus_count, spec = spec_from_networkx(g, routing, routes)
    return GraphTopology(npus_count, *networkx_dimension_values(spec), spec)
