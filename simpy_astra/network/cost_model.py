"""What a network costs: links, NICs and switch ports priced by bandwidth and radix.

Every dimension of the network sits on a *tier* of the machine (``tile``, ``package``,
``node``, ``pod``: on-chip, within a package, within a server, between servers). Each
topology lists the parts of one instance of its dimension (``BasicTopology.cost_parts``:
``count`` links of ``bandwidth`` GB/s, switches of ``radix`` ports, NICs), and a part costs

    price[kind][tier] x count x bandwidth (GB/s) x radix (switches; 1 otherwise)

summed over the ``total_npus / npus_count[d]`` instances of every dimension ``d``. This is
ASTRA-sim's analytical cost model (``[CostModel] Adding (inter-Node, Link) bandwidth: ...,
radix: ..., count: ... (added cost: $...)``) with its default price table, in dollars per
GB/s (per port for switches):

    =======  =====  =======  =====  =====
    tier     tile   package  node   pod
    =======  =====  =======  =====  =====
    link     1.0    4.0      4.0    7.4
    switch   --     13.0     13.0   23.7
    nic      --     0.0      0.0    47.8
    =======  =====  =======  =====  =====

(``--``: ASTRA-sim prices no switch or NIC on a tile; such a network reports no cost, with
the reason, unless a ``cost:`` block gives a price.) Dimensions take tiers by their count as
ASTRA-sim's newer congestion-aware cost model does: one dimension is ``[package]``, two
``[package, pod]``, three ``[package, node, pod]``, four ``[tile, package, node, pod]`` (more
put extra ``tile`` dimensions first).

For one-dimensional Ring, FullyConnected and Switch networks the counts are ASTRA-sim's
exactly (a ring of n: n links; fully connected: n(n-1)/2; a switch: n links, n NICs and one
switch of radix n). For stacked dimensions we count real instances (a Switch dimension of
size n has ``total/n`` switches of radix n); ASTRA-sim instead priced one switch of radix
``product of sizes up to d``. ``Line`` has n-1 links; a ``Graph`` dimension is read off its
links: one cable per connected pair of devices, a port per cable on each switch, a NIC per
NPU-to-switch cable.

A cluster preset's network is priced as its machine (:func:`machine`), whatever the job's
layout. A ``cost:`` block (in the network YAML or a scenario; the scenario's wins) overrides any of
this; a number instead of a per-tier mapping sets every tier::

    cost:
      tiers: [node, pod]          # tier of each dimension, dimension 0 first
      link: {pod: 10.0}           # $ per GB/s per link
      switch: 20.0                # $ per GB/s per port, every tier
      nic: {pod: 50.0}            # $ per GB/s per NIC
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from simpy_astra.topologies import build as build_topology

TIERS = ("tile", "package", "node", "pod")
KINDS = ("link", "switch", "nic")
_KIND_LABEL = {"link": "Link", "switch": "Switch", "nic": "Nic"}
#: the dearest price taken ($ per GB/s): times any bandwidth, count and radix a network may
#: have it stays a finite total (1e308 gave "$inf" and JSON's non-standard Infinity)
MAX_PRICE_USD = 1e12

#: ASTRA-sim's analytical backend's prices ($ per GB/s; per port for switches); None: not offered
DEFAULT_PRICES: dict[str, dict[str, float | None]] = {
    "link": {"tile": 1.0, "package": 4.0, "node": 4.0, "pod": 7.4},
    "switch": {"tile": None, "package": 13.0, "node": 13.0, "pod": 23.7},
    "nic": {"tile": None, "package": 0.0, "node": 0.0, "pod": 47.8},
}


class CostSpecError(ValueError):
    """A problem in a ``cost:`` block; ``field`` is where (``cost.link.pod``)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field} {problem}")
        self.field = field
        self.problem = problem


def default_tiers(num_dims: int) -> tuple[str, ...]:
    """Tier of each dimension when the ``cost:`` block names none."""
    last = {1: ("package",), 2: ("package", "pod"), 3: ("package", "node", "pod")}
    if num_dims in last:
        return last[num_dims]
    return ("tile",) * (num_dims - 3) + ("package", "node", "pod")


