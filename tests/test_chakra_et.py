"""Tests for the Chakra ET layer: schema wire format, read/write, ASTRA-sim's attribute rules,
one-line errors, and the reference workloads shipped in ``/work/shared/reference``."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simpy_astra.workloads.chakra import (
    EtError,
    EtNode,
    count_et_files,
    encode_varint,
    make_attr,
    make_node,
    read_et,
    read_et_prefix,
    validate_graph,
    write_et,
)
from simpy_astra.workloads.chakra import schema as s
from tests.conftest import REFERENCE

REF_WORKLOADS = REFERENCE / "workloads"


def _ref(rel: str) -> Path:
    if not REF_WORKLOADS.is_dir():
        pytest.skip(f"reference workloads not available at {REF_WORKLOADS}")
    return REF_WORKLOADS / rel


def _one_line(exc: pytest.ExceptionInfo[EtError]) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


# ------------------------------------------------------------------------------------------
# Schema


def test_enum_constants() -> None:
    assert (s.INVALID_NODE, s.METADATA_NODE, s.MEM_LOAD_NODE, s.MEM_STORE_NODE) == (0, 1, 2, 3)
    assert (s.COMP_NODE, s.COMM_SEND_NODE, s.COMM_RECV_NODE, s.COMM_COLL_NODE) == (4, 5, 6, 7)
    assert (s.STORAGE_NODE, s.BATCH_NODE, s.CHECKPOINT_NODE) == (8, 9, 10)
    assert (s.ALL_REDUCE, s.REDUCE, s.ALL_GATHER, s.GATHER, s.SCATTER) == (0, 1, 2, 3, 4)
    assert (s.BROADCAST, s.ALL_TO_ALL, s.REDUCE_SCATTER, s.REDUCE_SCATTER_BLOCK, s.BARRIER) == (
        5, 6, 7, 8, 9,
    )
    enum = s.POOL.FindEnumTypeByName("ChakraProtoMsg.NodeType")
    assert {v.name: v.number for v in enum.values} == s.NODE_TYPES


def test_attribute_field_numbers() -> None:
    fields = {f.name: f.number for f in s.AttributeProto.DESCRIPTOR.fields}
    assert fields["name"] == 1 and fields["doc_string"] == 2
    expected = [
        "double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
        "fixed32", "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes",
    ]
    for i, kind in enumerate(expected):
        assert fields[f"{kind}_val"] == 3 + 2 * i
        assert fields[f"{kind}_list"] == 4 + 2 * i
    assert fields["bytes_list"] == 32
    oneof = s.AttributeProto.DESCRIPTOR.oneofs_by_name["value"]
    assert len(oneof.fields) == 30


def test_schema_lives_in_private_pool() -> None:
    from google.protobuf import descriptor_pool

    assert s.Node.DESCRIPTOR.file.pool is not descriptor_pool.Default()
    assert s.Node.DESCRIPTOR.full_name == "ChakraProtoMsg.Node"


def test_wire_format_matches_hand_encoding() -> None:
    """Bytes built by hand from the protobuf spec and Chakra's field numbers."""
    attr = b"\x0a\x09comm_size" + b"\x48\x80\x80\x40"  # int64_val (9, varint) = 1 << 20
    bl = b"\x0a\x03dim" + b"\xe2\x01\x04\x0a\x02\x01\x00"  # bool_list (28) {values packed [1, 0]}
    expected = (
        b"\x08\x11"  # id = 17
        + b"\x12\x02ar"  # name
        + b"\x18\x07"  # type = COMM_COLL_NODE
        + b"\x22\x01\x05"  # ctrl_deps packed [5]
        + b"\x2a\x02\x01\x02"  # data_deps packed [1, 2]
        + b"\x38\x09"  # duration_micros = 9
        + b"\x42\x03\x0a\x01v"  # inputs.values = "v"
        + b"\x52" + bytes([len(attr)]) + attr
        + b"\x52" + bytes([len(bl)]) + bl
    )
    node = make_node(17, "ar", s.COMM_COLL_NODE, deps=[1, 2], ctrl_deps=[5], duration_micros=9,
                     attrs={"comm_size": 1 << 20, "dim": [True, False]}, inputs_values="v")
    assert node.SerializeToString() == expected
    again = s.Node.FromString(expected)
    assert again.attr[0].int64_val == 1 << 20
    assert list(again.attr[1].bool_list.values) == [True, False]
    assert s.GlobalMetadata(version="0.0.4").SerializeToString() == b"\x0a\x050.0.4"


