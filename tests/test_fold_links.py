"""Link-level folding on the congestion-aware backend: one live link per orbit of links.

Every check compares a folded run with the unfolded run of the same inputs, NPU by NPU and
link by link (the unfolded run simulates every NPU and every link, so it is the figure from
outside the folding code), and the number of NPUs simulated with a count worked out by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simpy_astra.collectives.base import ALL_GATHER, ALL_REDUCE, ALL_TO_ALL
from simpy_astra.folding.links import link_shifts, link_xors, local_action
from simpy_astra.topologies import build as build_topology
from simpy_astra.topologies.ring import Ring
from tests.sim_helpers import run_sim
from tests.test_fold_claims import ranks
from tests.test_symmetry import all_reduce, comp, recv, send


def network(topologies: list[str], counts: list[int], latency_ns: float = 500.0, graph=None) -> dict:
    net = {"topology": topologies, "npus_count": counts, "bandwidth": [50.0] * len(counts),
           "latency": [latency_ns] * len(counts)}
    if graph is not None:
        net["graph"] = graph
    return net


#: a fat tree: two leaves of two NPUs each under one spine
FAT_TREE = network(["Graph"], [4], graph={
    "switches": ["leaf0", "leaf1", "spine"],
    "links": [[0, "leaf0"], [1, "leaf0"], [2, "leaf1"], [3, "leaf1"], ["leaf0", "spine"], ["leaf1", "spine"]]})


def both(tmp: Path, per_rank: list[list], net: dict, system: dict | None = None, groups: dict | None = None):
    """(folded simulation, its lines, its link stats), (unfolded ...), on the aware backend."""
    out = []
    for fold in (True, False):
        folder = tmp / ("folded" if fold else "unfolded")
        folder.mkdir()
        reports, sim = run_sim(folder, per_rank, net, system=system, groups=groups,
                               backend="congestion_aware", fold=fold)
        lines = [line for r in sorted(reports.values(), key=lambda r: r.npu_id) for line in r.lines()]
        stats = sorted((str(s.src), str(s.dst), s.bytes, s.busy_ns) for s in sim.network.link_stats())
        out.append((sim, lines, stats))
    return out


def npus(net: dict) -> int:
    total = 1
    for n in net["npus_count"]:
        total *= n
    return total


# ------------------------------------------------------------------------------ exactness
#: network -> NPUs a folded run of one collective on every NPU simulates, by hand: rings,
#: switches and fully connected dimensions move every link and route under every rotation,
#: so one NPU stands for all; the fat tree's leaves swap under +2 only (+1 would send the
#: one-switch route 0->1 onto the three-switch route 1->2): two NPUs
FOLDS = {
    "ring8": (network(["Ring"], [8]), 1),
    "switch8": (network(["Switch"], [8]), 1),
    "torus4x4": (network(["Ring", "Ring"], [4, 4]), 1),
    "ring4_switch4": (network(["Ring", "Switch"], [4, 4]), 1),
    "fc4_ring2": (network(["FullyConnected", "Ring"], [4, 2]), 1),
    "fat_tree4": (FAT_TREE, 2),
}


@pytest.mark.parametrize("kind", [ALL_REDUCE, ALL_GATHER, ALL_TO_ALL])
@pytest.mark.parametrize("name", sorted(FOLDS))
def test_folded_links_give_every_npu_and_link_the_unfolded_figures(tmp_path: Path, name: str, kind: str) -> None:
    net, simulated = FOLDS[name]
    system = {"all-reduce-implementation": ["ring"] * len(net["npus_count"]),
              "all-gather-implementation": ["ring"] * len(net["npus_count"]),
              "all-to-all-implementation": ["direct"] * len(net["npus_count"])}
    (folded, lines, stats), (unfolded, full_lines, full_stats) = both(tmp_path, ranks(kind, npus(net)), net, system)
    assert len(folded.npus) == simulated and len(unfolded.npus) == npus(net)
    # the fat tree's all-to-all: NPUs 0 and 1 reach leaf0->spine in one instant (see
    # test_two_npus_meeting_at_a_link_in_one_instant_undo_the_fold): run again unfolded
    met = name == "fat_tree4" and kind == ALL_TO_ALL
    assert folded.unfolded_rerun == met
    assert any("symmetry folding undone" in w for w in folded.warnings) == met
    assert lines == full_lines
    assert stats == full_stats


@pytest.mark.parametrize(("name", "simulated"), [("switch8", 1), ("ring8", 4)])
def test_xor_translations_fold_links_where_they_move_routes_onto_routes(tmp_path: Path, name: str,
                                                                        simulated: int) -> None:
    """Halving-doubling pairs NPUs by XOR. A switch keeps its routes under every mask: 1 NPU.
    On a ring of 8 the unaware delays keep masks 3, 4 and 7, but only 4 (the rotation by 4)
    sends every route onto a route (7 reflects, and a clockwise route of 4 hops stays
    clockwise): NPUs 0..3 simulate all 8."""
    net = FOLDS[name][0]
    system = {key: ["halvingDoubling"] if key == "all-reduce-implementation" else None for key in
              ("all-reduce-implementation", "all-gather-implementation", "reduce-scatter-implementation",
               "all-to-all-implementation")}
    (folded, lines, stats), (_, full_lines, full_stats) = both(tmp_path, ranks(ALL_REDUCE, 8), net, system)
    assert type(folded.folding.frame).__name__ == "XorIds" and len(folded.npus) == simulated
    assert not folded.unfolded_rerun and lines == full_lines and stats == full_stats


def test_a_ring_of_sends_keeps_its_closed_form_and_its_link_figures(tmp_path: Path) -> None:
    """Each NPU of a ring of 8 sends 1 MiB to its right neighbour: one hop, no queue, so it
    finishes at 2 us + trunc(500 + 2^20 / B) + 3 us; each right-going link carried 1 MiB for
    trunc(2^20 / B) ns, each left-going one nothing. One NPU and one link are simulated."""
    size = 1 << 20
    bytes_per_ns = 50 * 2**30 / 1e9
    per_rank = [[comp(0, 2), send(1, (r + 1) % 8, size, deps=[0]), recv(2, (r - 1) % 8, size, deps=[0]),
                 comp(3, 3, deps=[1, 2])] for r in range(8)]
    reports, sim = run_sim(tmp_path, per_rank, network(["Ring"], [8]), backend="congestion_aware", fold=True)
    assert [n.npu_id for n in sim.npus] == [0] and len(sim.network.links()) == 2  # 0->1 and 0->7
    assert {r.finished_cycles for r in reports.values()} == {2000 + int(500 + size / bytes_per_ns) + 3000}
    by_link = {(s.src, s.dst): (s.bytes, s.busy_ns) for s in sim.network.link_stats()}
    assert len(by_link) == 16
    assert all(by_link[r, (r + 1) % 8] == (size, int(size / bytes_per_ns)) for r in range(8))
    assert all(by_link[(r + 1) % 8, r] == (0, 0) for r in range(8))


def test_same_instant_offers_of_one_npu_keep_their_order(tmp_path: Path) -> None:
    """All-to-all on a switch: an NPU's messages reach its uplink in one instant (ties), in
    its own order, the same on every NPU: the run stays folded and exact."""
    net = network(["Switch"], [8])
    (folded, lines, stats), (_, full_lines, full_stats) = both(tmp_path, ranks(ALL_TO_ALL, 8), net)
    assert folded.network.ties > 0 and folded.network.broken_symmetry is None
    assert len(folded.npus) == 1 and lines == full_lines and stats == full_stats


def test_two_npus_meeting_at_a_link_in_one_instant_undo_the_fold(tmp_path: Path) -> None:
    """[Ring 4, Switch 2] (NPU = x + 4y), every NPU sends to NPU +6, +4 and +6 (ids mod 8).
    Some messages of two NPUs reach one link in the same instant; their order there follows
    NPU ids, which translations do not keep, so the run is run again unfolded (and says so)
    and its figures are the unfolded run's."""
    (folded, lines, _), (_, full_lines, _) = both(tmp_path, _meeting_ranks(), network(["Ring", "Switch"], [4, 2]))
    assert folded.unfolded_rerun
    assert any("symmetry folding undone: messages of NPUs" in w for w in folded.warnings)
    assert lines == full_lines


