"""Per-NPU figures, defined as ASTRA-sim defines them, and the lines it prints."""

from __future__ import annotations

from dataclasses import dataclass, field

from simpy_astra.engine.figure_names import with_ns_names

GPU, CPU, COMM, REMOTE_MEM, INVALID = "GPU", "CPU", "Comm", "Remote mem", "Invalid"
CATEGORY_ORDER = (CPU, GPU, COMM, REMOTE_MEM, INVALID)
UINT64 = 1 << 64


def union_length(intervals: list[tuple[int, int]]) -> int:
    """Total length covered by a set of [start, end] intervals."""
    if not intervals:
        return 0
    intervals.sort()
    total = 0
    lo, hi = intervals[0]
    for s, e in intervals:
        if s <= hi:
            if e > hi:
                hi = e
        else:
            total += hi - lo
            lo, hi = s, e
    return total + hi - lo


@dataclass
class RooflineOp:
    intensity: float
    compute_util: float
    memory_util: float
    memory_bound: bool


@dataclass
class NpuStatistics:
    """What one NPU records while it runs."""

    npu_id: int
    intervals: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    starts: dict[int, int] = field(default_factory=dict)
    categories: dict[int, str] = field(default_factory=dict)
    roofline: dict[int, RooflineOp] = field(default_factory=dict)
    compute_durations: list[tuple[int, int]] = field(default_factory=list)  # (node id, duration)
    wall_ns: int = 0
    #: when the NPU's graph began (its job's start_ns, or a user's environment's time; 0 in ASTRA-sim)
    began_ns: int = 0

    def start(self, node_id: int, category: str | None, now: int) -> None:
        self.starts[node_id] = now
        if category is not None:
            self.categories[node_id] = category

    def end(self, node_id: int, now: int) -> None:
        start = self.starts.pop(node_id)
        category = self.categories.pop(node_id, None)
        if now > self.wall_ns:
            self.wall_ns = now
        if category is None:
            return
        self.intervals.setdefault(category, []).append((start, now))
        if category is GPU or category is CPU:
            self.compute_durations.append((node_id, now - start))


@dataclass
class NpuReport:
    """The figures of one finished NPU (the same ones the reference prints)."""

    npu_id: int
    finished_cycles: int
    exposed_comm_cycles: int
    wall_time: int
    times: dict[str, int]
    overlap: int | None
    roofline: dict[str, float] | None
    peak_memory: str | None
    # bytes live at the peak instant per memory_tracker.CATEGORIES (track-local-mem only)
    memory_breakdown: dict[str, int] | None = None
    #: the overlap our own reports show (table, --json-out): ``overlap`` where the reference
    #: computes one, else the time a GPU op and a communication op both ran (comm_overlap_ns)
    comp_comm_overlap_ns: int = 0

    def for_npu(self, npu_id: int) -> NpuReport:
        """These figures as NPU ``npu_id``'s (a folded run's orbit member), the dicts shared:
        ``dataclasses.replace`` does the same at about five times the cost, paid once per NPU
        (16,384 times on a 16,384-GPU run)."""
        return NpuReport(npu_id, self.finished_cycles, self.exposed_comm_cycles, self.wall_time, self.times,
                         self.overlap, self.roofline, self.peak_memory, self.memory_breakdown,
                         self.comp_comm_overlap_ns)

    # the names --json-out writes (docs/reports.md): a script reads r.finished_ns as the JSON has it
    @property
    def finished_ns(self) -> int:
        return self.finished_cycles

    @property
    def exposed_comm_ns(self) -> int:
        return self.exposed_comm_cycles

    @property
    def wall_time_ns(self) -> int:
        return self.wall_time

    def lines(self) -> list[str]:
        i = self.npu_id
        out = [
            f"sys[{i}] finished, {self.finished_cycles} cycles, exposed communication "
            f"{self.exposed_comm_cycles} cycles.",
            f"sys[{i}], Wall time: {self.wall_time}",
        ]
        for cat in CATEGORY_ORDER:
            if cat in self.times:
                out.append(f"sys[{i}], {cat} time: {self.times[cat]}")
        if self.overlap:
            out.append(f"sys[{i}], Total compute-communication overlap: {self.overlap}")
        if self.roofline is not None:
            r = self.roofline
            out.append(f"sys[{i}], Compute bound percentage: {r['compute_bound'] * 100:.3f}%")
            out.append(f"sys[{i}], Average compute utilization: {r['compute_util'] * 100:.3f}%")
            out.append(f"sys[{i}], Average memory utilization: {r['memory_util'] * 100:.3f}%")
            out.append(f"sys[{i}], Average operation intensity: {r['intensity']:.3f}")
        if self.peak_memory is not None:
            out.append(f"sys[{i}] peak memory usage: {self.peak_memory}")
        return out

    def as_dict(self) -> dict:
        """The figures ``--json-out`` writes for this NPU (but its breakdown): each time under
        its ``_ns`` name and, for one more release, the reference's name beside it."""
        d = {
            "finished_cycles": self.finished_cycles,
            "exposed_comm_cycles": self.exposed_comm_cycles,
            "wall_time": self.wall_time,
        }
        for cat, v in self.times.items():
            d[cat.lower().replace(" ", "_") + "_time"] = v
        if self.comp_comm_overlap_ns:
            d["comp_comm_overlap"] = self.comp_comm_overlap_ns
        if self.roofline is not None:
            d["roofline"] = dict(self.roofline)
        if self.peak_memory is not None:
            d["peak_memory"] = self.peak_memory
        if self.memory_breakdown is not None:
            d["peak_memory_bytes"] = sum(self.memory_breakdown.values())
            d["peak_memory_breakdown_bytes"] = dict(self.memory_breakdown)
        return with_ns_names(d)  # --json-out's NPU entry (less the breakdown, which a record makes)


