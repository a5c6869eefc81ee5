"""The interface between the system layer and a collective algorithm.

A collective algorithm runs one *phase* of one chunk on a logical group of NPUs. It is a
generator function ``algorithm(ctx)`` driven by the system layer: each ``yield`` waits for
the next event, which arrives through ``generator.send(event)``. The first event is
:data:`INIT`; later ones are :data:`RECEIVED` (a posted receive completed),
:data:`GENERAL` (an endpoint/reduction delay requested with ``ctx.after_endpoint``
elapsed) or whatever token the algorithm passed to ``ctx.send_native`` /
``ctx.recv_native`` / ``ctx.wait``. The algorithm ends the phase with ``ctx.finish()``
and then returns.

Everything an algorithm may ask of the system layer is on :class:`PhaseContext`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Protocol

INIT = "init"
RECEIVED = "received"
GENERAL = "general"

ALL_REDUCE = "all_reduce"
REDUCE_SCATTER = "reduce_scatter"
ALL_GATHER = "all_gather"
ALL_TO_ALL = "all_to_all"
COLLECTIVE_KINDS = (ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, ALL_TO_ALL)

CLOCKWISE = 1
ANTICLOCKWISE = -1

AlgorithmRun = Generator[None, Any, None]


class PhaseContext(Protocol):
    """What a collective phase may ask of its NPU's system layer."""

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

    def send(self, dst: int, size_bytes: int) -> None:
        """Send ``size_bytes`` to NPU ``dst`` on this collective's tag (no completion event)."""

    def recv(self, src: int, size_bytes: int, token: Any = RECEIVED) -> None:
        """Post a receive from NPU ``src``; its completion delivers ``token``."""

    def after_endpoint(self, processed_bytes: int = 0, token: Any = GENERAL) -> None:
        """Deliver ``token`` after the endpoint delay, plus the reduction delay of
        ``processed_bytes`` when it is non-zero."""

    def send_native(self, dst: int, size_bytes: int, tag: int, token: Any) -> None:
        """Point-to-point send on a workload tag; ``token`` is delivered on arrival."""

    def recv_native(self, src: int, size_bytes: int, tag: int, token: Any) -> None:
        """Point-to-point receive on a workload tag; ``token`` is delivered on arrival."""

    def wait(self, delay_ns: int, token: Any) -> None:
        """Deliver ``token`` after ``delay_ns``."""

    def finish(self) -> None:
        """End this phase: the chunk moves on to its next phase (same tick)."""


@dataclass(frozen=True)
class CollectiveAlgorithm:
    """A registered algorithm: how to run a phase and how big its result is."""

    name: str
    run: Callable[..., AlgorithmRun]
    #: bytes a phase of ``kind`` on ``n`` members leaves when it started with ``size``
    final_size: Callable[[str, int, int], int]
    kinds: frozenset[str] = field(default_factory=lambda: frozenset(COLLECTIVE_KINDS))
    #: "ring" (members in ring order) or "tree" (double binary tree)
    topology: str = "ring"
    #: peers depend only on ring-position differences (``index +- k``), so rotating the
    #: ring rotates every phase; symmetry folding may then use rotations of that dimension
    rotation_symmetric: bool = False


def ring_final_size(kind: str, size: int, n: int) -> int:
    """Result size of ring-shaped algorithms: AG multiplies, RS divides, AR/A2A keep."""
    if kind == ALL_GATHER:
        return size * n
    if kind == REDUCE_SCATTER:
        return size // n
    return size


class CollectiveError(Exception):
    """An algorithm reached a state the reference treats as fatal."""
