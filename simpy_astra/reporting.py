"""Rich console summary of a run (``run`` mode): one row per NPU and where time went."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from simpy_astra.statistics import COMM, GPU, NpuReport


def print_summary(reports: list[NpuReport], wall_s: float, console: Console | None = None) -> None:
    console = console or Console(stderr=True)
    table = Table(title=f"simpy-astra: {len(reports)} NPUs simulated in {wall_s:.2f} s")
    for col in ("NPU", "finished (ns)", "exposed comm (ns)", "GPU time", "Comm time", "overlap", "peak memory"):
        table.add_column(col, justify="right")
    rows = sorted(reports, key=lambda r: r.npu_id)
    shown = rows if len(rows) <= 16 else rows[:8] + rows[-8:]
    for r in shown:
        table.add_row(str(r.npu_id), f"{r.finished_cycles:,}", f"{r.exposed_comm_cycles:,}",
                      f"{r.times.get(GPU, 0):,}", f"{r.times.get(COMM, 0):,}",
                      f"{r.overlap or 0:,}", r.peak_memory or "-")
    console.print(table)
    if len(rows) > len(shown):
        console.print(f"({len(rows) - len(shown)} NPUs not shown; --json-out has all of them)")
