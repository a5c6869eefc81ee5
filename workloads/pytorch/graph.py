"""The Chakra nodes of one rank, built from its host trace (and its Kineto kernels, if linked).

One node per operator a thread called directly (what it called runs inside it): a compute node,
or one communication node per collective inside it (after a compute node for the operator's
own GPU kernels, if a device trace gave it any). Edges keep the order the trace ran in:
- compute nodes follow each other (the host issued them one after another);
- a collective waits for the operator issued before it (control), for the producers of its
  input tensors (data) and for the previous collective (NCCL runs them in issue order);
- a compute node waits for the collectives whose output tensors it reads (data), and for
  every collective issued before a ``wait`` it follows.
So communication overlaps the compute that does not need it, as it did on the GPU.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from simpy_astra.errors import InputError
from simpy_astra.workloads.chakra import make_node
from simpy_astra.workloads.chakra.types import (
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    METADATA_NODE,
)
from simpy_astra.workloads.pytorch.collectives import DTYPE_BYTES, Collective, collectives_of
from simpy_astra.workloads.pytorch.host_trace import (
    PG_INIT,
    HostNode,
    HostTrace,
    Kernel,
    backend_names,
    process_groups,
)


@dataclass
class RankGraph:
    """What a rank's conversion produced: its nodes and its communications in order."""

    nodes: list
    collectives: list[Collective]


def _global_rank(peer: int, pg: str, members: dict[int, list[int]], names: dict[str, int]) -> int:
    ranks = members.get(names.get(pg, -1))
    return ranks[peer] if ranks and 0 <= peer < len(ranks) else peer


def build_rank_graph(trace: HostTrace, rank: int, names: dict[str, int],
                     members: dict[int, list[int]]) -> RankGraph:
    """Chakra nodes for ``trace``; ``names`` maps pg_name to group id (see ``group_ids``)."""
    kernels = trace.kernels
    groups = process_groups(trace)
    backends = backend_names(groups)
    nodes: list = []
    found: list[Collective] = []
    writer: dict[int, int] = {}  # tensor id -> node that last wrote it
    comm_ids: set[int] = set()
    pending: list[int] = []  # collectives issued since the last wait
    waited: list[int] = []  # collectives the next compute node must wait for
    last_comp: int | None = None
    last_comm: int | None = None
    tags: dict[tuple[int, int], int] = {}

    def producers(tensors) -> list[int]:
        return [writer[t.tensor_id] for t in tensors if t.tensor_id in writer]

    for op in trace.top_level():
        if PG_INIT in op.name:
            renamed = [dict(g, pg_name=str(names.get(str(g.get("pg_name", "")), g.get("pg_name"))))
                       for g in groups]
            nodes.append(make_node(op.id, op.name, METADATA_NODE, inputs_values=str([json.dumps(renamed)])))
            continue
        colls = collectives_of(trace, op, backends)
        if not colls:
            deps = [last_comp] if last_comp is not None else []
            deps += [p for p in producers(op.tensors("inputs")) if p in comm_ids] + waited
            duration = _compute_us(trace, op, kernels)
            nodes.append(make_node(op.id, op.name, COMP_NODE, deps=_unique(deps), duration_micros=duration))
            waited = []
            last_comp = op.id
            for t in op.tensors("outputs"):
                writer[t.tensor_id] = op.id
            continue
        busy_us = _compute_us(trace, op, kernels) if kernels else 0
        if busy_us:  # e.g. a backward step whose gradient hook launches an all-reduce
            deps = ([last_comp] if last_comp is not None else []) + waited
            nodes.append(make_node(op.id, op.name, COMP_NODE, deps=_unique(deps), duration_micros=busy_us))
            waited = []
            last_comp = op.id
        for c in colls:
            if c.kind == "wait":
                waited += pending
                pending = []
                continue
            _confirm_size(trace, c, kernels)
            deps = ([last_comp] if last_comp is not None else []) + producers(c.inputs)
            deps += [last_comm] if last_comm is not None else []
            if c.pg_name not in names and not c.pg_name.isdigit():
                raise trace.error(trace.nodes[c.node_id],
                                  f"process group '{c.pg_name}' of collective '{c.name}' is not listed by "
                                  f"'## process_group:init ##'; expected a group the trace describes")
            pg = str(names.get(c.pg_name, c.pg_name))
            if c.kind == "coll":
                attrs: dict[str, object] = {"comm_type": c.comm_type, "comm_size": c.size_bytes, "pg_name": pg}
                node_type = COMM_COLL_NODE
            else:
                peer = _global_rank(c.peer or 0, c.pg_name, members, names)
                src, dst = (rank, peer) if c.kind == "send" else (peer, rank)
                tag = tags.get((src, dst), 0)
                tags[(src, dst)] = tag + 1
                attrs = {"comm_src": src, "comm_dst": dst, "comm_size": c.size_bytes, "comm_tag": tag}
                node_type = COMM_SEND_NODE if c.kind == "send" else COMM_RECV_NODE
            nodes.append(make_node(c.node_id, _comm_name(trace, c), node_type, deps=_unique(deps), attrs=attrs))
            comm_ids.add(c.node_id)
            pending.append(c.node_id)
            last_comm = c.node_id
            found.append(c)
            for t in c.outputs + op.tensors("outputs"):
                writer[t.tensor_id] = c.node_id
    if not nodes:  # an ET of no node, which ASTRA-sim and our run refuse: said here, at its source
        raise InputError(f"{trace.path}: records no operator (only its thread's root node): the observer was "
                         f"stopped before anything ran; record the trace around a training step")
    return RankGraph(nodes, found)


def _unique(ids: list[int]) -> list[int]:
    return list(dict.fromkeys(ids))


def _comm_name(trace: HostTrace, c: Collective) -> str:
    """``nccl:all_gather 4 B`` style: the operator the trace names, with the recorded size."""
    node = trace.nodes[c.node_id]
    label = next((trace.nodes[k].name for k in node.children if trace.nodes[k].name.startswith("nccl:")),
                 f"nccl:{c.name}" if not c.name.startswith(("c10d::", "nccl:")) else c.name)
    return f"{label} {c.size_bytes} B"


def _compute_us(trace: HostTrace, op: HostNode, kernels: dict[int, list[Kernel]] | None) -> int:
    """GPU time of the kernels ``op`` (and what it called) launched; 0 without a device trace."""
    if not kernels:
        return int(op.raw.get("exclusive_dur", 0) or 0)
    total = sum(k.dur_us for n in trace.subtree(op) for k in kernels.get(n.id, []) if not k.collective)
    return int(round(total))


def comm_kernels(trace: HostTrace, c: Collective) -> list[Kernel]:
    """The NCCL kernels linked to a communication (launched by its record or the ``nccl:`` op in it)."""
    node = trace.nodes[c.node_id]
    return [k for nid in [node.id, *node.children] for k in trace.kernels.get(nid, []) if k.collective]


def _confirm_size(trace: HostTrace, c: Collective, kernels: dict[int, list[Kernel]] | None) -> None:
    """A linked NCCL kernel that records its message must agree with the host's size."""
    if not kernels:
        return
    for k in comm_kernels(trace, c):
        if k.in_nelems is not None and k.dtype in DTYPE_BYTES:
            got = k.in_nelems * DTYPE_BYTES[k.dtype]
            if got != c.size_bytes:
                raise trace.error(trace.nodes[c.node_id],
                                  f"collective '{c.name}' is {c.size_bytes} B on the host but its kernel "
                                  f"'{k.name}' moves {got} B ({k.in_nelems} x {k.dtype}); expected the traces "
                                  f"of one run")
