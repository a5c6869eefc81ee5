"""Memory per GPU as Megatron-LM allocates it, against closed forms derived by hand.

Activations: Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
Models" (MLSys 2023), section 4: per layer ``s b h (34 + 5 a s / h)`` bytes without
parallelism, ``s b h (10 + 24/t + 5 a s / (h t))`` with tensor parallelism,
``s b h / t (34 + 5 a s / h)`` with sequence parallelism, ``34 s b h / t`` with selective
recomputation, the first stage holding ``pp`` micro-batches (``pp (1 + (pp - 1)/(pp v))`` with
v chunks), the embedding's dropout mask ``s b h p / t``, and the output layer ``4 s b h (1 + v/h) / t``. Weights, gradients, optimizer:
Megatron-LM's distributed-optimizer guide (20 B a parameter with fp16, 18 with bf16; 4 + 16/d
and 6 + 12/d with the distributed optimizer).
"""

from __future__ import annotations

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.memory import activation_bytes, parts_bytes
from simpy_astra.workloads.megatron.report import figures

L, H, A, S, B, V = 8, 1024, 16, 1024, 2, 128
# Korthikanti's activation formulas count unfused attention (the score matrix is stored):
# today's default, Transformer Engine's fused attention, is turned off for them
BASE = (f"--num-layers {L} --hidden-size {H} --num-attention-heads {A} --seq-length {S} "
        f"--micro-batch-size {B} --vocab-size {V} --make-vocab-size-divisible-by 1 --transformer-impl local")


def _layer_params(h: int = H) -> int:
    return 12 * h * h + 13 * h  # QKV, projection, two MLP matrices, their biases, two layer norms


def _output_layer(t: int = 1) -> float:
    return 4 * S * B * H * (1 + V / H) / t + _embedding_dropout(1, t)


def _embedding_dropout(in_flight: int, t: int = 1) -> float:
    return S * B * H * in_flight / t  # Korthikanti's s b h p / t: a one-byte mask a value


def test_no_parallelism_fp16_is_20_bytes_a_parameter_and_korthikanti_eq_1():
    job = parse(BASE + " --fp16", 1)
    params = L * _layer_params() + V * H + S * H + 2 * H  # tied embedding, learned positions, final norm
    parts = parts_bytes(job)
    assert parts["weights"] == pytest.approx(2 * params, rel=1e-5)
    assert parts["gradients"] == pytest.approx(2 * params, rel=1e-5)
    assert parts["optimizer"] == pytest.approx(16 * params, rel=1e-5)
    assert parts["activations"] == pytest.approx(L * S * B * H * (34 + 5 * A * S / H) + _output_layer())
    assert "fp8_buffers" not in parts


@pytest.mark.parametrize("extra,per_layer", [
    ("", S * B * H * (10 + 24 / 2 + 5 * A * S / (H * 2))),
    (" --sequence-parallel", S * B * H / 2 * (34 + 5 * A * S / H)),
    (" --sequence-parallel --recompute-activations", 34 * S * B * H / 2),
])
def test_tensor_parallel_activations_follow_korthikanti_table_2(extra, per_layer):
    job = parse(BASE + " --bf16 --tensor-model-parallel-size 2" + extra, 2)
    # without sequence parallelism the embedding's dropout and the final norm and output
    # projection's inputs are whole on each tp rank (Megatron's LanguageModelEmbedding drops
    # out the full tensor); only the logits are split
    whole = 4 * S * B * H + _embedding_dropout(1) + 4 * S * B * V / 2
    assert activation_bytes(job) == pytest.approx(L * per_layer + (_output_layer(2) if extra else whole))


def test_first_stage_holds_pp_micro_batches_and_more_when_interleaved():
    layer = S * B * H * (34 + 5 * A * S / H)
    one_f_one_b = parse(BASE + " --bf16 --pipeline-model-parallel-size 4 --global-batch-size 16", 4)  # m = 8
    assert activation_bytes(one_f_one_b) == pytest.approx(4 * (L / 4) * layer + _embedding_dropout(4))
    interleaved = parse(BASE + " --bf16 --pipeline-model-parallel-size 4 --global-batch-size 16 "
                               "--virtual-pipeline-model-parallel-size 2", 4)
    # the embedding's masks: Megatron's interleaved warm-up runs chunk 0 forward for
    # micro-batches 0-3 and 4-6, the steady state 7, before stage 0's first chunk-0 backward
    assert activation_bytes(interleaved) == pytest.approx(L / 4 * layer * 4 * (1 + 3 / (4 * 2)) + _embedding_dropout(8))
    few = parse(BASE + " --bf16 --pipeline-model-parallel-size 4 --global-batch-size 4", 4)  # m = 2 < pp
    assert activation_bytes(few) == pytest.approx(2 * (L / 4) * layer + _embedding_dropout(2))


