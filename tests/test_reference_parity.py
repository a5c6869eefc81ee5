"""Every reference case (both backends), run in-process, figure by figure, exactly.

The expected numbers come from ASTRA-sim 2.0 itself (``../shared/reference/cases``); we
compare the lines we print, parsed the way users parse them. The two 80-layer STAGE cases
take minutes each and belong to the performance benchmark: set SIMPY_ASTRA_SLOW=1 to
include them.

Congestion-unaware and congestion-aware cases run twice, with symmetry folding on and off:
folding must not change a single figure (``tests/test_symmetry.py`` and
``tests/test_fold_links.py`` check that it does fold).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest

from simpy_astra.config.astra_inputs import inputs_from_astra_flags
from simpy_astra.simulation import Simulation
from tests.conftest import REFERENCE

FINISHED = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles, exposed communication (\d+) cycles")
STAT = re.compile(r"sys\[(\d+)\], ([A-Za-z -]+?): ([0-9.]+%?)\s*$")
PEAK = re.compile(r"sys\[(\d+)\] peak memory usage: (.+?)\s*$")
STAT_KEYS = {
    "Wall time": "wall_time", "GPU time": "gpu_time", "CPU time": "cpu_time", "Comm time": "comm_time",
    "Remote mem time": "remote_mem_time", "Total compute-communication overlap": "comp_comm_overlap",
    "Compute bound percentage": "compute_bound_pct", "Average compute utilization": "avg_compute_util",
    "Average memory utilization": "avg_memory_util", "Average operation intensity": "avg_operation_intensity",
}
SLOW = re.compile(r"_st7_")


def parse_lines(lines: list[str]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for line in lines:
        if m := FINISHED.search(line):
            d = out.setdefault(m.group(1), {})
            d["finished_cycles"], d["exposed_comm_cycles"] = int(m.group(2)), int(m.group(3))
        elif m := PEAK.search(line):
            out.setdefault(m.group(1), {})["peak_memory"] = m.group(2)
        elif (m := STAT.search(line)) and m.group(2) in STAT_KEYS:
            v = m.group(3)
            out.setdefault(m.group(1), {})[STAT_KEYS[m.group(2)]] = v if v.endswith("%") or "." in v else int(v)
    return out


def _cases() -> list:
    folder = REFERENCE / "cases"
    if not folder.is_dir():
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=f"no reference data at {REFERENCE}"))]
    params = []
    for path in sorted(folder.glob("*.json")):
        case = json.loads(path.read_text())
        if case.get("expect_error"):
            continue
        marks = []
        if SLOW.search(case["id"]) and not os.environ.get("SIMPY_ASTRA_SLOW"):
            marks.append(pytest.mark.skip(reason="80-layer STAGE case: run with SIMPY_ASTRA_SLOW=1"))
        folds = (True, False) if case["backend"] in ("congestion_unaware", "congestion_aware") else (None,)
        for fold in folds:
            suffix = {True: "-fold", False: "-nofold", None: ""}[fold]
            params.append(pytest.param(case, fold, id=case["id"] + suffix, marks=marks))
    return params


def simulate_case(case: dict, reference_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  network: str | None = None, fold: bool | None = None) -> dict[str, dict]:
    """Run a reference case in-process (optionally on another network file); parsed figures."""
    # run from a scratch folder that sees the reference entries, as parity.py does
    for entry in reference_dir.iterdir():
        (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    inputs = inputs_from_astra_flags(
        workload=case["workload"], system=case["system"], network=network or case["network"],
        remote_memory=case["remote_memory"], comm_groups=case.get("comm_group") or "empty",
        backend=case["backend"],
    )
    inputs = dataclasses.replace(inputs, fold_symmetry=fold)
    lines: list[str] = []
    Simulation(inputs, on_report=lambda r: lines.extend(r.lines())).run()
    return parse_lines(lines)


@pytest.mark.parametrize(("case", "fold"), _cases())
def test_reference_case(case: dict, fold: bool | None, reference_dir: Path, tmp_path: Path,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    got = simulate_case(case, reference_dir, tmp_path, monkeypatch, fold=fold)
    diffs = [
        f"sys[{npu}].{key}: expected {want}, got {got.get(npu, {}).get(key)}"
        for npu, figures in case["expected"].items()
        for key, want in figures.items()
        if got.get(npu, {}).get(key) != want
    ]
    assert not diffs, "\n".join(diffs[:10])
