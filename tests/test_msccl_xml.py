"""MSCCL-IR XML custom collectives, checked against what ASTRA-sim's tooling made of the same XML."""

from __future__ import annotations

import json
from pathlib import Path

from simpy_astra.collectives.custom.msccl_xml import read_msccl_xml
from simpy_astra.config.scenario import inputs_from_astra_flags
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.chakra import read_et

EXAMPLE = "workloads/examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce"


def _shape(node) -> tuple:
    attrs = {k: v for k, v in node.attrs.items() if k != "comm_type"}  # meaningless on p2p nodes
    return node.type, node.deps, node.duration_micros, attrs


def test_xml_gives_the_shipped_per_rank_graphs(reference_dir: Path) -> None:
    ranks = read_msccl_xml(str(reference_dir / f"{EXAMPLE}.xml"), 1 << 20)
    assert sorted(ranks) == list(range(8))
    for rank, nodes in ranks.items():
        _meta, shipped = read_et(str(reference_dir / f"{EXAMPLE}.{rank}.et"))
        assert [_shape(n) for n in nodes] == [_shape(n) for n in shipped]


def test_xml_runs_to_the_reference_figures(reference_dir: Path, tmp_path: Path, monkeypatch) -> None:
    case = json.loads((reference_dir / "cases" / "ex_cu_custom_collective.json").read_text())
    system = json.loads((reference_dir / case["system"]).read_text())
    system["all-reduce-implementation-custom"] = [str(reference_dir / f"{EXAMPLE}.xml")]
    (tmp_path / "sys.json").write_text(json.dumps(system))
    monkeypatch.chdir(reference_dir)
    inputs = inputs_from_astra_flags(case["workload"], str(tmp_path / "sys.json"), case["network"],
                                     case["remote_memory"], "empty", "congestion_unaware")
    reports = Simulation(inputs).run()
    expected = {int(k): v["finished_cycles"] for k, v in case["expected"].items()}
    assert {r.npu_id: r.finished_cycles for r in reports} == expected
