"""Arguments today's Megatron-LM (``megatron/training/arguments.py``, 2026-08) generates from its
config dataclasses through ``ArgumentGroupFactory`` and that the flag table lacked: those that
cannot change a step are accepted and leave it as it was, those that can are refused naming
what they do, and the values of unpriced arguments are held to the ``choices`` Megatron's
argparse holds them to (each was refused as 'not an argument of Megatron-LM', or ran with any
value)."""

from __future__ import annotations

import dataclasses

import pytest

from simpy_astra.config.cluster import load_cluster
from simpy_astra.errors import InputError
from simpy_astra.workloads.megatron.arguments import parse
from simpy_astra.workloads.megatron.schedule import build_stage

BASE = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 "
        "--bf16 --tensor-model-parallel-size 2")
WHERE = "s.yaml: workload.args"


def _stage_us(args: str) -> list[int]:
    gpu = load_cluster({"preset": "dgx-a100-80gb", "gpus": 8}, "c").gpu_model()
    return [op.duration_us for op in build_stage(parse(args, 8, WHERE), gpu, 0).ops]


@pytest.mark.parametrize("extra", [
    # (field of the config class Megatron generates the flag from, in Megatron's words)
    " --save-activations-interval 100",  # CheckpointConfig: save activations every N iterations
    " --ckpt-fully-parallel-save-process-group ep_dp",  # CheckpointConfig, choices dp / ep_dp
    " --async-strategy mcore",  # CheckpointConfig: the asynchronous checkpoint writer
    " --verify-integrity --disable-save-tokenizer-assets",  # CheckpointConfig
    " --log-device-memory-used --disable-log-loss-scale-to-tensorboard",  # LoggerConfig
    " --moe-routing-trace-path traces --moe-routing-trace-capture-logits",  # LoggerConfig
    " --nvtx-ranges --record-shapes --pytorch-profiler-collect-chakra",  # ProfilingConfig
    " --gpu-sniff-test-interval 50 --exit-signal-handler-for-training",  # TrainingConfig
    " --disable-manual-gc-eval",  # TrainingConfig.manual_gc_eval, a bool defaulting to True
    " --flight-recorder-trace-buffer-size 4000 --no-flight-recorder-dump-on-timeout",  # DistributedInitConfig
    " --start-eval-at-iter 10 --validation-set-names a b",  # ValidationConfig
    " --null-tokenizer-pad-id -1 --chat-template t.jinja",  # TokenizerConfig
    " --fault-injector-seed 3 --fault-injector-fault-delay 0.5",  # FaultInjectorConfig
    " --inference-grouped-gemm-backend torch --inference-moe-token-dispatcher-type nccl",  # inference only
    " --no-rl-partial-rollouts --no-inference-wandb-logging",  # BooleanOptionalAction's --no- (its default)
    " --mup-width-mult 2.0 --mup-output-mult 0.5",  # read only with --use-mup (refused below)
    # (older --no- forms of logging, evaluation and checkpoint switches, refused as timed before)
    " --no-log-loss-scale-to-tensorboard --no-manual-gc-eval --no-strict-fsdp-dtensor-load",
    " --no-use-tokenizer-model-from-checkpoint-args",
    # (older releases' logging, tokenizer, learning-rate, checkpoint and data arguments, refused as
    # timed before: a Llama 3 command line's tiktoken pattern among them)
    " --logging-level 20 --otel-enabled --no-one-logger",
    " --tiktoken-pattern v2 --tiktoken-num-special-tokens 1000 --trust-remote-code",
    " --decoupled-lr 0.0001 --head-lr-mult 2.0 --override-opt-param-scheduler",
    " --persistent-save-interval 100 --adlr-autoresume --full-validation",
    " --fim-data --fim-rate 0.5 --mmap-warmup --num-dataset-builder-threads 4",
])
def test_todays_arguments_that_cannot_change_a_step_are_accepted_and_leave_it_as_it_was(extra):
    before, after = parse(BASE, 8, WHERE), parse(BASE + extra, 8, WHERE)
    assert dataclasses.replace(after, args=before.args) == before
    assert _stage_us(BASE + extra) == _stage_us(BASE)


