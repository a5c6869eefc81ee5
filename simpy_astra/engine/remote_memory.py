"""Remote (expanded) memory for MEM_LOAD / MEM_STORE nodes, ASTRA-sim's analytical model.

An access of ``s`` bytes takes ``latency + trunc(s / bandwidth)`` ns. Per-NPU expansion
serves every access at once; per-node expansion serialises the NPUs of one node (physical NPU
ids: in a run of several jobs, not the jobs' ranks) on one FIFO server; a memory pool
serialises every NPU on one server.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from simpy_astra.config import RemoteMemoryConfig
from simpy_astra.errors import InputError


class _Server:
    __slots__ = ("busy", "queue")

    def __init__(self) -> None:
        self.busy = False
        self.queue: deque = deque()


class RemoteMemory:
    def __init__(self, config: RemoteMemoryConfig) -> None:
        self.config = config
        self._servers: dict[int, _Server] = {}

    def access_ns(self, size_bytes: int) -> int:
        return self.config.latency_ns + size_bytes // self.config.bandwidth_bytes_per_ns

    def issue(self, npu, size_bytes: int, done: Callable[[], None], node_desc: str) -> None:
        """Start an access for ``npu`` (its clock delivers ``done``)."""
        kind = self.config.memory_type
        if kind == "NO_MEMORY_EXPANSION":
            raise InputError(f"{node_desc}: MEM_LOAD/MEM_STORE nodes need a remote memory; "
                             f"{self.config.source} sets memory-type NO_MEMORY_EXPANSION")
        t = self.access_ns(size_bytes)
        if kind == "PER_NPU_MEMORY_EXPANSION":
            npu.clock.register(t, lambda _a: done(), None)
            return
        # a node's NPUs are physical ones: a job's ranks 0..3 on NPUs 4..7 queued at node 0's server
        key = npu.device_id // self.config.num_npus_per_node if kind == "PER_NODE_MEMORY_EXPANSION" else 0
        server = self._servers.setdefault(key, _Server())
        server.queue.append((npu, t, done))
        if not server.busy:
            self._start(server)

    def _start(self, server: _Server) -> None:
        npu, t, done = server.queue.popleft()
        server.busy = True

        def finished(_arg) -> None:
            server.busy = False
            done()
            if server.queue and not server.busy:
                self._start(server)

        npu.clock.register(t, finished, None)
