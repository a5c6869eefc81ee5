"""A pipeline schedule's unit of work: one micro-batch through one model chunk, in one
direction. The backward is one task, or two (input gradient, then weight gradient) for
schedules that split it to fill bubbles (zero-bubble, DualPipe)."""

from __future__ import annotations

import inspect
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


class PassCosts(NamedTuple):
    """How long one micro-batch's pass through one chunk takes, each way (seconds, or any one
    unit): what a schedule that builds its order by replaying the pipeline may take as
    ``costs`` (as zero-bubble schedules are built from profiled times)."""

    forward_s: float
    input_s: float  # the input gradient (the whole backward, if not split)
    weight_s: float


#: every pass one unit long, the zero-bubble paper's assumption
UNIT = PassCosts(1.0, 1.0, 1.0)


#: how a schedule places the model's chunks on the stages: Megatron's loop (chunk ``c`` of stage
#: ``s`` is the model's ``c pp + s``-th) or a V, whose odd chunks run back up the pipeline
#: (chunk 1 of stage ``s`` is the model's ``2 pp - 1 - s``-th: the first stage holds the
#: model's first and last chunks), as zero-bubble V schedules place them. A schedule says V by
#: an attribute: ``fn.chunk_placement = "v"``.
LOOP, V = "loop", "v"
PLACEMENTS = (LOOP, V)


def takes_costs(schedule: object) -> bool:
    """``schedule`` builds its order from the passes' costs (it has a ``costs`` parameter)."""
    try:
        return "costs" in inspect.signature(schedule).parameters
    except (TypeError, ValueError):
        return False


def overlaps_gradient_sends(schedule: object) -> bool:
    """``schedule`` waits for a gradient send only after its stage's next backward when Megatron's
    ``overlap_p2p_comm`` is on (interleaved 1F1B's ``pp_post_backward``); otherwise each is
    waited at once. A schedule says so by an attribute: ``fn.overlap_p2p_comm = True``."""
    return getattr(schedule, "overlap_p2p_comm", False) is True


def placement(schedule: object) -> str:
    """The chunk placement ``schedule`` runs on (:data:`LOOP` unless it says :data:`V`)."""
    return getattr(schedule, "chunk_placement", LOOP)


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