@pytest.mark.parametrize("extra,what", [
    (" --hybrid-context-parallel", "hybrid context parallelism"),
    (" --step-batch-size-schedule 0:768,250B:1536", "a batch size that changes during training"),
    (" --tensor-parallel-num-weight-shards 4", "generalized tensor parallelism"),
    (" --use-mup", "muP"),
    (" --experimental-attention-variant dsa", "experimental attention variants"),
    (" --dsa-indexer-topk 2048", "experimental attention variants"),
    (" --fine-grained-activation-offloading", "activation offloading to the host"),
    (" --offload-modules attn_norm core_attn", "activation offloading to the host"),
    (" --moe-shared-expert-gate", "mixture of experts"),
    (" --disable-jit-fuser", "JIT fusions turned off"),
    (" --no-pad-vocab-size", "a vocabulary not padded"),
    (" --enable-mhc-connections", "hyper-connections"),
    (" --mtp-standalone", "multi-token prediction"),
    (" --batch-invariant-mode", "batch-invariant kernels"),
    (" --no-tp-comm-overlap-ag", "--tp-comm-overlap's overlaps"),
    (" --attention-output-gate", "a gate on the attention output"),
    (" --mlp-chunks-for-training 2", "the MLP run in chunks"),
    (" --flash-attention-version 3", "FlashAttention version"),
])
def test_todays_arguments_that_can_change_a_step_are_refused_by_name(extra, what):
    flag = extra.split()[0]
    with pytest.raises(InputError) as info:
        parse(BASE + extra, 8, WHERE)
    message = str(info.value)
    assert message.startswith(f"{WHERE}: {flag} is not modelled (") and what in message and "\n" not in message


@pytest.mark.parametrize("extra,value,choices", [
    # (Megatron-LM's choices for each; every release's, where older ones took more)
    (" --moe-router-score-function foo", "'foo'", "softmax, sigmoid, sqrtsoftplus"),
    (" --moe-router-dtype fp16", "'fp16'", "fp32, fp64"),
    (" --weight-decay-incr-style foo", "'foo'", "constant, linear, cosine"),
    (" --moe-router-load-balancing-type aux_loss bogus", "'bogus'", "aux_loss, seq_aux_loss"),
    (" --empty-unused-memory-level 3", "'3'", "0, 1, 2"),
    (" --ckpt-fully-parallel-save-process-group tp", "'tp'", "dp, ep_dp"),
    (" --lr-decay-style cosine_annealing", "'cosine_annealing'", "constant, linear, cosine, exponential"),
    (" --async-strategy torch", "'torch'", "nvrx, mcore"),
])
def test_a_value_outside_megatrons_choices_is_refused_naming_flag_value_and_choices(extra, value, choices):
    flag = extra.split()[0]
    with pytest.raises(InputError) as info:
        parse(BASE + extra, 8, WHERE)
    message = str(info.value)
    assert message.startswith(f"{WHERE}: argument {flag}: invalid choice {value}") and choices in message
    assert "\n" not in message


@pytest.mark.parametrize("extra,kind,value", [
    (" --timing-log-level high", "int", "high"),
    (" --save-activations-interval 1e2", "int", "1e2"),  # CheckpointConfig: int | None
    (" --gpu-sniff-test-interval every", "int", "every"),
    (" --mup-width-mult two", "float", "two"),  # TransformerConfig: float
])
def test_a_value_not_of_the_arguments_type_is_refused(extra, kind, value):
    with pytest.raises(InputError, match=rf"argument {extra.split()[0]}: invalid {kind} value: '{value}'"):
        parse(BASE + extra, 8, WHERE)


@pytest.mark.parametrize("took,none_took", [
    (" --lr-decay-style exponential", " --lr-decay-style exp"),  # Megatron-LM 2020-2021
    (" --tokenizer-type Llama3Tokenizer --vocab-size 128256", " --tokenizer-type Llama4Tokenizer --vocab-size 9"),
    (" --moe-router-load-balancing-type seq_aux_loss sinkhorn --moe-aux-loss-coeff 0.01 0.001 "
     "--moe-router-score-function sqrtsoftplus", " --moe-router-score-function softplus"),
    (" --empty-unused-memory-level=2 --timing-log-level 0", " --empty-unused-memory-level=-1"),
])
def test_values_some_release_took_are_accepted_and_others_refused(took, none_took):
    """Choices are every release's: 2020's exponential decay and 2024's Llama3Tokenizer (since
    gone) run, a value no release took does not."""
    parse(BASE + took, 8, WHERE)
    with pytest.raises(InputError, match="invalid choice"):
        parse(BASE + none_took, 8, WHERE)
