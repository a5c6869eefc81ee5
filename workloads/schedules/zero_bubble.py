"""ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): 1F1B whose stages after
the first split some backwards into the input gradient and a weight gradient run later, in
the bubbles 1F1B leaves. Its step is ``m (tf + ti + tw) + (p - 1)(tf + ti - tw)`` against
1F1B's ``(m + p - 1)(tf + ti + tw)``, with no stage holding more micro-batches than 1F1B's
first."""

from __future__ import annotations

from collections import deque

from simpy_astra.workloads.schedules.task import Kind, Task


def zb_h1(stage: int, pp: int, micro_batches: int, chunks: int = 1) -> list[Task]:
    """The order of the authors' Megatron-LM patch (``zb-h1-quick-start``, 2023-12-21): 1F1B's
    warm-up; in the steady state stage ``r`` splits the backwards of its first ``r``
    micro-batches and of its last, keeping their weight gradients in a queue (the others run
    whole); the last steady backward and each cool-down one is an input gradient followed by
    the queue's oldest weight gradient, once ``r`` of them have been queued; the rest at the
    end. The first stage runs plain 1F1B."""
    if chunks != 1:
        raise ValueError(f"ZB-H1 runs one chunk per stage, not {chunks} (use zb-v for two chunks in a V, or "
                         f"interleaved-1f1b)")
    warmup = min(pp - stage - 1, micro_batches)
    steady = micro_batches - warmup
    order = [Task(Kind.FORWARD, m, 0) for m in range(warmup)]
    queued: deque[int] = deque()

    def split(m: int, pop: bool) -> None:
        order.append(Task(Kind.BACKWARD_INPUT, m, 0))
        queued.append(m)
        if pop:
            order.append(Task(Kind.BACKWARD_WEIGHT, queued.popleft(), 0))

    for i in range(steady):
        order.append(Task(Kind.FORWARD, warmup + i, 0))
        last = i == steady - 1
        if stage > 0 and (i < stage or last):
            split(i, last and i >= stage)
        else:
            order.append(Task(Kind.BACKWARD, i, 0))
    for i in range(warmup):
        if stage > 0:
            split(steady + i, steady + i >= stage)
        else:
            order.append(Task(Kind.BACKWARD, steady + i, 0))
    return order + [Task(Kind.BACKWARD_WEIGHT, m, 0) for m in queued]
