"""A line on stderr while a sweep reads its points, before any of them runs.

Expanding the axes reads each point's arguments (a Megatron point's flags and Megatron's rules:
about half a millisecond each), so the 100,000 points a sweep may have take a minute or more
before the first line of the sweep: without a sign it looks hung. After ``after_s`` a line says
how far it got, then one every ``every_s``; a short expansion prints nothing.
Shown where the run's progress line is (a terminal, or SIMPY_ASTRA_PROGRESS=1); =0 turns it off.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from simpy_astra.report.console import progress_wanted


class ExpansionProgress:
    """Called with (done, total) as points are read; prints ``sweep: <what> 1,234 of 100,000
    points, 5 s elapsed`` now and then."""

    def __init__(self, what: str, stream: TextIO | None = None, after_s: float = 2.0, every_s: float = 5.0) -> None:
        self.what, self.stream = what, stream or sys.stderr
        self.after_s, self.every_s = after_s, every_s
        self.start = time.monotonic()
        self.next_s = after_s
        self.on = progress_wanted(self.stream)

    def __call__(self, done: int, total: int) -> None:
        if not self.on:
            return
        elapsed = time.monotonic() - self.start
        if elapsed >= self.next_s:
            print(f"sweep: {self.what} {done:,} of {total:,} points, {elapsed:.0f} s elapsed", file=self.stream,
                  flush=True)
            self.next_s = elapsed + self.every_s
