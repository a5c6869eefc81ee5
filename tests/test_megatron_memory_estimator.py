"""Per-GPU memory against Megatron-LM's own estimator, written out here from its formula.

Source: ``megatron/training/theoretical_memory_usage.py`` of NVIDIA/Megatron-LM at commit
``d98e8a64`` (the file last changed in ``1bcb3b9e0b``, 2026-06-15; expert parallelism entered
its weight count in ``a7c9e8c44a``, 2026-05-14). ``report_theoretical_memory`` adds
``compute_weight_and_optimizer_memory`` and, with ``--sequence-parallel`` and selective
recomputation, ``compute_activation_memory`` (Korthikanti et al., Table 2). What it assumes:

- *Weights*: a layer is ``2 h q (1 + g/a)`` attention weights (QKV and projection, q = heads x
  kv-channels, g query groups) and ``2 h f`` MLP weights (x 3/2 with SwiGLU), two norms of
  ``2h`` (LayerNorm; ``h`` RMSNorm) and, in an MoE layer, a router ``h E`` (+ E with biases)
  and experts ``2 h f_moe E``. No linear biases, no position table. The fullest GPU is the
  first stage's: ``(layers/pp + V h)/tp`` split, norms, routers and the final norm ``/pp``
  whole on every tp rank, experts ``/(pp ep etp)``; a second ``V h / tp`` untied at pp 1.
- *Bytes a parameter*: bf16 training, 18 (2 weight + 4 fp32 gradient + 12 Adam), ``6 + 12/d``
  with the distributed optimizer, d the data-parallel size (the experts' d: world / (etp ep pp)).
- *Activations* on the first stage, divided by tp: ``s b h (18 + 4 f/h)`` a layer for all L
  layers (pp micro-batches of L/pp layers; K and V counted at h, the MLP at 4f whatever
  SwiGLU or the experts), ``8 s b pp`` of int64 token ids and ``s b h pp`` of embedding dropout
  masks; the sum times ``1 + (pp - 1)/(pp v)`` when interleaved, else ``min(1, m/pp)``; at pp 1
  the output layer ``4 s b h (1 + V/h)``.

The project (``workloads/megatron/memory.py``) differs on purpose where it counts what Megatron
builds and the estimator leaves out: linear biases and the learned position table, K and V at
the query groups' width, SwiGLU's two-wide FC1 output, the routed tokens of an MoE layer,
each stage's own MoE layers, the final norm on the last stage, the token ids (not counted:
8 B a token against at least 34 h a layer) and, with interleaving, the first stage's embedding
masks as Megatron's schedule keeps them. Each test writes the estimator and the named
difference out; the tolerance is floating point only.
"""

from __future__ import annotations

import itertools

import pytest

from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.job import MegatronJob
from simpy_astra.workloads.megatron.memory import parts_bytes

#: the estimator's arithmetic and ours round differently only in the last bits
EXACT = 1e-9


