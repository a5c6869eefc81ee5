"""Megatron-LM's checks that live outside ``validate_args``: in the modules a job builds.

:mod:`~simpy_astra.workloads.megatron.rules` restates ``validate_args`` and the config
classes' ``__post_init__``; these are the rest of what stops today's Megatron-LM before or at
its first step, on arguments this simulator reads (each family names the Megatron module and
function whose check it restates), raised with Megatron's reason as
:class:`InvalidConfigurationError`. As in ``rules``, a command line with 2021's names
(``rules.legacy_names``) is not refused by a rule of a later Megatron-LM.
"""

from __future__ import annotations

import argparse
import math

from simpy_astra.errors import refuse
from simpy_astra.workloads.megatron import housekeeping_rules
from simpy_astra.workloads.megatron.housekeeping_rules import given
from simpy_astra.workloads.megatron.rules import legacy_names, query_groups
from simpy_astra.workloads.megatron.unmodelled_flags import number


def check(a: argparse.Namespace, gpus: int, others: dict[str, list[str]], where: str) -> None:
    """Refuse what Megatron-LM's modules refuse of ``a`` (the parsed arguments) on ``gpus``
    GPUs, then what ``validate_args`` refuses of the arguments that cannot change a step's time
    (:mod:`housekeeping_rules`); ``others`` are the unmodelled flags given, with their values."""
    for family in (_moe_layer, _experts_biases, _router_losses, _fused_activation, _deferred_wgrad,
                   _hierarchical_context_parallel, _gradient_scaling):
        family(a, others, where)
    housekeeping_rules.check(a, gpus, others, where)


def _has_moe_layer(a: argparse.Namespace) -> bool:
    """Some layer is a mixture of experts: an integer ``--moe-layer-freq`` N makes layer 0 one
    (``i % N == 0``); a pattern needs a 1."""
    freq = a.moe_layer_freq
    return bool(a.num_experts) and (any(freq) if isinstance(freq, tuple) else True)


def _moe_layer(a: argparse.Namespace, others: dict, where: str) -> None:
    """``MoELayer.forward`` (``moe/moe_layer.py``; ``validate_args`` before 2024-05)."""
    tp = a.tensor_model_parallel_size
    if _has_moe_layer(a) and tp > 1 and not a.sequence_parallel and not legacy_names(a):
        refuse(where, "MoE with tp needs sequence parallelism",
               f"--num-experts with --tensor-model-parallel-size {tp} needs --sequence-parallel (Megatron, "
               f"MoELayer.forward in training: During training, performance may degrade if MoE and tensor "
               f"parallelism are enabled without also enabling sequence parallelism.)")


def _experts_biases(a: argparse.Namespace, others: dict, where: str) -> None:
    """Which experts take biases (``moe/shared_experts.py`` ``SharedExpertMLP.__init__``,
    ``moe/experts.py`` ``TEGroupedMLP.__init__``)."""
    if not _has_moe_layer(a) or a.disable_bias_linear or legacy_names(a):  # experts are built in MoE layers
        return
    if a.moe_shared_expert_intermediate_size:
        refuse(where, "shared experts take no biases",
               "--moe-shared-expert-intermediate-size with biases (the default) (Megatron, SharedExpertMLP: bias "
               "is not supported in the shared experts, please set '--disable-bias-linear' instead.)")
    # Transformer Engine's grouped experts, under today's default layers (Megatron's own,
    # --transformer-impl local, run a SequentialMLP); the legacy GroupedMLP took no biases at all
    if a.moe_grouped_gemm and "--moe-use-legacy-grouped-gemm" in others:
        refuse(where, "grouped experts' biases without bias-dropout fusion",
               "--moe-grouped-gemm --moe-use-legacy-grouped-gemm with biases (the default) (Megatron, GroupedMLP: "
               "bias not supported in Grouped GEMM yet, please set '--disable-bias-linear' instead.)")
    if a.moe_grouped_gemm and a.transformer_impl != "local" and not a.no_bias_dropout_fusion:
        refuse(where, "grouped experts' biases without bias-dropout fusion",
               "--moe-grouped-gemm with biases (the default) and bias-dropout fusion (the default) (Megatron, "
               "TEGroupedMLP: bias_dropout_fusion is not supported in TEGroupedMLP when add_bias_linear=True); "
               "add --disable-bias-linear or --no-bias-dropout-fusion")


def _router_losses(a: argparse.Namespace, others: dict, where: str) -> None:
    """``--moe-router-load-balancing-type`` and ``--moe-aux-loss-coeff``, one value or a list
    each (``validate_args`` reads a list of one as its value): ``TransformerConfig.__post_init__``
    and ``TopKRouter.sinkhorn_load_balancing`` (``moe/router.py``)."""
    kinds = others.get("--moe-router-load-balancing-type") or ["aux_loss"]
    coeffs = others.get("--moe-aux-loss-coeff") or ["0.0"]
    values = [number(text, "--moe-aux-loss-coeff", float, where) for text in coeffs]
    if len(kinds) > 1 and len(coeffs) != len(kinds):
        refuse(where, "one aux-loss coefficient a balancing type",
               f"--moe-router-load-balancing-type names {len(kinds)} types and --moe-aux-loss-coeff gives "
               f"{len(coeffs)} value(s) (Megatron: moe_aux_loss_coeff must be a list of the same length as "
               f"moe_router_load_balancing_type); give --moe-aux-loss-coeff one value for each type")
    if _has_moe_layer(a) and kinds == ["sinkhorn"] and len(values) == 1 and values[0] != 0:
        refuse(where, "sinkhorn routing takes no aux loss",
               f"--moe-router-load-balancing-type sinkhorn with --moe-aux-loss-coeff {coeffs[0]} (Megatron, the "
               f"router: Sinkhorn routing does not support aux loss.); give --moe-aux-loss-coeff 0")


