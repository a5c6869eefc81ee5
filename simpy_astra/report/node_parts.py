"""Which part of an NPU's time a node fills: its class (compute, memory, communication,
host, bubble; highest precedence first) and part name, for one node (:func:`node_part`) or for the
hundreds of thousands of a step at once (:class:`Classifier`). The rules are
:mod:`simpy_astra.report.breakdown`'s, whose sweep then splits the time by them.
"""

from __future__ import annotations

from operator import attrgetter, methodcaller
from typing import Any

from simpy_astra.report.kind_split import kind_split
from simpy_astra.workloads.chakra.types import (
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    MEM_LOAD_NODE,
    MEM_STORE_NODE,
)

COMPUTE, MEMORY, COMM, HOST, BUBBLE = 0, 1, 2, 3, 4  # classes, highest precedence first
CLASSES = 5
#: STAGE's op types (the transformer generator's ``op_type``) as kinds of compute
STAGE_OP_TYPES = {"M": "gemm", "CUSTOM": "attention", "A": "elementwise", "E": "elementwise",
                  "SLICE": "elementwise"}
#: the attributes :func:`node_part` reads, by node type (the other types' parts are their type's)
PART_ATTRIBUTES = {COMP_NODE: ("op_type", "is_cpu_op", "kind_split"), COMM_COLL_NODE: ("comm_stream", "pg_name"),
                   COMM_SEND_NODE: ("comm_stream",), COMM_RECV_NODE: ("comm_stream",)}


def _string_attr(node, name: str) -> str:
    """A string attribute's value, or "" when absent or of another kind (never an error)."""
    found = node.attrs.get(name)
    if found is None or found[0] != "string_val":
        return ""
    return str(found[1])


def comm_dimension(node, group_names: dict[int, str] | None = None, p2p_name: str = "p2p") -> str:
    """The parallel dimension a communication node's exposed time is charged to."""
    stream = _string_attr(node, "comm_stream")
    if stream:
        return stream
    if node.type != COMM_COLL_NODE:
        return p2p_name
    pg = _string_attr(node, "pg_name")
    if pg in ("", "0"):
        return "all"
    if pg.isdigit():
        return group_dimension(int(pg), group_names)
    return f"group {pg}"


def group_dimension(group: int, group_names: dict[int, str] | None = None) -> str:
    """The dimension a collective of communicator group ``group`` (an id > 0) is charged to:
    its name where the run knows it, else ``group <id>``."""
    if group_names and group in group_names:
        return group_names[group]
    return f"group {group}"


def node_part(node, group_names: dict[int, str] | None = None, p2p_name: str = "p2p") -> tuple | None:
    """(class, part name) of a node, or None for a node that fills no part (metadata, invalid);
    a compute node with a ``kind_split`` (class, part name, ((part name, weight), ...))."""
    t = node.type
    if t == COMP_NODE:
        kind = _string_attr(node, "op_type")
        kind = STAGE_OP_TYPES.get(kind, kind)
        found = node.attrs.get("is_cpu_op")
        cpu = found is not None and bool(found[1])
        if not kind:
            kind = "cpu" if cpu else "other"
        # a CPU op holds the host, not the GPU: its time is the part only where nothing of
        # the GPU's runs (the GPU waits for the host)
        cls = HOST if cpu else COMPUTE
        split = kind_split(_string_attr(node, "kind_split"))
        return (cls, f"compute.{kind}", split) if split else (cls, f"compute.{kind}")
    if t in (MEM_LOAD_NODE, MEM_STORE_NODE):
        return MEMORY, "memory"
    if t == COMM_RECV_NODE:
        stream = _string_attr(node, "comm_stream")
        if stream and stream != "pp":  # a transfer waited for, not a stage (microbench send_recv: p2p)
            return COMM, f"comm.{stream}"
        return BUBBLE, "bubble"
    if t in (COMM_COLL_NODE, COMM_SEND_NODE):
        return COMM, f"comm.{comm_dimension(node, group_names, p2p_name)}"
    return None