def test_encode_varint() -> None:
    assert encode_varint(0) == b"\x00"
    assert encode_varint(127) == b"\x7f"
    assert encode_varint(128) == b"\x80\x01"
    assert encode_varint(300) == b"\xac\x02"
    assert encode_varint(2**32 - 1) == b"\xff\xff\xff\xff\x0f"
    with pytest.raises(ValueError):
        encode_varint(2**32)
    with pytest.raises(ValueError):
        encode_varint(-1)


# ------------------------------------------------------------------------------------------
# Round trips

ALL_KINDS: dict[str, object] = {
    "double_val": 1e300,
    "double_list": [0.5, -2.25, math.inf],
    "float_val": 0.5,
    "float_list": [0.25, -1.5],
    "int32_val": -5,
    "int32_list": [-(2**31), 2**31 - 1],
    "int64_val": -(2**63),
    "int64_list": [0, 2**63 - 1],
    "uint32_val": 2**32 - 1,
    "uint32_list": [0, 7],
    "uint64_val": 2**64 - 1,
    "uint64_list": [2**64 - 1, 1],
    "sint32_val": -(2**31),
    "sint32_list": [-1, 1],
    "sint64_val": -(2**63),
    "sint64_list": [-3, 3],
    "fixed32_val": 2**32 - 1,
    "fixed32_list": [1, 2],
    "fixed64_val": 2**64 - 1,
    "fixed64_list": [3],
    "sfixed32_val": -7,
    "sfixed32_list": [-7, 7],
    "sfixed64_val": -(2**63),
    "sfixed64_list": [-(2**63)],
    "bool_val": True,
    "bool_list": [True, False, True],
    "string_val": "grüße",
    "string_list": ["a", "", "ü"],
    "bytes_val": b"\x00\xff",
    "bytes_list": [b"", b"\x01"],
}


def test_round_trip_every_node_type_and_attribute_kind(tmp_path: Path) -> None:
    path = tmp_path / "wl.0.et"
    nodes = []
    for node_type in range(11):
        nodes.append(make_node(100 + node_type, f"n{node_type}", node_type,
                               deps=[100 + node_type - 1] if node_type else (),
                               duration_micros=node_type * 3))
    kinds = {f"a_{kind}": (kind, value) for kind, value in ALL_KINDS.items()}
    kinds["zero_int"] = ("int64_val", 0)  # oneof presence: a default value still round-trips
    kinds["false_bool"] = False
    kinds["empty_list"] = ("uint64_list", [])
    kinds["no_value"] = None
    nodes.append(make_node(7, "kinds", s.COMP_NODE, deps=[110], ctrl_deps=[101, 110],
                           attrs=kinds, inputs_values="[[{}]]"))
    write_et(str(path), nodes)

    meta, got = read_et(str(path))
    assert meta["version"] == "0.0.4"
    assert [n.type for n in got] == [*range(11), s.COMP_NODE]
    assert [n.id for n in got] == [*range(100, 111), 7]
    assert got[3].deps == (102,) and got[3].duration_micros == 9 and got[3].name == "n3"
    assert got[0].deps == ()
    last = got[-1]
    assert last.deps == (101, 110)  # ctrl then data, duplicates removed
    assert last.inputs_values == "[[{}]]"
    assert last.source == str(path)
    for kind, value in ALL_KINDS.items():
        got_kind, got_value = last.attrs[f"a_{kind}"]
        assert got_kind == kind
        if kind.endswith("_list"):
            assert isinstance(got_value, tuple)
            assert list(got_value) == list(value)  # type: ignore[call-overload]
        else:
            assert got_value == value
    assert last.attrs["zero_int"] == ("int64_val", 0)
    assert last.attrs["false_bool"] == ("bool_val", False)
    assert last.attrs["empty_list"] == ("uint64_list", ())
    assert last.attrs["no_value"] == (None, None)
    validate_graph(str(path), got)

    # EtNode -> file -> EtNode is lossless for everything EtNode keeps.
    again_path = tmp_path / "again.0.et"
    write_et(str(again_path), got, version="9.9")
    meta2, again = read_et(str(again_path))
    assert meta2["version"] == "9.9"
    for a, b in zip(got, again, strict=True):
        assert (a.id, a.name, a.type, a.deps, a.duration_micros, a.inputs_values, a.attrs) == (
            b.id, b.name, b.type, b.deps, b.duration_micros, b.inputs_values, b.attrs,
        )


