"""The seams between layers (issue 50): generators and backends enter through their
registries, and a generated job's arguments are read once per scenario."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARGS = ("--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 "
        "--global-batch-size 8 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --fp16 "
        "--vocab-size 128")


def test_megatron_arguments_are_parsed_once_per_scenario(tmp_path, monkeypatch) -> None:
    """Loading the scenario, writing the traces lazily and running: one parse (it was four)."""
    from simpy_astra.config.scenario import load_scenario
    from simpy_astra.simulation import Simulation
    from simpy_astra.workloads.megatron import generator

    calls = []
    real = generator.parse
    monkeypatch.setattr(generator, "parse", lambda *a, **k: calls.append(a) or real(*a, **k))
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    scenario = tmp_path / "s.yaml"
    scenario.write_text(json.dumps({"workload": {"generate": "megatron", "args": ARGS},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": 4}}))
    inputs = load_scenario(str(scenario))
    reports = Simulation(inputs).run()
    assert len(calls) == 1
    assert len(reports) == 4
    assert inputs.workload.reports_figures
    assert inputs.workload.figures(max(r.finished_cycles for r in reports)).iteration_time_ns > 0
    # the layout the generator declared: tp 2, pp 2 (dp 1); its groups name their dimensions
    assert tuple(inputs.network.npus_count) == (2, 2)
    assert {"tp", "emb"} == set(inputs.workload.group_names.values())
    assert inputs.workload.p2p_name == "pp"


def test_simulation_inputs_are_frozen() -> None:
    from simpy_astra.config.inputs import SimulationInputs

    assert dataclasses.fields(SimulationInputs)
    with pytest.raises(dataclasses.FrozenInstanceError):
        SimulationInputs.__new__(SimulationInputs).backend = "packet"


def test_every_backend_declares_what_the_rest_asks_of_it() -> None:
    """One BackendSpec each; the default is one of them; the bound check applies to a backend
    that ignores contention only, and suggests one that models it."""
    from simpy_astra.network import BACKENDS, DEFAULT_BACKEND

    assert DEFAULT_BACKEND in BACKENDS
    for name, spec in BACKENDS.items():
        assert spec.name == name and spec.help and spec.folds in ("pairs", "links", None)
        assert not (spec.bound_check and spec.models_contention)
    assert any(spec.models_contention for spec in BACKENDS.values())


def test_no_backend_or_generator_name_is_compared_outside_its_registry() -> None:
    import re

    found = []
    for path in (ROOT / "simpy_astra").rglob("*.py"):
        text = path.read_text()
        for pattern in (r"generate\"?\)? ?[!=]= ?[\"']", r"backend ?[!=]= ?[\"'][a-z]", r"__class__ is"):
            found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in re.finditer(pattern, text)]
    for folder in ("workloads", "collectives", "topologies"):
        for path in (ROOT / folder).rglob("*.py"):
            found += [f"{path.relative_to(ROOT)}" for _ in re.finditer(r"generate\"?\)? ?== ?[\"']", path.read_text())]
    assert found == []


def test_cluster_keys_with_units_and_their_older_names_give_one_cluster() -> None:
    """``inter_node_gbit_s`` (Gbit/s) and ``hbm_gb_s`` (10^9 B/s), or the names users wrote
    before units were spelled in them; an error names the key as the user wrote it."""
    from simpy_astra.config.cluster import load_cluster
    from simpy_astra.errors import InputError

    new = load_cluster({"preset": "dgx-a100-80gb", "gpus": 16, "inter_node_gbit_s": 800,
                        "gpu": {"hbm_gb_s": 1000}}, "s.yaml: cluster")
    old = load_cluster({"preset": "dgx-a100-80gb", "gpus": 16, "inter_node_gbps": 800,
                        "gpu": {"hbm_gbps": 1000}}, "s.yaml: cluster")
    assert new == old and new.node["inter_node_gbit_s"] == 800 and new.gpu_model().hbm_gb_s == 1000
    # 800 Gbit/s per node of 8 GPUs, one rail each at 0.94 of it: 800/8/8 GB/s * 0.94 in GiB/s
    assert new.network_mapping()["bandwidth"][-1] == pytest.approx(800 / 8 / 8 * 1e9 * 0.94 / 2**30, rel=1e-6)
    with pytest.raises(InputError, match=r"cluster.gpu.hbm_gbps: must be between"):
        load_cluster({"preset": "dgx-a100-80gb", "gpus": 16, "gpu": {"hbm_gbps": -1}}, "s.yaml: cluster")
    with pytest.raises(InputError, match=r"cluster.inter_node_gbit_s: must be between"):
        load_cluster({"preset": "dgx-a100-80gb", "gpus": 16, "inter_node_gbit_s": 1e-300}, "s.yaml: cluster")


@pytest.mark.parametrize(("base_key", "axis"), [("inter_node_gbit_s", "cluster.inter_node_gbps"),
                                                ("inter_node_gbps", "cluster.inter_node_gbit_s"),
                                                (None, "cluster.inter_node_gbps")])
def test_a_sweep_axis_sets_the_nic_bandwidth_under_either_name(tmp_path, base_key, axis) -> None:
    """The axis's value is the point's bandwidth whichever name the base scenario wrote."""
    import yaml

    from simpy_astra.config.cluster import load_cluster
    from simpy_astra.sweep.spec import load_sweep

    cluster = {"preset": "dgx-a100-80gb", "gpus": 16, **({base_key: 1600} if base_key else {})}
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"base": {"workload": {"generate": "megatron", "args": ARGS}, "cluster": cluster},
                                     "axes": {axis: [400, 3200]}}, sort_keys=False))
    points = load_sweep(str(sweep)).points()
    got = [load_cluster(p.scenario["cluster"], "c").node["inter_node_gbit_s"] for p in points]
    assert got == [400, 3200]


def test_no_function_in_the_cli_is_over_80_lines() -> None:
    """The run is a plan plus report writers (cli/run_reports.py), not one god-function."""
    import ast

    long = [f"{path.name}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path in (ROOT / "simpy_astra" / "cli").glob("*.py")
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno + 1 > 80]
    assert long == []


def test_a_quiet_run_wants_only_its_headline_and_asked_files() -> None:
    """Each writer knows from the plan when it is wanted: --quiet prints the headline alone,
    --reference-lines with it no headline; --json-out adds the JSON, nothing else."""
    from simpy_astra.cli.run_reports import WRITERS, Finished, RunPlan

    def wanted(plan: RunPlan, training: object = None) -> list[str]:
        sim = dataclasses.make_dataclass("Sim", [("written_files", list)])([])
        done = Finished(plan, None, sim, [], None, None, None, 0.0, None, None, training, None)
        return [write.__name__ for when, write in WRITERS if when(done)]

    assert wanted(RunPlan(quiet=True)) == ["_warnings", "_headline"]
    assert wanted(RunPlan(quiet=True, reference_lines=True)) == ["_warnings"]
    assert wanted(RunPlan(json_out="o.json"), training=object()) == ["_warnings", "_answer", "_json"]
    assert wanted(RunPlan(rich_summary=True)) == ["_warnings", "_summary"]
