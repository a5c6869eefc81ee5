"""What happened when, per NPU: workload-node intervals and (optionally) collective chunk phases.

Recording is opt-in: the recorder subscribes to the NPUs' ``node_start`` / ``node_end`` and
(for chunk timelines) the system layers' ``stream_moved`` / ``phase_started`` probe points
(:mod:`simpy_astra.engine.probes`), so a run without reports pays one attribute test there and
allocates nothing. :func:`attach` switches recording on for a built
:class:`~simpy_astra.simulation.Simulation` before it runs; the CSV, Chrome-trace and terminal
timeline writers read the finished :class:`RunRecord`.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from simpy_astra.engine.tags import GROUP_STREAM_ID_BASE, first_stream_id
from simpy_astra.workloads.chakra.reader import has_rank_summary
from simpy_astra.workloads.chakra.types import COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE

if TYPE_CHECKING:
    from simpy_astra.simulation import Simulation

#: node types whose intervals are communication
COMM_TYPES = frozenset((COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE))


def merged(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint union of [start, end] intervals."""
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


@dataclass(frozen=True, slots=True)
class ChunkPhase:
    """One phase of one chunk (stream) of a collective: queued, then running until it finished."""

    node_id: int  # the COMM_COLL node the chunk belongs to (-1 if unknown)
    stream_id: int
    phase_index: int
    kind: str  # all_reduce / reduce_scatter / all_gather / all_to_all / custom ...
    dim_size: int  # NPUs in the phase's logical dimension (0: custom algorithm)
    size_bytes: int
    queued_ns: int  # entered its dimension's queue
    start_ns: int  # started running (after waiting for a free slot in the queue)
    end_ns: int


class NpuRecorder:
    """Recorder of one NPU; its methods are the watchers of the NPU's probe points.

    Finished nodes are kept as three columns in end order, ``ids`` (node ids, ``array('Q')``:
    Chakra's are unsigned 64-bit), ``begins`` and ``ends`` (ns, ``array('q')``), which the
    breakdown reads as arrays without a conversion per interval (a report must cost a small
    part of the run, issue 51); :attr:`intervals` gives them as (node id, start ns, end ns)
    tuples."""

    __slots__ = ("npu_id", "starts", "ids", "begins", "ends", "chunks", "queued", "running", "stream_node",
                 "last_started", "record_chunks")

    def __init__(self, npu_id: int, record_chunks: bool) -> None:
        self.npu_id = npu_id
        self.record_chunks = record_chunks
        self.starts: dict[int, int] = {}
        self.ids = array("Q")
        self.begins = array("q")
        self.ends = array("q")
        self.chunks: list[ChunkPhase] = []
        self.queued: dict[int, int] = {}  # id(stream) -> when its current phase was queued
        self.running: dict[int, int] = {}  # id(stream) -> when its current phase started running
        # id(stream) -> collective node id, while the stream lives (ids of freed objects recur)
        self.stream_node: dict[int, int] = {}
        self.last_started = -1

    # -- the NPU's probe points
    def node_start(self, node_id: int, now_ns: int) -> None:
        self.starts[node_id] = now_ns
        self.last_started = node_id  # collectives build their chunks right after this call

    def node_end(self, node_id: int, now_ns: int) -> None:
        self.ids.append(node_id)
        self.begins.append(self.starts.pop(node_id))
        self.ends.append(now_ns)

    @property
    def intervals(self) -> list[tuple[int, int, int]]:
        """(node id, start ns, end ns) of every finished node, in end order."""
        return list(zip(self.ids, self.begins, self.ends, strict=True))

    # -- the system layer's probe points: a phase starts running / a stream leaves its phase
    def phase_started(self, stream: Any, now_ns: int) -> None:
        if self.record_chunks:
            self.running[id(stream)] = now_ns

    def stream_moved(self, stream: Any, now_ns: int) -> None:
        if not self.record_chunks:
            return
        key = id(stream)
        queued = self.queued.pop(key, None)
        if stream.next_phase == 0:  # a new chunk, built while its collective node is being issued
            self.stream_node[key] = self.last_started
        node_id = self.stream_node[key]
        if queued is not None:  # the phase the stream was in has ended
            index = stream.next_phase - 1
            phase = stream.phases[index]
            self.chunks.append(ChunkPhase(node_id, stream.stream_id, index, phase.kind, len(phase.members),
                                          phase.size_bytes, queued, self.running.pop(key, queued), now_ns))
        if stream.next_phase < len(stream.phases):
            self.queued[key] = now_ns
        else:
            del self.stream_node[key]


@dataclass
class RunRecord:
    """Every NPU's recorder plus the simulation (for node names and types). A folded run
    that has to run again unfolded hands its work to a new simulation: the record follows it
    (:meth:`follow`), so it holds the run whose figures the reports give, every NPU its own."""

    sim: Simulation
    record_chunks: bool = False
    npus: list[NpuRecorder] = field(default_factory=list)
    _by_id: dict[int, NpuRecorder] | None = field(default=None, repr=False)

    def follow(self, sim: Simulation) -> None:
        """Record ``sim`` (built, not yet run) from now on: the run's simulation, or the
        unfolded one a folded run hands its work to."""
        self.sim, self.npus, self._by_id = sim, [], None
        for npu, system in zip(sim.npus, sim.systems, strict=True):
            recorder = NpuRecorder(npu.device_id, self.record_chunks)
            npu.watch("node_start", recorder.node_start)
            npu.watch("node_end", recorder.node_end)
            if self.record_chunks:
                system.watch("stream_moved", recorder.stream_moved)
                system.watch("phase_started", recorder.phase_started)
            self.npus.append(recorder)
        sim.rerun_watchers.append(self.follow)

    def require_every_npu(self, what: str) -> None:
        """Per-NPU files list each NPU's own events: a folded run recorded only its
        representatives, whose events are an orbit member's only where the member's nodes are
        the representative's (a generated workload's, with its rank summary; ET files may name
        them apart); a folded run redone unfolded is recorded unfolded (:meth:`follow`)."""
        if self.sim.folding is None:
            return
        if not has_rank_summary(self.sim.inputs.workload_prefix):
            raise ValueError(f"{what} needs every NPU recorded: build the Simulation with "
                             f"fold_symmetry=False (the CLI does this for --csv-out of ET files)")

    def node(self, npu_id: int, node_id: int):
        return self.sim.npu_for(npu_id).nodes[node_id]

    def stream_id(self, npu_id: int, stream_id: int) -> int:
        """The id NPU ``npu_id``'s own chunk has where its recorder's has ``stream_id``: a
        group's streams are numbered from its id (:func:`~simpy_astra.engine.tags.first_stream_id`),
        and an orbit member's group is its representative's translated."""
        folding = self.sim.folding
        if folding is None or stream_id < GROUP_STREAM_ID_BASE:
            return stream_id
        group, n = divmod(stream_id, GROUP_STREAM_ID_BASE)
        return first_stream_id(folding.member_group(npu_id, group)) + n

    def recorder_of(self, npu_id: int) -> NpuRecorder:
        """The recorder holding NPU ``npu_id``'s events: its own, or in a folded run its
        representative's (an orbit member does at every tick what its representative does)."""
        if self._by_id is None:
            self._by_id = {rec.npu_id: rec for rec in self.npus}
        return self._by_id[self.sim.npu_for(npu_id).device_id]


def attach(sim: Simulation, record_chunks: bool = False) -> RunRecord:
    """Switch recording on for ``sim`` (before ``sim.run()``); chunks only when asked (traces)."""
    record = RunRecord(sim, record_chunks)
    record.follow(sim)
    return record