def test_empty_node_record_and_multibyte_lengths(tmp_path: Path) -> None:
    """A default Node serializes to 0 bytes; long records need multi-byte length prefixes."""
    path = tmp_path / "x.0.et"
    big = make_node(1, "x" * 70000, s.COMP_NODE, deps=[0])
    write_et(str(path), [s.Node(), big])
    raw = path.read_bytes()
    assert raw.startswith(b"\x07\x0a\x050.0.4\x00")
    _, nodes = read_et(str(path))
    assert [(n.id, n.type, n.name[:3]) for n in nodes] == [(0, 0, ""), (1, s.COMP_NODE, "xxx")]
    validate_graph(str(path), nodes)


def test_make_node_kind_inference() -> None:
    node = make_node(1, "n", s.COMP_NODE, attrs={
        "b": True, "i": 3, "f": 1.5, "s": "x", "y": b"z", "bl": [True], "sl": ["a"],
        "il": [1, 2], "fl": [0.5], "u": ("uint32_val", 4),
    })
    kinds = [(a.name, a.WhichOneof("value")) for a in node.attr]
    assert kinds == [
        ("b", "bool_val"), ("i", "int64_val"), ("f", "double_val"), ("s", "string_val"),
        ("y", "bytes_val"), ("bl", "bool_list"), ("sl", "string_list"), ("il", "int64_list"),
        ("fl", "double_list"), ("u", "uint32_val"),
    ]
    with pytest.raises(ValueError, match="cannot infer"):
        make_attr("e", [])
    with pytest.raises(ValueError, match="unknown value kind"):
        make_attr("e", ("int_val", 1))
    with pytest.raises(ValueError, match="cannot infer"):
        make_attr("e", {"x": 1})


# ------------------------------------------------------------------------------------------
# ASTRA-sim's attribute conversion rules


def _node(attrs: dict[str, object], tmp: Path, node_type: int = s.COMM_COLL_NODE) -> EtNode:
    """Node 17 written to and read back from ``workload.3.et``."""
    path = str(tmp / "workload.3.et")
    write_et(path, [make_node(17, "n", node_type, attrs=attrs)])
    return read_et(path)[1][0]


def test_integer_kinds_and_bool_convert_by_plain_cast(tmp_path: Path) -> None:
    attrs = {f"k_{k}": (k, 1) for k in s.INTEGER_VALUE_FIELDS if k != "bool_val"}
    attrs["flag"] = True
    attrs["zero"] = ("int32_val", 0)
    attrs["neg"] = ("int64_val", -1)
    node = _node(attrs, tmp_path)
    for k in s.INTEGER_VALUE_FIELDS - {"bool_val"}:
        assert node.get_int(f"k_{k}") == 1
        assert node.get_bool(f"k_{k}") is True
    assert node.get_int("flag") == 1 and type(node.get_int("flag")) is int
    assert node.get_bool("flag") is True
    assert node.get_bool("zero") is False  # STAGE writes is_cpu_op as int32_val
    assert node.get_int("neg") == -1
    assert node.get_int("neg", bits=32) == 2**32 - 1  # static_cast<uint32_t>(-1)


def test_floats_never_convert_to_integers(tmp_path: Path) -> None:
    node = _node({"comm_size": 1048576.0, "num_ops": ("float_val", 2.0)}, tmp_path)
    with pytest.raises(EtError) as exc:
        node.get_int("comm_size")
    msg = _one_line(exc)
    assert "workload.3.et" in msg and "node 17" in msg and "'comm_size'" in msg
    assert "double_val" in msg and "integer kind" in msg
    with pytest.raises(EtError, match="float_val"):
        node.get_int("num_ops")
    with pytest.raises(EtError, match="float_val"):
        node.get_bool("num_ops")


