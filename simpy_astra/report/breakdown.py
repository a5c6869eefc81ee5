"""Where each NPU's time went: [0, finish] split into disjoint parts that sum to its finish time.

Built from the node intervals a run records (:mod:`simpy_astra.report.recorder`) by one sweep
over their starts and ends; nothing in the simulation changes. At each instant the time goes
to exactly one part, by this precedence over the nodes in flight then:

1. ``compute.<kind>``: a compute node runs. ``<kind>`` is its ``op_type`` attribute (Megatron
   writes ``gemm``, ``attention``, ``elementwise``, ``optimizer``; STAGE's letters, which the
   transformer generator writes, are read as these: ``M`` gemm, ``CUSTOM`` attention, ``A``,
   ``E`` and ``SLICE`` elementwise), else ``other``. A node
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
4. ``compute.<kind>`` of a CPU op (``is_cpu_op``; ``cpu`` without an ``op_type``, Megatron's
   ``host``): it holds the host, not the GPU, so its time is a part only where the GPU neither
   computes nor communicates: the GPU waits for the host.
5. ``bubble``: only receives are in flight: the NPU waits on a peer (a pipeline stage's send).
6. ``idle``: nothing is in flight (a late job start, zero-time nodes).

Within a class the instant goes to the node in flight that started first (lowest node id
on a tie); that node's *share* is what ``nodes.csv`` lists, so the shares of an NPU's
communication nodes sum to its ``comm.*`` parts and those of its receives to its bubble. This
``exposed communication`` differs from ASTRA-sim's figure of the same name (finish time
minus GPU compute time), which the reference lines keep.
"""

from __future__ import annotations

import heapq
from array import array
from collections import Counter
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

from simpy_astra.report.kind_split import split_intervals, split_span
from simpy_astra.report.node_parts import CLASSES, Classifier, group_dimension, node_part

