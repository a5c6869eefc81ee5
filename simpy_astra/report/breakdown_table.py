"""The table of where the critical NPU's time went, and each part's spread over every NPU."""

from __future__ import annotations

from simpy_astra.report.output import Output

#: (unit, ns per unit) for breakdown tables: the largest in which the largest figure is >= 1,000
_TIME_UNITS = (("s", 10**9), ("ms", 10**6), ("us", 10**3), ("ns", 1))


def _time_unit(largest_ns: float) -> tuple[str, int]:
    for name, scale in _TIME_UNITS:
        if largest_ns >= 1_000 * scale:
            return name, scale
    return _TIME_UNITS[-1]


def print_breakdown(breakdowns: dict, out: Output) -> None:
    """Where the critical NPU's time went (the last to finish), and each part's spread over
    every NPU (min / median / max); ``breakdowns``: NPU -> :class:`~simpy_astra.report.breakdown.Breakdown`.
    Figures in one unit so the table fits 80 columns."""
    from simpy_astra.report.breakdown import critical, finish_spread, spread

    if not breakdowns:
        return
    last = critical(breakdowns)
    mine = breakdowns[last]
    spreads = spread(breakdowns)
    unit, scale = _time_unit(max([mine.finish_ns, *(hi for _lo, _mid, hi in spreads.values())]))

    def fmt(ns: float) -> str:
        return f"{ns / scale:,.1f}" if scale > 1 else f"{ns:,.0f}"

    total = mine.finish_ns or 1
    rows = [(_short_part(name), fmt(mine.parts.get(name, 0)), f"{100 * mine.parts.get(name, 0) / total:.1f}%",
             fmt(lo), fmt(mid), fmt(hi)) for name, (lo, mid, hi) in spreads.items()]
    rows.append(("finish", fmt(mine.finish_ns), "100.0%", *(fmt(v) for v in finish_spread(breakdowns))))
    npus = "NPU" if len(breakdowns) == 1 else f"{len(breakdowns):,} NPUs"
    out.table(f"where the time went ({unit}): NPU {last} (last to finish), and over {npus}",
              ("part", f"NPU {last}", "share", "min", "median", "max"), rows)
    if any(_short_part(name) != name for name in spreads):
        out.line("(long part names shortened with ..; --json-out has them whole)")


#: the widest part name the breakdown table shows (the generators' widest, "compute.elementwise"):
#: beside its five figure columns (at most "999,999.9" each, the unit chosen so) the table fits
#: 80 columns whole, plain or drawn by rich
PART_WIDTH = 19


def _short_part(name: str) -> str:
    """A part name (``compute.<op_type>``, ``comm.<stream or group>``: a trace's own strings)
    within :data:`PART_WIDTH`: its start and end kept, the middle left out."""
    if len(name) <= PART_WIDTH:
        return name
    tail = (PART_WIDTH - 2) // 2
    return f"{name[:PART_WIDTH - 2 - tail]}..{name[-tail:]}"