def test_strings_only_from_strings(tmp_path: Path) -> None:
    node = _node({"pg_name": 14, "name2": "14", "n": "3"}, tmp_path)
    with pytest.raises(EtError) as exc:
        node.get_str("pg_name")
    msg = _one_line(exc)
    assert "node 17" in msg and "'pg_name'" in msg and "int64_val" in msg and "string_val" in msg
    assert node.get_str("name2") == "14"
    with pytest.raises(EtError, match="string_val"):
        node.get_int("n")


def test_an_attribute_given_twice_with_different_values_is_an_error(tmp_path: Path) -> None:
    # ASTRA-sim takes the first silently; which one a reader takes differs (issue 40)
    msg = make_node(5, "ar", s.COMM_COLL_NODE)
    msg.attr.append(make_attr("comm_size", 100))
    msg.attr.append(make_attr("comm_size", 200))
    path = str(tmp_path / "w.0.et")
    write_et(path, [msg])
    with pytest.raises(EtError, match="node 5: attribute 'comm_size' is given twice, as 100 and 200"):
        read_et(path)


def test_an_attribute_repeated_with_the_same_value_reads(tmp_path: Path) -> None:
    msg = make_node(5, "ar", s.COMM_COLL_NODE)
    msg.attr.append(make_attr("comm_size", 100))
    msg.attr.append(make_attr("comm_size", 100))
    path = str(tmp_path / "w.0.et")
    write_et(path, [msg])
    assert read_et(path)[1][0].get_int("comm_size") == 100


@pytest.mark.parametrize("name", ["tensor_size", "num_ops"])
def test_negative_counts_are_errors(tmp_path: Path, name: str) -> None:
    msg = make_node(3, "c", s.COMP_NODE)
    msg.attr.append(make_attr(name, -4096))
    path = str(tmp_path / "w.0.et")
    write_et(path, [msg])
    with pytest.raises(EtError, match=f"node 3: attribute '{name}' is -4096; it must be >= 0"):
        read_et(path)


def test_missing_attributes_and_defaults(tmp_path: Path) -> None:
    node = _node({"involved_dim": ["a"], "outputs": None, "inputs": ["t", "8"]}, tmp_path)
    with pytest.raises(EtError) as exc:
        node.get_int("comm_size")
    assert _one_line(exc).endswith(
        "workload.3.et: node 17: attribute 'comm_size' is missing (required for COMM_COLL nodes)"
    )
    assert node.get_int("comm_priority", 0) == 0
    assert node.get_bool("is_cpu_op", False) is False
    assert node.get_str("pg_name", "") == ""
    assert node.get_bool_list("absent", (True,) * 4) == (True,) * 4
    with pytest.raises(EtError, match="'involved_dim' is of kind string_list"):
        node.get_bool_list("involved_dim")
    assert node.get_string_list("inputs") == ("t", "8")
    with pytest.raises(EtError, match="'outputs' is set without a value; expected string_list"):
        node.get_string_list("outputs")
    assert node.get_string_list("outputs", strict=False) == ()
    with pytest.raises(EtError, match="other.et: node 17: attribute 'x' is missing .required for roofline"):
        node.get_int("x", path="other.et", required_for="roofline")
    assert node.has_attr("outputs") and not node.has_attr("comm_size")


# ------------------------------------------------------------------------------------------
# File errors


def _meta() -> bytes:
    data = s.GlobalMetadata(version="0.0.4").SerializeToString()
    return encode_varint(len(data)) + data


def _rec(msg) -> bytes:
    data = msg.SerializeToString()
    return encode_varint(len(data)) + data


def test_missing_file_and_directory(tmp_path: Path) -> None:
    missing = tmp_path / "workload.5.et"
    with pytest.raises(EtError) as exc:
        read_et(str(missing))
    assert _one_line(exc) == f"workload file: {missing} does not exist"
    with pytest.raises(EtError, match="is a directory"):
        read_et(str(tmp_path))


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "workload.0.et"
    path.write_bytes(b"")
    with pytest.raises(EtError) as exc:
        read_et(str(path))
    assert str(path) in _one_line(exc) and "GlobalMetadata" in str(exc.value)


