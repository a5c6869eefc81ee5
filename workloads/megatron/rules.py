"""Megatron-LM's own validity rules for the arguments this simulator models.

A job Megatron-LM refuses to launch must not be simulated: each rule here is one of
``validate_args`` (``megatron/training/arguments.py``), ``TransformerConfig``/
``ModelParallelConfig``'s checks, the micro-batch calculator's or the interleaved schedule's,
restated with Megatron's reason, and raised as :class:`InvalidConfigurationError` (a sweep
records such a point as invalid). Era matters where Megatron changed: with ``--DDP-impl`` (a
2021 Megatron-LM) interleaving needs more than two stages, as it did then; a rule that arrived
after the 2021 names left (SGD refused by the distributed optimizer, biases in experts split
over tp, ``--no-position-embedding`` deprecated) does not refuse a command line with them; and
``--fp8-format`` is refused beside them, as no Megatron-LM of theirs ran FP8. Megatron's
warnings are not errors: ``--sequence-parallel`` at tp 1 is turned off, as Megatron turns it off.

Not enforced: ``--max-position-embeddings`` is required by every Megatron-LM (its
``required_args``); here it defaults to ``--seq-length``, the table Megatron would be given.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from simpy_astra.errors import refuse
from simpy_astra.workloads.megatron import legacy_models, pipeline_rules
from simpy_astra.workloads.megatron.batch_sizes import data_parallel, global_batch
from simpy_astra.workloads.megatron.layer_pattern import has_dense_layers

if TYPE_CHECKING:
    from simpy_astra.workloads.megatron.kernels import Gpu


def legacy_names(a: argparse.Namespace) -> bool:
    """A 2021-2022 Megatron-LM's command line: only those releases have ``--DDP-impl``,
    ``--checkpoint-activations`` and ``--activations-checkpoint-method``."""
    return a.ddp_impl is not None or a.checkpoint_activations or a.activations_checkpoint_method is not None


def names_of_2022(a: argparse.Namespace) -> bool:
    """Names that came with sequence parallelism (Megatron-LM ``d898a8991d``, 2022-05):
    beside :func:`legacy_names` they say a 2022-05 to 2023-08 release, whose layers already
    ran the async all-reduce (2021-09) and gradient-accumulation fusion (2022-02)."""
    return a.sequence_parallel or a.recompute_activations or a.recompute_granularity is not None


def query_groups(a: argparse.Namespace) -> int | None:
    """Key/value heads under grouped-query attention, None without it: Megatron reads
    ``--num-query-groups`` (argparse default 1) only with ``--group-query-attention``
    (``core_transformer_config_from_args``)."""
    return (a.num_query_groups or 1) if a.group_query_attention else None


def check(a: argparse.Namespace, gpus: int, others: dict[str, list[str]], where: str) -> None:
    """Refuse what Megatron-LM refuses of ``a`` (the parsed arguments) on ``gpus`` GPUs;
    ``others`` are the unmodelled flags given, with their values."""
    for family in (_layout, _attention, pipeline_rules.check, _batch, _precision, _fp8_era, _optimizer, _recompute,
                   _overlap, _experts, _activation, _optimizer_copies, legacy_models.check):
        family(a, gpus, others, where)


def check_hardware(fp8: bool, gpu: Gpu, where: str, grouped_gemm: bool = False) -> None:
    """Rules on the GPU the job runs on: FP8 needs FP8 units; ``--moe-grouped-gemm`` an Ampere
    or newer GPU, known by its name (a name of no known generation is not refused)."""
    from simpy_astra.config.cluster import gpu_generation  # (config.cluster imports this package)
    if fp8 and not gpu.fp8_tflops:
        refuse(where, "fp8 needs fp8 hardware",
               f"--fp8-format needs a GPU with FP8 tensor cores (Hopper or newer); the preset's {gpu.name} has "
               f"none (gpu.fp8_tflops is 0): Transformer Engine refuses FP8 on it")
    if grouped_gemm and gpu_generation(gpu.name) == "volta":
        refuse(where, "grouped GEMM needs compute capability 8",
               f"--moe-grouped-gemm on {gpu.name}, a GPU of compute capability under 8.0 (Megatron: Unsupported "
               f"compute capability for GroupedGEMM kernels.); run on an Ampere or newer GPU, or remove "
               f"--moe-grouped-gemm")


def check_layers(cp: int, transformer_engine: bool, fused_attention: bool, where: str,
                 position_embedding: str = "learned_absolute") -> None:
    """Rules on which layers and attention kernel run (Transformer Engine's or Megatron's
    own), known once the arguments' era is."""
    if position_embedding == "relative" and not transformer_engine:
        refuse(where, "relative position embeddings need Transformer Engine",
               "--position-embedding-type relative needs Transformer Engine's layers, today's default (not "
               "--transformer-impl local) (Megatron: Local transformer implementation currently does not support "
               "attention bias-based position embeddings.)")
    if cp > 1 and transformer_engine and not fused_attention:
        refuse(where, "context parallelism needs fused attention",
               f"--context-parallel-size {cp} with --attention-backend unfused (or local): unfused attention "
               f"does not support context parallelism and the flag rules out the fused kernels (Megatron, through "
               f"Transformer Engine: "
               f"Disabling UnfusedDotProductAttention as it does not support context parallelism; No dot "
               f"product attention backend is available)")
    if cp > 1 and not transformer_engine:
        refuse(where, "context parallelism needs Transformer Engine",
               f"--context-parallel-size {cp} needs Transformer Engine's attention, today's default layers "
               f"(not --transformer-impl local, nor 2021's names --DDP-impl or --checkpoint-activations) "
               f"(Megatron: Context parallelism is only supported by TEDotProductAttention!)")


