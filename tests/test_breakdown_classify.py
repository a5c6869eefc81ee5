"""The breakdown classifies each distinct (node type, attribute dict) pair once (issue 51):
its parts must be those the module docstring gives each node, whether nodes share one
attribute dict (as the trace reader makes them) or hold equal separate ones, and the array
sweep must split time as the plain-Python one does."""

from __future__ import annotations

import random

from simpy_astra.report import breakdown
from simpy_astra.report.breakdown import ARRAY_SWEEP_FROM, sweep
from simpy_astra.report.node_parts import BUBBLE, COMM, COMPUTE, HOST, MEMORY, Classifier
from simpy_astra.workloads.chakra.node import EtNode
from simpy_astra.workloads.chakra.types import (
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    MEM_LOAD_NODE,
    METADATA_NODE,
)

GEMM = {"op_type": ("string_val", "gemm")}
STAGE_M = {"op_type": ("string_val", "M")}
CPU = {"is_cpu_op": ("bool_val", True)}
TP = {"comm_stream": ("string_val", "tp")}
PG3 = {"pg_name": ("string_val", "3")}
PG9 = {"pg_name": ("string_val", "9")}
NONE: dict = {}

#: (type, attributes, the part the docstring gives it with group 3 named "dp")
CASES = [
    (COMP_NODE, GEMM, (COMPUTE, "compute.gemm")),
    (COMP_NODE, STAGE_M, (COMPUTE, "compute.gemm")),
    (COMP_NODE, CPU, (HOST, "compute.cpu")),
    (COMP_NODE, NONE, (COMPUTE, "compute.other")),
    (MEM_LOAD_NODE, NONE, (MEMORY, "memory")),
    (COMM_RECV_NODE, NONE, (BUBBLE, "bubble")),
    (COMM_SEND_NODE, NONE, (COMM, "comm.pp")),
    (COMM_SEND_NODE, TP, (COMM, "comm.tp")),
    (COMM_COLL_NODE, TP, (COMM, "comm.tp")),
    (COMM_COLL_NODE, PG3, (COMM, "comm.dp")),
    (COMM_COLL_NODE, PG9, (COMM, "comm.group 9")),
    (COMM_COLL_NODE, NONE, (COMM, "comm.all")),  # same dict as the compute node's: type tells
    (METADATA_NODE, NONE, None),
    (99, NONE, None),
    (15, NONE, None),
]


def node(nid: int, node_type: int, attrs: dict) -> EtNode:
    return EtNode(nid, f"n{nid}", node_type, (), 0, "", attrs)


def test_shared_and_separate_attribute_dicts_get_each_nodes_part() -> None:
    nodes = [node(k, t, attrs if k % 2 else dict(attrs)) for k, (t, attrs, _) in enumerate(CASES * 3)]
    code, kinds = Classifier({3: "dp"}, "pp").kinds(nodes)
    assert [kinds[c] for c in code.tolist()] == [part for _t, _a, part in CASES * 3]


def test_array_sweep_splits_time_as_the_plain_sweep(monkeypatch) -> None:
    rng = random.Random(51)
    nodes = [node(k, *rng.choice(CASES)[:2]) for k in range(ARRAY_SWEEP_FROM + 500)]
    parts = {n.id: next(p for t, a, p in CASES if n.type == t and n.attrs == a) for n in nodes}
    intervals = []
    for n in nodes:
        start = rng.randrange(10_000_000)
        intervals.append((n.id, start, start + rng.randrange(20_000)))
    classifier = Classifier({3: "dp"}, "pp")
    fast = sweep(intervals, parts.get, 0, segments=True, through_last=True,
                 kinds_of=lambda nids: classifier.kinds([nodes[i] for i in nids]))
    monkeypatch.setattr(breakdown, "ARRAY_SWEEP_FROM", len(intervals) + 1)
    plain = sweep(intervals, parts.get, 0, segments=True, through_last=True)
    assert {"compute.gemm", "memory", "comm.dp", "comm.pp", "bubble", "idle"} <= set(plain.parts)
    assert (fast.finish_ns, fast.parts, fast.shares, fast.segments) == (
        plain.finish_ns, plain.parts, plain.shares, plain.segments)


def test_graph_kinds_whatever_the_order_of_a_graphs_ids() -> None:
    """A graph's nodes are read from its dict (its ``values()``, no list of them): ids 0 .. n-1
    in order, and ids in any order with gaps, give each asked id its own node's part."""
    import numpy as np

    rng = random.Random(52)
    in_order = {k: node(k, t, a) for k, (t, a, _p) in enumerate(CASES * 4)}
    shuffled_ids = rng.sample(range(1000, 5000), len(CASES) * 4)
    shuffled = {nid: node(nid, t, a) for nid, (t, a, _p) in zip(shuffled_ids, CASES * 4, strict=True)}
    for graph in (in_order, shuffled):
        asked = rng.sample(list(graph), len(graph) // 2)
        code, kinds = Classifier({3: "dp"}, "pp").graph_kinds(graph, np.array(asked, dtype=np.int64))
        expected = [next(p for t, a, p in CASES if graph[i].type == t and graph[i].attrs is a) for i in asked]
        assert [kinds[c] for c in code.tolist()] == expected


def test_node_types_past_a_byte_fill_no_part() -> None:
    """Node types are read a byte each where they fit; a type from 256 on (or below 0) falls
    back to the int64 reading, and fills no part, as every type from 8 on."""
    nodes = [node(0, COMP_NODE, GEMM), node(1, 300, NONE), node(2, -1, NONE), node(3, COMM_RECV_NODE, NONE)]
    code, kinds = Classifier({3: "dp"}, "pp").kinds(nodes)
    assert [kinds[c] for c in code.tolist()] == [(COMPUTE, "compute.gemm"), None, None, (BUBBLE, "bubble")]


def test_array_sweep_takes_node_ids_past_2_63(monkeypatch) -> None:
    """Chakra's node ids are unsigned 64-bit: the array sweep (from ARRAY_SWEEP_FROM
    intervals) sorts and charges them as such, splitting time as the plain sweep does (it
    raised an internal OverflowError for an id from 2**63 on)."""
    rng = random.Random(53)
    base = 2**63 + 5
    parts = {base + k: rng.choice(CASES)[2] for k in range(ARRAY_SWEEP_FROM + 100)}
    intervals = []
    for nid in parts:
        start = rng.randrange(10_000_000)
        intervals.append((nid, start, start + rng.randrange(20_000)))
    fast = sweep(intervals, parts.get, 0, segments=True, through_last=True)
    monkeypatch.setattr(breakdown, "ARRAY_SWEEP_FROM", len(intervals) + 1)
    plain = sweep(intervals, parts.get, 0, segments=True, through_last=True)
    assert (fast.finish_ns, fast.parts, fast.shares, fast.segments) == (
        plain.finish_ns, plain.parts, plain.shares, plain.segments)
    assert min(fast.shares) >= base
