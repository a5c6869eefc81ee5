"""Reading and validating Chakra execution traces (``PREFIX.{rank}.et``) as ASTRA-sim does.

A file is a sequence of records, each an unsigned LEB128 varint length (at most 5 bytes,
value < 2**32) followed by that many bytes of a serialized protobuf message: record 0 is a
``GlobalMetadata``, every further record a ``Node``, until EOF.

Decoding is done by protobuf's C-backed parser, one ``Node.FromString`` per record, and the
result is flattened into :class:`EtNode` (slots, attributes as plain Python values) so that the
simulator never touches protobuf objects on its hot path. Every problem with a file is reported
as a one-line :class:`EtError` naming the file, the node (when known) and what was expected;
ASTRA-sim would abort, crash or silently misbehave in most of these cases.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from typing import Final

from google.protobuf import unknown_fields
from google.protobuf.message import DecodeError

from simpy_astra.errors import InputError
from simpy_astra.infra import files
from simpy_astra.infra.horizon import HORIZON_MICROS
from simpy_astra.workloads.chakra.node import AttrValue, EtError, EtNode
from simpy_astra.workloads.chakra.schema import (
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    INTEGER_VALUE_FIELDS,
    INVALID_NODE,
    LIST_VALUE_FIELDS,
    AttributeProto,
    GlobalMetadata,
    NodeRawAttrs,
)


def _decode_attrs(attr_list: Iterable, intern=sys.intern) -> dict[str, AttrValue]:
    """First-match attribute map of parsed ``AttributeProto`` messages (GlobalMetadata)."""
    attrs: dict[str, AttrValue] = {}
    for a in attr_list:
        name = intern(a.name)
        if name not in attrs:
            attrs[name] = _attr_value(a)
    return attrs


def _attr_value(a, intern=sys.intern) -> AttrValue:
    kind = a.WhichOneof("value")
    if kind is None:
        return (None, None)
    kind = intern(kind)
    value = getattr(a, kind)
    if kind in LIST_VALUE_FIELDS:
        value = tuple(value.values)
    return (kind, value)


def _decode_raw_attr(raw: bytes, intern=sys.intern) -> tuple[str, AttrValue]:
    """(name, (kind, value)) of one serialized ``AttributeProto``; raises ``DecodeError``."""
    a = AttributeProto.FromString(raw)
    return intern(a.name), _attr_value(a)


def _read_bytes(path: str) -> bytes:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise EtError(f"workload file: {path} does not exist") from None
    except (OSError, ValueError):
        st = None  # the door names the problem
    if st is not None and os.path.isdir(path):
        raise EtError(f"workload file: {path} is a directory, expected a Chakra ET file") from None
    try:
        return files.read_bytes(path, "Chakra ET file", files.TRACE_LIMIT_BYTES)
    except InputError as exc:
        raise EtError(f"workload file: {exc}") from None


def _foreign_fields(msg) -> list[int]:
    """The field numbers of ``msg`` its message type does not read: fields of another type
    (a number it has, with another wire type), or every field when none of its own is set.
    Protobuf keeps them aside and parses on, so another message's bytes read as an all-default
    message (a Node: id 0, an INVALID node that finishes at once)."""
    unknown = unknown_fields.UnknownFieldSet(msg)
    if not len(unknown):
        return []
    numbers = sorted({f.field_number for f in unknown})
    own = msg.DESCRIPTOR.fields_by_number
    return numbers if any(n in own for n in numbers) or not msg.ListFields() else []


def _foreign_record(path: str, label: str, start: int, message: str, numbers: list[int]) -> EtError:
    shown = ", ".join(map(str, numbers[:6])) + (", ..." if len(numbers) > 6 else "")
    return EtError.in_file(path, f"{label} at byte {start}: is no ChakraProtoMsg.{message} (field(s) {shown} are not "
                           f"a {message}'s, or not of their type): another protobuf message's file? give a Chakra ET "
                           f"file (a GlobalMetadata, then Nodes)")


def _record_label(index: int, last_id: int | None) -> str:
    if index == 0:
        return "record 0 (GlobalMetadata)"
    if last_id is None:
        return f"record {index} (first node)"
    return f"record {index} (node after node {last_id})"


def _slow_varint(path: str, buf: bytes, pos: int, index: int, last_id: int | None) -> tuple[int, int]:
    """Decode a multi-byte length prefix at ``pos``; return (value, position after it)."""
    end = len(buf)
    value = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise EtError.in_file(
                path, f"{_record_label(index, last_id)} at byte {start}: "
                "length prefix runs past end of file (truncated file)"
            )
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
        if shift > 28:
            raise EtError.in_file(
                path, f"{_record_label(index, last_id)} at byte {start}: "
                "length prefix is longer than 5 bytes (corrupt file; expected a varint32 length)"
            )
    if value >= 1 << 32:
        raise EtError.in_file(
            path, f"{_record_label(index, last_id)} at byte {start}: "
            f"length prefix {value} does not fit in 32 bits (corrupt file)"
        )
    return value, pos


def read_et(
    path: str,
    *,
    attr_cache: dict[bytes, tuple[str, AttrValue]] | None = None,
    attrs_cache: dict[tuple[bytes, ...], dict[str, AttrValue]] | None = None,
    record_cache: dict[bytes, tuple] | None = None,
) -> tuple[dict, list[EtNode]]:
    """Read one ET file: ``({"version": str, "attrs": {...}}, nodes in file order)``.

    ``attr_cache`` (serialized attribute -> decoded entry) and ``attrs_cache`` (a node's
    serialized attribute list -> its attribute dict) may be shared between files of one
    workload: ranks repeat most attributes, so sharing saves both time and memory. Nodes
    with the same attribute list then share one ``attrs`` dict, which nobody may modify.
    ``record_cache`` (a node record's bytes -> its decoded fields) goes further: ranks of
    one workload repeat whole records (every compute node of a data-parallel replica), and
    a repeated record is not parsed again (protobuf field access costs ~10 us per node).

    Raises :class:`EtError` for a missing/unreadable file, an empty file (no GlobalMetadata),
    a truncated record or an over-long length prefix, and a record that does not parse.
    Graph checks (ids, dependencies, cycles) are :func:`validate_graph`'s job.
    """
    path = str(path)
    buf = _read_bytes(path)
    end = len(buf)
    if end == 0:
        raise EtError.in_file(path, "empty file, expected a GlobalMetadata record first")

    view = memoryview(buf)
    # Record 0: GlobalMetadata.
    first = buf[0]
    if first < 0x80:
        size, pos = first, 1
    else:
        size, pos = _slow_varint(path, buf, 0, 0, None)
    nxt = pos + size
    if nxt > end:
        raise EtError.in_file(
            path, f"record 0 (GlobalMetadata) at byte 0: length prefix says {size} bytes "
            f"but only {end - pos} remain (truncated file, or not a Chakra ET file)"
        )
    try:
        meta_msg = GlobalMetadata.FromString(view[pos:nxt])
    except DecodeError:
        raise EtError.in_file(
            path, f"record 0 at byte 0: {size} bytes do not parse as ChakraProtoMsg.GlobalMetadata "
            "(not a Chakra ET file?)"
        ) from None
    foreign = _foreign_fields(meta_msg)
    if foreign:
        raise _foreign_record(path, "record 0", 0, "GlobalMetadata", foreign)
    metadata = {"version": meta_msg.version, "attrs": _decode_attrs(meta_msg.attr)}
    pos = nxt

    cache: dict[bytes, tuple[str, AttrValue]] = {} if attr_cache is None else attr_cache
    cache_get = cache.get
    dicts: dict[tuple[bytes, ...], dict[str, AttrValue]] = {} if attrs_cache is None else attrs_cache
    dicts_get = dicts.get
    intern = sys.intern  # node names repeat across ranks
    records: dict[bytes, tuple] = {} if record_cache is None else record_cache
    records_get = records.get
    nodes: list[EtNode] = []
    append = nodes.append
    from_string = NodeRawAttrs.FromString
    make = EtNode
    index = 1
    last_id: int | None = None
    while pos < end:
        start = pos
        size = buf[pos]
        if size < 0x80:
            pos += 1
        elif pos + 1 < end and buf[pos + 1] < 0x80:  # two-byte prefix: most node records
            size = (size & 0x7F) | (buf[pos + 1] << 7)
            pos += 2
        else:
            size, pos = _slow_varint(path, buf, pos, index, last_id)
        nxt = pos + size
        if nxt > end:
            raise EtError.in_file(
                path, f"{_record_label(index, last_id)} at byte {start}: length prefix says "
                f"{size} bytes but only {end - pos} remain (truncated file)"
            )
        record = buf[pos:nxt]
        fields = records_get(record)
        if fields is not None:  # the same bytes were decoded before (another rank)
            append(make(*fields, path, fields))
            last_id = fields[0]
            index += 1
            pos = nxt
            continue
        try:
            msg = from_string(record)
        except DecodeError:
            raise EtError.in_file(
                path, f"{_record_label(index, last_id)} at byte {start}: {size} bytes do not "
                "parse as ChakraProtoMsg.Node (corrupt file)"
            ) from None
        if msg.type == INVALID_NODE:  # what another message's bytes read as (checked for these alone: cheap)
            foreign = _foreign_fields(msg)
            if foreign:
                raise _foreign_record(path, _record_label(index, last_id), start, "Node", foreign)
        ctrl = msg.ctrl_deps
        if ctrl:
            deps = tuple(dict.fromkeys([*ctrl, *msg.data_deps]))
        else:
            data = msg.data_deps[:]
            if len(data) > 1 and len(set(data)) != len(data):
                data = dict.fromkeys(data)
            deps = tuple(data)
        raws = tuple(msg.attr)
        attrs = dicts_get(raws)  # nodes (of any rank) with the same attributes share one dict
        if attrs is None:
            attrs = dicts[raws] = {}
            for raw in raws:
                entry = cache_get(raw)
                if entry is None:
                    try:
                        entry = _decode_raw_attr(raw)
                    except DecodeError:
                        raise EtError.in_file(
                            path, f"node {msg.id}: an attribute does not parse as "
                            "ChakraProtoMsg.AttributeProto (corrupt file)"
                        ) from None
                    cache[raw] = entry
                if entry[0] not in attrs:
                    attrs[entry[0]] = entry[1]
                elif attrs[entry[0]] != entry[1]:  # which one wins differs between readers
                    raise EtError.in_file(path, f"node {msg.id}: attribute '{entry[0]}' is given twice, as "
                                          f"{attrs[entry[0]][1]!r} and {entry[1][1]!r}; keep one")
            for name in _NON_NEGATIVE_ATTRS:  # checked once per distinct attribute list
                value = attrs.get(name)
                if value is not None and value[0] in INTEGER_VALUE_FIELDS and value[1] < 0:  # type: ignore[operator]
                    raise EtError.in_file(path, f"node {msg.id}: attribute '{name}' is {value[1]}; it must be >= 0")
        fields = records[record] = (msg.id, intern(msg.name), msg.type, deps, msg.duration_micros,
                                    msg.inputs.values, attrs)
        append(make(*fields, path, fields))
        last_id = msg.id
        index += 1
        pos = nxt
    return metadata, nodes


#: the longest duration whose nanoseconds still fit ASTRA-sim's 64-bit cycle counter
_MAX_DURATION_MICROS: Final = HORIZON_MICROS
#: integer attributes that count bytes or operations: a negative one is an error, not a
#: negative delay deep in the run (``comm_size`` is checked per message node below)
_NON_NEGATIVE_ATTRS: Final = ("tensor_size", "num_ops")
_MESSAGE_TYPES: Final = frozenset((COMM_SEND_NODE, COMM_RECV_NODE, COMM_COLL_NODE))
#: the largest message size: Chakra writes comm_size as an int64 (the microbenchmark's bound too)
_MAX_COMM_SIZE: Final = 2**63 - 1


def read_metadata(path: str) -> dict:
    """Only the GlobalMetadata of one ET file, ``{"version": str, "attrs": {...}}`` (the first
    record: a few bytes read, however large the trace); raises :class:`EtError` as read_et."""
    try:
        with open(path, "rb") as f:
            head = f.read(10)
            if not head:
                raise EtError.in_file(path, "empty file, expected a GlobalMetadata record first")
            size, pos = _slow_varint(path, head, 0, 0, None)
            f.seek(pos)
            body = f.read(size)
    except OSError as exc:
        raise EtError.in_file(path, f"cannot read ({exc.strerror or exc})") from None
    if len(body) < size:
        raise EtError.in_file(path, "record 0 (GlobalMetadata) is truncated")
    try:
        meta = GlobalMetadata.FromString(body)
    except DecodeError:
        raise EtError.in_file(path, "record 0 does not parse as ChakraProtoMsg.GlobalMetadata") from None
    return {"version": meta.version, "attrs": _decode_attrs(meta.attr)}


def validate_graph(path: str, nodes: Sequence[EtNode]) -> None:
    """Check what ASTRA-sim's feeder needs of a node graph, with a precise message.

    Rejects: no nodes, a negative message size, duplicate ids, a dependency on an id absent from the file, and a
    dependency cycle (the simulator would hang or abort). Iterative (Kahn), so ~200k nodes
    need no recursion.
    """
    if not nodes:
        raise EtError.in_file(path, "no nodes (every rank needs at least one node)")
    index: dict[int, int] = {}
    total_micros = 0
    for i, node in enumerate(nodes):
        if node.type in _MESSAGE_TYPES:  # ASTRA-sim reads comm_size as uint64: -1 is 16 EiB
            size = node.attrs.get("comm_size")
            if size is not None and size[0] in INTEGER_VALUE_FIELDS and size[1] < 0:  # type: ignore[operator]
                raise node.error(f"attribute 'comm_size' is {size[1]}; a message size must be >= 0 bytes", path)
            if size is not None and size[0] in INTEGER_VALUE_FIELDS and size[1] > _MAX_COMM_SIZE:  # type: ignore[operator]
                # a uint64 past int64 (UINT64_MAX, a sentinel's "unknown") is -1's 16 EiB again
                raise node.error(f"attribute 'comm_size' is {size[1]:,} bytes, past Chakra's int64 comm_size "
                                 f"(at most {_MAX_COMM_SIZE:,}, 8 EiB); give the message's size in bytes", path)
        total_micros += node.duration_micros
        if node.duration_micros > _MAX_DURATION_MICROS:  # ASTRA-sim's cycle counter is a uint64 of ns
            raise node.error(f"duration_micros is {node.duration_micros} us, past the horizon "
                             f"(at most {_MAX_DURATION_MICROS} us, about 292 years: simulated time must fit "
                             f"2^63 ns)", path)
        prev = index.setdefault(node.id, i)
        if prev != i:
            raise EtError.in_file(
                path, f"node {node.id}: duplicate node id (records {prev + 1} and {i + 1}; "
                "ids must be unique)"
            )
    if total_micros > _MAX_DURATION_MICROS:  # every node fits, the run's finish would not
        raise EtError.in_file(path, f"the nodes' duration_micros add up to {total_micros} us, past the "
                              f"horizon (at most {_MAX_DURATION_MICROS} us, about 292 years: simulated time must fit "
                              f"2^63 ns)")
    indegree = [0] * len(nodes)
    children: list[list[int]] = [[] for _ in nodes]
    for i, node in enumerate(nodes):
        for dep in node.deps:
            j = index.get(dep)
            if j is None:
                raise EtError.in_file(
                    path, f"node {node.id} ('{node.name}'): depends on node {dep}, "
                    "which is not in the file"
                )
            indegree[i] += 1
            children[j].append(i)

    ready = [i for i, d in enumerate(indegree) if d == 0]
    done = 0
    while ready:
        i = ready.pop()
        done += 1
        for c in children[i]:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
    if done == len(nodes):
        return

    # Every unfinished node has an unfinished dependency: walk those until a node repeats.
    start = next(i for i, d in enumerate(indegree) if d > 0)
    seen: dict[int, int] = {}
    walk: list[int] = []
    i = start
    while i not in seen:
        seen[i] = len(walk)
        walk.append(i)
        i = next(index[d] for d in nodes[i].deps if indegree[index[d]] > 0)
    cycle = walk[seen[i]:]
    cycle.reverse()  # dependency order: each node waits for the one before it
    ids = [nodes[k].id for k in cycle]
    shown = " -> ".join(str(x) for x in ids[:8]) + (" -> ..." if len(ids) > 8 else "")
    raise EtError.in_file(
        path, f"node {ids[0]} ('{nodes[cycle[0]].name}'): dependency cycle {shown} -> {ids[0]} "
        f"({len(ids)} node(s); no node on it can ever become ready)"
    )


def et_path(prefix: str, rank: int) -> str:
    """``PREFIX.{rank}.et``, the name ASTRA-sim opens for a rank."""
    return f"{prefix}.{rank}.et"


#: beside a lazily generated trace's ET files: ``PREFIX.ranks.json``, its rank summary
#: (:class:`~simpy_astra.workloads.rank_summary.LazyTraces`)
SUMMARY_SUFFIX = ".ranks.json"


def has_rank_summary(prefix: str) -> bool:
    """Whether the trace at ``prefix`` was generated lazily (it has a rank summary): its ET
    files are written when a run needs them, so they may not exist yet."""
    return os.path.exists(prefix + SUMMARY_SUFFIX)


def count_et_files(prefix: str) -> int:
    """Number of consecutive ranks 0, 1, ... for which ``PREFIX.r.et`` exists."""
    rank = 0
    while os.path.isfile(et_path(prefix, rank)):
        rank += 1
    return rank


def read_et_prefix(prefix: str, num_npus: int, *, validate: bool = True) -> list[list[EtNode]]:
    """Read (and by default validate) ``PREFIX.0.et`` .. ``PREFIX.{num_npus-1}.et``.

    All ranks are checked for existence first so a count mismatch is reported before any
    (possibly slow) decoding.
    """
    for rank in range(num_npus):
        path = et_path(prefix, rank)
        if not os.path.isfile(path):
            found = count_et_files(prefix)
            reason = "does not exist" if not os.path.exists(path) else "is not a regular file"
            raise EtError(
                f"workload file: {path} {reason} ({num_npus} NPUs need {prefix}.0.et .. "
                f"{et_path(prefix, num_npus - 1)}; {found} consecutive ET file(s) found from rank 0)"
            )
    result: list[list[EtNode]] = []
    cache: dict[bytes, tuple[str, AttrValue]] = {}
    dicts: dict[tuple[bytes, ...], dict[str, AttrValue]] = {}
    for rank in range(num_npus):
        path = et_path(prefix, rank)
        _, nodes = read_et(path, attr_cache=cache, attrs_cache=dicts)
        if validate:
            validate_graph(path, nodes)
        result.append(nodes)
    return result


# Writing
