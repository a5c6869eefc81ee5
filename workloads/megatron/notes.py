"""What Megatron-LM runs on, of a command line it takes, that the step's figures alone would
not tell: one warning line each, naming the argument and the fix.

Megatron's own warnings (``validate_args``: sequence parallelism at tp 1 turned off), what it
changes in silence (``--recompute-activations`` makes a full granularity selective), and
arguments it takes in silence that change nothing in the step timed here: hierarchical
context-parallel sizes beside a ``--cp-comm-type`` without ``a2a+p2p``, ``--overlap-p2p-communication``
on plain 1F1B, ``--fp8-format``,
``--attention-backend`` and ``--tp-comm-overlap`` on Megatron's own layers (only Transformer Engine's read them), a bucket
size or ``--no-align-grad-reduce`` without overlapped gradients, an FP8 recipe without FP8, one activation's or position
type's fusion switch beside another (:data:`_UNREAD`), and a batch-size ramp, whose steps before its end are smaller than the one timed. A study that sweeps
such an argument should not read a flat line as a finding.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable

from simpy_astra.workloads.megatron.batch_sizes import global_batch
from simpy_astra.workloads.megatron.pipeline_rules import virtual_stages

#: arguments Megatron reads only beside another, taken in silence without it: (the arguments,
#: when they are not read, why, the fix)
_UNREAD: tuple[tuple[tuple[str, ...], Callable[[argparse.Namespace], bool], str, str], ...] = (
    (("--num-query-groups",), lambda a: not a.group_query_attention,
     "without --group-query-attention: Megatron keeps a key/value head per query head "
     "(core_transformer_config_from_args reads the groups only with it)", "add --group-query-attention"),
    (("--moe-router-topk", "--moe-token-dispatcher-type", "--moe-grouped-gemm", "--moe-layer-freq",
      "--moe-shared-expert-intermediate-size", "--expert-tensor-parallel-size"), lambda a: not a.num_experts,
     "without --num-experts: the model is dense, and only a mixture of experts reads it", "give --num-experts N"),
    (("--recompute-method", "--recompute-num-layers"), lambda a: not a.recompute_granularity,
     "without --recompute-granularity: nothing is recomputed (Megatron reads the method and the layers only "
     "with a granularity)", "add --recompute-granularity full"),
    (("--checkpoint-num-layers",), lambda a: not a.checkpoint_activations,
     "without --checkpoint-activations: nothing is recomputed", "add --checkpoint-activations"),
    (("--activations-checkpoint-num-layers",), lambda a: not a.activations_checkpoint_method,
     "without --activations-checkpoint-method: nothing is recomputed", "add --activations-checkpoint-method"),
    (("--sgd-momentum",), lambda a: a.optimizer != "sgd", "with --optimizer adam: only SGD keeps a momentum",
     "give --optimizer sgd"),
    (("--cp-comm-type",), lambda a: a.context_parallel_size == 1,
     "at --context-parallel-size 1: attention exchanges nothing", "set --context-parallel-size 2 or more"),
    (("--ddp-bucket-size",), lambda a: not a.overlap_grad_reduce,
     "without --overlap-grad-reduce: Megatron syncs the gradients as one bucket after the backward "
     "(DistributedDataParallel: bucket_size = None when overlap_grad_reduce is off)", "add --overlap-grad-reduce"),
    (("--no-rope-fusion",), lambda a: not (a.use_rotary_position_embeddings or a.position_embedding_type == "rope"),
     "without --position-embedding-type rope: Megatron fuses only plain rope and turns the fusion off for every "
     "other type (validate_args: apply_rope_fusion = False)", "give --position-embedding-type rope"),
    (("--fp8-recipe",), lambda a: a.fp8_format is None,
     "without --fp8-format: only FP8 layers are scaled by a recipe", "add --fp8-format hybrid"),
    (("--no-bias-swiglu-fusion",), lambda a: not a.swiglu,
     "without --swiglu: the MLP's GeLU is fused by --no-bias-gelu-fusion's setting", "give --swiglu"),
    (("--no-bias-gelu-fusion",), lambda a: a.swiglu,
     "with --swiglu: Megatron fuses SwiGLU's bias by --no-bias-swiglu-fusion's setting "
     "(core_transformer_config_from_args)", "give --no-bias-swiglu-fusion"),
    (("--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"),
     lambda a: a.pipeline_model_parallel_size == 1,
     "at --pipeline-model-parallel-size 1: one stage holds every layer, the embedding and the loss",
     "set --pipeline-model-parallel-size 2 or more"),
    (("--use-tp-pp-dp-mapping",), lambda a: a.pipeline_model_parallel_size == 1,
     "at --pipeline-model-parallel-size 1: without pp, tp-cp-ep-pp-dp and tp-cp-ep-dp-pp order the ranks alike",
     "set --pipeline-model-parallel-size 2 or more"),
    (("--accumulate-allreduce-grads-in-fp32",), lambda a: not a.fp16,
     "without --fp16: Megatron accumulates and reduces bf16's (and fp32's) gradients in fp32 already", "it is for "
     "--fp16"),
    (("--no-align-grad-reduce", "--disable-align-grad-reduce", "--no-delay-grad-reduce"),
     lambda a: a.pipeline_model_parallel_size == 1 or not a.overlap_grad_reduce,
     "without a pipeline or --overlap-grad-reduce: it only moves a later stage's overlapped gradient sync "
     "(training.py sets grad_sync_func only with overlap_grad_reduce)",
     "add --overlap-grad-reduce --pipeline-model-parallel-size 2"),
    (("--overlap-p2p-communication", "--no-overlap-p2p-communication"), lambda a: virtual_stages(a) == 1,
     "without the interleaved schedule: Megatron overlaps pipeline sends only in interleaved 1F1B and turns "
     "overlap_p2p_comm off otherwise (non-interleaved schedule does not support overlapping p2p communication)",
     "add --num-layers-per-virtual-pipeline-stage N"),
)


def changed(actions: Iterable[argparse.Action], words: list[str], a: argparse.Namespace) -> frozenset[str]:
    """The flags among ``words`` (the modelled ones of a command line, read by ``actions``) set
    to other than their default: a launch script that spells a default out
    (``--cp-comm-type p2p``) is not warned."""
    by_flag = {flag: action for action in actions for flag in action.option_strings}
    flags = (word.partition("=")[0] for word in words if word.startswith("--"))
    return frozenset(f for f in flags if f in by_flag and getattr(a, by_flag[f].dest) != by_flag[f].default)


def notes(a: argparse.Namespace, gpus: int, others: dict[str, list[str]], where: str, te: bool,
          given: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The warnings of arguments ``a`` (and the unmodelled ``others``) that passed the rules,
    on ``gpus`` GPUs; ``te``: the layers are Transformer Engine's; ``given``: the modelled flags
    the command line names (its defaults aside)."""
    out = []
    for flags, unread, why, fix in _UNREAD:
        named = [flag for flag in flags if flag in given]
        if named and unread(a):
            them = "them" if len(named) > 1 else "it"
            out.append(f"{where}: {' and '.join(named)} change{'' if len(named) > 1 else 's'} nothing {why}, as in "
                       f"Megatron-LM; {fix}, or remove {them}")
    if a.num_experts and isinstance(a.moe_layer_freq, tuple) and not any(a.moe_layer_freq):
        out.append(f"{where}: --num-experts {a.num_experts} changes nothing: --moe-layer-freq's pattern puts experts in "
                   f"no layer (all 0s), so every layer keeps its dense MLP, as in Megatron-LM; put a 1 where a layer "
                   f"has experts, or remove --num-experts")
    if a.sequence_parallel and a.tensor_model_parallel_size == 1:
        out.append(f"{where}: --sequence-parallel with --tensor-model-parallel-size 1: Megatron turns it off "
                   f"('Disabling sequence parallelism because tensor model parallelism is disabled') and runs "
                   f"without it, as this step does; remove --sequence-parallel, or set tp 2 or more")
    if a.recompute_activations and a.recompute_granularity == "full":
        out.append(f"{where}: --recompute-granularity full with --recompute-activations: Megatron makes it selective "
                   f"('if args.recompute_activations: args.recompute_granularity = 'selective'') and "
                   f"recomputes only the attention core, as this step does; remove --recompute-activations for "
                   f"full recomputation")
    if a.hierarchical_context_parallel_sizes and "a2a+p2p" not in a.cp_comm_type:
        out.append(f"{where}: --hierarchical-context-parallel-sizes changes nothing with --cp-comm-type "
                   f"{' '.join(a.cp_comm_type)}: only a2a+p2p layers use the two levels; give --cp-comm-type "
                   f"a2a+p2p, or remove the sizes")
    if not te and a.fp8_format is not None:
        out.append(f"{where}: --fp8-format {a.fp8_format} changes nothing with Megatron's own layers (--transformer-impl "
                   f"local): Transformer Engine's fp8_autocast casts only its own modules, so the step runs in "
                   f"{'fp16' if a.fp16 else 'bf16' if a.bf16 else 'fp32'}, as Megatron runs it; use --transformer-impl "
                   f"transformer_engine for FP8 layers, or remove --fp8-format")
    if not te and a.attention_backend in ("flash", "fused", "auto"):
        out.append(f"{where}: --attention-backend {a.attention_backend} changes nothing with Megatron's own layers "
                   f"(--transformer-impl local): it picks among Transformer Engine's attention kernels (the "
                   f"NVTE_*_ATTN variables), and Megatron's own attention runs unfused, as this step does; use "
                   f"--transformer-impl transformer_engine for fused attention, or remove --attention-backend")
    if not te and a.tp_comm_overlap and a.tensor_model_parallel_size > 1:
        out.append(f"{where}: --tp-comm-overlap changes nothing with Megatron's own layers (--transformer-impl "
                   f"local): only Transformer Engine's layers overlap their tensor-parallel communication (its "
                   f"userbuffers), so it runs without, as Megatron does; use --transformer-impl transformer_engine, "
                   f"or remove --tp-comm-overlap")
    if others.get("--rampup-batch-size"):  # three integers (housekeeping_rules)
        start, _, samples = (int(x) for x in others["--rampup-batch-size"])
        out.append(f"{where}: --rampup-batch-size: the step simulated is one past the ramp, at --global-batch-size "
                   f"{global_batch(a, gpus)}; the first {samples:,} samples run in smaller batches (from {start}), "
                   f"which take less time a step")
    return tuple(out)
