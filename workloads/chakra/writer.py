"""Writing Chakra execution traces: nodes and attributes built from Python values, and
``PREFIX.{rank}.et`` files in the length-prefixed protobuf layout ASTRA-sim reads.
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Iterable, Sequence

from simpy_astra.workloads.chakra.node import ATTR_KINDS, EtNode
from simpy_astra.workloads.chakra.schema import (
    LIST_VALUE_FIELDS,
    SCHEMA_VERSION,
    AttributeProto,
    GlobalMetadata,
    Node,
)


def encode_varint(n: int) -> bytes:
    """Unsigned LEB128 (the ET length prefix); ``n`` must be in ``[0, 2**32)``."""
    if not 0 <= n < 1 << 32:
        raise ValueError(f"ET record length must be in [0, 2**32), got {n}")
    return _uint64_varint(n)


def _uint64_varint(n: int) -> bytes:
    """``n`` as a protobuf varint (``0 <= n < 2**64``)."""
    if not 0 <= n < 1 << 64:
        raise ValueError(f"a uint64 field must be in [0, 2**64), got {n}")
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def node_head_bytes(node_id: int, name: str, node_type: int, deps: Sequence[int], duration_micros: int) -> bytes:
    """The bytes ``make_node(node_id, name, node_type, deps=deps,
    duration_micros=duration_micros).SerializeToString()`` gives, written directly (proto3:
    fields at zero left out, ``data_deps`` packed, fields in number order). A generator writes
    one such head for each of a stage's ~16,000 nodes: building a message for each cost more
    than the bytes (for whole numbers it trusts; make_node checks a user's)."""
    varint = _VARINTS.__getitem__  # every field's number: ids, lengths, types and durations recur
    out = bytearray()
    if node_id:
        out += b"\x08" + varint(node_id)
    if name:
        encoded = name.encode()
        out += b"\x12" + varint(len(encoded)) + encoded
    if node_type:
        out += b"\x18" + varint(node_type)
    if deps:
        packed = b"".join(map(varint, deps))
        out += b"\x2a" + varint(len(packed)) + packed
    if duration_micros:
        out += b"\x38" + varint(duration_micros)
    return bytes(out)


class _Varints(dict):
    """Each number's varint, made on first use and kept below 2**20 (a stage's ids recur as
    its nodes' deps, its names' lengths, types and durations among its nodes; a bounded table,
    as a sweep's worker writes many traces)."""

    def __missing__(self, n: int) -> bytes:
        value = _uint64_varint(n)
        if n < 1 << 20:
            self[n] = value
        return value


_VARINTS = _Varints()


def _set_attr_value(attr, kind: str | None, value: object) -> None:
    if kind is None:
        return
    if kind not in ATTR_KINDS:
        raise ValueError(f"attribute '{attr.name}': unknown value kind {kind!r}")
    if kind in LIST_VALUE_FIELDS:
        sub = getattr(attr, kind)
        sub.SetInParent()
        sub.values.extend(value)  # type: ignore[arg-type]
    else:
        setattr(attr, kind, value)


def _plain(value: object) -> object:
    """A number of another type (numpy's ``int64``, ``float32``) as the Python int or float it
    is, so a generator may compute sizes and times in numpy; anything else as it is."""
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return value
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return float(value) if isinstance(value, numbers.Real) else value


def _is_uint64(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 64


def _uint64_field(field: str, value: object, node_id: object) -> int:
    """``value`` of a node's uint64 field (its id, a dependency) as an int, or a ValueError
    naming the field."""
    plain = _plain(value)
    if not _is_uint64(plain):
        what = "must be a node id" if field == "id" else "must list node ids"
        raise ValueError(f"make_node: node {node_id!r}: {field} {what}, whole numbers from 0 to 2^64-1 "
                         f"(Chakra's uint64; got {value!r})")
    return plain  # type: ignore[return-value]


def _infer_kind(name: str, value: object) -> tuple[str | None, object]:
    value = _plain(value)
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
        items = [_plain(v) for v in value]
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
    micros = _plain(duration_micros)
    if not _is_uint64(micros):
        raise ValueError(f"make_node: duration_micros must be a whole number of microseconds >= 0 (Chakra's "
                         f"uint64; got {duration_micros!r})")
    # protobuf's own words ("Value out of range: -1") named no field
    node_id = _uint64_field("id", id, id)
    data_deps = [_uint64_field("deps", dep, id) for dep in deps]
    control_deps = [_uint64_field("ctrl_deps", dep, id) for dep in ctrl_deps]
    if not isinstance(name, str):
        raise ValueError(f"make_node: node {id!r}: name must be a string (got {name!r})")
    node = Node(id=node_id, name=name, type=type, duration_micros=micros)
    node.data_deps.extend(data_deps)
    node.ctrl_deps.extend(control_deps)
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