def test_truncated_record(tmp_path: Path) -> None:
    path = tmp_path / "workload.1.et"
    full = _meta() + _rec(make_node(41, "a", s.COMP_NODE)) + _rec(make_node(42, "b", s.COMP_NODE))
    path.write_bytes(full[:-2])
    with pytest.raises(EtError) as exc:
        read_et(str(path))
    msg = _one_line(exc)
    assert str(path) in msg and "node after node 41" in msg and "truncated" in msg
    path.write_bytes(_meta()[:-1])
    with pytest.raises(EtError, match=r"record 0 \(GlobalMetadata\).*truncated"):
        read_et(str(path))


def test_length_prefix_too_long_or_cut(tmp_path: Path) -> None:
    path = tmp_path / "workload.2.et"
    path.write_bytes(_meta() + _rec(make_node(9, "a", s.COMP_NODE)) + b"\x80\x80\x80\x80\x80\x01")
    with pytest.raises(EtError) as exc:
        read_et(str(path))
    msg = _one_line(exc)
    assert str(path) in msg and "node after node 9" in msg and "longer than 5 bytes" in msg
    path.write_bytes(_meta() + b"\xff\xff\xff\xff\x7f")  # 5 bytes but >= 2**32
    with pytest.raises(EtError, match="does not fit in 32 bits"):
        read_et(str(path))
    path.write_bytes(_meta() + b"\x80")
    with pytest.raises(EtError, match="runs past end of file"):
        read_et(str(path))


def test_record_that_does_not_parse(tmp_path: Path) -> None:
    path = tmp_path / "workload.4.et"
    path.write_bytes(_meta() + _rec(make_node(3, "a", s.COMP_NODE)) + b"\x02\xff\xff")
    with pytest.raises(EtError) as exc:
        read_et(str(path))
    msg = _one_line(exc)
    assert str(path) in msg and "node after node 3" in msg and "ChakraProtoMsg.Node" in msg
    path.write_bytes(b"\x02\xff\xff")
    with pytest.raises(EtError, match="GlobalMetadata"):
        read_et(str(path))


def test_attribute_that_does_not_parse(tmp_path: Path) -> None:
    path = tmp_path / "workload.4.et"
    node = make_node(23, "a", s.COMP_NODE).SerializeToString() + b"\x52\x02\xff\xff"
    path.write_bytes(_meta() + encode_varint(len(node)) + node)
    with pytest.raises(EtError) as exc:
        read_et(str(path))
    msg = _one_line(exc)
    assert str(path) in msg and "node 23" in msg and "AttributeProto" in msg


# ------------------------------------------------------------------------------------------
# Graph validation


def _nodes(tmp_path: Path, spec: list[tuple[int, list[int]]], ctrl: dict[int, list[int]] | None = None) -> tuple[str, list[EtNode]]:
    path = str(tmp_path / "g.0.et")
    ctrl = ctrl or {}
    write_et(path, [make_node(i, f"n{i}", s.COMP_NODE, deps=d, ctrl_deps=ctrl.get(i, ())) for i, d in spec])
    return path, read_et(path)[1]


def test_validate_graph_errors(tmp_path: Path) -> None:
    path, nodes = _nodes(tmp_path, [(1, []), (2, [1]), (1, [])])
    with pytest.raises(EtError) as exc:
        validate_graph(path, nodes)
    assert _one_line(exc).startswith(f"{path}: node 1: duplicate node id")

    path, nodes = _nodes(tmp_path, [(1, []), (2, [1, 99])])
    with pytest.raises(EtError) as exc:
        validate_graph(path, nodes)
    msg = _one_line(exc)
    assert f"{path}: node 2" in msg and "node 99" in msg and "not in the file" in msg

    path, nodes = _nodes(tmp_path, [(1, []), (2, [1]), (3, [2]), (4, [3]), (5, [4])], ctrl={2: [4]})
    with pytest.raises(EtError) as exc:
        validate_graph(path, nodes)
    msg = _one_line(exc)
    assert "dependency cycle" in msg
    on_cycle = int(re.search(r": node (\d+) ", msg).group(1))  # type: ignore[union-attr]
    assert on_cycle in {2, 3, 4}
    assert re.search(r"cycle (\d+ -> ){3}\d+ \(3 node", msg)

    path, nodes = _nodes(tmp_path, [(1, []), (7, [7])])
    with pytest.raises(EtError, match="node 7 .*dependency cycle 7 -> 7"):
        validate_graph(path, nodes)

    with pytest.raises(EtError, match=r"empty\.0\.et: no nodes"):
        validate_graph("empty.0.et", [])
    path = str(tmp_path / "empty.0.et")
    write_et(path, [])
    assert read_et(path)[1] == []