def check_widths(a: argparse.Namespace, ffn: int, where: str) -> None:
    """The MLPs' widths split over their tensor-parallel ranks: Megatron's column- and
    row-parallel linear layers (and Transformer Engine's) divide() them, which asserts."""
    tp, experts = a.tensor_model_parallel_size, a.num_experts or 0
    etp = a.expert_tensor_parallel_size or tp
    widths = []
    if not experts or has_dense_layers(a.moe_layer_freq):  # a dense MLP somewhere
        widths.append(("--ffn-hidden-size", ffn, tp, "--tensor-model-parallel-size"))
    if experts:
        widths.append(("--moe-ffn-hidden-size", a.moe_ffn_hidden_size or ffn, etp,
                       "--expert-tensor-parallel-size" if a.expert_tensor_parallel_size else
                       "--tensor-model-parallel-size (the experts' tp unless --expert-tensor-parallel-size)"))
        if a.moe_shared_expert_intermediate_size:
            widths.append(("--moe-shared-expert-intermediate-size", a.moe_shared_expert_intermediate_size, tp,
                           "--tensor-model-parallel-size"))
    for flag, width, ranks, split in widths:
        if width % ranks:
            refuse(where, "linear layers split over tp",
                   f"{flag} {width} does not split over {split} {ranks} (Megatron's parallel linear layers: "
                   f"{width} is not divisible by {ranks})")


