"""Chakra execution-trace schema (``et_def.proto``, schema 0.0.4) built in Python at import time.

Why built by hand: simpy-astra must not depend on ``protoc`` nor ship a copy of Chakra's
``.proto`` file, and it must coexist with an installed ``mlc-chakra`` (which registers
``ChakraProtoMsg.*`` in protobuf's default descriptor pool). The schema is therefore described
as a ``FileDescriptorProto`` and loaded into a *private* ``DescriptorPool``; the resulting
classes are wire-compatible with Chakra's (same package, message names and field numbers)
and are parsed by protobuf's C-backed (upb) runtime.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

# the type numbers live in the protobuf-free chakra.types; re-exported here
from simpy_astra.workloads.chakra.types import (  # noqa: F401
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    BARRIER,
    BATCH_NODE,
    BROADCAST,
    CHECKPOINT_NODE,
    COLLECTIVE_COMM_TYPES,
    COLLECTIVE_NAMES,
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    GATHER,
    INVALID_NODE,
    MEM_LOAD_NODE,
    MEM_STORE_NODE,
    METADATA_NODE,
    NODE_TYPE_NAMES,
    NODE_TYPES,
    REDUCE,
    REDUCE_SCATTER,
    REDUCE_SCATTER_BLOCK,
    SCATTER,
    STORAGE_NODE,
)

PACKAGE = "ChakraProtoMsg"
SCHEMA_VERSION = "0.0.4"
_FILE_NAME = "simpy_astra_chakra_et_def.proto"

_F = descriptor_pb2.FieldDescriptorProto

# (value kind, protobuf field type, list message) in AttributeProto field-number order:
# kind_val = 3 + 2*i, kind_list = 4 + 2*i.
_SCALAR_KINDS: tuple[tuple[str, int, str], ...] = (
    ("double", _F.TYPE_DOUBLE, "DoubleList"),
    ("float", _F.TYPE_FLOAT, "FloatList"),
    ("int32", _F.TYPE_INT32, "Int32List"),
    ("int64", _F.TYPE_INT64, "Int64List"),
    ("uint32", _F.TYPE_UINT32, "Uint32List"),
    ("uint64", _F.TYPE_UINT64, "Uint64List"),
    ("sint32", _F.TYPE_SINT32, "Sint32List"),
    ("sint64", _F.TYPE_SINT64, "Sint64List"),
    ("fixed32", _F.TYPE_FIXED32, "Fixed32List"),
    ("fixed64", _F.TYPE_FIXED64, "Fixed64List"),
    ("sfixed32", _F.TYPE_SFIXED32, "Sfixed32List"),
    ("sfixed64", _F.TYPE_SFIXED64, "Sfixed64List"),
    ("bool", _F.TYPE_BOOL, "BoolList"),
    ("string", _F.TYPE_STRING, "StringList"),
    ("bytes", _F.TYPE_BYTES, "BytesList"),
)

#: AttributeProto oneof member names, in field-number order (3..32).
ATTR_VALUE_FIELDS: tuple[str, ...] = tuple(
    f"{kind}_{suffix}" for kind, _, _ in _SCALAR_KINDS for suffix in ("val", "list")
)
#: Kinds that ASTRA-sim's feeder converts to integers/bools by a plain cast.
INTEGER_VALUE_FIELDS: frozenset[str] = frozenset(
    f"{k}_val"
    for k in (
        "int32", "int64", "uint32", "uint64", "sint32", "sint64",
        "fixed32", "fixed64", "sfixed32", "sfixed64", "bool",
    )
)
FLOAT_VALUE_FIELDS: frozenset[str] = frozenset({"double_val", "float_val"})
LIST_VALUE_FIELDS: frozenset[str] = frozenset(f for f in ATTR_VALUE_FIELDS if f.endswith("_list"))


def _field(
    msg: descriptor_pb2.DescriptorProto,
    name: str,
    number: int,
    ftype: int,
    *,
    repeated: bool = False,
    type_name: str | None = None,
    oneof_index: int | None = None,
    proto3_optional: bool = False,
) -> None:
    f = msg.field.add(name=name, number=number, type=ftype)
    f.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if type_name is not None:
        f.type_name = f".{PACKAGE}.{type_name}"
    if oneof_index is not None:
        f.oneof_index = oneof_index
    if proto3_optional:
        f.proto3_optional = True


def build_file_descriptor_proto() -> descriptor_pb2.FileDescriptorProto:
    """Describe Chakra's ``et_def.proto`` (minus ``Tensor``/``StorageInfo``, unused here)."""
    fdp = descriptor_pb2.FileDescriptorProto(name=_FILE_NAME, package=PACKAGE, syntax="proto3")

    attr = fdp.message_type.add(name="AttributeProto")
    _field(attr, "name", 1, _F.TYPE_STRING)
    _field(attr, "doc_string", 2, _F.TYPE_STRING)
    attr.oneof_decl.add(name="value")
    for i, (kind, ftype, list_name) in enumerate(_SCALAR_KINDS):
        _field(attr, f"{kind}_val", 3 + 2 * i, ftype, oneof_index=0)
        _field(attr, f"{kind}_list", 4 + 2 * i, _F.TYPE_MESSAGE, type_name=list_name, oneof_index=0)

    for _kind, ftype, list_name in _SCALAR_KINDS:
        lst = fdp.message_type.add(name=list_name)
        _field(lst, "values", 1, ftype, repeated=True)  # proto3: packed by default

    meta = fdp.message_type.add(name="GlobalMetadata")
    _field(meta, "version", 1, _F.TYPE_STRING)
    _field(meta, "attr", 2, _F.TYPE_MESSAGE, repeated=True, type_name="AttributeProto")

    for enum_name, values in (("NodeType", NODE_TYPES), ("CollectiveCommType", COLLECTIVE_COMM_TYPES)):
        enum = fdp.enum_type.add(name=enum_name)
        for value_name, number in values.items():
            enum.value.add(name=value_name, number=number)

    node = fdp.message_type.add(name="Node")
    _field(node, "id", 1, _F.TYPE_UINT64)
    _field(node, "name", 2, _F.TYPE_STRING)
    _field(node, "type", 3, _F.TYPE_ENUM, type_name="NodeType")
    _field(node, "ctrl_deps", 4, _F.TYPE_UINT64, repeated=True)
    _field(node, "data_deps", 5, _F.TYPE_UINT64, repeated=True)
    _field(node, "start_time_micros", 6, _F.TYPE_UINT64)
    _field(node, "duration_micros", 7, _F.TYPE_UINT64)
    _field(node, "inputs", 8, _F.TYPE_MESSAGE, type_name="IOInfo")
    _field(node, "outputs", 9, _F.TYPE_MESSAGE, type_name="IOInfo")
    _field(node, "attr", 10, _F.TYPE_MESSAGE, repeated=True, type_name="AttributeProto")

    io = fdp.message_type.add(name="IOInfo")
    for number, name in enumerate(("values", "shapes", "types"), start=1):
        _field(io, name, number, _F.TYPE_STRING)
    return fdp


