"""Review of the second round of folding on cluster presets (ef8cd3b): what a strict reviewer
found, each test failing before its fix.

A folded run cannot know in which order the members of one orbit would have finished within
one instant, so it gives their reports out in NPU order; an unfolded run of a cluster preset
gave them in its events' order, so `--fold-symmetry off` printed the same lines as `on` in
another order (a preset's run keeps no ASTRA-sim order: ASTRA-sim's inputs keep theirs).
Reports held to the end of their instant must still be out when `run(until=...)` stops
past it."""

from __future__ import annotations

import dataclasses

import pytest

from simpy_astra.cli.main import main
from simpy_astra.config.scenario import load_scenario
from simpy_astra.simulation import Simulation
from tests.scenario_files import write_yaml

ALL_TO_ALL = {"workload": {"generate": "microbench", "collective": "all_to_all", "size": 1000},
              "cluster": {"preset": "dgx-h100", "gpus": 24}}


def test_a_preset_run_prints_the_same_lines_in_the_same_order_folded_or_not(tmp_path, capsys):
    # before: folded, sys[0] ... sys[23]; unfolded, sys[4] ... sys[23], sys[0] ... sys[3] (every
    # NPU at 82,684 ns either way)
    path = write_yaml(tmp_path, ALL_TO_ALL)
    printed = []
    for flag in ("on", "off"):
        assert main(["run", path, "--fold-symmetry", flag]) == 0
        out = capsys.readouterr().out
        printed.append([line for line in out.splitlines() if line.startswith("sys[")])
    assert printed[0] == printed[1]
    assert [line.split("]")[0] for line in printed[0][::3]] == [f"sys[{i}" for i in range(24)]


def _simulation(path: str, fold: bool) -> Simulation:
    return Simulation(dataclasses.replace(load_scenario(path), fold_symmetry=fold))


@pytest.mark.parametrize("fold", [True, False])
def test_run_until_gives_out_the_reports_of_the_instants_before_it(tmp_path, fold):
    # two pipeline stages finish at different instants; a run stopped between them has the
    # first stage's reports (before: a folded run held them until the next report came)
    args = ("--num-layers 2 --hidden-size 256 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 "
            "--global-batch-size 8 --bf16 --vocab-size 1024 --pipeline-model-parallel-size 2")
    path = write_yaml(tmp_path, {"workload": {"generate": "megatron", "args": args},
                                 "cluster": {"preset": "dgx-h100", "gpus": 8, "gpus_per_node": 4}})
    whole = _simulation(path, fold).run()
    ends = sorted({r.finished_cycles for r in whole})
    assert len(ends) == 2
    sim = _simulation(path, fold)
    early = sim.run(until=(ends[0] + ends[1]) / 2)
    assert sorted(r.npu_id for r in early) == sorted(r.npu_id for r in whole if r.finished_cycles == ends[0])
    assert [r.npu_id for r in sim.run()] == [r.npu_id for r in whole]
