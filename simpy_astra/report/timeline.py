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
from operator import attrgetter

from simpy_astra.report.recorder import COMM_TYPES, RunRecord
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


def trace_events(record: RunRecord, npus: list[int] | None = None) -> list[dict]:
    """Chrome trace events (``ph: X`` complete events plus track names) of every NPU, or of
    ``npus`` (``--trace-npus``). In a folded run an NPU's tracks are its representative's
    events (their node ids and names: a generated workload's ranks of one class share them)."""
    events: list[dict] = []
    for pid in range(record.sim.total_npus) if npus is None else sorted(set(npus)):
        rec = record.recorder_of(pid)
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
            stream = record.stream_id(pid, chunk.stream_id)
            events.append({"ph": "X", "name": f"chunk {stream} {chunk.kind}{where}", "cat": "chunk",
                           "pid": pid, "tid": TID_CHUNK_BASE + lane, "ts": _us(s), "dur": _us(e - s),
                           "args": {"node_id": chunk.node_id, "stream": stream,
                                    "phase": chunk.phase_index, "bytes": chunk.size_bytes,
                                    "queued_ns": chunk.start_ns - chunk.queued_ns}})
        for tid, name in names.items():
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                           "args": {"sort_index": tid}})
    return events


def write_chrome_trace(record: RunRecord, path: str, npus: list[int] | None = None) -> None:
    """The trace of every NPU, or of ``npus``."""
    from simpy_astra.infra import files

    # one string, then one write: json.dump writes chunk by chunk (each of 8 GPUs' 10 MB trace
    # of the SC'21 step took 9 s in many thousand writes, three times the simulation)
    text = json.dumps({"traceEvents": trace_events(record, npus), "displayTimeUnit": "ns"}, separators=(",", ":"))
    with files.open_output(path, "--trace-out") as f:
        f.write(text)


# --------------------------------------------------------------------------- terminal view
#: fixed glyphs of the parts every run may have; each communication dimension gets a letter
#: of its own (``t`` tp, ``d`` dp, ``p`` pp, ... see :func:`glyphs`)
FIXED_GLYPHS = {"compute": "#", "memory": "m", "bubble": "~", "idle": "."}
#: colours on a colour terminal (compute and memory drawn as blocks, the rest as their glyph)
STYLES = {"compute": "green", "memory": "magenta", "bubble": "bright_black", "idle": "dim"}
COMM_STYLES = ("red", "blue", "yellow", "cyan", "bright_magenta", "bright_red", "bright_blue", "bright_yellow")


def part_class(part: str) -> str:
    """What the terminal timeline draws a breakdown part as: compute kinds are one class, each
    communication dimension its own."""
    return "compute" if part.startswith("compute.") else part


def glyphs(classes: list[str]) -> dict[str, str]:
    """One character per class: fixed ones, else the dimension's first letter free (``tp`` ->
    ``t``, ``dp`` -> ``d``), its upper case, another of its letters or digits, else ``A``.."""
    out = {c: FIXED_GLYPHS[c] for c in classes if c in FIXED_GLYPHS}
    used = set(out.values())
    for c in classes:
        if c in out:
            continue
        name = c.removeprefix("comm.")
        pool = [name[:1], name[:1].upper(), *name.replace(" ", ""), *(chr(k) for k in range(65, 91)),
                *(chr(k) for k in range(97, 123))]
        out[c] = next(g for g in pool if g and g.isalnum() and g not in used)
        used.add(out[c])
    return out


def timeline_rows(breakdowns: dict, width: int = 60, npus: list[int] | None = None) -> tuple[list[tuple[int, list[str]]], int]:
    """(per NPU of ``npus``, default every NPU, the class that filled most of each of ``width``
    buckets; the run's end ns) from breakdowns made with ``segments=True``. NPUs that share a
    breakdown (a folded run's orbit: one object) share the work: the cost is per distinct
    breakdown, not per NPU."""
    end = max(map(attrgetter("finish_ns"), breakdowns.values()), default=0)
    if end == 0:
        return [], 0
    done: dict[int, list[str]] = {}
    rows = []
    for npu in sorted(breakdowns) if npus is None else npus:
        b = breakdowns[npu]
        if id(b) not in done:
            done[id(b)] = _cells(b, end / width, width)
        rows.append((npu, done[id(b)]))
    return rows, end