def test_first_stage_memory_holds_its_own_layers():
    # 8 layers on 4 stages as 5, 1, 1, 1: the first stage holds 5 layers' weights and, for
    # each of its 4 micro-batches in flight, 5 layers' activations
    job = parse(BASE + " --bf16 --pipeline-model-parallel-size 4 --global-batch-size 16 "
                       "--decoder-first-pipeline-num-layers 5", 4)
    layer = S * B * H * (34 + 5 * A * S / H)
    assert activation_bytes(job) == pytest.approx(4 * 5 * layer + _embedding_dropout(4))
    assert parts_bytes(job)["weights"] == pytest.approx(2 * (5 * _layer_params() + V * H + S * H), rel=1e-5)


def test_memory_is_the_fullest_stages_when_the_last_holds_more():
    """8 layers on 2 stages as 1 and 7, 1F1B with m = 8: the first stage keeps 2 micro-batches
    of its 1 layer (and the embedding's masks), the last 1 micro-batch of its 7 layers and the
    output layer's input and logits, 4 s b h (1 + V/h); the last holds 7 layers' weights and
    its copy of the tied embedding and the final norm. The memory reported is the last stage's."""
    job = parse(BASE + " --bf16 --pipeline-model-parallel-size 2 --global-batch-size 16 "
                       "--decoder-first-pipeline-num-layers 1 --decoder-last-pipeline-num-layers 7", 2)
    layer = S * B * H * (34 + 5 * A * S / H)
    assert activation_bytes(job, 0) == pytest.approx(2 * layer + _embedding_dropout(2))
    assert activation_bytes(job, 1) == pytest.approx(7 * layer + 4 * S * B * H * (1 + V / H))
    last = parts_bytes(job, 1)
    assert last["weights"] == pytest.approx(2 * (7 * _layer_params() + V * H + 2 * H), rel=1e-5)
    assert parts_bytes(job) == last


def test_full_recomputation_keeps_layer_inputs_and_one_working_layer():
    job = parse(BASE + " --fp16 --pipeline-model-parallel-size 2 --global-batch-size 4 "
                       "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1", 2)
    layer = S * B * H * (34 + 5 * A * S / H)
    assert activation_bytes(job) == pytest.approx(2 * (L / 2) * 2 * S * B * H + layer + _embedding_dropout(2))


def test_distributed_optimizer_shards_adam_over_data_parallel_ranks():
    """bf16 with an fp32 gradient buffer: 18 B a parameter, 6 + 12/d with the distributed
    optimizer (Megatron-LM's guide), d = 8."""
    plain = parse(BASE + " --bf16", 8)
    sharded = parse(BASE + " --bf16 --use-distributed-optimizer", 8)
    states = ("weights", "gradients", "optimizer")
    p, q = parts_bytes(plain), parts_bytes(sharded)
    per_gpu = p["weights"] / 2
    assert sum(p[k] for k in states) == pytest.approx(18 * per_gpu)
    assert sum(q[k] for k in states) == pytest.approx((6 + 12 / 8) * per_gpu)


def test_grad_reduce_in_bf16_halves_the_gradient_buffer():
    """--grad-reduce-in-bf16: bf16 weights, a bf16 gradient buffer and Adam's fp32 states, 2 +
    2 + 12 = 16 B a parameter, 4 + 12/d with the distributed optimizer (d = 8); fp16 keeps its
    2 B buffer whatever the flag."""
    job = parse(BASE + " --bf16 --use-distributed-optimizer --grad-reduce-in-bf16", 8)
    q = parts_bytes(job)
    per_gpu = q["weights"] / 2
    assert job.grad_bytes == 2 and q["gradients"] == pytest.approx(2 * per_gpu)
    assert sum(q[k] for k in ("weights", "gradients", "optimizer")) == pytest.approx((4 + 12 / 8) * per_gpu)
    assert parse(BASE + " --fp16 --grad-reduce-in-bf16", 8).grad_bytes == 2


def test_expert_weights_are_split_over_expert_parallel_ranks():
    """Eight experts of the dense MLP's width on 8 data-parallel GPUs: with ep 1 each GPU holds
    all 8 experts' 2 h 4h weights a layer, with ep 8 one; the rest is unchanged."""
    moe = BASE + " --bf16 --num-experts 8 --moe-router-topk 2"
    ep1, ep8 = parse(moe, 8), parse(moe + " --expert-model-parallel-size 8", 8)
    expert_layer = 2 * H * 4 * H  # an expert's two weight matrices (no biases in Megatron's experts)
    difference = L * (8 - 1) * expert_layer * 2  # bf16 weights
    assert parts_bytes(ep1)["weights"] - parts_bytes(ep8)["weights"] == pytest.approx(difference)
    assert parts_bytes(ep1)["activations"] == parts_bytes(ep8)["activations"]  # balanced routing


