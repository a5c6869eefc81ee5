"""Folding that scales out: group ids past the tag space's wrap, traces generated only for the
NPUs simulated, the one-line note of a run that folds less than it might, and a fast search.

Every count is derived by hand in the test; every folded run is compared NPU by NPU with the
same run unfolded.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import yaml

from simpy_astra.config.scenario import load_scenario
from simpy_astra.infra.grid import Grid
from simpy_astra.simulation import Simulation
from tests.sim_helpers import run_sim
from tests.test_symmetry import RING8, all_reduce, comp, recv, send
from tests.wrapped_lines import unwrapped

GRID4x2 = {"topology": ["Ring", "Ring"], "npus_count": [4, 2], "bandwidth": [50.0, 50.0],
           "latency": [500.0, 500.0]}


def test_group_tags_move_as_stream_ids_wrap() -> None:
    """Group g's k-th stream has tag 500,000,000 + (g * 1e6 + k) mod 500,000,000: relabelling
    it to another group gives that group's k-th tag, across the wrap either way."""
    from simpy_astra.engine.tags import (
        first_stream_id,
        group_residue_of_stream_tag,
        moved_group_tag,
        stream_tag,
    )

    for g, image in ((621, 121), (7, 507), (1007, 7), (3, 4), (499, 500)):
        for k in (0, 5, 999_999):
            tag = stream_tag(first_stream_id(g) + k)
            assert moved_group_tag(tag, g, image) == stream_tag(first_stream_id(image) + k)
            assert group_residue_of_stream_tag(tag) == g % 500


def test_group_ids_past_500_fold_and_keep_every_figure(tmp_path: Path) -> None:
    """4x2 rings (NPU = x + 4y). Row groups 7 = {0..3} and 507 = {4..7}, column groups
    1007..1010 = {x, x+4}: ids 500 apart share message tags (stream ids wrap), so a message
    4 <- 5 (row 507) and one 4 <- 0 (column 1007) carry tags of one residue. Every NPU
    all-reduces in its row, then its column; all 8 grid translations keep the run, so NPU 0
    alone is simulated and must tell the two apart by the pair (before, ids >= 500 stopped
    folding: the dp32 GPT-3 run's tensor-parallel groups reach id 640)."""
    groups = {"7": [0, 1, 2, 3], "507": [4, 5, 6, 7], **{str(1007 + x): [x, x + 4] for x in range(4)}}
    ranks = [[all_reduce(0, 1 << 20, "7" if r < 4 else "507"),
              all_reduce(1, 1 << 18, str(1007 + r % 4), deps=[0])] for r in range(8)]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    folded, sim = run_sim(tmp_path / "a", ranks, GRID4x2, groups=groups, fold=True)
    unfolded, _ = run_sim(tmp_path / "b", ranks, GRID4x2, groups=groups, fold=False)
    assert [n.npu_id for n in sim.npus] == [0] and not sim.unfolded_rerun
    assert sim.folding.group_map[(507, 4)] == 7 and sim.folding.group_map[(1010, 3)] == 1007
    assert folded == unfolded and sim.fold_note is None


def test_groups_500_apart_sharing_a_pair_do_not_fold(tmp_path: Path) -> None:
    """Groups 3 and 503 both hold NPUs 0 and 1: their tags between 0 and 1 cannot be told
    apart in a folded run, so it does not fold, says so in one line, and keeps its figures."""
    groups = {"3": [0, 1, 2, 3], "503": [0, 1], "4": [4, 5, 6, 7], "504": [4, 5]}
    ranks = [[all_reduce(0, 1 << 16, "3" if r < 4 else "4")] for r in range(8)]
    for r in (0, 1, 4, 5):
        ranks[r].append(all_reduce(1, 1 << 16, "503" if r < 4 else "504", deps=[0]))
    for r in (2, 3, 6, 7):
        ranks[r].append(comp(1, 1, deps=[0]))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    folded, sim = run_sim(tmp_path / "a", ranks, GRID4x2, groups=groups, fold=True)
    unfolded, _ = run_sim(tmp_path / "b", ranks, GRID4x2, groups=groups, fold=False)
    assert sim.folding is None and folded == unfolded
    assert sim.fold_note == ("symmetry folding off: communicator groups 3 and 503 share members and "
                             "message tags (ids wrap every 500); simulating 8 of 8 NPUs")


