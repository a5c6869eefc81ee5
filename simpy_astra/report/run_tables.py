"""A run's summary tables: one row per NPU, the jobs, the busiest links, each NPU's memory at
its peak, and the network's price."""

from __future__ import annotations

from operator import attrgetter

from simpy_astra.engine.statistics import COMM, GPU, NpuReport
from simpy_astra.infra.npu_lists import npu_list
from simpy_astra.infra.units import bytes_to_gib
from simpy_astra.report.output import Output


def print_summary(reports: list[NpuReport], wall_s: float, links: list | None = None,
                  out: Output | None = None, cost=None, jobs: list | None = None,
                  link_jobs: dict | None = None) -> None:
    """``jobs``: per-job results of a multi-job run (:class:`~simpy_astra.running.jobs.JobResult`);
    ``link_jobs``: (from, to) -> job -> bytes, shown beside the busiest links."""
    out = out or Output()
    rows = sorted(reports, key=attrgetter("npu_id"))
    shown = rows if len(rows) <= 16 else rows[:8] + rows[-8:]
    memory = any(r.peak_memory for r in shown)  # no column of dashes when no NPU tracks memory
    # every time column says its unit (the reference's 'GPU time', 'Comm time' and overlap read as
    # unitless beside 'finished (ns)'); short enough that 8 NPUs' table fits 80 columns whole
    out.table(f"simpy-astra: {len(reports):,} NPUs simulated in {wall_s:.2f} s",
              ("NPU", "finished (ns)", "exposed comm (ns)", "GPU time (ns)", "comm (ns)", "overlap (ns)")
              + (("peak memory",) if memory else ()),
              [(str(r.npu_id), f"{r.finished_cycles:,}", f"{r.exposed_comm_cycles:,}",
                f"{r.times.get(GPU, 0):,}", f"{r.times.get(COMM, 0):,}", f"{r.comp_comm_overlap_ns:,}",
                *((r.peak_memory or "-",) if memory else ())) for r in shown])
    if len(rows) > len(shown):
        out.prose(f"({len(rows) - len(shown):,} NPUs not shown; --json-out has all of them)")
    print_memory_breakdown(shown, out)
    if jobs:
        print_jobs(jobs, out)
    if links:
        packet = links[0].max_queue_bytes is not None  # the packet backend adds queue and stall time
        end = max((r.finished_cycles for r in reports), default=0) or 1
        by_job = link_jobs is not None
        out.table("busiest links", ("link", "bytes", "busy (ns)", "busy share")
                  + (("max queue (B)", "stalled (ns)") if packet else ()) + (("bytes by job",) if by_job else ()),
                  [(f"{s.src} -> {s.dst}", f"{s.bytes:,}", f"{s.busy_ns:,}", f"{100 * s.busy_ns / end:.1f}%",
                    *((f"{s.max_queue_bytes:,}", f"{s.stall_ns:,}") if packet else ()),
                    *((_job_bytes(link_jobs.get((s.src, s.dst), {})),) if by_job else ()))
                   for s in links[:5]],
                  # the jobs' names and bytes fold within the line: each job on a link widened it
                  align=("left", "right", "right", "right", *(("right", "right") if packet else ()),
                         *(("left",) if by_job else ())))
    if cost is not None:
        print_cost(cost, out)


def _job_bytes(counts: dict[str, int]) -> str:
    return ", ".join(f"{job} {n:,}" for job, n in counts.items()) or "-"


def print_jobs(jobs: list, out: Output) -> None:
    """One row per job: where it ran, when it finished, and (``--isolation``) its slowdown."""
    alone = any(j.alone_cycles is not None for j in jobs)
    out.table("jobs", ("job", "NPUs", "start (ns)", "finished (ns)", "exposed comm (ns)")
              + (("alone (ns)", "slowdown") if alone else ()),
              [(j.name, npu_list(j.npus), f"{j.start_ns:,}", f"{j.finished_cycles:,}", f"{j.exposed_comm_cycles:,}",
                *((f"{j.alone_cycles:,}", f"{j.slowdown:.3f}x") if alone else ())) for j in jobs],
              align=("left", "left", "right", "right", "right", *(("right", "right") if alone else ())))


def print_cost(cost, out: Output) -> None:
    """The network's price (:mod:`simpy_astra.network.cost_model`): one row per kind of part and dimension;
    bandwidth in the network YAML's unit, which ASTRA-sim calls GB/s and is 2^30 B/s: GiB/s, to 4
    significant digits (a preset's derived 21.8861 beside 215.822 read as more than it says)."""
    if cost.error is not None:
        out.line(f"network cost: unknown ({cost.error})")
        return
    out.table(f"network cost: ${dollars(cost.total_usd)}", ("dim", "tier", "part", "GiB/s", "radix", "count",
                                                              "cost ($)"),
              [(str(i.dim), i.tier, i.kind, f"{i.bandwidth_gbps:.4g}", str(i.radix), f"{i.count:,}",
                dollars(i.cost_usd)) for i in cost.items], key=3)


def dollars(amount: float) -> str:
    """A price as a person reads it: whole dollars from $100 up (prices per GB/s make a
    $8,859,416.32 fabric, whose cents say nothing), cents below ($1.50), 0 for nothing."""
    if amount == 0:
        return "0"
    return f"{amount:,.0f}" if abs(amount) >= 100 else f"{amount:,.2f}"


def print_memory_breakdown(reports: list[NpuReport], out: Output) -> None:
    """What each NPU holds at its peak instant, in GB (2^30 B, as the reference prints)."""
    rows = [r for r in reports if r.memory_breakdown is not None]
    if not rows:
        return
    from simpy_astra.engine.memory_tracker import CATEGORIES

    used = [c for c in CATEGORIES if any(r.memory_breakdown[c] for r in rows)] or ["weights"]
    out.table("memory at each NPU's peak (GB = 2^30 B)", ("NPU", *used, "peak"),
              [(str(r.npu_id), *(f"{bytes_to_gib(r.memory_breakdown[c]):.2f}" for c in used),
                f"{bytes_to_gib(sum(r.memory_breakdown.values())):.2f}") for r in rows])
