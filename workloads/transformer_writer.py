"""Write a transformer trace: every NPU's ET file from its stage's graph, plus the comm groups.

NPUs of one pipeline stage share all compute nodes, so each node is serialised once per stage
and its bytes reused; a collective is serialised once per (node, group) and a send/receive once
per (node, peer). Writing 64 NPUs of an 80-block model thus costs about one stage's worth of
protobuf work plus joining bytes.
"""

from __future__ import annotations

import json

from workloads.chakra_et import encode_varint, make_node
from workloads.chakra_schema import SCHEMA_VERSION, GlobalMetadata
from workloads.transformer_graph import COLL, COMP, RECV, SEND, Layout, Op, StageGraph


class Units:
    """Bytes per element. STAGE's counting (default): one unit per element everywhere. Mixed
    precision: bf16 activations, gradients, weights and messages (2 B); the optimizer state is
    Adam's two fp32 moments plus the fp32 master weights, 12 B per parameter = 6 B per element
    of the two-moment state tensor."""

    def __init__(self, mixed_precision: bool):
        self.element = 2 if mixed_precision else 1
        self.optimizer_state = 6 if mixed_precision else 1

    def of(self, tensor_name: str) -> int:
        return self.optimizer_state if tensor_name.endswith(".adam_state") else self.element


def _string_list(tensors: list[tuple[str, int]], units: Units) -> tuple[str, list[str]]:
    """STAGE's ``inputs``/``outputs`` form: name, bytes, name, bytes, ..."""
    flat: list[str] = []
    for name, size in tensors:
        flat += [name, str(size * units.of(name))]
    return ("string_list", flat)


def _node_bytes(op: Op, node_id: int, units: Units) -> bytes:
    """The node without its rank-dependent attribute (group or peer)."""
    attrs: dict[str, object] = {}
    if op.kind == COMP:
        attrs = {"num_ops": op.num_ops, "tensor_size": op.tensor_size * units.element, "op_type": op.op_type}
    elif op.kind == COLL:
        attrs = {"comm_size": op.comm_size * units.element, "comm_type": op.comm_type, "is_cpu_op": 0}
    else:
        attrs = {"comm_size": op.comm_size * units.element, "comm_tag": op.tag, "is_cpu_op": 0}
    attrs["inputs"] = _string_list(op.inputs, units)
    attrs["outputs"] = _string_list(op.outputs, units)
    return make_node(node_id, op.name, op.kind, deps=op.deps, attrs=attrs).SerializeToString()


class StageWriter:
    """Serialised records of one stage's graph, shared by all NPUs of the stage.

    A protobuf message may be extended by appending fields, so a collective's record for one
    NPU is its shared bytes plus one serialised ``pg_name`` attribute (``comm_dst``/``comm_src``
    for a send/receive): per NPU the writer only joins bytes.
    """

    def __init__(self, graph: StageGraph, layout: Layout, units: Units):
        self.graph = graph
        self.layout = layout
        self.bodies = [_node_bytes(op, i, units) for i, op in enumerate(graph.ops)]
        self.shared = [encode_varint(len(b)) + b if op.kind == COMP else None
                       for op, b in zip(graph.ops, self.bodies, strict=True)]
        self.extra_attr: dict[tuple[str, object], bytes] = {}

    def _attr_field(self, name: str, value: object) -> bytes:
        key = (name, value)
        if key not in self.extra_attr:
            self.extra_attr[key] = make_node(0, "", 0, attrs={name: value}).SerializeToString()[-_attr_len(
                name, value):]
        return self.extra_attr[key]

    def _variant(self, i: int, op: Op, rank: int) -> bytes:
        if op.kind == COLL:
            extra = self._attr_field("pg_name", str(self.layout.group_of[(op.dim, rank)]))
        else:
            peer = rank + op.peer_stage * self.layout.stage_stride()
            extra = self._attr_field("comm_dst" if op.kind == SEND else "comm_src", peer)
        body = self.bodies[i]
        return encode_varint(len(body) + len(extra)) + body + extra

    def file_bytes(self, rank: int) -> bytes:
        meta = GlobalMetadata(version=SCHEMA_VERSION).SerializeToString()
        parts = [encode_varint(len(meta)), meta]
        for i, op in enumerate(self.graph.ops):
            record = self.shared[i]
            parts.append(record if record is not None else self._variant(i, op, rank))
        return b"".join(parts)


def _attr_len(name: str, value: object) -> int:
    """Bytes of one ``attr`` field of a Node: the node with it minus the node without it."""
    return len(make_node(0, "", 0, attrs={name: value}).SerializeToString()) - len(
        make_node(0, "", 0).SerializeToString())


def write_trace(prefix: str, graphs: list[StageGraph], layout: Layout, npus: int, units: Units) -> str:
    """Write ``prefix.{rank}.et`` for every NPU and ``prefix.json`` (comm groups); returns the latter."""
    assert all(op.kind in (COMP, COLL, SEND, RECV) for g in graphs for op in g.ops)
    writers = [StageWriter(g, layout, units) for g in graphs]
    for rank in range(npus):
        with open(f"{prefix}.{rank}.et", "wb") as f:
            f.write(writers[layout.stage_of(rank)].file_bytes(rank))
    groups_path = f"{prefix}.json"
    with open(groups_path, "w") as f:
        json.dump({str(gid): ranks for gid, ranks in layout.groups.items()}, f)
    return groups_path
