"""Where each NPU's time went: [0, finish] split into disjoint parts that sum to its finish time.

Built from the node intervals a run records (:mod:`simpy_astra.report.recorder`) by one sweep
over their starts and ends; nothing in the simulation changes. At each instant the time goes
to exactly one part, by this precedence over the nodes in flight then:

1. ``compute.<kind>``: a compute node runs. ``<kind>`` is its ``op_type`` attribute (Megatron
   writes ``gemm``, ``attention``, ``elementwise``, ``optimizer``; STAGE's letters, which the
   transformer generator writes, are read as these: ``M`` gemm, ``CUSTOM`` attention, ``A``,
   ``E`` and ``SLICE`` elementwise), ``cpu`` for a CPU op without one, else ``other``. A node
   with a ``kind_split`` attribute (``gemm:812,attention:60,...``: the Megatron generator's
   kernels of several kinds in one node) is charged to those kinds in turn, each its share
   of the node's time.
2. ``memory``: a remote or local memory node (MEM_LOAD / MEM_STORE) runs.
3. ``comm.<dim>``: a collective or a send runs: exposed communication, charged once however
   many overlap. ``<dim>`` is the parallel dimension: the node's ``comm_stream`` (Megatron:
   ``tp``, ``dp``, ``pp``, ``cp``, ``ep``, ``edp``), else the name of its communicator group
   where the run knows it (the transformer generator's ``dp``, ``tp``, ``sp``, ``ep``,
   ``edp``), else ``group <pg_name>``, ``all`` (the default communicator) or, for a send naming
   no stream, ``pp`` in a transformer run and ``p2p`` elsewhere.
   A receive naming a ``comm_stream`` other than ``pp`` waits for a transfer, not a stage:
   it is that stream's communication (``generate microbench``'s send_recv writes ``p2p``).
4. ``bubble``: only receives are in flight: the NPU waits on a peer (a pipeline stage's send).
5. ``idle``: nothing is in flight (a late job start, zero-time nodes).

Within a class the instant goes to the node in flight that started first (lowest node id
on a tie); that node's *share* is what ``nodes.csv`` lists, so the shares of an NPU's
communication nodes sum to its ``comm.*`` parts and those of its receives to its bubble. This
``exposed communication`` differs from ASTRA-sim's figure of the same name (finish time
minus GPU compute time), which the reference lines keep.
"""

from __future__ import annotations

import heapq
import statistics
from array import array
from dataclasses import dataclass, field
from operator import attrgetter, methodcaller
from typing import Any

from simpy_astra.report.kind_split import kind_split, split_intervals, split_span
from simpy_astra.workloads.chakra.types import (
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    MEM_LOAD_NODE,
    MEM_STORE_NODE,
)

COMPUTE, MEMORY, COMM, BUBBLE = 0, 1, 2, 3  # classes, highest precedence first
IDLE = "idle"
#: STAGE's op types (the transformer generator's ``op_type``) as kinds of compute
STAGE_OP_TYPES = {"M": "gemm", "CUSTOM": "attention", "A": "elementwise", "E": "elementwise",
                  "SLICE": "elementwise"}
#: the order parts are listed in: compute kinds, memory, communication dimensions, bubble, idle
KNOWN_ORDER = ("compute.gemm", "compute.attention", "compute.elementwise", "compute.optimizer",
               "compute.other", "compute.cpu", "memory", "comm.tp", "comm.sp", "comm.cp", "comm.ep",
               "comm.dp", "comm.edp", "comm.pp")


def _string_attr(node, name: str) -> str:
    """A string attribute's value, or "" when absent or of another kind (never an error)."""
    found = node.attrs.get(name)
    if found is None or found[0] != "string_val":
        return ""
    return str(found[1])


def comm_dimension(node, group_names: dict[int, str] | None = None, p2p_name: str = "p2p") -> str:
    """The parallel dimension a communication node's exposed time is charged to."""
    stream = _string_attr(node, "comm_stream")
    if stream:
        return stream
    if node.type != COMM_COLL_NODE:
        return p2p_name
    pg = _string_attr(node, "pg_name")
    if pg in ("", "0"):
        return "all"
    if group_names and pg.isdigit() and int(pg) in group_names:
        return group_names[int(pg)]
    return f"group {pg}"


