"""Megatron-LM's interleaved 1F1B (Narayanan et al., SC'21, section 2.2)."""

from __future__ import annotations

from simpy_astra.workloads.schedules.task import Kind, Task


def interleaved(stage: int, pp: int, micro_batches: int, chunks: int) -> list[Task]:
    """Each stage holds ``chunks`` model chunks; micro-batches go through the chunks in groups
    of ``pp``; ``(pp - stage - 1) * 2 + (chunks - 1) * pp`` warm-up forwards (all of them when
    there are exactly ``pp`` micro-batches)."""
    if chunks < 2:  # Megatron-LM then runs 1F1B (a virtual pipeline size of 1 is none)
        raise ValueError(f"interleaved 1F1B interleaves 2 or more model chunks per stage, not {chunks} (use 1f1b, or "
                         f"give --num-layers-per-virtual-pipeline-stage)")
    total = micro_batches * chunks
    group = pp * chunks

    def task(kind: Kind, k: int) -> Task:
        chunk = (k % group) // pp
        if kind is Kind.BACKWARD:
            chunk = chunks - 1 - chunk
        return Task(kind, (k // group) * pp + k % pp, chunk)

    warmup = total if micro_batches == pp else min((pp - stage - 1) * 2 + (chunks - 1) * pp, total)
    order = [task(Kind.FORWARD, k) for k in range(warmup)]
    for i in range(total - warmup):
        order += [task(Kind.FORWARD, warmup + i), task(Kind.BACKWARD, i)]
    order += [task(Kind.BACKWARD, k) for k in range(total - warmup, total)]
    return order


interleaved.overlap_p2p_comm = True  # type: ignore[attr-defined]  # Megatron-Core's pp_post_backward
