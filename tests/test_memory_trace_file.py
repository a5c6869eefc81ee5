"""The local-memory trace files (``local-mem-trace-filename``): Chrome-trace JSON per NPU."""

from __future__ import annotations

import json
from pathlib import Path

from simpy_astra.engine.memory_tracker import MemoryTracker


def test_one_serialisation_serves_every_npu_of_an_orbit_under_its_own_ids(tmp_path: Path) -> None:
    tracker = MemoryTracker(npu_id=3, sizes={"a": 2 << 20, "b": 1 << 20}, writes={"a": (0, 10), "b": (5, 20)},
                            last_read_end={"a": 30})
    tracker.write_traces(str(tmp_path / "mem"), (3, 7))
    for npu in (3, 7):
        events = json.loads((tmp_path / f"mem.{npu}.json").read_text())["traceEvents"]
        lifetimes = [e for e in events if e["ph"] == "X"]
        counters = [e for e in events if e["ph"] == "C"]
        # tensor a lives [0, 30] (its last read), b [5, 20] (never read: its write's end)
        assert [(e["name"], e["ts"], e["dur"], e["pid"]) for e in lifetimes] == [
            ("a", 0.0, 0.03, 1_000_000 + npu), ("b", 0.005, 0.015, 1_000_000 + npu)]
        # usage in MB at each change: +2 at 0, +1 at 5, a leaves at 30 (b never leaves)
        assert [(e["ts"], e["args"]["Memory_MB"], e["pid"]) for e in counters] == [
            (0.0, 2.0, 2_000_000 + npu), (0.005, 3.0, 2_000_000 + npu), (0.03, 1.0, 2_000_000 + npu)]
