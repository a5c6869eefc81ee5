"""Review of round 15's console work (h1): the breakdown's spread from distinct breakdowns,
the NPU keys' JSON text, the overlap beside CPU ops, a sweep with nothing left to run.
Each figure is held to one made another way: ``statistics.median`` over every NPU,
``json.dumps``, the same job run unfolded, the sweep's first run."""

from __future__ import annotations

import itertools
import json
import statistics

import pytest

from simpy_astra.cli.main import main
from simpy_astra.report.breakdown import _weighed
from simpy_astra.report.json_text import indented_json
from tests.test_console import JOB


@pytest.fixture(autouse=True)
def _own_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SIMPY_ASTRA_PROGRESS", "0")


def test_weighed_figures_are_those_of_every_value_written_out():
    """Every way to weigh up to three values (ties, 0, an int past a float's 53 bits) by 1..4
    NPUs: the same min, median (the mean of the middle two of an even count, a float then)
    and max as ``statistics`` over the values repeated, of the same types."""
    values = (0, 3, 7, 2**64 - 1)
    for k in (1, 2, 3):
        for vals in itertools.product(values, repeat=k):
            for counts in itertools.product(range(1, 5), repeat=k):
                flat = [v for v, n in zip(vals, counts, strict=True) for _ in range(n)]
                want = (min(flat), statistics.median(flat), max(flat))
                got = _weighed(list(zip(vals, counts, strict=True)))
                assert got == want and [type(x) for x in got] == [type(x) for x in want], (vals, counts)


@pytest.mark.parametrize("key", ["", "\u2028", "\u00e9", "\x00\x1f\x7f", "\ud800", "\U0001d11e", 'q"\\/'])
def test_odd_npu_keys_are_written_as_json_dumps_writes_them(key):
    data = {"npus": {key: {"a": 1}, key + "2": {"a": 1}, "3": {"b": [1, 2]}}, "z": None}
    assert indented_json(data) == json.dumps(data, indent=1)


def test_a_folded_job_reports_what_it_reports_unfolded(tmp_path, capsys):
    """A 64-GPU Megatron job (tp, dp and pp groups; host ops beside the GPU's) run folded and
    unfolded: the same tables (the spread's medians of 64 NPUs, the mean of two figures) and
    the same NPU entries in --json-out, the overlap beside the host's ops included."""
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    found = {}
    for fold in ("on", "off"):
        out = tmp_path / f"{fold}.json"
        assert main(["run", str(job), "--fold-symmetry", fold, "--json-out", str(out)]) == 0
        found[fold] = capsys.readouterr().out, json.loads(out.read_text())["npus"]
    assert found["on"] == found["off"]
    text, npus = found["on"]
    assert "where the time went" in text
    assert any(e.get("comp_comm_overlap_ns") and e.get("cpu_time_ns") for e in npus.values())


def test_a_sweep_run_again_over_all_its_rows_gives_its_summary_best_and_exit(tmp_path, capsys):
    """Nothing left to run: no pool, yet the summary (stdout), best.json and exit 0 as the
    first run's."""
    from simpy_astra.cli.sweep import main as sweep_main

    spec = tmp_path / "sweep.yaml"
    from tests.test_sweep import ROOT

    spec.write_text(f"name: tiny\nbase: {ROOT / 'scenarios' / 'torus3d_all_reduce.yaml'}\n"
                    "axes:\n  network.bandwidth: [50, 100]\nminimise: finish_ns\n"
                    "report: [finish_ns, exposed_comm_ns]\n")
    out = tmp_path / "r"
    args = [str(spec), "--out", str(out), "--jobs", "1", "--no-plots"]
    assert sweep_main(args) == 0
    first = capsys.readouterr()
    best = (out / "best.json").read_text()
    assert sweep_main(args) == 0
    again = capsys.readouterr()
    assert again.out == first.out and (out / "best.json").read_text() == best
    assert "running 0 on" in again.err and "2 already in" in again.err and "wrote " in again.err
