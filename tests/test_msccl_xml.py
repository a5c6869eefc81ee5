"""MSCCL-IR XML custom collectives, checked against what ASTRA-sim's tooling made of the same XML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simpy_astra.collectives.custom.msccl_xml import read_msccl_xml
from simpy_astra.config.astra_inputs import inputs_from_astra_flags
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.chakra import EtError, read_et

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



# ----------------------------------------------------------------------- every number checked
TB0 = '<tb id="0" send="1" recv="1" chan="0"><step s="0" type="s" cnt="1"/></tb>'
TB1 = '<tb id="0" send="0" recv="0" chan="0"><step s="0" type="r" cnt="1"/></tb>'


def _gpus(tb0: str = TB0, second_id: str = "1") -> str:
    return f'<gpu id="0">{tb0}</gpu><gpu id="{second_id}">{TB1}</gpu>'


def _xml(tmp_path: Path, gpus: str, loop: str = "2") -> str:
    path = tmp_path / "a.xml"
    path.write_text(f'<algo name="t" nchunksperloop="{loop}" ngpus="2" coll="allreduce">{gpus}</algo>')
    return str(path)


@pytest.mark.parametrize("loop, gpus, words", [
    ("0", _gpus(), "'nchunksperloop' is 0; it must be >= 1"),
    ("2", _gpus(TB0.replace('cnt="1"', 'cnt="-3"')), "'cnt' is -3"),
    ("2", _gpus(TB0.replace('chan="0"', 'chan="x"')), "integer attribute 'chan'"),
    ("2", _gpus(TB0.replace('send="1"', 'send="0"')), "the GPU itself"),
    ("2", _gpus(TB0.replace('send="1"', 'send="99"')), "peer is 99, which is not a GPU"),
    ("2", _gpus(second_id="0"), "appears twice"),
])
def test_bad_numbers_in_msccl_xml_are_named(tmp_path, loop, gpus, words):
    with pytest.raises(EtError) as info:
        read_msccl_xml(_xml(tmp_path, gpus, loop), 1024)
    assert words in str(info.value) and "a.xml" in str(info.value)


def test_good_msccl_xml_still_reads(tmp_path):
    assert sorted(read_msccl_xml(_xml(tmp_path, _gpus()), 1024)) == [0, 1]
