"""Link-level folding on the packet backend: one live port per orbit of links.

Every check compares a folded run with the unfolded run of the same inputs on the packet
backend, NPU by NPU and link by link (the unfolded run simulates every NPU and every port,
so it is the figure from outside the folding code), within the 0.1% the issue allows (these
cases agree exactly); the number of NPUs and live ports simulated is worked out by hand.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import yaml

from simpy_astra.collectives.base import ALL_GATHER, ALL_REDUCE, ALL_TO_ALL
from simpy_astra.config.scenario import load_scenario
from simpy_astra.simulation import Simulation
from tests.sim_helpers import run_sim
from tests.test_fold_claims import ranks
from tests.test_fold_links import FAT_TREE, network
from tests.test_fold_scale import _scenario

#: folded and unfolded finish times and busy times may differ by this share (issue 38)
REL = 1e-3


def small_buffers(net: dict, buffer_bytes: int = 65536) -> dict:
    """``net`` with output buffers small enough to fill and to cap links by credits."""
    return dict(net, **{"switch-buffer": buffer_bytes})


def both(tmp: Path, per_rank: list[list], net: dict, system: dict | None = None):
    """(folded simulation, finish ns by NPU, stats by link), (the unfolded ones)."""
    out = []
    for fold in (True, False):
        folder = tmp / ("folded" if fold else "unfolded")
        folder.mkdir()
        reports, sim = run_sim(folder, per_rank, net, system=system, backend="packet", fold=fold)
        finish = {r.npu_id: r.finished_cycles for r in reports.values()}
        stats = {(s.src, s.dst): s for s in sim.network.link_stats()}
        out.append((sim, finish, stats))
    return out


def assert_close(folded: dict, unfolded: dict) -> None:
    assert folded.keys() == unfolded.keys()
    for key, want in unfolded.items():
        assert folded[key] == pytest.approx(want, rel=REL, abs=1), key


def assert_same_links(stats: dict, full_stats: dict) -> None:
    """Every link's bytes equal; busy, stall and largest queue within :data:`REL`."""
    assert stats.keys() == full_stats.keys()
    for key, want in full_stats.items():
        got = stats[key]
        assert got.bytes == want.bytes, key
        for field in ("busy_ns", "stall_ns", "max_queue_bytes"):
            assert getattr(got, field) == pytest.approx(getattr(want, field), rel=REL, abs=1), (key, field)


def npus(net: dict) -> int:
    return math.prod(net["npus_count"])


#: network -> (NPUs simulated, live ports), by hand. Rotations of rings, permutations of
#: switches and fully connected dimensions move every link and route, so one NPU stands for
#: all, and one port per orbit of links: 2 per ring (right, left) but 1 on a ring of 2
#: (0->1 moved by +1 is 1->0), 2 per switch (up, down), 3 on a fully connected 4 (to +1,
#: +2, +3; 1->0 is 0->3 moved by +1). The fat tree's leaves swap under +2 only: NPUs 0 and
#: 1, their up- and down-links (4) and leaf0 <-> spine (2: leaf1 <-> spine is their image).
CASES = {
    "ring8": (small_buffers(network(["Ring"], [8])), 1, 2),
    "torus4x4": (small_buffers(network(["Ring", "Ring"], [4, 4])), 1, 4),
    "switch8": (small_buffers(network(["Switch"], [8]), 32768), 1, 2),
    "ring2_switch4_ring2": (small_buffers(network(["Ring", "Switch", "Ring"], [2, 4, 2])), 1, 4),
    "fc4_ring2": (network(["FullyConnected", "Ring"], [4, 2]), 1, 4),
    "fat_tree4": (FAT_TREE, 2, 6),
}


@pytest.mark.parametrize("kind", [ALL_REDUCE, ALL_GATHER, ALL_TO_ALL])
@pytest.mark.parametrize("name", sorted(CASES))
def test_folded_ports_give_every_npu_and_link_the_unfolded_figures(tmp_path: Path, name: str, kind: str) -> None:
    net, simulated, ports = CASES[name]
    dims = len(net["npus_count"])
    system = {"all-reduce-implementation": ["ring"] * dims, "all-gather-implementation": ["ring"] * dims,
              "all-to-all-implementation": ["direct"] * dims}
    (folded, finish, stats), (unfolded, full_finish, full_stats) = both(
        tmp_path, ranks(kind, npus(net), 8 << 20), net, system)
    assert len(folded.npus) == simulated and len(unfolded.npus) == npus(net)
    assert len(folded.network.links()) == ports and not folded.unfolded_rerun
    assert_close(finish, full_finish)
    assert_same_links(stats, full_stats)


