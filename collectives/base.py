"""The interface between the system layer and a collective algorithm.

A collective algorithm runs one *phase* of one chunk on a logical group of NPUs. It is a
generator function ``algorithm(ctx)`` written as a SimPy process: it yields events and is
resumed when they happen; the phase ends when the generator returns::

    def my_ring(ctx):
        n, i = len(ctx.members), ctx.index
        right, left = ctx.members[(i + 1) % n], ctx.members[(i - 1) % n]
        for _ in range(n - 1):
            ctx.send(right, ctx.size_bytes // n)
            yield ctx.recv(left, ctx.size_bytes // n)
            yield ctx.endpoint(reduce_bytes=ctx.size_bytes // n)

Everything an algorithm may ask of the system layer is on :class:`PhaseContext`. Its
events resume the algorithm in the instant they happen (a phase is a process of its own), which
is how the native algorithms keep ASTRA-sim's exact order; ``ctx.env.timeout(t)``,
``ctx.env.all_of([...])`` and any other SimPy event work too (see
:mod:`simpy_astra.engine.phase_process`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import simpy

if TYPE_CHECKING:
    from simpy_astra.collectives.logical import LogicalDim

ALL_REDUCE = "all_reduce"
REDUCE_SCATTER = "reduce_scatter"
ALL_GATHER = "all_gather"
ALL_TO_ALL = "all_to_all"
COLLECTIVE_KINDS = (ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, ALL_TO_ALL)

CLOCKWISE = 1
ANTICLOCKWISE = -1

AlgorithmRun = Generator[simpy.Event, Any, Any]


class PhaseContext(Protocol):
    """What a collective phase may ask of its NPU's system layer."""

    env: simpy.Environment
    npu_id: int
    #: collective kind of this phase (one of COLLECTIVE_KINDS)
    kind: str
    #: bytes this phase starts with
    size_bytes: int
    #: NPU ids of the logical ring, in ring order; ``members[index] == npu_id``
    members: tuple[int, ...]
    index: int
    #: CLOCKWISE (towards index+1) or ANTICLOCKWISE
    direction: int
    #: window of ``directK`` algorithms (None = unlimited)
    window: int | None
    #: True for rings built from a communicator-group subset (ASTRA-sim's "Local" rings)
    local: bool

    def send(self, dst: int, size_bytes: int, tag: int | None = None) -> simpy.Event:
        """Send ``size_bytes`` to NPU ``dst``: on this chunk's tag, or on a workload ``tag``.
        The event fires when the message has arrived (native algorithms need not wait)."""

    def post(self, dst: int, size_bytes: int, tag: int | None = None) -> None:
        """:meth:`send` without an event, for an algorithm that never waits on its sends'
        arrival (every native one): the same message, one event less."""

    def recv(self, src: int, size_bytes: int, tag: int | None = None) -> simpy.Event:
        """Post a receive from NPU ``src``; the event fires when the message is here."""

    def endpoint(self, reduce_bytes: int = 0) -> simpy.Event:
        """Fires after the endpoint delay, plus the time to reduce ``reduce_bytes`` in local
        memory when it is non-zero (ASTRA-sim's per-packet processing)."""

    def wait(self, delay_ns: int) -> simpy.Event:
        """Fires after ``delay_ns``, in this NPU's order of events (like ASTRA-sim's
        ``register_event``); ``env.timeout`` waits in SimPy's global order instead."""

    def spawn(self, generator: AlgorithmRun) -> simpy.Event:
        """Run a sub-process of this phase, starting now; fires with its return value."""

    def signal(self) -> simpy.Event:
        """A new event the algorithm fires itself (``.fire(value)``), e.g. "all done"."""


@dataclass(frozen=True)
class CollectiveAlgorithm:
    """A registered algorithm: how to run a phase and how big its result is."""

    name: str
    run: Callable[..., AlgorithmRun]
    #: bytes a phase of ``kind`` on ``n`` members leaves when it started with ``size``
    final_size: Callable[[str, int, int], int]
    kinds: frozenset[str] = field(default_factory=lambda: frozenset(COLLECTIVE_KINDS))
    #: the logical shape beyond the ring order, built from a dimension once per phase: returns
    #: the extra arguments of ``run`` (None: ``run(ctx)`` alone; see
    #: :mod:`simpy_astra.collectives.logical`)
    logical: Callable[[LogicalDim], tuple] | None = None
    #: may run on a communicator group that is a subset of the NPUs
    group_subsets: bool = True
    #: peers depend only on ring-position differences (``index +- k``), so rotating the
    #: ring rotates every phase; symmetry folding may then use rotations of that dimension
    rotation_symmetric: bool = False
    #: peers are ``index XOR k`` (power-of-two groups), so relabelling positions by a XOR
    #: relabels every phase; symmetry folding may then use XOR translations of NPU ids
    xor_symmetric: bool = False
    #: the messages one member sends in one phase, ``traffic(shape) -> [(peer position,
    #: bytes), ...]`` for a :class:`PhaseShape`: what the link-bandwidth floor of the bound check
    #: (:mod:`simpy_astra.engine.bandwidth_floor`) adds up; None: not known, no floor is derived
    traffic: Callable[[PhaseShape], list[tuple[int, int]]] | None = None

    def __post_init__(self) -> None:
        """A kind misspelt (``"allreduce"``) made the algorithm implement nothing, and the
        system config that chose it was told only that it does not implement all_reduce."""
        unknown = sorted(str(k) for k in self.kinds if k not in COLLECTIVE_KINDS)
        if unknown:
            raise ValueError(f"collective algorithm '{self.name}': kinds {', '.join(map(repr, unknown))} "
                             f"{'is' if len(unknown) == 1 else 'are'} no collective; kinds are "
                             f"{', '.join(COLLECTIVE_KINDS)} (ALL_REDUCE, ... in simpy_astra.collectives.base)")


@dataclass(frozen=True)
class PhaseShape:
    """A phase without an NPU or a clock: what an algorithm's ``traffic`` reads (the attributes
    of :class:`PhaseContext` its peer plans use). ``members`` are ring positions ``0..n-1``."""

    kind: str
    size_bytes: int
    members: tuple[int, ...]
    index: int
    direction: int = CLOCKWISE
    window: int | None = None
    local: bool = False


def ring_final_size(kind: str, size: int, n: int) -> int:
    """Result size of ring-shaped algorithms: AG multiplies, RS divides, AR/A2A keep."""
    if kind == ALL_GATHER:
        return size * n
    if kind == REDUCE_SCATTER:
        return size // n
    return size


class CollectiveError(Exception):
    """An algorithm reached a state the reference treats as fatal."""
