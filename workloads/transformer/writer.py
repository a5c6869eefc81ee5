"""Write a transformer trace: every NPU's ET file from its stage's graph, plus the comm groups.

NPUs of one pipeline stage share all compute nodes, so each node is serialised once per stage
and its bytes reused; a collective is serialised once per (node, group) and a send/receive once
per (node, peer). Writing 64 NPUs of an 80-block model thus costs about one stage's worth of
protobuf work plus joining bytes.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterable

from simpy_astra.errors import InputError
from simpy_astra.infra.horizon import HORIZON_MICROS, HORIZON_TEXT
from simpy_astra.workloads.chakra import encode_varint, make_node
from simpy_astra.workloads.chakra.dimensions import GROUP_NAMES_ATTR, P2P_DIMENSION_ATTR
from simpy_astra.workloads.chakra.schema import SCHEMA_VERSION, GlobalMetadata
from simpy_astra.workloads.chakra.writer import make_attr, node_head_bytes
from simpy_astra.workloads.generated import write_summary
from simpy_astra.workloads.trace_output import TraceFiles, check_free_space
from simpy_astra.workloads.transformer.graph import (
    ALL_GATHER,
    ALL_REDUCE,
    BROADCAST,
    COLL,
    COMP,
    KIND_PREFIX,
    RECV,
    REDUCE_SCATTER,
    SEND,
    Layout,
    Op,
    StageGraph,
)


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


def _string_list(tensors: list[tuple[str, int]], units: Units, kinds: dict[str, str]) -> tuple[str, tuple[str, ...]]:
    """STAGE's ``inputs``/``outputs`` form: name, bytes, name, bytes, ...; each name prefixed
    with its kind (``weight/L0.wqkv``; transient unless the graph says otherwise). A tuple, so
    that the attribute's record is cached by it (:func:`_attr_bytes`)."""
    flat: list[str] = []
    for name, size in tensors:
        flat += [KIND_PREFIX[kinds.get(name, "tmp")] + name, str(size * units.of(name))]
    return ("string_list", tuple(flat))


def _node_bytes(op: Op, node_id: int, units: Units, kinds: dict[str, str]) -> bytes:
    """The node without its rank-dependent attribute (group or peer)."""
    attrs: dict[str, object] = {}
    if op.kind == COMP and op.duration_us:
        attrs = {"op_type": op.op_type}
        if op.kind_split:
            attrs["kind_split"] = op.kind_split
        if op.cpu:
            attrs["is_cpu_op"] = True
    elif op.kind == COMP:
        attrs = {"num_ops": op.num_ops, "tensor_size": op.tensor_size * units.element, "op_type": op.op_type}
    elif op.kind == COLL:
        attrs = {"comm_size": op.comm_size * units.element, "comm_type": op.comm_type, "is_cpu_op": 0}
    else:
        attrs = {"comm_size": op.comm_size * units.element, "comm_tag": op.tag, "is_cpu_op": 0}
    if op.stream:
        attrs["comm_stream"] = op.stream
    attrs["inputs"] = _string_list(op.inputs, units, kinds)
    attrs["outputs"] = _string_list(op.outputs, units, kinds)
    head = node_head_bytes(node_id, op.name, op.kind, op.deps, op.duration_us)
    return head + b"".join(_attr_bytes(name, value) for name, value in attrs.items())


@functools.lru_cache(maxsize=65536)
def _attr_bytes(name: str, value: object) -> bytes:
    """One attribute as a serialised ``Node`` holding only it. ``attr`` is the last field of
    a ``Node`` and a message's fields may be concatenated, so a node's record is its id, name,
    type, dependencies and duration followed by these: the same bytes protobuf writes for the
    whole node. A stage repeats the same few attributes (op types, sizes, tensor lists)
    thousands of times; each is built once."""
    return make_node(0, "", 0, attrs={name: value}).SerializeToString()