def test_validate_large_chain_is_iterative() -> None:
    n = 200_000
    nodes = [EtNode(i, "", s.COMP_NODE, (i - 1,) if i else (), 0, "", {}, "big.0.et") for i in range(n)]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # iterative, not by the clock: 200 frames for a 200,000-node chain
    try:
        validate_graph("big.0.et", nodes)
    finally:
        sys.setrecursionlimit(limit)
    nodes[0] = EtNode(0, "", s.COMP_NODE, (n - 1,), 0, "", {}, "big.0.et")  # close the ring
    with pytest.raises(EtError, match=rf"dependency cycle .* \({n} node"):
        validate_graph("big.0.et", nodes)


def test_prefix_reading_and_missing_rank(tmp_path: Path) -> None:
    prefix = str(tmp_path / "workload")
    for rank in (0, 1, 3):
        write_et(f"{prefix}.{rank}.et", [make_node(1, "c", s.COMP_NODE)])
    assert count_et_files(prefix) == 2
    assert [len(x) for x in read_et_prefix(prefix, 2)] == [1, 1]
    with pytest.raises(EtError) as exc:
        read_et_prefix(prefix, 4)
    msg = _one_line(exc)
    assert f"{prefix}.2.et does not exist" in msg and "2 consecutive" in msg
    write_et(f"{prefix}.2.et", [make_node(1, "c", s.COMP_NODE, deps=[5])])
    with pytest.raises(EtError, match=r"workload\.2\.et: node 1 .*node 5"):
        read_et_prefix(prefix, 4)
    assert len(read_et_prefix(prefix, 4, validate=False)) == 4


# ------------------------------------------------------------------------------------------
# Reference workloads (values verified independently with mlc-chakra's et_def_pb2/protolib)


def test_reference_all_reduce_microbenchmark() -> None:
    path = _ref("examples/workload/microbenchmarks/all_reduce/8npus_1MB/all_reduce.0.et")
    meta, nodes = read_et(str(path))
    assert meta["version"] == "0.0.4"
    assert len(nodes) == 1
    node = nodes[0]
    assert (node.id, node.type, node.name, node.deps) == (0, s.COMM_COLL_NODE, "all_reduce_8npus_1MB", ())
    assert node.attrs["comm_type"] == ("int64_val", 0)
    assert node.attrs["comm_size"] == ("int64_val", 1048576)
    assert node.attrs["is_cpu_op"] == ("bool_val", False)
    assert node.get_int("comm_type") == s.ALL_REDUCE and node.get_int("comm_size") == 1 << 20
    prefix = str(path)[: -len(".0.et")]
    assert count_et_files(prefix) == 8
    assert all(len(ns) == 1 for ns in read_et_prefix(prefix, 8))


def test_reference_custom_collective() -> None:
    path = _ref("examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce.0.et")
    _, nodes = read_et(str(path))
    validate_graph(str(path), nodes)
    assert len(nodes) == 35
    assert [n.type for n in nodes].count(s.COMM_SEND_NODE) == 14
    assert [n.type for n in nodes].count(s.COMM_RECV_NODE) == 14
    first = nodes[0]
    assert (first.id, first.type, first.name) == (0, s.COMM_SEND_NODE, "COMM_SEND_NODE_tb0_step0")
    assert first.get_int("comm_dst", bits=32) == 1 and first.get_int("comm_size") == 131072
    assert nodes[1].deps == (0,) and nodes[1].get_int("comm_src") == 7


def _prefixes(pattern: str) -> list[str]:
    if not REF_WORKLOADS.is_dir():
        return []
    return sorted({str(p)[: str(p).rindex(".", 0, len(str(p)) - 3)] for p in REF_WORKLOADS.glob(pattern)})


