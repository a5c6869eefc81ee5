"""The typed job (:class:`~simpy_astra.workloads.megatron.job.MegatronJob`) that parsed
Megatron-LM arguments describe, as Megatron-LM derives it: sizes, precision, recomputation,
fusions and kernels by release; what Megatron runs and this simulator does not model is
refused here."""

from __future__ import annotations

import argparse
import math

from simpy_astra.errors import InputError
from simpy_astra.workloads.megatron import (
    pipeline_layout,
    pipeline_rules,
    rules,
)
from simpy_astra.workloads.megatron.batch_sizes import data_parallel, global_batch
from simpy_astra.workloads.megatron.job import MegatronJob, pipeline_split
from simpy_astra.workloads.megatron.modelled_arguments import GPT2_VOCAB, STATE_BYTES


def _context_parallel_exchange(a: argparse.Namespace) -> tuple[tuple[str, ...], int]:
    """(each layer's ``--cp-comm-type``, the all-to-all group's size) as Transformer Engine
    runs them: one type is every layer's (so is any list at cp 1, where none is exchanged);
    ``a2a+p2p`` with an all-to-all group of 1 is the ring alone, with a ring of 1 the
    all-to-all alone (``attn_forward_func_with_cp``)."""
    cp, given = a.context_parallel_size, tuple(a.cp_comm_type)
    kinds = given if cp > 1 and len(given) > 1 else given[:1] * a.num_layers  # lengths: rules
    if cp == 1 or "a2a+p2p" not in kinds:
        return kinds, 1
    a2a, ring = a.hierarchical_context_parallel_sizes  # two sizes (module_rules)
    alone = "p2p" if a2a == 1 else "a2a" if ring == 1 else None
    if alone is None:
        return kinds, a2a
    return tuple(alone if kind == "a2a+p2p" else kind for kind in kinds), 1


def _legacy(a: argparse.Namespace) -> bool:
    """A 2021-2022 Megatron-LM (:func:`~simpy_astra.workloads.megatron.rules.legacy_names`)."""
    return rules.legacy_names(a)


def _kernels_2021(a: argparse.Namespace) -> bool:
    """2021's layers (``6985e589``): synchronous tensor-parallel collectives, no gradient-
    accumulation fusion, the fused softmax to 2,048 keys; not a 2022 release's (``rules.names_of_2022``)."""
    return _legacy(a) and not rules.names_of_2022(a)


def _transformer_engine(a: argparse.Namespace) -> bool:
    """Transformer Engine layers: today's Megatron-LM default (``--transformer-impl
    transformer_engine`` since Megatron-Core 0.5), absent from a 2021 one."""
    if a.transformer_impl is not None:
        return a.transformer_impl == "transformer_engine"
    return not _legacy(a)


def _fused_attention(a: argparse.Namespace) -> bool:
    """FlashAttention (``--use-flash-attn``), or Transformer Engine's attention, which picks
    a fused kernel unless told to run the unfused one. ``--attention-backend`` chooses among
    Transformer Engine's kernels only (``LanguageModule`` sets ``NVTE_FLASH_ATTN``,
    ``NVTE_FUSED_ATTN``, ``NVTE_UNFUSED_ATTN``): Megatron's own layers ignore it (notes)."""
    te = _transformer_engine(a)
    if a.attention_backend is not None and te:
        return a.attention_backend in ("flash", "fused", "auto")
    return a.use_flash_attn or te