@dataclass(frozen=True)
class CostPrices:
    """A validated ``cost:`` block: only what it sets (merged over the defaults when used)."""

    tiers: tuple[str, ...] | None = None
    prices: tuple[tuple[str, str, float], ...] = ()  # (kind, tier, $ per GB/s)
    #: the kinds priced tier by tier (a mapping, not one number for every tier): their tiers
    #: were named, so one the network lacks is a price nothing reads (:meth:`unused`)
    by_tier: frozenset[str] = field(default=frozenset(), compare=False)

    @classmethod
    def parse(cls, data: Any, where: str = "cost") -> CostPrices:
        if data is None or data == {}:  # as an empty remote_memory is: a block that sets nothing
            raise CostSpecError(where, "is empty; write a price, e.g. {link: {pod: 10.0}} (tiers, link, switch or "
                                       "nic), or leave it out for ASTRA-sim's table")
        if not isinstance(data, dict):
            raise CostSpecError(where, "must be a mapping, e.g. {tiers: [node, pod], link: {pod: 10}}")
        unknown = set(data) - {"tiers", *KINDS}
        if unknown:
            raise CostSpecError(where, f"has unknown key(s) {sorted(map(str, unknown))}; allowed: tiers, "
                                       f"{', '.join(KINDS)}")
        tiers = None
        if "tiers" in data:
            raw = data["tiers"]
            if not isinstance(raw, list) or not raw or not all(t in TIERS for t in raw):
                raise CostSpecError(f"{where}.tiers", f"must list one of {', '.join(TIERS)} per network "
                                                      f"dimension (got {raw!r})")
            tiers = tuple(raw)
        prices: dict[tuple[str, str], float] = {}
        for kind in KINDS:
            if kind not in data:
                continue
            raw = data[kind]
            per_tier = dict.fromkeys(TIERS, raw) if not isinstance(raw, dict) else raw
            for tier, value in per_tier.items():
                at = f"{where}.{kind}" if not isinstance(raw, dict) else f"{where}.{kind}.{tier}"
                if tier not in TIERS:
                    raise CostSpecError(at, f"is not a tier; use {', '.join(TIERS)}")
                ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
                if not ok or not 0 <= value <= MAX_PRICE_USD:
                    raise CostSpecError(at, f"must be a price from 0 to {MAX_PRICE_USD:g} in dollars per GB/s "
                                            f"(got {value!r})")
                prices[(kind, tier)] = float(value)
        return cls(tiers, tuple((k, t, p) for (k, t), p in prices.items()),
                   frozenset(kind for kind in KINDS if isinstance(data.get(kind), dict)))

    def over(self, base: CostPrices | None) -> CostPrices:
        """This block's settings, with ``base``'s where this one is silent."""
        if base is None:
            return self
        merged = {(k, t): p for k, t, p in base.prices}
        merged.update({(k, t): p for k, t, p in self.prices})
        return CostPrices(self.tiers or base.tiers, tuple((k, t, p) for (k, t), p in merged.items()),
                          self.by_tier | base.by_tier)

    def unused(self, tiers: tuple[str, ...], where: str) -> list[str]:
        """One warning per price this block names for a tier none of ``tiers`` is: nothing would
        read it. A number for every tier is not warned of."""
        return [f"{where}: cost.{kind}.{tier} prices the {tier} tier, which no dimension of the network is on "
                f"(its tiers: {', '.join(tiers)}), so it is unused; name it in cost.tiers or remove it"
                for kind, tier, _ in self.prices if kind in self.by_tier and tier not in tiers]

    def price(self, kind: str, tier: str) -> float | None:
        for k, t, p in self.prices:
            if k == kind and t == tier:
                return p
        return DEFAULT_PRICES[kind][tier]


@dataclass(frozen=True)
class CostItem:
    """One ``[CostModel] Adding`` line: ``count`` parts of one kind on one dimension."""

    dim: int
    tier: str
    kind: str
    bandwidth_gbps: float
    radix: int
    count: int  # over every instance of the dimension
    unit_usd: float  # price per GB/s (per port)

    @property
    def cost_usd(self) -> float:
        return self.unit_usd * self.count * self.bandwidth_gbps * self.radix

    def line(self) -> str:
        return (f"[CostModel] Adding (inter-{self.tier.capitalize()}, {_KIND_LABEL[self.kind]}) bandwidth: "
                f"{self.bandwidth_gbps:g}, radix: {self.radix}, count: {self.count} "
                f"(added cost: ${self.cost_usd:g})")

    def as_dict(self) -> dict[str, Any]:
        return {"dim": self.dim, "tier": self.tier, "kind": self.kind, "bandwidth_gbps": self.bandwidth_gbps,
                "radix": self.radix, "count": self.count, "unit_usd": self.unit_usd,
                "cost_usd": round(self.cost_usd, 6)}


