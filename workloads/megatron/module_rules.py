"""Megatron-LM's checks that live outside ``validate_args``: in the modules a job builds.

:mod:`~simpy_astra.workloads.megatron.rules` restates ``validate_args`` and the config
classes' ``__post_init__``; these are the rest of what stops today's Megatron-LM before or at
its first step, on arguments this simulator reads (each family names the Megatron module and
function whose check it restates), and ``validate_args``' check on the evaluation batch
(arguments read only to be checked: evaluation does not change a training step's time), raised
with Megatron's reason as :class:`InvalidConfigurationError`. As in ``rules``, a command line with 2021's names
(``rules.legacy_names``) is not refused by a rule of a later Megatron-LM.
"""

from __future__ import annotations

import argparse

from simpy_astra.errors import InputError, InvalidConfigurationError
from simpy_astra.workloads.megatron import housekeeping_rules
from simpy_astra.workloads.megatron.housekeeping_rules import given
from simpy_astra.workloads.megatron.rules import legacy_names


def _refuse(where: str, rule: str, message: str) -> None:
    raise InvalidConfigurationError(f"{where}: {message}", rule)


def check(a: argparse.Namespace, gpus: int, others: dict[str, list[str]], where: str) -> None:
    """Refuse what Megatron-LM's modules (and its evaluation-batch check) refuse of ``a`` (the
    parsed arguments) on ``gpus`` GPUs, then what ``validate_args`` refuses of the arguments that
    cannot change a step's time (:mod:`housekeeping_rules`); ``others`` are the unmodelled flags
    given, with their values."""
    for family in (_moe_layer, _experts_biases, _router_losses, _fused_activation, _deferred_wgrad):
        family(a, others, where)
    _evaluation_batch(a, gpus, others, where)
    housekeeping_rules.check(a, others, where)


def _has_moe_layer(a: argparse.Namespace) -> bool:
    """Some layer is a mixture of experts: an integer ``--moe-layer-freq`` N makes layer 0 one
    (``i % N == 0``); a pattern needs a 1."""
    freq = a.moe_layer_freq
    return bool(a.num_experts) and (any(freq) if isinstance(freq, tuple) else True)


def _moe_layer(a: argparse.Namespace, others: dict, where: str) -> None:
    """``MoELayer.forward`` (``moe/moe_layer.py``; ``validate_args`` before 2024-05)."""
    tp = a.tensor_model_parallel_size
    if _has_moe_layer(a) and tp > 1 and not a.sequence_parallel and not legacy_names(a):
        _refuse(where, "MoE with tp needs sequence parallelism",
                f"--num-experts with --tensor-model-parallel-size {tp} needs --sequence-parallel (Megatron, "
                f"MoELayer.forward in training: During training, performance may degrade if MoE and tensor "
                f"parallelism are enabled without also enabling sequence parallelism.)")


def _experts_biases(a: argparse.Namespace, others: dict, where: str) -> None:
    """Which experts take biases (``moe/shared_experts.py`` ``SharedExpertMLP.__init__``,
    ``moe/experts.py`` ``TEGroupedMLP.__init__``)."""
    if not _has_moe_layer(a) or a.disable_bias_linear or legacy_names(a):  # experts are built in MoE layers
        return
    if a.moe_shared_expert_intermediate_size:
        _refuse(where, "shared experts take no biases",
                "--moe-shared-expert-intermediate-size with biases (the default) (Megatron, SharedExpertMLP: bias "
                "is not supported in the shared experts, please set '--disable-bias-linear' instead.)")
    # Transformer Engine's grouped experts, under today's default layers (Megatron's own,
    # --transformer-impl local, run a SequentialMLP); the legacy GroupedMLP took no biases at all
    if a.moe_grouped_gemm and "--moe-use-legacy-grouped-gemm" in others:
        _refuse(where, "grouped experts' biases without bias-dropout fusion",
                "--moe-grouped-gemm --moe-use-legacy-grouped-gemm with biases (the default) (Megatron, GroupedMLP: "
                "bias not supported in Grouped GEMM yet, please set '--disable-bias-linear' instead.)")
    if a.moe_grouped_gemm and a.transformer_impl != "local" and not a.no_bias_dropout_fusion:
        _refuse(where, "grouped experts' biases without bias-dropout fusion",
                "--moe-grouped-gemm with biases (the default) and bias-dropout fusion (the default) (Megatron, "
                "TEGroupedMLP: bias_dropout_fusion is not supported in TEGroupedMLP when add_bias_linear=True); "
                "add --disable-bias-linear or --no-bias-dropout-fusion")