def _cells(breakdown, bucket_ns: float, width: int) -> list[str]:
    """The class that filled most of each bucket of one NPU's timeline (idle past its finish)."""
    from simpy_astra.report.columns import dominant

    arrays = breakdown.arrays
    return dominant(breakdown.segments if arrays is None else None, width, bucket_ns * width,
                    classify=part_class, past="idle", arrays=arrays)


def _span_text(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def print_timeline(breakdowns: dict, out=None, width: int | None = None) -> None:
    """Per NPU, one character per stretch of time: the part that filled most of it (compute,
    memory, each dimension's exposed communication, bubble, idle), across the terminal's width
    (:func:`~simpy_astra.report.widths.plain_width` when not a terminal); colours on a terminal."""
    from simpy_astra.report.output import Output
    from simpy_astra.report.widths import plain_width

    out = out or Output()
    # plain text: the tables' width (shutil.get_terminal_size asks stdout's terminal: stderr sent
    # to a log while stdout stayed on a 200-column terminal drew the log's timeline 200 wide)
    columns = out.console.width if out.console is not None else plain_width()
    label = len(f"NPU {max(breakdowns, default=0)} ")
    width = width or max(10, columns - label)
    npus = sorted(breakdowns)
    picked = npus if len(npus) <= 16 else npus[:8] + npus[-8:]
    shown, end = timeline_rows(breakdowns, width, picked)
    if not shown:
        return
    # every part of the NPUs shown, also one that fills no column alone (comm.tp between kernels)
    order = sorted({c for n in picked for c in _classes(breakdowns[n])} | {c for _n, cells in shown for c in cells},
                   key=_class_rank)
    glyph = glyphs(order)
    styles = dict(STYLES)
    for k, c in enumerate(c for c in order if c.startswith("comm.")):
        styles[c] = COMM_STYLES[k % len(COMM_STYLES)]
    colour = out.colour
    span, column = f"timeline 0 .. {end:,} ns", f"one column = {_span_text(end / width)}"
    head = f"{span}, {column}"
    # a long step's figures leave no room for the words (the legend below says them); in the
    # narrowest plain width (40) the column's span goes on a line of its own
    fits = next((h for h in (f"{head}; the part that filled it:", f"{head}:") if len(h) <= columns), None)
    for line in [fits] if fits else [f"{span},", f"  {column}:"]:
        out.line(line)
    legend = [f"{glyph[c]} {c}" for c in order]
    line = ""
    for item in legend:  # the legend wrapped within the width
        if line and len(line) + 2 + len(item) > columns:
            out.line("  " + line)
            line = item
        else:
            line = f"{line}  {item}" if line else item
    out.line("  " + line)
    for npu_id, cells in shown:
        text = f"NPU {npu_id:>{label - 5}} " + "".join(glyph[c] for c in cells)
        if colour:
            from rich.text import Text

            rich_line = Text(f"NPU {npu_id:>{label - 5}} ")
            for c in cells:
                rich_line.append("█" if c in ("compute", "memory") else glyph[c], style=styles[c])
            out.console.print(rich_line)
        else:
            out.line(text)
    if len(npus) > len(shown):
        # --trace-out of every NPU may be refused as too large; --trace-npus picks any of them
        # wrapped within the width (64 columns at COLUMNS=60)
        out.prose(f"({len(npus) - len(shown):,} NPUs not shown; --trace-out --trace-npus LIST shows them)")


def _classes(breakdown) -> set[str]:
    return {part_class(p) for p, ns in breakdown.parts.items() if ns > 0}


def _class_rank(cls: str) -> tuple:
    from simpy_astra.report.breakdown import part_rank

    return part_rank("compute.gemm" if cls == "compute" else cls)