@pytest.mark.parametrize("prefix", _prefixes("stage/st1_*/*.et") + _prefixes("text/*/*.et") or ["<absent>"])
def test_reference_sets_load_and_validate(prefix: str) -> None:
    if prefix == "<absent>":
        pytest.skip(f"reference workloads not available at {REF_WORKLOADS}")
    count = count_et_files(prefix)
    assert count >= 1
    folder = Path(prefix).parent.name
    m = re.search(r"_(\d+)npus", folder)
    if m:
        assert count == int(m.group(1))
    ranks = read_et_prefix(prefix, count)
    assert all(nodes for nodes in ranks)
    for nodes in ranks:
        for node in nodes:
            if node.type == s.COMM_COLL_NODE:
                assert node.get_int("comm_type") in s.COLLECTIVE_NAMES
                assert node.get_int("comm_size") >= 0
                node.get_str("pg_name", "")
            elif node.type == s.COMP_NODE and "num_ops" in node.attrs:
                node.get_int("num_ops")
                node.get_int("tensor_size")


# ------------------------------------------------------------------------------------------
# Interoperability with the official mlc-chakra package (optional)


def test_interop_with_mlc_chakra(tmp_path: Path) -> None:
    et_def = pytest.importorskip(
        "chakra.schema.protobuf.et_def_pb2",
        reason="mlc-chakra not installed (pip install mlc-chakra) - optional interop check",
    )
    protolib = pytest.importorskip("chakra.src.third_party.utils.protolib")
    ours = tmp_path / "ours.0.et"
    write_et(str(ours), [
        make_node(1, "fwd", s.COMP_NODE, duration_micros=5, attrs={"num_ops": ("uint64_val", 10)}),
        make_node(2, "ar", s.COMM_COLL_NODE, deps=[1], attrs={
            "comm_type": s.ALL_GATHER, "comm_size": 1 << 20, "involved_dim": [True, False],
            "pg_name": "3",
        }),
    ])
    with open(ours, "rb") as f:
        meta = et_def.GlobalMetadata()
        assert protolib.decodeMessage(f, meta) and meta.version == "0.0.4"
        theirs = []
        while True:
            node = et_def.Node()
            if not protolib.decodeMessage(f, node):
                break
            theirs.append(node)
    assert [n.id for n in theirs] == [1, 2]
    assert theirs[1].type == et_def.COMM_COLL_NODE and list(theirs[1].data_deps) == [1]
    assert {a.name: a.WhichOneof("value") for a in theirs[1].attr} == {
        "comm_type": "int64_val", "comm_size": "int64_val", "involved_dim": "bool_list",
        "pg_name": "string_val",
    }
    assert list(theirs[1].attr[2].bool_list.values) == [True, False]

    written = tmp_path / "theirs.0.et"
    with open(written, "wb") as f:
        protolib.encodeMessage(f, et_def.GlobalMetadata(version="0.0.4"))
        n1 = et_def.Node(id=4, name="c", type=et_def.COMP_NODE, duration_micros=3)
        n1.attr.add(name="tensor_size", uint64_val=2**40)
        n2 = et_def.Node(id=5, name="s", type=et_def.COMM_SEND_NODE, ctrl_deps=[4])
        n2.attr.add(name="comm_dst", int32_val=3)
        n2.attr.add(name="f", float_val=0.5)
        protolib.encodeMessage(f, n1)
        protolib.encodeMessage(f, n2)
    _, nodes = read_et(str(written))
    validate_graph(str(written), nodes)
    assert [(n.id, n.type, n.deps) for n in nodes] == [(4, s.COMP_NODE, ()), (5, s.COMM_SEND_NODE, (4,))]
    assert nodes[0].attrs["tensor_size"] == ("uint64_val", 2**40)
    assert nodes[1].attrs["comm_dst"] == ("int32_val", 3) and nodes[1].attrs["f"] == ("float_val", 0.5)
    # Their messages are accepted by write_et too (same wire format, different descriptor pool).
    write_et(str(tmp_path / "mixed.0.et"), [n1, n2])
    assert [n.id for n in read_et(str(tmp_path / "mixed.0.et"))[1]] == [4, 5]


def test_schema_import_does_not_touch_default_pool() -> None:
    """Importing our schema next to mlc-chakra must not clash (fresh interpreter)."""
    code = (
        "from google.protobuf import descriptor_pool\n"
        "import simpy_astra.workloads.chakra.schema\n"
        "try:\n"
        "    descriptor_pool.Default().FindMessageTypeByName('ChakraProtoMsg.Node')\n"
        "except KeyError:\n"
        "    print('clean')\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "clean"
