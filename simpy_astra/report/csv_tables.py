"""Per-run CSVs: ``nodes.csv`` (one row per workload node of each NPU simulated), ``npus.csv``
(which simulated NPU's rows each NPU has) and ``layers.csv`` (text workloads).

A folded run simulates one NPU of each orbit of symmetric NPUs, and every member does what its
representative does, tick for tick: ``nodes.csv`` lists the representative's rows once, its id
in the ``npu`` column, and ``npus.csv`` maps every NPU to the NPU simulated for it
(``simulated_npu``). An unfolded run's ``nodes.csv`` is every NPU's own rows, as it always was
(scripts reading ``npu`` keep working), and its ``npus.csv`` maps each NPU to itself.
:func:`expanded_rows` joins the two into one row per node of every NPU (the SC'21 1,536-GPU
step's 883 MB, 10 million rows, written as 4.6 MB).

Exposed communication of a communication node (``exposed_comm_ns``) = the part of its [start,
end] interval during which its NPU ran no compute node; two collectives running at once with no
compute are both charged for that time, so this column can sum past the step's length.
``exposed_share_ns`` charges each instant once, by the precedence of
:mod:`simpy_astra.report.breakdown` (compute > memory > collectives and sends, the earliest
started first > receives alone): per NPU it sums to the ``comm.*`` parts of its breakdown.
``bubble_share_ns`` is a receive's share of the time only receives were in flight; it sums to
the NPU's ``bubble`` part (a receive naming a stream other than ``pp`` waits for a transfer:
its share is communication, in ``exposed_share_ns``).

``layers.csv`` resembles ASTRA-sim 1.0's ``EndToEnd.csv``: for workloads converted from the 1.0
text format (node names ``COMP_NODE_<layer>_<FWD|BWD_IG|BWD_WG>`` and
``COMM_COLL_NODE_<layer>_<TYPE>``), per NPU and layer, the compute and the (exposed)
communication of the forward, input-gradient and weight-gradient phases, summed over passes.
A collective belongs to the phase of the compute node it depends on; a collective named after
another layer than that compute node (DLRM's embedding all-to-all) is that layer's input
gradient.
"""

from __future__ import annotations

import bisect
import csv
import itertools
import os
import re
from collections.abc import Callable, Iterator

from simpy_astra.errors import InputError
from simpy_astra.infra import files
from simpy_astra.report.recorder import COMM_TYPES, RunRecord, merged
from simpy_astra.workloads.chakra.types import COMM_COLL_NODE, COMM_RECV_NODE, COMP_NODE

#: nodes.csv's (its ``npu``: the NPU simulated, a folded run's orbit representative) and the
#: columns of every NPU's own rows (:func:`expanded_rows`)
NODE_COLUMNS = ("npu", "node_id", "name", "type", "start_ns", "end_ns", "duration_ns", "exposed_comm_ns",
                "exposed_share_ns", "bubble_share_ns")
NPU_COLUMNS = ("npu", "simulated_npu")  # npus.csv: every NPU and the NPU whose rows are its own
PHASES = ("FWD", "BWD_IG", "BWD_WG")
LAYER_COLUMNS = ("npu", "layer", "passes",
                 "fwd_compute_ns", "ig_compute_ns", "wg_compute_ns",
                 "fwd_comm_ns", "ig_comm_ns", "wg_comm_ns",
                 "fwd_exposed_comm_ns", "ig_exposed_comm_ns", "wg_exposed_comm_ns")
_COMP_NAME = re.compile(r"^COMP_NODE_(.+)_(FWD|BWD_IG|BWD_WG)$")
_COMM_NAME = re.compile(r"^COMM_COLL_NODE_(.+?)(_IG_COMM_)?_([A-Z]+)$")


class Cover:
    """Disjoint sorted intervals, and how much of them lies below any time: a communication
    node's uncovered time in two bisections. (Walking the intervals inside each node took
    1.8 s of a 1,536-GPU step's nodes.csv: a data-parallel all-reduce spans thousands of
    kernels.)"""

    def __init__(self, cover: list[tuple[int, int]]) -> None:
        self.cover, self.starts = cover, [s for s, _ in cover]
        self.before = list(itertools.accumulate((e - s for s, e in cover), initial=0))  # [i]: covered before i

    def below(self, t: int) -> int:
        """Covered length before time ``t``."""
        i = bisect.bisect_right(self.starts, t) - 1
        if i < 0:
            return 0
        lo, hi = self.cover[i]
        return self.before[i] + min(t, hi) - lo

    def uncovered_ns(self, start: int, end: int) -> int:
        """Length of [start, end] not covered."""
        return end - start - (self.below(end) - self.below(start)) if end > start else end - start


def node_rows(record: RunRecord, breakdowns: dict | None = None) -> list[tuple]:
    """Every NPU's own rows (:data:`NODE_COLUMNS`: what :func:`expanded_rows` reads back
    from the files) in (npu, start, node id) order; ``breakdowns``: NPU ->
    :class:`~simpy_astra.report.breakdown.Breakdown` (made from ``record`` if not given)."""
    return [(npu_id, *row) for npu_id, _rep, rows in npu_rows(record, breakdowns) for row in rows]


