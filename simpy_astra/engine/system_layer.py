"""Per-NPU system layer: collectives become chunks, chunks become phases on queues.

This follows ASTRA-sim's ``Sys``: a collective of S bytes is cut into chunks
(``preferred-dataset-splits``); each chunk is a *stream* with a list of phases, one per
active logical dimension (reduce-scatter/all-gather around the last dimension for
``localBWAware`` all-reduce). A phase waits in its dimension queue until fewer than
``ceil(active-chunks-per-dimension / queues-per-dim)`` streams run there, then its
algorithm (a generator from ``collectives/``) runs. A finished phase hands the stream to
its next queue at the same tick; the collective completes on this NPU when all its
chunks finished their last phase.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from simpy_astra.collectives import REGISTRY, ImplementationChoice, resolve
from simpy_astra.collectives.base import (
    ALL_GATHER,
    ALL_REDUCE,
    ANTICLOCKWISE,
    CLOCKWISE,
    REDUCE_SCATTER,
)
from simpy_astra.collectives.logical import LogicalDim, dimension_ring, every_npu
from simpy_astra.engine.phase import ChunkCounter, Phase, Stream
from simpy_astra.engine.phase_process import PhaseProcess
from simpy_astra.engine.probes import Probed
from simpy_astra.errors import InputError, with_article
from simpy_astra.infra.units import local_mem_gbps_to_bytes_per_s, reduction_delay_ns

if TYPE_CHECKING:
    import simpy

    from simpy_astra.config import SystemConfig
    from simpy_astra.engine.events import NpuClock


@dataclass
class CollectivePlan:
    """Where one kind of collective runs: per logical dimension, an algorithm and a ring."""

    choices: list[ImplementationChoice | str]  # str = custom algorithm path prefix
    dims: list[LogicalDim]
    involved: list[bool] | None  # None = use the node's involved_dim
    stream_owner: Any  # object with a ``next_stream_id()``
    #: the involved lists (as tuples) a collective on this plan was found to have another NPU
    #: with (:func:`has_peers`): checked at every collective's issue, and fixed per list
    peered: set[tuple[bool, ...]] = field(default_factory=set, init=False, repr=False, compare=False)


# --------------------------------------------------------------------------- streams
class StreamCounter:
    """Stream ids of one communicator (the default one starts at 0, groups at id * 1e6)."""

    __slots__ = ("value",)

    def __init__(self, start: int = 0) -> None:
        self.value = start

    def next_stream_id(self) -> int:
        v = self.value
        self.value += 1
        return v


# --------------------------------------------------------------------------- queues
class QueueLevel:
    """Queue ids and round-robin allocators of one logical dimension."""

    def __init__(self, queues: list[int]) -> None:
        self.queues = queues
        self.rr = 0
        self.first = 0
        self.last = len(queues) // 2

    def next_queue(self) -> tuple[int, int]:
        q = self.queues
        direction = ANTICLOCKWISE if len(q) > 1 and self.rr >= len(q) // 2 else CLOCKWISE
        qid = q[self.rr]
        self.rr = (self.rr + 1) % len(q)
        return qid, direction

    def next_queue_first_half(self) -> tuple[int, int]:
        qid = self.queues[self.first]
        self.first += 1
        if self.first >= len(self.queues) // 2:
            self.first = 0
        return qid, CLOCKWISE

    def next_queue_second_half(self) -> tuple[int, int]:
        qid = self.queues[self.last]
        self.last += 1
        if self.last >= len(self.queues):
            self.last = len(self.queues) // 2
        return qid, ANTICLOCKWISE


# --------------------------------------------------------------------------- chunks and phases
def chunking(kind: str, size: int, splits: int, total_npus: int) -> tuple[int, int]:
    """(bytes per chunk, chunks) of a collective of ``size`` bytes: ``preferred-dataset-splits``
    chunks, each at least one byte per NPU except for all-gather; every chunk, the last one
    too, has the same size (as in the reference)."""
    chunk = size // splits
    if kind != ALL_GATHER and total_npus > chunk:
        chunk = total_npus
        size = splits * chunk
    return chunk, (math.ceil(size / chunk) if chunk else 0)


@dataclass(frozen=True)
class PhaseStep:
    """One phase of a chunk as planned: its kind, logical dimension, size in and out, and which
    half of the dimension's queues it takes (0: round robin; 1, 2: localBWAware's halves)."""

    kind: str
    dim: int
    size_bytes: int
    final_bytes: int
    half: int


def dimension_active(plan: CollectivePlan, involved: list[bool], d: int) -> bool:
    """Whether a (non-custom) collective's chunks run on logical dimension ``d``: involved,
    and of two or more NPUs (a collective with none never finishes in the reference)."""
    return d < len(involved) and involved[d] and plan.dims[d].size > 1


def has_peers(plan: CollectivePlan, involved: list[bool]) -> bool:
    """Whether a (non-custom) collective on ``plan`` over ``involved`` runs on some dimension
    (:func:`dimension_active`), i.e. has another NPU to run with; remembered on the plan, as a
    trace issues tens of thousands of collectives on a few plans."""
    key = tuple(involved)
    if key in plan.peered:
        return True
    if any(dimension_active(plan, involved, d) for d in range(len(plan.dims))):
        plan.peered.add(key)
        return True
    return False


def phase_steps(kind: str, chunk: int, plan: CollectivePlan, involved: list[bool],
                optimization: str) -> list[PhaseStep]:
    """The phases one chunk of a (non-custom) collective runs, in order; a pure function of the
    plan, so that reports (:mod:`simpy_astra.engine.bandwidth_floor`) see what the system layer runs."""
    ndims = len(plan.dims)

    def active(d: int) -> bool:
        return dimension_active(plan, involved, d)

    steps: list[PhaseStep] = []
    remain = chunk

    def add(k: str, d: int, half: int) -> None:
        nonlocal remain
        final = plan.choices[d].algorithm.final_size(k, remain, plan.dims[d].size)
        steps.append(PhaseStep(k, d, remain, final, half))
        remain = final

    if kind != ALL_REDUCE or optimization == "baseline":
        order = range(ndims - 1, -1, -1) if kind == ALL_GATHER else range(ndims)
        for d in order:
            if active(d):
                add(kind, d, 0)
        return steps
    # localBWAware all-reduce: RS up to the last active dim, AR there, AG back down
    last = 0
    for d in range(ndims):
        if active(d):
            last = d
    for d in range(last):
        if active(d):
            add(REDUCE_SCATTER, d, 1)
    if active(last):
        add(ALL_REDUCE, last, 1)
    for d in range(last - 1, -1, -1):
        if active(d):
            add(ALL_GATHER, d, 2)
    return steps


# --------------------------------------------------------------------------- the layer
class SystemLayer(Probed):
    """Collective scheduling for one NPU (ASTRA-sim's ``Sys``). Probe points
    (:mod:`simpy_astra.engine.probes`): ``collective_start``, ``collective_end``, ``phase_started``,
    ``stream_moved``."""

    PROBES = ("collective_start", "collective_end", "phase_started", "stream_moved")
    probe_collective_start: list | None = None
    probe_collective_end: list | None = None
    probe_phase_started: list | None = None
    probe_stream_moved: list | None = None

    def __init__(self, npu_id: int, clock: NpuClock, network: Any, config: SystemConfig,
                 network_dims: list[int], queues_per_dim: int, load_custom: Callable,
                 device_id: int | None = None) -> None:
        """``load_custom(prefix, position, collective_bytes, rank_of) -> (run, args)``: the phase
        a custom collective's file gives this rank (read before time starts; see
        :class:`simpy_astra.collectives.custom.files.CustomCollectives`). ``device_id``: the
        physical NPU, when a job's rank ``npu_id`` is not it (messages are matched and reported
        by physical ids)."""
        self.npu_id = npu_id
        self.device_id = npu_id if device_id is None else device_id
        self.clock = clock
        self.network = network
        self.config = config
        self.network_dims = network_dims
        self.total_npus = math.prod(network_dims)
        self.endpoint_delay_ns = config.endpoint_delay_ns
        self.local_mem_bytes_per_s = local_mem_gbps_to_bytes_per_s(config.local_mem_bw_gbps)
        self.queue_threshold = math.ceil(config.active_chunks_per_dimension / queues_per_dim)
        self.load_custom = load_custom
        self._reduction_cache: dict[int, int] = {}
        self.priority_counter = 0
        self.default_streams = StreamCounter(0)
        self.levels: list[QueueLevel] = []
        n_levels = max(len(network_dims), max((len(v) for v in config.implementations.values()), default=1))
        for d in range(n_levels):
            self.levels.append(QueueLevel(list(range(d * queues_per_dim, (d + 1) * queues_per_dim))))
        n_queues = n_levels * queues_per_dim
        self.active: list[list[Stream]] = [[] for _ in range(n_queues)]
        self.running = [0] * n_queues
        self._default_plans: dict[str, CollectivePlan] = {}

    def probe_environment(self) -> simpy.Environment:
        """The environment of its clock (where a user's watcher may start a process)."""
        return self.clock.env

    def running_phases(self) -> list[PhaseProcess]:
        """The processes of this NPU's collective phases running now (to interrupt one)."""
        return [s.current.process for queue in self.active for s in queue
                if s.initialized and s.current is not None and s.current.process is not None
                and s.current.process.is_alive]

    # -- helpers
    def reduction_ns(self, size_bytes: int) -> int:
        d = self._reduction_cache.get(size_bytes)
        if d is None:
            d = self._reduction_cache[size_bytes] = reduction_delay_ns(size_bytes, self.local_mem_bytes_per_s)
        return d

    def next_priority(self, explicit: int) -> int:
        policy = self.config.scheduling_policy
        if policy == "LIFO":
            self.priority_counter += 1
            return self.priority_counter - 1
        if policy == "FIFO":
            self.priority_counter -= 1
            return self.priority_counter + 1
        return explicit

    def default_plan(self, kind: str) -> CollectivePlan:
        plan = self._default_plans.get(kind)
        if plan is None:
            names = self.config.implementations.get(kind)
            if not names:
                key = kind.replace("_", "-") + "-implementation"
                raise InputError(f"{self.config.source}: field '{key}' is missing, but the workload "
                                 f"runs {with_article(kind)} collective; add e.g. \"{key}\": [\"ring\"]")
            choices: list[ImplementationChoice | str] = []
            dims: list[LogicalDim] = []
            for d, name in enumerate(names):
                choice = resolve(name)
                if choice is None:
                    raise InputError(f"{self.config.source}: unknown collective implementation '{name}'")
                if kind not in choice.algorithm.kinds:
                    able = ", ".join(n for n, a in REGISTRY.items() if kind in a.kinds)
                    raise InputError.at(self.config.source, f"{kind.replace('_', '-')}-implementation[{d}]",
                                        f"is {name}, which does not implement {kind}; use one of: {able}")
                choices.append(choice)
                if choice.spans_all_npus:
                    dims.append(LogicalDim(every_npu(self.total_npus), self.npu_id))
                    break
                if d >= len(self.network_dims):
                    dims_n = len(self.network_dims)
                    raise InputError.at(self.config.source, f"{kind.replace('_', '-')}-implementation",
                                        f"lists {len(names)} algorithms but the network has {dims_n} "
                                        f"dimension(s); give one per dimension, e.g. {json.dumps(list(names[:dims_n]))}")
                dims.append(dimension_ring(self.npu_id, self.network_dims, d))
            plan = CollectivePlan(choices, dims, None, self.default_streams)
            self._default_plans[kind] = plan
        return plan

    # -- collectives
    def generate_collective(self, kind: str, size: int, involved: list[bool], plan: CollectivePlan,
                            explicit_priority: int, custom: str | None,
                            on_done: Callable[[], None]) -> ChunkCounter:
        if self.probe_collective_start is not None or self.probe_collective_end is not None:
            on_done = self.announced(kind, size, on_done)
        splits = self.config.preferred_dataset_splits
        if kind == ALL_GATHER and size // splits == 0:  # an all_gather smaller than the split count
            raise InputError(f"comm_size {size} of this {kind} is smaller than {self.config.source}'s "
                             f"'preferred-dataset-splits' {splits}, so its chunks would be 0 bytes (the "
                             f"reference loops forever); use comm_size >= {splits} or fewer splits")
        chunk, count = chunking(kind, size, splits, self.total_npus)
        chunks_left = ChunkCounter(count, on_done)
        priority = self.next_priority(explicit_priority)
        if custom is not None:
            if count != 1:
                raise InputError.at(self.config.source, "preferred-dataset-splits",
                                    f"is {splits}, but the custom {kind} collective '{custom}' needs 1 "
                                    f"(the reference never finishes a split custom collective)")
            rank_of, file_pos = self._custom_position(plan)
            run, args = self.load_custom(custom, file_pos, chunk * count, rank_of)
            phase = Phase(self, kind, chunk * count, chunk * count, 0, CLOCKWISE, None, None, run, args)
            self._insert_ready(Stream(plan.stream_owner.next_stream_id(), [phase], priority, chunks_left))
            return chunks_left
        dims_inv = plan.involved if plan.involved is not None else involved
        # planned once: every chunk runs the same phases (only their queues differ)
        steps = phase_steps(kind, chunk, plan, dims_inv, self.config.collective_optimization)
        if count and not steps:  # the Npu refuses it first, naming the node's pg_name or involved_dim
            raise InputError(f"{with_article(kind)} of {chunk}-byte chunks has no dimension to run on (every involved "
                             f"dimension, or its communicator group, has one NPU); the reference never finishes it")
        for _ in range(count):
            self._insert_ready(Stream(plan.stream_owner.next_stream_id(), self._build_phases(steps, plan), priority,
                                      chunks_left))
        return chunks_left

    def announced(self, kind: str, size: int, on_done: Callable[[], None]) -> Callable[[], None]:
        """Emit ``collective_start`` now and ``collective_end`` before ``on_done`` runs (also for
        a collective NCCL's model times, which never reaches :meth:`generate_collective`)."""
        for fn in self.probe_collective_start or ():
            fn(kind, size)

        def done() -> None:
            for fn in self.probe_collective_end or ():
                fn(kind, size)
            on_done()

        return done

    def _custom_position(self, plan: CollectivePlan) -> tuple[Any, int]:
        """(rank map of the algorithm file, which rank file to load) for a custom collective.

        Files are chosen by the position in the *sorted* group, ranks inside them map back
        through the group as written (the reference's rule)."""
        if not plan.dims:
            return None, self.npu_id
        members = plan.dims[0].members
        return members, sorted(members).index(self.npu_id)

    def _build_phases(self, steps: list[PhaseStep], plan: CollectivePlan) -> list[Phase]:
        """One chunk's phases, each on the next queue of its dimension (round robin)."""
        phases: list[Phase] = []
        for step in steps:
            level = self.levels[step.dim]
            queue = (level.next_queue() if step.half == 0 else level.next_queue_first_half() if step.half == 1
                     else level.next_queue_second_half())
            choice = plan.choices[step.dim]
            dim = plan.dims[step.dim]
            algo = choice.algorithm
            args = () if algo.logical is None else algo.logical(dim)
            phases.append(Phase(self, step.kind, step.size_bytes, step.final_bytes, queue[0], queue[1], dim,
                                choice.window, algo.run, args))
        return phases

    # -- scheduling (Sys::insert_stream / proceed_to_next_vnet_baseline / SchedulerUnit)
    @staticmethod
    def _insert_by_priority(queue: list[Stream], stream: Stream) -> None:
        i = 0
        n = len(queue)
        while i < n and (queue[i].initialized or queue[i].priority >= stream.priority):
            i += 1
        queue.insert(i, stream)

    def _insert_ready(self, stream: Stream) -> None:
        # the ready list drains at once (its thresholds are effectively unlimited)
        self.proceed(stream)

    def proceed(self, stream: Stream) -> None:
        """Move ``stream`` past its current phase (or into its first one)."""
        watchers = self.probe_stream_moved
        if watchers is not None:
            for watcher in watchers:
                watcher(stream, self.clock.env.now)
        previous = stream.queue_id
        last = stream.next_phase == len(stream.phases)
        if last:
            stream.chunks_left.stream_finished()
            stream.phases = ()  # break the stream <-> phase cycles: reference counting frees them
            stream.current = None
        if previous >= 0:
            self.active[previous].remove(stream)
        if last:
            if previous >= 0:
                self._stream_removed(previous)
            return
        phase = stream.phases[stream.next_phase]
        stream.next_phase += 1
        stream.current = phase
        stream.queue_id = phase.queue_id
        stream.initialized = False
        self._insert_by_priority(self.active[phase.queue_id], stream)
        if previous >= 0:
            self._stream_removed(previous)
        self._start_waiting(phase.queue_id)

    def _stream_removed(self, queue_id: int) -> None:
        self.running[queue_id] -= 1
        self._start_waiting(queue_id)

    def _start_waiting(self, queue_id: int) -> None:
        queue = self.active[queue_id]
        i = self.running[queue_id]
        while i < len(queue) and self.running[queue_id] < self.queue_threshold:
            stream = queue[i]
            stream.initialized = True
            self.running[queue_id] += 1
            i += 1
            watchers = self.probe_phase_started
            if watchers is not None:
                for watcher in watchers:
                    watcher(stream, self.clock.env.now)
            stream.current.start()
