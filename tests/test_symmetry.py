"""Symmetry folding: which runs fold, into how many simulated NPUs, and that no figure moves.

Exactness over the whole reference suite is ``test_reference_parity.py`` (every
congestion-unaware case runs folded and unfolded); here each fold is checked against a
count worked out by hand and against figures from outside the code (reference cases,
closed forms).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from simpy_astra.config.astra_inputs import inputs_from_astra_flags
from simpy_astra.config.scenario import load_scenario
from simpy_astra.errors import InputError, StalledError
from simpy_astra.folding import IdShifts, delay_invariant_shifts
from simpy_astra.infra.grid import Grid
from simpy_astra.simulation import Simulation
from simpy_astra.topologies import build as build_topology
from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.schema import COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE
from tests.sim_helpers import run_sim
from tests.test_reference_parity import parse_lines

RING8 = {"topology": ["Ring"], "npus_count": [8], "bandwidth": [50.0], "latency": [500.0]}
GRID2x2 = {"topology": ["Ring", "Ring"], "npus_count": [2, 2], "bandwidth": [50.0, 50.0],
           "latency": [500.0, 500.0]}
BYTES_PER_NS_50 = 50 * 2**30 / 1e9


def comp(nid: int, micros: int, deps=()):
    return make_node(nid, f"comp{nid}", COMP_NODE, deps=deps, duration_micros=micros)


def send(nid: int, dst: int, size: int, deps=()):
    return make_node(nid, f"send{nid}", COMM_SEND_NODE, deps=deps,
                     attrs={"comm_dst": dst, "comm_size": size, "comm_tag": 3, "is_cpu_op": False})


def recv(nid: int, src: int, size: int, deps=()):
    return make_node(nid, f"recv{nid}", COMM_RECV_NODE, deps=deps,
                     attrs={"comm_src": src, "comm_size": size, "comm_tag": 3, "is_cpu_op": False})


def all_reduce(nid: int, size: int, group: str, deps=()):
    return make_node(nid, f"ar{nid}", COMM_COLL_NODE, deps=deps,
                     attrs={"comm_type": 0, "comm_size": size, "pg_name": group, "is_cpu_op": False})


# ------------------------------------------------------------------------------ arithmetic
def test_grid_translations_wrap_per_dimension() -> None:
    g = Grid([4, 2])  # NPU = x + 4*y
    assert g.add(3, 1) == 0  # (3,0) + (1,0) = (0,0): no carry into y
    assert g.add(5, 6) == 3  # (1,1) + (2,1) = (3,0)
    assert all(g.add(g.sub(a, b), b) == a for a in range(8) for b in range(8))


def test_ring_and_switch_delays_rotate_a_line_does_not() -> None:
    ring = build_topology("Ring", 6, 50.0, 500.0, None)
    switch = build_topology("Switch", 4, 50.0, 500.0, None)
    assert delay_invariant_shifts(6, ring.path_profile) == set(range(6))
    assert delay_invariant_shifts(4, switch.path_profile) == set(range(4))
    line = build_topology("Graph", 4, 50.0, 500.0, _line_graph(4))
    assert delay_invariant_shifts(4, line.path_profile) == {0}  # an end NPU has one neighbour


def _line_graph(n: int):
    from simpy_astra.topologies.graph import GraphSpec

    return GraphSpec.parse({"links": [[i, i + 1] for i in range(n - 1)]}, n)


# ------------------------------------------------------------------------------ hand cases
def test_symmetric_send_ring_folds_to_one_npu_and_keeps_the_closed_form(tmp_path: Path) -> None:
    """Each NPU computes 2 us, sends 1 MiB to its right neighbour, receives from its left one,
    computes 3 us: finish = 2000 + (500 + 2^20 / bytes-per-ns) + 3000 ns on every NPU."""
    size = 1 << 20
    ranks = [[comp(0, 2), send(1, (r + 1) % 8, size, deps=[0]), recv(2, (r - 1) % 8, size, deps=[0]),
              comp(3, 3, deps=[1, 2])] for r in range(8)]
    reports, sim = run_sim(tmp_path, ranks, RING8, fold=True)
    assert [n.npu_id for n in sim.npus] == [0] and not sim.unfolded_rerun
    expected = 2000 + int(500 + size / BYTES_PER_NS_50) + 3000
    assert sorted(reports) == list(range(8))
    assert {r.finished_cycles for r in reports.values()} == {expected}


def test_one_different_rank_stops_folding_and_figures_stay(tmp_path: Path) -> None:
    ranks = [[comp(0, 2), send(1, (r + 1) % 8, 4096, deps=[0]), recv(2, (r - 1) % 8, 4096, deps=[0])]
             for r in range(8)]
    ranks[5].append(comp(3, 7, deps=[2]))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    folded, sim = run_sim(tmp_path / "a", ranks, RING8, fold=True)
    unfolded, _ = run_sim(tmp_path / "b", ranks, RING8, fold=False)
    assert len(sim.npus) == 8
    assert folded == unfolded


def test_groups_are_relabelled_between_frames(tmp_path: Path) -> None:
    """2x2 grid, row groups {0,1},{2,3} (ids 1, 2) and column groups {0,2},{1,3} (ids 3, 4):
    every NPU all-reduces in its row, then in its column. All four translations keep the
    run, so one NPU is simulated; its messages to the other row arrive in group 2's frame
    and must be matched as group 1's (otherwise the folded run would stall and rerun)."""
    groups = {"1": [0, 1], "2": [2, 3], "3": [0, 2], "4": [1, 3]}
    row = {0: "1", 1: "1", 2: "2", 3: "2"}
    col = {0: "3", 1: "4", 2: "3", 3: "4"}
    ranks = [[all_reduce(0, 1 << 20, row[r]), all_reduce(1, 1 << 20, col[r], deps=[0])] for r in range(4)]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    folded, sim = run_sim(tmp_path / "a", ranks, GRID2x2, groups=groups, fold=True)
    unfolded, _ = run_sim(tmp_path / "b", ranks, GRID2x2, groups=groups, fold=False)
    assert [n.npu_id for n in sim.npus] == [0] and not sim.unfolded_rerun
    assert sim.folding.group_map[(2, 2)] == 1 and sim.folding.group_map[(4, 1)] == 3
    assert folded == unfolded
    assert len({r.finished_cycles for r in folded.values()}) == 1


