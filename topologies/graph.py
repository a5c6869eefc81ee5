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
Routing ``shortest_path`` takes, among the paths with the fewest links, the one whose device
sequence is smallest (so it is deterministic and easy to predict); ``ecmp`` spreads
(src, dst) pairs over all fewest-link paths by ``(src * npus_count + dst) mod #paths``;
``spray`` sprays each flow's packets evenly over all fewest-link paths on the packet backend
(:meth:`GraphTopology.routes`) and acts as ``ecmp`` on the others, which move whole messages.
The congestion-unaware backend charges a route ``sum(link latencies) + bytes / slowest link
bandwidth``, which for uniform links is the reference's ``hops * latency + bytes / bandwidth``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if not ok or (value <= 0 if strict else value < 0):
                raise GraphSpecError(where, f"must be a number {'> 0' if strict else '>= 0'} (got {value!r})")
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
        for link in spec.links:
            bw = bandwidth_gbps if link.bandwidth_gbps is None else link.bandwidth_gbps
            lat = latency_ns if link.latency_ns is None else link.latency_ns
            self._params[(link.src, link.dst)] = (bw, lat)
            self._g.add_edge(link.src, link.dst)
        self._routes: dict[tuple[int, int], list[int]] = {(r[0], r[-1]): list(r) for r in spec.routes}
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

    def route(self, src: int, dst: int) -> list[int]:
        path = self._routes.get((src, dst))
        if path is None:
            import networkx as nx

            paths = sorted(nx.all_shortest_paths(self._g, src, dst))
            pick = 0 if self.spec.routing == "shortest_path" else (src * self.npus_count + dst) % len(paths)
            path = self._routes[(src, dst)] = paths[pick]
        return path

    def routes(self, src: int, dst: int) -> list[list[int]]:
        """Every path a flow's packets take: all fewest-link paths when spraying (a fixed
        route in ``routes`` still wins), else the one :meth:`route`."""
        if self.spec.routing != "spray" or (src, dst) in {(r[0], r[-1]) for r in self.spec.routes}:
            return [self.route(src, dst)]
        import networkx as nx

        return sorted(nx.all_shortest_paths(self._g, src, dst))

    def hops(self, src: int, dst: int) -> int:
        return len(self.route(src, dst)) - 1

    def path_profile(self, src: int, dst: int) -> tuple[float, float]:
        path = self.route(src, dst)
        params = [self._params[(u, v)] for u, v in zip(path, path[1:], strict=False)]
        return sum(lat for _, lat in params), min(bw for bw, _ in params)


def from_networkx(g: Any, bandwidth_gbps: float = 50.0, latency_ns: float = 500.0,
                  routing: str = "shortest_path") -> GraphTopology:
    """A ``networkx.DiGraph`` handed in from Python as a one-dimension network.

    Its NPUs are the nodes ``0..N-1`` (every node that is an int in that range and not marked
    ``kind: switch``); every other node is a switch, named ``str(node)``. Each directed edge
    is a link with its ``bandwidth_gbps`` and ``latency_ns`` attributes (the defaults given
    here if it has none); an undirected pair needs both edges, as in a DiGraph."""
    nodes = list(g.nodes)
    npus = sorted(n for n in nodes if isinstance(n, int) and not isinstance(n, bool)
                  and g.nodes[n].get("kind", "npu") != "switch")
    if not npus or npus != list(range(len(npus))):
        raise GraphSpecError("graph", f"NPUs must be the nodes 0..N-1 (got {npus[:8]}...)")
    switches = [n for n in nodes if n not in set(npus)]
    names = {n: str(n) for n in switches}
    if len(set(names.values())) != len(names):
        raise GraphSpecError("graph", "has two switches with the same name")
    links = []
    for u, v, data in g.edges(data=True):
        link: dict[str, Any] = {"between": [names.get(u, u), names.get(v, v)], "directed": True}
        if "bandwidth_gbps" in data:
            link["bandwidth"] = data["bandwidth_gbps"]
        if "latency_ns" in data:
            link["latency"] = data["latency_ns"]
        links.append(link)
    spec = GraphSpec.parse({"switches": [names[s] for s in switches], "links": links, "routing": routing},
                           len(npus))
    return GraphTopology(len(npus), bandwidth_gbps, latency_ns, spec)
