"""ASTRA-sim 1.0 text workloads: conversion equals Chakra's output, and runs give the reference figures.

The reference's ``workloads/text/<name>_<N>npus_p<P>/`` sets were written by Chakra's text
converter from ``text/src/<name>.txt``; the reference cases ran them in ASTRA-sim 2.0.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from simpy_astra.config.astra_inputs import inputs_from_astra_flags
from simpy_astra.errors import InputError
from simpy_astra.simulation import Simulation
from simpy_astra.workloads.chakra import read_et
from simpy_astra.workloads.text_workload import parse_text_workload, write_text_ets
from tests.conftest import REFERENCE
from tests.test_reference_parity import parse_lines

ROOT = Path(__file__).resolve().parents[1]
TEXT = REFERENCE / "workloads" / "text"


def _sets() -> list[str]:
    return sorted(p.name for p in TEXT.glob("*_*npus_p*")) if TEXT.is_dir() else ["none"]


def _split(set_name: str) -> tuple[str, int, int]:
    name, npus, passes = set_name.rsplit("_", 2)
    return name, int(npus.removesuffix("npus")), int(passes.removeprefix("p"))


@pytest.mark.parametrize("set_name", _sets())
def test_conversion_matches_chakra_node_by_node(set_name: str, reference_dir: Path, tmp_path: Path) -> None:
    name, npus, passes = _split(set_name)
    write_text_ets(str(TEXT / "src" / f"{name}.txt"), str(tmp_path / name), npus, passes)
    for rank in range(npus):
        ours = tmp_path / f"{name}.{rank}.et"
        theirs = TEXT / set_name / f"{name}.{rank}.et"
        our_meta, our_nodes = read_et(str(ours))
        ref_meta, ref_nodes = read_et(str(theirs))
        assert our_meta == ref_meta
        assert len(our_nodes) == len(ref_nodes)
        for a, b in zip(our_nodes, ref_nodes, strict=True):
            assert (a.id, a.name, a.type, a.deps, a.duration_micros, a.attrs) == \
                   (b.id, b.name, b.type, b.deps, b.duration_micros, b.attrs), f"{theirs}: node {b.id}"
        assert ours.read_bytes() == theirs.read_bytes()


def _text_cases(max_npus: int) -> list:
    folder = REFERENCE / "cases"
    if not folder.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason="no reference data"))]
    out = []
    for path in sorted(folder.glob("text_*.json")):
        case = json.loads(path.read_text())
        if case["npus"] <= max_npus:
            out.append(pytest.param(case, id=case["id"]))
    return out


def _run_case(case: dict, workload: str, reference_dir: Path, tmp_path: Path, monkeypatch) -> dict:
    for entry in reference_dir.iterdir():
        (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    inputs = inputs_from_astra_flags(
        workload=workload, system=case["system"], network=case["network"],
        remote_memory=case["remote_memory"], comm_groups="empty", backend=case["backend"],
        num_passes=case["meta"]["passes"],
    )
    lines: list[str] = []
    Simulation(inputs, on_report=lambda r: lines.extend(r.lines())).run()
    return parse_lines(lines)


def _assert_figures(case: dict, got: dict) -> None:
    diffs = [f"sys[{npu}].{key}: expected {want}, got {got.get(npu, {}).get(key)}"
             for npu, figures in case["expected"].items() for key, want in figures.items()
             if got.get(npu, {}).get(key) != want]
    assert not diffs, "; ".join(diffs[:5])


@pytest.mark.parametrize("case", _text_cases(max_npus=8))
def test_txt_workload_runs_directly_to_reference_figures(case: dict, reference_dir: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The .txt source given as the workload: converted on the fly, same figures as the reference."""
    src = str(TEXT / "src" / f"{case['meta']['text_workload']}.txt")
    _assert_figures(case, _run_case(case, src, reference_dir, tmp_path, monkeypatch))


