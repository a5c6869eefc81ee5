"""The researcher's console, round 6: what a folded run's reports cost, counted rather than
timed (the work done per NPU of every orbit, which grows with the GPUs and not the
simulation)."""

from __future__ import annotations

import pytest

from simpy_astra.cli.main import main
from simpy_astra.report import breakdown
from tests.test_console import GPUS, JOB


@pytest.fixture(autouse=True)
def _own_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")


def _folded_run(tmp_path, monkeypatch, capsys):
    """Run the 64-GPU job (it folds) and return its folding, the summary checked printed."""
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    found = {}
    npu_breakdowns = breakdown.npu_breakdowns

    def spy(record, *a, **k):
        found["folding"] = record.sim.folding
        return npu_breakdowns(record, *a, **k)

    monkeypatch.setattr(breakdown, "npu_breakdowns", spy)
    assert main(["run", str(job)]) == 0
    assert capsys.readouterr().out.startswith("iteration time ")
    assert found["folding"] is not None  # the job folds: 64 GPUs, a few simulated
    return found["folding"]


def test_orbit_members_renaming_is_worked_out_once_per_shift_not_once_per_gpu(tmp_path, monkeypatch, capsys):
    """A 16,384-GPU folded step spent as long on its members' part renaming as on the
    simulation (a pass over some sixty groups for each GPU): what a member's groups rename
    depends only on its shift, which the NPUs of every orbit share."""
    shifts = []
    member_parts = breakdown._member_parts
    monkeypatch.setattr(breakdown, "_member_parts", lambda groups, names: shifts.append(1) or member_parts(groups, names))
    folding = _folded_run(tmp_path, monkeypatch, capsys)
    assert len(shifts) == len(set(folding.shift_of)) < GPUS


def test_each_groups_dimension_is_worked_out_once_not_once_per_shift(tmp_path, monkeypatch, capsys):
    """The members' renaming read the dimension of both groups of every (group, shift) pair of
    the folding's group map: 61,184 look-ups on the 16,384-GPU Llama shape, whose groups are a
    few thousand (270 for 56 groups here). A group's dimension does not depend on the shift."""
    asked = []
    group_dimension = breakdown.group_dimension
    monkeypatch.setattr(breakdown, "group_dimension", lambda group, names=None: asked.append(group)
                        or group_dimension(group, names))
    group_map = _folded_run(tmp_path, monkeypatch, capsys).group_map
    groups = {group for group, _shift in group_map} | set(group_map.values())
    assert asked and len(asked) == len(set(asked)) <= len(groups)


def test_the_critical_npu_is_the_lowest_id_of_the_latest_finish():
    """``critical`` picks by position in id order, not by a key per NPU: a tie between NPUs 1
    and 3 finishing last at 10 ns goes to 1 whatever the dict's order."""
    late, early = breakdown.Breakdown(10), breakdown.Breakdown(5)
    assert breakdown.critical({3: late, 2: early, 1: late, 0: early}) == 1
    assert breakdown.critical({0: early}) == 0


def test_a_sweep_with_nothing_left_to_run_draws_no_progress_bar():
    """A sweep run again over its own results (every point already in results.csv) drew a live
    bar on a terminal, ``sweep 0/0 0:00:00 eta -:--:--``, above the summary: progress of nothing."""
    import io

    from simpy_astra.report.output import Output
    from simpy_astra.sweep.runner import run_local

    stream = io.StringIO()
    out = Output(stream, rich=True)
    outcome = run_local([], 2, None, lambda *a: None, out)
    assert (outcome.finished, outcome.interrupted) == (0, False)
    assert stream.getvalue() == ""


class _CountedParts(dict):
    """A breakdown's parts that count how often a figure is read."""

    reads = 0

    def get(self, key, default=None):
        _CountedParts.reads += 1
        return super().get(key, default)


