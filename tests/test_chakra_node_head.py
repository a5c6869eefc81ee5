"""A generated node's head written without a protobuf message (``chakra.writer.node_head_bytes``,
what ``transformer/writer.py`` writes every stage node with) is the bytes protobuf itself
writes for the same fields: traces stay byte for byte what they were."""

from __future__ import annotations

import pytest

from simpy_astra.workloads.chakra.writer import make_node, node_head_bytes

CASES = [
    (0, "", 0, [], 0),  # every field at its zero: an empty record
    (1, "f0.c0.host", 4, [0], 10),
    (127, "x", 7, [126, 125], 1),  # the last one-byte varint
    (128, "b10.c1.19.grads.before", 5, [127, 128, 16383, 16384], 4843),
    ((1 << 20) - 1, "n", 6, [(1 << 20) - 1, 1 << 20, (1 << 32) + 5], (1 << 31) + 7),  # past the kept table
    ((1 << 64) - 1, "ünïcode ✓", 4, [0, 0, 3], 0),  # the largest uint64; bytes, not characters, counted
    (3, "a" * 300, 4, list(range(200)), 300),  # a name and a deps field whose lengths take two bytes
]


@pytest.mark.parametrize(("node_id", "name", "node_type", "deps", "duration"), CASES)
def test_node_head_is_the_bytes_protobuf_writes(node_id, name, node_type, deps, duration):
    expected = make_node(node_id, name, node_type, deps=deps, duration_micros=duration).SerializeToString()
    assert node_head_bytes(node_id, name, node_type, deps, duration) == expected
    # twice: the second time from the kept varints
    assert node_head_bytes(node_id, name, node_type, deps, duration) == expected


@pytest.mark.parametrize("bad", [-1, 1 << 64])
def test_a_number_outside_uint64_is_refused(bad):
    with pytest.raises(ValueError, match="uint64"):
        node_head_bytes(1, "n", 4, [bad], 0)
    with pytest.raises(ValueError, match="uint64"):
        node_head_bytes(bad, "n", 4, [], 0)
