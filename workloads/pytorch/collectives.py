"""What PyTorch recorded of each collective on the host, as Chakra communication nodes need it.

PyTorch's c10d wraps every collective in a ``record_param_comms`` node. Since PyTorch 2.3 its
attributes say it all (``collective_name``, ``in_msg_nelems``, ``out_msg_nelems``, ``dtype``,
``pg_name``, ``pg_size``); PyTorch 2.2 (Chakra's public sample) records only positional inputs
``[tensors, seq, pg_backend_id, rank, name, in_splits, out_splits, world_size]``, so the sizes
come from the tensors and the group from ``process_group:init``'s ``backend_id``. Either way the
``Int`` just before the name is the peer of a send or receive. A ``c10d::`` operator without a
``record_param_comms`` inside (a backend that records none) is read from its tensors.

``comm_size`` is what this rank puts in, as mlc-chakra writes it and ASTRA-sim reads it: the
input bytes (for an all-gather, one rank's share of the gathered output).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from simpy_astra.workloads.chakra.types import (
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    BROADCAST,
    GATHER,
    REDUCE,
    REDUCE_SCATTER,
    SCATTER,
)
from simpy_astra.workloads.pytorch.host_trace import HostNode, HostTrace, Tensor

RECORD = "record_param_comms"
#: bytes per element of the dtype names PyTorch writes (c10::ScalarType's names)
DTYPE_BYTES: dict[str, int] = {
    "Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Short": 2,
    "Char": 1, "Byte": 1, "Bool": 1, "ComplexHalf": 4, "ComplexFloat": 8, "ComplexDouble": 16,
    "Float8_e4m3fn": 1, "Float8_e5m2": 1, "Float8_e4m3fnuz": 1, "Float8_e5m2fnuz": 1,
    "UInt16": 2, "UInt32": 4, "UInt64": 8,
}
#: collective names (lower case, without '_', '-', "base", "coalesced", "intotensor") -> type
COLLECTIVE_TYPES: dict[str, int] = {
    "allreduce": ALL_REDUCE, "allgather": ALL_GATHER, "reducescatter": REDUCE_SCATTER,
    "reducescattertensor": REDUCE_SCATTER, "alltoall": ALL_TO_ALL, "alltoallv": ALL_TO_ALL,
    "broadcast": BROADCAST, "reduce": REDUCE, "gather": GATHER, "scatter": SCATTER,
}
POINT_TO_POINT = ("send", "recv")
#: host records that move no tensor of their own: the wait marks where the host needs the
#: results; a barrier is NCCL's one-element all-reduce, which PyTorch records inside it; the
#: "coalesced" record closes a group whose collectives are recorded one by one
NOT_TRANSFERS = ("wait", "barrier", "init", "coalesced", "")


@dataclass
class Collective:
    """One communication of the host trace, ready to become a Chakra node."""

    node_id: int  # the record_param_comms node (or c10d:: operator) it was read from
    name: str  # PyTorch's collective name: all_gather, allreduce, send, ...
    kind: str  # "coll", "send", "recv" or "wait"
    comm_type: int | None  # Chakra collective type; None for send/recv/wait
    size_bytes: int
    pg_name: str
    peer: int | None = None  # the other rank of a send/recv, as PyTorch recorded it (group rank)
    inputs: list[Tensor] = field(default_factory=list)
    outputs: list[Tensor] = field(default_factory=list)

    def signature(self) -> tuple[str, int, str]:
        """What every rank must agree on, in order: (name, bytes, group)."""
        return self.name, self.size_bytes, self.pg_name


def normalize(name: str) -> str:
    """``_allgather_base`` / ``all_gather_into_tensor_coalesced`` / ``nccl:all_gather`` -> ``allgather``."""
    text = name.split("::")[-1].split(":")[-1].lower()
    text = re.sub(r"_base|_coalesced|_into_tensor|_$", "", text.strip("_"))
    return text.replace("_", "").replace("-", "")


def _name_index(node: HostNode) -> int | None:
    for i, (value, kind) in enumerate(zip(node.values(), node.types(), strict=False)):
        if kind == "String" and isinstance(value, str):
            return i
    return None


def _positional(node: HostNode) -> tuple[str, int | None, int | None]:
    """(name, group backend id, rank) of a PyTorch 2.2 ``record_param_comms``."""
    values, index = node.values(), _name_index(node)
    if index is None:
        return "", None, None
    ints = [v if isinstance(v, int) and not isinstance(v, bool) else None for v in values[:index]]
    rank = ints[-1] if ints else None
    backend = ints[-2] if len(ints) >= 2 else None
    return str(values[index]), backend, rank


def _size_bytes(trace: HostTrace, node: HostNode, name: str, nelems: object, dtype: object,
                tensors: list[Tensor]) -> int:
    """Input bytes: element count x dtype size when recorded, else the input tensors' sizes."""
    if nelems is not None:
        if not isinstance(nelems, int) or isinstance(nelems, bool) or nelems < 0:
            raise trace.error(node, f"collective '{name}': 'in_msg_nelems' is {nelems!r}; expected an "
                                    f"element count >= 0")
        elem = DTYPE_BYTES.get(str(dtype))
        if elem is None:
            elem = tensors[0].elem_bytes if tensors else None
        if elem is None:
            raise trace.error(node, f"collective '{name}': unknown 'dtype' {dtype!r}; expected one of "
                                    f"{', '.join(sorted(DTYPE_BYTES))}")
        return nelems * elem
    if tensors:
        return sum(t.size_bytes for t in tensors)
    raise trace.error(node, f"collective '{name}' has no size: expected attributes 'in_msg_nelems' and "
                            f"'dtype' (PyTorch 2.3+) or input tensors")


