"""What an unfinished NPU waits on, in words: the part of :class:`~simpy_astra.engine.npu.Npu`
that stall reports (:mod:`simpy_astra.running.stall`) read."""

from __future__ import annotations

from simpy_astra.engine.npu_contracts import WaitingPart
from simpy_astra.workloads.chakra.types import COLLECTIVE_NAMES, COMM_COLL_NODE


class NpuWaiting(WaitingPart):
    """The nodes an NPU waits on, described (mixed into :class:`~simpy_astra.engine.npu.Npu`),
    reading of the NPU what :class:`~simpy_astra.engine.npu_contracts.WaitingNpu` declares."""

    def waiting_on(self, limit: int = 4) -> str:
        """Why this NPU has not finished (for stall reports), e.g. "waits on node 3 (...)"."""
        if self.failed_ns is not None:
            return f"failed at {self.failed_ns} ns ({self.completed} node(s) completed before)"
        pending = sum(1 for left in self.parents_left.values() if left > 0)
        ready = sorted(nid for heap in self.ready for nid in heap)
        in_flight = sorted(self.stats.starts)
        parts = []
        if in_flight:
            shown = ", ".join(self._describe_waiting(n) for n in in_flight[:limit])
            more = f" and {len(in_flight) - limit} more" if len(in_flight) > limit else ""
            parts.append(f"waits on {shown}{more}")
        if ready:
            parts.append(f"{len(ready)} node(s) ready but not issued (first: {self.describe(ready[0])})")
        if pending:
            parts.append(f"{pending} node(s) wait for their dependencies")
        return ", ".join(parts) or "has no node in flight"

    def describe(self, node_id: int) -> str:
        """``node 3 (COMM_SEND 'name')``."""
        node = self.nodes[node_id]
        return f"node {node_id} ({node.type_label} '{node.name}')"

    def _describe_waiting(self, node_id: int) -> str:
        """:meth:`describe`, plus the collective and its group for a COMM_COLL node."""
        node = self.nodes[node_id]
        if node.type != COMM_COLL_NODE:
            return self.describe(node_id)
        # it was issued, so comm_type and pg_name passed _collective's checks
        kind = COLLECTIVE_NAMES[node.get_int("comm_type")]
        pg = node.get_str("pg_name", "")
        group = self.services.planner.group_for(self.npu_id, self.groups, int(pg)) if pg not in ("", "0") else None
        where = f"communicator group {pg} {list(group.members)}" if group else "all NPUs"
        return f"node {node_id} (COMM_COLL '{node.name}', {kind} on {where})"

    def waiting_collectives(self) -> list[tuple[str, str, int]]:
        """(collective, pg_name, comm_size in bytes) of each COMM_COLL node in flight: stall
        reports compare them across NPUs (members that disagree on a size never match)."""
        nodes = [self.nodes[n] for n in sorted(self.stats.starts)]
        return [(COLLECTIVE_NAMES[n.get_int("comm_type")], n.get_str("pg_name", ""), n.get_int("comm_size"))
                for n in nodes if n.type == COMM_COLL_NODE]