def _router_losses(a: argparse.Namespace, others: dict, where: str) -> None:
    """``--moe-router-load-balancing-type`` and ``--moe-aux-loss-coeff``, one value or a list
    each (``validate_args`` reads a list of one as its value): ``TransformerConfig.__post_init__``
    and ``TopKRouter.sinkhorn_load_balancing`` (``moe/router.py``)."""
    kinds = others.get("--moe-router-load-balancing-type") or ["aux_loss"]
    coeffs = others.get("--moe-aux-loss-coeff") or ["0.0"]
    for text in coeffs:
        given({"--moe-aux-loss-coeff": [text]}, "--moe-aux-loss-coeff", float, where)
    if len(kinds) > 1 and len(coeffs) != len(kinds):
        _refuse(where, "one aux-loss coefficient a balancing type",
                f"--moe-router-load-balancing-type names {len(kinds)} types and --moe-aux-loss-coeff gives "
                f"{len(coeffs)} value(s) (Megatron: moe_aux_loss_coeff must be a list of the same length as "
                f"moe_router_load_balancing_type); give --moe-aux-loss-coeff one value for each type")
    if _has_moe_layer(a) and kinds == ["sinkhorn"] and len(coeffs) == 1 and float(coeffs[0]) != 0:
        _refuse(where, "sinkhorn routing takes no aux loss",
                f"--moe-router-load-balancing-type sinkhorn with --moe-aux-loss-coeff {coeffs[0]} (Megatron, the "
                f"router: Sinkhorn routing does not support aux loss.); give --moe-aux-loss-coeff 0")

def _fused_activation(a: argparse.Namespace, others: dict, where: str) -> None:
    """The bias-activation fusion's activations (``TransformerConfig.__post_init__``): it is
    on by default (``--no-bias-gelu-fusion`` turns it off, and so does ``validate_args`` when
    the linear layers have no bias) and fuses GeLU, SwiGLU or quick GeGLU only."""
    if "--squared-relu" in others and not a.no_bias_gelu_fusion and not a.disable_bias_linear:
        _refuse(where, "squared ReLU without the bias-GeLU fusion",
                "--squared-relu with the bias-activation fusion (on by default with biases) (Megatron, "
                "TransformerConfig: When bias_activation_fusion is True, activation function should be either "
                "gelu, swiglu, or quick_geglu); add --no-bias-gelu-fusion or --disable-bias-linear")



def _deferred_wgrad(a: argparse.Namespace, others: dict, where: str) -> None:
    """``ModelParallelConfig.__post_init__`` (``model_parallel_config.py``); its other checks on
    ``--defer-embedding-wgrad-compute`` are in ``rules``."""
    limit = given(others, "--wgrad-deferral-limit", int, where) or 0
    if "--defer-embedding-wgrad-compute" in others and limit < 0:
        _refuse(where, "deferral limit at least 0",
                f"--wgrad-deferral-limit {limit} with --defer-embedding-wgrad-compute (Megatron, ModelParallelConfig: "
                f"Wgrad deferral limit should be greater than or equal to 0 when it is enabled!); give 0 or more")


def _evaluation_batch(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    """``--eval-global-batch-size`` and ``--eval-micro-batch-size`` (Megatron-LM since 2026-04;
    by default the training's batch and micro-batch): ``validate_args`` asserts the one a
    multiple of the other times dp."""
    if "--eval-global-batch-size" not in others and "--eval-micro-batch-size" not in others:
        return
    dp = gpus // (a.tensor_model_parallel_size * a.pipeline_model_parallel_size * a.context_parallel_size)
    total = _count(others, "--eval-global-batch-size", where) or a.global_batch_size or a.micro_batch_size * dp
    micro = _count(others, "--eval-micro-batch-size", where) or a.micro_batch_size
    if total % (micro * dp):
        _refuse(where, "evaluation batch divisible by its micro-batch x dp",
                f"the evaluation batch {total} (--eval-global-batch-size, by default the training's) is not a "
                f"multiple of its micro-batch {micro} (--eval-micro-batch-size, by default --micro-batch-size) x "
                f"data-parallel size {dp} (Megatron: eval_global_batch_size must be divisible by "
                f"eval_micro_batch_size * data_parallel_size); give --eval-global-batch-size a multiple of "
                f"{micro * dp}")


def _count(others: dict, flag: str, where: str) -> int | None:
    """A count an unmodelled ``flag`` gives (None when not given), at least 1."""
    value = given(others, flag, int, where)
    if value is not None and value < 1:
        raise InputError(f"{where}: argument {flag}: must be an integer >= 1 (got {value})")
    return value
