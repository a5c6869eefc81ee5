"""Timelines of a recorded run: a Chrome/Perfetto trace file and a compact terminal view.

Trace layout (open the JSON in https://ui.perfetto.dev or chrome://tracing): one process per
NPU ("NPU 3"); in it a ``compute`` track (GPU kernels, named by node), a ``cpu`` track when
the workload has CPU ops, ``comm k`` tracks for communication nodes (collectives may overlap
each other, so each gets the first free lane), ``chunks k`` tracks for the phases of each
collective chunk (when recorded), and ``other`` for remote-memory / metadata nodes. Times are
microseconds in the file (the format's unit) with nanosecond precision.
"""

from __future__ import annotations

import heapq
import json

from simpy_astra.report.recorder import COMM_TYPES, RunRecord, merged
from simpy_astra.workloads.chakra.types import COMP_NODE

TID_COMPUTE, TID_CPU, TID_OTHER, TID_COMM_BASE, TID_CHUNK_BASE = 0, 1, 2, 100, 1000


def _us(ns: int) -> float:
    return ns / 1000


def _lanes(intervals: list[tuple[int, int, object]]) -> list[tuple[int, int, object, int]]:
    """Give each interval the lowest lane free at its start (so lanes never overlap)."""
    free: list[int] = []  # lanes freed, lowest first
    busy: list[tuple[int, int]] = []  # (end, lane)
    out = []
    lanes = 0
    for s, e, payload in sorted(intervals, key=lambda t: (t[0], t[1])):
        while busy and busy[0][0] <= s:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane, lanes = lanes, lanes + 1
        heapq.heappush(busy, (e, lane))
        out.append((s, e, payload, lane))
    return out


def trace_events(record: RunRecord) -> list[dict]:
    """Chrome trace events (``ph: X`` complete events plus track names) of every NPU."""
    events: list[dict] = []
    for rec in record.npus:
        pid = rec.npu_id
        nodes = record.sim.npu_for(pid).nodes
        events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": f"NPU {pid}"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}})
        names = {TID_COMPUTE: "compute"}
        comm = []
        for nid, s, e in rec.intervals:
            node = nodes[nid]
            args = {"node_id": nid, "start_ns": s, "end_ns": e}
            if node.type in COMM_TYPES:
                comm.append((s, e, (node, args)))
                continue
            if node.type == COMP_NODE:
                cpu = node.get_bool("is_cpu_op", False)
                tid, cat = (TID_CPU, "cpu") if cpu else (TID_COMPUTE, "compute")
            else:
                tid, cat = TID_OTHER, "other"
            names[tid] = cat
            events.append({"ph": "X", "name": node.name, "cat": cat, "pid": pid, "tid": tid,
                           "ts": _us(s), "dur": _us(e - s), "args": args})
        for s, e, (node, args), lane in _lanes(comm):
            names[TID_COMM_BASE + lane] = f"comm {lane}"
            events.append({"ph": "X", "name": node.name, "cat": "comm", "pid": pid,
                           "tid": TID_COMM_BASE + lane, "ts": _us(s), "dur": _us(e - s), "args": args})
        for s, e, chunk, lane in _lanes([(c.start_ns, c.end_ns, c) for c in rec.chunks]):
            names[TID_CHUNK_BASE + lane] = f"chunks {lane}"
            where = f" on {chunk.dim_size} NPUs" if chunk.dim_size else ""
            events.append({"ph": "X", "name": f"chunk {chunk.stream_id} {chunk.kind}{where}", "cat": "chunk",
                           "pid": pid, "tid": TID_CHUNK_BASE + lane, "ts": _us(s), "dur": _us(e - s),
                           "args": {"node_id": chunk.node_id, "stream": chunk.stream_id,
                                    "phase": chunk.phase_index, "bytes": chunk.size_bytes,
                                    "queued_ns": chunk.start_ns - chunk.queued_ns}})
        for tid, name in names.items():
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                           "args": {"sort_index": tid}})
    return events


