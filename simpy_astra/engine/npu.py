"""One NPU executing its Chakra graph under ASTRA-sim's workload-layer rules.

Ready nodes are issued in ascending id order whenever something completes. Each NPU has
one CPU slot, one GPU-compute slot and one communication slot (collectives, sends, remote
memory, metadata and invalid nodes); receives need no slot. Nodes that complete at issue
time (INVALID, METADATA, roofline nodes without a tensor) release their children only at
the next issue pass, as in the reference.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import simpy

from simpy_astra.engine.events import NpuClock
from simpy_astra.engine.npu_communication import NpuCommunication
from simpy_astra.engine.npu_faults import NpuFaults
from simpy_astra.engine.npu_waiting import NpuWaiting
from simpy_astra.engine.probes import Probed
from simpy_astra.engine.statistics import (
    COMM,
    CPU,
    GPU,
    INVALID,
    REMOTE_MEM,
    NpuStatistics,
    RooflineOp,
    build_report,
)
from simpy_astra.engine.system_layer import SystemLayer
from simpy_astra.errors import InputError
from simpy_astra.infra.units import local_mem_gbps_to_bytes_per_s, replay_duration_ns, tflops_to_flops
from simpy_astra.workloads.chakra import validate_graph
from simpy_astra.workloads.chakra.types import (
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    INVALID_NODE,
    MEM_LOAD_NODE,
    MEM_STORE_NODE,
    METADATA_NODE,
)

if TYPE_CHECKING:
    from simpy_astra.config import SystemConfig
    from simpy_astra.engine.collective_plans import CollectivePlanner
    from simpy_astra.engine.remote_memory import RemoteMemory
    from simpy_astra.network import Network

# hardware slot classes
SLOT_CPU, SLOT_GPU, SLOT_COMM, SLOT_NONE = 0, 1, 2, 3


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
        entry, if any). The one place an NPU is assembled."""
        validate_graph(*trace)
        hw = self.config.hardware_of(device)
        clock = NpuClock(env)
        system = SystemLayer(rank, clock, self.network, hw, dims, queues_per_dim, self.planner.customs.phase, device)
        path, nodes = trace
        npu = Npu(rank, nodes, path, self if hw is self.config else self.for_hardware(hw), clock, system)
        npu.device_id = device
        return npu


