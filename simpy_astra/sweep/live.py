"""The sweep's live progress bar on a terminal (rich; imported only when there is one).

The last finished point is shown in the width the other columns leave: its coordinates by
axis name, else with a word value alone (``ring``, not ``all_reduce_implementation=ring``),
else losing whole words from the end, never its figure, so the bar, the counts and the times
are never cut however narrow the terminal or long the coordinates.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from simpy_astra.report.console import fit_first


class LastPointColumn(ProgressColumn):
    """``coordinates: figure`` of the last finished point (``task.fields["last"]``, a
    :class:`~simpy_astra.sweep.runner.Finished`), within the width ``others`` leave."""

    def __init__(self, others: list[ProgressColumn], console: Console) -> None:
        super().__init__()
        self.others, self.console = others, console

    def render(self, task: Task) -> Text:
        last = task.fields.get("last")
        if last is None:
            return Text("")
        options = self.console.options
        used = sum(Measurement.get(self.console, options, column(task)).maximum for column in self.others)
        room = self.console.width - used - len(self.others)  # a space between two columns
        text = Text(fit_first(last.names, f": {last.result}", room), no_wrap=True, overflow="crop")
        if not last.ok:
            text.stylize("red")
        return text


class LiveProgress(Progress):
    """The bar, redrawn by rich's own thread: its elapsed column moves while a point runs."""

    def waiting(self, running: int) -> None:
        """Nothing to print: the bar already shows time passing."""


def live_progress(console: Console) -> Any:
    """The bar: sweep, bar, points done/total, elapsed, eta, then the last point (about 30
    columns of it at 80)."""
    others: list[ProgressColumn] = [TextColumn("[bold]sweep"), BarColumn(bar_width=16), MofNCompleteColumn(),
                                    TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn()]
    return LiveProgress(*others, LastPointColumn(others, console), console=console)
