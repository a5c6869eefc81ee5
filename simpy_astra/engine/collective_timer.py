"""What a run's collective timer declares: the collectives it times whole, by their members
alone, in place of the algorithms a system names for them.

A cluster preset's run times its all-reduces, reduce-scatters and all-gathers as NCCL's model
does (:class:`~simpy_astra.engine.nccl_collectives.NcclAllReduce`; its broadcasts too, which no
system algorithm runs); the system's ``*-implementation`` algorithms for those never run. Whoever reasons about those fields
(symmetry folding, which may move an NPU only where the algorithms that run commute with the
move) asks the timer what it replaces, never whether the run is a preset's.
"""

from __future__ import annotations

from typing import Any, Protocol


class CollectiveTimer(Protocol):
    """Times some collectives in closed form (``NetworkConfig.nccl``)."""

    #: the collective kinds (``ALL_REDUCE``...) it times by their members alone: the algorithms
    #: a system names for these are never run
    replaces_algorithms: frozenset[str]

    def rendezvous(self, simulated: Any) -> Any:
        """One run's timed collectives, ``simulated`` the NPUs it simulates (each NPU issues its
        own; ``npu.complete_soon(node_id)`` is called when one is done)."""
        ...


def replaced_algorithms(timer: CollectiveTimer | None) -> frozenset[str]:
    """The collective kinds whose system algorithms ``timer`` (None: every collective played as
    messages) never runs."""
    return frozenset() if timer is None else timer.replaces_algorithms
