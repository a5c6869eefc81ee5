"""ZB-V and the V placement it runs on (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR
2024, section 6): each stage holds two chunks, the model's ``s``-th and ``(2p - 1 - s)``-th.
The orders are replayed here by a pipeline of our own (each stage runs its tasks in order, a
task once what it takes is done), the bounds derived by hand."""

from __future__ import annotations

import dataclasses
import json

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.errors import InputError
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.layers import ChunkModel
from simpy_astra.workloads.megatron.steps import Compute
from simpy_astra.workloads.schedules import registry
from simpy_astra.workloads.schedules.task import UNIT, Kind, PassCosts, Task, in_flight
from simpy_astra.workloads.schedules.zero_bubble_v import zb_v

#: 4 stages x 2 chunks of 2 layers, 8 micro-batches (as tests/test_pipeline_schedules.py's PIPE)
V_PIPE = ("--num-layers 16 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 "
          "--global-batch-size 8 --pipeline-model-parallel-size 4 --bf16 --vocab-size 128 "
          "--virtual-pipeline-model-parallel-size 2")
P, M = 4, 8


def replay(orders: list[list[Task]], costs: PassCosts) -> float:
    """When the last stage ends: chunk ``c`` of stage ``s`` is the model's ``s`` (c 0) or
    ``2p - 1 - s`` (c 1); a forward takes the previous chunk's, an input gradient its own
    forward and the next chunk's input gradient, a weight gradient its input gradient."""
    pp, last = len(orders), 2 * len(orders) - 1
    cost = {Kind.FORWARD: costs.forward_s, Kind.BACKWARD_INPUT: costs.input_s, Kind.BACKWARD_WEIGHT: costs.weight_s}
    end: dict[tuple[str, int, int], float] = {}
    free, position = [0.0] * pp, [0] * pp
    while any(position[s] < len(orders[s]) for s in range(pp)):
        moved = False
        for s in range(pp):
            while position[s] < len(orders[s]):
                kind, mb, c = orders[s][position[s]]
                g = s if c == 0 else last - s
                needs = {Kind.FORWARD: [("F", g - 1, mb)] if g else [],
                         Kind.BACKWARD_INPUT: [("F", g, mb)] + ([("I", g + 1, mb)] if g < last else []),
                         Kind.BACKWARD_WEIGHT: [("I", g, mb)]}[kind]
                if not all(n in end for n in needs):
                    break
                free[s] = max([free[s]] + [end[n] for n in needs]) + cost[kind]
                end[(kind.value, g, mb)] = free[s]
                position[s] += 1
                moved = True
        assert moved, "the orders deadlock"
    return max(free)


@pytest.mark.parametrize("pp,m", [(2, 2), (2, 8), (4, 4), (4, 8), (4, 16), (8, 8)])
def test_unit_costs_reach_the_bound_of_the_last_stages_start(pp, m):
    """With every pass one unit, a stage runs 2 chunks x m micro-batches x 3 passes = 6m units,
    and the last stage's first forward cannot start before the first p - 1 chunks' forwards:
    no step is shorter than 6m + p - 1. The order reaches it, holding on every stage at most
    the 2p chunk passes (p micro-batches of two chunks) 1F1B holds on its first."""
    orders = [zb_v(s, pp, m) for s in range(pp)]
    assert replay(orders, UNIT) == 6 * m + pp - 1
    assert max(in_flight(order) for order in orders) <= 2 * pp


@pytest.mark.parametrize("pp,m", [(8, 32), (16, 64)])
def test_unit_bubble_is_under_zb_h1s(pp, m):
    """Deeper pipelines leave more than the bound but less than ZB-H1's bubble, (p - 1)(tf +
    ti - tw) with a whole stage's passes (two units each): 2 (p - 1)."""
    bubble = replay([zb_v(s, pp, m) for s in range(pp)], UNIT) - 6 * m
    assert pp - 1 <= bubble < 2 * (pp - 1)


def _chunk_costs() -> PassCosts:
    """Forward, input and weight gradient of one micro-batch through a middle chunk of V_PIPE,
    from the kernel model."""
    job = parse(V_PIPE, P)
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": P}, "c").gpu_model()
    model, dense = ChunkModel(job, gpu), job.chunk_kinds(1, 0)
    inputs, weights = model.backward_split(dense, False, False)
    return PassCosts(*(sum(s.total_s for s in steps if isinstance(s, Compute))
                       for steps in (model.forward(dense, False, False), inputs, weights)))


def _step_s(tmp_path, monkeypatch, args: str, schedule: str) -> float:
    monkeypatch.setenv("SIMPY_ASTRA_CACHE", str(tmp_path / "cache"))
    from simpy_astra.config.scenario import load_scenario
    from simpy_astra.simulation import Simulation

    scenario = tmp_path / f"{schedule}.yaml"
    scenario.write_text(json.dumps({"workload": {"generate": "megatron", "args": args, "schedule": schedule},
                                    "cluster": {"preset": "dgx-a100-80gb", "gpus": P}}))
    inputs = load_scenario(str(scenario))
    reports = Simulation(inputs).run()
    return inputs.workload.figures(max(r.finished_cycles for r in reports)).iteration_time_ns / 1e9