def test_resnet50_8npus_cli_conversion_gives_reference_figures(reference_dir: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's acceptance case, through the command line as docs/generators.md shows it (the
    checkout's copy of ASTRA-sim 1.0's file): convert, then run the ETs."""
    shipped = ROOT / "scenarios" / "workloads" / "text" / "Resnet50_DataParallel.txt"
    assert shipped.read_bytes() == (TEXT / "src" / "Resnet50_DataParallel.txt").read_bytes()
    prefix = tmp_path / "out" / "resnet"
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "convert", "text", "--input",
                           str(shipped), "--output", str(prefix),
                           "--num-npus", "8", "--num-passes", "1"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for case_id in ("text_cu_Resnet50_DataParallel_8npus_p1_sw8", "text_ca_Resnet50_DataParallel_8npus_p1_sw8"):
        case = json.loads((reference_dir / "cases" / f"{case_id}.json").read_text())
        scratch = tmp_path / case_id
        scratch.mkdir()
        _assert_figures(case, _run_case(case, str(prefix), reference_dir, scratch, monkeypatch))


def test_num_dims_tags_collectives(tmp_path: Path) -> None:
    src = tmp_path / "m.txt"
    src.write_text("DATA\n2\na -1 5 NONE 0 6 NONE 0 7 ALLREDUCE 64 1\nb -1 5 NONE 0 6 NONE 0 7 ALLGATHER 32 1\n")
    write_text_ets(str(src), str(tmp_path / "m"), 2, 1, num_dims=3)
    _meta, nodes = read_et(str(tmp_path / "m.1.et"))
    # 2 layers: 2 FWD, 2 WG + 2 WG collectives, 1 IG (the first layer has none) = 7 per NPU
    assert [n.id for n in nodes] == list(range(7, 14))
    colls = [n for n in nodes if n.type == 7]
    assert [n.name for n in colls] == ["COMM_COLL_NODE_b_ALLGATHER", "COMM_COLL_NODE_a_ALLREDUCE"]
    assert all(list(n.get_bool_list("involved_dim")) == [True, True, True] for n in colls)


@pytest.mark.parametrize("text, match", [
    ("HYBRID_TRANSFORMER model_parallel_NPU_group: 4\n1\n", r"m\.txt:1: parallelism HYBRID_TRANSFORMER"),
    ("PIPELINE\n1\n", r"m\.txt:1: unknown parallelism type 'PIPELINE'"),
    ("DATA\nx\n", r"m\.txt:2: expected the number of layers"),
    ("DATA\n1\nconv -1 5 NONE 0\n", r"m\.txt:3: layer line has 5 columns, expected 12"),
    ("DATA\n1\nconv -1 five NONE 0 5 NONE 0 5 ALLREDUCE 8 1\n", r"m\.txt:3: column 3 \(forward compute\)"),
    ("HYBRID_DLRM\n1\nemb -1 5 NONE 0 5 NONE 0 5 NONE 0 1\n", r"HYBRID_DLRM needs the index"),
    ("DATA\n0\n", r"no layer lines"),
])
def test_bad_text_workloads_name_line_and_fix(tmp_path: Path, text: str, match: str) -> None:
    src = tmp_path / "m.txt"
    src.write_text(text)
    with pytest.raises(InputError, match=match):
        parse_text_workload(str(src))


def test_transformer_text_is_a_clear_cli_error(reference_dir: Path, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "simpy_astra", "convert", "text", "--input",
                           str(TEXT / "src" / "Transformer_HybridParallel.txt"), "--output",
                           str(tmp_path / "t"), "--num-npus", "8", "--num-passes", "1"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "HYBRID_TRANSFORMER is not supported" in done.stderr
    assert "Traceback" not in done.stderr


def test_scenario_with_txt_workload_and_num_passes(reference_dir: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from simpy_astra.config.scenario import load_scenario

    case = json.loads((reference_dir / "cases" / "text_cu_DLRM_HybridParallel_8npus_p2_sw8.json").read_text())
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    doc = {"workload": str(TEXT / "src" / "DLRM_HybridParallel.txt"), "num_passes": 2,
           "system": str(reference_dir / case["system"]), "network": str(reference_dir / case["network"]),
           "backend": case["backend"]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    lines: list[str] = []
    Simulation(load_scenario(str(path)), on_report=lambda r: lines.extend(r.lines())).run()
    _assert_figures(case, parse_lines(lines))
    path.write_text(yaml.safe_dump({**doc, "num_passes": 0}))
    with pytest.raises(InputError, match="field 'num_passes' must be a positive integer"):
        load_scenario(str(path))