def test_a_run_that_cannot_fold_says_why_in_one_line(tmp_path: Path) -> None:
    """NPU 5 sends twice as much to NPU 6 as the others to their right neighbours: a
    translation that keeps the run would have to keep 5 and 6 in place, so only +0 does and
    every NPU is simulated; the note names the translation that failed and the rank."""
    size = 4096
    ranks = [[send(0, (r + 1) % 8, size * (2 if r == 5 else 1)),
              recv(1, (r - 1) % 8, size * (2 if r == 6 else 1))] for r in range(8)]
    _reports, sim = run_sim(tmp_path, ranks, RING8, fold=True, run=False)
    assert sim.folding is None
    note = sim.fold_note
    assert note.startswith("symmetry folding off: ") and note.endswith("simulating 8 of 8 NPUs"), note
    assert "\n" not in note and "rank" in note


# ------------------------------------------------------------------------------ generated traces
TINY = {"generate": "transformer", "model": "gpt", "dmodel": 256, "dff": 1024, "head": 8, "kvhead": 8,
        "num_stacks": 4, "dvocal": 1000, "seq": 64, "batch": 8, "micro_batch": 4}


def _scenario(tmp: Path, dp: int, tp: int, pp: int, **extra) -> str:
    doc = {"name": "tiny", "workload": dict(TINY, dp=dp, tp=tp, pp=pp, **extra),
           "system": {"scheduling-policy": "LIFO", "collective-optimization": "localBWAware",
                      "endpoint-delay": 10, "active-chunks-per-dimension": 1, "preferred-dataset-splits": 4,
                      "roofline-enabled": 1, "peak-perf": 312, "local-mem-bw": 2000,
                      "all-reduce-implementation": ["ring"] * 3, "all-gather-implementation": ["ring"] * 3,
                      "reduce-scatter-implementation": ["ring"] * 3,
                      "all-to-all-implementation": ["direct"] * 3},
           "network": {"topology": ["Ring"] * 3, "npus_count": [dp, tp, pp], "bandwidth": [200.0, 200.0, 100.0],
                       "latency": [500.0, 500.0, 1000.0]},
           "backend": "congestion_unaware"}
    path = tmp / f"tiny_{dp}_{tp}_{pp}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _ets(prefix: str) -> list[str]:
    folder, name = os.path.split(prefix)
    return sorted((f for f in os.listdir(folder) if f.startswith(name + ".") and f.endswith(".et")),
                  key=lambda f: int(f.split(".")[-2]))


def test_generated_trace_is_written_only_for_the_npus_simulated(tmp_path: Path, monkeypatch) -> None:
    """dp4 x tp2 x pp2 on rings [4, 2, 2]: every dp x tp translation keeps the run (ring
    groups rotate, peers move along), stages differ: 16 / (4*2) = 2 NPUs, ranks 0 and 8, and
    only their two ET files are written. The unfolded run writes the other 14 and has the
    same figures NPU by NPU; the traces' own folding (read from all 16 files) is the one the
    rank summary gave."""
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    path = _scenario(tmp_path, 4, 2, 2)
    inputs = load_scenario(path)
    assert _ets(inputs.workload_prefix) == []  # loading writes the summary and groups only
    sim = Simulation(inputs)
    assert [n.npu_id for n in sim.npus] == [0, 8] and sim.fold_note is None
    assert _ets(inputs.workload_prefix) == ["transformer.0.et", "transformer.8.et"]
    folded = {r.npu_id: r for r in sim.run()}
    full = Simulation(dataclasses.replace(load_scenario(path), fold_symmetry=False))
    assert len(full.npus) == 16 and len(_ets(inputs.workload_prefix)) == 16
    unfolded = {r.npu_id: r for r in full.run()}
    assert folded == unfolded
    plain = tmp_path / "plain"
    plain.mkdir()
    for f in _ets(inputs.workload_prefix):
        shutil.copy(os.path.join(os.path.dirname(inputs.workload_prefix), f), plain / f)
    from_traces = Simulation(dataclasses.replace(inputs, workload_prefix=str(plain / "transformer")),
                             ).folding
    assert from_traces.rep_of == sim.folding.rep_of and from_traces.translations == sim.folding.translations


