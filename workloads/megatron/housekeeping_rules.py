"""Megatron-LM's rules on the arguments that cannot change a step's time.

The training length and learning-rate schedule, logging, checkpointing, data, evaluation and inference
arguments are read and not priced (``unmodelled_flags.NO_TIMING_EFFECT``), but a launch script
Megatron-LM stops on is not one to time: ``validate_args`` (``megatron/training/arguments.py``)
checks them, and each check is restated here with Megatron's reason, as
:class:`InvalidConfigurationError`. Their values
are read as Megatron's argparse reads them (an unreadable number is an :class:`InputError`). A
rule that arrived after 2021's names left does not refuse a command line with them
(``rules.legacy_names``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from simpy_astra.errors import InputError, refuse
from simpy_astra.workloads.megatron.batch_sizes import data_parallel, global_batch
from simpy_astra.workloads.megatron.rules import legacy_names
from simpy_astra.workloads.megatron.unmodelled_flags import number


def given(others: dict[str, list[str]], flag: str, kind: Callable[[str], int | float], where: str):
    """The value an unmodelled ``flag`` was given (its last), read by ``kind`` (:func:`number`);
    None when the flag is absent."""
    if flag not in others:
        return None
    return number((others[flag] or [""])[-1], flag, kind, where)


def check(a: argparse.Namespace, gpus: int, others: dict[str, list[str]], where: str) -> None:
    """Refuse what ``validate_args`` refuses of the unmodelled arguments ``others`` (beside the
    parsed ``a``, on ``gpus`` GPUs)."""
    for family in (_deprecated, _training_length, _learning_rate, _logging, _checkpoints, _data,
                   _data_loading, _inference):
        family(a, others, where)
    _evaluation_batch(a, gpus, others, where)
    _rampup(a, gpus, others, where)


def _rampup(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    """``--rampup-batch-size START INCREMENT SAMPLES``, as Megatron reads it: three integers
    (``get_num_microbatches_calculator``), sample-based training only (``validate_args``), and
    the ramp's checks (``RampupBatchsizeNumMicroBatchesCalculator``): from START up to the
    global batch by whole INCREMENTs, every batch of the ramp whole micro-batches on every
    data-parallel rank (its consistency check at each step)."""
    if "--rampup-batch-size" not in others:
        return
    values = others["--rampup-batch-size"]
    if len(values) != 3:
        raise InputError(f"{where}: argument --rampup-batch-size: takes three integers, START INCREMENT SAMPLES "
                         f"(got {len(values)}: {' '.join(values) or 'none'}; Megatron: expected the following format: "
                         f"--rampup-batch-size <start batch size> <batch size incerement> <ramp-up samples>)")
    start, step, samples = (number(x, "--rampup-batch-size", int, where) for x in values)
    if given(others, "--train-iters", int, where):
        refuse(where, "batch-size ramp with sample-based training",
               "--rampup-batch-size with --train-iters (Megatron: expected no batch-size rampup for iteration-based "
               "training); give --train-samples")
    total, micro = global_batch(a, gpus), a.micro_batch_size * data_parallel(a, gpus)
    if start < 1 or step < 1 or samples < 0:
        raise InputError(f"{where}: argument --rampup-batch-size: START and INCREMENT must be integers >= 1 and "
                         f"SAMPLES >= 0 (got {start} {step} {samples})")
    if start >= total or (total - start) % step:
        refuse(where, "batch-size ramp up to the global batch",
               f"--rampup-batch-size {start} {step} {samples} does not climb to --global-batch-size {total} in whole "
               f"steps of {step} (Megatron: expected global batch size interval ({total - start}) to be divisible by "
               f"global batch size increment ({step}), above 0); give a START below {total} and an INCREMENT that "
               f"divides the difference")
    if start % micro or step % micro:
        refuse(where, "batch-size ramp in whole micro-batches",
               f"--rampup-batch-size {start} {step} {samples}: a batch of the ramp is not a multiple of "
               f"--micro-batch-size {a.micro_batch_size} x data-parallel size {data_parallel(a, gpus)} = {micro} (Megatron: "
               f"current global batch size is not divisible by micro-batch-size times data parallel size); give "
               f"START and INCREMENT multiples of {micro}")


def _deprecated(a: argparse.Namespace, others: dict, where: str) -> None:
    if "--warmup" in others:  # every Megatron-LM since 2020-12, before 2021's names
        refuse(where, "no --warmup",
               "--warmup (Megatron: --warmup argument is no longer valid, use --lr-warmup-fraction instead)")


def _training_length(a: argparse.Namespace, others: dict, where: str) -> None:
    """Iterations or samples, each with its own schedule's units."""
    if "--skip-train" in others:
        return
    fraction = given(others, "--lr-warmup-fraction", float, where)
    for unit, other, kind in (("iters", "samples", "iteration"), ("samples", "iters", "sample")):
        if not given(others, f"--train-{unit}", int, where):
            continue
        clash = [f for f in (f"--train-{other}", f"--lr-decay-{other}") if given(others, f, int, where) is not None]
        clash += [f"--lr-warmup-{other}"] if given(others, f"--lr-warmup-{other}", int, where) else []
        warmup = f"--lr-warmup-{unit}"
        clash += [warmup] if fraction is not None and given(others, warmup, int, where) else []
        if clash:
            refuse(where, "iterations or samples",
                   f"--train-{unit} with {' and '.join(clash)} (Megatron: expected {kind}-based training, "
                   f"learning-rate decay and warmup; --lr-warmup-fraction and {warmup} are one choice)")


