"""The sizes Megatron-LM derives from a command line's parallel layout and batch flags: the
data-parallel size (what tp x pp x cp leave of the GPUs) and the global batch (by default one
micro-batch per data-parallel rank). One definition for the rules that check them and the job
built from them."""

from __future__ import annotations

import argparse


def data_parallel(a: argparse.Namespace, gpus: int) -> int:
    """Data-parallel ranks: the GPUs over tensor x pipeline x context parallelism."""
    return gpus // (a.tensor_model_parallel_size * a.pipeline_model_parallel_size * a.context_parallel_size)


def global_batch(a: argparse.Namespace, gpus: int) -> int:
    """``--global-batch-size``, else Megatron's default: one micro-batch per data-parallel rank."""
    return a.global_batch_size or a.micro_batch_size * data_parallel(a, gpus)