def node_part(node, group_names: dict[int, str] | None = None, p2p_name: str = "p2p") -> tuple | None:
    """(class, part name) of a node, or None for a node that fills no part (metadata, invalid);
    a compute node with a ``kind_split`` (class, part name, ((part name, weight), ...))."""
    t = node.type
    if t == COMP_NODE:
        kind = _string_attr(node, "op_type")
        kind = STAGE_OP_TYPES.get(kind, kind)
        if not kind:
            found = node.attrs.get("is_cpu_op")
            kind = "cpu" if found is not None and found[1] else "other"
        split = kind_split(_string_attr(node, "kind_split"))
        return (COMPUTE, f"compute.{kind}", split) if split else (COMPUTE, f"compute.{kind}")
    if t in (MEM_LOAD_NODE, MEM_STORE_NODE):
        return MEMORY, "memory"
    if t == COMM_RECV_NODE:
        stream = _string_attr(node, "comm_stream")
        if stream and stream != "pp":  # a transfer waited for, not a stage (microbench send_recv: p2p)
            return COMM, f"comm.{stream}"
        return BUBBLE, "bubble"
    if t in (COMM_COLL_NODE, COMM_SEND_NODE):
        return COMM, f"comm.{comm_dimension(node, group_names, p2p_name)}"
    return None


@dataclass
class Breakdown:
    """One NPU's parts (ns, summing to ``finish_ns``) and each node's share of them."""

    finish_ns: int
    parts: dict[str, int] = field(default_factory=dict)
    #: node id -> ns charged to it; None when the sweep was not asked for them (``shares=False``)
    shares: dict[int, int] | None = field(default_factory=dict)
    #: (start ns, end ns, part) in time order, neighbours of one part merged (when asked for);
    #: the array sweep keeps only ``arrays`` and the list is made when first read
    #: (:func:`_segments`): a tuple per stretch, tens of thousands per NPU, that nothing drawn reads
    segments: list[tuple[int, int, str]] | None = field(default=None, repr=False)
    #: the segments as arrays (starts, ends, part codes, part names), which drawing reads
    #: (:mod:`simpy_astra.report.columns`); the sweep keeps them, else made when first asked
    arrays: Any = field(default=None, repr=False, compare=False)

    def segment_arrays(self):
        if self.arrays is None:
            from simpy_astra.report.columns import as_arrays

            self.arrays = as_arrays(self.segments or [])
        return self.arrays

    @property
    def exposed_comm_ns(self) -> int:
        return sum(v for k, v in self.parts.items() if k.startswith("comm."))

    def ordered(self) -> dict[str, int]:
        """The parts in :data:`KNOWN_ORDER` (others after their class), bubble and idle last."""
        return dict(sorted(self.parts.items(), key=lambda kv: part_rank(kv[0])))


def _segments(self: Breakdown) -> list[tuple[int, int, str]] | None:
    """``Breakdown.segments``: the stored list, else made from ``arrays`` when the sweep kept
    only them (a property set on the dataclass after it is made, so that the field stays one
    of ``__init__``'s and ``dataclasses.replace``'s)."""
    if self._segments is None and self.arrays is not None:
        starts, ends, codes, labels = self.arrays
        self._segments = list(zip(starts.tolist(), ends.tolist(), [labels[k] for k in codes.tolist()], strict=True))
    return self._segments


def _set_segments(self: Breakdown, value) -> None:
    self._segments = value


Breakdown.segments = property(_segments, _set_segments)  # type: ignore[assignment]


def part_rank(name: str) -> tuple[int, int, str]:
    """Sort key of a part name: class, then the known order, then by name."""
    cls = (0 if name.startswith("compute.") else 1 if name == "memory" else 2 if name.startswith("comm.")
           else 3 if name == "bubble" else 4)
    known = KNOWN_ORDER.index(name) if name in KNOWN_ORDER else len(KNOWN_ORDER)
    return cls, known, name


#: from this many node intervals of an NPU on, the sweep runs as array operations (below, in
#: plain Python: a small run never imports numpy, a tenth of a second of its start-up)
ARRAY_SWEEP_FROM = 2_000


