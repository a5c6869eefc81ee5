"""MSCCL-IR XML algorithms as per-rank custom-collective graphs.

ASTRA-sim runs custom collectives from per-rank Chakra ETs converted offline from MSCCL-IR;
we read the XML directly. Each ``<gpu>`` is a rank, each ``<tb>`` (thread block) a chain of
``<step>``s executed in order; ``depid``/``deps`` add a dependency on step ``deps`` of thread
block ``depid`` of the same rank. A step moves ``cnt`` chunks of ``collective bytes /
nchunksperloop`` bytes to the block's ``send`` peer and/or from its ``recv`` peer, on the
block's channel (used as the message tag):

| type | nodes |
|---|---|
| ``s`` | SEND |
| ``r`` | RECV |
| ``rrc`` | RECV, COMP (reduce) |
| ``rcs`` | RECV, SEND |
| ``rrs``, ``rrcs`` | RECV, COMP (reduce), SEND |
| ``re``, ``cpy`` | COMP |
| ``nop`` | (dependency only) |

A reduction (COMP) takes ``reduce_micros`` (7 us, as in the ETs shipped with ASTRA-sim's
example converted from the same XML).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

from simpy_astra.errors import InputError
from simpy_astra.infra import files
from simpy_astra.workloads.chakra import EtError, EtNode

COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE = 4, 5, 6
STEP_NODES = {
    "s": ("send",), "r": ("recv",), "rrc": ("recv", "reduce"), "rcs": ("recv", "send"),
    "rrs": ("recv", "reduce", "send"), "rrcs": ("recv", "reduce", "send"),
    "re": ("reduce",), "cpy": ("reduce",), "nop": (),
}
DEFAULT_REDUCE_MICROS = 7


def _int(elem: ET.Element, key: str, path: str, default: int | None = None, minimum: int | None = 0,
         where: str = "") -> int:
    """An integer attribute, at least ``minimum`` (None: any); ``default`` when absent (None:
    required). Every number of the file is read here, so none is trusted unchecked."""
    text = elem.attrib.get(key)
    if text is None and default is not None:
        return default
    try:
        value = int(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise EtError(f"{path}: {where}<{elem.tag}> needs an integer attribute '{key}' "
                      f"(got {text!r})") from None
    if minimum is not None and value < minimum:
        raise EtError(f"{path}: {where}<{elem.tag}> attribute '{key}' is {value}; it must be >= {minimum}")
    return value


def read_msccl_xml(path: str, collective_bytes: int, reduce_micros: int = DEFAULT_REDUCE_MICROS
                   ) -> dict[int, list[EtNode]]:
    """Rank -> its graph of SEND/RECV/COMP nodes for a collective of ``collective_bytes``."""
    return msccl_ranks(parse_msccl_xml(path), path, collective_bytes, reduce_micros)


def parse_msccl_xml(path: str) -> ET.Element:
    """The ``<algo>`` element of an MSCCL-IR file (the only step that reads the file)."""
    if not os.path.exists(path):
        raise EtError(f"{path}: MSCCL-IR file does not exist")
    try:
        root = ET.fromstring(files.read_bytes(path, "MSCCL-IR XML file"))
    except InputError as exc:
        raise EtError(str(exc)) from None
    except ET.ParseError as exc:
        raise EtError(f"{path}: not valid XML ({exc})") from None
    if root.tag != "algo":
        raise EtError(f"{path}: expected an <algo> root element (MSCCL-IR), got <{root.tag}>")
    return root


def msccl_ranks(root: ET.Element, path: str, collective_bytes: int,
                reduce_micros: int = DEFAULT_REDUCE_MICROS) -> dict[int, list[EtNode]]:
    """Rank -> its graph for a collective of ``collective_bytes`` from a parsed ``<algo>``."""
    chunk = collective_bytes // _int(root, "nchunksperloop", path, minimum=1)
    gpus = list(root.iter("gpu"))
    ranks: dict[int, list[EtNode]] = {}
    for gpu in gpus:
        rank = _int(gpu, "id", path)
        if rank in ranks:
            raise EtError(f"{path}: <gpu id=\"{rank}\"> appears twice; each GPU is described once")
        ranks[rank] = []
    for gpu in gpus:
        rank = _int(gpu, "id", path)
        nodes: list[EtNode] = []
        last_of_step: dict[tuple[int, int], int] = {}  # (tb, step) -> its last node id
        cross: list[tuple[int, tuple[int, int], int]] = []  # (node id, (tb, step) it waits for, step)
        for tb in gpu.iter("tb"):
            where = f"gpu {rank}: "
            tb_id, channel = _int(tb, "id", path, where=where), _int(tb, "chan", path, 0, where=where)
            peers = {what: _int(tb, what, path, -1, minimum=-1, where=where) for what in ("send", "recv")}
            for what, peer in peers.items():
                if peer == rank or (peer >= 0 and peer not in ranks):
                    raise EtError(f"{path}: gpu {rank} tb {tb_id}: '{what}' peer is {peer}, "
                                  + ("the GPU itself" if peer == rank else
                                     f"which is not a GPU of the file ({len(ranks)} GPUs)"))
            previous: int | None = None
            for step in tb.iter("step"):
                s, kind = _int(step, "s", path, where=where), step.attrib.get("type", "")
                if kind not in STEP_NODES:
                    raise EtError(f"{path}: gpu {rank} tb {tb_id} step {s}: unknown step type "
                                  f"'{kind}' (known: {', '.join(STEP_NODES)})")
                size = _int(step, "cnt", path, where=f"gpu {rank} tb {tb_id} step {s}: ") * chunk
                first = len(nodes)
                for what in STEP_NODES[kind]:
                    nid = len(nodes)
                    deps = () if previous is None else (previous,)
                    name = f"{what}_tb{tb_id}_step{s}"
                    if what == "reduce":
                        nodes.append(EtNode(nid, name, COMP_NODE, deps, reduce_micros, "", {}, path))
                    else:
                        if peers[what] < 0:
                            raise EtError(f"{path}: gpu {rank} tb {tb_id} step {s}: the thread block "
                                          f"has no '{what}' peer")
                        peer_key = "comm_dst" if what == "send" else "comm_src"
                        attrs = {"comm_size": ("int64_val", size), "comm_tag": ("int32_val", channel),
                                 peer_key: ("int32_val", peers[what])}
                        node_type = COMM_SEND_NODE if what == "send" else COMM_RECV_NODE
                        nodes.append(EtNode(nid, name, node_type, deps, 0, "", attrs, path))
                    previous = nid
                depid = _int(step, "depid", path, -1, minimum=-1, where=where)
                if depid >= 0 and len(nodes) > first:
                    cross.append((first, (depid, _int(step, "deps", path, -1, minimum=-1, where=where)), s))
                if previous is not None:
                    last_of_step[(tb_id, s)] = previous
        for nid, key, s in cross:  # resolved after every thread block is known
            if key not in last_of_step:
                raise EtError(f"{path}: gpu {rank}: step {s} depends on tb {key[0]} step {key[1]}, "
                              f"which does not exist")
            nodes[nid].deps = (*nodes[nid].deps, last_of_step[key])
        ranks[rank] = nodes
    return ranks