def test_id_shifts_fold_stride_groups_further_than_grid_translations(tmp_path: Path) -> None:
    """4x2 rings (NPU = x + 4y), tp groups {0,1},{2,3},{4,5},{6,7}, dp groups {0,2,4,6},
    {1,3,5,7}; every NPU all-reduces in its tp group, then in its dp group. Grid translations:
    (0,1) = +4 rotates each dp ring by two places, but (2,0) sends the dp ring 0,2,4,6 to
    2,0,6,4, not a rotation: 4 NPUs simulated. Id shifts: +2 moves tp group k to k+1 and
    rotates each dp ring by one place: NPUs 0 and 1 simulate all 8, with unfolded figures."""
    grid4x2 = {"topology": ["Ring", "Ring"], "npus_count": [4, 2], "bandwidth": [50.0, 50.0],
               "latency": [500.0, 500.0]}
    groups = {"1": [0, 1], "2": [2, 3], "3": [4, 5], "4": [6, 7], "5": [0, 2, 4, 6], "6": [1, 3, 5, 7]}
    ranks = [[all_reduce(0, 1 << 20, str(1 + r // 2)), all_reduce(1, 1 << 20, str(5 + r % 2), deps=[0])]
             for r in range(8)]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    folded, sim = run_sim(tmp_path / "a", ranks, grid4x2, groups=groups, fold=True)
    unfolded, _ = run_sim(tmp_path / "b", ranks, grid4x2, groups=groups, fold=False)
    assert isinstance(sim.folding.frame, IdShifts) and sim.folding.translations == [0, 2, 4, 6]
    assert [n.npu_id for n in sim.npus] == [0, 1] and not sim.unfolded_rerun
    assert folded == unfolded


def test_id_shift_candidates_fail_on_the_first_ranks_they_move() -> None:
    """64 ranks whose traces repeat every 8 (key r % 8) fold onto 0..7, after comparing
    every rank; with a period of 16 and the grid already at 16 NPUs, the candidates 1, 2, 4
    and 8 fail on ranks 1, 2, 4 and 8, so only ranks 0..8 are keyed, not all 64."""
    from simpy_astra.folding import RankKey, find_id_shift_folding

    for period, below, folds_to, keyed in ((8, 16, 8, 64), (16, 16, None, 9)):
        asked: list[int] = []

        def key_of(rank: int, period=period, asked=asked) -> RankKey:
            asked.append(rank)
            return RankKey((rank % period,), ())

        folding = find_id_shift_folding(IdShifts(64), below, lambda _h: True, key_of)
        assert asked == list(range(keyed))
        if folds_to is None:
            assert folding is None
        else:
            assert folding.representatives == list(range(folds_to))
            assert folding.translations == list(range(0, 64, folds_to))


def test_xor_generators_per_dimension() -> None:
    """[Ring 8, Switch 4] (NPU = x + 8y): ring masks {0, 3, 4, 7} are generated by 3 and 4;
    the switch's four masks by its bits 1 and 2, i.e. NPU-id XORs 8 and 16."""
    from simpy_astra.folding import FoldSetup

    dims = [build_topology("Ring", 8, 50.0, 500.0), build_topology("Switch", 4, 50.0, 500.0)]
    setup = FoldSetup(Grid([8, 4]), [set()] * 2, [set()] * 2, False, dims=dims, xor_algorithms=True)
    assert setup.xor_possible and setup.xor_allowed == [{0, 3, 4, 7}, {0, 1, 2, 3}]
    assert setup.xor_generators() == [3, 4, 8, 16]


def test_xor_masks_that_keep_delays() -> None:
    """Ring of 8: XOR 4 is the rotation by 4, XOR 7 the reflection k -> 7-k, XOR 3 the two
    together; XOR 1 sends 1<->2 (one hop) to 0<->3 (three), XOR 2 sends 1<->2 to 3<->0
    (three), and 5 and 6 are those moved by 4. Ring of 4 and a switch: every mask. Line of
    4: XOR 3 (the reversal 0123 -> 3210) only. Not a power of two: none at all."""
    from simpy_astra.folding import delay_invariant_xors

    def xors(name: str, n: int):
        return delay_invariant_xors(n, build_topology(name, n, 50.0, 500.0).path_profile)

    assert xors("Ring", 8) == {0, 3, 4, 7}
    assert xors("Ring", 4) == {0, 1, 2, 3}
    assert xors("Switch", 8) == set(range(8))
    assert xors("Line", 4) == {0, 3}
    assert xors("Ring", 6) is None


def test_xor_candidates_fail_on_the_first_rank_they_move() -> None:
    """64 ranks with all different traces: each bit fails comparing rank ``bit`` with rank
    0, so 7 keys are worked out, not 64. With traces that differ only in bit 3 (key r & 8),
    the other five bits span 32 translations: NPUs 0 and 8 simulate all 64."""
    from simpy_astra.folding import RankKey, XorIds, find_xor_folding

    for key_fn, keyed, reps in ((lambda r: (r,), [0, 1, 2, 4, 8, 16, 32], None),
                                (lambda r: (r & 8,), list(range(64)), [0, 8])):
        asked: set[int] = set()

        def key_of(rank: int, key_fn=key_fn, asked=asked) -> RankKey:
            asked.add(rank)
            return RankKey(key_fn(rank), ())

        folding = find_xor_folding(XorIds(64), 64, [1, 2, 4, 8, 16, 32], True, key_of)
        assert sorted(asked) == keyed
        assert (folding and folding.representatives) == (reps or None)


@pytest.mark.parametrize(("topologies", "counts", "kept"), [
    (["Ring", "Ring", "Ring"], [4, 4, 4], set(range(1, 64))),  # every shift: rings all the way up
    (["Ring", "Switch"], [4, 3], set(range(1, 12))),
    (["Line", "Ring"], [3, 4], {3, 6, 9}),  # whole steps of the ring only: the line never moves
    (["Ring", "Line"], [4, 3], set()),  # a carry into the line would move it
])
def test_id_shifts_allowed_are_those_that_keep_every_unaware_delay(topologies, counts, kept) -> None:
    """Checked pair by pair against the network's own delays: every shift allowed keeps
    all of them, and (for these networks) every shift that keeps them is allowed."""
    import simpy

    from simpy_astra.folding import FoldSetup
    from simpy_astra.network.congestion_unaware import CongestionUnawareNetwork

    dims = [build_topology(t, n, 50.0, 500.0) for t, n in zip(topologies, counts, strict=True)]
    net = CongestionUnawareNetwork(simpy.Environment(), dims)
    grid = Grid(counts)
    allowed = [delay_invariant_shifts(d.npus_count, d.path_profile) for d in dims]
    setup = FoldSetup(grid, allowed, allowed, True)
    n = grid.size

    def keeps(h: int) -> bool:
        return all(net.delay_ns((a + h) % n, (b + h) % n, 4096) == net.delay_ns(a, b, 4096)
                   for a in range(n) for b in range(n) if a != b)

    assert {h for h in range(1, n) if setup.id_shift_allowed(h)} == kept
    assert {h for h in range(1, n) if keeps(h)} == kept


def test_a_stalled_folded_run_is_reported_in_real_npu_ids(tmp_path: Path) -> None:
    ranks = [[recv(0, (r - 1) % 8, 64)] for r in range(8)]  # everybody waits, nobody sends
    with pytest.raises(StalledError) as exc:
        run_sim(tmp_path, ranks, RING8, fold=True)
    text = str(exc.value)
    assert "8 of 8 NPU(s) unfinished" in text and "NPU 7" in text


def test_congestion_aware_runs_fold_their_links_too(tmp_path: Path) -> None:
    """(tests/test_fold_links.py checks them figure by figure.)"""
    ranks = [[send(0, (r + 1) % 8, 4096), recv(1, (r - 1) % 8, 4096)] for r in range(8)]
    _reports, sim = run_sim(tmp_path, ranks, RING8, backend="congestion_aware", fold=True)
    assert sim.folding is not None and len(sim.npus) == 1


# ------------------------------------------------------------------------------ reference cases
#: case -> NPUs a folded run simulates, by hand: translations of the network grid that keep
#: every trace, every delay and every configured algorithm (ring and direct rotate;
#: halving-doubling and double binary trees do not)
FOLDS = {
    "grid_cu_all_reduce_1MB_ring8_ring": 1,  # one all-reduce everywhere, ring rotates
    "grid_cu_all_reduce_1MB_ring4x4x4_ring": 1,
    "grid_cu_all_reduce_1MB_fc8xsw4_natural-direct-halvingDoubling": 4,  # only dim 0 (8) rotates
    # no rotation keeps halving-doubling's XOR pairs; every XOR does, and on a ring of 8 the
    # XORs 3, 4 and 7 keep delays too (4 is the rotation by 4, 7 the reflection k -> 7-k);
    # 1 and 2 do not (1<->2 is one hop, 0<->3 three): NPUs 0 and 1 simulate all 8
    "grid_cu_all_reduce_1MB_ring8_halvingDoubling": 2,
    # a switch keeps every delay under any XOR, and halving-doubling commutes with XOR: 1
    "grid_cu_all_reduce_1MB_sw16_halvingDoubling": 1,
    # on a ring of 4 every XOR keeps delays (XOR 2 is the rotation by 2, XOR 1 and 3 are
    # reflections), and XOR acts on each coordinate alone: 1 of 64
    "grid_cu_all_reduce_1MB_ring4x4x4_halvingDoubling": 1,
    "text_cu_Resnet50_DataParallel_8npus_p1_fc8": 1,
    # 4x4x4 torus, tp groups {8k..8k+7}, dp groups {j, j+8, .., j+56}. Grid translations:
    # only shifts along z keep the dp rings' order ((0,2,0) sends 8 -> 16 = (0,0,1) but
    # 16 -> (0,2,1) = 24), 16 NPUs. Id shifts: +8 sends tp group k to k+1 in order, rotates
    # every dp ring by one place, and keeps delays (y and z are rings: every shift there is
    # kept), so the multiples of 8 fold 64 NPUs onto 0..7; +1 .. +7 move 7 out of tp group 0.
    "stage_cu_st5_l70b_dp8tp8_s8_ring4x4x4s": 8,
    # halving-doubling pairs group members by index XOR: rank 0 and 8 partner each other in
    # their dp group, which no rotation keeps. XOR translations do: XOR with a bit below 8
    # relabels positions inside each tp group {8k..8k+7} and sends dp group j to j^bit in
    # place; a bit from 8 up sends tp group k to another in place and relabels positions
    # inside each dp group {j, j+8, .., j+56} by XOR. A switch keeps every delay: 1 NPU.
    "stage_cu_st5_l70b_dp8tp8_s8_sw64s": 1,
}


@pytest.mark.parametrize("case_id", sorted(FOLDS))
def test_reference_cases_fold_as_derived_and_match_the_reference(case_id: str, reference_dir: Path,
                                                                 tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    case = json.loads((reference_dir / "cases" / f"{case_id}.json").read_text())
    for entry in reference_dir.iterdir():
        (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    inputs = inputs_from_astra_flags(
        workload=case["workload"], system=case["system"], network=case["network"],
        remote_memory=case["remote_memory"], comm_groups=case.get("comm_group") or "empty",
        backend=case["backend"])
    inputs = dataclasses.replace(inputs, fold_symmetry=True)
    lines: list[str] = []
    sim = Simulation(inputs, on_report=lambda r: lines.extend(r.lines()))
    sim.run()
    assert len(sim.npus) == FOLDS[case_id] and not sim.unfolded_rerun
    got = parse_lines(lines)
    assert set(got) == {str(i) for i in range(sim.total_npus)}
    for npu, figures in case["expected"].items():
        for key, want in figures.items():
            assert got[npu][key] == want, f"sys[{npu}].{key}"


# ------------------------------------------------------------------------------ the switch
def test_scenario_switch(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1] / "scenarios"
    doc = yaml.safe_load((root / "default.yaml").read_text())
    for key in ("workload", "system", "network", "remote_memory", "comm_groups"):
        if isinstance(doc.get(key), str):
            doc[key] = str(root / doc[key])
    doc["fold_symmetry"] = False
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert load_scenario(str(path)).fold_symmetry is False
    doc["fold_symmetry"] = "sometimes"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match="fold_symmetry"):
        load_scenario(str(path))


def test_memory_traces_are_written_for_every_npu_of_an_orbit(tmp_path: Path, monkeypatch) -> None:
    def comp_with_tensors(nid: int, deps=()):
        return make_node(nid, f"comp{nid}", COMP_NODE, deps=deps, duration_micros=2,
                         attrs={"inputs": ["x", "4096"], "outputs": [f"y{nid}", "8192"]})

    def p2p(nid: int, kind: int, peer: str, npu: int):
        return make_node(nid, f"p2p{nid}", kind, deps=[0],
                         attrs={peer: npu, "comm_size": 4096, "comm_tag": 3, "is_cpu_op": False,
                                "inputs": ["y0", "8192"], "outputs": [f"m{nid}", "4096"]})

    ranks = [[comp_with_tensors(0), p2p(1, COMM_SEND_NODE, "comm_dst", (r + 1) % 8),
              p2p(2, COMM_RECV_NODE, "comm_src", (r - 1) % 8), comp_with_tensors(3, deps=[1, 2])]
             for r in range(8)]
    files = {}
    for fold in (True, False):
        where = tmp_path / str(fold)
        where.mkdir()
        monkeypatch.chdir(where)
        reports, sim = run_sim(where, ranks, RING8, {"track-local-mem": 1}, fold=fold)
        assert len(sim.npus) == (1 if fold else 8)
        files[fold] = {p.name: p.read_text() for p in where.glob("local_mem_trace.*.json")}
        assert {r.peak_memory for r in reports.values()} == {reports[0].peak_memory} != {None}
    assert len(files[True]) == 8 and files[True] == files[False]


def test_cli_switch_prints_the_same_lines_folded_and_not(capsys) -> None:
    from simpy_astra.cli.main import main

    scenario = str(Path(__file__).resolve().parents[1] / "scenarios" / "default.yaml")
    out = {}
    for fold in ("on", "off"):
        assert main(["run", scenario, "--reference-lines", "--quiet", "--fold-symmetry", fold]) == 0
        out[fold] = capsys.readouterr().out
    assert out["on"] == out["off"] and out["on"].count("finished, 142780 cycles") == 8


def test_unmatched_sends_in_a_folded_run_are_named_in_real_npu_ids(tmp_path: Path) -> None:
    """Every NPU sends to its right neighbour and nobody receives: all finish (a send completes
    on arrival) and the warning lists the 8 real sends, as an unfolded run does."""
    ranks = [[send(0, (r + 1) % 8, 64)] for r in range(8)]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    folded, sim = run_sim(tmp_path / "a", ranks, RING8, fold=True)
    unfolded, full = run_sim(tmp_path / "b", ranks, RING8, fold=False)
    assert sim.unfolded_rerun and folded == unfolded
    assert len(sim.warnings) == 1 and "NPU 6 " in sim.warnings[0] and "to NPU 7" in sim.warnings[0]
    assert sim.warnings[0].replace(str(tmp_path / "a"), "") == full.warnings[0].replace(str(tmp_path / "b"), "")