def test_a_record_follows_the_unfolded_rerun(tmp_path: Path) -> None:
    """The run above, recorded (chunks included) through the API: the record holds the rerun,
    every NPU its own events, as an unfolded run's record does, and writes nodes.csv."""
    from simpy_astra.report.csv_tables import write_csv_reports
    from simpy_astra.report.recorder import attach

    records = []
    for fold in (True, False):
        folder = tmp_path / str(fold)
        folder.mkdir()
        _, sim = run_sim(folder, _meeting_ranks(), network(["Ring", "Switch"], [4, 2]),
                         backend="congestion_aware", fold=fold, run=False)
        record = attach(sim, record_chunks=True)
        sim.run()
        assert sim.unfolded_rerun == fold and record.sim.folding is None
        records.append({rec.npu_id: (rec.intervals, rec.chunks) for rec in record.npus})
        write_csv_reports(record, str(folder / "csv"))
    assert records[0] == records[1] and sorted(records[0]) == list(range(8))
    assert (tmp_path / "True" / "csv" / "nodes.csv").read_bytes() == (tmp_path / "False" / "csv" / "nodes.csv").read_bytes()


def _meeting_ranks() -> list[list]:
    sizes, offsets, per_rank = [53688, 107375, 53688], [6, 4, 6], []
    for r in range(8):
        nodes, nid = [], 0
        for i, (off, size) in enumerate(zip(offsets, sizes, strict=True)):
            nodes += [_send(nid, (r + off) % 8, size, i), _recv(nid + 1, (r - off) % 8, size, i),
                      comp(nid + 2, 1, deps=[nid + 1])]
            nid += 3
        per_rank.append(nodes)
    return per_rank