def sweep(intervals: list[tuple[int, int, int]], part_of, finish_ns: int, segments: bool = False,
          through_last: bool = False, kinds_of=None, shares: bool = True) -> Breakdown:
    """Split [0, ``finish_ns``] by the precedence above: :func:`sweep_columns` of
    ``intervals``, (node id, start ns, end ns) of every finished node."""
    ids = [n for n, _s, _e in intervals]
    starts = [s for _n, s, _e in intervals]
    ends = [e for _n, _s, e in intervals]
    return sweep_columns(ids, starts, ends, part_of, finish_ns, segments, through_last, kinds_of, shares)


def sweep_columns(ids, starts, ends, part_of, finish_ns: int, segments: bool = False,
                  through_last: bool = False, kinds_of=None, shares: bool = True) -> Breakdown:
    """Split [0, ``finish_ns``] by the precedence above.

    ``ids``, ``starts``, ``ends``: node id, start ns and end ns of every finished node, as
    sequences of ints (lists, or the recorder's ``array('q')`` columns, which the array sweep
    reads without a conversion per interval); ``part_of(node id)``:
    (class, part name) or None; ``segments``: also keep which part each stretch of time went to;
    ``through_last``: ``finish_ns`` is at least the last interval's end; ``kinds_of(node ids)``:
    optionally, the array sweep's classification of a uint64 array of node ids at once, (code per node, (class, part) or None
    per code) (:class:`Classifier`); ``shares``: also each node's share (nodes.csv's column; the
    array sweep leaves ``shares`` None when not asked, a dict entry per node being most of its
    cost after the sweep itself).

    From :data:`ARRAY_SWEEP_FROM` intervals on, array operations after one pass over the nodes
    (a report must cost a small part of the run, issue 51): within a class the owner of an
    instant is the node in flight that started first, so in start order a node owns [max(its
    start, the latest end before it), its end) when that is not empty (:func:`_owned`); each
    instant then goes to the highest class that owns it."""
    if len(ids) < ARRAY_SWEEP_FROM:
        if through_last:
            finish_ns = max(finish_ns, max(ends, default=0))
        out = _heap_sweep(list(zip(ids, starts, ends, strict=True)), part_of, finish_ns, segments)
        if not shares:
            out.shares = None
        return out
    import numpy as np

    ids, begins, ends = _node_ids(ids), _int64(starts), _int64(ends)
    if through_last:
        finish_ns = max(finish_ns, int(ends.max(initial=0)))
    if kinds_of is not None:
        code, kinds = kinds_of(ids)
    else:
        parts = [part_of(nid) for nid in ids.tolist()]
        kinds = list(dict.fromkeys(parts))  # the few distinct (class, name) pairs
        code = np.fromiter(map({kind: k for k, kind in enumerate(kinds)}.__getitem__, parts), np.int64,
                           len(parts))
    if any(kind is not None and len(kind) > 2 for kind in kinds):
        ids, begins, ends, code, kinds = split_intervals(ids, begins, ends, code, kinds)
    names: dict[str, int] = {}
    kind_class = np.array([-1 if kind is None else kind[0] for kind in kinds], dtype=np.int64)
    kind_name = np.array([-1 if kind is None else names.setdefault(kind[1], len(names)) for kind in kinds],
                         dtype=np.int64)
    out = Breakdown(finish_ns, shares={} if shares else None, segments=[] if segments else None)
    if finish_ns <= 0:
        return out
    idle = names.setdefault(IDLE, len(names))
    label = list(names)  # code -> part name
    # by class, then start, then node id: one sort for all; nodes that fill no part (no class,
    # or no time) as a fifth class, sorted last and never read
    cls = np.where(ends > begins, kind_class[code], -1)
    cls[cls < 0] = 4
    order = np.lexsort((ids, begins, cls))
    ids, begins, ends, name = ids[order], begins[order], ends[order], kind_name[code[order]]
    bounds = [0, *np.cumsum(np.bincount(cls, minlength=5)[:4]).tolist()]
    pieces = [_owned(begins[a:b], ends[a:b], ids[a:b], name[a:b], finish_ns)
              for a, b in zip(bounds, bounds[1:], strict=False)]
    edges = np.concatenate([np.array([0, finish_ns], dtype=np.int64)]
                           + [np.stack((p[0], p[1]), axis=1).ravel() for p in pieces])
    edges.sort(kind="stable")  # a class's pieces' ends interleaved are in order: a merge of sorted runs
    edges = edges[np.concatenate(([True], edges[1:] != edges[:-1]))]
    at = edges[:-1]  # each stretch [edges[i], edges[i + 1]) lies within a piece or outside all of a class's
    part = np.full(len(at), idle, dtype=np.int64)
    node = np.zeros(len(at), dtype=ids.dtype) if shares else None
    left = np.arange(len(at))  # the stretches no higher class owns
    for p_start, p_end, p_node, p_name in pieces:  # highest class first: a stretch keeps its first owner
        if not len(p_start) or not len(left):
            continue
        where = at[left]
        k = np.searchsorted(p_start, where, side="right") - 1
        mine = (k >= 0) & (where < p_end[k])  # k = -1 reads the last piece, masked out by k >= 0
        taken, k = left[mine], k[mine]
        part[taken] = p_name[k]
        if node is not None:
            node[taken] = p_node[k]
        left = left[~mine]
    free = np.zeros(len(at), dtype=bool)
    free[left] = True
    cuts = np.flatnonzero(part[1:] != part[:-1]) + 1  # neighbours of one part merged
    first = np.concatenate(([0], cuts))
    seg_start, seg_end, seg_part = edges[first], edges[np.concatenate((cuts, [len(part)]))], part[first]
    held = seg_end - seg_start
    # each part's ns and first segment, in order of first appearance: a sum per part (as
    # float64, exact below 2**53 ns, a hundred days; else one masked integer sum per part)
    if finish_ns < 2**53:
        total = np.bincount(seg_part, weights=held, minlength=len(label)).astype(np.int64).tolist()
    else:
        total = [int(held[seg_part == k].sum()) for k in range(len(label))]
    appears = np.full(len(label), len(seg_part), dtype=np.int64)
    np.minimum.at(appears, seg_part, np.arange(len(seg_part)))
    found = sorted((at_, k) for k, at_ in enumerate(appears.tolist()) if at_ < len(seg_part))
    out.parts.update((label[k], total[k]) for _at, k in found)
    if shares and not free.all():
        owned = ~free
        owner, span = node[owned], np.diff(edges)[owned]
        by_node = np.argsort(owner, kind="stable")
        owner, span = owner[by_node], span[by_node]
        first_of = np.flatnonzero(np.concatenate(([True], owner[1:] != owner[:-1])))
        out.shares.update(zip(owner[first_of].tolist(), np.add.reduceat(span, first_of).tolist(), strict=True))
    if segments:
        out.segments = None  # made from the arrays when first read
        out.arrays = (seg_start, seg_end, seg_part, label)
    return out