def job_from_args(a: argparse.Namespace, gpus: int, where: str, text: str) -> MegatronJob:
    """The job of arguments that passed :func:`~simpy_astra.workloads.megatron.rules.check`;
    refuses what Megatron runs and this simulator does not model."""
    tp, pp, cp = a.tensor_model_parallel_size, a.pipeline_model_parallel_size, a.context_parallel_size
    dp = data_parallel(a, gpus)
    h, heads = a.hidden_size, a.num_attention_heads
    head_dim = a.kv_channels or h // heads
    kv_heads = rules.query_groups(a) or heads
    ffn = _ffn_hidden(a, where)
    vocab = a.vocab_size or GPT2_VOCAB
    multiple = a.make_vocab_size_divisible_by * tp
    vocab = math.ceil(vocab / multiple) * multiple
    virtual = pipeline_rules.virtual_stages(a)
    if a.pipeline_model_parallel_layout is not None:
        split = tuple(c.count("t") for c in pipeline_layout.chunks(a.pipeline_model_parallel_layout))
    else:
        split = pipeline_split(a.num_layers, pp, virtual, a.decoder_first_pipeline_num_layers,
                               a.decoder_last_pipeline_num_layers, a.account_for_embedding_in_pipeline_split,
                               a.account_for_loss_in_pipeline_split)
    precision = "fp16" if a.fp16 else "bf16" if a.bf16 else "fp32"
    if a.checkpoint_activations:
        recompute, method, layers = "full", "uniform", a.checkpoint_num_layers
    elif a.activations_checkpoint_method:
        recompute, method, layers = "full", a.activations_checkpoint_method, a.activations_checkpoint_num_layers
    elif a.recompute_activations:  # Megatron sets the granularity selective, whatever it was
        recompute, method, layers = "selective", "uniform", 1
    elif a.recompute_granularity:
        recompute = a.recompute_granularity
        method, layers = a.recompute_method or "uniform", a.recompute_num_layers or 1
    else:
        recompute, method, layers = "none", "uniform", 0
    legacy, te = _legacy(a), _transformer_engine(a)
    rules.check_layers(cp, te, _fused_attention(a), where,
                       "rope" if a.use_rotary_position_embeddings else a.position_embedding_type)
    rules.check_widths(a, ffn, where)
    rules.check_sequence_split(a, where)
    # query-key layer scaling: on by default until Megatron-Core made it opt-in (2023), and it
    # puts the softmax in fp32; Transformer Engine scales fp16 scores only, and its unfused
    # softmax is always in fp32
    qk_scaling = a.apply_query_key_layer_scaling or (legacy and not a.no_query_key_layer_scaling)
    qk_scaling = qk_scaling and (a.fp16 or not te)
    cp_comm, cp_a2a = _context_parallel_exchange(a)
    if a.fp8_recipe not in ("delayed", "tensorwise") and a.fp8_format is not None:  # else never read (notes)
        raise InputError(f"{where}: --fp8-recipe {a.fp8_recipe}: only delayed and tensorwise (per-tensor "
                         f"current) scaling are modelled")
    if a.optimizer not in ("adam", "sgd"):
        raise InputError(f"{where}: --optimizer {a.optimizer}: only adam and sgd are modelled")
    experts = a.num_experts or 0
    ep = a.expert_model_parallel_size
    etp = a.expert_tensor_parallel_size or tp
    if experts and dp % ep:
        raise InputError(f"{where}: --expert-model-parallel-size {ep}: experts spread over ranks other than the "
                         f"data-parallel ones (dp {dp}) are not modelled; use an ep that divides dp")
    if experts and etp not in (1, tp):
        raise InputError(f"{where}: --expert-tensor-parallel-size {etp}: only 1 or tp ({tp}) is modelled")
    if a.use_tp_pp_dp_mapping and pp > 1 and (etp * (ep if experts else 1) != tp * cp or (experts and ep > 1)):
        if etp * (ep if experts else 1) != tp * cp:  # Megatron's own check (parallel_state.py)
            raise InputError(f"{where}: --use-tp-pp-dp-mapping with --pipeline-model-parallel-size {pp}: Megatron "
                             f"needs the experts' data-parallel size equal to the layers' (expert tp x ep = tp x cp; "
                             f"here {etp} x {ep if experts else 1} and {tp} x {cp}: 'When not using pp-last rank "
                             f"ordering, the data parallel size of the attention and moe layers must be the same'); "
                             f"leave the flag out")
        raise InputError(f"{where}: --use-tp-pp-dp-mapping with --expert-model-parallel-size {ep} and a pipeline: "
                         f"expert groups in that order are not modelled; leave the flag out")
    return MegatronJob(
        experts=experts, ep=ep if experts else 1, etp=etp if experts else tp, topk=a.moe_router_topk,
        moe_alltoall=a.moe_token_dispatcher_type != "allgather", moe_grouped_gemm=a.moe_grouped_gemm,
        moe_ffn=a.moe_ffn_hidden_size or ffn, shared_ffn=a.moe_shared_expert_intermediate_size or 0,
        moe_every=a.moe_layer_freq if isinstance(a.moe_layer_freq, int) else 1,
        moe_pattern=a.moe_layer_freq if isinstance(a.moe_layer_freq, tuple) else (),
        gpus=gpus, num_layers=a.num_layers, hidden=h, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
        ffn_hidden=ffn, swiglu=a.swiglu, seq=a.seq_length, vocab=vocab,
        tied_embeddings=not a.untie_embeddings_and_output_weights, micro_batch=a.micro_batch_size,
        global_batch=global_batch(a, gpus), tp=tp, pp=pp, cp=cp, dp=dp, virtual_stages=virtual, layer_split=split,
        precision=precision, fp8=a.fp8_format is not None and te, fp8_requested=a.fp8_format is not None,
        fp8_current_scaling=a.fp8_format is not None and te and a.fp8_recipe == "tensorwise",
        recompute=recompute, recompute_method=method,
        recompute_layers=layers, sequence_parallel=a.sequence_parallel and tp > 1,
        distributed_optimizer=a.use_distributed_optimizer, optimizer_instances=a.num_distributed_optimizer_instances,
        # Megatron accumulates bf16 gradients in fp32 only while --main-grads-dtype is fp32
        grads_in_bf16=(a.grad_reduce_in_bf16 or a.main_grads_dtype == "bf16") and precision == "bf16",
        grads_in_fp32=a.accumulate_allreduce_grads_in_fp32 and precision == "fp16",
        fp8_param_gather=a.fp8_param_gather and te,
        ddp_bucket_params=(a.ddp_bucket_size or 0) if a.overlap_grad_reduce else 0,  # else one bucket (notes)
        distribute_saved_activations=(a.distribute_saved_activations or a.distribute_checkpointed_activations)
        and tp > 1 and recompute == "full",
        ddp=a.ddp_impl or "local", overlap_grad_reduce=a.overlap_grad_reduce or a.ddp_impl == "torch",
        overlap_param_gather=a.overlap_param_gather, tp_comm_overlap=a.tp_comm_overlap and tp > 1 and te,
        async_tp_allreduce=not _kernels_2021(a) and not a.no_async_tensor_model_parallel_allreduce,
        # 2022's only into fp32 main gradients (arguments.py at d898a8991d; fp16's from 2022-09)
        gradient_accumulation_fusion=not _kernels_2021(a) and not a.no_gradient_accumulation_fusion
        and (not legacy or precision != "fp16" or a.accumulate_allreduce_grads_in_fp32),
        flash_attention=_fused_attention(a), transformer_engine=te, attention_backend=(a.attention_backend or "auto") if te else "auto",
        cp_comm_types=cp_comm, cp_a2a=cp_a2a, masked_softmax_fusion=not a.no_masked_softmax_fusion,
        bias_gelu_fusion=not (a.no_bias_swiglu_fusion if a.swiglu else a.no_bias_gelu_fusion), bias_dropout_fusion=not a.no_bias_dropout_fusion,
        scatter_gather=not a.no_scatter_gather_tensors_in_pipeline, legacy=legacy, kernels_2021=_kernels_2021(a),
        args=text,
        overlap_p2p_comm=virtual > 1 and not legacy and not a.no_overlap_p2p_communication,
        pp_before_dp=a.use_tp_pp_dp_mapping and pp > 1,
        bias_linear=not a.disable_bias_linear, cross_entropy_fusion=a.cross_entropy_loss_fusion,
        query_key_layer_scaling=qk_scaling, softmax_in_fp32=te or qk_scaling or a.attention_softmax_in_fp32,
        attention_dropout=a.attention_dropout, hidden_dropout=a.hidden_dropout,
        position_embeddings=_position_rows(a),
        rope=("fused" if _rope_fusion(a) else "unfused") if _rotary(a) else "", qk_layernorm=a.qk_layernorm,
        norm_params_per_channel=1 if a.normalization == "RMSNorm" else 2,
        moment_bytes=_moment_bytes(a), master_bytes=_master_bytes(a, precision),
        grad_norm=a.clip_grad > 0,
        grad_buffer_zeroed=not legacy and dp * cp > 1,
        # Megatron's validate_args turns the check off for fp16's dynamic loss scale
        grad_nan_check=not legacy and dp * cp > 1 and not a.no_check_for_nan_in_loss_and_grad
        and not (a.fp16 and not a.loss_scale),
        loss_nan_check=not legacy and not a.no_check_for_nan_in_loss_and_grad and not (a.fp16 and not a.loss_scale),
        grad_scaling=not legacy and dp * cp > 1 and not (a.ddp_average_in_collective or a.calculate_per_token_loss),
        align_grad_reduce=not a.no_align_grad_reduce,
        # Megatron's optimizer unscales and checks the gradients only with a grad scaler: fp16's
        # dynamic one, or --loss-scale's constant one (with bf16, fp16 or the distributed optimizer)
        gradient_check=a.fp16 or (bool(a.loss_scale) and (a.bf16 or a.use_distributed_optimizer)),
    )