def write_chrome_trace(record: RunRecord, path: str) -> None:
    record.require_every_npu("a Chrome trace")
    from simpy_astra import files

    with files.open_output(path, "--trace-out") as f:
        json.dump({"traceEvents": trace_events(record), "displayTimeUnit": "ns"}, f, separators=(",", ":"))


# --------------------------------------------------------------------------- terminal view
# one letter per bucket in timeline_rows, and how print_timeline draws it: in colour, or
# (no colour: a file, a pipe, NO_COLOR) with a glyph of its own per kind
CODES = {"compute": "C", "overlap": "O", "comm": "X", "idle": "."}
GLYPHS = {"C": ("█", "green"), "O": ("█", "yellow"), "X": ("█", "red"), ".": ("·", "dim")}
PLAIN_GLYPHS = {"C": "#", "O": "=", "X": "x", ".": "."}


def _coverage(intervals: list[tuple[int, int]], buckets: int, bucket_ns: float) -> list[float]:
    cov = [0.0] * buckets
    for s, e in intervals:
        b = min(int(s / bucket_ns), buckets - 1)
        while b < buckets and b * bucket_ns < e:
            lo, hi = max(s, b * bucket_ns), min(e, (b + 1) * bucket_ns)
            if hi > lo:
                cov[b] += hi - lo
            b += 1
    return cov


def _intersection(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def timeline_rows(record: RunRecord, width: int = 60) -> list[tuple[int, str]]:
    """Per NPU, one letter per time bucket (see ``CODES``): what filled most of that bucket."""
    end = max((e for rec in record.npus for _n, _s, e in rec.intervals), default=0)
    if end == 0:
        return []
    bucket_ns = end / width
    rows = []
    for rec in record.npus:
        nodes = record.sim.npu_for(rec.npu_id).nodes
        comp = merged([(s, e) for nid, s, e in rec.intervals if nodes[nid].type == COMP_NODE])
        comm = merged([(s, e) for nid, s, e in rec.intervals if nodes[nid].type in COMM_TYPES])
        both = _coverage(_intersection(comp, comm), width, bucket_ns)
        comp_cov = _coverage(comp, width, bucket_ns)
        comm_cov = _coverage(comm, width, bucket_ns)
        cells = []
        for b in range(width):
            share = {"overlap": both[b], "compute": comp_cov[b] - both[b], "comm": comm_cov[b] - both[b]}
            share["idle"] = bucket_ns - sum(share.values())
            cells.append(max(share, key=lambda k: share[k]))
        row = "".join(CODES[k] for k in cells)
        rows.extend((member, row) for member in record.sim.orbit_of(rec.npu_id))  # folded: same row
    return sorted(rows)


def print_timeline(record: RunRecord, out=None, width: int = 60) -> None:
    """Compact per-NPU timeline: compute, compute+comm, exposed comm, idle; colours on a
    terminal, distinct glyphs (# = x .) without colour."""
    from simpy_astra.report.console import Output

    out = out or Output()
    rows = timeline_rows(record, width)
    if not rows:
        return
    end = max(e for rec in record.npus for _n, _s, e in rec.intervals)
    shown = rows if len(rows) <= 16 else rows[:8] + rows[-8:]
    if out.colour:
        out.line("", f"timeline 0 .. {end:,} ns  ([green]█[/] compute  [yellow]█[/] compute+comm  "
                     f"[red]█[/] exposed comm  [dim]·[/] idle)")
        from rich.text import Text

        for npu_id, cells in shown:
            line = Text(f"NPU {npu_id:>3} ")
            for ch in cells:
                glyph, style = GLYPHS[ch]
                line.append(glyph, style=style)
            out.console.print(line)
    else:
        g = PLAIN_GLYPHS
        out.line(f"timeline 0 .. {end:,} ns  ({g['C']} compute  {g['O']} compute+comm  {g['X']} exposed comm  "
                 f"{g['.']} idle)")
        for npu_id, cells in shown:
            out.line(f"NPU {npu_id:>3} " + "".join(g[ch] for ch in cells))
    if len(rows) > len(shown):
        out.line(f"({len(rows) - len(shown)} NPUs not shown; --trace-out has all of them)")
