"""The terminal summary of a sweep: the best points as a rich table, and the winners."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from simpy_astra.sweep.best import Outcome, objective_of
from simpy_astra.sweep.spec import SweepSpec


def _number(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}"


def print_summary(spec: SweepSpec, done: list[Outcome], summary: dict[str, Any], console: Console,
                  wall_s: float, top: int = 12) -> None:
    ok = [o for o in done if o.ok]
    ranked = sorted(ok, key=lambda o: (objective_of(spec, o) is None, objective_of(spec, o) or 0))
    table = Table(title=f"sweep {spec.name}: {summary['finished']} of {summary['points']} points, "
                        f"{summary['failed']} failed, {wall_s:.1f} s (best {min(top, len(ranked))} by "
                        f"{spec.objective.text})")
    for axis in spec.axes:
        table.add_column(axis.name)
    for col in ("finish (ns)", "exposed comm (ns)", "compute (ns)", "peak mem (GB)", "wall (s)"):
        table.add_column(col, justify="right")
    for o in ranked[:top]:
        f = o.figures
        table.add_row(*(str(v) for v in o.point.coordinates.values()), _number(f["finish_ns"]),
                      _number(f["exposed_comm_ns"]), _number(f["compute_ns"]),
                      _number(f["peak_memory_gb"]), _number(f["wall_s"]))
    console.print(table)
    failed = [o for o in done if not o.ok]
    for o in failed[:5]:
        console.print(f"[red]failed[/red] {o.point.coordinates}: {o.figures['error']}")
    if len(failed) > 5:
        console.print(f"... and {len(failed) - 5} more failed points (results.csv has their errors)")
    _winner(console, "best", summary["best"])
    for text, entry in summary["best_under"].items():
        _winner(console, f"best with {text}", entry)


def _winner(console: Console, title: str, entry: dict[str, Any] | None) -> None:
    if entry is None:
        console.print(f"{title}: no finished point qualifies")
        return
    coords = ", ".join(f"{k}={v}" for k, v in entry["coordinates"].items())
    console.print(f"[bold green]{title}[/bold green]: {coords} -> {_number(entry['objective'])}")