def estimator_weights_and_optimizer(job: MegatronJob, norm: int = 2) -> float:
    """``compute_weight_and_optimizer_memory``: bytes on the first stage's GPU (``norm``: a
    norm's parameters per channel, 2 LayerNorm, 1 RMSNorm)."""
    h, q, kv = job.hidden, job.heads * job.head_dim, job.kv_heads * job.head_dim
    gated = 1.5 if job.swiglu else 1.0
    attention = 2 * h * q + 2 * h * kv  # 2 h^2 (1 + g/a) q/h
    mlp, shared = 2 * h * job.ffn_hidden * gated, 2 * h * job.shared_ffn * gated
    experts = 2 * h * job.moe_ffn * job.experts * gated
    router = h * job.experts + (job.experts if job.bias_linear else 0)
    moe, dense = job.moe_layers, job.num_layers - job.moe_layers
    split = (attention + mlp) * dense + (attention + shared) * moe
    whole = 2 * h * norm * job.num_layers + router * moe + norm * h  # layer norms, routers, final norm
    embedding = job.vocab * h * (2 if not job.tied_embeddings and job.pp == 1 else 1)
    on_gpu = (split / job.pp + embedding) / job.tp + whole / job.pp
    experts_on_gpu = experts * moe / (job.pp * job.ep * job.etp)
    world = job.tp * job.pp * job.dp

    def per_parameter(d: int) -> float:
        return 6 + 12 / d if job.distributed_optimizer else 18

    return on_gpu * per_parameter(job.dp) + experts_on_gpu * per_parameter(world // (job.etp * job.ep * job.pp))


def estimator_activations(job: MegatronJob) -> float:
    """``compute_activation_memory`` (sequence parallelism, selective recomputation)."""
    s, b, h, pp, v = job.seq, job.micro_batch, job.hidden, job.pp, job.virtual_stages
    stored = s * b * h * (18 + 4 * job.ffn_hidden / h) * job.num_layers + 8 * s * b * pp + s * b * h * pp
    if v > 1:
        stored *= 1 + (pp - 1) / (pp * v)
    elif pp > 1:
        stored *= min(1, job.micro_batches / pp)
    if pp == 1:
        stored += 4 * s * b * h * (1 + job.vocab / h)
    return stored / job.tp


def _states(job: MegatronJob) -> float:
    parts = parts_bytes(job, 0)
    return parts["weights"] + parts["gradients"] + parts["optimizer"]


def _per_parameter(job: MegatronJob) -> float:
    return 6 + 12 / job.dp if job.distributed_optimizer else 18


#: inside the estimator's assumptions: bf16, no linear biases, rotary positions, LayerNorm
PLAIN = ("--bf16 --disable-bias-linear --position-embedding-type rope --sequence-parallel "
         "--recompute-activations --micro-batch-size 1")
GPT = "--num-layers 48 --hidden-size 6144 --num-attention-heads 48 --seq-length 2048 --vocab-size 51200"
LLAMA = ("--num-layers 80 --hidden-size 8192 --num-attention-heads 64 --seq-length 4096 --vocab-size 128256 "
         "--swiglu --ffn-hidden-size 28672 --group-query-attention --num-query-groups 8 "
         "--untie-embeddings-and-output-weights")
MIXTRAL = ("--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --vocab-size 32000 "
           "--swiglu --ffn-hidden-size 14336 --group-query-attention --num-query-groups 8 "
           "--untie-embeddings-and-output-weights --num-experts 8 --moe-router-topk 2")


def _layouts(model: str, layers: int, moe: bool = False):
    """tp 1-8, pp 1-16 (with 2 chunks a stage where the layers divide), dp 1-8, the distributed
    optimizer on and off; an MoE model's experts over ep = dp."""
    for tp, pp, v, dp, dist in itertools.product((1, 2, 8), (1, 2, 4, 16), (1, 2), (1, 8), (False, True)):
        if (v > 1 and pp == 1) or layers % (pp * v):
            continue
        args = (f"{model} {PLAIN} --tensor-model-parallel-size {tp} --pipeline-model-parallel-size {pp} "
                f"--global-batch-size {dp * 2 * pp}")
        args += f" --virtual-pipeline-model-parallel-size {v}" * (v > 1) + " --use-distributed-optimizer" * dist
        args += f" --expert-model-parallel-size {dp}" * moe
        yield parse(args, tp * pp * dp)


CASES = [*_layouts(GPT, 48), *_layouts(LLAMA, 80), *_layouts(MIXTRAL, 32, moe=True),
         *_layouts(MIXTRAL + " --moe-layer-freq 2 --expert-tensor-parallel-size 1", 32, moe=True)]


def _first_stage_moe_layers(job: MegatronJob) -> int:
    """MoE layers the first stage builds: chunk c holds layers ``c pp k`` to ``c pp k + k - 1``
    (k = L / (pp v)), an MoE layer every ``moe_every``-th from layer 0."""
    k = job.num_layers // (job.pp * job.virtual_stages)
    layers = [c * job.pp * k + i for c in range(job.virtual_stages) for i in range(k)]
    return sum(layer % job.moe_every == 0 for layer in layers) if job.experts else 0


def _moe_layer_over_dense(job: MegatronJob) -> float:
    """Bytes an MoE layer holds on a GPU over a dense one: the router whole and the experts
    over ep x etp (at the experts' data-parallel size) for the dense MLP over tp."""
    h, gated = job.hidden, 1.5 if job.swiglu else 1.0
    expert_dp = job.tp * job.dp // (job.ep * job.etp)
    expert_bytes = 6 + 12 / expert_dp if job.distributed_optimizer else 18
    experts = 2 * h * job.moe_ffn * job.experts * gated / (job.ep * job.etp)
    return h * job.experts * _per_parameter(job) + experts * expert_bytes - 2 * h * job.ffn_hidden * gated / job.tp * _per_parameter(job)


@pytest.mark.parametrize("job", CASES, ids=lambda j: f"{j.hidden}-tp{j.tp}-pp{j.pp}-v{j.virtual_stages}-dp{j.dp}"
                                                    f"-ep{j.ep}-moe{j.moe_every}{'-dist' if j.distributed_optimizer else ''}")
def test_weights_and_optimizer_are_the_estimators(job):
    """The same count but where the estimator spreads things evenly over the stages: it puts
    ``1/pp`` of the final norm on the first stage, Megatron builds it whole on the last (with pp
    1 they are one stage); it puts ``1/pp`` of the MoE layers there, Megatron the stage's own
    (with an MoE layer every other one and one layer a chunk, the first stage's chunks are
    layers 0 and 16 of 32 on 16 stages: both MoE, against the estimator's one)."""
    final_norm_on_first = 2 * job.hidden / job.pp * _per_parameter(job) if job.pp > 1 else 0
    own_moe = (_first_stage_moe_layers(job) - job.moe_layers / job.pp) * _moe_layer_over_dense(job)
    expected = estimator_weights_and_optimizer(job) - final_norm_on_first + own_moe
    assert _states(job) == pytest.approx(expected, rel=EXACT)


@pytest.mark.parametrize("tp,pp", [(1, 1), (8, 1), (8, 4)])
def test_biases_and_the_learned_position_table_are_what_the_estimator_leaves_out(tp, pp):
    """GPT as Megatron builds it by default: the first stage's GPU holds the 2,048-row position
    table whole (not split over tp), 1/tp of the column-parallel biases (QKV 3h, FC1 4h) and
    the row-parallel ones (projection and FC2, h each) whole, on top of the estimator's count.
    At tp 8 and pp 4 that is 1.7% of the weights and optimizer (12.8M of 731M parameters)."""
    job = parse(f"{GPT} --bf16 --max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 4 "
                f"--tensor-model-parallel-size {tp} --pipeline-model-parallel-size {pp}", tp * pp)
    h, layers = 6144, 48 // pp
    omitted = 2048 * h + layers * (7 * h / tp + 2 * h)
    final_norm_on_first = 2 * h / pp * 18 if pp > 1 else 0
    assert _states(job) == pytest.approx(estimator_weights_and_optimizer(job) - final_norm_on_first + 18 * omitted,
                                         rel=EXACT)
    if (tp, pp) == (8, 4):
        assert 18 * omitted / _states(job) == pytest.approx(0.0175, abs=5e-4)


def _token_ids(job: MegatronJob) -> float:
    """The estimator's int64 token ids of the first stage's micro-batches in flight, /tp (the
    project does not count them)."""
    in_flight = min(job.pp, job.micro_batches) if job.virtual_stages == 1 else job.pp * (
        1 + (job.pp - 1) / (job.pp * job.virtual_stages))
    return 8 * job.seq * job.micro_batch * in_flight / job.tp


@pytest.mark.parametrize("tp,pp,m", [(1, 1, 1), (2, 1, 4), (8, 1, 2), (2, 4, 8), (8, 16, 32), (4, 8, 4), (8, 4, 1)])
def test_gpt_activations_are_the_estimators_but_the_token_ids(tp, pp, m):
    """Korthikanti's 34 s b h a layer (18 + 4 x 4h/h) with sequence parallelism and selective
    recomputation, the first stage's micro-batches in flight (m < pp: m of them), its embedding
    masks and, at pp 1, the output layer: the estimator's figure but its 8 B token ids, under
    2 in 10^5 here."""
    job = parse(f"{GPT} {PLAIN} --tensor-model-parallel-size {tp} --pipeline-model-parallel-size {pp} "
                f"--global-batch-size {m}", tp * pp)
    assert job.micro_batches == m
    activations = parts_bytes(job, 0)["activations"]
    assert activations == pytest.approx(estimator_activations(job) - _token_ids(job), rel=EXACT)
    assert _token_ids(job) / activations < 2e-5


def test_grouped_query_attention_and_swiglu_store_what_their_shapes_hold():
    """The estimator counts K and V at h each (4 s b h) and the MLP at 4 f; Llama-2 70B's K and
    V are 8 groups of 128 (kv = h/8) and SwiGLU's FC1 writes 2f that the activation reads (the
    fused bias-SwiGLU keeps that input, 4f bytes, and FC2's input, 2f): a layer is
    ``s b (4 kv - 4 h + 2 f) / t`` more, +10.9% for h 8192, f 28672."""
    job = parse(f"{LLAMA} {PLAIN} --tensor-model-parallel-size 8 --global-batch-size 1", 8)
    s, h, kv, f = 4096, 8192, 1024, 28672
    difference = 80 * s * (4 * kv - 4 * h + 2 * f) / 8
    activations = parts_bytes(job, 0)["activations"]
    assert activations == pytest.approx(estimator_activations(job) - _token_ids(job) + difference, rel=EXACT)
    layer = s * h * (18 + 4 * f / h)
    assert (s * (4 * kv - 4 * h + 2 * f)) / layer == pytest.approx(0.109, abs=1e-3)


def test_each_stage_holds_its_own_moe_layers():
    """``--moe-layer-freq ([0]*2+[1]*6)`` on 2 stages: layers 0-3 (2 MoE) on the first, 4-7 (4
    MoE) on the second, not 3 each as the estimator's even spread has it. Eight experts of
    2 h 4h over ep 2: 4 x 2 x 1024 x 4096 parameters a layer on a GPU, twice as many on the
    second stage; its activations are 4 MoE layers' and the output layer's."""
    from simpy_astra.workloads.megatron.memory import layer_activation_bytes, stage_parameters

    job = parse("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --vocab-size 1024 "
                f"{PLAIN} --num-experts 8 --expert-model-parallel-size 2 --moe-layer-freq ([0]*2+[1]*6) "
                "--pipeline-model-parallel-size 2 --global-batch-size 8", 4)
    expert_layer = 4 * 2 * 1024 * 4096
    assert [stage_parameters(job, stage)[1] for stage in (0, 1)] == [2 * expert_layer, 4 * expert_layer]
    output_layer = 4 * 1024 * 1024 * (1 + 1024 / 1024)
    moe = layer_activation_bytes(job, moe=True)
    assert moe > layer_activation_bytes(job)  # two routed copies of each token
    assert parts_bytes(job, 1)["activations"] == pytest.approx(4 * moe + output_layer, rel=EXACT)


@pytest.mark.parametrize("tp,pp,v,m", [(2, 4, 2, 8), (8, 4, 2, 32), (8, 16, 3, 64), (4, 8, 2, 16), (2, 2, 4, 8),
                                        (8, 4, 2, 4), (2, 8, 2, 8)])
def test_interleaved_activations_are_the_estimators_but_the_embedding_masks(tp, pp, v, m):
    """Korthikanti's eq. 5 for the layers (``pp (1 + (pp - 1)/(pp v))`` stages' worth on the
    first), as in the estimator; the estimator scales the embedding's masks by that factor too,
    where Megatron's schedule table (chunk 0 of a group of pp micro-batches, then chunk 1, ...;
    warm-up ``2 (pp - 1) + (v - 1) pp`` forwards) has the first stage run chunk 0 of micro-batches
    0 to 2pp - 1 before its backward reaches chunk 0: ``min(2 pp, m)`` masks of ``s b h / t``
    (1 byte a value) where the estimator has ``pp + (pp - 1)/v``; under 0.6% of the total here.
    With fewer micro-batches than the warm-up holds (m v below ``2 (pp - 1) + (v - 1) pp + 1``,
    the two last cases) all m v chunk passes are in flight, ``m L / pp`` layers' worth, where
    the estimator keeps its factor (it caps only 1F1B's micro-batches): 27% less at pp 4, m 4."""
    job = parse(f"{GPT} {PLAIN} --tensor-model-parallel-size {tp} --pipeline-model-parallel-size {pp} "
                f"--virtual-pipeline-model-parallel-size {v} --global-batch-size {m}", tp * pp)
    assert job.micro_batches == m and job.virtual_stages == v
    s_b_h, factor = 2048 * 6144 / tp, 1 + (pp - 1) / (pp * v)
    masks = (min(2 * pp, m) - pp * factor) * s_b_h
    passes = min(2 * (pp - 1) + (v - 1) * pp + 1, m * v)  # chunk passes in flight, L/(pp v) layers each
    layers = (passes / (pp * v) - factor) * 48 * s_b_h * (18 + 4 * 4)
    activations = parts_bytes(job, 0)["activations"]
    assert activations == pytest.approx(estimator_activations(job) - _token_ids(job) + masks + layers, rel=EXACT)
    assert abs(masks) / activations < 6e-3
    if (pp, m) == (4, 4):
        assert activations / estimator_activations(job) == pytest.approx(1 - 0.27, abs=0.01)


def estimator_activations_without_sp(job: MegatronJob) -> float:
    """``compute_activation_memory_without_sp`` (used without sequence parallelism or without
    selective recomputation): ``s b h (10 + 24/t)`` a layer (no score matrix: fused attention),
    the embedding's ids and masks whole on each tp rank, the same pipeline factors, at pp 1 the
    final norm's output and bf16 logits ``2 (s b V / t + s b h)``, and 5% on top."""
    s, b, h, t, pp = job.seq, job.micro_batch, job.hidden, job.tp, job.pp
    stored = s * b * h * (10 + 24 / t) * job.num_layers + 8 * s * b * pp + s * b * h * pp
    if pp > 1:  # non-interleaved here
        stored *= min(1, job.micro_batches / pp)
    if pp == 1:
        stored += 2 * (s * b * job.vocab / t + s * b * h)
    return stored * 1.05


@pytest.mark.parametrize("tp,pp", [(2, 1), (8, 1), (4, 4), (8, 8)])
def test_activations_without_sequence_parallelism_are_the_estimators_less_its_margin(tp, pp):
    """Without sequence parallelism the layer norms' and dropouts' 10 s b h stay whole on each
    tp rank, and so do the embedding's dropout masks (Megatron's LanguageModelEmbedding drops out
    the whole tensor) and, on the last stage, the final norm's and output projection's inputs:
    the estimator's figure but its 5% margin for temporaries (not an allocation this model
    keeps), its token ids and, at pp 1, its output layer: the final norm's output at 2 s b h
    and bf16 logits, where the final norm's and the projection's inputs are 4 s b h and the
    cross entropy keeps fp32 logits, 4 s b V / t."""
    job = parse(f"{GPT} {PLAIN.replace(' --sequence-parallel', '')} --tensor-model-parallel-size {tp} "
                f"--pipeline-model-parallel-size {pp} --global-batch-size {2 * pp}", tp * pp)
    assert not job.sequence_parallel
    s_b, h, v = 2048, 6144, 51200
    token_ids = 8 * s_b * pp
    output = (4 * s_b * h + 4 * s_b * v / tp) - 2 * (s_b * v / tp + s_b * h) if pp == 1 else 0
    expected = estimator_activations_without_sp(job) / 1.05 - token_ids + output
    assert parts_bytes(job, 0)["activations"] == pytest.approx(expected, rel=EXACT)


def test_an_moe_layer_keeps_its_routed_copies_where_the_estimator_counts_a_dense_mlp():
    """The estimator counts every layer's MLP at ``4 f`` a token, experts or not. Mixtral-8x7B-
    like (h 4096, 8 query groups of 128, experts of f 14336 at top-2, SwiGLU) at tp = etp 8 with
    sequence parallelism: a token's attention side is ``(14 h + 4 kv) / t`` (norms, dropout masks,
    QKV and projection inputs, Q, K, V), and each of its 2 routed copies keeps its input whole
    (gathered over the tp ranks that share the expert, 2h) and 1/t of the expert's SwiGLU (6f):
    2.78x the estimator's ``(18 h + 4 f) / t``."""
    job = parse(f"{MIXTRAL} {PLAIN} --tensor-model-parallel-size 8 --expert-model-parallel-size 8 "
                "--global-batch-size 8", 64)
    s, h, kv, f, t, k = 4096, 4096, 1024, 14336, 8, 2
    layer = s * ((14 * h + 4 * kv) / t + k * (2 * h + 6 * f / t))
    estimator_layer = s * (18 * h + 4 * f) / t
    difference = 32 * (layer - estimator_layer)
    activations = parts_bytes(job, 0)["activations"]
    assert activations == pytest.approx(estimator_activations(job) - _token_ids(job) + difference, rel=EXACT)
    assert layer / estimator_layer == pytest.approx(2.78, abs=0.01)


@pytest.mark.parametrize("job", [parse(f"{LLAMA} {PLAIN} --normalization RMSNorm --tensor-model-parallel-size {tp} "
                                       f"--pipeline-model-parallel-size {pp} --global-batch-size {8 * pp}"
                                       + " --use-distributed-optimizer" * dist, tp * pp * 8)
                                 for tp, pp, dist in itertools.product((1, 8), (1, 4), (False, True))],
                         ids=lambda j: f"tp{j.tp}-pp{j.pp}{'-dist' if j.distributed_optimizer else ''}")
def test_rmsnorm_holds_one_parameter_a_channel_as_the_estimator_counts(job):
    """``--normalization RMSNorm``: the estimator counts each norm at ``h`` (a scale, no bias);
    the named difference is the final norm's ``1/pp`` it puts on the first stage. It was
    counted as LayerNorm's ``2h`` whatever the flag said."""
    final_norm_on_first = job.hidden / job.pp * _per_parameter(job) if job.pp > 1 else 0
    expected = estimator_weights_and_optimizer(job, norm=1) - final_norm_on_first
    assert _states(job) == pytest.approx(expected, rel=EXACT)


LLAMA2_7B = ("--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --ffn-hidden-size 11008 --swiglu "
             "--disable-bias-linear --position-embedding-type rope --untie-embeddings-and-output-weights "
             "--vocab-size 32000 --seq-length 4096 --micro-batch-size 1 --global-batch-size 8 --bf16")


def test_llama2_7b_has_its_published_parameter_count():
    """Llama 2 7B (Touvron et al. 2023; its released checkpoint holds 6,738,415,616 parameters):
    RMSNorm's scale is its only norm parameter. LayerNorm would add a bias to the 65 norms
    (65 x 4,096 more); ``--qk-layernorm`` adds a norm over a head's 128 channels for the
    queries and one for the keys in each of the 32 layers."""
    rms = parse(f"{LLAMA2_7B} --normalization RMSNorm", 8)
    assert rms.parameters() == 6_738_415_616
    assert parse(LLAMA2_7B, 8).parameters() - rms.parameters() == 65 * 4096
    qk = parse(f"{LLAMA2_7B} --normalization RMSNorm --qk-layernorm", 8)
    assert qk.parameters() - rms.parameters() == 32 * 2 * 128
