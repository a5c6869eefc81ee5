"""A collective with a logical shape that is neither a ring nor a tree, added as one definition.

The system layer knows no algorithm's shape: an algorithm that needs more than the ring order
names a ``logical`` hook that builds its arguments from the dimension. Here a star (a hub
gathers every member's data and sends the result back) is defined and registered in the test
alone, run from a system config, and timed against a hand derivation.
"""

from __future__ import annotations

from pathlib import Path

from simpy_astra.collectives import REGISTRY
from simpy_astra.collectives.base import AlgorithmRun, CollectiveAlgorithm, PhaseContext, ring_final_size
from simpy_astra.collectives.logical import LogicalDim
from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.types import ALL_REDUCE, COMM_COLL_NODE
from tests.sim_helpers import net, run_sim


def star(dim: LogicalDim) -> tuple[int, tuple[int, ...]]:
    """The star of a dimension: its first member is the hub, the others are leaves."""
    return dim.members[0], dim.members[1:]


def star_all_reduce(ctx: PhaseContext, hub: int, leaves: tuple[int, ...]) -> AlgorithmRun:
    """Leaves send their data to the hub and wait for the result; the hub receives from every
    leaf, then sends the result to each."""
    if ctx.npu_id == hub:
        for leaf in leaves:
            yield ctx.recv(leaf, ctx.size_bytes)
        for leaf in leaves:
            ctx.send(leaf, ctx.size_bytes)
    else:
        ctx.send(hub, ctx.size_bytes)
        yield ctx.recv(hub, ctx.size_bytes)


STAR = CollectiveAlgorithm("star", star_all_reduce, ring_final_size, kinds=frozenset({"all_reduce"}),
                           logical=star)


def test_a_star_runs_from_a_system_config_with_the_derived_times(tmp_path: Path, monkeypatch) -> None:
    """4 fully connected NPUs, 1 MiB, 50 GB/s, 500 ns: one message takes
    d = trunc(500 + 2^20 / (50 * 2^30 / 1e9)) ns. The leaves' data reaches the hub at d; the
    hub's phase ends when it has sent the result (sends complete on arrival, and nothing waits
    on them), so NPU 0 finishes at d and the leaves, receiving the result, at 2d."""
    monkeypatch.setitem(REGISTRY, "star", STAR)
    size = 1 << 20
    d = int(500 + size / (50 * 2**30 / 1e9))
    node = make_node(0, "ar", COMM_COLL_NODE, attrs={"comm_type": ALL_REDUCE, "comm_size": size})
    reports, sim = run_sim(tmp_path, [[node]] * 4, net("FullyConnected", 4),
                           {"all-reduce-implementation": ["star"]})
    assert {i: r.finished_cycles for i, r in reports.items()} == {0: d, 1: 2 * d, 2: 2 * d, 3: 2 * d}
    assert len(sim.npus) == 4  # it claims no symmetry, so nothing folds
