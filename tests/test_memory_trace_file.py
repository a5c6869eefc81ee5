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


def test_alike_orbits_share_one_serialisation_and_each_file_is_its_own(tmp_path: Path, monkeypatch) -> None:
    """A folded run simulates one NPU per orbit, yet orbits often hold the same tensors at the
    same times: their trace is serialised once (the 64-GPU STAGE step: 8 simulated NPUs, 2
    distinct traces of 1.3 MB) and each NPU's file is still the one it would have alone."""
    from types import SimpleNamespace

    from simpy_astra.engine.memory_tracker import write_memory_traces

    def tracker(npu: int, order: list[str], b_end: int = 20) -> MemoryTracker:
        writes = {"a": (0, 10), "b": (5, b_end)}
        return MemoryTracker(npu_id=npu, sizes={n: {"a": 2 << 20, "b": 1 << 20}[n] for n in order},
                             writes={n: writes[n] for n in order}, last_read_end={"a": 30})

    npus = [SimpleNamespace(npu_id=0, finished=True, memory=tracker(0, ["a", "b"])),
            SimpleNamespace(npu_id=1, finished=True, memory=tracker(1, ["b", "a"])),  # recorded in another order
            SimpleNamespace(npu_id=2, finished=True, memory=tracker(2, ["a", "b"], b_end=25))]
    made = []
    real = MemoryTracker.trace_text
    monkeypatch.setattr(MemoryTracker, "trace_text", lambda self: made.append(self.npu_id) or real(self))
    written = write_memory_traces(npus, str(tmp_path / "mem"), lambda npu: [npu, npu + 3])
    assert made == [0, 2] and len(written) == 6
    for npu in npus:  # each file as its own tracker writes it alone
        alone = tmp_path / "alone"
        npu.memory.write_traces(str(alone), (npu.npu_id, npu.npu_id + 3), real(npu.memory))
        for member in (npu.npu_id, npu.npu_id + 3):
            assert (tmp_path / f"mem.{member}.json").read_text() == (tmp_path / f"alone.{member}.json").read_text()
