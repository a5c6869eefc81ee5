"""Read, validate and write Chakra execution traces (``PREFIX.{rank}.et``) as ASTRA-sim does.

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
from dataclasses import dataclass, field
from typing import Final

from google.protobuf.message import DecodeError

from simpy_astra.workloads.chakra_schema import (
    ATTR_VALUE_FIELDS,
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    INTEGER_VALUE_FIELDS,
    LIST_VALUE_FIELDS,
    NODE_TYPE_NAMES,
    SCHEMA_VERSION,
    AttributeProto,
    GlobalMetadata,
    Node,
    NodeRawAttrs,
)

__all__ = [
    "EtError",
    "EtNode",
    "count_et_files",
    "encode_varint",
    "et_path",
    "make_attr",
    "make_node",
    "read_et",
    "read_et_prefix",
    "validate_graph",
    "write_et",
]

AttrValue = tuple[str | None, object]
"""(oneof field name such as ``"int64_val"`` or ``None`` when no value is set, Python value)."""


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<required>"


_MISSING: Final = _Missing()

_KIND_SET: Final = frozenset(ATTR_VALUE_FIELDS)
_INTEGER_KINDS_TEXT: Final = "an integer kind (int32/int64/uint32/uint64/sint/fixed/sfixed/bool)"


class EtError(Exception):
    """A Chakra ET file (or a node in it) that cannot be simulated; the message is one line."""


def _type_label(node_type: int) -> str:
    name = NODE_TYPE_NAMES.get(node_type)
    return name.removesuffix("_NODE") if name is not None else f"type-{node_type}"


def _describe(kind: str | None, value: object) -> str:
    if kind is None:
        return "set without a value"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"of kind {kind} ({text})"


@dataclass(slots=True)
class EtNode:
    """One ``ChakraProtoMsg.Node``, flattened for the simulator.

    ``deps`` is ctrl_deps followed by data_deps with duplicates removed (ASTRA-sim waits for the
    union of both). ``attrs`` keeps the *first* attribute of each name, as the feeder's lookup
    does. ``source`` is the file path (one shared string per file) so errors can name it.
    """

    id: int
    name: str
    type: int
    deps: tuple[int, ...]
    duration_micros: int
    inputs_values: str
    attrs: dict[str, AttrValue]
    source: str = ""
    #: the decoded fields this node was made from; ranks repeating a record share one tuple
    #: (``read_et``'s ``record_cache``), which lets callers compare ranks cheaply
    shared: tuple = field(default=(), compare=False, repr=False)

    @property
    def type_label(self) -> str:
        """``COMM_COLL`` for type 7 etc.; used in messages."""
        return _type_label(self.type)

    def error(self, what: str, path: str | None = None) -> EtError:
        """An :class:`EtError` ``"<file>: node <id>: <what>"`` for this node."""
        return EtError(f"{path or self.source or '<memory>'}: node {self.id}: {what}")

    def has_attr(self, name: str) -> bool:
        return name in self.attrs

    def _missing(self, name: str, path: str | None, required_for: str | None) -> EtError:
        why = required_for or f"{self.type_label} nodes"
        return self.error(f"attribute '{name}' is missing (required for {why})", path)

    def _wrong(self, name: str, kind: str | None, value: object, expected: str, path: str | None) -> EtError:
        return self.error(f"attribute '{name}' is {_describe(kind, value)}; expected {expected}", path)

    def get_int(
        self,
        name: str,
        default: object = _MISSING,
        *,
        path: str | None = None,
        bits: int | None = None,
        required_for: str | None = None,
    ) -> int:
        """Integer attribute under the feeder's rules: any integer kind or bool, by plain cast.

        Floating values never convert (ASTRA-sim throws ``bad_cast``). ``bits`` mimics
        ``static_cast<uintN_t>`` (e.g. 32 for ``comm_src``), wrapping negative values.
        """
        found = self.attrs.get(name)
        if found is None:
            if default is _MISSING:
                raise self._missing(name, path, required_for)
            return default  # type: ignore[return-value]
        kind, value = found
        if kind not in INTEGER_VALUE_FIELDS:
            raise self._wrong(name, kind, value, _INTEGER_KINDS_TEXT, path)
        result = int(value)  # type: ignore[call-overload]
        if bits is not None:
            result &= (1 << bits) - 1
        return result

    def get_bool(
        self,
        name: str,
        default: object = _MISSING,
        *,
        path: str | None = None,
        required_for: str | None = None,
    ) -> bool:
        """Boolean attribute: bool or any integer kind (non-zero is true), never float/string."""
        found = self.attrs.get(name)
        if found is None:
            if default is _MISSING:
                raise self._missing(name, path, required_for)
            return default  # type: ignore[return-value]
        kind, value = found
        if kind not in INTEGER_VALUE_FIELDS:
            raise self._wrong(name, kind, value, "bool_val or " + _INTEGER_KINDS_TEXT, path)
        return bool(value)

    def get_str(
        self,
        name: str,
        default: object = _MISSING,
        *,
        path: str | None = None,
        required_for: str | None = None,
    ) -> str:
        """String attribute: only ``string_val`` (an integer ``pg_name`` is an error)."""
        found = self.attrs.get(name)
        if found is None:
            if default is _MISSING:
                raise self._missing(name, path, required_for)
            return default  # type: ignore[return-value]
        kind, value = found
        if kind != "string_val":
            raise self._wrong(name, kind, value, "string_val", path)
        return value  # type: ignore[return-value]

    def get_bool_list(
        self,
        name: str,
        default: object = _MISSING,
        *,
        path: str | None = None,
        required_for: str | None = None,
    ) -> tuple[bool, ...]:
        """``bool_list`` attribute (e.g. ``involved_dim``); any other kind is an error."""
        found = self.attrs.get(name)
        if found is None:
            if default is _MISSING:
                raise self._missing(name, path, required_for)
            return default  # type: ignore[return-value]
        kind, value = found
        if kind != "bool_list":
            raise self._wrong(name, kind, value, "bool_list", path)
        return value  # type: ignore[return-value]

    def get_string_list(
        self,
        name: str,
        default: object = _MISSING,
        *,
        path: str | None = None,
        strict: bool = True,
        required_for: str | None = None,
    ) -> tuple[str, ...]:
        """``string_list`` attribute (e.g. ``inputs``/``outputs``).

        With ``strict=False`` a present attribute of another kind (or without a value) reads as
        empty, which is what ASTRA-sim's memory tracker does (``!has_string_list() -> skip``).
        """
        found = self.attrs.get(name)
        if found is None:
            if default is _MISSING:
                raise self._missing(name, path, required_for)
            return default  # type: ignore[return-value]
        kind, value = found
        if kind != "string_list":
            if not strict:
                return ()
            raise self._wrong(name, kind, value, "string_list", path)
        return value  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------
# Reading


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
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise EtError(f"workload file: {path} does not exist") from None
    except IsADirectoryError:
        raise EtError(f"workload file: {path} is a directory, expected a Chakra ET file") from None
    except PermissionError:
        raise EtError(f"workload file: {path} exists but is not readable") from None
    except OSError as exc:
        raise EtError(f"workload file: {path} cannot be read ({exc.strerror or exc})") from None


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
            raise EtError(
                f"{path}: {_record_label(index, last_id)} at byte {start}: "
                "length prefix runs past end of file (truncated file)"
            )
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
        if shift > 28:
            raise EtError(
                f"{path}: {_record_label(index, last_id)} at byte {start}: "
                "length prefix is longer than 5 bytes (corrupt file; expected a varint32 length)"
            )
    if value >= 1 << 32:
        raise EtError(
            f"{path}: {_record_label(index, last_id)} at byte {start}: "
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
        raise EtError(f"{path}: empty file, expected a GlobalMetadata record first")

    view = memoryview(buf)
    # Record 0: GlobalMetadata.
    first = buf[0]
    if first < 0x80:
        size, pos = first, 1
    else:
        size, pos = _slow_varint(path, buf, 0, 0, None)
    nxt = pos + size
    if nxt > end:
        raise EtError(
            f"{path}: record 0 (GlobalMetadata) at byte 0: length prefix says {size} bytes "
            f"but only {end - pos} remain (truncated file, or not a Chakra ET file)"
        )
    try:
        meta_msg = GlobalMetadata.FromString(view[pos:nxt])
    except DecodeError:
        raise EtError(
            f"{path}: record 0 at byte 0: {size} bytes do not parse as ChakraProtoMsg.GlobalMetadata "
            "(not a Chakra ET file?)"
        ) from None
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
            raise EtError(
                f"{path}: {_record_label(index, last_id)} at byte {start}: length prefix says "
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
            raise EtError(
                f"{path}: {_record_label(index, last_id)} at byte {start}: {size} bytes do not "
                "parse as ChakraProtoMsg.Node (corrupt file)"
            ) from None
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
                        raise EtError(
                            f"{path}: node {msg.id}: an attribute does not parse as "
                            "ChakraProtoMsg.AttributeProto (corrupt file)"
                        ) from None
                    cache[raw] = entry
                if entry[0] not in attrs:
                    attrs[entry[0]] = entry[1]
        fields = records[record] = (msg.id, intern(msg.name), msg.type, deps, msg.duration_micros,
                                    msg.inputs.values, attrs)
        append(make(*fields, path, fields))
        last_id = msg.id
        index += 1
        pos = nxt
    return metadata, nodes


_MESSAGE_TYPES: Final = frozenset((COMM_SEND_NODE, COMM_RECV_NODE, COMM_COLL_NODE))


def validate_graph(path: str, nodes: Sequence[EtNode]) -> None:
    """Check what ASTRA-sim's feeder needs of a node graph, with a precise message.

    Rejects: no nodes, a negative message size, duplicate ids, a dependency on an id absent from the file, and a
    dependency cycle (the simulator would hang or abort). Iterative (Kahn), so ~200k nodes
    need no recursion.
    """
    if not nodes:
        raise EtError(f"{path}: no nodes (every rank needs at least one node)")
    index: dict[int, int] = {}
    for i, node in enumerate(nodes):
        if node.type in _MESSAGE_TYPES:  # ASTRA-sim reads comm_size as uint64: -1 is 16 EiB
            size = node.attrs.get("comm_size")
            if size is not None and size[0] in INTEGER_VALUE_FIELDS and size[1] < 0:  # type: ignore[operator]
                raise node.error(f"attribute 'comm_size' is {size[1]}; a message size must be >= 0 bytes", path)
        prev = index.setdefault(node.id, i)
        if prev != i:
            raise EtError(
                f"{path}: node {node.id}: duplicate node id (records {prev + 1} and {i + 1}; "
                "ids must be unique)"
            )
    indegree = [0] * len(nodes)
    children: list[list[int]] = [[] for _ in nodes]
    for i, node in enumerate(nodes):
        for dep in node.deps:
            j = index.get(dep)
            if j is None:
                raise EtError(
                    f"{path}: node {node.id} ('{node.name}'): depends on node {dep}, "
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
    raise EtError(
        f"{path}: node {ids[0]} ('{nodes[cycle[0]].name}'): dependency cycle {shown} -> {ids[0]} "
        f"({len(ids)} node(s); no node on it can ever become ready)"
    )


def et_path(prefix: str, rank: int) -> str:
    """``PREFIX.{rank}.et``, the name ASTRA-sim opens for a rank."""
    return f"{prefix}.{rank}.et"


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


# --------------------------------------------------------------------------------------------
# Writing


def encode_varint(n: int) -> bytes:
    """Unsigned LEB128 (the ET length prefix); ``n`` must be in ``[0, 2**32)``."""
    if not 0 <= n < 1 << 32:
        raise ValueError(f"ET record length must be in [0, 2**32), got {n}")
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _set_attr_value(attr, kind: str | None, value: object) -> None:
    if kind is None:
        return
    if kind not in _KIND_SET:
        raise ValueError(f"attribute '{attr.name}': unknown value kind {kind!r}")
    if kind in LIST_VALUE_FIELDS:
        sub = getattr(attr, kind)
        sub.SetInParent()
        sub.values.extend(value)  # type: ignore[arg-type]
    else:
        setattr(attr, kind, value)


def _infer_kind(name: str, value: object) -> tuple[str | None, object]:
    if value is None:
        return None, None
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], str)
        and value[0].endswith(("_val", "_list"))
    ):
        return value[0], value[1]  # explicit kind; an unknown one is rejected when set
    if isinstance(value, bool):
        return "bool_val", value
    if isinstance(value, int):
        return "int64_val", value
    if isinstance(value, float):
        return "double_val", value
    if isinstance(value, str):
        return "string_val", value
    if isinstance(value, bytes):
        return "bytes_val", value
    if isinstance(value, (list, tuple)):
        items = list(value)
        if items and all(isinstance(v, bool) for v in items):
            return "bool_list", items
        if items and all(isinstance(v, str) for v in items):
            return "string_list", items
        if items and all(isinstance(v, int) and not isinstance(v, bool) for v in items):
            return "int64_list", items
        if items and all(isinstance(v, float) for v in items):
            return "double_list", items
    raise ValueError(
        f"attribute '{name}': cannot infer a Chakra value kind for {value!r}; "
        "pass (kind, value), e.g. ('uint64_list', [])"
    )


def make_attr(name: str, value: object):
    """``AttributeProto`` from a Python value (see :func:`make_node` for the mapping)."""
    kind, val = _infer_kind(name, value)
    attr = AttributeProto(name=name)
    _set_attr_value(attr, kind, val)
    return attr


def make_node(
    id: int,  # noqa: A002 - mirrors the protobuf field name
    name: str,
    type: int,  # noqa: A002
    deps: Iterable[int] = (),
    ctrl_deps: Iterable[int] = (),
    duration_micros: int = 0,
    attrs: dict[str, object] | None = None,
    inputs_values: str = "",
):
    """Build a protobuf ``Node`` for tests and generators.

    ``deps`` become ``data_deps``. Attribute values: bool -> bool_val, int -> int64_val,
    float -> double_val, str -> string_val, bytes -> bytes_val, list of bool/str/int/float ->
    bool_list/string_list/int64_list/double_list, ``None`` -> attribute without a value, and
    a ``(kind, value)`` tuple such as ``("uint64_val", 5)`` forces a kind.
    """
    node = Node(id=id, name=name, type=type, duration_micros=duration_micros)
    node.data_deps.extend(deps)
    node.ctrl_deps.extend(ctrl_deps)
    if inputs_values:
        node.inputs.values = inputs_values
    for attr_name, value in (attrs or {}).items():
        node.attr.append(make_attr(attr_name, value))
    return node


def _to_message(node: object):
    if isinstance(node, EtNode):
        msg = Node(
            id=node.id,
            name=node.name,
            type=node.type,
            duration_micros=node.duration_micros,
        )
        msg.data_deps.extend(node.deps)
        if node.inputs_values:
            msg.inputs.values = node.inputs_values
        for attr_name, (kind, value) in node.attrs.items():
            attr = msg.attr.add(name=attr_name)
            _set_attr_value(attr, kind, value)
        return msg
    if isinstance(node, Node):
        return node
    if type(node).__name__ == "Node" and hasattr(node, "SerializeToString"):
        return node  # a wire-compatible Node from another pool (e.g. mlc-chakra's et_def_pb2)
    raise TypeError(f"write_et: expected EtNode or ChakraProtoMsg.Node, got {type(node).__name__}")


def write_et(path: str, nodes: Iterable[object], version: str = SCHEMA_VERSION,
             metadata_attrs: dict[str, object] | None = None) -> None:
    """Write ``GlobalMetadata(version)`` and then every node (``Node`` messages or EtNodes).

    ``metadata_attrs`` adds attributes to the metadata record (Chakra's text converter stores
    its schema label and the source text there); pass ``version=""`` to leave the version unset.
    """
    parts = []
    metadata = GlobalMetadata(version=version)
    for attr_name, value in (metadata_attrs or {}).items():
        metadata.attr.append(make_attr(attr_name, value))
    meta = metadata.SerializeToString()
    parts.append(encode_varint(len(meta)))
    parts.append(meta)
    for node in nodes:
        data = _to_message(node).SerializeToString()
        parts.append(encode_varint(len(data)))
        parts.append(data)
    with open(path, "wb") as f:
        f.write(b"".join(parts))

