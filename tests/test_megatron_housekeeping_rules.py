"""Megatron-LM's rules on arguments that cannot change a step's time (``housekeeping_rules``):
each command line here is one ``validate_args`` (megatron/training/arguments.py) stops on, and
its other side, which it runs, is accepted."""

from __future__ import annotations

import pytest

from simpy_astra.errors import InputError, InvalidConfigurationError
from simpy_astra.workloads.megatron.arguments import parse

BASE = "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 --bf16"
WHERE = "s.yaml: workload.args"


@pytest.mark.parametrize("extra,rule", [
    (" --warmup 0.01", "no --warmup"),
    (" --train-iters 10 --train-samples 100", "iterations or samples"),
    (" --train-iters 10 --lr-decay-samples 100", "iterations or samples"),
    (" --train-iters 10 --lr-warmup-fraction 0.1 --lr-warmup-iters 5", "iterations or samples"),
    (" --train-samples 100 --lr-warmup-iters 5", "iterations or samples"),
    (" --train-samples 100 --lr-decay-iters 10", "iterations or samples"),
    (" --lr 0.0001 --min-lr 0.001", "minimum learning rate at most the learning rate"),
    (" --weight-decay-incr-style linear --start-weight-decay 0", "weight decay ends with an incrementing style"),
    (" --end-weight-decay 0.1", "weight decay ends with an incrementing style"),
    (" --save ckpt", "saving needs an interval"),
    (" --save ckpt --save-interval 0", "saving needs an interval"),
    (" --save ckpt --save-interval 10 --save-retain-interval 15", "retained checkpoints a multiple of the interval"),
    # (2021's names take --save-interval 0; a retain interval beside it divided by it)
    (" --save ckpt --save-interval 0 --save-retain-interval 5 --DDP-impl local",
     "retained checkpoints a multiple of the interval"),
    (" --ckpt-format torch_dcp", "checkpoint format of a sharded data-parallel model"),
    (" --ckpt-format fsdp_dtensor", "checkpoint format of a sharded data-parallel model"),
    (" --load-main-params-from-ckpt", "main parameters from a checkpoint without its optimizer"),
    (" --non-persistent-ckpt-type in_memory", "non-persistent checkpoints global or local"),
    (" --non-persistent-ckpt-type local", "local checkpoints need their folder"),
    (" --ckpt-convert-format torch_dist --load x", "checkpoint conversion needs its folders"),
    # (the evaluation batch: 12 is not a multiple of 1 x dp 8, nor 16 of 3 x 8)
    (" --eval-global-batch-size 12", "evaluation batch divisible by its micro-batch x dp"),
    (" --global-batch-size 16 --eval-micro-batch-size 3", "evaluation batch divisible by its micro-batch x dp"),
    # (two arguments of today's Megatron-LM, from its training config, that the flag table lacked)
    (" --log-memory-interval 50", "memory logged at logging iterations"),
    (" --log-interval 0", "a logging interval"),
    (" --log-interval 10 --log-memory-interval 25", "memory logged at logging iterations"),
    (" --save ckpt --save-interval 10 --save-params-interval 5 --use-distributed-optimizer --overlap-grad-reduce "
     "--overlap-param-gather", "saved parameters without the overlapped parameter gather"),
    (" --mock-data --data-path a", "one data source"),
    (" --data-path a --train-data-path b", "one data source"),
    (" --data-path a --data-args-path b", "one data source"),
    # (inference options a training run still has checked: CUDA graphs and the inference layers
    # this simulator does not model)
    (" --inference-cuda-graph-scope block", "inference CUDA graphs need CUDA graphs"),
    (" --inference-cuda-graph-scope layer --fp8-format hybrid", "inference CUDA graphs need CUDA graphs"),
    (" --inference-fuse-tp-communication", "inference kernels need the inference-optimized layers"),
    (" --inference-disable-triton-nvls-kernels", "inference kernels need the inference-optimized layers"),
    (" --fim-data --mock-data", "fill-in-the-middle data is real data"),
    (" --fim-data --data-path a --fim-rate 0", "fill-in-the-middle rates"),
    (" --fim-data --data-path a --fim-spm-rate 0.0", "fill-in-the-middle rates"),
    (" --num-dataset-builder-threads 0", "dataset builder threads"),
    (" --override-ckpt-iteration 5 --finetune", "a checkpoint's iteration overridden or finetuned"),
    (" --ckpt-pg-tensors-cache-path c --ckpt-fully-parallel-load-process-group ep_dp",
     "one process group for the cached checkpoint distribution"),
])
def test_megatron_refuses_and_so_do_we(extra, rule):
    with pytest.raises(InvalidConfigurationError) as info:
        parse(BASE + extra, 8, WHERE)
    message = str(info.value)
    assert info.value.rule == rule
    assert message.startswith(WHERE + ": ") and "\n" not in message and "Megatron" in message


@pytest.mark.parametrize("extra", [
    " --train-iters 10 --lr-warmup-iters 5 --lr-decay-iters 10 --lr 0.0001 --min-lr 0.00001",
    " --train-samples 100 --lr-warmup-samples 5 --lr-decay-samples 100",
    " --train-iters 10 --lr-warmup-fraction 0.1",
    " --lr 0.0001 --min-lr 0.0001",
    " --weight-decay-incr-style cosine --start-weight-decay 0 --end-weight-decay 0.1",
    " --save ckpt --save-interval 10 --save-retain-interval 20",
    " --ckpt-format torch_dist --save ckpt --save-interval 1",
    " --load-main-params-from-ckpt --no-load-optim",
    " --non-persistent-ckpt-type local --non-persistent-local-ckpt-dir d",
    " --non-persistent-ckpt-type global --load x",
    " --ckpt-convert-format torch_dist --ckpt-convert-save y --load x",
    # evaluation's batch (Megatron-LM since 2026-04) does not change a training step: read and checked
    " --global-batch-size 16 --eval-global-batch-size 48 --eval-micro-batch-size 2",
    " --global-batch-size 48 --micro-batch-size 2 --eval-micro-batch-size 3",
    " --log-memory-interval 200",
    " --log-interval 10 --log-memory-interval 30",
    " --save ckpt --save-interval 10 --save-params-interval 5",
    " --mock-data",
    " --data-path 0.5 a 0.5 b --split 969,30,1",
    " --train-data-path a --valid-data-path b --test-data-path c",
    " --save ckpt --save-interval 0 --DDP-impl local",  # 2021's Megatron-LM: 0 never saves
    " --inference-cuda-graph-scope none",
    " --fim-data --data-path a --fim-rate 0.2",
    " --mock-data --fim-rate 0",  # read only with --fim-data
    " --num-dataset-builder-threads 4",
    " --override-ckpt-iteration 5",
    " --ckpt-pg-tensors-cache-path c --ckpt-fully-parallel-save-process-group ep_dp "
    "--ckpt-fully-parallel-load-process-group ep_dp",
])
def test_the_other_side_of_each_rule_is_accepted(extra):
    assert parse(BASE + extra, 8, WHERE).num_layers == 4


@pytest.mark.parametrize("extra,says", [
    (" --lr 1e-4x", "argument --lr: invalid float value: '1e-4x'"),
    (" --eval-micro-batch-size x", "argument --eval-micro-batch-size: invalid int value: 'x'"),
    (" --eval-micro-batch-size 0", "argument --eval-micro-batch-size: must be an integer >= 1 (got 0)"),
])
def test_an_unreadable_value_is_argparses_error(extra, says):
    with pytest.raises(InputError) as info:
        parse(BASE + extra, 8, WHERE)
    assert str(info.value) == f"{WHERE}: {says}"
