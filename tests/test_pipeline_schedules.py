"""A new pipeline schedule is one function and a registry line: a toy schedule registered here
runs a Megatron job, and its step time is the closed form of its pipeline's bubble."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.plugins import PluginError
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.kernels import gemm_seconds, streaming_seconds
from simpy_astra.workloads.megatron.layers import ChunkModel
from simpy_astra.workloads.megatron.steps import Compute, GradsReady
from simpy_astra.workloads.schedules import registry
from simpy_astra.workloads.schedules.task import Kind, Task, in_flight
from tests.test_megatron_breakdown import _kinds_s as _kinds

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


def weights_last(stage: int, pp: int, micro_batches: int, chunks: int) -> list[Task]:
    """1F1B with each backward split (zero-bubble's kinds): the input gradients in 1F1B's
    places, every weight gradient after the last of them."""
    order = [Task(Kind.BACKWARD_INPUT, t.micro_batch, 0) if t.kind is Kind.BACKWARD else t
             for t in registry.schedule("1f1b")(stage, pp, micro_batches, 1)]
    return order + [Task(Kind.BACKWARD_WEIGHT, m, 0) for m in range(micro_batches)]


@pytest.fixture
def schedules(monkeypatch):
    """The registry with the toy schedules registered (restored after the test)."""
    monkeypatch.setattr(registry, "SCHEDULES", dict(registry.SCHEDULES))
    registry.register("gpipe", gpipe)
    registry.register("one-at-a-time", one_at_a_time)
    registry.register("weights-last", weights_last)
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
    model, dense = ChunkModel(job, gpu), job.chunk_kinds(0, 0)
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


def _split_task_s() -> tuple[float, float, float]:
    """(forward, input gradient, weight gradient) of one micro-batch through stage 0 of PIPE."""
    job = parse(PIPE, P)
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": P}, "c").gpu_model()
    model, dense = ChunkModel(job, gpu), job.chunk_kinds(0, 0)
    inputs, weights = model.backward_split(dense, False, False)
    return tuple(sum(_kinds(steps).values()) for steps in (model.forward(dense, False, False), inputs, weights))


def test_a_split_backward_moves_the_weight_gradients_and_nothing_else():
    """The weight-gradient task of a layer is its four weight-gradient GEMMs (QKV, projection,
    fc1, fc2: weights x tokens) and their four bias gradients (one read of the output gradient,
    2 B an element), with the markers of the gradients they complete; the input-gradient task
    is the rest, so the two add up to the whole backward, kind by kind."""
    job = parse(PIPE, P)
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": P}, "c").gpu_model()
    model, dense = ChunkModel(job, gpu), job.chunk_kinds(1, 0)
    inputs, weights = model.backward_split(dense, False, False)
    whole = _kinds(model.backward(dense, False, False))
    split = {k: _kinds(inputs).get(k, 0.0) + _kinds(weights).get(k, 0.0) for k in whole}
    assert split == pytest.approx(whole, rel=1e-12)
    h, t = 2048, 2048
    shapes = ((h, 3 * h), (h, h), (h, 4 * h), (4 * h, h))  # (input, output) features
    by_hand = len(dense) * sum(gemm_seconds(gpu, n_in, n_out, t, 1, 2) for n_in, n_out in shapes)
    bias = len(dense) * sum(streaming_seconds(gpu, t * n_out * 2) for _, n_out in shapes)
    assert _kinds(weights) == pytest.approx({"gemm": by_hand, "elementwise": bias}, rel=1e-12)
    assert sum(s.params for s in weights if isinstance(s, GradsReady)) == len(dense) * model.layer_parameters()
    assert not any(isinstance(s, GradsReady) for s in inputs)


def test_weight_gradients_last_shorten_the_step_by_the_closed_form(tmp_path, monkeypatch, schedules):
    """With every weight gradient after the last input gradient, the input gradients form
    1F1B's chain, (m + p - 1)(tf + ti), and the first stage then runs its m weight gradients:
    (m + p - 1)(tf + ti) + m tw, (p - 1) tw less than 1F1B's (m + p - 1)(tf + ti + tw)."""
    tf, ti, tw = _split_task_s()
    _, optimizer = _task_and_optimizer_s()
    step = _step_s(tmp_path, monkeypatch, "weights-last")
    assert step == pytest.approx((M + P - 1) * (tf + ti) + M * tw + optimizer, rel=0.03)
    assert _step_s(tmp_path, monkeypatch, "1f1b") - step == pytest.approx((P - 1) * tw, rel=0.15)


def test_zb_h1_runs_its_papers_closed_form(tmp_path, monkeypatch, schedules):
    """ZB-H1 (Qi et al., ICLR 2024, section 3.1): its weight gradients fill 1F1B's cool-down,
    leaving a bubble of (p - 1)(tf + ti - tw): a step of m (tf + ti + tw) + (p - 1)(tf + ti -
    tw), and on every stage at most the p micro-batches 1F1B holds on its first."""
    from simpy_astra.workloads.megatron.memory import activation_bytes

    tf, ti, tw = _split_task_s()
    _, optimizer = _task_and_optimizer_s()
    job = parse(PIPE, P)
    by_hand = M * (tf + ti + tw) + (P - 1) * (tf + ti - tw) + optimizer
    assert _step_s(tmp_path, monkeypatch, "zb-h1") == pytest.approx(by_hand, rel=0.03)
    # a middle stage s holds 1F1B's p - s micro-batches and the s weight gradients it defers
    assert [in_flight(registry.schedule("zb-h1")(s, P, M, 1)) for s in range(P)] == [P] * P
    middle = activation_bytes(job, 1) / (P - 1)  # 1F1B's stage 1 holds p - 1
    assert activation_bytes(dataclasses.replace(job, pipeline_schedule="zb-h1"), 1) == pytest.approx(P * middle)


def test_a_split_schedule_holds_activations_until_the_weight_gradient(schedules):
    """A forward's activations are kept until its micro-batch's weight gradient (which reads the
    layers' inputs): weights-last holds all m micro-batches on every stage, GPipe too, 1F1B
    p - stage."""
    from simpy_astra.workloads.megatron.memory import activation_bytes

    def held(name: str, stage: int) -> float:
        return activation_bytes(dataclasses.replace(parse(PIPE, P), pipeline_schedule=name), stage)

    one_layer_set = held("1f1b", P - 2) / 2  # stage 2 of 4 holds two micro-batches
    for name in ("weights-last", "gpipe"):
        assert held(name, P - 2) == pytest.approx(M * one_layer_set)
    assert held("1f1b", 1) == pytest.approx(3 * one_layer_set)


def test_a_weight_gradient_before_its_input_gradient_is_refused(schedules):
    def backwards(stage: int, pp: int, micro_batches: int, chunks: int) -> list[Task]:
        return [Task(k, m, 0) for m in range(micro_batches)
                for k in (Kind.FORWARD, Kind.BACKWARD_WEIGHT, Kind.BACKWARD_INPUT)]

    registry.register("backwards", backwards)
    with pytest.raises(PluginError, match="BACKWARD_WEIGHT of micro-batch 0, chunk 0 before its BACKWARD_INPUT"):
        registry.schedule("backwards")(0, P, M, 1)


def test_registry_refuses_unknown_and_duplicate_names(schedules):
    with pytest.raises(ValueError, match="unknown pipeline schedule 'zb-h2'"):
        registry.schedule("zb-h2")
    with pytest.raises(ValueError, match="already registered"):
        registry.register("1f1b", gpipe)


def test_megatrons_choice_follows_virtual_stages():
    assert parse(PIPE, P).schedule_name == "1f1b"
    assert parse(PIPE + " --num-layers-per-virtual-pipeline-stage 2", P).schedule_name == "interleaved-1f1b"


@pytest.mark.parametrize("kinds, counts", [
    ((Kind.FORWARD, Kind.BACKWARD_INPUT), "backwarded 1 (BACKWARD_INPUT 1, BACKWARD_WEIGHT 0 of them)"),
    ((Kind.FORWARD, Kind.BACKWARD_INPUT, Kind.BACKWARD), "backwarded 2 (BACKWARD_INPUT 1, BACKWARD_WEIGHT 0"),
    ((Kind.FORWARD, Kind.BACKWARD_INPUT, Kind.BACKWARD_WEIGHT, Kind.BACKWARD_WEIGHT), "BACKWARD_WEIGHT 2 of them"),
])
def test_a_split_backward_out_of_contract_says_which_half(schedules, kinds, counts):
    """An input gradient whose weight gradient never runs (the step would miss its gradients),
    a whole backward beside a split one, a weight gradient twice: each named, with the halves."""
    registry.register("broken", lambda stage, pp, micro_batches, chunks: [
        Task(k, m, 0) for m in range(micro_batches) for k in kinds])
    with pytest.raises(PluginError, match=re.escape(counts)):
        registry.schedule("broken")(0, P, M, 1)
