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


def _report(spec: SweepSpec, o: Outcome, expr) -> Any:
    values = {**o.point.names(spec.axes), **o.figures}
    if any(values.get(n) is None for n in expr.names):
        return None
    return expr.number(values, f"{spec.path}: report")


def print_summary(spec: SweepSpec, done: list[Outcome], summary: dict[str, Any], console: Console,
                  wall_s: float, top: int = 12) -> None:
    ok = [o for o in done if o.ok]
    backends = summary.get("backends") or []
    # ranked within each network backend (best.py: points of two backends are not compared)
    ranked, shown = [], 0
    for backend in backends if len(backends) > 1 else [None]:
        mine = [o for o in ok if backend is None or o.point.backend == backend]
        scores = {o.point.key: objective_of(spec, o) for o in mine}
        best = sorted(mine, key=lambda o: (scores[o.point.key] is None, scores[o.point.key] or 0))[:top]
        ranked += best
        shown = max(shown, len(best))
    per = " per backend" if len(backends) > 1 else ""
    table = Table(title=f"sweep {spec.name}: {summary['finished']} of {summary['points']} points, "
                        f"{summary['failed']} failed, {wall_s:.1f} s (best {shown}{per} by "
                        f"{spec.objective.text})")
    rows = [[str(v) for v in o.point.coordinates.values()] + [_number(_report(spec, o, e)) for e in spec.report]
            for o in ranked]
    headers = [a.name for a in spec.axes] + [e.text for e in spec.report]
    for i, col in enumerate(headers):
        # a narrow terminal wraps headers and folds long coordinates, but never cuts a figure short
        width = max([len(r[i]) for r in rows] + [1])
        if i < len(spec.axes):
            table.add_column(col, overflow="fold", min_width=min(width, 10))
        else:
            table.add_column(col, justify="right", min_width=width)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    failed = [o for o in done if not o.ok]
    for o in failed[:5]:
        console.print(f"[red]failed[/red] {o.point.coordinates}: {o.figures['error']}")
    if len(failed) > 5:
        console.print(f"... and {len(failed) - 5} more failed points (results.csv has their errors)")
    sections = summary.get("by_backend") or {None: summary}
    for backend, section in sections.items():
        suffix = f" ({backend})" if backend else ""
        _winner(console, f"best{suffix}", section["best"])
        for text, entry in section["best_under"].items():
            _winner(console, f"best{suffix} with {text}", entry)
    if summary.get("note"):
        console.print(summary["note"])


def _winner(console: Console, title: str, entry: dict[str, Any] | None) -> None:
    if entry is None:
        console.print(f"{title}: no finished point qualifies")
        return
    coords = ", ".join(f"{k}={v}" for k, v in entry["coordinates"].items())
    console.print(f"[bold green]{title}[/bold green]: {coords} -> {_number(entry['objective'])}")