class Classifier:
    """:func:`node_part` of many nodes, computed once per distinct (type, attributes) pair.

    A node's part depends only on its type and attributes, and the trace reader gives nodes
    (of any rank) with the same attributes one shared ``attrs`` dict, which nobody modifies: a
    few thousand distinct pairs stand for hundreds of thousands of nodes (a report must cost a
    small part of the run, issue 51). The pairs are keyed by the dict's identity, which stays
    valid while the nodes live; nodes with equal but separate dicts are only looked at twice.
    Each pair is then classified by the values of the few attributes :func:`node_part` reads
    (:data:`PART_ATTRIBUTES`), once per distinct value, and :meth:`kinds` answers with codes
    into a list of the few distinct parts."""

    def __init__(self, group_names: dict[int, str] | None = None, p2p_name: str = "p2p") -> None:
        self._names, self._p2p = group_names, p2p_name
        self._place: dict[tuple[int, str] | None, int] = {}  # (class, part) -> place in _kinds
        self._kinds: list[tuple[int, str] | None] = []
        self._by_content: dict[tuple, tuple[int, str] | None] = {}

    def graph_kinds(self, nodes: dict[int, Any], ids) -> tuple[Any, list[tuple[int, str] | None]]:
        """:meth:`kinds` of the nodes ``ids`` (a uint64 array) of one NPU's ``nodes`` (id ->
        node): every node of the graph classified in its order (a run finishes nearly all of
        them; no look-up per id), then each id's code picked by its place among the keys."""
        import numpy as np

        keys = np.fromiter(nodes, np.uint64, len(nodes))
        if len(keys) and keys[0] == 0 and keys[-1] == len(keys) - 1 and (keys[1:] > keys[:-1]).all():
            # ids 0 .. n-1 in order (the generators'): an id is its place, and the place of a
            # node to look at is its key
            code, kinds = self._classify(nodes.values(), len(keys), nodes.__getitem__)
            return code[ids], kinds
        code, kinds = self._classify(nodes.values(), len(keys), lambda place: nodes[int(keys[place])])
        order = np.argsort(keys, kind="stable")
        return code[order[np.searchsorted(keys[order], ids)]], kinds

    def kinds(self, nodes: list) -> tuple[Any, list[tuple[int, str] | None]]:
        """(code per node as an array, the (class, part) or None of each code)."""
        return self._classify(nodes, len(nodes), nodes.__getitem__)

    def _classify(self, nodes, count: int, node_at) -> tuple[Any, list[tuple[int, str] | None]]:
        """:meth:`kinds` of the ``count`` nodes that ``nodes`` iterates over (a list, or a graph's
        ``values()``: each node object is read in two passes, no list of them made), ``node_at(k)``
        being the k-th of them."""
        import numpy as np

        try:  # node types are small: a byte each, built in C, a sixth faster than an int64 each
            types = np.frombuffer(bytes(map(attrgetter("type"), nodes)), np.uint8).astype(np.int64)
        except (ValueError, TypeError):  # a type below 0 or from 256 on (or not an int)
            types = np.fromiter(map(attrgetter("type"), nodes), np.int64, count)
        dicts = _addresses(map(attrgetter("attrs"), nodes), count)
        # types from 16 on (and below 0) share code 15: like every type from 8 on, they fill no part
        keys = dicts * 16 + np.where((types >= 0) & (types < 16), types, 15)
        _distinct, first, code = np.unique(keys, return_index=True, return_inverse=True)
        # each distinct (attributes, type) pair by the values node_part reads for its type
        # (PART_ATTRIBUTES), then each distinct such value classified once; C-level maps, no
        # Python step per pair (a 3,072-GPU job has over a hundred thousand pairs, a few dozen values)
        pairs = list(map(node_at, first.tolist()))
        dicts_of = list(map(attrgetter("attrs"), pairs))
        pair_types = types[first]
        slot = np.empty(len(pairs), dtype=np.int64)
        for t in np.unique(pair_types).tolist():  # a few node types
            mine = np.flatnonzero(pair_types == t)
            names = PART_ATTRIBUTES.get(t, ())
            if not names:  # its part is its type's
                slot[mine] = self._slot(t, (), pairs[mine[0]])
                continue
            members = list(map(dicts_of.__getitem__, mine.tolist()))
            what = list(zip(*(map(methodcaller("get", name), members) for name in names), strict=True))
            try:
                distinct = dict.fromkeys(what)  # a few values: a scan for one pair with each
                seen = {value: self._slot(t, value, pairs[mine[what.index(value)]]) for value in distinct}
            except TypeError:  # an unhashable attribute value: each pair classified as it is
                slot[mine] = [self._slot(t, None, pairs[k]) for k in mine.tolist()]
                continue
            slot[mine] = np.fromiter(map(seen.__getitem__, what), np.int64, len(what))
        return slot[code.reshape(-1)], list(self._kinds)

    def _slot(self, node_type: int, value, node) -> int:
        """The place in :attr:`_kinds` of ``node``'s part, ``value`` being what it holds of the
        attributes its type's part depends on (None: not to be remembered)."""
        key = (node_type, value)
        part = self._by_content.get(key, self) if value is not None else self
        if part is self:
            part = node_part(node, self._names, self._p2p)
            if value is not None:
                self._by_content[key] = part
        place = self._place.get(part)
        if place is None:
            place = self._place[part] = len(self._kinds)
            self._kinds.append(part)
        return place


def _addresses(objects, count: int):
    """``id`` of each of ``count`` objects, as an int64 array: the pointers a numpy object array
    holds, read as integers (CPython's ``id`` is the address) through the array interface (numpy
    refuses to view an object array as integers). ``np.fromiter(map(id, ...))`` makes and frees
    a Python int per object, half the classification's time on a 1,024-GPU step's 425,000 nodes
    (issue 51: a report must cost a small part of the run)."""
    import numpy as np

    held = np.fromiter(objects, object, count)  # keeps the objects, so their addresses, alive
    if not count:
        return np.zeros(0, dtype=np.int64)
    pointers = _Memory(held.__array_interface__["data"][0], count, np.dtype(np.intp).str)
    return np.array(pointers, dtype=np.int64)  # a copy, valid once ``held`` is gone


class _Memory:
    """``count`` integers of type ``typestr`` at ``address``, as numpy's array interface
    describes memory (read only) to ``np.array``."""

    def __init__(self, address: int, count: int, typestr: str) -> None:
        self.__array_interface__ = {"version": 3, "shape": (count,), "typestr": typestr, "data": (address, True)}
