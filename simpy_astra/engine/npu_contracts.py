"""What each part of an NPU reads of the NPU it is part of (its contract), in one place.

:class:`~simpy_astra.engine.npu.Npu` is made of parts (mixins): its communication
(:class:`~simpy_astra.engine.npu_communication.NpuCommunication`), what it waits on
(:class:`~simpy_astra.engine.npu_waiting.NpuWaiting`). Each part names its contract here as
its base: type checkers read the part against the contract, and at run time the base is
``object``, so a part is a plain class (no Protocol machinery in an NPU's attribute lookups).
A test holds a built NPU to each contract (tests/test_npu_parts.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from simpy_astra.config import SystemConfig
    from simpy_astra.engine.collective_plans import CollectivePlanner
    from simpy_astra.engine.events import NpuClock
    from simpy_astra.engine.statistics import NpuStatistics
    from simpy_astra.engine.system_layer import SystemLayer
    from simpy_astra.network import Network


class RunServices(Protocol):
    """What an NPU's parts ask of the run around it (:class:`~simpy_astra.engine.npu.NpuServices`
    is it; declared here, as that module imports the parts)."""

    total_npus: int
    network: Network
    planner: CollectivePlanner
    #: a cluster preset's collectives as NCCL times them, else None
    nccl: Any


@runtime_checkable
class CommunicatingNpu(Protocol):
    """What :class:`~simpy_astra.engine.npu_communication.NpuCommunication` reads of the NPU it
    is part of: the contract :class:`~simpy_astra.engine.npu.Npu` keeps, setting each in
    ``__init__`` (a test holds a built NPU to it)."""

    #: the NPU's rank, and the trace file its errors name
    npu_id: int
    source: str
    #: the run around it (network, planner, NCCL timing), its clock, its system layer and config
    services: RunServices
    clock: NpuClock
    system: SystemLayer
    config: SystemConfig
    #: its own views of communicator groups (pg id -> group), which METADATA nodes add to
    groups: dict[int, Any]
    #: each collective issued, when the run checks them against the links; else None
    collective_log: list | None

    def complete_soon(self, node_id: int) -> None:
        """Finish node ``node_id`` at the next issue pass."""


@runtime_checkable
class WaitingNpu(Protocol):
    """What :class:`~simpy_astra.engine.npu_waiting.NpuWaiting` reads of the NPU it is part of:
    the contract :class:`~simpy_astra.engine.npu.Npu` keeps, setting each in ``__init__``
    (``failed_ns`` in ``NpuFaults``; a test holds a built NPU to it)."""

    npu_id: int
    #: the run around it (its planner names a collective's group)
    services: RunServices
    #: its graph's nodes by id, each node's dependencies not yet finished, the ready ids (heaps
    #: per slot class), the nodes in flight (``stats.starts``) and how many have finished
    nodes: dict[int, Any]
    parents_left: dict[int, int]
    ready: list[list[int]]
    stats: NpuStatistics
    completed: int
    #: its own views of communicator groups (pg id -> group)
    groups: dict[int, Any]
    #: when it failed (``NpuFaults.fail``), else None (its default there, which this states for
    #: type checkers: ``NpuFaults`` comes after this part among ``Npu``'s bases)
    failed_ns: float | None = None


if TYPE_CHECKING:  # type checkers read each part against its contract; at run time it is a plain class
    CommunicatingPart = CommunicatingNpu
    WaitingPart = WaitingNpu
else:
    CommunicatingPart = WaitingPart = object
