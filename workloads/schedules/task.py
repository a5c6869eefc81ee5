"""A pipeline schedule's unit of work: one micro-batch through one model chunk, in one
direction. The backward is one task, or two (input gradient, then weight gradient) for
schedules that split it to fill bubbles (zero-bubble, DualPipe)."""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple, Protocol


class Kind(str, Enum):
    """What a task computes; the values are the one-letter names traces use."""

    FORWARD = "F"
    BACKWARD = "B"  # input and weight gradients together
    BACKWARD_INPUT = "I"  # the input gradient only (what the previous stage waits for)
    BACKWARD_WEIGHT = "W"  # the weight gradient only (nobody waits for it)


class Task(NamedTuple):
    """``kind`` of micro-batch ``micro_batch`` through this stage's chunk ``chunk``."""

    kind: Kind
    micro_batch: int
    chunk: int


class Schedule(Protocol):
    """The task order of pipeline stage ``stage`` of ``pp``, for ``micro_batches`` micro-batches
    through ``chunks`` model chunks per stage."""

    def __call__(self, stage: int, pp: int, micro_batches: int, chunks: int) -> list[Task]: ...


def in_flight(order: list[Task], chunk: int | None = None) -> int:
    """The most chunk passes ``order`` holds activations for at once (of ``chunk`` only, if
    given): a forward stores its activations until its micro-batch's backward, or until its
    weight gradient when the backward is split (that needs the layers' inputs too)."""
    held = peak = 0
    for task in order:
        if chunk is not None and task.chunk != chunk:
            continue
        if task.kind is Kind.FORWARD:
            held += 1
            peak = max(peak, held)
        elif task.kind is not Kind.BACKWARD_INPUT:
            held -= 1
    return peak