def test_a_thousand_generated_npus_with_group_ids_past_500_fold_to_one_per_stage(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    """dp256 x tp2 x pp2 (1,024 NPUs): dp groups 1..4, tp groups 5..516 (pp x dp of them),
    so tensor-parallel ids pass 500 (as the dp32 GPT-3 run's do). It folds to pp = 2 NPUs and
    writes two ET files, the summary standing in for the other 1,022."""
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    inputs = load_scenario(_scenario(tmp_path, 256, 2, 2, batch=512, micro_batch=256))
    assert max(int(g) for g in inputs.comm_groups) > 516  # (the size-1 sp groups follow)
    sim = Simulation(inputs)
    assert [n.npu_id for n in sim.npus] == [0, 512] and len(_ets(inputs.workload_prefix)) == 2
    reports = sim.run()
    assert len(reports) == 1024 and len({(r.finished_cycles, r.npu_id >= 512) for r in reports}) <= 2


# ------------------------------------------------------------------------------ dimensions of any size
def test_stated_delay_symmetries_are_the_pairwise_ones() -> None:
    """A ring, switch or fully connected dimension states which shifts and XOR masks keep its
    delays (folding a 16,384-NPU ring then costs no O(n^2) check); each statement equals the
    pair-by-pair check it replaces."""
    from simpy_astra.folding import delay_invariant_shifts, delay_invariant_xors
    from simpy_astra.folding.frames import dimension_shifts, dimension_xors
    from simpy_astra.topologies import build as build_topology

    for name in ("Ring", "Switch", "FullyConnected"):
        for n in (2, 3, 4, 6, 8, 16, 32, 64, 128, 256):
            t = build_topology(name, n, 50.0, 500.0, None)
            assert dimension_shifts(t) == delay_invariant_shifts(n, t.path_profile), (name, n)
            assert dimension_xors(t) == delay_invariant_xors(n, t.path_profile), (name, n)


def test_a_16384_npu_search_checks_a_few_generators_not_every_translation() -> None:
    """16,384 ranks on a [1024, 16] grid in 16 kinds, one per row (r // 1024: a pipeline stage
    of a dp x tp = 1,024 block): the shifts along dimension 0 keep every rank's kind, those
    along dimension 1 do not, so 1,024 translations leave 16 NPUs, found with a full pass
    per generator (about log2(1024) of them), not one per translation (16 million checks)."""

    from simpy_astra.folding import RankClasses, RankKey, find_folding

    grid = Grid([1024, 16])
    ranks = RankClasses()
    for r in range(grid.size):
        ranks.add(r, RankKey((r // 1024,), ()))
    moves, add = [0], grid.add

    def counted(rank: int, h: int) -> int:
        moves[0] += 1
        return add(rank, h)

    grid.add = counted  # counted, not timed: the claim is about work, not this machine's speed
    folding = find_folding(grid, ranks, lambda h: True)
    # a full pass (16,384 moves) per generator, about log2(1024) = 10 of them, and the group's
    # growth; one pass per translation would be 1,024 x 16,384 = 16.8 million
    assert moves[0] < 20 * 16_384
    assert folding.representatives == list(range(0, 16384, 1024))
    assert folding.translations == list(range(1024))


def test_cli_says_before_time_starts_why_a_large_run_does_not_fold(tmp_path: Path, capsys) -> None:
    """64 NPUs on a ring sending to their right neighbours, NPU 5 twice as much: the command
    prints one note line first (before any report line), and `--json-out` has the peak RSS."""
    import json

    from simpy_astra.cli.main import main
    from simpy_astra.workloads.chakra import write_et
    from tests.sim_helpers import BASE_SYSTEM

    n, size = 64, 4096
    (tmp_path / "wl").mkdir()
    for r in range(n):
        write_et(str(tmp_path / "wl" / f"w.{r}.et"), [send(0, (r + 1) % n, size * (2 if r == 5 else 1)),
                                                     recv(1, (r - 1) % n, size * (2 if r == 6 else 1))])
    (tmp_path / "sys.json").write_text(json.dumps(BASE_SYSTEM))
    (tmp_path / "net.yml").write_text(yaml.safe_dump(dict(RING8, npus_count=[n])))
    (tmp_path / "mem.json").write_text(json.dumps({"memory-type": "NO_MEMORY_EXPANSION"}))
    out = tmp_path / "figures.json"
    code = main([f"--workload-configuration={tmp_path / 'wl' / 'w'}", f"--system-configuration={tmp_path / 'sys.json'}",
                 f"--network-configuration={tmp_path / 'net.yml'}",
                 f"--remote-memory-configuration={tmp_path / 'mem.json'}", f"--json-out={out}"])
    assert code == 0
    err = unwrapped(capsys.readouterr().err.strip())  # the note wrapped within the pipe's width: one again
    assert len(err) == 1 and err[0].startswith("note: symmetry folding off: translation +1 fails at rank 4")
    assert err[0].endswith("simulating 64 of 64 NPUs")
    assert json.loads(out.read_text())["peak_rss_mb"] > 10


def test_a_lazily_generated_trace_beyond_64_bits_is_an_input_error(tmp_path: Path, monkeypatch) -> None:
    """The rank summary is written without serialising a record, so a model too large for
    Chakra's fields is refused when the first rank is written, as the full generator does."""
    import pytest

    from simpy_astra.errors import InputError

    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "big.yaml"
    doc = yaml.safe_load(Path(_scenario(tmp_path, 2, 1, 1)).read_text())
    doc["workload"].update(dmodel=2**40, dff=2**40, head=1, kvhead=1, num_stacks=1)
    doc["network"] = {"topology": ["Ring"], "npus_count": [2], "bandwidth": [200.0], "latency": [500.0]}
    for key in ("all-reduce-implementation", "all-gather-implementation", "reduce-scatter-implementation",
                "all-to-all-implementation"):
        doc["system"][key] = doc["system"][key][:1]
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match="64-bit"):
        Simulation(load_scenario(str(path)))


def test_a_network_that_does_not_follow_the_parallel_axes_folds_partly_and_says_so(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    """dp4 x tp2 x pp2 on rings [2, 4, 2] (NPU = x + 2y + 8z; dp index x + 2(y mod 2), tp y // 2).
    A shift of x reverses pairs of the dp ring (0123 -> 1032: not a rotation), y + 1 sends the
    dp group {0..3} to {2..5} (not a group); y + 2 (+4) moves every group onto one: 16 / 2 = 8
    NPUs, where the two programs (stages) would allow 2; the note says it is partial."""
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    path = Path(_scenario(tmp_path, 4, 2, 2))
    doc = yaml.safe_load(path.read_text())
    doc["network"]["npus_count"] = [2, 4, 2]
    path.write_text(yaml.safe_dump(doc))
    sim = Simulation(load_scenario(str(path)))
    assert len(sim.npus) == 8 and sim.folding.translations == [0, 4]
    assert sim.fold_note.startswith("symmetry folding partial (2 programs): ")
    assert sim.fold_note.endswith("simulating 8 of 16 NPUs")


def test_a_folding_that_leaves_one_npu_per_program_ends_the_search() -> None:
    """[Ring 4, Ring 2] (NPU = x + 4y), two programs (y, as pipeline stages): the grid's
    shifts of x leave NPUs 0 and 4, and no frame can leave fewer than one NPU per program, so
    neither id shifts nor XOR translations (both possible here) are keyed: at 16,384 NPUs the
    XOR search keyed every rank again to find nothing better. Without the bound both run."""
    from simpy_astra.folding import FoldSetup
    from simpy_astra.folding.keys import RankKey
    from simpy_astra.folding.run import search
    from simpy_astra.topologies import build as build_topology

    dims = [build_topology("Ring", 4, 50.0, 500.0), build_topology("Ring", 2, 50.0, 500.0)]
    shifts = [{0, 1, 2, 3}, {0, 1}]
    setup = FoldSetup(Grid([4, 2]), shifts, shifts, False, dims=dims, xor_algorithms=True)
    assert setup.id_shifts and setup.xor_possible
    for least, frames in ((2, {"Grid"}), (1, {"Grid", "IdShifts", "XorIds"})):
        keyed: set[str] = set()

        def key_in(frame, _order, keyed=keyed):
            keyed.add(type(frame).__name__)
            return lambda rank: RankKey((rank // 4,), ())

        found = search(8, setup, key_in, {}, least=least)
        assert found.folding.representatives == [0, 4] and keyed == frames