@pytest.mark.parametrize("npus", [7, 1000])  # an odd count (a middle figure) and an even one (the mean of two)
def test_the_spread_reads_each_distinct_breakdown_once_and_gives_every_npus_statistics(npus):
    """A folded 16,384-GPU step's min / median / max were taken over 16,384 figures per part,
    read from 16 distinct breakdowns; now from those 16, each weighed by its NPUs: the same
    figures as the statistics of every NPU's, derived here the long way."""
    import statistics

    from simpy_astra.report.breakdown import Breakdown, finish_spread, spread

    shared = [Breakdown(100 + k, _CountedParts({"compute.gemm": 10 * k + 1, "comm.tp": 7 * (k % 2)}))
              for k in range(3)]
    shared.append(Breakdown(90, _CountedParts({"compute.gemm": 5, "bubble": 3})))  # no comm.tp: counts 0
    breakdowns = {npu: shared[(npu * 5) % 4 if npu % 3 else 3] for npu in range(npus)}
    _CountedParts.reads = 0
    got = spread(breakdowns)
    assert _CountedParts.reads <= len(shared) * len(got) < npus * len(got) or npus < 10
    for name, figures in got.items():
        values = [b.parts.get(name, 0) for b in breakdowns.values()]
        assert figures == (min(values), statistics.median(values), max(values))
        assert [type(v) for v in figures] == [type(v) for v in (min(values), statistics.median(values),
                                                                 max(values))]
    finishes = [b.finish_ns for b in breakdowns.values()]
    assert finish_spread(breakdowns) == (min(finishes), statistics.median(finishes), max(finishes))


def test_a_nodes_part_is_worked_out_once_per_distinct_type_and_attributes(tmp_path, monkeypatch, capsys):
    """The small sweep (under ``ARRAY_SWEEP_FROM`` nodes an NPU, a 16,384-GPU step's 16
    simulated NPUs) read each node's attributes to find its part: 22,144 times where 1,020
    distinct (type, attributes) pairs decide them. The parts are the same (the summary's
    figures are those of a run that classifies every node)."""
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    assert main(["run", str(job)]) == 0
    before = capsys.readouterr()
    asked = []
    node_part = breakdown.node_part
    monkeypatch.setattr(breakdown, "node_part", lambda node, *a: asked.append(node) or node_part(node, *a))
    found = {}
    npu_breakdowns = breakdown.npu_breakdowns

    def spy(record, *a, **k):
        found["record"] = record
        return npu_breakdowns(record, *a, **k)

    monkeypatch.setattr(breakdown, "npu_breakdowns", spy)
    assert main(["run", str(job)]) == 0
    after = capsys.readouterr()
    assert after.out == before.out
    record = found["record"]
    intervals = sum(len(rec.ids) for rec in record.npus)
    assert all(len(rec.ids) < breakdown.ARRAY_SWEEP_FROM for rec in record.npus)  # the small sweep's case
    pairs = {(node.type, id(node.attrs)) for node in asked}
    assert len(asked) == len(pairs) < intervals


def test_the_json_texts_npu_keys_are_encoded_without_a_dumps_call_each(monkeypatch):
    """``--json-out``'s 16,384 NPU keys each went through ``json.dumps`` (its Python-level
    argument checks, per key) although a key is a plain string the C encoder writes the same;
    now ``json.dumps`` runs once per distinct entry, and the text is still ``json.dumps(data,
    indent=1)``'s, keys needing escapes included."""
    import json

    from simpy_astra.report import json_text

    shared = {"finished_ns": 5, "breakdown_ns": {"comm.tp": 2, "compute.gemm": 3}}
    other = {"finished_ns": 7, "breakdown_ns": {}}
    npus = {str(k): shared if k % 3 else other for k in range(300)}
    npus['"odd"\u00e9\n'] = shared
    data = {"iteration_time_ns": 7, "npus": npus, "units": "ns"}
    expected = json.dumps(data, indent=1)
    calls = []
    dumps = json.dumps
    monkeypatch.setattr(json_text.json, "dumps", lambda *a, **k: calls.append(1) or dumps(*a, **k))
    assert json_text.indented_json(data) == expected
    assert len(calls) < 20  # the top level's keys and values and the two distinct entries, not 301 keys
