"""Local memory tracking: tensor lifetimes from node ``inputs``/``outputs`` and their peak.

A tensor lives from the start of the node that writes it to the end of the last node
recorded reading it (tensors never read live to the end). A tensor read before any write
gets a synthetic write at [0, 10] ns. Peak usage is taken over the ticks where tensors
appear or disappear, adding before removing at the same tick (ASTRA-sim's tracker).
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field

from simpy_astra.errors import InputError

_LEADING_INT = re.compile(r"\s*\+?(\d+)")


@dataclass
class MemoryTracker:
    npu_id: int
    sizes: dict[str, int] = field(default_factory=dict)
    writes: dict[str, tuple[int, int]] = field(default_factory=dict)
    last_read_end: dict[str, int] = field(default_factory=dict)

    @staticmethod
    def _pairs(values: tuple[str, ...], node_id: int, attr: str, source: str) -> list[tuple[str, int]]:
        if len(values) % 2:
            raise InputError(f"{source}: node {node_id}: attribute '{attr}' must list name, size pairs")
        out = []
        for i in range(0, len(values), 2):
            # like C++ stoull: the leading integer counts ("65536000.0" is 65536000)
            m = _LEADING_INT.match(values[i + 1])
            if m is None:
                raise InputError(f"{source}: node {node_id}: attribute '{attr}': tensor size "
                                 f"'{values[i + 1]}' is not an integer")
            size = int(m.group(1))
            if size:
                out.append((values[i], size))
        return out

    def record(self, node, start: int, end: int) -> None:
        """Account the reads and writes of ``node`` that ran over [start, end]."""
        source = getattr(node, "source", "workload")
        for attr in ("inputs", "outputs"):
            if not node.has_attr(attr):
                raise InputError(f"{source}: node {node.id}: attribute '{attr}' is required when "
                                 f"'track-local-mem' is on")
        for name, size in self._pairs(_string_list(node, "inputs"), node.id, "inputs", source):
            if name not in self.sizes:
                self.sizes[name] = size
                self.writes[name] = (0, 10)
            self.last_read_end[name] = end
        for name, size in self._pairs(_string_list(node, "outputs"), node.id, "outputs", source):
            if name not in self.sizes:  # a second write of a name keeps the first
                self.sizes[name] = size
                self.writes[name] = (start, end)

    def timeline(self) -> list[tuple[int, int]]:
        """(tick, bytes in use) at every tick where the live set changes."""
        added: dict[int, list[str]] = {}
        removed: dict[int, list[str]] = {}
        for name, (start, _end) in self.writes.items():
            added.setdefault(start, []).append(name)
        for name, end in self.last_read_end.items():
            removed.setdefault(end, []).append(name)
        live: set[str] = set()
        usage = 0
        out = []
        for tick in sorted(set(added) | set(removed)):
            for name in added.get(tick, ()):
                if name not in live:
                    live.add(name)
                    usage += self.sizes[name]
            for name in removed.get(tick, ()):
                if name in live:
                    live.remove(name)
                    usage -= self.sizes[name]
            out.append((tick, usage))
        return out

    def peak_bytes(self) -> int:
        return max((u for _t, u in self.timeline()), default=0)

    def write_trace(self, path: str) -> None:
        """Chrome-trace JSON of tensor lifetimes and the memory counter (MB)."""
        events = []
        for tid, (name, (start, end)) in enumerate(sorted(self.writes.items())):
            stop = self.last_read_end.get(name, end)
            events.append({"name": name, "cat": "tensorLifetime", "ph": "X", "ts": start * 1e-3,
                           "dur": max(stop - start, 0) * 1e-3, "pid": self.npu_id + 1_000_000,
                           "tid": tid, "args": {"size": self.sizes[name]}})
        for tick, usage in self.timeline():
            events.append({"name": "GPU Memory Usage (MB)", "cat": "GPU Memory", "ph": "C",
                           "ts": tick * 1e-3, "pid": self.npu_id + 2_000_000,
                           "args": {"Memory_MB": usage / (1024 * 1024)}})
        with open(path, "w") as f:
            f.write(json.dumps({"traceEvents": events}))  # dumps uses the C encoder, dump does not


def _string_list(node, attr: str) -> tuple[str, ...]:
    """The attribute's string list; any other kind (or no value) counts as empty, as in the reference."""
    kind, value = node.attrs[attr]
    return value if kind == "string_list" else ()


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def format_peak(peak_bytes: int) -> str:
    """``{value:.2f} {unit}`` with 1024-based units, computed in float32 like the reference."""
    units = ["B", "KB", "MB", "GB", "TB"]
    k = 0
    while k < 4 and peak_bytes >= 1024 ** (k + 1):
        k += 1
    value = _f32(_f32(float(peak_bytes)) / _f32(float(1024**k)))
    return f"{value:.2f} {units[k]}"