def test_a_port_crossed_at_several_hops_serves_and_counts_every_copy(tmp_path: Path) -> None:
    """All-to-all of 1 MiB on a ring of 8 (direct): 128 KiB to each other NPU, +1..+4 to the
    right (1 + 2 + 3 + 4 = 10 hops), +5..+7 to the left (3 + 2 + 1 = 6 hops). NPU 0's
    message to NPU 3 crosses 0->1, 1->2 and 2->3, all carried by port 0->1: three copies
    of one train at once, as the real link 0->1 holds NPU 0's, NPU 7's and NPU 6's. Each
    copy is served and counted, so every right-going link carries 10 x 128 KiB and every
    left-going one 6 x 128 KiB, folded as unfolded."""
    net = network(["Ring"], [8])
    (folded, finish, stats), (_, full_finish, full_stats) = both(tmp_path, ranks(ALL_TO_ALL, 8, 1 << 20), net)
    assert any(len(set(path.ports)) < len(path.ports) for port in folded.network.links() for path in port.paths)
    message = (1 << 20) // 8
    for r in range(8):
        assert stats[r, (r + 1) % 8].bytes == 10 * message and stats[(r + 1) % 8, r].bytes == 6 * message
    assert_close(finish, full_finish)
    assert_same_links(stats, full_stats)


def test_each_copy_enters_its_port_from_the_real_link(tmp_path: Path) -> None:
    """All-to-all on a switch of 8 (switch = device 8): NPU 0's message to NPU d crosses
    0->8, then 8->d, carried by port 8->0 (d's orbit member 0, moved by -d). There the
    real network holds NPU -d's message to 0, which enters 8->0 from link -d->8: seven
    trains, seven inputs, though all seven links into the switch are one orbit (whose
    representative 0->8 would have merged them into one FIFO)."""
    _reports, sim = run_sim(tmp_path, ranks(ALL_TO_ALL, 8), network(["Switch"], [8]), backend="packet", fold=True)
    down = sim.network.link(8, 0)
    entered = sorted(path.inputs[1] for path in sim.network.link(0, 8).paths)
    assert entered == [((-d) % 8, 8) for d in range(7, 0, -1)]
    assert len(down.paths) == 7


def test_a_small_generated_transformer_folds_to_one_npu_per_stage(tmp_path: Path, monkeypatch) -> None:
    """dp4 x tp2 x pp2 on rings [4, 2, 2] (the scaled-down GPT-3 layout of
    tests/test_fold_scale.py) on the packet backend: the dp x tp translations keep the run,
    stages differ, so NPUs 0 and 8 stand for all 16; every NPU's figures are the unfolded
    run's."""
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    path = Path(_scenario(tmp_path, 4, 2, 2))
    doc = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump(dict(doc, backend="packet")))
    inputs = dataclasses.replace(load_scenario(str(path)), fold_symmetry=True)
    sim = Simulation(inputs)
    assert [n.npu_id for n in sim.npus] == [0, 8] and sim.fold_note is None
    folded = {r.npu_id: r.finished_cycles for r in sim.run()}
    full = Simulation(dataclasses.replace(inputs, fold_symmetry=False))
    unfolded = {r.npu_id: r.finished_cycles for r in full.run()}
    assert len(full.npus) == 16
    assert_close(folded, unfolded)
    assert_same_links({(s.src, s.dst): s for s in sim.network.link_stats()},
                      {(s.src, s.dst): s for s in full.network.link_stats()})


def test_a_sprayed_dimension_does_not_fold_and_says_so(tmp_path: Path) -> None:
    net = dict(FAT_TREE, graph=dict(FAT_TREE["graph"], routing="spray"))
    _reports, sim = run_sim(tmp_path, ranks(ALL_REDUCE, 4), net, backend="packet", fold=True)
    assert sim.folding is None and "sprays packets" in sim.fold_note and "\n" not in sim.fold_note


def test_a_simulation_built_from_python_folds_packet_links_only_when_asked(tmp_path: Path) -> None:
    """A script may change links mid-run: without ``fold_symmetry: true`` the packet backend
    does not fold, and says so."""
    _reports, sim = run_sim(tmp_path, ranks(ALL_REDUCE, 8), network(["Ring"], [8]), backend="packet", run=False)
    assert sim.folding is None and "packet links fold only with fold_symmetry: true" in sim.fold_note


def test_what_would_break_the_symmetry_is_refused_in_one_line(tmp_path: Path) -> None:
    _reports, sim = run_sim(tmp_path, ranks(ALL_REDUCE, 8), network(["Switch"], [8]), backend="packet",
                            fold=True, run=False)
    watched = sim.network.link(0, 8)
    assert (watched.src, watched.dst, watched.bytes, watched.up) == (0, 8, 0, True)
    for call in (lambda: sim.network.send_background(0, 1, 64), lambda: watched.take_down(),
                 lambda: watched.set_bandwidth(1.0), lambda: watched.put(64), lambda: sim.fail_switch(8)):
        with pytest.raises(ValueError, match="fold_symmetry: false") as exc:
            call()
        assert "\n" not in str(exc.value)