def trace_metadata(layout: Layout):
    """Every rank's GlobalMetadata: the schema version and the dimension of each communicator
    group, as runs of consecutive group ids (groups are numbered dimension by dimension, so a
    1,024-NPU trace names its thousand groups in a few entries)."""
    runs: list[list] = []
    for gid, dim in sorted({gid: dim for (dim, _rank), gid in layout.group_of.items()}.items()):
        if runs and runs[-1][0] == dim and runs[-1][2] == gid - 1:
            runs[-1][2] = gid
        else:
            runs.append([dim, gid, gid])
    return GlobalMetadata(version=SCHEMA_VERSION, attr=[
        make_attr(GROUP_NAMES_ATTR, json.dumps(runs, separators=(",", ":"))), make_attr(P2P_DIMENSION_ATTR, "pp")])


class StageWriter:
    """Serialised records of one stage's graph, shared by all NPUs of the stage.

    A protobuf message may be extended by appending fields, so a collective's record for one
    NPU is its shared bytes plus one serialised ``pg_name`` attribute (``comm_dst``/``comm_src``
    for a send/receive). Records are cached per (dimension, group) and per peer, so writing an
    NPU's file is filling its rank-dependent slots from those caches and joining bytes.
    """

    def __init__(self, graph: StageGraph, layout: Layout, units: Units):
        self.layout = layout
        self.ops = graph.ops
        self.bodies = [_node_bytes(op, i, units, graph.kinds) for i, op in enumerate(graph.ops)]
        meta = trace_metadata(layout).SerializeToString()
        self.template: list[bytes | None] = [encode_varint(len(meta)) + meta]
        self.slots: dict[tuple, list[int]] = {}  # slot key -> op indices it fills
        for i, (op, body) in enumerate(zip(graph.ops, self.bodies, strict=True)):
            self.template.append(encode_varint(len(body)) + body if op.kind == COMP else None)
            if op.kind != COMP:
                self.slots.setdefault(self._slot_key(op), []).append(i)
        self.filled: dict[tuple, list[bytes]] = {}

    @staticmethod
    def _slot_key(op: Op) -> tuple:
        return ("coll", op.dim) if op.kind == COLL else ("p2p", op.kind, op.peer_stage)

    #: public names for the rank summary (workloads.rank_summary.LazyTraces)
    slot_key = _slot_key

    @staticmethod
    def has_slot(op: Op) -> bool:
        """The op's record depends on the rank (a group or a peer is filled in)."""
        return op.kind != COMP

    def _records(self, key: tuple, rank: int) -> list[bytes]:
        """Records of every op of one slot key for ``rank`` (shared by ranks of one group/peer)."""
        if key[0] == "coll":
            attr, value = "pg_name", str(self.layout.group_of[(key[1], rank)])
        else:
            attr = "comm_dst" if key[1] == SEND else "comm_src"
            value = rank + key[2] * self.layout.stage_stride()
        cached = self.filled.get((key, value))
        if cached is None:
            extra = make_node(0, "", 0, attrs={attr: value}).SerializeToString()[-_attr_len(attr, value):]
            cached = []
            for i in self.slots[key]:
                body = self.bodies[i]
                cached.append(encode_varint(len(body) + len(extra)) + body + extra)
            self.filled[(key, value)] = cached
        return cached

    def file_bytes(self, rank: int) -> bytes:
        parts = self.template.copy()
        for key, indices in self.slots.items():
            for i, record in zip(indices, self._records(key, rank), strict=True):
                parts[i + 1] = record  # +1: the metadata record comes first
        return b"".join(parts)  # type: ignore[arg-type]


def _attr_len(name: str, value: object) -> int:
    """Bytes of one ``attr`` field of a Node: the node with it minus the node without it."""
    return len(make_node(0, "", 0, attrs={name: value}).SerializeToString()) - len(
        make_node(0, "", 0).SerializeToString())


#: (what gave it, how to mend it): a value of a transformer trace past its field
TRANSFORMER_TOO_LARGE = ("the model's dimensions", "use smaller dmodel/dff/seq/batch")