def test_a_megatron_job_runs_its_order_and_beats_zb_h1(tmp_path, monkeypatch):
    """The simulated step is the replay of the order built for the job's own pass times, plus
    the optimizer (Adam over a stage's four layers, as in tests/test_pipeline_schedules.py),
    within 3%; and it is shorter than ZB-H1's on the same layers (its step is checked there
    against the paper's closed form) and interleaved 1F1B's."""
    from tests.test_pipeline_schedules import _task_and_optimizer_s

    costs = _chunk_costs()
    _, optimizer = _task_and_optimizer_s()
    v = _step_s(tmp_path, monkeypatch, V_PIPE, "zb-v")
    assert v == pytest.approx(replay([zb_v(s, P, M, 2, costs) for s in range(P)], costs) + optimizer, rel=0.03)
    h1 = _step_s(tmp_path, monkeypatch, V_PIPE.replace(" --virtual-pipeline-model-parallel-size 2", ""), "zb-h1")
    assert v < h1 < _step_s(tmp_path, monkeypatch, V_PIPE, "interleaved-1f1b")


def test_a_v_keeps_the_turn_and_both_ends_of_the_model_on_their_stage():
    """In a V the last stage hands its first chunk's output to its second in memory (no send
    or receive between them), and the first stage holds the embedding and the output layer:
    with tied embeddings one matrix, so no embedding all-reduce between stages and no second
    copy of the vocabulary's weights anywhere."""
    from simpy_astra.workloads.megatron.memory import stage_parameters
    from simpy_astra.workloads.megatron.rank_layout import Layout
    from simpy_astra.workloads.megatron.schedule import build_stage
    from simpy_astra.workloads.transformer.graph import COLL, RECV, SEND

    job = dataclasses.replace(parse(V_PIPE, P), pipeline_schedule="zb-v")
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": P}, "c").gpu_model()
    assert [job.chunk_place(s, c).index for c in (0, 1) for s in range(P)] == [0, 1, 2, 3, 7, 6, 5, 4]
    last = build_stage(job, gpu, P - 1)
    p2p = [(op.name, op.peer_stage) for op in last.ops if op.kind in (SEND, RECV)]
    assert {peer for _, peer in p2p} == {-1}  # both chunks talk to stage 2 only
    assert not any(op.kind == COLL and op.dim == "emb" for s in range(P) for op in build_stage(job, gpu, s).ops)
    assert "emb" not in {dim for dim, _ in Layout.build(job).group_of}
    layers = 4 * (12 * 2048 * 2048 + 13 * 2048)  # four layers a stage, biases and norms included
    first = layers + 2048 * (128 + 2048) + 2 * 2048  # embedding (vocabulary and positions), final norm
    assert [stage_parameters(job, s)[0] for s in range(P)] == [first, layers, layers, layers]


def _scenario(tmp_path, args: str, schedule: str) -> str:
    path = tmp_path / "v.yaml"
    path.write_text(json.dumps({"workload": {"generate": "megatron", "args": args, "schedule": schedule},
                                "cluster": {"preset": "dgx-a100-80gb", "gpus": P}}))
    return str(path)


def test_zb_v_without_two_chunks_a_stage_is_refused_in_one_line(tmp_path):
    from simpy_astra.config.scenario import load_scenario

    one_chunk = _scenario(tmp_path, V_PIPE.replace(" --virtual-pipeline-model-parallel-size 2", ""), "zb-v")
    with pytest.raises(InputError, match=r"workload\.schedule: .*--virtual-pipeline-model-parallel-size 2") as e:
        load_scenario(one_chunk)
    assert "\n" not in str(e.value)


def _turn_too_early(stage: int, pp: int, micro_batches: int, chunks: int) -> list[Task]:
    """GPipe over a V, but the last stage forwards its second chunk before its first."""
    chunk_order = (1, 0) if stage == pp - 1 else (0, 1)
    forwards = [Task(Kind.FORWARD, m, c) for c in chunk_order for m in range(micro_batches)]
    return forwards + [Task(Kind.BACKWARD, m, c) for c in (1, 0) for m in range(micro_batches)]


_turn_too_early.chunk_placement = "v"  # type: ignore[attr-defined]


def test_a_v_schedule_that_turns_before_its_first_chunk_ran_is_refused(tmp_path, monkeypatch):
    from simpy_astra.config.scenario import load_scenario

    monkeypatch.setattr(registry, "SCHEDULES", dict(registry.SCHEDULES))
    registry.register("turn-too-early", _turn_too_early)
    with pytest.raises(InputError, match=r"'turn-too-early': its stages' orders wait on each other for ever .*"
                                         r"\(4 stages stuck\)"):  # stage 3 on itself, the others on it
        load_scenario(_scenario(tmp_path, V_PIPE, "turn-too-early"))


def test_a_placement_the_simulator_does_not_know_is_refused_when_registered(monkeypatch):
    def zigzag(stage: int, pp: int, micro_batches: int, chunks: int) -> list[Task]:
        return []

    zigzag.chunk_placement = "zigzag"  # type: ignore[attr-defined]
    monkeypatch.setattr(registry, "SCHEDULES", dict(registry.SCHEDULES))
    with pytest.raises(TypeError, match="chunk_placement 'zigzag' is none of 'loop', 'v'"):
        registry.register("zigzag", zigzag)