def _learning_rate(a: argparse.Namespace, others: dict, where: str) -> None:
    lr, least = given(others, "--lr", float, where), given(others, "--min-lr", float, where) or 0.0
    if lr is not None and not least <= lr:  # false for a NaN too: the assert stops Megatron on it
        nan = next((f"{flag} nan is not a number, so " for flag, x in (("--lr", lr), ("--min-lr", least)) if x != x), "")
        refuse(where, "minimum learning rate at most the learning rate",
               f"{nan}--min-lr {least:g} is not at most --lr {lr:g} (Megatron: assert args.min_lr <= args.lr)")
    style = (others.get("--weight-decay-incr-style") or ["constant"])[-1]
    ends = [f for f in ("--start-weight-decay", "--end-weight-decay") if f in others]
    if (style == "constant") == bool(ends) or (style != "constant" and len(ends) < 2):
        default = "" if "--weight-decay-incr-style" in others else " (the default)"
        refuse(where, "weight decay ends with an incrementing style",
               f"--weight-decay-incr-style {style}{default}"
               f" with {' and '.join(ends) if ends else 'neither --start-weight-decay nor --end-weight-decay'} "
               f"(Megatron: a constant weight decay takes neither --start-weight-decay nor --end-weight-decay, "
               f"an incrementing one both)")


def _logging(a: argparse.Namespace, others: dict, where: str) -> None:
    memory, interval = given(others, "--log-memory-interval", int, where), given(others, "--log-interval", int, where)
    if interval == 0:
        refuse(where, "a logging interval", "--log-interval 0 (Megatron's training loop takes the iteration modulo "
                                             "it: ZeroDivisionError at the first step); give 1 or more")
    if memory is not None and memory % (interval or 100):
        refuse(where, "memory logged at logging iterations",
               f"--log-memory-interval {memory} is not a multiple of --log-interval {interval or 100}"
               f"{'' if interval else ' (the default)'} (Megatron: assert args.log_memory_interval % "
               f"args.log_interval == 0)")