def comm_overlap_ns(intervals: dict[str, list[tuple[int, int]]], times: dict[str, int]) -> int:
    """How long a GPU op and a communication op both ran: |GPU n Comm| = GPU + Comm - |GPU u Comm|.
    The reference's GPU + Comm - wall is this when GPU and communication fill the wall; a CPU op
    (Megatron's host batch fetch) leaves part of the wall to neither, which that formula would
    charge against the overlap (and the reference refuses: ASTRA_SEMANTICS.md 4.6)."""
    if GPU not in times or COMM not in times:
        return 0
    return times[GPU] + times[COMM] - union_length(intervals[GPU] + intervals[COMM])


def build_report(stats: NpuStatistics, now: int, gpu_ops_ns: int, roofline_on: bool,
                 peak_memory: str | None, memory_breakdown: dict[str, int] | None = None) -> NpuReport:
    times = {cat: union_length(iv) for cat, iv in stats.intervals.items()}
    overlap = None
    if set(times) <= {GPU, COMM} and GPU in times and COMM in times:
        # the reference subtracts in unsigned 64-bit arithmetic, over a graph that began at 0
        overlap = (times[GPU] + times[COMM] - (stats.wall_ns - stats.began_ns)) % UINT64
    ours = overlap if overlap is not None else comm_overlap_ns(stats.intervals, times)
    roof = None
    if roofline_on:
        total = 1
        bound = 0
        cu = mu = oi = 0.0
        for node_id, dur in stats.compute_durations:
            op = stats.roofline.get(node_id)
            if op is not None:
                if not op.memory_bound:
                    bound += dur
                cu += op.compute_util * dur
                mu += op.memory_util * dur
                oi += op.intensity * dur
            total += dur
        roof = {"compute_bound": bound / total, "compute_util": cu / total,
                "memory_util": mu / total, "intensity": oi / total}
    # exposed communication too from the graph's start: waiting for a job's start_ns is not communicating
    exposed = (now - stats.began_ns - gpu_ops_ns) % UINT64
    return NpuReport(stats.npu_id, now, exposed, stats.wall_ns, times, overlap, roof, peak_memory, memory_breakdown,
                     ours)
