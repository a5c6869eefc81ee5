"""The route of a message on a cluster preset's machine: NVSwitch inside a node, the rails of a
rail-optimised fat tree across nodes (cluster presets only; ASTRA-sim inputs never use it).

GPU ``g`` sits on node ``g // gpus_per_node`` at local index ``g % gpus_per_node`` (Megatron's
rank order), and its NIC is on rail ``g % gpus_per_node``. A pair is charged its route's summed
latency and its slowest link's bandwidth (the congestion-unaware rule for a multi-hop route);
a switch is two links (in and out), each with its latency, as in ASTRA-sim's Switch that the
presets' latencies were calibrated on. That fitted latency is each end's share of a message's
fixed cost (NIC, PCIe, NCCL's proxy, the one switch of the log's machine), so a route between
nodes pays two whatever switches it crosses: a spine route (GPU, NIC, leaf, spine, leaf, NIC,
GPU) pays the same two as a leaf's, its two more switch crossings (under a microsecond on
InfiniBand, against 22 us a message on the H100 preset) left out:

* same node: through the NVSwitch (2 x NVLink's latency, NVLink's bandwidth), whichever
  dimensions of the job's rank grid the two differ in;
* other node, same rail: through the rail's switch (2 x the rail's latency, the NIC's share of
  the node's scale-out bandwidth);
* other node, other rail: PXN, as NCCL sends it (``NCCL_PXN_DISABLE=0``, its default since
  2.12): over NVLink to the GPU of the source node on the destination's rail, then through that
  GPU's NIC, so the message never leaves its rail and never touches the spine (a spine route
  would share its up-links with every other rail's cross-rail traffic, which is why NCCL
  chose PXN): both latencies, at the rail's bandwidth;
* nodes under different leaf switches (``nodes_per_leaf``) cross the spine, whose share per
  rail is the rail's bandwidth divided by the fabric's ``oversubscription`` (1: a full fat tree),
  at the latency of the same pair under one leaf.

The rule depends only on whether the two GPUs differ in node, in local index and in leaf, so
any translation of the job's rank grid keeps every pair's delay while the leaves are uniform
(``symmetric``), which is what folding needs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rails:
    gpus_per_node: int
    nvlink_gbps: float  # GiB/s per direction, as the network's bandwidths
    nvlink_latency_ns: float
    rail_gbps: float  # one NIC's sustained share, GiB/s
    rail_latency_ns: float
    nodes: int
    nodes_per_leaf: int
    oversubscription: float = 1.0

    @property
    def symmetric(self) -> bool:
        """Every pair's delay is kept by translations of the rank grid (folding may apply)."""
        return self.oversubscription == 1 or self.nodes <= self.nodes_per_leaf

    def profile(self, src: int, dst: int) -> tuple[float, float]:
        """(latency ns, bandwidth GiB/s) of the route from GPU ``src`` to GPU ``dst``."""
        per_node = self.gpus_per_node
        node_a, local_a = divmod(src, per_node)
        node_b, local_b = divmod(dst, per_node)
        if node_a == node_b:
            return 2 * self.nvlink_latency_ns, self.nvlink_gbps
        latency = 2 * self.rail_latency_ns + (2 * self.nvlink_latency_ns if local_a != local_b else 0.0)
        return latency, self.rail_gbps_between(node_a, node_b)

    def links_crossed(self, pairs) -> set[str]:
        """Which kinds of link (``nvlink``, ``rail``) the routes of ``pairs`` (sender, receiver)
        cross, and so whose latencies they read (:meth:`profile`'s rule)."""
        crossed: set[str] = set()
        per_node = self.gpus_per_node
        for src, dst in pairs:
            node_a, local_a = divmod(src, per_node)
            node_b, local_b = divmod(dst, per_node)
            crossed.add("nvlink" if node_a == node_b else "rail")
            if node_a != node_b and local_a != local_b:
                crossed.add("nvlink")
            if len(crossed) == 2:
                break
        return crossed

    def rail_gbps_between(self, node_a: int, node_b: int) -> float:
        """A rail's bandwidth between two nodes: the leaf's, or the spine's share past it."""
        if node_a // self.nodes_per_leaf == node_b // self.nodes_per_leaf:
            return self.rail_gbps
        return self.rail_gbps / self.oversubscription

    def nics_in_use(self, members: tuple[int, ...] | list[int]) -> int:
        """The NICs a group's traffic between nodes has at each node: the fewest rails its
        members use on any one of its nodes (every node's share of a ring or tree leaves
        through its own members' NICs, so the node with fewest sets the pace)."""
        rails: dict[int, set[int]] = {}
        for m in members:
            rails.setdefault(m // self.gpus_per_node, set()).add(m % self.gpus_per_node)
        return min(len(r) for r in rails.values())

    def ring_share(self, nodes: list[int]) -> float:
        """The share of a rail's rate left to a ring over ``nodes`` (sorted, the last back to
        the first: NCCL builds its rings and trees over the nodes in rank order, blind to the
        leaves), set by its slowest hop: 1 / ``oversubscription`` once two leaves are in it."""
        hops = zip(nodes, nodes[1:] + nodes[:1], strict=True)
        return min((self.rail_gbps_between(a, b) for a, b in hops), default=self.rail_gbps) / self.rail_gbps
