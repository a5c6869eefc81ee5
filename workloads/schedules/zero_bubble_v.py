"""ZB-V (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, section 6): two chunks a
stage placed in a V (stage ``s`` holds the model's ``s``-th and ``(2p - 1 - s)``-th chunks, so
the first stage holds both ends and the turn at the last stage needs no transfer), backwards
split into input and weight gradients, weight gradients run where a stage would wait.

As the authors build theirs, the order comes from replaying the pipeline with the passes'
costs (:class:`~.task.PassCosts`; each one unit, their hand-made schedule's assumption,
without them): whenever a stage is free it starts, by a priority of its input gradients and
forwards (of either chunk), what is ready, a new micro-batch only while its chunk passes held
and those coming back for the second chunk leave room; else its oldest queued weight
gradient. A few priorities and rooms are tried and the shortest replay in which no stage
holds more than 1F1B's first stage (``2p`` chunk passes) is kept: the authors search their
schedule's parameters likewise. It is ours, not their search: with unit costs it reaches the
bound a test derives (the last stage cannot begin before ``p - 1`` units: ``6m + p - 1``) up
to 4 stages, and leaves 1.3 (8 stages) and 1.5 (16) times its ``p - 1`` bubble, under ZB-H1's
``2 (p - 1)``. The replay leaves out the sends and the collectives inside a pass, and a
stage keeps its order whatever arrives late: a 16-stage job runs slower than ZB-H1's, at
tp 1 too (docs/megatron.md gives the figures).
"""

from __future__ import annotations

import functools
import itertools
from collections import deque

from simpy_astra.workloads.schedules.task import UNIT, Kind, PassCosts, Task, V


def zb_v(stage: int, pp: int, micro_batches: int, chunks: int = 2, costs: PassCosts = UNIT) -> list[Task]:
    """Stage ``stage``'s order (see the module), built for the passes' ``costs``."""
    if chunks != 2:
        raise ValueError(f"ZB-V runs two chunks per stage (a V), not {chunks}: give "
                         f"--virtual-pipeline-model-parallel-size 2")
    return list(_orders(pp, micro_batches, costs)[stage])


zb_v.chunk_placement = V  # type: ignore[attr-defined]


#: the priorities tried: input gradients (I) and forwards (F) of the first (0) or second (1)
#: chunk, the first ready one taken
PRIORITIES = ("I1 I0 F1 F0", "I1 F1 F0 I0", "I1 F1 I0 F0", "I0 F1 F0 I1", "F1 I1 F0 I0", "I0 I1 F0 F1")


@functools.cache
def _orders(pp: int, m: int, costs: PassCosts = UNIT) -> tuple[tuple[Task, ...], ...]:
    """Every stage's order: the shortest of the replays (cached: each stage asks)."""
    best: tuple[float, list[list[Task]]] | None = None
    for priority, every_stage, room in itertools.product(PRIORITIES, (False, True), (2 * pp - 1, 2 * pp)):
        replay = _Replay(pp, m, costs, priority, every_stage, room)
        orders = replay.run()
        if orders is not None and (best is None or replay.end < best[0]):
            best = (replay.end, orders)
    if best is None:
        raise ValueError(f"ZB-V found no order for {pp} stages and {m} micro-batches within 2p chunk passes")
    return tuple(tuple(order) for order in best[1])


class _Replay:
    """The pipeline run with the passes' costs under one priority: who is done when, and what
    each stage holds. A first-chunk forward is admitted while the stage's chunk passes held and
    coming back stay under ``room`` (``2p - 1`` or ``2p``), at the first stage or, with
    ``every_stage``, at each."""

    def __init__(self, pp: int, m: int, costs: PassCosts, priority: str, every_stage: bool, room: int) -> None:
        self.pp, self.m, self.last = pp, m, 2 * pp - 1  # the model's last chunk index
        self.cost = {Kind.FORWARD: costs.forward_s, Kind.BACKWARD_INPUT: costs.input_s,
                     Kind.BACKWARD_WEIGHT: costs.weight_s}
        self.priority = [(word[0], int(word[1])) for word in priority.split()]
        self.every_stage, self.room = every_stage, room
        self.forward_end: dict[tuple[int, int], float] = {}  # (chunk index, micro-batch) -> end
        self.input_end: dict[tuple[int, int], float] = {}
        self.next_pass = {kind: [[0, 0] for _ in range(pp)] for kind in "FI"}  # per stage and chunk
        self.held = [0] * pp  # chunk passes a stage keeps activations of (until their weight gradient)
        self.returning = [0] * pp  # first-chunk passes whose second-chunk forward is still to come
        self.queued: list[deque[tuple[int, int]]] = [deque() for _ in range(pp)]
        self.end = 0.0

    def index(self, stage: int, chunk: int) -> int:
        return stage if chunk == 0 else self.last - stage

    def run(self) -> list[list[Task]] | None:
        """At each time a pass ends, every free stage starts what :meth:`pick` gives it. None
        if the stages deadlock or one holds more than ``2p`` chunk passes."""
        orders: list[list[Task]] = [[] for _ in range(self.pp)]
        free, t = [0.0] * self.pp, 0.0
        busy = set(range(self.pp))  # stages with passes still to run (6 m each)
        while busy:
            for s in sorted(busy):  # in stage order: a stage may start what one before it ended
                task = self.pick(s, t) if free[s] <= t else None
                if task is not None:
                    free[s] = self.start(s, task, t)
                    orders[s].append(task)
                    if self.held[s] > 2 * self.pp:
                        return None
                    if len(orders[s]) == 6 * self.m:
                        busy.discard(s)
            later = [f for f in free if f > t]
            if busy and not later:
                return None
            t = min(later, default=t)
        self.end = max(free)
        return orders

    @staticmethod
    def done(ends: dict[tuple[int, int], float], g: int, mb: int, t: float) -> bool:
        end = ends.get((g, mb))
        return end is not None and end <= t

    def pick(self, s: int, t: float) -> Task | None:
        """What stage ``s`` starts at time ``t`` (None: it waits)."""
        for kind, c in self.priority:
            mb, g = self.next_pass[kind][s][c], self.index(s, c)
            if mb >= self.m:
                continue
            if kind == "I" and self.done(self.forward_end, g, mb, t) and (
                    g == self.last or self.done(self.input_end, g + 1, mb, t)):
                return Task(Kind.BACKWARD_INPUT, mb, c)
            room = c == 1 or (g > 0 and not self.every_stage) or self.held[s] + self.returning[s] < self.room
            if kind == "F" and room and (g == 0 or self.done(self.forward_end, g - 1, mb, t)):
                return Task(Kind.FORWARD, mb, c)
        if self.queued[s]:
            mb, c = self.queued[s].popleft()
            return Task(Kind.BACKWARD_WEIGHT, mb, c)
        return None

    def start(self, s: int, task: Task, t: float) -> float:
        """Start ``task`` on stage ``s`` at ``t``; when it ends."""
        kind, mb, c = task
        g, end = self.index(s, c), t + self.cost[kind]
        if kind is Kind.FORWARD:
            self.forward_end[(g, mb)] = end
            self.held[s] += 1
            self.returning[s] += 1 if c == 0 else -1
        elif kind is Kind.BACKWARD_INPUT:
            self.input_end[(g, mb)] = end
            self.queued[s].append((mb, c))
        else:
            self.held[s] -= 1
        if kind is not Kind.BACKWARD_WEIGHT:
            self.next_pass[kind.value][s][c] += 1
        return end