IDLE = "idle"
#: the order parts are listed in: compute kinds, memory, communication dimensions, bubble, idle
KNOWN_ORDER = ("compute.gemm", "compute.attention", "compute.elementwise", "compute.optimizer",
               "compute.other", "compute.cpu", "memory", "comm.tp", "comm.sp", "comm.cp", "comm.ep",
               "comm.dp", "comm.edp", "comm.pp")


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
    # or no time) as a class after the last, sorted last and never read
    cls = np.where(ends > begins, kind_class[code], -1)
    cls[cls < 0] = CLASSES
    order = np.lexsort((ids, begins, cls))
    ids, begins, ends, name = ids[order], begins[order], ends[order], kind_name[code[order]]
    bounds = [0, *np.cumsum(np.bincount(cls, minlength=CLASSES + 1)[:CLASSES]).tolist()]
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
    which then never import numpy. A folded run's reports sweep each simulated NPU's thousand
    or so nodes this way (16 of them for 16,384 GPUs), so the steps stay free of calls a plain
    expression does as well (a report must cost a small part of the run, issue 51)."""
    spans: list[tuple[int, int, int, int, str]] = []
    add = spans.append
    cuts: dict[tuple, list[tuple[int, int, str]]] = {}
    for nid, s, e in intervals:
        if e > s:
            part = part_of(nid)
            if part is None:
                continue
            if len(part) < 3:  # one kind: the whole interval (split_span's answer, without the call)
                add((s, nid, e, part[0], part[1]))
            else:  # a split's cuts depend on the node's length only: worked out once per length
                cls, length = part[0], e - s
                key = (part, length)
                if key in cuts:
                    pieces = cuts[key]
                else:
                    pieces = cuts[key] = [piece for piece in split_span(0, length, part) if piece[1] > piece[0]]
                spans += [(s + a, nid, s + b, cls, name) for a, b, name in pieces]
    spans.sort()
    instants = {0, finish_ns}
    instants.update(map(itemgetter(0), spans))
    instants.update(map(itemgetter(2), spans))
    times = sorted(instants)
    heaps: list[list[tuple[int, int, int, str]]] = [[] for _ in range(CLASSES)]
    out = Breakdown(finish_ns, segments=[] if segments else None)
    parts, shares, spans_out = out.parts, out.shares, out.segments
    i, count = 0, len(spans)
    push, pop = heapq.heappush, heapq.heappop
    for t0, t1 in zip(times, times[1:], strict=False):
        if t0 >= finish_ns:
            break
        while i < count and spans[i][0] <= t0:
            s, nid, e, cls, name = spans[i]
            push(heaps[cls], (s, nid, e, name))
            i += 1
        owner = None
        for heap in heaps:
            while heap and heap[0][2] <= t0:
                pop(heap)
            if heap:
                owner = heap[0]
                break
        end = t1 if t1 < finish_ns else finish_ns
        dt = end - t0
        if owner is None:
            name = IDLE
        else:
            name, nid = owner[3], owner[1]
            if nid in shares:
                shares[nid] += dt
            else:
                shares[nid] = dt
        if name in parts:
            parts[name] += dt
        else:
            parts[name] = dt
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
    moved: dict[int, list[tuple[int, int]]] | None = None  # a folded run's groups by shift, made once
    renames: dict[int, tuple] = {}  # shift -> its renaming's key: the orbits' members share shifts
    parts_by_key: dict = {}  # (node type, id of its attributes dict) -> node_part: the nodes live throughout
    for rec in record.npus:
        if wanted is not None and sim.npu_for(rec.npu_id) is not wanted:
            continue
        nodes = sim.npu_for(rec.npu_id).nodes

        def part_of(nid: int, nodes=nodes):  # by (type, attributes): the graphs share a few hundred
            node = nodes[nid]
            key = (node.type, id(node.attrs))
            if key in parts_by_key:
                return parts_by_key[key]
            part = parts_by_key[key] = node_part(node, names, p2p_name)
            return part

        def kinds_of(nids, nodes=nodes):
            return classifier.graph_kinds(nodes, nids)

        finish = finish_ns.get(rec.npu_id, 0) if finish_ns else 0
        result = sweep_columns(rec.ids, rec.begins, rec.ends, part_of, finish, segments, through_last=True,
                               kinds_of=kinds_of, shares=shares)
        if sim.folding is None:
            out[rec.npu_id] = result
            continue
        if moved is None:
            moved = _groups_by_shift(sim.folding, names)
        renamed: dict[tuple, Breakdown] = {}  # members whose groups are renamed alike share one
        shift_of = sim.folding.shift_of
        for member in sim.orbit_of(rec.npu_id):
            shift = shift_of[member]
            if shift in renames:
                key = renames[shift]
            else:
                key = renames[shift] = tuple(sorted(_member_parts(moved.get(shift, ()), names).items()))
            if key not in renamed:
                renamed[key] = _renamed(result, dict(key))
            out[member] = renamed[key]
    return out


def _groups_by_shift(folding, names: dict[int, str]) -> dict[int, list[tuple[int, int]]]:
    """Shift -> (the group an NPU moved by it uses, its representative's in that place), for
    the groups whose parts differ (unnamed ones; named groups are of one dimension): one pass
    over the folding's group map, each group's dimension worked out once, not once per shift."""
    group_map = folding.group_map
    dims = {group: group_dimension(group, names)
            for group in {*map(itemgetter(0), group_map), *group_map.values()}}
    out: dict[int, list[tuple[int, int]]] = {}
    for (group, shift), rep_group in group_map.items():
        if group != rep_group and rep_group > 0 and dims[group] != dims[rep_group]:
            if shift in out:
                out[shift].append((group, rep_group))
            else:
                out[shift] = [(group, rep_group)]
    return out


def _member_parts(groups: list[tuple[int, int]] | tuple, names: dict[int, str]) -> dict[str, str]:
    """Part -> part for an orbit member whose ``groups`` (its own, its representative's) differ:
    a collective of the representative's group is one of the member's own group, charged to
    that group's part (``comm.group 1`` -> ``comm.group 2``) where the two parts differ
    (unnamed groups; named ones are of one dimension)."""
    out = {}
    for group, rep_group in groups:
        mine, theirs = group_dimension(group, names), group_dimension(rep_group, names)
        if mine != theirs:
            out[f"comm.{theirs}"] = f"comm.{mine}"
    return out


def _renamed(result: Breakdown, parts: dict[str, str]) -> Breakdown:
    """``result`` with its parts renamed by ``parts`` (itself when there are none to rename);
    its shares are per node, and shared."""
    if not parts:
        return result
    arrays = result.arrays
    if arrays is not None:
        starts, ends, codes, labels = arrays
        arrays = (starts, ends, codes, [parts.get(label, label) for label in labels])
    stored = result._segments if arrays is None else None
    segments = None if stored is None else [(s, e, parts.get(p, p)) for s, e, p in stored]
    return Breakdown(result.finish_ns, {parts.get(k, k): v for k, v in result.parts.items()}, result.shares,
                     segments, arrays)


def critical(breakdowns: dict[int, Breakdown]) -> int:
    """The NPU that finished last (the lowest id on a tie): in id order, the first of the
    latest finish (no key function called for each of 16,384 NPUs)."""
    npus = sorted(breakdowns)
    finishes = list(map(attrgetter("finish_ns"), map(breakdowns.__getitem__, npus)))
    return npus[finishes.index(max(finishes))]


def spread(breakdowns: dict[int, Breakdown]) -> dict[str, tuple[int, float, int]]:
    """Per part, (min, median, max) over every NPU (an NPU without the part counts 0). A folded
    run's orbit members share their representative's breakdown: each distinct one is read
    once, weighed by its NPUs (16,384 GPUs, 16 distinct), the figures those of every NPU's."""
    distinct = _distinct(breakdowns)
    names = sorted({p for b, _n in distinct for p in b.parts}, key=part_rank)
    return {name: _weighed([(b.parts.get(name, 0), n) for b, n in distinct]) for name in names}


def finish_spread(breakdowns: dict[int, Breakdown]) -> tuple[int, float, int]:
    """(min, median, max) of every NPU's finish, each distinct breakdown read once."""
    return _weighed([(b.finish_ns, n) for b, n in _distinct(breakdowns)])


def _distinct(breakdowns: dict[int, Breakdown]) -> list[tuple[Breakdown, int]]:
    """Each distinct breakdown (by identity: orbit members share their representative's) and
    how many NPUs have it, in order of first appearance (counted without a step per NPU)."""
    values = list(breakdowns.values())
    found = dict(zip(map(id, values), values, strict=True))
    return [(found[key], n) for key, n in Counter(map(id, values)).items()]


def _weighed(counted: list) -> tuple[int, float, int]:
    """min, ``statistics.median`` and max of the values ``counted`` lists as (value, times):
    the middle one of an odd count, the mean of the middle two of an even one."""
    counted = sorted(counted)
    total = sum(n for _v, n in counted)

    def at(k: int):  # the k-th value (from 0) of them all in order
        for value, n in counted:
            if k < n:
                return value
            k -= n
        raise IndexError(k)

    middle = at(total // 2) if total % 2 else (at(total // 2 - 1) + at(total // 2)) / 2
    return counted[0][0], middle, counted[-1][0]