class Npu(NpuCommunication, NpuWaiting, NpuFaults, Probed):
    """Workload layer of one NPU (ASTRA-sim's ``Workload`` + ``HardwareResource``); its
    communication nodes are issued by :class:`~simpy_astra.engine.npu_communication.NpuCommunication`,
    what it waits on told by :class:`~simpy_astra.engine.npu_waiting.NpuWaiting`, its
    stragglers and failures are :class:`~simpy_astra.engine.npu_faults.NpuFaults`. Probe points
    (:mod:`simpy_astra.engine.probes`): ``node_start``, ``node_end``."""

    PROBES = ("node_start", "node_end")
    probe_node_start: list | None = None
    probe_node_end: list | None = None
    #: the NPUs this one stands for in a folded run (set by the Simulation), else None
    stands_for: list[int] | None = None
    #: the job this NPU runs in a multi-job run (its name), else None
    job: str | None = None

    def __init__(self, npu_id: int, nodes: list, source: str, services: NpuServices, clock: NpuClock,
                 system: SystemLayer) -> None:
        self.npu_id = npu_id
        #: the physical NPU it is: ``npu_id`` (its job's rank) unless a job placed it elsewhere
        self.device_id = npu_id
        self.services = services
        self.source = source
        self.clock = clock
        self.system = system
        self.config = services.config
        self.nodes = {n.id: n for n in nodes}
        self.parents_left: dict[int, int] = {}
        self.children: dict[int, list[int]] = {}
        self.ready: list[list[int]] = [[], [], [], []]  # heaps per slot class
        self.ready_count = 0
        self.deferred: list[int] = []
        self.in_pass = False
        self.busy = [False, False, False, False]  # SLOT_NONE's entry is never set
        #: communication streams a trace names (``comm_stream``): each its own slot from 4 on
        self.streams: dict[str, int] = {}
        self.slot_classes = (SLOT_CPU, SLOT_GPU, SLOT_COMM, SLOT_NONE)
        self.ongoing = 0
        self.completed = 0  # nodes finished, read by the progress display
        self.finished = False
        self.gpu_ops_ns = 0
        self.stats = NpuStatistics(npu_id)
        self.memory = None
        if self.config.track_local_mem:  # imported here: most runs do not track memory
            from simpy_astra.engine.memory_tracker import MemoryTracker

            self.memory = MemoryTracker(npu_id)
        #: its own views of communicator groups: those METADATA nodes declare, and the file's it is a
        #: member of once it asks for them (:meth:`~simpy_astra.engine.collective_plans.CollectivePlanner.group_for`)
        self.groups: dict[int, Any] = {}
        self.slot_in_use: dict[int, int] = {}  # node id -> slot class, for nodes in flight
        self.report = None
        self.process = None  # this NPU's SimPy process (see execute); set by the Simulation
        self._node_events: dict[int, Any] = {}  # node id -> event a user waits on
        self.ended_ns: dict[int, int] = {}  # node id -> when it completed
        #: (node id, kind, bytes, plan, involved, first stream id, start ns) of each collective
        #: issued, when the run checks them against the links (:mod:`simpy_astra.engine.bandwidth_floor`)
        self.collective_log: list | None = None
        for n in nodes:
            self.parents_left[n.id] = len(n.deps)
            for d in n.deps:
                self.children.setdefault(d, []).append(n.id)
        for n in nodes:
            if not n.deps:
                self._make_ready(n.id)

    # ------------------------------------------------------------------ dependency tracking
    def slot_of(self, node) -> int:
        if node.get_bool("is_cpu_op", False):
            return SLOT_CPU
        t = node.type
        if t == COMP_NODE:
            return SLOT_GPU
        if t == COMM_RECV_NODE:
            return SLOT_NONE
        if t in (COMM_COLL_NODE, COMM_SEND_NODE) and node.has_attr("comm_stream"):
            return self._stream_slot(node.get_str("comm_stream"))
        return SLOT_COMM

    def _stream_slot(self, name: str) -> int:
        """The slot of communication stream ``name``: nodes of one stream run one at a time in
        id order, as NCCL calls on one CUDA stream; different streams run side by side (ASTRA-sim's
        inputs name none: all their communication shares one slot)."""
        slot = self.streams.get(name)
        if slot is None:
            slot = self.streams[name] = len(self.ready)
            self.ready.append([])
            self.busy.append(False)
            self.slot_classes = (*self.slot_classes, slot)
        return slot

    def _make_ready(self, node_id: int) -> None:
        if self.in_pass:
            self.deferred.append(node_id)
        else:
            heapq.heappush(self.ready[self.slot_of(self.nodes[node_id])], node_id)
        self.ready_count += 1

    def _resolve(self, node_id: int) -> None:
        for child in self.children.get(node_id, ()):
            left = self.parents_left[child] - 1
            self.parents_left[child] = left
            if left == 0:
                self._make_ready(child)

    # ------------------------------------------------------------------ the process
    def execute(self):
        """This NPU's SimPy process: issue the graph's ready nodes at t=0, then run until
        the last node completes; its value is the NPU's report.

        An event that completes one of its nodes (a bucket of its clock, a message delivered
        to it, a collective's last event) rings its bell, and the process completes the node
        and issues what that frees in that instant, before anything else of it (see
        :mod:`simpy_astra.engine.events`): the reference's order."""
        try:
            self.stats.began_ns = self.clock.env.now
            self._issue_pass()
            self._check_end()
            yield from self.clock.serve(lambda: self.finished)
        except Exception as exc:  # the run stops; the first error of the instant is the one told
            self.services.failed(exc)
            raise
        return self.report

    def probe_environment(self) -> simpy.Environment:
        """The environment of its clock (where a user's watcher may start a process)."""
        return self.clock.env

    def node_finished(self, node_id: int):
        """An event that fires when node ``node_id`` completes (value: the time)."""
        env = self.clock.env
        if node_id not in self.nodes:
            ids = sorted(self.nodes)  # the fix: which ids its ET holds
            held = f"its nodes are ids {ids[0]}..{ids[-1]} ({len(ids)} in all)" if ids else "it has no nodes"
            raise KeyError(f"{self.source}: NPU {self.npu_id} has no node {node_id!r}; {held}")
        event = self._node_events.get(node_id)
        if event is None:
            event = self._node_events[node_id] = env.event()
            if node_id in self.ended_ns:
                event.succeed(self.ended_ns[node_id])
        return event

    # ------------------------------------------------------------------ issuing

    def _issue_pass(self) -> None:
        """Issue ready nodes in id order while their slot is free (one snapshot)."""
        ready = self.ready
        busy = self.busy
        while True:
            self.in_pass = True
            while True:
                best = -1
                best_id = None
                for cls in self.slot_classes:
                    heap = ready[cls]
                    if heap and (cls == SLOT_NONE or not busy[cls]) and (best_id is None or heap[0] < best_id):
                        best, best_id = cls, heap[0]
                if best_id is None:
                    break
                heapq.heappop(ready[best])
                self.ready_count -= 1
                self._issue(self.nodes[best_id], best)
            self.in_pass = False
            if not self.deferred:
                return
            for nid in self.deferred:
                heapq.heappush(ready[self.slot_of(self.nodes[nid])], nid)
            self.deferred.clear()
            if self.ongoing:
                return
            # the reference would wait for a completion that never comes; carry on with another
            # pass (a loop, not recursion: a long chain of zero-time nodes must not overflow)

    def _issue(self, node, slot: int) -> None:
        now = self.clock.env.now
        if slot != SLOT_NONE:
            self.busy[slot] = True
        self.slot_in_use[node.id] = slot
        self.ongoing += 1
        t = node.type
        self.stats.start(node.id, self._category(node, slot), now)
        watchers = self.probe_node_start
        if watchers is not None:
            for watcher in watchers:
                watcher(node.id, now)
        cfg = self.config
        if cfg.replay_only:
            return self._replay(node, slot)
        if t == COMP_NODE:
            if not cfg.roofline_enabled or slot == SLOT_CPU:
                return self._replay(node, slot)
            return self._roofline(node)
        if t in (COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE):
            if slot == SLOT_CPU:
                raise InputError.in_file(self.source, f"node {node.id}: communication nodes cannot be CPU ops "
                                         f"(is_cpu_op is set)")
            if t == COMM_COLL_NODE:
                return self._collective(node)
            if t == COMM_SEND_NODE:
                return self._send(node)
            return self._recv(node)
        if t in (MEM_LOAD_NODE, MEM_STORE_NODE):
            size = node.get_int("tensor_size")
            self.services.remote_memory.issue(self, size, lambda: self.complete_soon(node.id),
                                         f"{self.source}: node {node.id}")
            return None
        if t == METADATA_NODE:
            self._metadata(node)
            return self._finish_now(node, slot)
        if t == INVALID_NODE:
            return self._finish_now(node, slot)
        raise InputError.in_file(self.source, f"node {node.id}: node type {t} is not supported "
                                 f"(expected 0..7: INVALID, METADATA, MEM_LOAD, MEM_STORE, COMP, COMM_SEND, "
                                 f"COMM_RECV, COMM_COLL)")

    @staticmethod
    def _category(node, slot: int) -> str | None:
        t = node.type
        if t == COMP_NODE:
            return CPU if slot == SLOT_CPU else GPU
        if t in (COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE):
            return COMM
        if t in (MEM_LOAD_NODE, MEM_STORE_NODE):
            return REMOTE_MEM
        if t == INVALID_NODE:
            return INVALID
        return None  # METADATA nodes have no statistics category

    # ------------------------------------------------------------------ node kinds
    def _replay(self, node, slot: int) -> None:
        runtime = delay = replay_duration_ns(node.duration_micros)
        if self.straggling:
            runtime, delay = self._straggled(runtime)
        if slot != SLOT_CPU:  # the reference counts GPU time only
            self.gpu_ops_ns += runtime
        self.clock.register(delay, self.complete_soon, node.id)

    def _roofline(self, node) -> None:
        num_ops = float(node.get_int("num_ops"))
        tensor_size = float(node.get_int("tensor_size"))
        if tensor_size == 0:
            return self._finish_now(node, SLOT_GPU)
        if num_ops == 0:
            raise InputError.in_file(self.source, f"node {node.id}: roofline COMP node has num_ops 0 "
                                     f"(its runtime would be undefined)")
        cfg = self.services
        intensity = num_ops / tensor_size
        perf = min(cfg.local_mem_bytes_per_s * intensity, cfg.peak_flops)
        runtime = delay = int(num_ops / perf * 1e9)
        if self.straggling:
            runtime, delay = self._straggled(runtime)
        self.gpu_ops_ns += runtime
        self.stats.roofline[node.id] = RooflineOp(
            intensity, perf / cfg.peak_flops, (perf / intensity) / cfg.local_mem_bytes_per_s,
            perf < cfg.peak_flops,
        )
        self.clock.register(delay, self.complete_soon, node.id)

    def on_cpu(self, node_id: int) -> bool:
        return self.slot_in_use.get(node_id) == SLOT_CPU

    # ------------------------------------------------------------------ completion
    def _finish_now(self, node, slot: int) -> None:
        """Synchronous completion (children wait for the next issue pass)."""
        now = self.clock.env.now
        self._release(node, slot, now)
        self._resolve(node.id)

    def _release(self, node, slot: int, now: int) -> None:
        del self.slot_in_use[node.id]
        if slot != SLOT_NONE:
            self.busy[slot] = False
        self.ongoing -= 1
        self.completed += 1
        if self.memory is not None:
            self.memory.record(node, self.stats.starts[node.id], now)
        self.stats.end(node.id, now)
        self.ended_ns[node.id] = now
        watchers = self.probe_node_end
        if watchers is not None:
            for watcher in watchers:
                watcher(node.id, now)
        if self._node_events:
            event = self._node_events.get(node.id)
            if event is not None and not event.triggered:
                event.succeed(now)

    def complete_soon(self, node_id: int) -> None:
        """A node finished (in a bucket, a message delivery, a collective's last event): wake
        this NPU's process to complete it and issue what that frees, in this instant."""
        self.clock.ring(self.complete, node_id)

    def complete(self, node_id: int) -> None:
        """An asynchronous node finished at the current tick."""
        if self.finished:
            return
        node = self.nodes[node_id]
        now = self.clock.env.now
        self._release(node, self.slot_in_use[node_id], now)
        self._resolve(node_id)
        self._issue_pass()
        self._check_end()

    def _check_end(self) -> None:
        if self.finished or self.ready_count or self.ongoing:
            return
        self.finished = True
        now = self.clock.env.now
        peak = breakdown = None
        if self.memory is not None:
            # deferred: only runs that track local memory need memory_tracker
            from simpy_astra.engine.memory_tracker import format_peak

            peak_bytes, breakdown = self.memory.peak_breakdown()
            peak = format_peak(peak_bytes)
        self.report = build_report(self.stats, now, self.gpu_ops_ns, self.config.roofline_enabled, peak,
                                   breakdown)
        self.services.finished(self)
