"""Rich console summary of a run (``run`` mode): one row per NPU and where time went."""

from __future__ import annotations

import threading

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from simpy_astra.memory_tracker import CATEGORIES
from simpy_astra.statistics import COMM, GPU, NpuReport
from simpy_astra.units import bytes_to_gib


def print_summary(reports: list[NpuReport], wall_s: float, links: list | None = None,
                  console: Console | None = None, cost=None) -> None:
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
    print_memory_breakdown(shown, console)
    if links:
        packet = len(links[0]) > 4  # the packet backend adds largest queue and stall time
        busiest = Table(title="busiest links")
        for col in ("link", "bytes", "busy (ns)", "busy share") + (("max queue (B)", "stalled (ns)") if packet else ()):
            busiest.add_column(col, justify="right")
        end = max((r.finished_cycles for r in reports), default=0) or 1
        for u, v, nbytes, busy, *extra in links[:5]:
            busiest.add_row(f"{u} -> {v}", f"{nbytes:,}", f"{busy:,}", f"{100 * busy / end:.1f}%",
                            *(f"{x:,}" for x in extra))
        console.print(busiest)
    if cost is not None:
        print_cost(cost, console)


def print_cost(cost, console: Console) -> None:
    """The network's price (:mod:`simpy_astra.cost_model`): one row per kind of part and dimension."""
    if cost.error is not None:
        console.print(f"network cost: unknown ({cost.error})")
        return
    table = Table(title=f"network cost: ${cost.total_usd:,.2f}")
    for col in ("dim", "tier", "part", "GB/s", "radix", "count", "cost ($)"):
        table.add_column(col, justify="right")
    for i in cost.items:
        table.add_row(str(i.dim), i.tier, i.kind, f"{i.bandwidth_gbps:g}", str(i.radix), f"{i.count:,}",
                      f"{i.cost_usd:,.2f}")
    console.print(table)


def print_memory_breakdown(reports: list[NpuReport], console: Console) -> None:
    """What each NPU holds at its peak instant, in GB (2^30 B, as the reference prints)."""
    rows = [r for r in reports if r.memory_breakdown is not None]
    if not rows:
        return
    used = [c for c in CATEGORIES if any(r.memory_breakdown[c] for r in rows)] or ["weights"]
    table = Table(title="memory at each NPU's peak (GB = 2^30 B)")
    for col in ("NPU", *used, "peak"):
        table.add_column(col, justify="right")
    for r in rows:
        parts = r.memory_breakdown
        table.add_row(str(r.npu_id), *(f"{bytes_to_gib(parts[c]):.2f}" for c in used),
                      f"{bytes_to_gib(sum(parts.values())):.2f}")
    console.print(table)


def run_with_progress(sim, console: Console | None = None) -> list[NpuReport]:
    """``sim.run()`` under a live progress bar of workload nodes completed (on stderr).

    A background thread samples the NPUs' completion counters a few times a second, so the
    simulation itself does no extra work for the display.
    """
    console = console or Console(stderr=True)
    if not console.is_terminal:
        return sim.run()
    total = sum(len(npu.nodes) for npu in sim.npus)
    stop = threading.Event()
    with Progress(TextColumn("simulating"), BarColumn(), MofNCompleteColumn(), TextColumn("nodes"),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task("run", total=total)

        def sample() -> None:
            while not stop.wait(0.2):
                progress.update(task, completed=sum(npu.completed for npu in sim.npus))

        watcher = threading.Thread(target=sample, daemon=True)
        watcher.start()
        try:
            return sim.run()
        finally:
            stop.set()
            watcher.join()
