"""Memory of the fullest GPU (of the fullest pipeline stage) as Megatron-LM allocates it, by part.

*Weights, gradients, optimizer* (Megatron-LM's distributed-optimizer guide, bytes a
parameter): fp16 weights and gradient buffer, fp32 main weights and main gradients and Adam's
two moments (2 + 2 + 16); bf16 weights with an fp32 gradient buffer (2 + 4 + 12); fp32 (4 + 4
+ 8). ``--optimizer sgd`` keeps one fp32 momentum buffer instead of Adam's two moments (4 B
less; 8 less at ``--sgd-momentum 0``, where torch's SGD keeps none).
``--use-distributed-optimizer`` splits the optimizer part over the ranks that hold the
same weights (data- and context-parallel ranks; for experts, the expert-data-parallel ones),
or over 1/N of them with ``--num-distributed-optimizer-instances N``.
A GPU holds its pipeline stage's layers (``MegatronJob.chunk_layers``: with an uneven split
the stage's own count) split over tp, its experts split over ep x etp, the first stage the
embedding and the last the output layer (a copy of the tied embedding with pp > 1).

*Activations* (Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
Models", MLSys 2023, section 4): per layer and micro-batch, with s the sequence per context-
parallel rank, b the micro-batch, h, a heads, t tp, in 2-byte words: layer norms 4sbh, the
attention block 11sbh + 5as^2b, the MLP 19sbh (written here from the shapes, so grouped-query
attention, SwiGLU and other widths count what they store), and tensor parallelism splitting
all but 10sbh of it, or all of it with sequence parallelism: ``sbh(34 + 5as/h)`` without
parallelism, ``sbh(10 + 24/t + 5as/ht)`` with tp, ``sbh/t (34 + 5as/h)`` with sequence
parallelism (``--hidden-dropout 0`` keeps no dropout masks: 2sbh less, and none after the
embedding). Selective recomputation and fused (flash) attention keep no ``as^2b`` term;
full recomputation keeps each recompute unit's input (2sbh, /t with sequence parallelism or
``--distribute-saved-activations``, which splits it over tp and all-gathers it to recompute)
and one unit's activations while it is recomputed. An MoE layer stores its routed tokens'
MLP activations (top-k copies of each token, shared out evenly over the experts, so
independent of ep). Stage ``i`` holds the micro-batches 1F1B has in flight there: ``min(pp -
i, m)``, times the stage's own layers (a mean over its chunks when they differ), and with v chunks
Megatron's warm-up ``2(pp - i - 1) + (v - 1)pp + 1`` chunk passes (on the first stage ``pp (1 +
(pp - 1)/(pp v))`` stages' worth, Korthikanti eq. 5); the first also the embedding's dropout
mask ``s b h p / t`` (``2p`` of them interleaved), the last the output layer's ``4 s b h (1 +
V/h) / t`` (without sequence parallelism the embedding and the final norm run whole on each tp
rank: ``s b h p`` and ``4 s b h + 4 s b V / t``). The memory
reported is the fullest stage's: the first with an even split.

*FP8 buffers*: Transformer Engine keeps an FP8 copy of each of its linear layers' weights and
of its transpose (one byte each) between the micro-batches of a step (not of the embedding or
the output layer, which are not Transformer Engine modules); with ``--fp8-param-gather`` those are
the weights themselves, with no bf16 copy (the fp32 master stays in the optimizer's part). With
FP8 the inputs of a layer's four GEMMs
(QKV, projection, FC1, FC2) are stored as Transformer Engine cast them for the weight gradient,
one byte an element instead of two; the layer norms' inputs, Q, K, V and the activation's
input stay in bf16.
"""

from __future__ import annotations

import math
from functools import lru_cache

from simpy_astra.workloads.megatron.job import MegatronJob
from simpy_astra.workloads.schedules.registry import schedule
from simpy_astra.workloads.schedules.task import in_flight