@dataclass
class NetworkCost:
    tiers: tuple[str, ...]
    items: list[CostItem] = field(default_factory=list)
    error: str | None = None  # why there is no total (a part the price table does not offer)

    @property
    def total_usd(self) -> float | None:
        if self.error is not None:
            return None
        return round(sum(i.cost_usd for i in self.items), 6)

    def by_kind(self) -> dict[str, float]:
        out = dict.fromkeys(KINDS, 0.0)
        for i in self.items:
            out[i.kind] += i.cost_usd
        return out

    def lines(self) -> list[str]:
        out = [i.line() for i in self.items]
        out.append(f"[CostModel] total network cost: ${self.total_usd:g}" if self.error is None
                   else f"[CostModel] no total: {self.error}")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"cost_usd": self.total_usd, "tiers": list(self.tiers), "error": self.error,
                "by_kind": {k: round(v, 6) for k, v in self.by_kind().items()},
                "items": [i.as_dict() for i in self.items]}


def machine(net):
    """The network to price: ``net``, or for a cluster preset's own network (``net.rails``)
    its machine, a node's GPUs on one NVSwitch and, past one node, a rail of the nodes for each
    GPU of a node: its dimensions are the job's parallel ones (tp, dp, pp), and the same two
    nodes priced otherwise for each layout (and a one-node job's NICs at the pod tier)."""
    rails = getattr(net, "rails", None)
    if rails is None:
        return net
    sizes = [rails.gpus_per_node] + ([rails.nodes] if rails.nodes > 1 else [])
    links = [(rails.nvlink_gbps, rails.nvlink_latency_ns), (rails.rail_gbps, rails.rail_latency_ns)][:len(sizes)]
    return replace(net, topology=("Switch",) * len(sizes), npus_count=tuple(sizes),
                   bandwidth_gbps=tuple(bw for bw, _ in links), latency_ns=tuple(lat for _, lat in links),
                   graph_specs=())


def tiers_for(net, prices: CostPrices | None = None) -> tuple[str, ...]:
    """Each dimension's tier; raises :class:`CostSpecError` if ``cost.tiers`` has the wrong length."""
    net = machine(net)
    tiers = (prices.tiers if prices is not None else None) or default_tiers(net.num_dims)
    if len(tiers) != net.num_dims:
        raise CostSpecError("cost.tiers", f"has {len(tiers)} entr{'y' if len(tiers) == 1 else 'ies'} but the network has {net.num_dims} "
                                          f"dimension(s); give one tier per dimension")
    return tiers


def network_cost(net, prices: CostPrices | None = None) -> NetworkCost:
    """Price ``net`` (a :class:`simpy_astra.config.NetworkConfig`); ``prices`` defaults to its
    own ``cost`` block."""
    prices = prices if prices is not None else net.cost
    net = machine(net)
    table = prices or CostPrices()
    tiers = tiers_for(net, table)
    result = NetworkCost(tiers)
    total = net.total_npus
    specs = net.graph_specs or (None,) * net.num_dims
    for dim, (name, n, bw, lat, spec) in enumerate(zip(net.topology, net.npus_count, net.bandwidth_gbps,
                                                         net.latency_ns, specs, strict=True)):
        instances = total // n
        topo = build_topology(name, n, bw, lat, spec, net.topology_field(dim))
        for part in topo.cost_parts():
            unit = table.price(part.kind, tiers[dim])
            if unit is None:
                result.error = result.error or (f"dimension {dim} ({name}, tier {tiers[dim]}) has {part.kind}s, which the "
                                f"price table does not price on a {tiers[dim]}; set cost.{part.kind}."
                                f"{tiers[dim]} or cost.tiers")
                continue
            result.items.append(CostItem(dim, tiers[dim], part.kind, part.bandwidth_gbps, part.radix,
                                         part.count * instances, unit))
    return result
