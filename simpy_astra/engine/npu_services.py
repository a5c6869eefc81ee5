"""What an NPU may ask of the run around it (:class:`NpuServices`, one per run or job), and
the one place an NPU is assembled from its trace on that run (:meth:`NpuServices.build_npu`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import simpy

from simpy_astra.engine.events import NpuClock
from simpy_astra.engine.npu import Npu
from simpy_astra.engine.system_layer import SystemLayer
from simpy_astra.infra.units import local_mem_gbps_to_bytes_per_s, tflops_to_flops
from simpy_astra.workloads.chakra import validate_graph

if TYPE_CHECKING:
    from simpy_astra.config import SystemConfig
    from simpy_astra.engine.collective_plans import CollectivePlanner
    from simpy_astra.engine.remote_memory import RemoteMemory
    from simpy_astra.network import Network


@dataclass
class NpuServices:
    """What an NPU may ask of the run around it (shared by every NPU of a run)."""

    config: SystemConfig
    total_npus: int
    network: Network
    remote_memory: RemoteMemory
    planner: CollectivePlanner
    local_mem_bytes_per_s: float
    peak_flops: float
    #: called once when the NPU's graph has finished (its ``report`` is set)
    finished: Callable[[Npu], None]
    #: called with the error an NPU's process raises
    failed: Callable[[Exception], None]
    #: a cluster preset's all-reduces as NCCL times them (:class:`~simpy_astra.engine.nccl_collectives.
    #: NcclRendezvous`, one per run); None (every ASTRA-sim input): played on the network
    nccl: Any = None

    def for_hardware(self, hw: SystemConfig) -> NpuServices:
        """These services for an NPU with its own hardware (``npu-groups``): its config, memory
        bandwidth and peak compute."""
        return replace(self, config=hw, local_mem_bytes_per_s=local_mem_gbps_to_bytes_per_s(hw.local_mem_bw_gbps),
                       peak_flops=tflops_to_flops(hw.peak_perf_tflops))

    def build_npu(self, rank: int, device: int, trace: tuple[str, list], dims: list[int], queues_per_dim: Any,
                  env: simpy.Environment) -> Npu:
        """Rank ``rank`` of the run (or of a job) on physical NPU ``device``: its graph checked,
        its clock, its system layer on this run's network, its hardware (its ``npu-groups``
        entry, if any) and its file communicator groups. The one place an NPU is assembled."""
        validate_graph(*trace)
        hw = self.config.hardware_of(device)
        clock = NpuClock(env)
        system = SystemLayer(rank, clock, self.network, hw, dims, queues_per_dim, self.planner.customs.phase)
        path, nodes = trace
        npu = Npu(rank, nodes, path, self if hw is self.config else self.for_hardware(hw), clock, system)
        npu.device_id = device
        npu.groups.update(self.planner.file_groups_of(rank))
        return npu