def npu_rows(record: RunRecord, breakdowns: dict | None = None) -> Iterator[tuple[int, int, list[tuple]]]:
    """Each NPU, its representative and its ``nodes.csv`` rows (its id left out), in NPU order.
    In a folded run every NPU's rows are its representative's (its recorder and nodes), worked out once an orbit, the same
    list each time: a generated workload's members do what it does, tick for tick."""
    from simpy_astra.report.breakdown import npu_breakdowns

    if breakdowns is None or any(b.shares is None for b in breakdowns.values()):
        breakdowns = npu_breakdowns(record)
    sim = record.sim
    ids = [rec.npu_id for rec in record.npus] if sim.folding is None else range(sim.total_npus)
    done: dict[int, list[tuple]] = {}  # representative -> its rows without the npu column
    for npu_id in ids:
        rep = sim.npu_for(npu_id).device_id
        if rep not in done:
            if sim.folding is None:
                done.clear()  # each NPU its own rows: none kept past its turn
            done[rep] = _own_rows(record.recorder_of(npu_id), sim.npu_for(npu_id).nodes, breakdowns[npu_id].shares)
        yield npu_id, rep, done[rep]


def _own_rows(rec, nodes, shares: dict) -> list[tuple]:  # noqa: ANN001 - a recorder, a graph's nodes
    """One NPU's ``nodes.csv`` rows, its id left out."""
    from simpy_astra.report.node_parts import BUBBLE, node_part

    intervals = rec.intervals
    compute = Cover(merged([(s, e) for nid, s, e in intervals if nodes[nid].type == COMP_NODE]))
    rows = []
    for nid, s, e in sorted(intervals, key=lambda t: (t[1], t[0])):
        node = nodes[nid]
        exposed = compute.uncovered_ns(s, e) if node.type in COMM_TYPES else 0
        share = shares.get(nid, 0) if node.type in COMM_TYPES else 0
        # a receive waiting on a stage (a transfer's receive, microbench's, is communication)
        waits = node.type == COMM_RECV_NODE and node_part(node)[0] == BUBBLE
        bubble, share = (share, 0) if waits else (0, share)
        rows.append((nid, node.name, node.type_label, s, e, e - s, exposed, share, bubble))
    return rows


def layer_rows(record: RunRecord, breakdowns: dict | None = None) -> list[tuple] | None:
    """Rows of ``layers.csv``, or None when the workload is not a converted text workload (said
    at its first node of another name: a Megatron step's rows are not all made to find out)."""
    table = LayerTable(record)
    for _ in table.watching(npu_rows(record, breakdowns)):
        if table.rows is None:
            break
    return table.rows


class LayerTable:
    """``layers.csv``'s rows, gathered from each NPU's ``nodes.csv`` rows as the walk that writes
    nodes.csv hands them over (:meth:`add`); ``rows`` is None once a node shows the workload is
    not a converted text workload."""

    def __init__(self, record: RunRecord) -> None:
        self.record = record
        self.rows: list[tuple] | None = []
        self.done: dict[int, list[tuple] | None] = {}  # representative -> its rows without the npu column

    def add(self, npu_id: int, rep: int, rows: list[tuple]) -> None:
        """NPU ``npu_id``'s layers, from the ``nodes.csv`` rows of the NPU simulated for it
        (``rep``: a folded run's members are their representative's, worked out once)."""
        if self.rows is None:
            return
        if rep not in self.done:
            self.done[rep] = _layers_of(rows, self.record.sim.npu_for(npu_id).nodes)
        if self.done[rep] is None:
            self.rows = None
        else:
            self.rows += [(npu_id, *row) for row in self.done[rep]]


def _layers_of(rows: list[tuple], nodes) -> list[tuple] | None:  # noqa: ANN001 - a graph's nodes
    """One NPU's ``layers.csv`` rows (its id left out) from its ``nodes.csv`` rows; None at the
    first node not named as a converted text workload names its nodes."""
    totals: dict[str, dict[str, int]] = {}
    for nid, name, _label, _s, _e, duration, exposed, *_shares in rows:
        node = nodes[nid]
        if node.type == COMP_NODE:
            m = _COMP_NAME.match(name)
            if m is None:
                return None
            t = totals.setdefault(m.group(1), {})
            t[f"{m.group(2)}_compute"] = t.get(f"{m.group(2)}_compute", 0) + duration
            if m.group(2) == "FWD":
                t["passes"] = t.get("passes", 0) + 1
            continue
        m = _COMM_NAME.match(name) if node.type == COMM_COLL_NODE else None
        if m is None:
            return None
        layer, phase = m.group(1), "BWD_WG"  # MICRO workloads: collectives without compute
        if m.group(2):
            phase = "BWD_IG"
        elif node.deps:
            parent = _COMP_NAME.match(nodes[node.deps[0]].name)
            if parent is None:
                return None
            phase = parent.group(2) if parent.group(1) == layer else "BWD_IG"
        t = totals.setdefault(layer, {})
        t["collectives"] = t.get("collectives", 0) + 1
        t[f"{phase}_comm"] = t.get(f"{phase}_comm", 0) + duration
        t[f"{phase}_exposed"] = t.get(f"{phase}_exposed", 0) + exposed
    # passes: forward computes seen (MICRO workloads have none: one collective per pass)
    return [(layer, t.get("passes") or t.get("collectives", 0), *(t.get(f"{p}_compute", 0) for p in PHASES),
             *(t.get(f"{p}_comm", 0) for p in PHASES), *(t.get(f"{p}_exposed", 0) for p in PHASES))
            for layer, t in totals.items()]


