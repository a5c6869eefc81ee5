"""A run's progress line on stderr, where a person watches: redrawn in place on a terminal, a
line every few seconds in a pipe or a file that asked for it."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from simpy_astra.infra.switches import env_switch
from simpy_astra.report.widths import PLAIN_WIDTH, plain_width


class ProgressLine:
    """The one progress line of a run on stderr: redrawn in place on a terminal (and cleared
    while other lines are printed, so that a report line never lands at its end), a line of
    its own every few seconds in a pipe or a file. Every line fits :func:`plain_width` in a
    pipe, on a terminal ``PLAIN_WIDTH`` or the terminal's width when narrower."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        try:
            self.live = self.stream.isatty()
        except (AttributeError, ValueError):
            self.live = False
        self._lock = threading.Lock()
        self._drawn = False

    @property
    def width(self) -> int:
        if not self.live:
            return plain_width()
        import shutil

        return min(PLAIN_WIDTH, shutil.get_terminal_size().columns - 1)  # the cursor's column too

    def show(self, done: int, total: int, now_ns: float, elapsed_s: float) -> None:
        self.write(progress_text(done, total, now_ns, elapsed_s, self.width))

    def write(self, text: str) -> None:
        """Draw ``text`` as the line (in place on a terminal, a line of its own elsewhere)."""
        with self._lock:
            self.stream.write(f"\r{text}\x1b[K" if self.live else text + "\n")
            self.stream.flush()
            self._drawn = self.live

    def clear(self) -> None:
        """Take the line off a terminal (nothing to do in a pipe: its lines are whole)."""
        with self._lock:
            self._clear()

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False

    def above(self, text: str, stream: TextIO | None = None) -> None:
        """Print ``text`` (to stdout by default) where the progress line was; the next sample
        draws the line again below it."""
        with self._lock:
            self._clear()
            stream = stream or sys.stdout
            print(text, file=stream, flush=self.live)


def progress_text(done: int, total: int, now_ns: float, elapsed_s: float, width: int | None = None) -> str:
    """The progress line, in the longest wording that fits ``width`` (default
    :func:`plain_width`; a number is never cut)."""
    width = width or plain_width()
    counts, at, took = f"{done:,} of {total:,}", f"{now_ns:,.0f} ns", f"{elapsed_s:.0f} s"
    wordings = (f"simulating: {counts} nodes done, simulated time {at}, {took} elapsed",
                f"simulating: {counts} nodes, at {at}, {took} elapsed",
                f"simulating: {done:,}/{total:,} nodes, {at}, {took}",
                f"{done:,}/{total:,} nodes, {at}")
    return next((w for w in wordings if len(w) <= width), wordings[-1])


def run_with_progress(sim, stream: TextIO | None = None, after_s: float = 1.0, every_s: float = 0.5,
                      line: ProgressLine | None = None) -> list:
    """``sim.run()`` with a progress line on stderr once the run has taken ``after_s``.

    A background thread samples the NPUs' completion counters and the simulated clock, so the
    simulation itself does no extra work for the display and a short run prints nothing. On
    a terminal the line is redrawn in place; elsewhere (a log file) a line is written every
    ``10 * every_s`` seconds. A run stuck inside one long event (a collective split a million
    ways) still shows the wall time going on. ``line``: the :class:`ProgressLine` the run's
    report lines are printed through (:meth:`ProgressLine.above`), so that they and the
    progress line do not mix on a terminal.
    """
    line = line or ProgressLine(stream)
    total = sum(len(npu.nodes) for npu in sim.npus)
    stop = threading.Event()

    def sample() -> None:
        start = time.monotonic()
        if stop.wait(after_s):
            return
        period = every_s if line.live else 10 * every_s
        while True:
            line.show(sum(npu.completed for npu in sim.npus), total, sim.now_ns, time.monotonic() - start)
            if stop.wait(period):
                return

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    try:
        return sim.run()
    finally:
        stop.set()
        watcher.join()
        line.clear()


def progress_wanted(stream: TextIO | None = None) -> bool:
    """Progress lines where a person watches: on a terminal (``stream``, default stderr). A pipe
    or a file gets them only with SIMPY_ASTRA_PROGRESS=1 (a long batch run's log), a terminal
    none with SIMPY_ASTRA_PROGRESS=0: a piped run's stderr is its summary, not a record of
    how fast this machine was."""
    asked = env_switch("SIMPY_ASTRA_PROGRESS")
    if asked is not None:
        return asked
    try:
        return (stream or sys.stderr).isatty()
    except (AttributeError, ValueError):
        return False
