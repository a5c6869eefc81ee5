"""Whether the stages' task orders of a pipeline schedule can all finish together.

Each stage's order is checked alone by the registry (every micro-batch forwarded once, then
backwarded once); orders that are each fine can still wait on each other: stage 0 doing each
micro-batch's backward right after its forward (GPipe without a pipeline) while stage 1 forwards
every micro-batch first waits for ever. The run would then stall after simulating up to that
point and name trace nodes; here the schedule is played out on its own, before any trace is
written, in the dependencies the generators write: a forward of a micro-batch waits for the
previous model chunk's forward of it, a backward (or input gradient) for the next chunk's, a
weight gradient for nothing of other stages (or of the stage's own other chunk, at a V's
turn). Where the chunks sit is the caller's: by default chunk ``c`` of stage ``s`` is the
model's ``c * pp + s`` (Megatron's interleaving).
"""

from __future__ import annotations

from collections.abc import Callable

from simpy_astra.workloads.schedules.task import Kind, Task


def stall(orders: list[list[Task]], index: Callable[[int, int], int] | None = None,
          stage_of: Callable[[int], int] | None = None) -> str:
    """'' when every stage of ``orders`` (stage -> its tasks) runs to its end, else what the
    first stuck stages wait for, in words. ``index(stage, chunk)``: the model chunk a stage's
    chunk is, ``stage_of(index)`` its inverse (default: Megatron's ``chunk * pp + stage``)."""
    pp = len(orders)
    chunks = 1 + max((task[2] for order in orders for task in order), default=0)
    index = index or (lambda stage, chunk: chunk * pp + stage)
    stage_of = stage_of or (lambda g: g % pp)
    last = pp * chunks - 1
    done: set[tuple[str, int, int]] = set()  # ("F" or "B", micro-batch, model chunk)
    at = [0] * pp
    progress = True
    while progress:
        progress = False
        for stage, order in enumerate(orders):
            while at[stage] < len(order):
                kind, mb, chunk = order[at[stage]]
                need = _needs(kind, mb, index(stage, chunk), last)
                if need is not None and need not in done:
                    break
                if kind is not Kind.BACKWARD_WEIGHT:
                    done.add(("F" if kind is Kind.FORWARD else "B", mb, index(stage, chunk)))
                at[stage] += 1
                progress = True
    stuck = [s for s in range(pp) if at[s] < len(orders[s])]
    if not stuck:
        return ""
    waits = []
    for stage in stuck[:2]:
        kind, mb, chunk = orders[stage][at[stage]]
        need = _needs(kind, mb, index(stage, chunk), last)
        assert need is not None
        other, other_chunk = stage_of(need[2]), need[2] // pp
        waits.append(f"stage {stage} at its {kind.name} of micro-batch {mb} (chunk {chunk}) waits for stage "
                     f"{other}'s {'FORWARD' if need[0] == 'F' else 'BACKWARD'} of it (chunk {other_chunk})")
    more = f" ({len(stuck)} stages stuck)" if len(stuck) > 2 else ""
    return "; ".join(waits) + more


def _needs(kind: Kind, mb: int, index: int, last: int) -> tuple[str, int, int] | None:
    """What a task waits for from another stage: the previous chunk's forward of its
    micro-batch, the next chunk's backward (input gradient) of it, or nothing."""
    if kind is Kind.FORWARD:
        return ("F", mb, index - 1) if index > 0 else None
    if kind is Kind.BACKWARD_WEIGHT or index == last:
        return None
    return "B", mb, index + 1