#: optimizer bytes per parameter by precision (Megatron-LM's guide; the weights take the
#: job's ``element_bytes``, the gradient buffer its ``grad_bytes``)
OPTIMIZER_BYTES_PER_PARAMETER = {"fp16": 16, "bf16": 12, "fp32": 8}
#: bytes per weight of Transformer Engine's FP8 copies (the weight and its transpose)
FP8_COPY_BYTES = 2


def parts_bytes(job: MegatronJob, stage: int | None = None) -> dict[str, float]:
    """Bytes of a GPU of pipeline stage ``stage`` by part: ``weights``, ``gradients``,
    ``optimizer``, ``activations`` and, with ``--fp8-format``, ``fp8_buffers``; without
    ``stage``, of the fullest stage's GPU (the first with an even split; with an uneven one
    another stage may hold more)."""
    if stage is None:
        return dict(_fullest_stage_parts(job, schedule(job.schedule_name)))
    dense, expert = stage_parameters(job, stage)
    weight_b, grad_b, optimizer_b = job.element_bytes, job.grad_bytes, optimizer_bytes_per_parameter(job)
    copies = job.optimizer_instances  # partial distributed optimizer: each copy over 1/N of the ranks
    shards = ((job.dp * job.cp / copies, job.tp * job.cp * job.dp // (job.ep * job.etp) / copies)
              if job.distributed_optimizer else (1, 1))
    fp8_kept = fp8_weight_parameters(job, stage) if job.fp8_param_gather else 0  # no bf16 copy of them
    parts = {"weights": (dense + expert - fp8_kept) * weight_b, "gradients": (dense + expert) * grad_b,
             "optimizer": dense * optimizer_b / shards[0] + expert * optimizer_b / shards[1],
             "activations": activation_bytes(job, stage)}
    if job.fp8:
        parts["fp8_buffers"] = fp8_weight_parameters(job, stage) * FP8_COPY_BYTES
    return parts


@lru_cache(maxsize=8)
def _fullest_stage_parts(job: MegatronJob, stage_schedule) -> dict[str, float]:
    """:func:`parts_bytes` of the fullest stage, worked out once per job and schedule function:
    the bounds check before the run and the training figures after it both ask, and on a
    64-stage step each stage's schedule order costs tens of milliseconds after the simulation
    (a report must cost a small part of the run, issue 51). The schedule is part of the key, so
    a schedule registered again under the same name is asked again."""
    return max((parts_bytes(job, s) for s in range(job.pp)), key=lambda parts: sum(parts.values()))


def optimizer_bytes_per_parameter(job: MegatronJob) -> int:
    """The optimizer's bytes a parameter: :data:`OPTIMIZER_BYTES_PER_PARAMETER` (Adam's fp32
    master and moments) with the job's master copy and moments instead (SGD keeps one
    momentum buffer, none without momentum; the precision-aware optimizer narrower ones)."""
    master = 0 if job.precision == "fp32" else 4 - job.master_bytes  # fp32 training keeps no master copy
    return OPTIMIZER_BYTES_PER_PARAMETER[job.precision] - master - (8 - sum(job.moment_bytes))


def fp8_weight_parameters(job: MegatronJob, stage: int = 0) -> float:
    """Weights on a GPU of ``stage`` that Transformer Engine keeps FP8 copies of: the weight
    matrices of the layers' linear modules (QKV, projection, the MLP's and the experts'); the
    embedding, the output layer, biases and norms stay in the training precision."""
    attention, mlp = _matrices(job, job.ffn_hidden)
    layers, moe = stage_moe_layers(job, stage)
    dense = layers * attention + (layers - moe) * mlp + moe * _matrices(job, job.shared_ffn)[1]
    return dense / job.tp + stage_parameters(job, stage)[1]


def stage_moe_layers(job: MegatronJob, stage: int) -> tuple[int, int]:
    """(layers, MoE layers) of ``stage``: its own, not the model's share (``--moe-layer-freq``
    puts them on some stages and not others; a pattern's dense layers come first)."""
    layers = [layer for chunk in job.stage_layers(stage) for layer in chunk]
    return len(layers), sum(job.is_moe(layer) for layer in layers)


def _matrices(job: MegatronJob, ffn: int) -> tuple[int, int]:
    """Parameters of one layer's weight matrices: (attention's QKV and projection, an MLP of
    width ``ffn``)."""
    h, kv, q = job.hidden, job.kv_heads * job.head_dim, job.heads * job.head_dim
    return h * (q + 2 * kv) + q * h, (3 if job.swiglu else 2) * h * ffn


def stage_parameters(job: MegatronJob, stage: int = 0) -> tuple[float, float]:
    """Parameters on one GPU of ``stage``: (those outside the experts, the experts split over
    ep x etp). Tensor parallelism splits the weight matrices and the column-parallel biases
    (QKV, FC1); every tp rank holds whole the layer norms, the row-parallel biases (projection,
    FC2: added after the reduction), the router and the position table, as Megatron builds them
    (its theoretical_memory_usage.py counts norms and routers as replicated too). The first
    stage holds the word and position embeddings, the last (in a V, the first again) the final
    norm and the output layer (with tied embeddings on two stages, Megatron's copy of the word
    embedding); one stage holds both."""
    h = job.hidden
    attention_w, mlp_w = _matrices(job, job.ffn_hidden)
    attention_b, mlp_b = job.layer_biases()
    row_b = h if job.bias_linear else 0  # the projection's and FC2's bias
    layers, moe = stage_moe_layers(job, stage)
    split = (layers * (attention_w + attention_b - row_b) + (layers - moe) * (mlp_w + mlp_b - row_b)
             + moe * _matrices(job, job.shared_ffn)[1])
    router = h * job.experts + (job.experts if job.bias_linear else 0)
    whole = layers * (job.layer_norm_params + row_b) + (layers - moe) * row_b + moe * router
    first, last = stage == 0, stage == job.last_stage
    vocab = job.vocab * h * (first + (last and not job.tied_on_one_stage))
    whole += (job.position_embeddings * h if first else 0) + (job.final_norm_params if last else 0)
    dense = (split + vocab) / job.tp + whole
    expert = moe * job.experts * _matrices(job, job.moe_ffn)[1] / (job.ep * job.etp)
    return dense, expert


def layer_activation_bytes(job: MegatronJob, moe: bool = False) -> float:
    """One layer's stored activations for one micro-batch (Korthikanti's accounting)."""
    s, b, h, t = job.seq // job.cp, job.micro_batch, job.hidden, job.tp
    q, kv = job.heads * job.head_dim, job.kv_heads * job.head_dim
    # SwiGLU's activation reads both halves of the first GEMM; unfused, SiLU's output is kept too
    act_in = (2 if job.bias_gelu_fusion else 3) if job.swiglu else 1

    # with FP8, Transformer Engine keeps each FP8 GEMM's input as it cast it for the weight
    # gradient (1 B an element, not 2): the QKV, projection, FC1 and FC2 inputs
    gemm_in = 1 if job.fp8 else 2

    def mlp_words(ffn: int, fc2_in: int = 2) -> int:  # the MLP's input, activation input, FC2's input
        return 2 * h + 2 * act_in * ffn + fc2_in * ffn

    routed = 0.0
    if moe:  # top-k copies of each token; with etp = tp the tp ranks share them, with etp 1 split them
        shared = mlp_words(job.shared_ffn) - 2 * h if job.shared_ffn else 0
        ffn_words = shared
        copy = mlp_words(job.moe_ffn) - 2 * h
        routed = job.topk * (2 * h + copy / t if job.etp == t else (2 * h + copy) / t)
    else:
        ffn_words = mlp_words(job.ffn_hidden, gemm_in) - 2 * h
    # layer-norm inputs 4h, QKV and MLP inputs 2h each, two dropout masks h each: not split over
    # tp without sequence parallelism; the rest always is
    masks = 2 * h if job.hidden_dropout else 0  # PyTorch's dropout at p = 0 returns its input: no mask
    unsplit = 4 * h + gemm_in * h + gemm_in * h + masks
    split = 2 * q + 2 * kv + 2 * kv + gemm_in * q + ffn_words
    per_token = (unsplit + split) / t if job.sequence_parallel else unsplit + split / t
    per_token += routed
    # softmax output 2 B (4 when PyTorch's fallback softmaxes an fp32 copy), dropout mask 1 and
    # its output 2 (the batched GEMM's input); without dropout that input is the softmax output
    # itself, or its 16-bit copy (2) after an fp32 softmax
    fp32_copy = job.softmax_fp32_copy()
    per_score = (4 if fp32_copy else 2) + (3 if job.attention_dropout else 2 if fp32_copy else 0)
    scores = 0.0 if job.recompute == "selective" or job.flash_attention else per_score * job.heads * s * s * b / t
    return (s * b * per_token + scores) * job.element_bytes / 2


def activation_bytes(job: MegatronJob, stage: int = 0) -> float:
    """A GPU of ``stage``'s stored activations with its micro-batches in flight, as many as
    the job's pipeline schedule holds at once: 1F1B's warm-up leaves ``pp - stage`` in flight,
    the interleaved schedule's ``2 (pp - stage - 1) + (v - 1) pp + 1`` chunk passes (all
    ``m v`` when m = pp: its warm-up is every forward), GPipe's all m."""
    order = job.stage_order(stage)
    units = in_flight(order)  # chunk passes in flight
    dense, moe = layer_activation_bytes(job), layer_activation_bytes(job, moe=True) if job.experts else 0.0
    # each of the stage's chunks' layers' bytes, in order (its own MoE layers, not the model's share)
    chunks = [[moe if job.is_moe(i) else dense for i in chunk] for chunk in job.stage_layers(stage)]
    if job.recompute == "full":
        s_b_h = job.seq // job.cp * job.micro_batch * job.hidden
        split = job.sequence_parallel or job.distribute_saved_activations
        checkpoint = 2 * s_b_h / (job.tp if split else 1) * job.element_bytes / 2
        n = max(1, job.recompute_layers)
        if job.recompute_method == "uniform":
            kept = [math.ceil(len(c) / n) * checkpoint for c in chunks]
            working = max((sum(c[i:i + n]) for c in chunks for i in range(0, len(c), n)), default=0.0)
        else:  # block: the first n layers of a chunk recomputed one at a time, the rest stored
            kept = [min(n, len(c)) * checkpoint + sum(c[n:]) for c in chunks]
            working = max((max(c[:n]) for c in chunks if c), default=0.0)
        stored = units * sum(kept) / len(chunks) + working
    else:
        stored = units * sum(map(sum, chunks)) / len(chunks)
    sp = job.tp if job.sequence_parallel else 1  # without it the embedding and the final norm run whole on each tp rank
    if stage == 0 and job.hidden_dropout:  # the embedding's dropout mask (1 B a value), each micro-batch in flight
        # in the first chunk: interleaved, Megatron's schedule table (groups of pp micro-batches a
        # chunk) has the first stage run chunk 0 of min(2 pp, m) before its backward reaches it
        stored += in_flight(order, chunk=0) * job.seq // job.cp * job.micro_batch * job.hidden / sp
    if stage == job.last_stage:  # the final norm's and output layer's inputs and fp32 logits, one micro-batch at a time
        s_b = job.seq // job.cp * job.micro_batch
        stored += 4 * s_b * job.hidden / sp + 4 * s_b * job.vocab / job.tp
    return stored