def _layout(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    tp, pp, cp = a.tensor_model_parallel_size, a.pipeline_model_parallel_size, a.context_parallel_size
    if gpus % (tp * pp * cp):
        refuse(where, "gpus divisible by tp x pp x cp",
               f"{gpus} GPUs are not a multiple of tp x pp x cp = {tp} x {pp} x {cp} = {tp * pp * cp} "
               f"(Megatron: world size is not divisible by total model size; the data-parallel size is "
               f"gpus / (tp x pp x cp))")
    if cp > 1 and a.seq_length % (2 * cp):
        refuse(where, "sequence divisible by 2 x cp",
               f"--seq-length {a.seq_length} is not a multiple of 2 x --context-parallel-size = {2 * cp} "
               f"(Megatron: seq-length should be a multiple of 2 * context-parallel-size, for the causal "
               f"load balancing that gives each rank two chunks)")
    kinds = len(a.cp_comm_type)
    if cp > 1 and kinds > 1 and kinds != a.num_layers:
        refuse(where, "one cp comm type or one a layer",
               f"--cp-comm-type names {kinds} types for --num-layers {a.num_layers} (Megatron: Length of "
               f"cp_comm_type ({kinds}) should equal to the total number of transformer layers ({a.num_layers})!; "
               f"give one type, or one for each layer)")
    if cp > 1 and "a2a" in a.cp_comm_type:
        tp, groups = a.tensor_model_parallel_size, query_groups(a) or a.num_attention_heads
        heads, kv_heads = a.num_attention_heads // tp, max(1, groups // tp)  # on a tp rank
        if heads % cp or kv_heads % cp:
            refuse(where, "a2a context parallelism splits heads",
                   f"--cp-comm-type a2a with {heads} query and {kv_heads} key/value heads a tp rank, not "
                   f"multiples of --context-parallel-size {cp} (Megatron, through Transformer Engine's all-to-all "
                   f"context parallelism: The number of attention heads needs to be divisible by CP size!)")
    position = "rope" if a.use_rotary_position_embeddings else a.position_embedding_type
    if position == "mrope" and "--mrope-section" not in others:
        refuse(where, "mrope needs its sections",
               "--position-embedding-type mrope needs --mrope-section (Megatron: --mrope-section should be set when "
               "using --position-embedding-type mrope.)")
    if a.no_position_embedding and position != "rope" and not legacy_names(a):
        refuse(where, "no --no-position-embedding",
               "--no-position-embedding without rotary embeddings (Megatron, since 2023-07: --no-position-embedding "
               "is deprecated, use --position-embedding-type; none drops the position table)")
    if a.attention_backend == "local":
        refuse(where, "local attention backend needs the local spec",
               "--attention-backend local needs --spec local, which is not modelled (Megatron: --attention-backend "
               "local is only supported with --spec local); --transformer-impl local runs Megatron's own attention")
    if a.max_position_embeddings is not None and a.max_position_embeddings < a.seq_length:
        refuse(where, "position embeddings cover the sequence",
               f"--max-position-embeddings {a.max_position_embeddings} is less than --seq-length "
               f"{a.seq_length} (Megatron: max_position_embeddings must be greater than or equal to seq_length)")


def check_sequence_split(a: argparse.Namespace, where: str) -> None:
    """Sequence parallelism's split of each rank's tokens over tp: Megatron asserts it when the
    first forward scatters the embedding's output, after the model was built, so a layout its
    config or its layers refuse (heads or the MLP over tp) is refused for that instead."""
    tp, cp = a.tensor_model_parallel_size, a.context_parallel_size
    if a.sequence_parallel and tp > 1 and (a.seq_length // cp) % tp:
        refuse(where, "sequence parallelism splits the sequence over tp",
               f"--sequence-parallel splits each rank's {a.seq_length // cp} tokens (--seq-length {a.seq_length}"
               + (f" / --context-parallel-size {cp}" if cp > 1 else "") + f") over --tensor-model-parallel-size "
               f"{tp}, which does not divide them (Megatron, scattering the embedding's output: First dimension "
               f"of the tensor should be divisible by tensor parallel size)")


def _attention(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    tp, h, heads = a.tensor_model_parallel_size, a.hidden_size, a.num_attention_heads
    if not a.kv_channels and h % heads:
        refuse(where, "hidden divisible by heads",
               f"--hidden-size {h} is not a multiple of --num-attention-heads {heads} (Megatron: without "
               f"--kv-channels a head is hidden_size / num_attention_heads wide)")
    if heads % tp:
        refuse(where, "heads divisible by tp",
               f"--num-attention-heads {heads} is not a multiple of --tensor-model-parallel-size {tp} "
               f"(Megatron: num_attention_heads must be a multiple of tensor_model_parallel_size; each "
               f"rank holds whole heads)")
    groups = query_groups(a)
    if groups is None:
        return
    if heads % groups:
        refuse(where, "heads divisible by query groups",
               f"--num-query-groups {groups} does not divide --num-attention-heads {heads} (Megatron: each "
               f"query group is a whole number of heads)")
    if groups % tp and tp % groups:
        refuse(where, "query groups divisible by tp",
               f"--num-query-groups {groups} is neither a multiple nor a divisor of "
               f"--tensor-model-parallel-size {tp} (Megatron: num_query_groups must be a multiple or "
               f"divisor of tensor_model_parallel_size)")


def _batch(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    pp, dp, micro, total = a.pipeline_model_parallel_size, data_parallel(a, gpus), a.micro_batch_size, global_batch(a, gpus)
    if total % (micro * dp):
        refuse(where, "global batch divisible by micro-batch x dp",
               f"--global-batch-size {total} is not a multiple of --micro-batch-size {micro} x data-parallel "
               f"size {dp} (Megatron: global batch size is not divisible by micro batch size times data "
               f"parallel size)")
    micro_batches = total // (micro * dp)
    if pipeline_rules.virtual_stages(a) > 1 and (micro_batches < pp or micro_batches % pp):
        refuse(where, "interleaved micro-batches divisible by pp",
               f"interleaved 1F1B with {micro_batches} micro-batches per replica and {pp} pipeline stages "
               f"(Megatron: the number of micro-batches must be a multiple of, and at least, the "
               f"pipeline-parallel size with the interleaved schedule)")


def _precision(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    if a.fp16 and a.bf16:
        refuse(where, "one precision", "give --fp16 or --bf16, not both (Megatron: only one of fp16 and bf16 "
                                        "should be True)")
    if a.ddp_impl == "torch" and a.use_distributed_optimizer:
        refuse(where, "distributed optimizer needs local DDP",
               "--use-distributed-optimizer with --DDP-impl torch: the distributed optimizer shards the local "
               "DDP's contiguous gradient buffer (Megatron, 2022-2023: if args.use_distributed_optimizer: assert "
               "args.DDP_impl == 'local'); use --DDP-impl local")
    if a.ddp_impl == "torch" and (a.bf16 or a.accumulate_allreduce_grads_in_fp32):
        refuse(where, "fp32 gradient accumulation needs local DDP",
               f"{'--bf16' if a.bf16 else '--accumulate-allreduce-grads-in-fp32'} with --DDP-impl torch: "
               f"gradients accumulated in fp32 need --DDP-impl local (Megatron, 2021: bfloat16 requires gradient "
               f"accumulation and all-reduce to be done in fp32; assert args.DDP_impl == 'local')")
    if a.bf16 and a.accumulate_allreduce_grads_in_fp32 and a.main_grads_dtype != "fp32":
        refuse(where, "fp32 gradient accumulation needs fp32 main gradients",
               f"--accumulate-allreduce-grads-in-fp32 with --main-grads-dtype {a.main_grads_dtype} (Megatron: "
               f"--main-grads-dtype can only be fp32 when --accumulate-allreduce-grads-in-fp32 is set)")
    if "--fp16-lm-cross-entropy" in others and not a.fp16:
        refuse(where, "fp16 cross entropy needs fp16",
               "--fp16-lm-cross-entropy without --fp16 (Megatron: lm cross entropy in fp16 only supported in "
               "fp16 mode)")
    if a.cross_entropy_loss_fusion and a.cross_entropy_fusion_impl == "te":
        refuse(where, "no TE cross entropy fusion",
               "--cross-entropy-loss-fusion with --cross-entropy-fusion-impl te (Megatron: Transformer Engine "
               "cross entropy loss fusion is disabled due to stability issues; use --cross-entropy-fusion-impl "
               "native, or omit --cross-entropy-loss-fusion)")


def _fp8_era(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    """FP8 against the 2021 names: ``--fp8-format`` arrived in 2023-08 (``--fp8-e4m3`` and
    ``--fp8-hybrid`` in 2022-12), after ``--activations-checkpoint-method`` was dropped
    (2022-04) and ``--checkpoint-activations`` made to exit (2023-04); ``--DDP-impl`` lived
    one week longer (to 2023-08-31), in a Megatron-LM whose ``--transformer-impl`` defaulted
    to ``local``."""
    if a.fp8_format is None:
        return
    if a.checkpoint_activations:
        refuse(where, "fp8 needs a Megatron-LM with fp8",
               "--fp8-format with --checkpoint-activations: no Megatron-LM takes both; those with --fp8-format "
               "(2023-08 on) exit on --checkpoint-activations (Megatron: --checkpoint-activations is no longer "
               "valid, use --recompute-activations, or, for more control, --recompute-granularity and "
               "--recompute-method.)")
    if a.activations_checkpoint_method is not None:
        refuse(where, "fp8 needs a Megatron-LM with fp8",
               "--fp8-format with --activations-checkpoint-method: no Megatron-LM has both; the method was renamed "
               "--recompute-method in 2022-04, before FP8 arrived (Megatron: unrecognized arguments: "
               "--activations-checkpoint-method)")
    if a.ddp_impl is not None and a.transformer_impl != "transformer_engine":
        refuse(where, "fp8 needs a Megatron-LM with fp8",
               "--fp8-format with --DDP-impl: the one Megatron-LM with both (2023-08-24 to 08-31) ran its own "
               "layers unless --transformer-impl transformer_engine (Megatron: transformer-engine required for "
               "fp8 training and inference)")


def _optimizer(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    if a.use_precision_aware_optimizer:
        if not a.use_distributed_optimizer:
            refuse(where, "precision-aware optimizer needs the distributed optimizer",
                   "--use-precision-aware-optimizer needs --use-distributed-optimizer (Megatron: "
                   "--use-precision-aware-optimizer only supported with distributed optimizer)")
        if a.optimizer != "adam":
            refuse(where, "precision-aware optimizer is Adam",
                   f"--use-precision-aware-optimizer with --optimizer {a.optimizer} (Megatron: "
                   f"--use-precision-aware-optimizer only supported with adam)")
    else:
        for flag in ("main_grads_dtype", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype"):
            if getattr(a, flag) != "fp32":
                refuse(where, "optimizer dtypes need the precision-aware optimizer",
                       f"--{flag.replace('_', '-')} {getattr(a, flag)} without --use-precision-aware-optimizer "
                       f"(Megatron: {flag} can only be fp32 when not using precision-aware optimizer)")
    if a.ddp_impl == "torch" and a.use_distributed_optimizer:
        refuse(where, "distributed optimizer needs local DDP",
               "--use-distributed-optimizer with --DDP-impl torch (Megatron, 2022-02 to 2023-08: If we use the "
               "distributed optimizer, we need to use local DDP; assert args.DDP_impl == 'local')")
    if a.optimizer == "sgd" and a.use_distributed_optimizer and not legacy_names(a):
        refuse(where, "distributed optimizer needs Adam",
               "--optimizer sgd with --use-distributed-optimizer: torch's SGD has no state to shard before its "
               "first step (Megatron, since 2023-05: Only Adam, HybridDeviceOptimizer, and optimizers with an "
               "init_state_fn (e.g., Lion) are currently supported, due to checkpointing requirements.)")


def _recompute(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    # Megatron: if args.recompute_activations: args.recompute_granularity = 'selective'
    granularity = "selective" if a.recompute_activations else a.recompute_granularity
    newer = granularity or a.recompute_method or a.recompute_num_layers is not None or a.recompute_activations
    if a.activations_checkpoint_method and newer:
        refuse(where, "one release's recomputation names",
               "--activations-checkpoint-method (Megatron-LM of 2021-08 to 2022-05) with --recompute-* (its "
               "successor): no Megatron-LM has both; give --recompute-granularity full --recompute-method "
               f"{a.activations_checkpoint_method} --recompute-num-layers N for today's")
    if a.checkpoint_activations and (a.activations_checkpoint_method or newer):
        later = "--activations-checkpoint-method" if a.activations_checkpoint_method else "--recompute-*"
        refuse(where, "one release's recomputation names",
               f"--checkpoint-activations (Megatron-LM to 2021-08) with {later}, its successor: every Megatron-LM "
               f"that has {later} stops on --checkpoint-activations (--checkpoint-activations is no longer "
               f"valid); give one release's names")
    if a.distribute_checkpointed_activations and (a.tensor_model_parallel_size == 1 or not (
            a.activations_checkpoint_method or a.checkpoint_activations)):
        refuse(where, "distributed activations need tp and recomputation",
               "--distribute-checkpointed-activations needs --tensor-model-parallel-size > 1 and "
               "--activations-checkpoint-method (Megatron: can distribute checkpointed activations only across "
               "tensor model parallel groups, with an activation-checkpoint method)")
    if granularity == "full" and not a.recompute_method:
        refuse(where, "full recomputation needs a method",
               "--recompute-granularity full needs --recompute-method uniform|block (Megatron: using "
               "recompute_granularity full, recompute_method must be block or uniform)")
    if granularity == "full" and a.recompute_num_layers is None:
        refuse(where, "full recomputation needs a layer count",
               f"--recompute-granularity full needs --recompute-num-layers (Megatron: recompute_num_layers must "
               f"be between 1 and num_layers_per_pipeline_rank, "
               f"{a.num_layers // a.pipeline_model_parallel_size})")
    selective = granularity == "selective"
    if selective and (a.recompute_method or a.recompute_num_layers is not None):
        refuse(where, "selective recomputation takes no method",
               "--recompute-method/--recompute-num-layers with selective recomputation (Megatron: recompute "
               "method is not yet supported for selective recomputing granularity)")
    if a.distribute_saved_activations and (a.tensor_model_parallel_size == 1 or granularity != "full"):
        refuse(where, "distributed activations need tp and full recomputation",
               "--distribute-saved-activations needs --tensor-model-parallel-size > 1 and --recompute-granularity "
               "full (Megatron: can distribute recomputed activations only across tensor model parallel groups, "
               "with full recompute granularity)")
    if a.distribute_saved_activations and a.sequence_parallel and a.tensor_model_parallel_size > 1:
        refuse(where, "distributed activations exclude sequence parallelism",
               "--distribute-saved-activations with --sequence-parallel (Megatron: distribute_saved_activations "
               "must be false when sequence parallel is enabled)")


def _overlap(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    if a.ddp_impl is not None and (a.overlap_grad_reduce or a.overlap_param_gather or a.tp_comm_overlap):
        refuse(where, "no overlap flags in 2021",
               "--overlap-grad-reduce, --overlap-param-gather and --tp-comm-overlap do not exist in a Megatron-LM "
               "that has --DDP-impl (2021); use --DDP-impl torch for overlapped gradients")
    sequence_parallel = a.sequence_parallel and a.tensor_model_parallel_size > 1  # Megatron turns it off at tp 1
    if a.tp_comm_overlap and not sequence_parallel:
        refuse(where, "tp overlap needs sequence parallelism",
               "--tp-comm-overlap needs --sequence-parallel (and tp > 1, where Megatron turns sequence "
               "parallelism off) (Megatron: tensor parallel communication/GEMM overlap can happen only when "
               "sequence parallelism is enabled)")
    if "--defer-embedding-wgrad-compute" in others and (a.pipeline_model_parallel_size == 1 or
                                                        a.no_gradient_accumulation_fusion):
        refuse(where, "deferred embedding gradients need pp and fusion",
               "--defer-embedding-wgrad-compute needs pipeline parallelism and gradient accumulation fusion "
               "(Megatron: cannot defer embedding wgrad compute when pipeline model parallel is not used, or "
               "when gradient accumulation fusion is not used)")
    if a.fp8_param_gather and a.fp8_format is None:
        refuse(where, "FP8 parameters need FP8",
               "--fp8-param-gather without --fp8-format (Megatron: fp8_param must be used together with fp8 mode)")
    if a.fp8_param_gather and not a.use_distributed_optimizer:
        refuse(where, "FP8 parameter gather needs the distributed optimizer",
               "--fp8-param-gather needs --use-distributed-optimizer (Megatron: --fp8-param-gather only supported "
               "with distributed optimizer, torch fsdp2, megatron fsdp, or inference mode)")
    # (dist_muon shards its own state: Megatron takes it, and it is refused below as not modelled)
    if a.overlap_param_gather and not a.use_distributed_optimizer and a.optimizer != "dist_muon":
        refuse(where, "param gather overlap needs the distributed optimizer",
               "--overlap-param-gather needs --use-distributed-optimizer (Megatron: --overlap-param-gather only "
               "supported with distributed optimizer, megatron fsdp, or dist_muon)")
    if a.overlap_param_gather and not a.overlap_grad_reduce:
        refuse(where, "param gather overlap needs grad reduce overlap",
               "--overlap-param-gather needs --overlap-grad-reduce (Megatron: must use --overlap-param-gather "
               "with --overlap-grad-reduce)")


def _experts(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    experts, ep = a.num_experts or 0, a.expert_model_parallel_size
    score = (others.get("--moe-router-score-function") or ["softmax"])[0]
    if "--moe-router-enable-expert-bias" in others and score not in ("sigmoid", "sqrtsoftplus"):
        refuse(where, "expert bias needs sigmoid scores",
               f"--moe-router-enable-expert-bias with the {score} score function (Megatron: Expert bias for aux-loss-"
               f"free routing only supports 'sigmoid' and 'sqrtsoftplus' score functions.)")
    if not experts and ep > 1:
        refuse(where, "expert parallelism needs experts",
               f"--expert-model-parallel-size {ep} without --num-experts (Megatron: num_experts must be non "
               f"None to use expert model parallelism)")
    # Megatron lays out the expert groups whether or not the model has experts
    # (initialize_model_parallel: world size divisible by etp x ep x pp)
    tp, pp = a.tensor_model_parallel_size, a.pipeline_model_parallel_size
    etp = a.expert_tensor_parallel_size or tp
    if (gpus // pp) % (etp * ep):
        refuse(where, "expert layout divides the stage",
               f"expert tensor x expert model parallel size {etp} x {ep} does not divide the {gpus // pp} GPUs of "
               f"a pipeline stage (Megatron: the expert layout etp x ep x edp must fill each stage)")
    if not experts and a.moe_ffn_hidden_size is not None and not has_dense_layers(a.moe_layer_freq):
        refuse(where, "expert width needs experts",
               f"--moe-ffn-hidden-size {a.moe_ffn_hidden_size} without --num-experts (Megatron: "
               f"moe_ffn_hidden_size is set but num_moe_experts is None. Please set num_moe_experts or remove "
               f"moe_ffn_hidden_size)")
    pattern = a.moe_layer_freq
    if experts and isinstance(pattern, tuple) and len(pattern) != a.num_layers:
        refuse(where, "moe pattern covers the layers",
               f"--moe-layer-freq: a pattern of {len(pattern)} layers for --num-layers {a.num_layers} (Megatron: "
               f"Invalid length of moe_layer_pattern: {len(pattern)}, expected {a.num_layers})")
    topk = a.moe_router_topk  # TransformerConfig checks the router's arguments with or without experts
    balancing = others.get("--moe-router-load-balancing-type") or ["aux_loss"]
    if topk == 1 and score == "softmax" and "--moe-router-pre-softmax" not in others and balancing != ["sinkhorn"]:
        refuse(where, "top-1 routing needs pre-softmax",
               "--moe-router-topk 1 with the softmax router needs --moe-router-pre-softmax (Megatron: softmax over "
               "one selected expert gives a zero gradient)")
    dispatcher = a.moe_token_dispatcher_type
    if a.moe_shared_expert_intermediate_size and "--moe-shared-expert-overlap" in others and \
            dispatcher not in ("alltoall", "flex"):
        refuse(where, "shared expert overlap needs all-to-all",
               f"--moe-shared-expert-overlap with the {dispatcher} token dispatcher (Megatron: "
               f"moe_shared_expert_overlap only works with alltoall or flex token dispatcher.)")
    if not experts:
        return
    if not a.disable_bias_linear and etp > 1 and not legacy_names(a):
        refuse(where, "expert biases need etp 1",
               f"--num-experts with biases (the default; --disable-bias-linear drops them) and expert tensor "
               f"parallelism {etp} (--expert-tensor-parallel-size, default tp) (Megatron: Bias in Moe is only "
               f"supported when ETP==1)")
    if experts % ep:
        refuse(where, "experts divisible by ep",
               f"--num-experts {experts} is not a multiple of --expert-model-parallel-size {ep} (Megatron: number "
               f"of experts should be a multiple of expert model parallel size)")
    if topk > experts:
        refuse(where, "top-k at most experts",
               f"--moe-router-topk {topk} is more than --num-experts {experts} (a token cannot go to more "
               f"experts than there are)")
    if dispatcher == "flex" and etp * ep == 1:  # (its other backends, --moe-flex-dispatcher-backend, are refused)
        refuse(where, "flex dispatcher needs tp x ep > 1",
               "--moe-token-dispatcher-type flex with expert tensor x expert model parallel size 1 x 1: its DeepEP "
               "backend spreads tokens over the experts' tp x ep ranks (Megatron, MoEFlexTokenDispatcher: DeepEP "
               "dispatcher requires TPxEP > 1); give --expert-model-parallel-size 2 or more, or --moe-token-"
               "dispatcher-type alltoall")


def _activation(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    if a.swiglu and "--squared-relu" in others:
        refuse(where, "one activation",
               "--squared-relu with --swiglu: give one activation (Megatron: if args.squared_relu: assert not "
               "args.swiglu)")


def _optimizer_copies(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    """The partial distributed optimizer (parallel_state: each copy over dp x cp / N ranks, the
    experts' over their data-parallel ranks / N)."""
    copies = a.num_distributed_optimizer_instances
    if copies == 1:
        return
    tp, pp = a.tensor_model_parallel_size, a.pipeline_model_parallel_size
    etp = a.expert_tensor_parallel_size or tp
    dp_cp, expert_dp = gpus // (tp * pp), gpus // (pp * etp * a.expert_model_parallel_size)
    if not a.use_distributed_optimizer or dp_cp % copies or expert_dp % copies:
        refuse(where, "optimizer copies divide the data-parallel ranks",
               f"--num-distributed-optimizer-instances {copies} needs --use-distributed-optimizer and a copy count "
               f"that divides the {dp_cp} data- and context-parallel ranks and the {expert_dp} expert data-parallel "
               f"ones (Megatron: Data parallel size should be divisible by partial DistOpt shard factor)")
