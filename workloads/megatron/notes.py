"""What Megatron-LM runs on, of a command line it takes, that the step's figures alone would
not tell: one warning line each, naming the argument and the fix.

Megatron's own warnings (``validate_args``: sequence parallelism at tp 1 turned off), and
arguments it takes in silence that change nothing in the step timed here: hierarchical
context-parallel sizes beside a ``--cp-comm-type`` without ``a2a+p2p``, ``--fp8-format`` and
``--tp-comm-overlap`` on Megatron's own layers (only Transformer Engine's read them), and a
batch-size ramp, whose steps before its end are smaller than the one timed. A study that sweeps
such an argument should not read a flat line as a finding.
"""

from __future__ import annotations

import argparse

from simpy_astra.workloads.megatron.housekeeping_rules import global_batch


def notes(a: argparse.Namespace, gpus: int, others: dict[str, list[str]], where: str, te: bool) -> tuple[str, ...]:
    """The warnings of arguments ``a`` (and the unmodelled ``others``) that passed the rules,
    on ``gpus`` GPUs; ``te``: the layers are Transformer Engine's."""
    out = []
    if a.sequence_parallel and a.tensor_model_parallel_size == 1:
        out.append(f"{where}: --sequence-parallel with --tensor-model-parallel-size 1: Megatron turns it off "
                   f"('Disabling sequence parallelism because tensor model parallelism is disabled') and runs "
                   f"without it, as this step does; remove --sequence-parallel, or set tp 2 or more")
    if a.hierarchical_context_parallel_sizes and "a2a+p2p" not in a.cp_comm_type:
        out.append(f"{where}: --hierarchical-context-parallel-sizes changes nothing with --cp-comm-type "
                   f"{' '.join(a.cp_comm_type)}: only a2a+p2p layers use the two levels; give --cp-comm-type "
                   f"a2a+p2p, or remove the sizes")
    if not te and a.fp8_format is not None:
        out.append(f"{where}: --fp8-format {a.fp8_format} changes nothing with Megatron's own layers (--transformer-impl "
                   f"local): Transformer Engine's fp8_autocast casts only its own modules, so the step runs in "
                   f"{'fp16' if a.fp16 else 'bf16' if a.bf16 else 'fp32'}, as Megatron runs it; use --transformer-impl "
                   f"transformer_engine for FP8 layers, or remove --fp8-format")
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