def _moment_bytes(a: argparse.Namespace) -> tuple[int, ...]:
    """Bytes a parameter of each optimizer state (``megatron/core/optimizer/__init__.py``): Adam's
    two moments in their dtypes, SGD's momentum buffer in fp32 (none without momentum)."""
    if a.optimizer == "adam":
        return STATE_BYTES[a.exp_avg_dtype], STATE_BYTES[a.exp_avg_sq_dtype]
    return (4,) if a.sgd_momentum else ()


def _master_bytes(a: argparse.Namespace, precision: str) -> int:
    """Bytes a parameter of the master copy: fp32, or with the precision-aware optimizer fp16
    (``--main-params-dtype``) or, for bf16 weights whose master Transformer Engine's FusedAdam
    keeps (not FP8 past delayed scaling), the 16-bit remainder (``store_param_remainders``)."""
    if not a.use_precision_aware_optimizer:
        return 4
    if a.main_params_dtype == "fp16":
        return 2
    te_master = a.fp8_format is None or a.fp8_recipe == "delayed"
    return 2 if precision == "bf16" and te_master else 4


def _ffn_hidden(a: argparse.Namespace, where: str) -> int:
    """The MLP's width: ``--ffn-hidden-size``, else Megatron's default, 4h, or with
    ``--swiglu`` 8h/3 cut down to a multiple of 64 (arguments.py: ``int((4 * args.hidden_size
    * 2 / 3) / 64) * 64``), which is 0 under a width of 24."""
    if a.ffn_hidden_size:
        return a.ffn_hidden_size
    if not a.swiglu:
        return 4 * a.hidden_size
    ffn = int((4 * a.hidden_size * 2 / 3) / 64) * 64
    if ffn == 0:
        raise InputError(f"{where}: --swiglu with --hidden-size {a.hidden_size} gives Megatron's default MLP width "
                         f"int(8h/3 / 64) x 64 = 0; give --ffn-hidden-size")
    return ffn


def _rotary(a: argparse.Namespace) -> bool:
    """Rotary embeddings rotate the queries and keys of every layer (rope, and YaRN's and
    multimodal rope's variants of it)."""
    return a.use_rotary_position_embeddings or a.position_embedding_type in ("rope", "yarn", "mrope")


def _rope_fusion(a: argparse.Namespace) -> bool:
    """The rotary embedding runs as one fused kernel each way: Megatron fuses plain rope only
    (``validate_args``: ``if args.position_embedding_type != 'rope': args.apply_rope_fusion =
    False``), so YaRN and multimodal rope run PyTorch's separate kernels, ``--no-rope-fusion`` or not."""
    return not a.no_rope_fusion and (a.use_rotary_position_embeddings or a.position_embedding_type == "rope")


def _position_rows(a: argparse.Namespace) -> int:
    """Rows of the learned position-embedding table (``LanguageModelEmbedding``: one per
    position up to ``--max-position-embeddings``), none with rotary or no position embeddings."""
    if a.use_rotary_position_embeddings or a.no_position_embedding or a.position_embedding_type != "learned_absolute":
        return 0
    return a.max_position_embeddings or a.seq_length