def _from_record(trace: HostTrace, node: HostNode, backends: dict[int, str]) -> Collective:
    attrs = node.attrs
    name, backend, rank = _positional(node)
    name = str(attrs.get("collective_name", name))
    inputs = node.tensors("inputs")
    outputs = node.tensors("outputs")
    pg = attrs.get("pg_name")
    if pg is None:
        pg = backends.get(backend, "0") if backend is not None else "0"
    key = normalize(name)
    if key in NOT_TRANSFERS:
        return Collective(node.id, name, "wait", None, 0, str(pg), None, inputs, outputs)
    if key not in COLLECTIVE_TYPES and key not in POINT_TO_POINT:
        raise trace.error(node, f"collective_name '{name}' is not a collective Chakra knows; expected one "
                                f"of all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send, recv")
    size = _size_bytes(trace, node, name, attrs.get("in_msg_nelems"), attrs.get("dtype"), inputs)
    if key in POINT_TO_POINT:
        if rank is None:
            raise trace.error(node, f"'{name}' records no peer rank (the Int input before the name)")
        return Collective(node.id, name, key, None, size, str(pg), rank, inputs, outputs)
    return Collective(node.id, name, "coll", COLLECTIVE_TYPES[key], size, str(pg), None, inputs, outputs)


def _schema_int(node: HostNode, arg: str) -> int | None:
    """The value of argument ``arg`` of an operator, found through its ``op_schema``."""
    match = re.match(r"[^(]*\((.*)\)", node.op_schema)
    if not match:
        return None
    names = [part.strip().split(" ")[-1].split("=")[0] for part in match.group(1).split(",")]
    values = node.values()
    if arg in names and names.index(arg) < len(values):
        value = values[names.index(arg)]
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    return None


def _from_c10d(trace: HostTrace, node: HostNode) -> Collective | None:
    """A ``c10d::`` collective operator that holds no ``record_param_comms``."""
    key = normalize(node.name)
    if key not in COLLECTIVE_TYPES and key not in POINT_TO_POINT:
        return None
    values, kinds = node.values(), node.types()
    tensors = node.tensors("inputs")
    if key == "allgather" and len(values) >= 2 and "Tensor" in kinds[1]:
        tensors = HostNode(node.id, node.name, node.parent,
                           {"inputs": {"values": [values[1]], "types": [kinds[1]]}},
                           source=node.source).tensors()
    size = _size_bytes(trace, node, node.name, None, None, tensors)
    if key in POINT_TO_POINT:
        peer = _schema_int(node, "dst" if key == "send" else "src")
        if peer is None:
            raise trace.error(node, f"'{node.name}' records no peer rank (argument "
                                    f"'{'dst' if key == 'send' else 'src'}')")
        return Collective(node.id, node.name, key, None, size, "0", peer, tensors, node.tensors("outputs"))
    return Collective(node.id, node.name, "coll", COLLECTIVE_TYPES[key], size, "0", None, tensors,
                      node.tensors("outputs"))


def collectives_of(trace: HostTrace, op: HostNode, backends: dict[int, str]) -> list[Collective]:
    """The communications inside one top-level operator, in recording order."""
    below = trace.subtree(op)
    records = [n for n in below if n.name == RECORD]
    if records:
        return [_from_record(trace, n, backends) for n in records]
    if op.name.startswith("c10d::"):
        found = _from_c10d(trace, op)
        return [found] if found is not None else []
    return []
