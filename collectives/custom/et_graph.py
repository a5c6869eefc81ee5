"""Custom collectives defined as per-rank Chakra ET graphs (ASTRA-sim's "custom" impl).

The whole collective is one phase: the rank's graph of COMM_SEND / COMM_RECV / COMP nodes
runs with its own dependency resolution. Sends complete on arrival, receives on arrival
(or at once if the message is already there), COMP nodes after their replayed duration.
No endpoint or reduction delay applies. Ranks in the graph are positions in the
communicator group, mapped back to NPU ids through the group's written order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simpy_astra.collectives.base import AlgorithmRun, CollectiveError, PhaseContext
from simpy_astra.workloads.chakra.types import COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE


def custom_et(ctx: PhaseContext, nodes: Sequence[Any], source: str, rank_of: Sequence[int] | None) -> AlgorithmRun:
    """``nodes`` are EtNode objects of this rank's algorithm file ``source``."""
    by_id = {n.id: n for n in nodes}
    waiting_on: dict[int, int] = {}
    children: dict[int, list[int]] = {}
    free: list[int] = []
    for n in nodes:
        waiting_on[n.id] = len(n.deps)
        for d in n.deps:
            children.setdefault(d, []).append(n.id)
        if not n.deps:
            free.append(n.id)
    ongoing = 0
    all_done = ctx.signal()

    def real(rank: int) -> int:
        return rank if rank_of is None else rank_of[rank]

    def start(node):
        if node.type == COMM_SEND_NODE:
            return ctx.send(real(node.get_int("comm_dst")), node.get_int("comm_size"), node.get_int("comm_tag"))
        if node.type == COMM_RECV_NODE:
            return ctx.recv(real(node.get_int("comm_src")), node.get_int("comm_size"), node.get_int("comm_tag"))
        if node.type == COMP_NODE:
            return ctx.wait(node.duration_micros * 1000 if node.duration_micros else 1)
        raise CollectiveError(f"{source}: node {node.id}: custom collectives support COMM_SEND, "
                              f"COMM_RECV and COMP nodes only (got type {node.type})")

    def run_node(nid: int, event):
        nonlocal ongoing
        yield event
        ongoing -= 1
        for child in children.get(nid, ()):
            waiting_on[child] -= 1
            if waiting_on[child] == 0:
                free.append(child)
        issue_free()
        if ongoing == 0:
            all_done.fire()

    def issue_free() -> None:
        nonlocal ongoing
        batch = sorted(free)
        free.clear()
        for nid in batch:
            ongoing += 1
            ctx.spawn(run_node(nid, start(by_id[nid])))

    issue_free()
    if ongoing:
        yield all_done
