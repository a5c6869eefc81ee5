"""What a folded run's reports cost, counted rather than timed: the work per GPU of every
orbit grows with the cluster, not with the simulation (docs/reports.md, issue 51)."""

from __future__ import annotations

import pytest

from simpy_astra.cli.main import main
from simpy_astra.report import breakdown
from simpy_astra.report.breakdown import Breakdown, critical
from tests.test_console import JOB


@pytest.fixture(autouse=True)
def _own_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")


def test_each_groups_dimension_is_worked_out_once_not_once_per_shift(tmp_path, monkeypatch, capsys):
    """The members' renaming read the dimension of both groups of every (group, shift) pair of
    the folding's group map: 61,184 look-ups on the 16,384-GPU Llama shape, whose groups are a
    few thousand. A group's dimension does not depend on the shift."""
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    asked = []
    group_dimension = breakdown.group_dimension
    monkeypatch.setattr(breakdown, "group_dimension", lambda group, names=None: asked.append(group)
                        or group_dimension(group, names))
    found = {}
    npu_breakdowns = breakdown.npu_breakdowns

    def spy(record, *a, **k):
        found["folding"] = record.sim.folding
        return npu_breakdowns(record, *a, **k)

    monkeypatch.setattr(breakdown, "npu_breakdowns", spy)
    assert main(["run", str(job)]) == 0
    assert capsys.readouterr().out.startswith("iteration time ")
    group_map = found["folding"].group_map
    groups = {group for group, _shift in group_map} | set(group_map.values())
    assert asked and len(asked) == len(set(asked)) <= len(groups)


def test_the_critical_npu_is_the_lowest_id_of_the_latest_finish():
    """``critical`` picks by position in id order, not by a key per NPU: a tie between NPUs 1
    and 3 finishing last at 10 ns goes to 1 whatever the dict's order."""
    late, early = Breakdown(10), Breakdown(5)
    assert critical({3: late, 2: early, 1: late, 0: early}) == 1
    assert critical({0: early}) == 0
