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


def _string_list(tensors: list[tuple[str, int]]) -> tuple[str, list[str]]:
    """STAGE's ``inputs``/``outputs`` form: name, size, name, size, ..."""
    flat: list[str] = []
    for name, size in tensors:
        flat += [name, str(size)]
    return ("string_list", flat)


def _record(op: Op, node_id: int, extra: dict[str, object]) -> bytes:
    attrs: dict[str, object] = {}
    if op.kind == COMP:
        attrs = {"num_ops": op.num_ops, "tensor_size": op.tensor_size, "op_type": op.op_type}
    else:
        attrs = {"comm_size": op.comm_size, **extra, "is_cpu_op": 0}
    attrs["inputs"] = _string_list(op.inputs)
    attrs["outputs"] = _string_list(op.outputs)
    data = make_node(node_id, op.name, op.kind, deps=op.deps, attrs=attrs).SerializeToString()
    return encode_varint(len(data)) + data


class StageWriter:
    """Serialised records of one stage's graph, shared by all NPUs of the stage."""

    def __init__(self, graph: StageGraph, layout: Layout):
        self.graph = graph
        self.layout = layout
        self.shared: list[bytes | None] = []  # rank-independent records, None where per-rank
        self.per_rank: dict[tuple[int, int], bytes] = {}
        for i, op in enumerate(graph.ops):
            self.shared.append(_record(op, i, {}) if op.kind == COMP else None)

    def _variant(self, i: int, op: Op, rank: int) -> bytes:
        if op.kind == COLL:
            gid = self.layout.group_of[(op.dim, rank)]
            key = (i, gid)
            if key not in self.per_rank:
                self.per_rank[key] = _record(op, i, {"comm_type": op.comm_type, "pg_name": str(gid)})
            return self.per_rank[key]
        peer = rank + op.peer_stage * self.layout.stage_stride()
        key = (i, -1 - peer)
        if key not in self.per_rank:
            end = "comm_dst" if op.kind == SEND else "comm_src"
            self.per_rank[key] = _record(op, i, {"comm_tag": op.tag, end: peer})
        return self.per_rank[key]

    def file_bytes(self, rank: int) -> bytes:
        meta = GlobalMetadata(version=SCHEMA_VERSION).SerializeToString()
        parts = [encode_varint(len(meta)), meta]
        for i, op in enumerate(self.graph.ops):
            record = self.shared[i]
            parts.append(record if record is not None else self._variant(i, op, rank))
        return b"".join(parts)


def write_trace(prefix: str, graphs: list[StageGraph], layout: Layout, npus: int) -> str:
    """Write ``prefix.{rank}.et`` for every NPU and ``prefix.json`` (comm groups); returns the latter."""
    assert all(op.kind in (COMP, COLL, SEND, RECV) for g in graphs for op in g.ops)
    writers = [StageWriter(g, layout) for g in graphs]
    for rank in range(npus):
        with open(f"{prefix}.{rank}.et", "wb") as f:
            f.write(writers[layout.stage_of(rank)].file_bytes(rank))
    groups_path = f"{prefix}.json"
    with open(groups_path, "w") as f:
        json.dump({str(gid): ranks for gid, ranks in layout.groups.items()}, f)
    return groups_path