def _write(path: str, header: tuple[str, ...], rows: list[tuple]) -> None:
    with files.open_output(path, "--csv-out", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def _write_nodes(folder: str, walk: Iterator[tuple[int, int, list[tuple]]],
                 each: Callable[[int, int, list[tuple]], None]) -> list[str]:
    """nodes.csv, each simulated NPU's rows once (a folded 1,536-GPU step's 10 million rows,
    every member's its representative's, took 1.0-1.9 CPU s and 883 MB after a 1.1 s
    simulation), and npus.csv, the NPU simulated for each NPU, from ``walk``
    (:func:`npu_rows`'s), each NPU's rows also handed to ``each`` as they go by (layers.csv's
    table: a second walk worked every NPU's rows out again); returns their paths. Unfolded,
    nodes.csv is what it always was."""
    paths = [os.path.join(folder, "nodes.csv"), os.path.join(folder, "npus.csv")]
    simulated: list[tuple[int, int]] = []  # (NPU, the NPU simulated for it)
    written: set[int] = set()
    with files.open_output(paths[0], "--csv-out", newline="") as f:
        out = csv.writer(f)
        out.writerow(NODE_COLUMNS)
        for npu_id, rep, rows in walk:
            each(npu_id, rep, rows)
            if rep not in written:
                written.add(rep)
                out.writerows((rep, *row) for row in rows)
            simulated.append((npu_id, rep))
    _write(paths[1], NPU_COLUMNS, simulated)
    return paths


def expanded_rows(folder: str | os.PathLike) -> Iterator[list[str]]:
    """Every NPU's own ``nodes.csv`` rows (:data:`NODE_COLUMNS`, as strings, in NPU order,
    each NPU's by start time and node id) from the ``nodes.csv`` and ``npus.csv`` that
    ``--csv-out`` wrote into ``folder``: each NPU's rows are its simulated NPU's, its id in
    ``npu``. Both are read a line at a time; only the simulated NPUs' rows are held."""
    by_simulated: dict[str, list[list[str]]] = {}
    for row in _table_rows(os.path.join(folder, "nodes.csv"), NODE_COLUMNS):
        by_simulated.setdefault(row[0], []).append(row[1:])
    for npu, simulated in _table_rows(os.path.join(folder, "npus.csv"), NPU_COLUMNS):
        for row in by_simulated.get(simulated, ()):
            yield [npu, *row]


def _table_rows(path: str, columns: tuple[str, ...]) -> Iterator[list[str]]:
    """The rows of a table ``--csv-out`` wrote, under its header ``columns`` (another table in
    its place is refused, naming the file, rather than read as this one)."""
    what = f"{os.path.basename(path)} that --csv-out writes"
    with files.open_text_input(path, what, files.TABLE_LIMIT_BYTES, newline="") as f:
        rows = csv.reader(f)
        header = next(rows, None)
        if header is None:
            raise InputError.in_file(files.show(path), f"is empty; expected the {what}")
        if tuple(header) != columns:
            raise InputError.in_file(files.show(path), f"has the header {','.join(header)[:60]}, not "
                                                       f"{','.join(columns)}; expected the {what}")
        for row in rows:
            if len(row) != len(columns):  # cut short (a disk filled), or edited by hand
                raise InputError.in_file(files.show(path), f"line {rows.line_num} has {len(row)} fields, not "
                                                           f"{len(columns)}; expected the {what}")
            yield row


def read_nodes(folder: str | os.PathLike) -> list[dict[str, str]]:
    """:func:`expanded_rows` as dicts by column name (``csv.DictReader``'s rows), every one held
    at once (about 330 bytes a row: a folded 1,536-GPU step's 10 million, 3 GB; iterate
    :func:`expanded_rows` there)."""
    return [dict(zip(NODE_COLUMNS, row, strict=True)) for row in expanded_rows(folder)]


def write_csv_reports(record: RunRecord, folder: str, breakdowns: dict | None = None) -> list[str]:
    """Write ``nodes.csv`` and ``npus.csv`` (and ``layers.csv`` for text workloads) into
    ``folder``; returns the paths."""
    record.require_every_npu("nodes.csv")
    try:
        os.makedirs(folder, exist_ok=True)
        layers = LayerTable(record)
        paths = _write_nodes(folder, npu_rows(record, breakdowns), layers.add)
        if layers.rows is not None:
            paths.append(os.path.join(folder, "layers.csv"))
            _write(paths[-1], LAYER_COLUMNS, layers.rows)
    except OSError as exc:
        raise InputError(f"--csv-out: cannot write into {folder} ({exc.strerror or exc})") from None
    return paths