def _int64(column):
    """A column of ints as an int64 array (the recorder's ``array('q')`` without a copy)."""
    import numpy as np

    return np.asarray(column, dtype=np.int64)


def _node_ids(column):
    """Node ids as a uint64 array, as Chakra defines them (the recorder's ``array('Q')``
    without a copy): the sweep sorts and picks by them whatever their size."""
    import numpy as np

    if isinstance(column, array) and column.typecode == "Q":
        return np.frombuffer(column, dtype=np.uint64) if len(column) else np.zeros(0, dtype=np.uint64)
    return np.asarray(column, dtype=np.uint64)


def _heap_sweep(intervals: list[tuple[int, int, int]], part_of, finish_ns: int, segments: bool) -> Breakdown:
    """:func:`sweep` in plain Python, one step per instant a node starts or ends: for small runs,
    which then never import numpy."""
    spans = []
    for nid, s, e in intervals:
        if e > s:
            part = part_of(nid)
            if part is not None:
                spans += [(a, nid, b, part[0], name) for a, b, name in split_span(s, e, part) if b > a]
    spans.sort()
    times = sorted({0, finish_ns, *(s for s, *_ in spans), *(e for _s, _n, e, *_ in spans)})
    heaps: list[list[tuple[int, int, int, str]]] = [[], [], [], []]
    out = Breakdown(finish_ns, segments=[] if segments else None)
    parts, shares, spans_out = out.parts, out.shares, out.segments
    i = 0
    for t0, t1 in zip(times, times[1:], strict=False):
        if t0 >= finish_ns:
            break
        while i < len(spans) and spans[i][0] <= t0:
            s, nid, e, cls, name = spans[i]
            heapq.heappush(heaps[cls], (s, nid, e, name))
            i += 1
        owner = None
        for heap in heaps:
            while heap and heap[0][2] <= t0:
                heapq.heappop(heap)
            if heap:
                owner = heap[0]
                break
        end = min(t1, finish_ns)
        dt = end - t0
        name = IDLE if owner is None else owner[3]
        parts[name] = parts.get(name, 0) + dt
        if owner is not None:
            shares[owner[1]] = shares.get(owner[1], 0) + dt
        if spans_out is not None:
            if spans_out and spans_out[-1][2] == name:
                spans_out[-1] = (spans_out[-1][0], end, name)
            else:
                spans_out.append((t0, end, name))
    return out