def _send(nid: int, dst: int, size: int, tag: int):
    from simpy_astra.workloads.chakra import make_node
    from simpy_astra.workloads.chakra.schema import COMM_SEND_NODE

    return make_node(nid, f"send{nid}", COMM_SEND_NODE,
                     attrs={"comm_dst": dst, "comm_size": size, "comm_tag": tag, "is_cpu_op": False})


def _recv(nid: int, src: int, size: int, tag: int):
    from simpy_astra.workloads.chakra import make_node
    from simpy_astra.workloads.chakra.schema import COMM_RECV_NODE

    return make_node(nid, f"recv{nid}", COMM_RECV_NODE,
                     attrs={"comm_src": src, "comm_size": size, "comm_tag": tag, "is_cpu_op": False})


def test_groups_on_two_dimensions_fold_with_grid_translations_only(tmp_path: Path) -> None:
    """4x2 rings, tp groups {0,1},{2,3},{4,5},{6,7}, dp groups {0,2,4,6},{1,3,5,7} (as in
    test_symmetry): the unaware backend folds them onto NPUs 0 and 1 by id shifts, whose
    carries would move links onto pairs that are no link; here grid translations fold: (0,1)
    = +4 rotates each dp ring by two places, (2,0) does not keep them, so 4 NPUs."""
    net = network(["Ring", "Ring"], [4, 2])
    groups = {"1": [0, 1], "2": [2, 3], "3": [4, 5], "4": [6, 7], "5": [0, 2, 4, 6], "6": [1, 3, 5, 7]}
    per_rank = [[all_reduce(0, 1 << 20, str(1 + r // 2)), all_reduce(1, 1 << 20, str(5 + r % 2), deps=[0])]
                for r in range(8)]
    (folded, lines, stats), (_, full_lines, full_stats) = both(tmp_path, per_rank, net, groups=groups)
    assert folded.folding.translations == [0, 4] and len(folded.npus) == 4
    assert lines == full_lines and stats == full_stats


# ------------------------------------------------------------------------------ what folds
def test_local_actions_by_hand() -> None:
    """Ring 8: every rotation; XOR 4 is the rotation by 4; XOR 7 (the reflection) sends the
    clockwise route 0->4 onto 7->3, which also goes clockwise: no action. Switch: the switch
    stays. Line 4: no shift (an end NPU has one neighbour)."""
    ring = build_topology("Ring", 8, 50.0, 500.0)
    assert link_shifts(ring, set(range(8))) == set(range(8))
    assert link_xors(ring, {0, 3, 4, 7}) == {0, 4}
    assert local_action(ring, lambda k: 7 - k) is None
    switch = build_topology("Switch", 4, 50.0, 500.0)
    assert local_action(switch, lambda k: (k + 1) % 4) == {0: 1, 1: 2, 2: 3, 3: 0, 4: 4}
    line = build_topology("Line", 4, 50.0, 500.0)
    assert link_shifts(line, set(range(4))) == {0}


def test_closed_forms_agree_with_routes_read_pair_by_pair() -> None:
    """The shortcuts for rings, switches and fully connected dimensions give what reading
    their routes pair by pair gives (a subclass with its own route method is read so)."""
    class ReadRing(Ring):
        def route(self, src: int, dst: int) -> list[int]:
            return super().route(src, dst)

    for n in (2, 3, 4, 8):
        read = ReadRing(n, 50.0, 500.0)
        plain = build_topology("Ring", n, 50.0, 500.0)
        for c in range(n):
            def shift(k: int, c: int = c, n: int = n) -> int:
                return (k + c) % n

            def xor(k: int, c: int = c) -> int:
                return k ^ c

            assert local_action(read, shift) == local_action(plain, shift)
            if not n & (n - 1):
                assert (local_action(read, xor) is None) == (local_action(plain, xor) is None)


def test_fat_tree_leaves_swap_and_a_link_between_switches_is_never_kept() -> None:
    from simpy_astra.topologies.graph import GraphSpec

    spec = GraphSpec.parse(FAT_TREE["graph"], 4)
    tree = build_topology("Graph", 4, 50.0, 500.0, spec)
    assert local_action(tree, lambda k: (k + 1) % 4) is None
    assert local_action(tree, lambda k: (k + 2) % 4) == {0: 2, 1: 3, 2: 0, 3: 1, 4: 5, 5: 4, 6: 6}
    assert link_shifts(tree, set(range(4))) == {0, 2}
    # XOR 1 swaps the NPUs under each leaf and keeps both leaves: leaf0->spine would carry
    # the messages of NPUs 0 and 1 at once, but the folded run would offer only one
    assert local_action(tree, lambda k: k ^ 1) is not None
    assert link_xors(tree, {0, 1, 2, 3}) == {0, 2}


@pytest.mark.parametrize(("config", "folds", "says"), [
    ({"link-model": "fifo"}, True, None),
    ({"link-model": "tests.test_fold_links:SaysSymmetric"}, True, None),
    ({"link-model": "tests.test_fold_links:SaysNothing"}, False, "does not say it is symmetric"),
    ({"switch-model": "delay"}, False, "switch model"),
])
def test_element_models_fold_when_they_say_so(tmp_path: Path, config: dict, folds: bool, says: str | None) -> None:
    net = dict(network(["Switch"], [8]), **config)
    _reports, sim = run_sim(tmp_path, ranks(ALL_REDUCE, 8), net, backend="congestion_aware", fold=True)
    assert (sim.folding is not None) == folds
    if says:
        assert says in sim.fold_note


def test_what_would_break_the_symmetry_is_refused_in_one_line(tmp_path: Path) -> None:
    _reports, sim = run_sim(tmp_path, ranks(ALL_REDUCE, 8), network(["Switch"], [8]), backend="congestion_aware",
                            fold=True, run=False)
    watched = sim.network.link(0, 8)  # watching is fine (its figures are its representative's)
    assert (watched.src, watched.dst, watched.bytes, watched.up) == (0, 8, 0, True)
    for call in (lambda: sim.network.send_background(0, 1, 64), lambda: watched.take_down(),
                 lambda: watched.set_bandwidth(1.0), lambda: sim.fail_switch(8)):
        with pytest.raises(ValueError, match="fold_symmetry: false") as exc:
            call()
        assert "\n" not in str(exc.value)


from simpy_astra.network.models.process_link import ProcessLink  # noqa: E402


class SaysSymmetric(ProcessLink):
    """A user's FIFO link that says its behaviour depends on what it is offered alone."""

    symmetric = True


class SaysNothing(ProcessLink):
    """A user's FIFO link that says nothing: it might depend on which link it is."""
