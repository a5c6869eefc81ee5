"""The physical network of every backend: devices, directed links and dimension-order routes.

One :class:`Fabric` per run, shared by the backends instead of each deriving it again:

* **devices** are plain ints (:data:`DeviceId`): NPUs ``0..N-1``, switches from ``N`` on. A
  one-dimensional network keeps its topology's numbering (ASTRA-sim's: the switch of an
  8-NPU Switch is 8, Graph switches follow the NPUs in the YAML's order); a stacked
  network numbers the switches of dimension 0's instances first, then dimension 1's, ...
  Reports name a device by :meth:`Fabric.label` (Graph switches by name);
* **links** (:meth:`Fabric.edges`) are every dimension instance's directed links, with
  that dimension's bandwidth and latency (a Graph link its own);
* **routes** (:meth:`Fabric.device_paths`) cross dimension 0 first, then 1, ... (XY on a
  mesh), each dimension by its topology's own route; computed once per pair and cached;
* the **graph** (:meth:`Fabric.graph`) is all of it as one ``networkx.DiGraph``: nodes
  with ``kind`` (``npu`` or ``switch``) and ``label``, edges with ``bandwidth_gbps``,
  ``latency_ns`` and ``dim``. It is built on first request only: networkx takes about
  0.3 s to import, which the closed-form backend must not pay unless someone asks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simpy_astra.infra.grid import Grid
from simpy_astra.topologies.base import BasicTopology

if TYPE_CHECKING:
    import networkx as nx

#: a device of the network: an NPU ``0..N-1`` or a switch ``N..``
DeviceId = int


@dataclass(frozen=True, slots=True)
class LinkStats:
    """What one directed link did in a run. ``src``/``dst`` are the devices' labels (ints
    for NPUs, names for named switches); the packet backend adds its largest queue and the
    time credits held it back (None on the other backends)."""

    src: int | str
    dst: int | str
    bytes: int
    busy_ns: float
    max_queue_bytes: int | None = None
    stall_ns: float | None = None


class Fabric:
    """Devices, links and routes of a (stacked) topology; see the module docstring."""

    def __init__(self, dims: list[BasicTopology]) -> None:
        if not dims:
            raise ValueError("a network needs at least one dimension")
        self.dims = dims
        self.grid = Grid([d.npus_count for d in dims])
        self.npus_count = self.grid.size
        self._switch_base: list[int] | None = None  # first global id of each dimension's switches
        self._per_instance: list[int] = []  # switches in one instance of each dimension
        self._paths: dict[tuple[int, int, bool], list[list[DeviceId]]] = {}
        self._graph: nx.DiGraph | None = None

    # ------------------------------------------------------------------ devices
    def _switch_layout(self) -> list[int]:
        if self._switch_base is None:
            base, out = self.npus_count, []
            self._per_instance = [self.switches_per_instance(topo) for topo in self.dims]
            for topo, per in zip(self.dims, self._per_instance, strict=True):
                out.append(base)
                base += self.instances(topo) * per
            self._switch_base = out
        return self._switch_base

    def instances(self, topo: BasicTopology) -> int:
        """How many copies of a dimension the stack holds (one per other coordinates)."""
        return self.npus_count // topo.npus_count

    @staticmethod
    def switches_per_instance(topo: BasicTopology) -> int:
        devices = max((max(u, v) for u, v in topo.links()), default=topo.npus_count - 1) + 1
        return devices - topo.npus_count

    def device(self, dim: int, base: int, local: int) -> DeviceId:
        """Global id of device ``local`` of the ``dim`` instance through NPU ``base``."""
        grid = self.grid
        n = grid.dims[dim]
        if local < n:
            return grid.moved(base, dim, local)
        if len(self.dims) == 1:
            return local
        stride = grid.strides[dim]
        first = grid.moved(base, dim, 0)
        instance = first % stride + (first // (stride * n)) * stride
        first_id = self._switch_layout()[dim]
        return first_id + instance * self._per_instance[dim] + local - n

    def is_switch(self, device: DeviceId) -> bool:
        return device >= self.npus_count

    def locate(self, switch: DeviceId) -> tuple[int, int, int]:
        """(dimension, base NPU, local device) of a switch: the inverse of :meth:`device`
        (the base NPU is the instance's NPU with coordinate 0 in that dimension)."""
        if len(self.dims) == 1:
            return 0, 0, switch
        layout = self._switch_layout()
        dim = max(d for d, first in enumerate(layout) if first <= switch)
        instance, k = divmod(switch - layout[dim], self._per_instance[dim])
        stride, n = self.grid.strides[dim], self.grid.dims[dim]
        return dim, instance % stride + (instance // stride) * stride * n, n + k

    def link_params(self, u: DeviceId, v: DeviceId) -> tuple[int, float, float]:
        """(dimension, bandwidth GB/s, latency ns) of the directed link ``u -> v`` (as
        :meth:`edges` gives it); KeyError if the fabric has no such link."""
        grid = self.grid
        if self.is_switch(u) or self.is_switch(v):
            dim, base, _ = self.locate(u if self.is_switch(u) else v)
        else:
            dim = grid.first_difference(u, v)
            base = None if dim is None else grid.moved(u, dim, 0)
        if dim is not None:
            local = [self._local(dim, base, x) for x in (u, v)]
            if None not in local and (local[0], local[1]) in set(self.dims[dim].links()):
                return (dim, *self.dims[dim].link_params(local[0], local[1]))
        raise self.no_link(u, v)

    def _local(self, dim: int, base: int, device: DeviceId) -> int | None:
        """``device``'s local id in the ``dim`` instance through ``base`` (None: not in it)."""
        if self.is_switch(device):
            d, b, k = self.locate(device)
            return k if (d, b) == (dim, base) else None
        grid = self.grid
        return grid.coord(device, dim) if grid.moved(device, dim, 0) == base else None

    def label(self, device: DeviceId) -> int | str:
        """How reports name a device: NPUs by id, switches of one dimension by their
        topology's label, switches of a stacked network by where they are."""
        if device < self.npus_count:
            return device
        if len(self.dims) == 1:
            return self.dims[0].device_label(device)
        dim, base, local = self.locate(device)
        return f"switch {self.dims[dim].device_label(local)} of dim {dim} at NPU {base}"

    # ------------------------------------------------------------------ links
    def no_link(self, u: Any, v: Any, ends: str = "out of") -> KeyError:
        """The error of a link (``ends="out of"``) or a device (``"into or out of"``) the
        network lacks, naming where ``u``'s links lead or which devices there are: a bare "no
        link 0 -> 2" left a co-simulation script's author guessing the names it takes."""
        label, edges = self.label, list(self.edges())
        heads = sorted({str(label(b)) for a, b, *_ in edges if u in (a, label(a))})
        last = max((max(a, b) for a, b, *_ in edges), default=0)
        switches = f", switches {self.npus_count}..{last}" if last >= self.npus_count else ""
        what = f"no link {u!r} -> {v!r} in this network" if ends == "out of" else \
            f"no link leads into or out of device {u!r}"
        if heads and ends == "out of":
            shown = ", ".join(heads[:8]) + (", ..." if len(heads) > 8 else "")
            return KeyError(f"{what}; links out of {u!r} lead to {shown}")
        return KeyError(f"{what}; devices are named by id (NPUs 0..{self.npus_count - 1}{switches}) or "
                        f"by a graph switch's label, as reports name them")

    def edges(self) -> Iterator[tuple[DeviceId, DeviceId, int, float, float]]:
        """Every directed link once as (from, to, dimension, bandwidth GB/s, latency ns):
        dimension by dimension, instance by instance, in the topology's link order."""
        grid = self.grid
        seen: set[tuple[DeviceId, DeviceId]] = set()
        for dim, topo in enumerate(self.dims):
            local_links = [(u, v, *topo.link_params(u, v)) for u, v in topo.links()]
            for base in range(grid.size):
                if grid.coord(base, dim):
                    continue  # one instance of this dimension per base NPU (coordinate 0)
                for u, v, bandwidth_gbps, latency_ns in local_links:
                    gu, gv = self.device(dim, base, u), self.device(dim, base, v)
                    if (gu, gv) not in seen:  # a 2-NPU ring names each pair twice
                        seen.add((gu, gv))
                        yield gu, gv, dim, bandwidth_gbps, latency_ns

    # ------------------------------------------------------------------ routes
    def device_paths(self, src: int, dst: int, spray: bool = False) -> list[list[DeviceId]]:
        """The devices a message from NPU ``src`` to ``dst`` visits, in dimension order.

        One path, unless ``spray`` and a dimension sprays (Graph ``routing: spray``): then
        path ``k`` takes alternative ``k mod m`` of every dimension with ``m`` of them."""
        key = (src, dst, spray)
        paths = self._paths.get(key)
        if paths is not None:
            return paths
        if src == dst:
            raise ValueError(f"NPU {src} cannot send to itself")
        legs: list[list[list[DeviceId]]] = []
        here, grid = src, self.grid
        for dim, topo in enumerate(self.dims):
            a, b = grid.coord(here, dim), grid.coord(dst, dim)
            if a == b:
                continue
            base = grid.moved(here, dim, 0)
            options = topo.routes(a, b) if spray else [topo.route(a, b)]
            legs.append([[self.device(dim, base, k) for k in local] for local in options])
            here = grid.moved(here, dim, b)
        count = max(len(options) for options in legs)
        paths = []
        for k in range(count):
            path = [src]
            for options in legs:
                path += options[k % len(options)][1:]
            paths.append(path)
        self._paths[key] = paths
        return paths

    # ------------------------------------------------------------------ the graph
    def graph(self, links: dict[tuple[DeviceId, DeviceId], Any] | None = None,
              switches: dict[DeviceId, Any] | None = None) -> nx.DiGraph:
        """The whole network as one ``networkx.DiGraph`` (built once). A link-level backend
        passes its live ``links`` and ``switches``: they become ``G.edges[u, v]["link"]``
        and ``G.nodes[s]["device"]``."""
        g = self._graph
        if g is None:
            # deferred: networkx is an optional extra; only this graph check needs it
            import networkx as nx

            g = self._graph = nx.DiGraph()
            g.add_nodes_from(range(self.npus_count), kind="npu")
            for u, v, dim, bandwidth_gbps, latency_ns in self.edges():
                for node in (u, v):
                    if node not in g:
                        g.add_node(node, kind="switch", label=self.label(node))
                g.add_edge(u, v, dim=dim, bandwidth_gbps=bandwidth_gbps, latency_ns=latency_ns)
        if links:
            for (u, v), link in links.items():
                g.edges[u, v]["link"] = link
        if switches:
            for s, proc in switches.items():
                g.nodes[s]["device"] = proc
        return g