#: how to mend a value too large: a fixed text, or one worked out from the kind of compute
#: (an op_type) that went past the horizon and how many times over it went
Fix = str | Callable[[str, float], str]


def stage_writers(graphs: list[StageGraph], stages: Iterable[int], layout: Layout, units: Units,
                  where: str, too_large: tuple[str, Fix]) -> dict[int, StageWriter]:
    """Each of ``stages``' writer, every record serialised. A compute step (one node: a kernel,
    or the kernels one node stands for) past the horizon, or a size or FLOP count past
    Chakra's 64-bit fields, is refused at ``where`` as ``too_large``
    says (what gave it, how to mend it): the generator knows what its user wrote."""
    stages = list(stages)
    what, fix = too_large

    def refused(problem: str, kind: str = "", over: float = 1.0) -> InputError:  # a scenario names its workload
        told = fix(kind, over) if callable(fix) else fix
        return InputError(f"{where}: {what} {problem}; {told}").with_parts(f"{what} {problem}; {told}")

    ops = [op for stage in stages for op in graphs[stage].ops if op.kind == COMP]  # a broadcast's replay is not compute
    longest = max(ops, key=lambda op: op.duration_us or 0, default=None)
    longest_us = (longest.duration_us or 0) if longest else 0
    if longest and longest_us > HORIZON_MICROS:
        raise refused(f"give a compute step of {longest_us:.3g} us, past the horizon ({HORIZON_TEXT})",
                      longest.op_type, longest_us / HORIZON_MICROS)
    # a rank's steps in turn (the reader refuses their sum, naming a trace file the user never wrote)
    totals = [_us_by_kind(graphs[stage].ops) for stage in stages]
    slowest = max(totals, key=lambda kinds: sum(kinds.values()), default={})
    total_us = sum(slowest.values())
    if total_us > HORIZON_MICROS:
        raise refused(f"give a GPU {total_us:.3g} us of compute in one step, past the horizon ({HORIZON_TEXT})",
                      max(slowest, key=slowest.__getitem__), total_us / HORIZON_MICROS)
    try:
        return {stage: StageWriter(graphs[stage], layout, units) for stage in stages}
    except ValueError:  # protobuf: an integer beyond its 64-bit field (its text quotes the whole number)
        raise refused("give a size or FLOP count beyond Chakra's 64-bit fields") from None


def _us_by_kind(ops: Iterable[Op]) -> dict[str, float]:
    """The time of ``ops`` by their kind (``op_type``), in us."""
    kinds: dict[str, float] = {}
    for op in ops:
        if op.kind == COMP and op.duration_us:
            kinds[op.op_type] = kinds.get(op.op_type, 0) + op.duration_us
    return kinds


def write_trace(prefix: str, graphs: list[StageGraph], layout: Layout, npus: int, units: Units,
                where: str = "generate transformer", too_large: tuple[str, Fix] = TRANSFORMER_TOO_LARGE) -> str:
    """Write ``prefix.{rank}.et`` for every NPU and ``prefix.json`` (comm groups); returns the latter.

    Every record is serialised, and the disk space checked, before the first file is written;
    a failure or Ctrl-C while writing removes the files written so far. ``too_large``: see
    :func:`stage_writers`."""
    assert all(op.kind in (COMP, COLL, SEND, RECV) for g in graphs for op in g.ops)
    writers = stage_writers(graphs, range(len(graphs)), layout, units, where, too_large)
    per_stage = [len(w.file_bytes(stage * layout.stage_stride())) for stage, w in writers.items()]
    check_free_space(prefix, max(per_stage) * npus)
    with TraceFiles() as files:
        files.makedirs(prefix)
        for rank in range(npus):
            with open(files.add(f"{prefix}.{rank}.et"), "wb") as f:
                f.write(writers[layout.stage_of(rank)].file_bytes(rank))
        groups_path = files.add(f"{prefix}.json")
        with open(groups_path, "w") as f:
            json.dump({str(gid): ranks for gid, ranks in layout.groups.items()}, f)
    return groups_path


