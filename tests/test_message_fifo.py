"""Messages of one identity (tag, src, dst, size) match first-posted first, however many wait:
the board keeps one waiting entry as itself and queues from the second on, and both sides may
be the ones waiting. Three identical messages from NPU 0 to NPU 1, each side posted long
before or long after the other (so all three sends, or receives, wait for the other side):
every one is delivered once, and the run ends with nothing left unmatched."""

from __future__ import annotations

from pathlib import Path

import pytest

from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.schema import COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE
from tests.sim_helpers import net, run_sim

SIZE = 1 << 20


def _chain(kind: int, peer: str, other: int, start_us: int) -> list:
    """A compute of ``start_us``, then three messages (the NPU issues them one by one)."""
    nodes = [make_node(1, "wait", COMP_NODE, duration_micros=start_us)]
    for i in range(3):
        nodes.append(make_node(2 + i, f"m{i}", kind, deps=[1], attrs={
            peer: other, "comm_size": SIZE, "comm_tag": 5, "is_cpu_op": False}))
    return nodes


@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
@pytest.mark.parametrize("send_us, recv_us", [(0, 1000), (1000, 0)])
def test_three_identical_messages_each_match_once(tmp_path: Path, backend: str, send_us: int, recv_us: int) -> None:
    ranks = [_chain(COMM_SEND_NODE, "comm_dst", 1, send_us), _chain(COMM_RECV_NODE, "comm_src", 0, recv_us)]
    reports, sim = run_sim(tmp_path, ranks, net("Ring", 2), backend=backend, fold=False)
    assert sim.network.board.messages_sent() == sim.network.board.delivered == 3
    assert sim.warnings == []
    delay = sim.network.delay_ns(0, 1, SIZE) if backend == "congestion_unaware" else None
    if delay is not None:  # the NPU sends one at a time; a send completes on arrival
        assert reports[0].finished_cycles == max(1, send_us * 1000) + 3 * delay
    assert reports[1].finished_cycles >= reports[0].finished_cycles
