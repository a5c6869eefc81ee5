"""Local memory tracking: tensor lifetimes from node ``inputs``/``outputs`` and their peak.

A tensor lives from the start of the node that writes it to the end of the last node
recorded reading it (tensors never read live to the end). A tensor read before any write
gets a synthetic write at [0, 10] ns. Peak usage is taken over the ticks where tensors
appear or disappear, adding before removing at the same tick (ASTRA-sim's tracker).

Beyond the reference, :meth:`MemoryTracker.peak_breakdown` says what the bytes live at the
peak instant are (``CATEGORIES``), from tensor names: the transformer generator prefixes
every tensor with its kind (``weight/``, ``grad/``, ``optim/``, ``act/``, ``tmp/``,
``comm/``), and STAGE's names (``NAME@REVISION``) are read by their conventions (see
:func:`tensor_category`). Tensors no rule names count as ``other``.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from simpy_astra.errors import InputError
from simpy_astra.infra import files

_LEADING_INT = re.compile(r"\s*\+?(\d+)")


@dataclass
class MemoryTracker:
    npu_id: int
    sizes: dict[str, int] = field(default_factory=dict)
    writes: dict[str, tuple[int, int]] = field(default_factory=dict)
    last_read_end: dict[str, int] = field(default_factory=dict)
    never_written: set[str] = field(default_factory=set)  # given a synthetic write at [0, 10]

    @staticmethod
    def _pairs(values: tuple[str, ...], node_id: int, attr: str, source: str) -> tuple[tuple[str, int], ...]:
        """(name, bytes) pairs of a node's ``inputs``/``outputs`` list."""
        pairs = _parse_pairs(values)
        if isinstance(pairs, str):
            raise InputError.in_file(source, f"node {node_id}: attribute '{attr}'{pairs}")
        return pairs

    def record(self, node, start: int, end: int) -> None:
        """Account the reads and writes of ``node`` that ran over [start, end]."""
        source = getattr(node, "source", "workload")
        for attr in ("inputs", "outputs"):
            if not node.has_attr(attr):
                raise InputError.in_file(source, f"node {node.id}: attribute '{attr}' is required when "
                                         f"'track-local-mem' is on")
        for name, size in self._pairs(_string_list(node, "inputs"), node.id, "inputs", source):
            if name not in self.sizes:
                self.sizes[name] = size
                self.writes[name] = (0, 10)
                self.never_written.add(name)
            self.last_read_end[name] = end
        for name, size in self._pairs(_string_list(node, "outputs"), node.id, "outputs", source):
            if name not in self.sizes:  # a second write of a name keeps the first
                self.sizes[name] = size
                self.writes[name] = (start, end)

    def _replay(self, stop_after: int | None = None):
        """Walk the ticks in order; yields (tick, bytes in use, live set) after each tick.

        The live set is the walk's own (mutated as it goes): copy it to keep it."""
        added: dict[int, list[str]] = {}
        removed: dict[int, list[str]] = {}
        for name, (start, _end) in self.writes.items():
            added.setdefault(start, []).append(name)
        for name, end in self.last_read_end.items():
            removed.setdefault(end, []).append(name)
        live: set[str] = set()
        usage = 0
        for tick in sorted(set(added) | set(removed)):
            for name in added.get(tick, ()):
                if name not in live:
                    live.add(name)
                    usage += self.sizes[name]
            for name in removed.get(tick, ()):
                if name in live:
                    live.remove(name)
                    usage -= self.sizes[name]
            yield tick, usage, live
            if tick == stop_after:
                return

    def timeline(self) -> list[tuple[int, int]]:
        """(tick, bytes in use) at every tick where the live set changes."""
        return [(tick, usage) for tick, usage, _live in self._replay()]

    def peak_bytes(self) -> int:
        return max((u for _t, u in self.timeline()), default=0)

    def peak_breakdown(self) -> tuple[int, dict[str, int]]:
        """(peak bytes, bytes per category live at the first tick reaching the peak).

        The parts add up to the peak exactly; every category is present (0 if none)."""
        peak, at = 0, None
        for tick, usage, _live in self._replay():
            if usage > peak:
                peak, at = usage, tick
        parts = dict.fromkeys(CATEGORIES, 0)
        if at is None:
            return 0, parts
        *_, (_tick, _usage, live) = self._replay(stop_after=at)
        for name in live:
            size = self.sizes[name]
            kind = tensor_category(name, name in self.never_written)
            if isinstance(kind, str):
                parts[kind] += size
            else:  # a fused tensor split by fractions; the last part takes the remainder
                given = 0
                for i, (part, fraction) in enumerate(kind):
                    share = size - given if i == len(kind) - 1 else int(size * fraction)
                    parts[part] += share
                    given += share
        assert sum(parts.values()) == peak
        return peak, parts

    def write_traces(self, prefix: str, npus: tuple[int, ...], text: str | None = None) -> None:
        """``{prefix}.{npu}.json`` for each NPU listed (this one, or the members of its
        folded orbit, which share its trace): Chrome-trace JSON of tensor lifetimes and the
        memory counter (MB), serialised once and written under each NPU's id; ``text``: that
        serialisation, made already for a tracker with the same content (:meth:`content_key`)."""
        text = self.trace_text() if text is None else text
        for npu in npus:
            with files.open_output(f"{prefix}.{npu}.json", "local-mem-trace-filename") as f:
                f.write(text.replace(_LIFETIME_PID, str(1_000_000 + npu)).replace(_COUNTER_PID, str(2_000_000 + npu)))

    def content_key(self) -> tuple[int, int, int]:
        """A hash of what the trace is made of (tensor sizes, writes, last reads), whatever
        the order they were recorded in: equal for trackers whose traces are equal."""
        return (hash(frozenset(self.sizes.items())), hash(frozenset(self.writes.items())),
                hash(frozenset(self.last_read_end.items())))

    def same_content(self, other: MemoryTracker) -> bool:
        return (self.sizes == other.sizes and self.writes == other.writes
                and self.last_read_end == other.last_read_end)

    def trace_text(self) -> str:
        """The trace with placeholders for the two process ids that name the NPU."""
        events = []
        for tid, (name, (start, end)) in enumerate(sorted(self.writes.items())):
            stop = self.last_read_end.get(name, end)
            events.append({"name": name, "cat": "tensorLifetime", "ph": "X", "ts": start * 1e-3,
                           "dur": max(stop - start, 0) * 1e-3, "pid": _LIFETIME_PID_MARK,
                           "tid": tid, "args": {"size": self.sizes[name]}})
        for tick, usage in self.timeline():
            events.append({"name": "GPU Memory Usage (MB)", "cat": "GPU Memory", "ph": "C",
                           "ts": tick * 1e-3, "pid": _COUNTER_PID_MARK,
                           "args": {"Memory_MB": usage / (1024 * 1024)}})
        return json.dumps({"traceEvents": events})  # dumps uses the C encoder, dump does not


