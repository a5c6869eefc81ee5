"""Chakra execution traces (schema 0.0.4): the protobuf schema built without protoc
(``schema``), node-type and collective constants (``types``), the node the simulator reads
(``node``), reading and validating ``PREFIX.{rank}.et`` files (``reader``) and writing them
(``writer``). The names below are the public interface."""

from simpy_astra.workloads.chakra.node import EtError, EtNode
from simpy_astra.workloads.chakra.reader import (
    SUMMARY_SUFFIX,
    count_et_files,
    et_path,
    has_rank_summary,
    read_et,
    read_et_prefix,
    validate_graph,
)
from simpy_astra.workloads.chakra.writer import encode_varint, make_attr, make_node, write_et

__all__ = [
    "SUMMARY_SUFFIX", "EtError", "EtNode", "count_et_files", "encode_varint", "et_path", "has_rank_summary",
    "make_attr", "make_node", "read_et", "read_et_prefix", "validate_graph", "write_et",
]
