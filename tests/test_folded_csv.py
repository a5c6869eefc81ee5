"""``--csv-out`` on a folded run: a generated workload's orbit members share their representative's
nodes and do at every tick what it does, so nodes.csv lists each representative's rows once (its
id in ``npu``) and npus.csv maps every NPU to it (``simulated_npu``); joined
(``csv_tables.expanded_rows``) they are every NPU's rows, the unfolded run's row for row (as ``--trace-out``'s events are, tests/test_folded_traces.py);
``--csv-out`` no longer switches such a run to simulating every NPU. ET files, whose members may
name their nodes apart, still run unfolded for it."""

from __future__ import annotations

import csv
import io
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
    """nodes.csv of a run, expanded to every NPU's rows (csv text, as an unfolded run writes it)."""
    assert main(["run", scenario, "--quiet", "--csv-out", str(tmp_path / name), *flags]) == 0
    return _text([csv_tables.NODE_COLUMNS, *csv_tables.expanded_rows(str(tmp_path / name))])


def _text(rows) -> bytes:
    out = io.StringIO(newline="")
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


def test_a_folded_runs_nodes_csv_is_the_unfolded_runs_each_orbit_once(tmp_path, capsys, scenario, simulated):
    full = _csv(tmp_path, scenario, "full", "--fold-symmetry", "off")
    assert _csv(tmp_path, scenario, "default") == full
    assert _csv(tmp_path, scenario, "folded", "--fold-symmetry", "on") == full
    assert simulated == [32, 2, 2]  # unfolded, then one NPU a pipeline stage
    lines = full.decode().splitlines()
    assert {line.split(",")[0] for line in lines[1:]} == {str(n) for n in range(32)}  # every NPU's rows
    # unfolded, every NPU simulated: nodes.csv is every row, as it was always written
    assert (tmp_path / "full" / "nodes.csv").read_bytes() == full
    assert (tmp_path / "full" / "npus.csv").read_bytes() == \
        b"npu,simulated_npu\r\n" + "".join(f"{n},{n}\r\n" for n in range(32)).encode()
    # folded: the two representatives' rows once each, every NPU mapped to its stage's
    with open(tmp_path / "default" / "npus.csv", newline="") as f:
        simulated_for = dict(csv.reader(f))
    with open(tmp_path / "default" / "nodes.csv", newline="") as f:
        listed = [row[0] for row in csv.reader(f)]
    assert simulated_for.pop("npu") == "simulated_npu" and sorted(simulated_for, key=int) == [str(n) for n in range(32)]
    assert listed[0] == "npu" and set(listed[1:]) == set(simulated_for.values()) == {"0", "16"}
    assert len(listed) - 1 == (len(lines) - 1) * 2 // 32  # each row once per orbit, not once per NPU
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


def test_each_npus_rows_are_worked_out_once_for_nodes_csv_and_layers_csv(tmp_path, monkeypatch):
    """layers.csv (a converted text workload's, run unfolded) is summed from the rows nodes.csv
    writes, in the same walk: a second walk worked every NPU's rows out again."""
    calls: list[int] = []
    own = csv_tables._own_rows
    monkeypatch.setattr(csv_tables, "_own_rows", lambda *args: calls.append(1) or own(*args))
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(SCENARIOS / "gemm_dlrm_mlp.yaml"), "--quiet", "--csv-out", "csv"]) == 0
    with open(tmp_path / "csv" / "npus.csv") as f:
        npus = sum(1 for _ in f) - 1
    assert (tmp_path / "csv" / "layers.csv").exists() and npus == 16 and len(calls) == npus