# A private pool: registering ChakraProtoMsg.* in the default pool would collide with
# mlc-chakra's et_def_pb2 if both are imported in one process.
POOL = descriptor_pool.DescriptorPool()
FILE_DESCRIPTOR = POOL.AddSerializedFile(build_file_descriptor_proto().SerializeToString())


def _message_class(name: str) -> type:
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(f"{PACKAGE}.{name}"))


def _raw_attr_node_class() -> type:
    """A ``Node`` twin whose ``attr`` (field 10) is declared ``repeated bytes``.

    Same wire format, so any Node record parses with it; the reader gets each attribute as a
    ``bytes`` object for one cheap C call and decodes each distinct attribute once (a cache keyed
    by those bytes). Accessing ``Node.attr`` element by element through the protobuf Python API
    costs about 4 us per attribute, which dominated reading. Lives in its own pool because it has
    the same full name as the real ``Node``.
    """
    fdp = build_file_descriptor_proto()
    fdp.name = "simpy_astra_chakra_et_def_raw_attr.proto"
    for msg in fdp.message_type:
        if msg.name == "Node":
            for field in msg.field:
                if field.name == "attr":
                    field.type = _F.TYPE_BYTES
                    field.ClearField("type_name")
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(fdp.SerializeToString())
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.Node"))


NodeRawAttrs = _raw_attr_node_class()

AttributeProto = _message_class("AttributeProto")
GlobalMetadata = _message_class("GlobalMetadata")
Node = _message_class("Node")
IOInfo = _message_class("IOInfo")
DoubleList = _message_class("DoubleList")
FloatList = _message_class("FloatList")
Int32List = _message_class("Int32List")
Int64List = _message_class("Int64List")
Uint32List = _message_class("Uint32List")
Uint64List = _message_class("Uint64List")
Sint32List = _message_class("Sint32List")
Sint64List = _message_class("Sint64List")
Fixed32List = _message_class("Fixed32List")
Fixed64List = _message_class("Fixed64List")
Sfixed32List = _message_class("Sfixed32List")
Sfixed64List = _message_class("Sfixed64List")
BoolList = _message_class("BoolList")
StringList = _message_class("StringList")
BytesList = _message_class("BytesList")

