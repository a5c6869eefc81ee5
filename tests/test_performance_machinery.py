"""What the speed-ups rest on: counters the benchmark prints, and sharing that must stay invisible.

Expected counts are derived here from the ring algorithm's message pattern; the sharing checks
assert both the sharing and that results equal an unshared run's closed form.
"""

from __future__ import annotations

from pathlib import Path

from simpy_astra.workloads.chakra import make_node, read_et, write_et
from simpy_astra.workloads.chakra.schema import (
    ALL_REDUCE,
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
)
from tests.sim_helpers import net, run_sim


def coll(size: int, pg: str | None = None) -> object:
    attrs = {"comm_type": ALL_REDUCE, "comm_size": size}
    if pg is not None:
        attrs["pg_name"] = pg
    return make_node(1, "ar", COMM_COLL_NODE, attrs=attrs)


def test_message_count_of_a_ring_all_reduce(tmp_path: Path) -> None:
    # n NPUs, s chunks: every NPU sends 2(n-1) messages per chunk
    n, splits = 4, 2
    (tmp_path / "full").mkdir()
    (tmp_path / "folded").mkdir()
    full, sim = run_sim(tmp_path / "full", [[coll(1 << 20)]] * n, net("Ring", n), {"preferred-dataset-splits": splits},
                        fold=False)
    assert sim.network.board.messages_sent() == n * splits * 2 * (n - 1)
    # folded, one NPU stands for all four: only its own messages are simulated
    folded, sim = run_sim(tmp_path / "folded", [[coll(1 << 20)]] * n, net("Ring", n),
                          {"preferred-dataset-splits": splits}, fold=True)
    assert sim.network.board.messages_sent() == splits * 2 * (n - 1)
    assert folded == full


def test_event_count_of_one_message(tmp_path: Path) -> None:
    # NPU 0 sends to NPU 1, whose receive is posted first. SimPy events up to "every NPU
    # finished": two process starts, the arrival (the bells it rings for the sender's and the
    # receiver's process are processed in place, no queue entry), each process's end and the
    # "all NPUs finished" condition (which processes ``sim.finished`` in place): 2 + 1 + 2 + 1;
    # and the start of the stall watchdog, which always runs (its first wake, at 1 us, comes
    # after the end). Stepped by hand, the environment is the user's: it is not stopped.
    send = make_node(1, "s", COMM_SEND_NODE, attrs={"comm_src": 0, "comm_dst": 1, "comm_size": 1024, "comm_tag": 7})
    recv = make_node(1, "r", COMM_RECV_NODE, attrs={"comm_src": 0, "comm_dst": 1, "comm_size": 1024, "comm_tag": 7})
    _reports, sim = run_sim(tmp_path, [[send], [recv]], net("Ring", 2), fold=False, run=False)
    steps = 0
    env = sim.env
    while not sim.finished.processed:
        env.step()
        steps += 1
    assert sim.network.board.messages_sent() == 1
    assert steps == 6 + 1


def test_non_members_share_one_group_view_and_members_get_their_own(tmp_path: Path) -> None:
    reports, sim = run_sim(tmp_path, [[coll(1 << 16, g)] for g in ("1", "2", "1", "2")], net("Ring", 4),
                           groups={"1": [0, 2], "2": [1, 3]}, fold=False)
    # each NPU's view of file group 1, as its collectives ask for it (made on first ask)
    g1 = [npu.services.planner.group_for(npu.npu_id, npu.groups, 1) for npu in sim.npus]
    assert g1[0] is not g1[2]  # members 0 and 2: own stream counters and plans
    assert g1[0] is sim.npus[0].groups[1]  # ... kept by the member, which ran on it
    assert g1[1] is g1[3] and 1 not in sim.npus[1].groups  # non-members 1 and 3: one shared view
    assert g1[0].members == g1[1].members == (0, 2)
    # both groups still run their own ring (same closed form as test_closed_forms)
    assert reports[0].finished_cycles == reports[1].finished_cycles > 0


def test_ranks_share_identical_attribute_dicts(tmp_path: Path) -> None:
    comp = make_node(1, "c", COMP_NODE, attrs={"num_ops": 100, "tensor_size": 10})
    for rank in (0, 1):
        write_et(str(tmp_path / f"w.{rank}.et"), [comp, coll(64)])
    attr_cache: dict = {}
    attrs_cache: dict = {}
    a = read_et(str(tmp_path / "w.0.et"), attr_cache=attr_cache, attrs_cache=attrs_cache)[1]
    b = read_et(str(tmp_path / "w.1.et"), attr_cache=attr_cache, attrs_cache=attrs_cache)[1]
    assert a[0].attrs is b[0].attrs and a[1].attrs is b[1].attrs
    assert a[0].get_int("num_ops") == 100 and b[1].get_int("comm_size") == 64


def test_ranks_repeating_a_record_share_its_decoded_fields(tmp_path: Path) -> None:
    comp = make_node(1, "c", COMP_NODE, attrs={"num_ops": 100, "tensor_size": 10})
    ar = coll(64)
    write_et(str(tmp_path / "w.0.et"), [comp, ar])
    write_et(str(tmp_path / "w.1.et"), [comp, make_node(1, "ar", COMM_COLL_NODE, attrs={"comm_type": ALL_REDUCE,
                                                                                        "comm_size": 128})])
    caches: dict = {"attr_cache": {}, "attrs_cache": {}, "record_cache": {}}
    a = read_et(str(tmp_path / "w.0.et"), **caches)[1]
    b = read_et(str(tmp_path / "w.1.et"), **caches)[1]
    assert a[0].shared is b[0].shared  # the same bytes: decoded once
    assert a[1].shared is not b[1].shared and b[1].get_int("comm_size") == 128
    assert a == read_et(str(tmp_path / "w.0.et"))[1]  # same nodes as an uncached read
    assert [n.source for n in b] == [str(tmp_path / "w.1.et")] * 2  # each rank names its own file


def test_rank_keys_from_shared_records_equal_keys_built_node_by_node(tmp_path: Path) -> None:
    from simpy_astra.folding import KeyCache, rank_key
    from simpy_astra.infra.grid import Grid

    send = make_node(2, "s", COMM_SEND_NODE, deps=[1], attrs={"comm_dst": 1, "comm_size": 8, "comm_tag": 1})
    comp = make_node(1, "c", COMP_NODE, attrs={"num_ops": 100, "tensor_size": 10})
    write_et(str(tmp_path / "w.0.et"), [comp, coll(64), send])
    nodes = read_et(str(tmp_path / "w.0.et"), record_cache={})[1]
    grid = Grid([4])
    fast = rank_key(0, nodes, grid, {}, lambda _t: [], "rotate", KeyCache())
    for n in nodes:
        n.shared = ()
    slow = rank_key(0, nodes, grid, {}, lambda _t: [], "rotate", KeyCache())
    assert fast.key == slow.key and fast.uses_dims and slow.uses_dims  # the collective has no group


def test_every_view_of_a_communicator_group_reads_one_table_of_places():
    """A group's member -> place table is made once for all its views (a view of a view too):
    a table per member's view was n tables of n entries for an n-member group."""
    from simpy_astra.engine.collective_plans import CommunicatorGroup

    group = CommunicatorGroup(3, (4, 1, 4, 0))
    first, second = group.member_view(), group.member_view().member_view()
    assert first.positions is second.positions is group.positions
    assert first.positions == {4: 0, 1: 1, 0: 3}  # a repeated member: its first place
    assert first.streams is not second.streams
