"""What ``run``'s reports cost beside the simulation, counted rather than timed.

Complaint: ``--json-out`` on a folded 16,384-GPU step (Llama-3-405B's shape, tp 8 x pp 16 on
dgx-h100) cost 0.8 to 1.1 s after a 1.3 to 2.1 s simulation: every NPU's figures were made
into a dict, its breakdown sorted and its entry encoded, although the NPUs share a few dozen
distinct entries (an orbit member is its representative's report under another id).
"""

from __future__ import annotations

import json

import pytest

from simpy_astra.cli.main import main
from simpy_astra.engine.statistics import NpuReport
from tests.test_console import GPUS, JOB


@pytest.fixture(autouse=True)
def _own_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")


def test_json_out_makes_each_distinct_npu_entry_once_and_writes_the_same_text(tmp_path, monkeypatch, capsys):
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    made = []
    as_dict = NpuReport.as_dict
    monkeypatch.setattr(NpuReport, "as_dict", lambda self: made.append(self.npu_id) or as_dict(self))
    figures = tmp_path / "figures.json"
    assert main(["run", str(job), "--quiet", "--json-out", str(figures)]) == 0
    capsys.readouterr()
    text = figures.read_text()
    data = json.loads(text)
    assert text == json.dumps(data, indent=1)
    npus = data["npus"]
    assert len(npus) == GPUS and all("breakdown_ns" in entry for entry in npus.values())
    distinct = {json.dumps(entry, sort_keys=True) for entry in npus.values()}
    assert len(made) == len(distinct) < GPUS  # one per distinct entry, not one per NPU


def test_entries_of_reports_that_differ_stay_apart():
    """Only an orbit member shares its representative's entry: the same figures in dicts of
    their own (an unfolded run) give equal entries made apart, never one entry for two
    different NPUs."""
    from simpy_astra.cli.run_reports import npu_entries

    def report(npu: int, finished: int) -> NpuReport:
        return NpuReport(npu, finished, 5, finished, {"GPU": 10}, None, None, None)

    a, b, c = report(0, 100), report(1, 100), report(2, 200)
    entries = npu_entries([c, b, a], {})
    assert list(entries) == ["0", "1", "2"]
    assert entries["0"] == entries["1"] and entries["0"] is not entries["1"]
    assert entries["2"]["finished_ns"] == 200


def test_the_network_cost_table_gives_bandwidths_to_four_significant_digits(tmp_path, capsys):
    """A preset's derived link speeds were printed to six (215.822 and 21.8861 GiB/s in one
    column, 43.7722 beside 370): a precision the cost model's prices do not have."""
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    assert main(["run", str(job)]) == 0
    err = capsys.readouterr().err.splitlines()
    at = next(i for i, line in enumerate(err) if line.startswith("network cost: $"))
    header = err[at + 1].replace("cost ($)", "cost").split()
    column = header.index("GiB/s")
    rows = []
    for line in err[at + 2:]:
        cells = line.split()
        if len(cells) != len(header) or not cells[0].isdigit():
            break
        rows.append(cells[column])
    assert rows and all(len(cell.replace(".", "").lstrip("0")) <= 4 for cell in rows), rows
    assert any("." in cell for cell in rows)  # the preset's inter-node speed is not whole


def test_a_report_given_to_another_npu_keeps_every_field() -> None:
    """An orbit member's report is its representative's with the id changed: every field,
    those added later too, as ``dataclasses.replace`` copies them."""
    import dataclasses

    values = {f.name: {"n": i} if f.type.startswith("dict") else 10 + i
              for i, f in enumerate(dataclasses.fields(NpuReport))}
    report = NpuReport(**values)
    moved = report.for_npu(99)
    assert moved == dataclasses.replace(report, npu_id=99) and moved.times is report.times