#: the collectives a group of kind ``G`` in a rank summary runs, and nothing else: those a
#: cluster preset's NCCL model times by their members alone (a broadcast, elsewhere replayed,
#: sends no message at all)
REDUCTIONS_AND_GATHERS = frozenset((ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, BROADCAST))


def _reductions_only(graph: StageGraph) -> set[str]:
    """The parallel dimensions whose groups run only all-reduces, reduce-scatters and
    all-gathers in ``graph``: a summary marks their slots ``G`` (``g`` the others), which a
    folded run on a cluster preset, where NCCL times those by their members alone, compares as
    sets (:func:`simpy_astra.folding.keys.summary_key`)."""
    dims: dict[str, bool] = {}
    for op in graph.ops:
        if op.kind == COLL:
            dims[op.dim] = dims.get(op.dim, True) and op.comm_type in REDUCTIONS_AND_GATHERS
    return {dim for dim, only in dims.items() if only}


def write_rank_summary(prefix: str, generator: str, params: dict, graphs: list[StageGraph], layout: Layout,
                       npus: int) -> str:
    """A lazily written trace's rank summary (``workloads.rank_summary.write_summary``) and its
    comm groups; returns the groups' path. A rank's trace is its stage's graph with, per slot,
    its group in one parallel dimension (collectives) or its peer at one stage offset
    (sends/receives) filled in (:class:`StageWriter`): its class is its stage and its slots are
    those groups and peers in the order the stage's ops first use them."""
    slot_keys = [list(dict.fromkeys(StageWriter.slot_key(op) for op in g.ops if StageWriter.has_slot(op)))
                 for g in graphs]
    kinds = ["".join(("G" if k[1] in reductions else "g") if k[0] == "coll" else "p" for k in keys)
             for keys, reductions in zip(slot_keys, map(_reductions_only, graphs), strict=True)]
    stride = layout.stage_stride()
    classes, slots = [], []
    for rank in range(npus):
        stage = layout.stage_of(rank)
        classes.append(stage)
        slots.append([layout.group_of[(k[1], rank)] if k[0] == "coll" else rank + k[2] * stride
                      for k in slot_keys[stage]])
    write_summary(prefix, generator, params, classes, kinds, slots)
    return write_groups(prefix, layout)


def write_groups(prefix: str, layout: Layout) -> str:
    """``prefix.json``: the comm groups (as :func:`write_trace` writes them); returns its path."""
    with open(f"{prefix}.json", "w") as f:
        json.dump({str(gid): ranks for gid, ranks in layout.groups.items()}, f)
    return f"{prefix}.json"


def write_rank_files(prefix: str, graphs: list[StageGraph], layout: Layout, units: Units,
                     ranks: list[int], where: str = "workload: generate: transformer",
                     too_large: tuple[str, Fix] = TRANSFORMER_TOO_LARGE) -> None:
    """``prefix.{rank}.et`` for ``ranks`` only; each file appears whole (written aside, then
    renamed), so runs that need the same rank at once both find a complete file.
    ``too_large``: see :func:`stage_writers`."""
    writers = stage_writers(graphs, sorted({layout.stage_of(r) for r in ranks}), layout, units, where, too_large)
    per_stage = {stage: len(w.file_bytes(stage * layout.stage_stride())) for stage, w in writers.items()}
    check_free_space(prefix, sum(per_stage[layout.stage_of(r)] for r in ranks), "workload cache")
    for rank in ranks:
        path = f"{prefix}.{rank}.et"
        aside = f"{path}.{os.getpid()}.tmp"
        try:
            with open(aside, "wb") as f:
                f.write(writers[layout.stage_of(rank)].file_bytes(rank))
            os.replace(aside, path)
        finally:
            if os.path.exists(aside):
                os.remove(aside)