# process-id placeholders of a serialised trace: strings with a NUL, which json escapes and
# no tensor name written by a generator contains
_LIFETIME_PID_MARK = "\x00lifetime-pid"
_COUNTER_PID_MARK = "\x00counter-pid"
_LIFETIME_PID = json.dumps(_LIFETIME_PID_MARK)
_COUNTER_PID = json.dumps(_COUNTER_PID_MARK)


@lru_cache(maxsize=1 << 16)
def _parse_pairs(values: tuple[str, ...]) -> tuple[tuple[str, int], ...] | str:
    """Parsed once per distinct list (every NPU of a symmetric workload lists the same
    tensors); returns what is wrong as text instead of raising, so errors are not cached."""
    if len(values) % 2:
        return " must list name, size pairs"
    out = []
    for i in range(0, len(values), 2):
        # like C++ stoull: the leading integer counts ("65536000.0" is 65536000)
        m = _LEADING_INT.match(values[i + 1])
        if m is None:
            return f": tensor size '{values[i + 1]}' is not an integer"
        size = int(m.group(1))
        if size:
            out.append((values[i], size))
    return tuple(out)


CATEGORIES = ("weights", "gradients", "optimizer", "activations", "transient", "communication", "other")
# the transformer generator's name prefixes (workloads/transformer/graph.py: KIND_PREFIX)
_PREFIXES = {"weight/": "weights", "grad/": "gradients", "optim/": "optimizer", "act/": "activations",
             "tmp/": "transient", "comm/": "communication"}