def _checkpoints(a: argparse.Namespace, others: dict, where: str) -> None:
    interval = given(others, "--save-interval", int, where)
    if "--save" in others and (interval is None or (interval <= 0 and not legacy_names(a))):
        refuse(where, "saving needs an interval",
               f"--save {'without --save-interval' if interval is None else f'with --save-interval {interval}'} "
               f"(Megatron: --save needs --save-interval, above 0); give --save-interval N")
    retain = given(others, "--save-retain-interval", int, where)
    if "--save" in others and retain is not None and (retain <= 0 or not interval or retain % interval):
        refuse(where, "retained checkpoints a multiple of the interval",
               f"--save-retain-interval {retain} is not a positive multiple of --save-interval {interval} (Megatron: "
               f"assert args.save_retain_interval % args.save_interval == 0)")
    fmt = (others.get("--ckpt-format") or [""])[-1]
    if fmt in ("torch_dcp", "fsdp_dtensor"):
        needs = "--use-torch-fsdp2" if fmt == "torch_dcp" else "--use-megatron-fsdp"
        refuse(where, "checkpoint format of a sharded data-parallel model",
               f"--ckpt-format {fmt} needs {needs}, which is not modelled (Megatron: --ckpt-format {fmt} is only "
               f"tested with {'FSDP' if fmt == 'torch_dcp' else 'Megatron FSDP'}); use torch_dist, the default")
    if "--save" in others and "--save-params-interval" in others and a.overlap_param_gather:
        refuse(where, "saved parameters without the overlapped parameter gather",
               "--save-params-interval with --overlap-param-gather (Megatron: assert not args.overlap_param_gather)")
    _other_checkpoints(others, where)
    if "--override-ckpt-iteration" in others and "--finetune" in others:
        refuse(where, "a checkpoint's iteration overridden or finetuned",
               "--override-ckpt-iteration with --finetune (Megatron: Cannot override checkpoint iteration together "
               "with finetune flag.); give one of them")
    if "--load-main-params-from-ckpt" in others and "--no-load-optim" not in others:
        refuse(where, "main parameters from a checkpoint without its optimizer",
               "--load-main-params-from-ckpt without --no-load-optim (Megatron: --load-main-params-from-ckpt must be "
               "used with --no-load-optim.)")


def _other_checkpoints(others: dict, where: str) -> None:
    """Non-persistent (local) checkpoints and checkpoint conversion."""
    kind = (others.get("--non-persistent-ckpt-type") or [None])[-1]
    if kind is not None and kind not in ("global", "local"):
        refuse(where, "non-persistent checkpoints global or local",
               f"--non-persistent-ckpt-type {kind} (Megatron: Currently only global and local checkpoints are "
               f"supported)")
    if kind == "local" and "--non-persistent-local-ckpt-dir" not in others:
        refuse(where, "local checkpoints need their folder",
               "--non-persistent-ckpt-type local without --non-persistent-local-ckpt-dir (Megatron: Tried to use "
               "local checkpointing without specifying --local-ckpt-dir!)")
    if "--ckpt-pg-tensors-cache-path" in others:
        save, load = ((others.get(f"--ckpt-fully-parallel-{kind}-process-group") or ["dp"])[-1] for kind in ("save", "load"))
        if save != load:
            refuse(where, "one process group for the cached checkpoint distribution",
                   f"--ckpt-pg-tensors-cache-path with --ckpt-fully-parallel-save-process-group {save} and "
                   f"--ckpt-fully-parallel-load-process-group {load} (Megatron: --ckpt-pg-tensors-cache-path requires "
                   f"--ckpt-fully-parallel-save-process-group and --ckpt-fully-parallel-load-process-group to be "
                   f"identical); give both the same group (dp by default)")
    missing = [f for f in ("--ckpt-convert-save", "--load") if f not in others]
    if "--ckpt-convert-format" in others and missing:
        refuse(where, "checkpoint conversion needs its folders",
               f"--ckpt-convert-format without {' and '.join(missing)} (Megatron: assert args.ckpt_convert_save is "
               f"not None; assert args.load is not None)")