def _fused_activation(a: argparse.Namespace, others: dict, where: str) -> None:
    """The bias-activation fusion's activations (``TransformerConfig.__post_init__``): it is
    on by default (``--no-bias-gelu-fusion`` turns it off, and so does ``validate_args`` when
    the linear layers have no bias) and fuses GeLU, SwiGLU or quick GeGLU only."""
    if "--squared-relu" in others and not a.no_bias_gelu_fusion and not a.disable_bias_linear:
        refuse(where, "squared ReLU without the bias-GeLU fusion",
               "--squared-relu with the bias-activation fusion (on by default with biases) (Megatron, "
               "TransformerConfig: When bias_activation_fusion is True, activation function should be either "
               "gelu, swiglu, or quick_geglu); add --no-bias-gelu-fusion or --disable-bias-linear")


def _deferred_wgrad(a: argparse.Namespace, others: dict, where: str) -> None:
    """``ModelParallelConfig.__post_init__`` (``model_parallel_config.py``); its other checks on
    ``--defer-embedding-wgrad-compute`` are in ``rules``."""
    limit = given(others, "--wgrad-deferral-limit", int, where) or 0
    if "--defer-embedding-wgrad-compute" in others and limit < 0:
        refuse(where, "deferral limit at least 0",
               f"--wgrad-deferral-limit {limit} with --defer-embedding-wgrad-compute (Megatron, ModelParallelConfig: "
               f"Wgrad deferral limit should be greater than or equal to 0 when it is enabled!); give 0 or more")


def _hierarchical_context_parallel(a: argparse.Namespace, others: dict, where: str) -> None:
    """``--hierarchical-context-parallel-sizes``: ``validate_args``' two checks, then what
    Transformer Engine's ``a2a+p2p`` attention needs (``attn_forward_func_with_cp``: two
    groups; ``flash_attn_a2a_communicate`` splits each rank's heads over the all-to-all group)."""
    sizes, cp = a.hierarchical_context_parallel_sizes, a.context_parallel_size
    if sizes and math.prod(sizes) != cp:
        refuse(where, "hierarchical cp sizes multiply to cp",
               f"--hierarchical-context-parallel-sizes {' '.join(map(str, sizes))} multiply to {math.prod(sizes)}, "
               f"not --context-parallel-size {cp} (Megatron: assert args.context_parallel_size == "
               f"prod(args.hierarchical_context_parallel_sizes))")
    if "a2a+p2p" not in a.cp_comm_type:
        return
    if not sizes:
        refuse(where, "a2a+p2p needs hierarchical cp sizes",
               "--cp-comm-type a2a+p2p needs --hierarchical-context-parallel-sizes (Megatron: "
               "--hierarchical-context-parallel-sizes must be set when a2a+p2p is used in cp comm)")
    if cp > 1 and len(sizes) != 2:
        refuse(where, "a2a+p2p takes two cp levels",
               f"--cp-comm-type a2a+p2p with {len(sizes)} --hierarchical-context-parallel-sizes: give two, the "
               f"all-to-all group's size and the ring's (Transformer Engine: CP implementation a2a+p2p requires "
               f"cp_group = [a2a_cp_group, p2p_cp_group]!)")
    tp, groups = a.tensor_model_parallel_size, query_groups(a) or a.num_attention_heads
    heads, kv_heads = a.num_attention_heads // tp, max(1, groups // tp)
    if cp > 1 and (heads % sizes[0] or kv_heads % sizes[0]):
        refuse(where, "a2a+p2p splits heads over its all-to-all",
               f"--cp-comm-type a2a+p2p with {heads} query and {kv_heads} key/value heads a tp rank, not multiples "
               f"of the all-to-all group's {sizes[0]} (--hierarchical-context-parallel-sizes' first: Transformer "
               f"Engine's all-to-all views [b, s, h, d] as [b, s, cp, h//cp, d]); give a first size dividing both")


def _gradient_scaling(a: argparse.Namespace, others: dict, where: str) -> None:
    """``DistributedDataParallel.__init__`` (``distributed/distributed_data_parallel.py``): a
    per-token loss leaves the gradients unscaled, so its reduction must sum, not average."""
    if a.calculate_per_token_loss and a.ddp_average_in_collective and not legacy_names(a):
        refuse(where, "per-token loss sums its gradients",
               "--calculate-per-token-loss with --ddp-average-in-collective (Megatron, DistributedDataParallel: "
               "Cannot average in collective when calculating per-token loss!); give one of them")
