"""One Megatron-LM launch as a typed, frozen job: the model, its parallel layout and how it
runs, with the facts derived from them (parameters, FLOPs, micro-batches). The arguments
(:mod:`~simpy_astra.workloads.megatron.arguments`) build it; kernels, schedules, memory and
reports read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from simpy_astra.workloads.schedules.registry import default_schedule, schedule
from simpy_astra.workloads.schedules.task import (
    PassCosts,
    Task,
    V,
    overlaps_gradient_sends,
    placement,
    takes_costs,
)


class LayerKind(NamedTuple):
    """What sets a transformer layer's steps apart from its neighbours': a mixture of experts
    or not, and its context-parallel exchange (``--cp-comm-type``, one a layer allowed)."""

    moe: bool
    cp_comm: str


@dataclass(frozen=True)
class ChunkPlace:
    """A model chunk's place among the model's ``count`` chunks: ``index`` in model order."""

    index: int
    count: int

    @property
    def first(self) -> bool:
        """Holds the embedding."""
        return self.index == 0

    @property
    def last(self) -> bool:
        """Holds the logits and the loss."""
        return self.index == self.count - 1


def pipeline_split(layers: int, pp: int, vp: int, first: int | None = None, last: int | None = None,
                   embedding: bool = False, loss: bool = False) -> tuple[int, ...]:
    """Transformer layers of each of the ``pp x vp`` model chunks, in model order, as
    Megatron-Core's ``get_num_layers_to_build`` splits them: the first (last) stage holds
    ``first`` (``last``) layers when given and the other stages share the rest evenly; each
    stage's layers split evenly over its ``vp`` chunks; with ``embedding`` (``loss``) the
    embedding (the loss) counts as a layer of the split, so the model's first (last) chunk
    builds one transformer layer fewer. The arguments passed Megatron's divisibility rules
    (:mod:`~simpy_astra.workloads.megatron.rules`)."""
    if first is None and last is None:
        per_stage = [(layers + embedding + loss) // pp] * pp
    else:
        middle_stages = pp - (first is not None) - (last is not None)
        middle = layers - (first or 0) - (last or 0)
        per_stage = [middle // middle_stages if middle_stages else 0] * pp
        if first is not None:
            per_stage[0] = first
        if last is not None:
            per_stage[-1] = last
    split = [per_stage[s] // vp for c in range(vp) for s in range(pp)]
    split[0] -= embedding
    split[-1] -= loss
    return tuple(split)


@dataclass(frozen=True)
class MegatronJob:
    """One ``pretrain_gpt.py`` launch: the model, its parallel layout and how it runs."""

    gpus: int
    num_layers: int
    hidden: int
    heads: int
    kv_heads: int  # query groups (= heads without grouped-query attention)
    head_dim: int
    ffn_hidden: int
    swiglu: bool
    seq: int
    vocab: int  # padded as Megatron pads it
    tied_embeddings: bool
    micro_batch: int
    global_batch: int
    tp: int
    pp: int
    cp: int
    dp: int
    virtual_stages: int  # model chunks per pipeline stage (1: plain 1F1B)
    precision: str  # "fp16" | "bf16" | "fp32"
    fp8: bool  # the linear layers run in FP8: --fp8-format on Transformer Engine's layers
    fp8_current_scaling: bool  # --fp8-recipe tensorwise: each cast's scale from its tensor's own amax
    recompute: str  # "none" | "full" | "selective"
    recompute_method: str  # "uniform" | "block"
    recompute_layers: int
    sequence_parallel: bool
    distributed_optimizer: bool
    ddp: str  # "local" | "torch"
    overlap_grad_reduce: bool
    overlap_param_gather: bool
    tp_comm_overlap: bool  # Transformer Engine's userbuffers: Megatron's own layers ignore the flag
    async_tp_allreduce: bool  # input-gradient all-reduce overlapped with the weight-gradient GEMM
    gradient_accumulation_fusion: bool
    flash_attention: bool
    transformer_engine: bool  # Transformer Engine layers (today's default; 2021 and --transformer-impl local: no)
    #: context parallelism's exchange of each layer, in model order: "p2p" (K/V ring) |
    #: "allgather" | "a2a" | "a2a+p2p" (Megatron-Core's layer i runs ``cp_comm_type[i]``)
    cp_comm_types: tuple[str, ...]
    masked_softmax_fusion: bool
    bias_gelu_fusion: bool  # Megatron's bias_activation_fusion: GeLU's, or SwiGLU's with --swiglu
    bias_dropout_fusion: bool
    scatter_gather: bool  # pipeline sends of 1/tp of the activation, then an all-gather
    experts: int  # 0: dense MLPs
    ep: int  # expert parallelism (inside the data-parallel ranks)
    etp: int  # expert tensor parallelism (tp or 1)
    topk: int
    #: tokens sent to their experts' ranks by all-to-all; else Megatron's default allgather dispatcher
    moe_alltoall: bool
    moe_ffn: int
    shared_ffn: int  # shared expert beside the routed ones (0: none)
    moe_every: int  # every moe_every-th layer is a mixture of experts
    #: a 2021-2022 Megatron-LM (it has --DDP-impl or --checkpoint-activations): pipeline sends
    #: scattered over tp and all-gathered, each waited before the next task; no Transformer Engine
    legacy: bool
    kernels_2021: bool  # 2021's layers: synchronous tp collectives, fused softmax to 2,048 keys
    args: str
    #: the pipeline schedule's registry name ("": Megatron's own choice, by virtual stages)
    pipeline_schedule: str = ""
    #: one micro-batch's pass through a middle chunk (forward, input gradient, weight gradient,
    #: seconds), for schedules that build their order from them (ZB-V); empty: not measured
    pass_costs: tuple[float, float, float] = ()
    #: transformer layers of each model chunk in model order (chunk ``c`` of stage ``s`` is
    #: the ``c * pp + s``-th); empty: ``num_layers / (pp x virtual_stages)`` each
    layer_split: tuple[int, ...] = ()
    #: ``--use-tp-pp-dp-mapping``: ranks in Megatron's 'tp-cp-ep-pp-dp' order (stages before
    #: data-parallel replicas) instead of its default 'tp-cp-ep-dp-pp'
    pp_before_dp: bool = False
    #: interleaved 1F1B's ``overlap_p2p_comm`` (Megatron-LM's default since 2023-10, off with
    #: ``--no-overlap-p2p-communication``): a gradient send is waited after the next backward
    overlap_p2p_comm: bool = False
    #: ``--grad-reduce-in-bf16`` with bf16: gradients accumulated and reduced in bf16
    grads_in_bf16: bool = False
    #: ``--accumulate-allreduce-grads-in-fp32`` with fp16: an fp32 gradient buffer and reduction
    grads_in_fp32: bool = False
    #: linear layers with biases (Megatron's default; ``--disable-bias-linear``: none, as Llama)
    bias_linear: bool = True
    #: ``--cross-entropy-loss-fusion``: Megatron-Core's fused vocabulary-parallel cross entropy
    cross_entropy_fusion: bool = False
    #: ``--fp8-param-gather``: Transformer Engine's linear weights kept only in FP8 (no bf16
    #: copy; the fp32 master in the optimizer) and all-gathered in FP8, one byte a weight
    fp8_param_gather: bool = False
    #: ``--moe-layer-freq`` as a pattern: whether each layer has experts (empty: ``moe_every``)
    moe_pattern: tuple[bool, ...] = ()
    #: rotary embeddings' kernels on the queries and keys: "fused" (Megatron-Core's default
    #: since 2024-01, one kernel each way, for plain rope only), "unfused" (``--no-rope-fusion``,
    #: YaRN, multimodal rope), "" (none)
    rope: str = ""
    #: ``--qk-layernorm``: a norm over each head of the queries and keys before attention
    qk_layernorm: bool = False
    #: parameters a channel of each norm: 2 with LayerNorm (a scale and a bias), 1 with
    #: ``--normalization RMSNorm`` (a scale)
    norm_params_per_channel: int = 2
    #: ``--moe-grouped-gemm``: a rank's local experts run as one grouped GEMM whose tiles share
    #: the SMs' waves (else Megatron's SequentialMLP: one expert's GEMMs after another's)
    moe_grouped_gemm: bool = False
    #: ``--num-distributed-optimizer-instances``: copies of the distributed optimizer, each
    #: sharded over dp x cp / N ranks (and the experts' over their data-parallel ranks / N)
    optimizer_instances: int = 1
    #: ``--fp8-format`` given: Transformer Engine's ``fp8_autocast`` wraps the step (and refuses
    #: a GPU without FP8) even where Megatron's own layers, which it does not touch, run bf16
    fp8_requested: bool = False
    #: query-key layer scaling: the unfused softmax path multiplies the scores by the layer
    #: number (Megatron's default until 2023, ``--no-query-key-layer-scaling`` to drop it)
    query_key_layer_scaling: bool = False
    #: the unfused path masks and softmaxes in fp32 (``--attention-softmax-in-fp32``, or
    #: implied by query-key layer scaling): a copy to fp32 before and back after
    softmax_in_fp32: bool = False
    #: ``--attention-dropout``: at 0 the unfused attention runs no dropout (PyTorch's dropout
    #: returns its input when p is 0: no kernel, no mask kept); fused kernels drop in place
    attention_dropout: float = 0.1
    #: ``--hidden-dropout``: at 0 PyTorch's dropout returns its input, so the bias-dropout-adds
    #: and the embedding's dropout write and keep no 1-byte mask
    hidden_dropout: float = 0.1
    #: ``--attention-backend`` under Transformer Engine: "auto" lets TE fall back to its unfused
    #: attention; "flash" and "fused" turn the other kernels off (``attention_backend.on_gpu``)
    attention_backend: str = "auto"
    #: what Megatron warns of this command line and runs on (one line each, naming the field)
    warnings: tuple[str, ...] = field(default=(), compare=False)
    #: rows of the learned position-embedding table (0: rotary or none), on every tp rank
    position_embeddings: int = 0
    #: bytes of each state tensor the optimizer keeps a parameter (``--optimizer``): Adam's two
    #: fp32 moments (narrower with ``--use-precision-aware-optimizer --exp-avg(-sq)-dtype``);
    #: SGD's momentum buffer, none at ``--sgd-momentum 0`` (torch's SGD then keeps no buffer)
    moment_bytes: tuple[int, ...] = (4, 4)
    #: bytes a parameter of the optimizer's master copy with fp16/bf16 training: fp32 (4); with
    #: ``--use-precision-aware-optimizer``, Transformer Engine's FusedAdam keeps the 16 bits a
    #: bf16 weight does not hold (``store_param_remainders``), or fp16 (``--main-params-dtype``)
    master_bytes: int = 4
    #: ``--ddp-bucket-size``: parameters a gradient bucket on the first stage's first chunk
    #: (0: Megatron-Core's ``max(40M, 1M x dp x cp)``)
    ddp_bucket_params: int = 0
    #: ``a2a+p2p``: the all-to-all group's size (``--hierarchical-context-parallel-sizes``'
    #: first); the K/V ring runs over the other ``cp / cp_a2a`` (1: no all-to-all)
    cp_a2a: int = 1
    #: ``--distribute-saved-activations`` (2021: ``--distribute-checkpointed-activations``): full
    #: recomputation keeps 1/tp of each unit's input (``CheckpointFunction``) and all-gathers it
    #: over tp before recomputing the unit
    distribute_saved_activations: bool = False
    #: Megatron-Core's DDP (not 2021/2022's): zeroes its gradient buffer when a step starts
    #: (``zero_grad_buffer``) and prepares each bucket before syncing it (``start_grad_sync``);
    #: priced where the gradients are synced over dp x cp > 1 replicas (at one it zeroes and
    #: checks them too: left out)
    grad_buffer_zeroed: bool = False
    #: ... reading the bucket for its norm, a NaN check (``--check-for-nan-in-loss-and-grad``:
    #: on unless ``--no-...`` or fp16's dynamic loss scale turns it off)
    grad_nan_check: bool = False
    #: ... and multiplying it by 1/(dp x cp) in place (unless the collective averages:
    #: ``--ddp-average-in-collective``; sums: ``--calculate-per-token-loss``; or one replica)
    grad_scaling: bool = False
    #: 1F1B: a later pipeline stage starts its gradient sync after its last gradient send, in
    #: the pipeline's bubble (``--align-grad-reduce``, r0.8's ``--delay-grad-reduce``: the default)
    align_grad_reduce: bool = False
    #: the loss is checked for NaN on the host each micro-batch (``--check-for-nan-in-loss-and-grad``,
    #: Megatron-Core's ``loss_func``): a synchronisation after the last chunk's forward
    loss_nan_check: bool = False
    #: the optimizer step computes the gradients' global norm (``--clip-grad`` above 0)
    grad_norm: bool = True
    #: the optimizer step unscales the gradients and checks them for inf/nan (a grad scaler:
    #: fp16, or ``--loss-scale``); bf16 without a loss scale skips that pass
    gradient_check: bool = True

    def fused_softmax_runs(self) -> bool:
        """Megatron's fused scale-mask-softmax kernel runs (else PyTorch's kernels one by one).

        ``FusedScaleMaskSoftmax`` falls back to PyTorch when fusion is off, on fp32 inputs, or
        outside the kernel's shapes: keys of 17 to 2,048 (2021, ``megatron/model/
        fused_softmax.py`` at ``6985e589``) or 4,096 (from 2022-01, ``is_kernel_available``),
        queries and (today) keys a multiple of 4, and ``micro-batch x heads per GPU`` a
        multiple of 4 and of the kernel's rows per block (8 for keys up to 128, else 4).
        Transformer Engine's unfused attention (``--attention-backend unfused``) has its own:
        keys of 17 to 16,383 and a multiple of 8, its causal rows a multiple of that block."""
        if not self.masked_softmax_fusion or self.precision == "fp32":
            return False
        keys, batches = self.seq, self.micro_batch * (self.heads // self.tp)
        per_block = 8 if keys <= 128 else 4
        if self.transformer_engine:
            return 16 < keys < 16384 and keys % 8 == 0 and batches % 4 == 0 and keys % per_block == 0
        if self.kernels_2021:
            return 16 < keys <= 2048 and keys % 4 == 0 and batches % 4 == 0
        return 16 < keys <= 4096 and keys % 4 == 0 and batches % per_block == 0

    def softmax_fp32_copy(self) -> bool:
        """PyTorch's fallback softmax runs on an fp32 copy of the fp16/bf16 scores (which its
        backward also saves: 4 B a score, not 2)."""
        return not self.fused_softmax_runs() and self.softmax_in_fp32 and self.precision != "fp32"

    @property
    def micro_batches(self) -> int:
        """Micro-batches per data-parallel replica in one step."""
        return self.global_batch // (self.micro_batch * self.dp)

    @property
    def cp_comm_type(self) -> str:
        """The exchange every layer runs, or the layers' types as ``--cp-comm-type`` lists them."""
        kinds = self.cp_comm_types
        return kinds[0] if len(set(kinds)) == 1 else " ".join(kinds)

    def layer_kind(self, layer: int) -> LayerKind:
        """Layer ``layer``'s (0-based, model order) MoE-ness and context-parallel exchange."""
        return LayerKind(self.is_moe(layer), self.cp_comm_types[layer])

    def chunk_kinds(self, stage: int, chunk: int) -> tuple[LayerKind, ...]:
        """The kinds of the layers stage ``stage``'s chunk ``chunk`` builds."""
        return tuple(self.layer_kind(layer) for layer in self.chunk_layers(stage, chunk))

    @property
    def plays_messages(self) -> bool:
        """The trace holds an exchange a network plays message by message, reading its routes'
        latencies: a pipeline send (pp > 1), or an all-to-all (MoE's token dispatch, Ulysses'
        context-parallel exchange). Every other exchange is an all-reduce, reduce-scatter,
        all-gather (a context-parallel ``p2p`` ring's hops too) or broadcast, which a cluster's
        analytical backend times by NCCL's model, blind to those latencies."""
        return self.pp > 1 or self.plays_all_to_all

    @property
    def plays_all_to_all(self) -> bool:
        """The trace holds an all-to-all (MoE's token dispatch, Ulysses' context-parallel
        exchange), whose messages go between every pair of its group's ranks."""
        return self.ep > 1 and self.moe_alltoall or self.cp > 1 and any(kind in ("a2a", "a2a+p2p")
                                                                          for kind in self.cp_comm_types)

    @property
    def gathers(self) -> bool:
        """The trace holds an all-gather or a reduce-scatter, which NCCL runs by PAT on a group
        of one GPU a node (at the mean of the machine's fitted shares, NVLS's and the tree's
        too): sequence parallelism's, a context-parallel ring's or all-gather's, an expert
        all-gather dispatch, the distributed optimizer's (over two or more replicas, or
        experts'), or the inputs a full recomputation keeps distributed. (A micro-batch's batch
        broadcasts over tp, ``batch_fetch``, are broadcasts: NCCL runs those by its ring alone.)"""
        return (self.sequence_parallel or self.cp > 1 and any(kind != "a2a" for kind in self.cp_comm_types)
                or self.ep > 1 and not self.moe_alltoall
                or self.distributed_optimizer and (self.dp * self.cp > 1 or self.experts > 0)
                or self.recompute == "full" and self.distribute_saved_activations)

    def is_moe(self, layer: int) -> bool:
        if self.moe_pattern:
            return self.experts > 0 and self.moe_pattern[layer]
        return self.experts > 0 and layer % self.moe_every == 0

    @property
    def moe_layers(self) -> int:
        if not self.experts:
            return 0
        return sum(self.moe_pattern) if self.moe_pattern else -(-self.num_layers // self.moe_every)

    @property
    def element_bytes(self) -> int:
        return 4 if self.precision == "fp32" else 2

    @property
    def grad_bytes(self) -> int:
        """Bytes of a gradient-buffer element: fp32 with bf16 and fp32 training (Megatron
        accumulates bf16 gradients in fp32 unless ``--grad-reduce-in-bf16``), fp16 with fp16
        training (fp32 with ``--accumulate-allreduce-grads-in-fp32``)."""
        return 2 if (self.precision == "fp16" and not self.grads_in_fp32) or self.grads_in_bf16 else 4

    @property
    def schedule_name(self) -> str:
        """The pipeline schedule this job runs: the one asked for, else Megatron-LM's choice."""
        return self.pipeline_schedule or default_schedule(self.virtual_stages)

    def stage_order(self, stage: int) -> list[Task]:
        """Stage ``stage``'s tasks in the job's schedule (given the passes' costs if it takes them)."""
        fn = schedule(self.schedule_name)
        costs = {"costs": PassCosts(*self.pass_costs)} if self.pass_costs and takes_costs(fn) else {}
        return fn(stage, self.pp, self.micro_batches, self.virtual_stages, **costs)

    @cached_property
    def async_gradient_sends(self) -> bool:
        """A gradient send is waited only after the stage's next backward: ``overlap_p2p_comm``
        on and a schedule that overlaps them (interleaved 1F1B, or one that says so)."""
        return self.overlap_p2p_comm and overlaps_gradient_sends(schedule(self.schedule_name))

    @cached_property
    def v_placement(self) -> bool:
        """The schedule places the chunks in a V (:data:`~simpy_astra.workloads.schedules.task.V`)."""
        return placement(schedule(self.schedule_name)) == V

    def chunk_place(self, stage: int, chunk: int) -> ChunkPlace:
        """Where stage ``stage``'s chunk ``chunk`` sits in the model: the model's chunks run in
        order over the stages (chunk ``c`` of stage ``s`` is the model's ``c * pp + s``), and
        in a V each odd chunk back up them (the model's ``(c + 1) pp - 1 - s``)."""
        back = self.v_placement and chunk % 2
        return ChunkPlace(chunk * self.pp + (self.pp - 1 - stage if back else stage), self.pp * self.virtual_stages)

    def stage_of(self, index: int) -> int:
        """The pipeline stage holding the model's ``index``-th chunk (:meth:`chunk_place`'s inverse)."""
        chunk, offset = divmod(index, self.pp)
        return self.pp - 1 - offset if self.v_placement and chunk % 2 else offset

    @property
    def last_stage(self) -> int:
        """The stage holding the output layer and the loss: the last, or in a V the first."""
        return self.stage_of(self.pp * self.virtual_stages - 1)

    @property
    def tied_on_one_stage(self) -> bool:
        """The output layer is the word embedding itself: tied, and both on one stage."""
        return self.tied_embeddings and self.last_stage == 0

    @property
    def split(self) -> tuple[int, ...]:
        """Transformer layers of each model chunk, in model order."""
        chunks = self.pp * self.virtual_stages
        return self.layer_split or (self.num_layers // chunks,) * chunks

    def chunk_layers(self, stage: int, chunk: int) -> range:
        """The model's layer indices that stage ``stage``'s chunk ``chunk`` builds (Megatron-
        Core's ``get_transformer_layer_offset`` and ``get_num_layers_to_build``): the chunks
        before it in model order hold the layers before it."""
        index, split = self.chunk_place(stage, chunk).index, self.split
        first = sum(split[:index])
        return range(first, first + split[index])

    def stage_layers(self, stage: int) -> list[range]:
        """The layers of each of stage ``stage``'s chunks."""
        return [self.chunk_layers(stage, c) for c in range(self.virtual_stages)]

    def layer_biases(self) -> tuple[int, int]:
        """A dense layer's bias parameters, unsplit: (attention's QKV and projection, the MLP's
        two linears); none with ``--disable-bias-linear``."""
        if not self.bias_linear:
            return 0, 0
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return q + 2 * kv + self.hidden, (2 if self.swiglu else 1) * self.ffn_hidden + self.hidden

    @property
    def layer_norm_params(self) -> int:
        """Parameters of a layer's norms, whole on every tp rank: the two over the hidden
        width and, with ``--qk-layernorm``, Megatron-Core's one each for the queries and the
        keys over a head's width (shared by the heads)."""
        widths = 2 * self.hidden + (2 * self.head_dim if self.qk_layernorm else 0)
        return self.norm_params_per_channel * widths

    @property
    def final_norm_params(self) -> int:
        """The final norm's parameters (on the last pipeline stage)."""
        return self.norm_params_per_channel * self.hidden

    @property
    def embedding_params(self) -> int:
        """Parameters a GPU of the first stage holds before the layers: its shard of the word
        embedding and the position table."""
        return self.hidden * (self.vocab // self.tp + self.position_embeddings)

    @property
    def output_params(self) -> int:
        """Parameters a GPU of the last stage holds after the layers: the final norm and its
        shard of the output layer (none when it is the tied embedding on the same stage)."""
        return self.final_norm_params + (0 if self.tied_on_one_stage else self.hidden * self.vocab // self.tp)

    def parameters(self) -> int:
        """Parameters of the whole model (embeddings, layers, final norm)."""
        h, kv = self.hidden, self.kv_heads * self.head_dim
        attn = h * (self.heads * self.head_dim + 2 * kv) + self.heads * self.head_dim * h
        w = 3 if self.swiglu else 2
        mlp = w * h * self.ffn_hidden
        per_layer = attn + mlp + sum(self.layer_biases()) + self.layer_norm_params
        moe = self.experts * w * h * self.moe_ffn + h * self.experts + w * h * self.shared_ffn
        emb = self.vocab * h * (1 if self.tied_embeddings else 2) + self.position_embeddings * h
        return self.num_layers * per_layer + self.moe_layers * (moe - mlp) + emb + self.final_norm_params

    def model_flops(self) -> float:
        """FLOPs of one step as the SC'21 paper counts them, recomputation included when full
        recomputation is on (four passes over the layers, three over the logits):
        ``96 B s l h^2 (1 + s/6h + V/16lh)`` for its GPT. Other shapes (SwiGLU, grouped-query
        attention, another FFN width) are counted from their matrix products the same way."""
        return self._flops(4 if self.recompute == "full" else 3)

    def model_flops_no_recompute(self) -> float:
        """Three passes everywhere, ``72 B s l h^2 (1 + s/6h + V/12lh)`` (MFU's numerator)."""
        return self._flops(3)

    def _flops(self, layer_passes: int) -> float:
        h, q, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        w = 3 if self.swiglu else 2
        mlp = 2 * w * h * self.ffn_hidden
        matmuls = 2 * (h * (q + 2 * kv) + q * h) + mlp
        attention = 2 * 2 * self.seq * q  # score and context products, per token
        moe = 2 * (self.topk * w * h * self.moe_ffn + h * self.experts + w * h * self.shared_ffn)
        layers = self.num_layers * (matmuls + attention) + self.moe_layers * (moe - mlp)
        per_token = layers * layer_passes + 3 * 2 * h * self.vocab
        return float(self.global_batch * self.seq * per_token)