def _data(a: argparse.Namespace, others: dict, where: str) -> None:
    """One source of training data (``validate_args``' data blend checks)."""
    split = [f for f in ("--train-data-path", "--valid-data-path", "--test-data-path") if f in others]
    if "--data-path" in others and "--data-args-path" in others:
        refuse(where, "one data source", "--data-path with --data-args-path (Megatron: exactly one of the two)")
    if split and "--per-split-data-args-path" in others:
        refuse(where, "one data source",
               f"{split[0]} with --per-split-data-args-path (Megatron: exactly one of the two)")
    sources = ["--mock-data"] * ("--mock-data" in others) + ["--data-path"] * bool(others.get("--data-path")) + \
        [f for f in split if others[f]][:1]
    if len(sources) > 1 and not legacy_names(a):
        refuse(where, "one data source",
               f"{' with '.join(sources)} (Megatron, since 2024-05: A single data source must be provided in "
               f"training mode, else None)")


def _inference(a: argparse.Namespace, others: dict, where: str) -> None:
    """Inference options that training never uses and Megatron still checks: inference CUDA
    graphs need CUDA graphs (``validate_args``: ``ALLOWED_INFERENCE_SCOPES``, only ``none``
    under the default ``--cuda-graph-impl none``; that flag is not modelled), and the fused
    inference kernels need the ``inference_optimized`` layers (``TransformerConfig``), which
    no ``--transformer-impl`` modelled here builds."""
    scope = (others.get("--inference-cuda-graph-scope") or ["none"])[-1]
    if scope != "none":
        refuse(where, "inference CUDA graphs need CUDA graphs",
               f"--inference-cuda-graph-scope {scope} without --cuda-graph-impl local, which is not modelled "
               f"(Megatron: Invalid inference CUDA graph scope '{scope}' for --cuda-graph-impl='none'.); give none "
               f"or leave it out")
    for flag in ("--inference-fuse-tp-communication", "--inference-disable-triton-nvls-kernels"):
        if flag in others:
            refuse(where, "inference kernels need the inference-optimized layers",
                   f"{flag} without --transformer-impl inference_optimized, which is not modelled (Megatron: "
                   f"{flag[2:].replace('-', '_')} is only supported for inference_optimized transformer "
                   f"implementation.); leave it out")


def _data_loading(a: argparse.Namespace, others: dict, where: str) -> None:
    """The dataset builder's threads and the fill-in-the-middle dataset (``validate_args``)."""
    threads = given(others, "--num-dataset-builder-threads", int, where)
    if threads is not None and threads <= 0:
        refuse(where, "dataset builder threads",
               f"--num-dataset-builder-threads {threads} (Megatron: assert args.num_dataset_builder_threads > 0); "
               f"give 1 or more")
    if "--fim-data" not in others:
        return
    if "--mock-data" in others:
        refuse(where, "fill-in-the-middle data is real data",
               "--fim-data with --mock-data (Megatron: Mock dataset is not supported with FIM dataset.); give "
               "--data-path")
    for flag in ("--fim-rate", "--fim-spm-rate"):
        if given(others, flag, float, where) == 0:  # argparse default 0.5; Megatron asserts it non-zero
            refuse(where, "fill-in-the-middle rates",
                   f"--fim-data with {flag} 0 (Megatron: {flag} should be specified.); give a rate above 0")


def _evaluation_batch(a: argparse.Namespace, gpus: int, others: dict, where: str) -> None:
    """``--eval-global-batch-size`` and ``--eval-micro-batch-size`` (Megatron-LM since 2026-04;
    by default the training's batch and micro-batch; evaluation does not change a training
    step's time): ``validate_args`` asserts the one a multiple of the other times dp."""
    if "--eval-global-batch-size" not in others and "--eval-micro-batch-size" not in others:
        return
    dp = data_parallel(a, gpus)
    total = _count(others, "--eval-global-batch-size", where) or global_batch(a, gpus)
    micro = _count(others, "--eval-micro-batch-size", where) or a.micro_batch_size
    if total % (micro * dp):
        refuse(where, "evaluation batch divisible by its micro-batch x dp",
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