def _owned(start, end, node, part, finish_ns: int):
    """One class's nodes (start, end, node id, part code; by start, then node id) as the
    stretches they own before ``finish_ns``: (start, end, node, part) arrays, disjoint, in time
    order. Within a class the instant goes to the node in flight that started first, so each
    node owns [max(its start, the latest end before it), its end), when that is not empty."""
    import numpy as np

    before = np.concatenate(([0], np.maximum.accumulate(end)[:-1])) if len(end) else end
    start = np.maximum(start, before)
    end = np.minimum(end, finish_ns)
    keep = np.flatnonzero((end > before) & (start < end))
    return start[keep], end[keep], node[keep], part[keep]


class Classifier:
    """:func:`node_part` of many nodes, computed once per distinct (type, attributes) pair.

    A node's part depends only on its type and attributes, and the trace reader gives nodes
    (of any rank) with the same attributes one shared ``attrs`` dict, which nobody modifies: a
    few thousand distinct pairs stand for hundreds of thousands of nodes (a report must cost a
    small part of the run, issue 51). The pairs are keyed by the dict's identity, which stays
    valid while the nodes live; nodes with equal but separate dicts are only looked at twice.
    Each pair is then classified by the values of the few attributes :func:`node_part` reads
    (:data:`PART_ATTRIBUTES`), once per distinct value, and :meth:`kinds` answers with codes
    into a list of the few distinct parts."""

    def __init__(self, group_names: dict[int, str] | None = None, p2p_name: str = "p2p") -> None:
        self._names, self._p2p = group_names, p2p_name
        self._place: dict[tuple[int, str] | None, int] = {}  # (class, part) -> place in _kinds
        self._kinds: list[tuple[int, str] | None] = []
        self._by_content: dict[tuple, tuple[int, str] | None] = {}

    def graph_kinds(self, nodes: dict[int, Any], ids) -> tuple[Any, list[tuple[int, str] | None]]:
        """:meth:`kinds` of the nodes ``ids`` (a uint64 array) of one NPU's ``nodes`` (id ->
        node): every node of the graph classified in its order (a run finishes nearly all of
        them; no look-up per id), then each id's code picked by its place among the keys."""
        import numpy as np

        keys = np.fromiter(nodes, np.uint64, len(nodes))
        if len(keys) and keys[0] == 0 and keys[-1] == len(keys) - 1 and (keys[1:] > keys[:-1]).all():
            # ids 0 .. n-1 in order (the generators'): an id is its place, and the place of a
            # node to look at is its key
            code, kinds = self._classify(nodes.values(), len(keys), nodes.__getitem__)
            return code[ids], kinds
        code, kinds = self._classify(nodes.values(), len(keys), lambda place: nodes[int(keys[place])])
        order = np.argsort(keys, kind="stable")
        return code[order[np.searchsorted(keys[order], ids)]], kinds

    def kinds(self, nodes: list) -> tuple[Any, list[tuple[int, str] | None]]:
        """(code per node as an array, the (class, part) or None of each code)."""
        return self._classify(nodes, len(nodes), nodes.__getitem__)

    def _classify(self, nodes, count: int, node_at) -> tuple[Any, list[tuple[int, str] | None]]:
        """:meth:`kinds` of the ``count`` nodes that ``nodes`` iterates over (a list, or a graph's
        ``values()``: each node object is read in two passes, no list of them made), ``node_at(k)``
        being the k-th of them."""
        import numpy as np

        try:  # node types are small: a byte each, built in C, a sixth faster than an int64 each
            types = np.frombuffer(bytes(map(attrgetter("type"), nodes)), np.uint8).astype(np.int64)
        except (ValueError, TypeError):  # a type below 0 or from 256 on (or not an int)
            types = np.fromiter(map(attrgetter("type"), nodes), np.int64, count)
        dicts = _addresses(map(attrgetter("attrs"), nodes), count)
        # types from 16 on (and below 0) share code 15: like every type from 8 on, they fill no part
        keys = dicts * 16 + np.where((types >= 0) & (types < 16), types, 15)
        _distinct, first, code = np.unique(keys, return_index=True, return_inverse=True)
        # each distinct (attributes, type) pair by the values node_part reads for its type
        # (PART_ATTRIBUTES), then each distinct such value classified once; C-level maps, no
        # Python step per pair (a 3,072-GPU job has over a hundred thousand pairs, a few dozen values)
        pairs = list(map(node_at, first.tolist()))
        dicts_of = list(map(attrgetter("attrs"), pairs))
        pair_types = types[first]
        slot = np.empty(len(pairs), dtype=np.int64)
        for t in np.unique(pair_types).tolist():  # a few node types
            mine = np.flatnonzero(pair_types == t)
            names = PART_ATTRIBUTES.get(t, ())
            if not names:  # its part is its type's
                slot[mine] = self._slot(t, (), pairs[mine[0]])
                continue
            members = list(map(dicts_of.__getitem__, mine.tolist()))
            what = list(zip(*(map(methodcaller("get", name), members) for name in names), strict=True))
            try:
                distinct = dict.fromkeys(what)  # a few values: a scan for one pair with each
                seen = {value: self._slot(t, value, pairs[mine[what.index(value)]]) for value in distinct}
            except TypeError:  # an unhashable attribute value: each pair classified as it is
                slot[mine] = [self._slot(t, None, pairs[k]) for k in mine.tolist()]
                continue
            slot[mine] = np.fromiter(map(seen.__getitem__, what), np.int64, len(what))
        return slot[code.reshape(-1)], list(self._kinds)

    def _slot(self, node_type: int, value, node) -> int:
        """The place in :attr:`_kinds` of ``node``'s part, ``value`` being what it holds of the
        attributes its type's part depends on (None: not to be remembered)."""
        key = (node_type, value)
        part = self._by_content.get(key, self) if value is not None else self
        if part is self:
            part = node_part(node, self._names, self._p2p)
            if value is not None:
                self._by_content[key] = part
        place = self._place.get(part)
        if place is None:
            place = self._place[part] = len(self._kinds)
            self._kinds.append(part)
        return place


