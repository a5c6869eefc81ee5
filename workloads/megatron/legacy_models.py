"""``--use-legacy-models``: the GPT model from before Megatron-Core (``megatron/legacy/model``,
Megatron-LM 2024-05 ``9ad1a56f82`` to 2026-05 ``39ec5ebeb4``), as ``gpt_builder`` builds it.

Its ``ParallelTransformer`` builds each layer by ``--transformer-impl``: with ``local``,
Megatron's own ``ParallelTransformerLayer`` (the kernels of the era table's
``--transformer-impl local`` column: separate layer norms, unfused attention unless
``--use-flash-attn``, the fused bias-GeLU and bias-dropout-add); with the default
``transformer_engine``, Transformer Engine's ``TransformerLayer`` (the Transformer Engine
column). So the flag keeps the layers' pricing and changes what the model takes: what only
Megatron-Core's model has is refused, as ``validate_args`` and the layers refuse it, and what
the legacy layers never read is run without, with a warning.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from simpy_astra.errors import InputError, refuse
from simpy_astra.workloads.megatron.job import MegatronJob

FLAG = "--use-legacy-models"


def check(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    """Refuse what every Megatron-LM with ``--use-legacy-models`` refuses of ``a``."""
    if not a.use_legacy_models:
        return
    if a.overlap_param_gather:
        refuse(where, "legacy models take no parameter-gather overlap",
               f"{FLAG} with --overlap-param-gather (Megatron: --overlap-param-gather only supported "
               "with MCore models); remove one of them")
    if a.context_parallel_size > 1:
        refuse(where, "legacy models take no context parallelism",
               f"{FLAG} with --context-parallel-size {a.context_parallel_size} (Megatron: Context "
               f"parallelism is not supported in legacy models.); remove {FLAG}, or set cp 1")
    for flag, why in (("--rotary-interleaved", "--rotary-interleaved is not supported in legacy models."),
                      ("--decoupled-lr", "--decoupled-lr and --decoupled-min-lr is not supported in legacy models."),
                      ("--decoupled-min-lr", "--decoupled-lr and --decoupled-min-lr is not supported in legacy "
                                             "models.")):
        if flag in others:
            refuse(where, "legacy models take only their own arguments",
                   f"{FLAG} with {flag} (Megatron: {why}); remove one of them")
    _checkpoint_format(others, where)
    te = a.transformer_impl != "local"
    if te and not (a.attention_softmax_in_fp32 or a.apply_query_key_layer_scaling):
        refuse(where, "legacy Transformer Engine layers need an fp32 softmax",
               f"{FLAG} with Transformer Engine's layers (--transformer-impl transformer_engine, the default) "
               f"and the softmax in 16 bits (Megatron, ParallelTransformer: TransformerEngine only supports "
               f"softmax compute in FP32.); add --attention-softmax-in-fp32, or --transformer-impl local")
    if te and a.apply_query_key_layer_scaling and not a.fp16:
        refuse(where, "legacy Transformer Engine layers need an fp32 softmax",
               f"{FLAG} with Transformer Engine's layers and --apply-query-key-layer-scaling outside fp16 "
               f"(Megatron, ParallelTransformer: If --apply-query-key-layer-scaling is provided, set env-var "
               f"NVTE_APPLY_QK_LAYER_SCALING=1 and you must be using fp16.); use --attention-softmax-in-fp32")
    if a.num_experts:
        raise InputError(f"{where}: {FLAG} with --num-experts {a.num_experts}: the legacy model's experts "
                         f"(SwitchMLP, sinkhorn top-1 routing; none at all in Transformer Engine's layers) are "
                         f"not modelled; remove {FLAG}")


def _checkpoint_format(others: dict, where: str) -> None:
    """``validate_args``: ``assert args.ckpt_format == "torch"`` beside the flag (2025-01 on; from
    2024-08 ``--use-dist-ckpt is not supported in legacy models``, which the default
    ``torch_dist`` format sets, as ``--use-dist-ckpt`` did before). A release of 2024-05 to 07
    has no ``--ckpt-format``: its line runs here with ``--ckpt-format torch`` added."""
    fmt = (others.get("--ckpt-format") or ["torch_dist (the default)"])[-1]
    if fmt != "torch":
        refuse(where, "legacy models save torch checkpoints",
               f"{FLAG} with --ckpt-format {fmt} (Megatron: legacy model format only supports the 'torch' "
               f"checkpoint format.); add --ckpt-format torch")


def priced(job: MegatronJob, a: argparse.Namespace, where: str) -> MegatronJob:
    """``job`` as the legacy layers run it, with a warning for each argument they do not read:
    ``ParallelAttention`` has no query-key layer norm (nor Transformer Engine's layer as built);
    Transformer Engine's ``TransformerLayer`` is built without query groups or userbuffers; and
    ``ParallelMLP`` runs SwiGLU as PyTorch's ``silu(x1) * x2``, never fused."""
    if not a.use_legacy_models:
        return job
    notes = []
    if job.qk_layernorm:
        job = replace(job, qk_layernorm=False)
        notes.append(f"{where}: --qk-layernorm changes nothing with {FLAG}: the legacy layers have no query-key "
                     f"layer norm, so the step runs without, as Megatron does; remove one of them")
    if job.transformer_engine and job.kv_heads != job.heads:
        job = replace(job, kv_heads=job.heads)
        notes.append(f"{where}: --group-query-attention changes nothing with {FLAG} and Transformer Engine's "
                     f"layers: ParallelTransformer builds TransformerLayer without num_gqa_groups, so every head "
                     f"keeps its keys and values, as this step does; add --transformer-impl local for the groups")
    if job.transformer_engine and job.tp_comm_overlap:
        job = replace(job, tp_comm_overlap=False)
        notes.append(f"{where}: --tp-comm-overlap changes nothing with {FLAG}: ParallelTransformer builds "
                     f"TransformerLayer without userbuffers, so it runs without, as Megatron does; remove one")
    if job.swiglu and job.bias_gelu_fusion and not job.transformer_engine:
        job = replace(job, bias_gelu_fusion=False)
        notes.append(f"{where}: --swiglu with {FLAG} and --transformer-impl local runs unfused (ParallelMLP: "
                     f"silu(x1) * x2, no bias-SwiGLU fusion), as this step does; remove {FLAG} for the fused kernel")
    return replace(job, warnings=(*job.warnings, *notes))
