"""A new pipeline schedule is one function and a registry line: a toy schedule registered here
runs a Megatron job, and its step time is the closed form of its pipeline's bubble."""

from __future__ import annotations

import dataclasses
import json

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.layers import ChunkModel
from simpy_astra.workloads.megatron.steps import Compute
from simpy_astra.workloads.schedules import registry
from simpy_astra.workloads.schedules.task import Kind, Task

#: 4 stages of 4 layers, 8 micro-batches: compute dominates (small vocabulary, short sends)
PIPE = ("--num-layers 16 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 "
        "--global-batch-size 8 --pipeline-model-parallel-size 4 --bf16 --vocab-size 128")
P, M = 4, 8


def gpipe(stage: int, pp: int, micro_batches: int, chunks: int) -> list[Task]:
    """GPipe: every forward, then every backward."""
    return ([Task(Kind.FORWARD, m, 0) for m in range(micro_batches)]
            + [Task(Kind.BACKWARD, m, 0) for m in range(micro_batches)])


def one_at_a_time(stage: int, pp: int, micro_batches: int, chunks: int) -> list[Task]:
    """No pipelining: each micro-batch's backward before the next forward."""
    return [Task(kind, m, 0) for m in range(micro_batches) for kind in (Kind.FORWARD, Kind.BACKWARD)]


def split_backward(stage: int, pp: int, micro_batches: int, chunks: int) -> list[Task]:
    """Zero-bubble's kinds (input then weight gradients), which Megatron jobs do not run yet."""
    return [Task(k, m, 0) for m in range(micro_batches)
            for k in (Kind.FORWARD, Kind.BACKWARD_INPUT, Kind.BACKWARD_WEIGHT)]


@pytest.fixture
def schedules(monkeypatch):
    """The registry with the toy schedules registered (restored after the test)."""
    monkeypatch.setattr(registry, "SCHEDULES", dict(registry.SCHEDULES))
    registry.register("gpipe", gpipe)
    registry.register("one-at-a-time", one_at_a_time)
    registry.register("split-backward", split_backward)
    return registry.SCHEDULES


def _step_s(tmp_path, monkeypatch, schedule_name: str) -> float:
    """Simulated step time of PIPE on 4 A100s under the schedule named."""
    from simpy_astra.config.scenario import load_scenario
    from simpy_astra.simulation import Simulation
    from simpy_astra.workloads.megatron import generator

    real = generator.parse
    monkeypatch.setattr(generator, "parse", lambda *a, **k: dataclasses.replace(
        real(*a, **k), pipeline_schedule=schedule_name))
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / schedule_name))
    scenario = tmp_path / f"{schedule_name}.yaml"
    scenario.write_text(json.dumps({"workload": {"generate": "megatron", "args": PIPE},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": P}}))
    inputs = load_scenario(str(scenario))
    reports = Simulation(inputs).run()
    return inputs.workload.figures(max(r.finished_cycles for r in reports)).iteration_time_ns / 1e9


def _task_and_optimizer_s() -> tuple[float, float]:
    """(forward + backward of one micro-batch through one stage, Adam over a stage's weights)
    from the kernel model and 38 B per parameter streamed."""
    job = parse(PIPE, P)
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": P}, "c").gpu_model()
    model, dense = ChunkModel(job, gpu), (False,) * len(job.chunk_layers(0, 0))
    steps = model.forward(dense, False, False) + model.backward(dense, False, False)
    task = sum(s.total_s for s in steps if isinstance(s, Compute))
    params = len(job.chunk_layers(0, 0)) * (12 * 2048 * 2048 + 13 * 2048)
    return task, params * 38 / (gpu.hbm_gb_s * 1e9 * gpu.memory_efficiency)


def test_a_registered_toy_schedule_runs_a_megatron_job(tmp_path, monkeypatch, schedules):
    """GPipe's bubble is 1F1B's: (m + p - 1)(tf + tb) (Huang et al. 2019; Narayanan et al.,
    SC'21, 2.2); running micro-batches one at a time takes m p (tf + tb): the toy schedules, not
    Megatron's own, set the step."""
    task, optimizer = _task_and_optimizer_s()
    assert _step_s(tmp_path, monkeypatch, "gpipe") == pytest.approx((M + P - 1) * task + optimizer, rel=0.03)
    assert _step_s(tmp_path, monkeypatch, "one-at-a-time") == pytest.approx(M * P * task + optimizer, rel=0.03)


def test_the_stage_graph_follows_the_registered_order(schedules):
    from simpy_astra.workloads.megatron.schedule import build_stage

    job = dataclasses.replace(parse(PIPE, P), pipeline_schedule="gpipe")
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": P}, "c").gpu_model()
    names = [op.name.split(".")[0] for op in build_stage(job, gpu, 0).ops]
    tasks = list(dict.fromkeys(n for n in names if n[0] in "FB" and n[1:].isdigit()))
    assert tasks == [f"F{m}" for m in range(M)] + [f"B{m}" for m in range(M)]


def test_split_backwards_are_refused_by_megatron_jobs_until_modelled(schedules):
    from simpy_astra.workloads.megatron.schedule import build_stage

    job = dataclasses.replace(parse(PIPE, P), pipeline_schedule="split-backward")
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": P}, "c").gpu_model()
    with pytest.raises(ValueError, match="BACKWARD_INPUT tasks are not modelled"):
        build_stage(job, gpu, 0)


def test_registry_refuses_unknown_and_duplicate_names(schedules):
    with pytest.raises(ValueError, match="unknown pipeline schedule 'zb-h1'"):
        registry.schedule("zb-h1")
    with pytest.raises(ValueError, match="already registered"):
        registry.register("1f1b", gpipe)


def test_megatrons_choice_follows_virtual_stages():
    assert parse(PIPE, P).schedule_name == "1f1b"
    assert parse(PIPE + " --num-layers-per-virtual-pipeline-stage 2", P).schedule_name == "interleaved-1f1b"
