"""The remote-memory JSON: how the memory attached to NPUs is reached.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from simpy_astra.config.field_values import UINT64_MAX, json_choice, json_int, require_mapping, show_value
from simpy_astra.config.file_kinds import refuse_another_kind, register_keys
from simpy_astra.config.file_text import PathLike
from simpy_astra.config.json_reader import load_json_object
from simpy_astra.config.unknown_keys import unknown_key_warnings
from simpy_astra.errors import InputError
from simpy_astra.infra.horizon import HORIZON_NS

#: every key a remote-memory JSON is read for
MEMORY_KEYS = ("memory-type", "num-nodes", "num-npus-per-node", "remote-mem-latency", "remote-mem-bw")
register_keys("remote-memory JSON", MEMORY_KEYS)

MEMORY_TYPES = (
    "NO_MEMORY_EXPANSION",
    "PER_NODE_MEMORY_EXPANSION",
    "PER_NPU_MEMORY_EXPANSION",
    "MEMORY_POOL",
)


@dataclass(frozen=True)
class RemoteMemoryConfig:
    """The remote-memory backend (``AnalyticalRemoteMemory``).

    ``memory-type`` is uninitialised in ASTRA-sim when absent; we use NO_MEMORY_EXPANSION,
    which makes any MEM_LOAD/MEM_STORE an error rather than a guess.
    """

    memory_type: str = "NO_MEMORY_EXPANSION"
    latency_ns: int = 0
    bandwidth_bytes_per_ns: int = 0  # integer B/ns (= GB/s with GB = 1e9), truncated
    num_nodes: int = 0  # PER_NODE_MEMORY_EXPANSION only
    num_npus_per_node: int = 0  # PER_NODE_MEMORY_EXPANSION only
    source: str = "<remote memory>"
    #: one line per key no reader uses (a misspelt ``remote-mem-bandwidth``)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def check_total_npus(self, total_npus: int) -> None:
        """Every NPU must map to a node (``npu // num_npus_per_node < num_nodes``).

        ASTRA-sim indexes a vector of ``num_nodes`` queues without a bounds check.
        """
        if self.memory_type != "PER_NODE_MEMORY_EXPANSION":
            return
        needed = (total_npus - 1) // self.num_npus_per_node + 1
        if needed > self.num_nodes:
            raise InputError.at(
                self.source,
                "num-nodes",
                f"is {self.num_nodes} but {total_npus} NPUs with num-npus-per-node "
                f"{self.num_npus_per_node} need {needed} nodes; raise num-nodes to {needed}",
            )
        if self.num_nodes * self.num_npus_per_node != total_npus:  # a node with no NPU, or a node short
            per_node, nodes = self.num_npus_per_node, self.num_nodes
            fix = (f"lower num-nodes to {needed}" if total_npus % per_node == 0 else
                   f"make num-npus-per-node divide the {total_npus} NPUs")
            raise InputError.at(
                self.source,
                "num-nodes",
                f"is {nodes} with num-npus-per-node {per_node}: {nodes * per_node} NPUs, but the network has "
                f"{total_npus}; {fix} (num-nodes x num-npus-per-node = the NPUs)",
            )


def load_remote_memory_json(path: PathLike) -> RemoteMemoryConfig:
    """Read a remote-memory JSON (``AnalyticalRemoteMemory``).

    ``num-nodes``/``num-npus-per-node`` are read for PER_NODE_MEMORY_EXPANSION only, as in
    ASTRA-sim. ``remote-mem-bw`` is an unsigned integer there (fractions truncate) and is a
    divisor, so it must be >= 1 for every type that performs accesses.
    """
    src = os.fspath(path)
    return remote_memory_from_mapping(load_json_object(src, "remote-memory JSON"), src)


def remote_memory_from_mapping(j: Any, src: str) -> RemoteMemoryConfig:
    """A remote-memory JSON's object (from a file, or inline in a scenario); errors name ``src``."""
    j = require_mapping(j, src, "remote-memory config", "memory-type: NO_MEMORY_EXPANSION")
    refuse_another_kind(j, src, "remote-memory JSON")
    if not j:  # ASTRA-sim leaves memory-type unset (undefined); it ran here as NO_MEMORY_EXPANSION, unsaid
        raise InputError(f"{src}: is empty; write memory-type (NO_MEMORY_EXPANSION for no remote memory), or leave "
                         f"it out")
    kw: dict[str, Any] = {"source": src}
    memory_type = RemoteMemoryConfig.memory_type
    if "memory-type" in j:
        memory_type = json_choice(src, "memory-type", j["memory-type"], MEMORY_TYPES)
        kw["memory_type"] = memory_type
    if memory_type == "PER_NODE_MEMORY_EXPANSION":
        for key, attr in (("num-nodes", "num_nodes"), ("num-npus-per-node", "num_npus_per_node")):
            if key not in j:
                raise InputError.at(
                    src, key, "is missing; PER_NODE_MEMORY_EXPANSION needs num-nodes and num-npus-per-node"
                )
            kw[attr] = json_int(
                src, key, j[key], minimum=1, hint="; PER_NODE_MEMORY_EXPANSION divides NPUs into nodes"
            )
    if "remote-mem-latency" in j:
        kw["latency_ns"] = json_int(
            src, "remote-mem-latency", j["remote-mem-latency"], minimum=0, maximum=HORIZON_NS
        )
    if "remote-mem-bw" in j:
        kw["bandwidth_bytes_per_ns"] = json_int(
            src, "remote-mem-bw", j["remote-mem-bw"], minimum=0, maximum=UINT64_MAX
        )
    if memory_type != "NO_MEMORY_EXPANSION" and kw.get("bandwidth_bytes_per_ns", 0) == 0:
        got = show_value(j["remote-mem-bw"]) if "remote-mem-bw" in j else "absent"
        raise InputError.at(
            src,
            "remote-mem-bw",
            f"must be at least 1 B/ns for {memory_type} (got {got}); it is an integer "
            f"divisor, fractions are truncated",
        )
    kw["warnings"] = (*unknown_key_warnings(src, j, MEMORY_KEYS, "remote-memory"), *_unread(j, src, memory_type))
    return RemoteMemoryConfig(**kw)


def _unread(j: dict, src: str, memory_type: str) -> list[str]:
    """A warning per key the memory type never reads (as in ASTRA-sim's AnalyticalRemoteMemory):
    ``remote-mem-bw`` beside NO_MEMORY_EXPANSION ran without a word, as if it were used."""
    read = {"NO_MEMORY_EXPANSION": (), "PER_NODE_MEMORY_EXPANSION": MEMORY_KEYS[1:]}.get(
        memory_type, ("remote-mem-latency", "remote-mem-bw"))
    return [f"{src}: field '{key}' is accepted but changes nothing: {memory_type} never reads it (remove it, or "
            f"set the memory-type that does)" for key in MEMORY_KEYS[1:] if key in j and key not in read]
