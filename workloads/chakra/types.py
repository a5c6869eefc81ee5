"""Chakra's node and collective type numbers (schema 0.0.4), without protobuf.

What the simulator needs to know of a node's kind; :mod:`workloads.chakra.schema` builds the
protobuf messages and re-exports these.
"""

from __future__ import annotations

NODE_TYPES: dict[str, int] = {
    "INVALID_NODE": 0,
    "METADATA_NODE": 1,
    "MEM_LOAD_NODE": 2,
    "MEM_STORE_NODE": 3,
    "COMP_NODE": 4,
    "COMM_SEND_NODE": 5,
    "COMM_RECV_NODE": 6,
    "COMM_COLL_NODE": 7,
    "STORAGE_NODE": 8,
    "BATCH_NODE": 9,
    "CHECKPOINT_NODE": 10,
}

COLLECTIVE_COMM_TYPES: dict[str, int] = {
    "ALL_REDUCE": 0,
    "REDUCE": 1,
    "ALL_GATHER": 2,
    "GATHER": 3,
    "SCATTER": 4,
    "BROADCAST": 5,
    "ALL_TO_ALL": 6,
    "REDUCE_SCATTER": 7,
    "REDUCE_SCATTER_BLOCK": 8,
    "BARRIER": 9,
}

INVALID_NODE = 0
METADATA_NODE = 1
MEM_LOAD_NODE = 2
MEM_STORE_NODE = 3
COMP_NODE = 4
COMM_SEND_NODE = 5
COMM_RECV_NODE = 6
COMM_COLL_NODE = 7
STORAGE_NODE = 8
BATCH_NODE = 9
CHECKPOINT_NODE = 10

ALL_REDUCE = 0
REDUCE = 1
ALL_GATHER = 2
GATHER = 3
SCATTER = 4
BROADCAST = 5
ALL_TO_ALL = 6
REDUCE_SCATTER = 7
REDUCE_SCATTER_BLOCK = 8
BARRIER = 9

NODE_TYPE_NAMES: dict[int, str] = {v: k for k, v in NODE_TYPES.items()}
COLLECTIVE_NAMES: dict[int, str] = {v: k for k, v in COLLECTIVE_COMM_TYPES.items()}

#: the most the weights of a compute node's ``kind_split`` attribute (``gemm:812,attention:60``)
#: may add up to: the breakdown cuts the node's interval by them in int64
#: (:mod:`simpy_astra.report.kind_split`); a writer scales longer nodes' weights to fit
MAX_SPLIT_WEIGHT = 2**31