# STAGE stores a trainable weight with its Adam state (4 B per element) fused into one tensor
_STAGE_FUSED = (("weights", 0.2), ("optimizer", 0.8))
_STAGE_REVISION = re.compile(r"@\d")


def tensor_category(name: str, never_written: bool = False) -> str | tuple[tuple[str, float], ...]:
    """What a tensor holds, from its name: a ``CATEGORIES`` entry, or fractions of a fused one.

    - The transformer generator's prefixes say it (``weight/L0.wqkv``, ``comm/...``).
    - STAGE's names (``mb0.transformer.0.mha.wqkv@0Dmodel,...``): the trainable weights
      (``_sharded_weight``, ``in_emb.w``/``out_emb.w``) carry 1 B of weight and 4 B of Adam
      state per element (STAGE's ``_create_IOInfo``), split 1:4; per-op weight copies
      (``.w*``, ``_*_backward``, ``_assembled_weight``) are weights; ``.dw*``,
      ``_assembled_grad``, ``_sharded_grad`` gradients; other tensors no node writes are
      collective outputs (STAGE's collectives write nothing), hence communication; other
      ``.d*`` tensors (gradients flowing back) transient; the rest activations.
    - Anything else: ``other``.
    """
    for prefix, kind in _PREFIXES.items():
        if name.startswith(prefix):
            return kind
    m = _STAGE_REVISION.search(name)
    if m is None:
        return "other"
    base = name[: m.start()]
    leaf = base.rsplit(".", 1)[-1]
    if base.endswith("_sharded_weight") or base in ("in_emb.w", "out_emb.w"):
        return _STAGE_FUSED
    if leaf.startswith("dw") or leaf in ("_assembled_grad", "_sharded_grad"):
        return "gradients"
    if leaf.startswith("w") or leaf.endswith("_backward") or leaf.startswith("_assembled_weight"):
        return "weights"
    if never_written:  # an input batch or a shortcut copy of a block input, else a collective's output
        return "activations" if leaf == "x" else "communication"
    if leaf.startswith("d"):
        return "transient"
    return "activations"


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


def write_memory_traces(npus: list, prefix: str, orbit_of: Callable[[int], list[int]]) -> list[str]:
    """``{prefix}.{npu}.json`` of every finished NPU that tracked memory (after the run: a run
    does no I/O); a folded orbit member's is its representative's, renamed. Returns the files."""
    written: list[str] = []
    # a trace's text is made once per distinct content: the simulated NPUs of a folded run are
    # one per orbit, yet orbits often hold the same tensors at the same times (64-GPU STAGE
    # step: 8 simulated, 2 distinct traces of 1.3 MB, each about 40 ms to serialise)
    made: dict[tuple[int, int, int], list[tuple[MemoryTracker, str]]] = {}
    for npu in npus:
        if npu.memory is None or not npu.finished:
            continue
        orbit = tuple(orbit_of(npu.npu_id))
        alike = made.setdefault(npu.memory.content_key(), [])
        text = next((t for tracker, t in alike if tracker.same_content(npu.memory)), None)
        if text is None:
            text = npu.memory.trace_text()
            alike.append((npu.memory, text))
        npu.memory.write_traces(prefix, orbit, text)
        written += [f"{prefix}.{member}.json" for member in orbit]
    return written


def capacity_warnings(npus: list, configs: dict) -> list[str]:
    """One warning per NPU whose tracked peak memory exceeds its ``npu-groups`` memory
    capacity; ``configs`` maps each NPU's job (None in a one-workload run) to its system."""
    if not any(cfg.npu_groups for cfg in configs.values()):
        return []
    out = []
    for npu in npus:
        if npu.memory is None:
            continue
        cfg = configs[npu.job]
        capacity = cfg.memory_capacity_of(npu.device_id)
        peak = npu.memory.peak_bytes()
        if capacity is not None and peak > capacity:
            out.append(f"NPU {npu.device_id}: peak memory {peak:,} bytes exceeds its memory-capacity "
                       f"{capacity:,} bytes (npu-groups in {cfg.source})")
    return out
