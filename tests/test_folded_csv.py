"""``--csv-out`` on a folded run: a generated workload's orbit members share their representative's
nodes and do at every tick what it does, so nodes.csv is the representatives' rows relabelled,
byte for byte the unfolded run's (as ``--trace-out``'s events are, tests/test_folded_traces.py);
``--csv-out`` no longer switches such a run to simulating every NPU. ET files, whose members may
name their nodes apart, still run unfolded for it."""

from __future__ import annotations

import json

import pytest

from simpy_astra.cli.main import main
from simpy_astra.folding.network import FoldedNetwork
from simpy_astra.report import csv_tables
from simpy_astra.simulation import Simulation
from tests.scenario_files import SCENARIOS, error_lines

#: tp 2 x cp 4 x pp 2 on 32 H100s: one NPU a pipeline stage simulated when folded
ARGS = ("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings "
        "2048 --micro-batch-size 1 --global-batch-size 8 --bf16 --vocab-size 5120 --tensor-model-parallel-size 2 "
        "--context-parallel-size 4 --cp-comm-type a2a --pipeline-model-parallel-size 2")


@pytest.fixture
def scenario(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps({"workload": {"generate": "megatron", "args": ARGS},
                                "cluster": {"preset": "dgx-h100", "gpus": 32}}))
    return str(path)


@pytest.fixture
def simulated(monkeypatch):
    """How many NPUs each run that wrote nodes.csv simulated."""
    counts: list[int] = []
    write = csv_tables.write_csv_reports

    def counting(record, folder, breakdowns=None):
        counts.append(len(record.sim.npus))
        return write(record, folder, breakdowns)

    monkeypatch.setattr(csv_tables, "write_csv_reports", counting)
    return counts


def _csv(tmp_path, scenario: str, name: str, *flags: str) -> bytes:
    assert main(["run", scenario, "--quiet", "--csv-out", str(tmp_path / name), *flags]) == 0
    return (tmp_path / name / "nodes.csv").read_bytes()


def test_a_folded_runs_nodes_csv_is_the_unfolded_runs_byte_for_byte(tmp_path, capsys, scenario, simulated):
    full = _csv(tmp_path, scenario, "full", "--fold-symmetry", "off")
    assert _csv(tmp_path, scenario, "default") == full
    assert _csv(tmp_path, scenario, "folded", "--fold-symmetry", "on") == full
    assert simulated == [32, 2, 2]  # unfolded, then one NPU a pipeline stage
    lines = full.decode().splitlines()
    assert {line.split(",")[0] for line in lines[1:]} == {str(n) for n in range(32)}  # every NPU's rows
    assert not (tmp_path / "full" / "layers.csv").exists() and not (tmp_path / "default" / "layers.csv").exists()


def test_a_folded_run_that_ran_again_unfolded_writes_the_reruns_rows(tmp_path, capsys, scenario, simulated,
                                                                     monkeypatch):
    """The rows are the unfolded rerun's, which the record follows: two simulations, the
    folded one and its rerun, not a third for the rows."""
    full = _csv(tmp_path, scenario, "full", "--fold-symmetry", "off")
    monkeypatch.setattr(FoldedNetwork, "broken_symmetry", "a link met two NPUs' messages (the test's)")
    runs = []
    run = Simulation.run
    monkeypatch.setattr(Simulation, "run", lambda sim, *a, **k: runs.append(len(sim.npus)) or run(sim, *a, **k))
    assert _csv(tmp_path, scenario, "rerun") == full
    assert "ran unfolded" not in capsys.readouterr().err  # --quiet prints no notes (test_console_round4)
    assert simulated == [32, 32] and runs == [2, 32]


def test_et_files_still_need_every_npus_own_events(tmp_path, capsys):
    err = error_lines(capsys, ["run", str(SCENARIOS / "default.yaml"), "--fold-symmetry", "on",
                               "--csv-out", str(tmp_path / "csv")])
    assert err == ["error: --fold-symmetry on: --csv-out records every NPU's own events, which a folded run "
                   "does not simulate; drop --fold-symmetry on (the run is then unfolded) or --csv-out"]


@pytest.mark.parametrize("fold", ["on", "off"])
def test_the_size_checks_traces_are_decoded_once(tmp_path, scenario, monkeypatch, fold):
    """The checks of nodes.csv's and the trace's size decode one trace per pipeline stage before
    the build; the build takes those nodes instead of decoding the files again (0.3 s of a
    1,536-GPU step), and holds none it does not simulate."""
    from simpy_astra.folding import run as fold_run
    from simpy_astra.workloads import chakra

    reads: list[str] = []
    decode = chakra.read_et

    def counting(path, **caches):
        reads.append(str(path))
        return decode(path, **caches)

    monkeypatch.setattr(chakra, "read_et", counting)
    monkeypatch.setattr(fold_run, "read_et", counting)
    _csv(tmp_path, scenario, "once", "--trace-out", str(tmp_path / "t.json"), "--fold-symmetry", fold)
    assert len(reads) == len(set(reads)) == (2 if fold == "on" else 32)