def _addresses(objects, count: int):
    """``id`` of each of ``count`` objects, as an int64 array: the pointers a numpy object array
    holds, read as integers (CPython's ``id`` is the address) through the array interface (numpy
    refuses to view an object array as integers). ``np.fromiter(map(id, ...))`` makes and frees
    a Python int per object, half the classification's time on a 1,024-GPU step's 425,000 nodes
    (issue 51: a report must cost a small part of the run)."""
    import numpy as np

    held = np.fromiter(objects, object, count)  # keeps the objects, so their addresses, alive
    if not count:
        return np.zeros(0, dtype=np.int64)
    pointers = _Memory(held.__array_interface__["data"][0], count, np.dtype(np.intp).str)
    return np.array(pointers, dtype=np.int64)  # a copy, valid once ``held`` is gone


class _Memory:
    """``count`` integers of type ``typestr`` at ``address``, as numpy's array interface
    describes memory (read only) to ``np.array``."""

    def __init__(self, address: int, count: int, typestr: str) -> None:
        self.__array_interface__ = {"version": 3, "shape": (count,), "typestr": typestr, "data": (address, True)}


#: the attributes :func:`node_part` reads, by node type (the other types' parts are their type's)
PART_ATTRIBUTES = {COMP_NODE: ("op_type", "is_cpu_op", "kind_split"), COMM_COLL_NODE: ("comm_stream", "pg_name"),
                   COMM_SEND_NODE: ("comm_stream",), COMM_RECV_NODE: ("comm_stream",)}


