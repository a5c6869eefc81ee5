"""``--trace-out`` on a folded run: a generated workload's NPUs of one orbit share their
representative's nodes and do at every tick what it does, so the trace of every NPU (or of
``--trace-npus``) is the representatives' events relabelled, event for event the unfolded
run's; a 16,384-GPU job's first eight NPUs no longer cost the whole machine unfolded."""

from __future__ import annotations

import dataclasses
import json

from simpy_astra.cli.main import main
from simpy_astra.config.scenario import load_scenario
from simpy_astra.report.recorder import attach
from simpy_astra.report.timeline import trace_events
from simpy_astra.simulation import Simulation
from tests.scenario_files import SCENARIOS, error_lines

#: context-parallel all-to-alls are played as messages (chunk tracks), the rest timed as NCCL's
ARGS = ("--num-layers 2 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings "
        "2048 --micro-batch-size 1 --global-batch-size 8 --bf16 --vocab-size 5120 --tensor-model-parallel-size 2 "
        "--context-parallel-size 4 --cp-comm-type a2a --pipeline-model-parallel-size 2")


def _scenario(tmp_path) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps({"workload": {"generate": "megatron", "args": ARGS},
                                "cluster": {"preset": "dgx-h100", "gpus": 32}}))
    return str(path)


def _spans(path) -> list[tuple]:
    events = json.loads(path.read_text())["traceEvents"]
    return sorted(json.dumps(e, sort_keys=True) for e in events)


def test_a_folded_runs_trace_is_the_unfolded_runs_event_for_event(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    path = _scenario(tmp_path)
    traces = []
    for fold in (True, False):
        sim = Simulation(dataclasses.replace(load_scenario(path), fold_symmetry=fold))
        record = attach(sim, record_chunks=True)
        sim.run()
        traces.append((len(sim.npus), trace_events(record), trace_events(record, [0, 5, 17, 31])))
    (folded_npus, folded, some), (full_npus, full, full_some) = traces
    assert folded_npus == 2 and full_npus == 32  # one NPU a pipeline stage
    assert any(e.get("cat") == "chunk" for e in full)  # the all-to-alls' chunk phases are in it
    assert folded == full and some == full_some


def test_the_command_line_keeps_a_generated_run_folded_for_its_trace(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    path = _scenario(tmp_path)
    folded, full = tmp_path / "folded.json", tmp_path / "full.json"
    assert main(["run", path, "--quiet", "--fold-symmetry", "on", "--trace-out", str(folded),
                 "--trace-npus", "0-3,30"]) == 0
    assert main(["run", path, "--quiet", "--fold-symmetry", "off", "--trace-out", str(full),
                 "--trace-npus", "0-3,30"]) == 0
    assert _spans(folded) == _spans(full)
    assert {e["pid"] for e in json.loads(folded.read_text())["traceEvents"]} == {0, 1, 2, 3, 30}
    # ET files may name an orbit member's nodes apart: their trace still needs every NPU's own
    err = error_lines(capsys, ["run", str(SCENARIOS / "default.yaml"), "--fold-symmetry", "on",
                               "--trace-out", str(tmp_path / "t.json")])
    assert err == ["error: --fold-symmetry on: --trace-out records every NPU's own events, which a folded run "
                   "does not simulate; drop --fold-symmetry on (the run is then unfolded) or --trace-out"]