def test_fp8_keeps_a_weight_copy_and_its_transpose():
    """One byte for the copy and one for its transpose of each layer's four weight matrices
    (QKV 3h^2, projection h^2, the MLP's 8h^2: 12 h^2 a layer); the embedding, biases and
    norms get none."""
    job = parse(BASE.replace(" --transformer-impl local", "") + " --bf16 --fp8-format hybrid", 1)  # TE's layers
    assert parts_bytes(job)["fp8_buffers"] == pytest.approx(2 * L * 12 * H * H)


def test_json_memory_is_split_into_parts_that_sum_to_the_total():
    gpu = load_cluster({"preset": "dgx-h100", "gpus": 8}, "c").gpu_model()
    job = parse(BASE.replace(" --transformer-impl local", "") + " --bf16 --fp8-format hybrid --use-distributed-optimizer",
                8)
    out = figures(job, gpu, 10**9).as_dict()
    assert set(out["memory_gib"]) == {"weights", "gradients", "optimizer", "activations", "fp8_buffers"}
    assert sum(out["memory_gib"].values()) == pytest.approx(out["memory_per_gpu_gib"], abs=0.01)


def test_fp8_stores_the_four_gemm_inputs_at_one_byte():
    """Transformer Engine keeps each FP8 GEMM's input as it cast it for the weight gradient. Of
    Korthikanti's 34 bytes a token and hidden unit (fused attention, no score matrix), the
    QKV, projection and FC1 inputs (2 each) and FC2's (8) then take half: 34 - 7 = 27, split
    over tp with sequence parallelism; the layer norms' inputs, Q, K, V and GeLU's input stay."""
    te = BASE.replace(" --transformer-impl local", "") + " --bf16 --tensor-model-parallel-size 2 --sequence-parallel"
    bf16, fp8 = parse(te, 2), parse(te + " --fp8-format hybrid", 2)
    assert activation_bytes(bf16) == pytest.approx(L * 34 * S * B * H / 2 + _output_layer(2))
    assert activation_bytes(fp8) == pytest.approx(L * 27 * S * B * H / 2 + _output_layer(2))


def test_the_figures_after_the_run_reuse_the_fullest_stage_the_bounds_check_worked_out(monkeypatch):
    """Issue 51 (a report must cost a small part of the run): ``parse`` bounds the job's memory
    before the run, and the training figures ask for the same fullest stage after it. On
    SC'21's 64-stage step every stage's schedule order cost about 45 ms after the simulation;
    now the figures build none, and give the same bytes."""
    from simpy_astra.workloads.megatron.job import MegatronJob

    job = parse(BASE + " --pipeline-model-parallel-size 4 --global-batch-size 16", 4)  # bounds checked
    expected = parts_bytes(job)
    orders = []
    stage_order = MegatronJob.stage_order
    monkeypatch.setattr(MegatronJob, "stage_order", lambda self, stage: orders.append(stage) or stage_order(self, stage))
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 4}, "c").gpu_model()
    memory = figures(job, gpu, 10**9).memory_parts_gib
    assert orders == []
    assert memory == {name: value / 2**30 for name, value in expected.items()}
    # a caller's dict of its own: changing it changes nothing for the next caller
    parts_bytes(job)["activations"] = 0.0
    assert parts_bytes(job) == expected


def test_a_schedule_registered_again_under_its_name_is_asked_again(monkeypatch):
    """The fullest stage is remembered per job and schedule function: a schedule of one's own
    registered again under the same name (a researcher editing it) is not answered from the
    first one's figures. 1F1B's first stage holds min(pp, m) = 2 micro-batches in flight,
    GPipe's (every forward, then every backward) all m = 4."""
    from dataclasses import replace

    from simpy_astra.workloads.schedules import registry
    from simpy_astra.workloads.schedules.one_f_one_b import one_f_one_b
    from simpy_astra.workloads.schedules.task import Kind, Task

    def gpipe(stage, pp, micro_batches, chunks=1):
        return ([Task(Kind.FORWARD, m, 0) for m in range(micro_batches)]
                + [Task(Kind.BACKWARD, m, 0) for m in range(micro_batches)])

    monkeypatch.setattr(registry, "SCHEDULES", dict(registry.SCHEDULES))
    job = replace(parse(BASE + " --pipeline-model-parallel-size 2 --global-batch-size 8", 2),
                  pipeline_schedule="mine")
    registry.register("mine", one_f_one_b)
    ours = parts_bytes(job)["activations"]
    registry.SCHEDULES.pop("mine")
    registry.register("mine", gpipe)
    theirs = parts_bytes(job)["activations"]
    fullest = max((parts_bytes(job, s) for s in range(2)), key=lambda parts: sum(parts.values()))
    assert theirs == fullest["activations"] > ours
    assert activation_bytes(job, 0) - _embedding_dropout(4) == pytest.approx(2 * (ours - _embedding_dropout(2)))