def npu_breakdowns(record, finish_ns: dict[int, int] | None = None, segments: bool = False,
                   shares: bool = True, only: int | None = None) -> dict[int, Breakdown]:
    """Every NPU's breakdown from a finished :class:`~simpy_astra.report.recorder.RunRecord`;
    in a folded run each orbit member has its representative's. ``finish_ns``: NPU -> finish
    time (the reports'); by default the NPU's last node end; ``segments``: keep the timeline;
    ``shares``: each node's share (only nodes.csv reads them); ``only``: just this NPU's (and
    its orbit's), for a reader of one NPU (a sweep point reads the last to finish)."""
    sim = record.sim
    names = getattr(sim, "group_names", None) or {}
    p2p_name = getattr(sim, "p2p_name", "p2p")
    out: dict[int, Breakdown] = {}
    classifier = Classifier(names, p2p_name)
    wanted = None if only is None else sim.npu_for(only)
    for rec in record.npus:
        if wanted is not None and sim.npu_for(rec.npu_id) is not wanted:
            continue
        nodes = sim.npu_for(rec.npu_id).nodes

        def part_of(nid: int, nodes=nodes):  # a node has one interval: asked once each
            return node_part(nodes[nid], names, p2p_name)

        def kinds_of(nids, nodes=nodes):
            return classifier.graph_kinds(nodes, nids)

        finish = finish_ns.get(rec.npu_id, 0) if finish_ns else 0
        result = sweep_columns(rec.ids, rec.begins, rec.ends, part_of, finish, segments, through_last=True,
                               kinds_of=kinds_of, shares=shares)
        for member in sim.orbit_of(rec.npu_id) if sim.folding is not None else [rec.npu_id]:
            out[member] = result
    return out


#: a sweep's result columns (:mod:`simpy_astra.sweep`): the critical NPU's parts in fixed groups,
#: so that every point has the same columns; they sum to the point's ``finish_ns``
SWEEP_DIMENSIONS = ("tp", "sp", "cp", "ep", "dp", "edp", "pp")
SWEEP_COLUMNS = ("breakdown_compute_ns", "breakdown_memory_ns",
                 *(f"breakdown_comm_{d}_ns" for d in SWEEP_DIMENSIONS), "breakdown_comm_other_ns",
                 "breakdown_bubble_ns", "breakdown_idle_ns")


def critical(breakdowns: dict[int, Breakdown]) -> int:
    """The NPU that finished last (the lowest id on a tie)."""
    return min(breakdowns, key=lambda i: (-breakdowns[i].finish_ns, i))


def sweep_column(part: str) -> str:
    """The sweep column a part is added to."""
    if part.startswith("compute."):
        return "breakdown_compute_ns"
    if part.startswith("comm."):
        dim = part.removeprefix("comm.")
        return f"breakdown_comm_{dim}_ns" if dim in SWEEP_DIMENSIONS else "breakdown_comm_other_ns"
    return f"breakdown_{part}_ns"


def sweep_figures(b: Breakdown) -> dict[str, int]:
    """One NPU's parts as the sweep's columns (every column, 0 where the part is absent)."""
    out = dict.fromkeys(SWEEP_COLUMNS, 0)
    for part, ns in b.parts.items():
        out[sweep_column(part)] += ns
    return out


def spread(breakdowns: dict[int, Breakdown]) -> dict[str, tuple[int, float, int]]:
    """Per part, (min, median, max) over every NPU (an NPU without the part counts 0)."""
    names = sorted({p for b in breakdowns.values() for p in b.parts}, key=part_rank)
    out = {}
    for name in names:
        values = [b.parts.get(name, 0) for b in breakdowns.values()]
        out[name] = (min(values), statistics.median(values), max(values))
    return out
