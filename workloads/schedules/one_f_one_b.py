"""PipeDream-Flush (1F1B), Megatron-LM's schedule without virtual stages."""

from __future__ import annotations

from simpy_astra.workloads.schedules.task import Kind, Task


def one_f_one_b(stage: int, pp: int, micro_batches: int, chunks: int = 1) -> list[Task]:
    """``pp - stage - 1`` warm-up forwards, then one forward and one backward in turn, then the
    cool-down backwards: a stage holds at most ``pp - stage`` micro-batches' activations."""
    if chunks != 1:
        raise ValueError(f"1F1B runs one chunk per stage, not {chunks} (use interleaved-1f1b)")
    warmup = min(pp - stage - 1, micro_batches)
    order = [Task(Kind.FORWARD, m, 0) for m in range(warmup)]
    for i in range(micro_batches - warmup):
        order += [Task(Kind.FORWARD, warmup + i, 0), Task(Kind.BACKWARD, i, 0)]
    order += [Task(Kind.BACKWARD, m, 0) for m in range(micro_batches - warmup, micro_batches)]
    return order
