"""Megatron-LM's checks in the modules a job builds (``module_rules``): each command line here
is refused by today's Megatron-LM (the file and function named beside it), and its other side,
which Megatron accepts, is accepted."""

from __future__ import annotations

import pytest

from simpy_astra.errors import InputError, InvalidConfigurationError
from simpy_astra.workloads.megatron.arguments import parse

BASE = "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 --bf16"
WHERE = "s.yaml: workload.args"
MOE = " --num-experts 4 --disable-bias-linear"


@pytest.mark.parametrize("extra,rule", [
    # megatron/core/transformer/moe/moe_layer.py MoELayer.forward (validate_args before 2024-05)
    (MOE + " --tensor-model-parallel-size 2", "MoE with tp needs sequence parallelism"),
    (MOE + " --tensor-model-parallel-size 2 --expert-tensor-parallel-size 1 --moe-layer-freq 2",
     "MoE with tp needs sequence parallelism"),
    # megatron/core/transformer/moe/shared_experts.py SharedExpertMLP.__init__ (since shared experts, 2024-09)
    (" --num-experts 4 --moe-shared-expert-intermediate-size 512", "shared experts take no biases"),
    # megatron/core/transformer/moe/experts.py TEGroupedMLP.__init__ (before 2025-09 it took no biases at all)
    (" --num-experts 4 --moe-grouped-gemm", "grouped experts' biases without bias-dropout fusion"),
    # (the legacy GroupedMLP, Megatron-LM 2024-2025: no biases at all)
    (" --num-experts 4 --moe-grouped-gemm --moe-use-legacy-grouped-gemm --no-bias-dropout-fusion",
     "grouped experts' biases without bias-dropout fusion"),
    # megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__ (since 2024-01)
    (" --squared-relu", "squared ReLU without the bias-GeLU fusion"),
    (MOE + " --moe-router-load-balancing-type aux_loss seq_aux_loss", "one aux-loss coefficient a balancing type"),
    (MOE + " --moe-router-load-balancing-type aux_loss seq_aux_loss --moe-aux-loss-coeff 0.01",
     "one aux-loss coefficient a balancing type"),
    # (TransformerConfig checks the router's arguments of a dense model too)
    (" --moe-router-topk 1", "top-1 routing needs pre-softmax"),
    (" --moe-shared-expert-intermediate-size 512 --moe-shared-expert-overlap",
     "shared expert overlap needs all-to-all"),
    # (top-1 softmax routing is exempt from pre-softmax with sinkhorn alone: a list is never "sinkhorn")
    (MOE + " --moe-router-topk 1 --moe-router-load-balancing-type sinkhorn aux_loss --moe-aux-loss-coeff 0 0.01",
     "top-1 routing needs pre-softmax"),
    # megatron/core/transformer/moe/router.py TopKRouter.sinkhorn_load_balancing
    (MOE + " --moe-router-load-balancing-type sinkhorn --moe-aux-loss-coeff 0.01",
     "sinkhorn routing takes no aux loss"),
    # megatron/core/model_parallel_config.py ModelParallelConfig.__post_init__
    (" --pipeline-model-parallel-size 2 --defer-embedding-wgrad-compute --wgrad-deferral-limit -1",
     "deferral limit at least 0"),
    # megatron/core/distributed/distributed_data_parallel.py DistributedDataParallel.__init__
    (" --calculate-per-token-loss --ddp-average-in-collective", "per-token loss sums its gradients"),
])
def test_megatron_refuses_and_so_do_we(extra, rule):
    with pytest.raises(InvalidConfigurationError) as info:
        parse(BASE + extra, 8, WHERE)
    message = str(info.value)
    assert info.value.rule == rule
    assert message.startswith(WHERE + ": ") and "\n" not in message and "Megatron" in message


@pytest.mark.parametrize("extra", [
    MOE + " --tensor-model-parallel-size 2 --sequence-parallel",
    MOE + " --tensor-model-parallel-size 2 --moe-layer-freq '[0]*4'",  # no MoE layer runs a forward
    " --num-experts 4 --tensor-model-parallel-size 2 --DDP-impl local",  # 2021's names: no later rule
    MOE + " --moe-shared-expert-intermediate-size 512",
    # no MoE layer (an all-dense pattern) builds no shared or grouped experts
    " --num-experts 4 --moe-layer-freq '[0]*4' --moe-shared-expert-intermediate-size 512 --moe-grouped-gemm",
    " --num-experts 4 --moe-grouped-gemm --no-bias-dropout-fusion",
    MOE + " --moe-grouped-gemm",
    MOE + " --moe-grouped-gemm --moe-use-legacy-grouped-gemm",
    " --num-experts 4 --moe-grouped-gemm --transformer-impl local",  # SequentialMLP, biases and all
    " --squared-relu --no-bias-gelu-fusion",
    " --squared-relu --disable-bias-linear",  # validate_args turns the fusion off without biases
    MOE + " --moe-router-load-balancing-type aux_loss seq_aux_loss --moe-aux-loss-coeff 0.01 0.001",
    MOE + " --moe-router-load-balancing-type seq_aux_loss --moe-aux-loss-coeff 0.01",
    MOE + " --moe-router-load-balancing-type sinkhorn",
    MOE + " --moe-router-topk 1 --moe-router-load-balancing-type sinkhorn",
    " --moe-router-topk 1 --moe-router-pre-softmax",
    " --pipeline-model-parallel-size 2 --defer-embedding-wgrad-compute --wgrad-deferral-limit 0",
    " --calculate-per-token-loss",
    " --ddp-average-in-collective",
])
def test_the_other_side_of_each_rule_is_accepted(extra):
    assert parse(BASE + extra, 8, WHERE).num_layers == 4


@pytest.mark.parametrize("extra,says", [
    # (an unreadable value was read as 0 and passed)
    (" --pipeline-model-parallel-size 2 --defer-embedding-wgrad-compute --wgrad-deferral-limit 1x",
     "argument --wgrad-deferral-limit: invalid int value: '1x'"),
    (MOE + " --moe-router-load-balancing-type sinkhorn --moe-aux-loss-coeff 1e-2x",
     "argument --moe-aux-loss-coeff: invalid float value: '1e-2x'"),
])
def test_an_unreadable_value_is_argparses_error(extra, says):
    with pytest.raises(InputError) as info:
        parse(BASE + extra, 8, WHERE)
    assert str(info.value) == f"{WHERE}: {says}"
